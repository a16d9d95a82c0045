#include "fleetplan/perf/aiconfigurator.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "fleetplan/core/error.h"
#include "fleetplan/core/text_lines.h"
#include "perf/csv_fields.h"
#include "perf/gzip_file.h"

namespace fleetplan {

namespace {

using perf_internal::ReadMaybeGzip;

constexpr double kNsPerMs = 1e6;
// The largest latency a row may state (one hour, in ms), so sums stay far inside int64 ns.
constexpr double kMaxLatencyMs = 3.6e6;
// The largest shape value a row may state (tokens, widths, counts): 2^40.
constexpr double kMaxShape = 1099511627776.0;
// Activations (and so the TP all-reduces) are bf16 whatever the weight format (vLLM).
constexpr int64_t kActivationBytes = 2;
// The GEMM rows whose shortest latency is the floor of the kernels the tables do not time
// (those run on bf16 activations whatever the weight format).
constexpr std::string_view kShortestKernelDtype = "bfloat16";
// Nearest shapes an error lists.
constexpr size_t kNearestShown = 3;

// One table file: its text and header, read whole (gzip or plain), walked row by row.
class Table {
 public:
  // `dir`/`rel`.csv or `dir`/`rel`.csv.gz.
  static Expected<Table> Open(const std::string& dir, const std::string& rel) {
    const std::filesystem::path base = std::filesystem::path(dir) / rel;
    Table t;
    for (const char* ext : {".csv", ".csv.gz"}) {
      const std::string p = base.string() + ext;
      if (perf_internal::IsTableFile(p)) {
        t.path_ = p;
        break;
      }
    }
    if (t.path_.empty()) {
      return InvalidInput(fmt::format("{}: missing table '{}.csv' (or '.csv.gz')", dir, rel));
    }
    FP_ASSIGN_OR_RETURN(t.text_, ReadMaybeGzip(t.path_));
    TextLines lines(t.text_);
    std::string_view first;
    if (!lines.Next(&first) || first.empty()) return InvalidInput(fmt::format("{}: empty table", t.path_));
    t.header_line_ = std::string(first);
    SplitCsvFieldsInto(t.header_line_, t.header_);
    return t;
  }

  const std::string& path() const { return path_; }

  // Index of a header column; an error located at the header when missing.
  Expected<size_t> Column(std::string_view name) const {
    const auto it = std::find(header_.begin(), header_.end(), name);
    if (it == header_.end()) {
      return LocatedError(SourceLocation{path_, 1, 1, header_line_}, "header", fmt::format("no column '{}'", name));
    }
    return static_cast<size_t>(it - header_.begin());
  }

  // Calls row(fields, line_no, line) -> Status for every data row (blank lines skipped);
  // a row with the wrong field count is a located error.
  template <typename F>
  Status ForEachRow(F&& row) const {
    TextLines lines(text_);
    std::string_view line;
    std::vector<std::string_view> fields;
    while (lines.Next(&line)) {
      if (lines.line_no() == 1 || line.empty()) continue;
      SplitCsvFieldsInto(line, fields);
      if (fields.size() != header_.size()) {
        return LocatedError(SourceLocation{path_, lines.line_no(), 1, std::string(line)}, "row",
                            fmt::format("expected {} fields, got {}", header_.size(), fields.size()));
      }
      FP_RETURN_IF_ERROR(row(fields, lines.line_no(), line));
    }
    return Status::Ok();
  }

  // Field `k` of a row as a number in [0, max]; a located error otherwise.
  Expected<double> Number(const std::vector<std::string_view>& f, size_t k, int line_no, std::string_view line,
                          double max) const {
    const std::string_view s = f[k];
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v) || v < 0 || v > max) {
      int column = 1;
      for (size_t i = 0; i < k; ++i) column += static_cast<int>(f[i].size()) + 1;
      return LocatedError(SourceLocation{path_, line_no, column, std::string(line)}, header_[k],
                          fmt::format("expected a number in [0, {}], got '{}'", max, s));
    }
    return v;
  }

 private:
  std::string path_;
  std::string text_;
  std::string header_line_;
  std::vector<std::string_view> header_;  // views into header_line_
};

// A shape key: column names and the wanted values, compared as text (the tables print
// integers without decoration).
struct Key {
  std::vector<std::string> columns;
  std::vector<std::string> want;
  std::vector<size_t> index;  // column indexes, filled by Resolve

  Status Resolve(const Table& t) {
    index.clear();
    for (const std::string& c : columns) {
      FP_ASSIGN_OR_RETURN(const size_t i, t.Column(c));
      index.push_back(i);
    }
    return Status::Ok();
  }
  bool Matches(const std::vector<std::string_view>& f) const {
    for (size_t i = 0; i < index.size(); ++i) {
      if (f[index[i]] != want[i]) return false;
    }
    return true;
  }
  static std::string Format(const std::vector<std::string>& columns, const std::vector<std::string>& values) {
    std::string s;
    for (size_t i = 0; i < columns.size(); ++i) s += fmt::format("{}{} {}", i == 0 ? "" : ", ", columns[i], values[i]);
    return s;
  }
  std::string Wanted() const { return Format(columns, want); }
};

// How far `have` is from `want`: fields that differ first, then the relative size of the
// numeric differences, then the text (a total order, so the list is deterministic).
double Distance(const std::vector<std::string>& want, const std::vector<std::string>& have) {
  double d = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == have[i]) continue;
    d += 1000;
    double a = 0;
    double b = 0;
    const auto ra = std::from_chars(want[i].data(), want[i].data() + want[i].size(), a);
    const auto rb = std::from_chars(have[i].data(), have[i].data() + have[i].size(), b);
    if (ra.ec == std::errc() && rb.ec == std::errc() && std::max(a, b) > 0) d += std::abs(a - b) / std::max(a, b);
  }
  return d;
}

// The error for a shape with no rows: the file, the shape, what needs it, and the nearest
// shapes the file has (a second pass over the rows, on this error path only).
Status MissingShape(const Table& t, const Key& key, std::string_view what, std::string_view needed_by) {
  std::set<std::vector<std::string>> present;
  const Status walked = t.ForEachRow([&](const std::vector<std::string_view>& f, int, std::string_view) -> Status {
    std::vector<std::string> v;
    for (size_t i : key.index) v.emplace_back(f[i]);
    present.insert(std::move(v));
    return Status::Ok();
  });
  FP_RETURN_IF_ERROR(walked);
  std::vector<std::pair<double, const std::vector<std::string>*>> ranked;
  for (const auto& v : present) ranked.emplace_back(Distance(key.want, v), &v);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> shown;
  for (size_t i = 0; i < ranked.size() && i < kNearestShown; ++i) {
    shown.push_back("(" + Key::Format(key.columns, *ranked[i].second) + ")");
  }
  return InvalidInput(fmt::format("{}: no {} rows for {} ({}); nearest shapes present: {}", t.path(), what,
                                  key.Wanted(), needed_by,
                                  shown.empty() ? "none" : fmt::format("{}", fmt::join(shown, "; "))));
}

// Sums and counts of the latency (ns) measured at each x.
using Points = std::map<double, std::pair<double, int64_t>>;

KernelCurve CurveOf(const Points& points) {
  KernelCurve c;
  for (const auto& [x, sum] : points) {
    c.xs.push_back(x);
    c.ns.push_back(sum.first / static_cast<double>(sum.second));
  }
  return c;
}

void Add(Points* p, double x, double ns) {
  auto& s = (*p)[x];
  s.first += ns;
  ++s.second;
}

std::string Int(int64_t v) {
  return std::to_string(v);
}

// ---- GEMM --------------------------------------------------------------------------

// The measured pairs around `v` on one axis: (lo, hi, weight of hi); beyond the last
// point the last two with a weight > 1 (extrapolation), below the first the first alone.
struct Bracket {
  double lo = 0;
  double hi = 0;
  double w = 0;
  bool beyond = false;
};

Bracket BracketOf(const std::vector<double>& axis, double v) {
  if (axis.size() == 1 || v <= axis.front()) return {axis.front(), axis.front(), 0, false};
  const auto it = std::lower_bound(axis.begin(), axis.end(), v);
  if (it == axis.end()) {
    const double lo = axis[axis.size() - 2];
    const double hi = axis.back();
    return {lo, hi, (v - lo) / (hi - lo), true};
  }
  if (*it == v) return {v, v, 0, false};
  const double hi = *it;
  const double lo = *(it - 1);
  return {lo, hi, (v - lo) / (hi - lo), false};
}

using GemmPairs = std::map<std::pair<double, double>, Points>;  // (n, k) -> m -> latency

Expected<AicGemm> FoldGemm(const Table& t, const GemmPairs& pairs, const std::string& dtype, const AicGemmShape& shape,
                           const std::string& model) {
  std::set<double> n_set;
  std::set<double> k_set;
  for (const auto& [nk, points] : pairs) {
    n_set.insert(nk.first);
    k_set.insert(nk.second);
  }
  const std::vector<double> ns(n_set.begin(), n_set.end());
  const std::vector<double> ks(k_set.begin(), k_set.end());
  const Bracket bn = BracketOf(ns, static_cast<double>(shape.n));
  const Bracket bk = BracketOf(ks, static_cast<double>(shape.k));
  struct Corner {
    double n, k, weight;
  };
  const Corner corners[] = {{bn.lo, bk.lo, (1 - bn.w) * (1 - bk.w)},
                            {bn.hi, bk.lo, bn.w * (1 - bk.w)},
                            {bn.lo, bk.hi, (1 - bn.w) * bk.w},
                            {bn.hi, bk.hi, bn.w * bk.w}};
  std::vector<KernelCurve> curves;
  std::set<double> ms;
  for (const Corner& c : corners) {
    const auto it = pairs.find({c.n, c.k});
    if (it == pairs.end()) {
      // The nearest measured pairs, by relative distance on both axes.
      std::vector<std::pair<double, std::pair<double, double>>> ranked;
      for (const auto& [nk, points] : pairs) {
        const double n = static_cast<double>(shape.n);
        const double k = static_cast<double>(shape.k);
        const double d =
            std::abs(nk.first - n) / std::max(nk.first, n) + std::abs(nk.second - k) / std::max(nk.second, k);
        ranked.push_back({d, nk});
      }
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<std::string> shown;
      for (size_t i = 0; i < ranked.size() && i < kNearestShown; ++i) {
        shown.push_back(fmt::format("(n {}, k {})", ranked[i].second.first, ranked[i].second.second));
      }
      return InvalidInput(fmt::format(
          "{}: no gemm rows for gemm_dtype {}, n {}, k {}, a measured pair around {} (n {}, k {}) of {}; nearest "
          "pairs present: {}",
          t.path(), dtype, c.n, c.k, shape.name, shape.n, shape.k, model, fmt::join(shown, "; ")));
    }
    curves.push_back(CurveOf(it->second));
    for (const auto& [m, sum] : it->second) ms.insert(m);
  }
  AicGemm g;
  g.shape = shape;
  g.beyond_grid = bn.beyond || bk.beyond;
  g.n_lo = static_cast<int64_t>(bn.lo);
  g.n_hi = static_cast<int64_t>(bn.hi);
  g.k_lo = static_cast<int64_t>(bk.lo);
  g.k_hi = static_cast<int64_t>(bk.hi);
  // The four corner curves are linear between the union of their m points, so their
  // weighted sum on that union is the bilinear value at every m.
  for (double m : ms) {
    double v = 0;
    for (size_t i = 0; i < curves.size(); ++i) {
      bool ignored = false;
      if (corners[i].weight != 0) v += corners[i].weight * curves[i].Value(m, &ignored);
    }
    g.over_m.xs.push_back(m);
    g.over_m.ns.push_back(std::max(0.0, v));
  }
  return g;
}

Status LoadGemms(const AicSource& src, const AicModelShape& shape, AicKernels* out) {
  FP_ASSIGN_OR_RETURN(const Table t, Table::Open(src.dir, "gemm/vllm/" + src.version + "/gemm_perf"));
  FP_ASSIGN_OR_RETURN(const size_t dtype, t.Column("gemm_dtype"));
  FP_ASSIGN_OR_RETURN(const size_t m_col, t.Column("m"));
  FP_ASSIGN_OR_RETURN(const size_t n_col, t.Column("n"));
  FP_ASSIGN_OR_RETURN(const size_t k_col, t.Column("k"));
  FP_ASSIGN_OR_RETURN(const size_t latency, t.Column("latency"));
  FP_ASSIGN_OR_RETURN(const size_t device, t.Column("device"));
  GemmPairs pairs;
  std::set<std::string> dtypes;
  FP_RETURN_IF_ERROR(
      t.ForEachRow([&](const std::vector<std::string_view>& f, int line_no, std::string_view line) -> Status {
        const bool bf16 = f[dtype] == kShortestKernelDtype;
        if (bf16) {
          // The shortest bf16 GEMM: a launch-bound kernel's time on this GPU (AicOtherKernels).
          FP_ASSIGN_OR_RETURN(const double ms, t.Number(f, latency, line_no, line, kMaxLatencyMs));
          if (ms > 0 && (out->shortest_gemm_ns == 0 || ms * kNsPerMs < out->shortest_gemm_ns)) {
            out->shortest_gemm_ns = ms * kNsPerMs;
          }
        }
        if (f[dtype] != shape.gemm_dtype) {
          if (dtypes.size() < 16) dtypes.emplace(f[dtype]);
          return Status::Ok();
        }
        FP_ASSIGN_OR_RETURN(const double m, t.Number(f, m_col, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double n, t.Number(f, n_col, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double k, t.Number(f, k_col, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double ms, t.Number(f, latency, line_no, line, kMaxLatencyMs));
        if (out->device.empty()) out->device = std::string(f[device]);
        Add(&pairs[{n, k}], m, ms * kNsPerMs);
        return Status::Ok();
      }));
  if (pairs.empty()) {
    return InvalidInput(fmt::format("{}: no rows of gemm_dtype {} (the weight format of {}); present: {}", t.path(),
                                    shape.gemm_dtype, shape.model, fmt::join(dtypes, ", ")));
  }
  const auto fold = [&](const std::vector<AicGemmShape>& shapes, std::vector<AicGemm>* into) -> Status {
    for (const AicGemmShape& s : shapes) {
      FP_ASSIGN_OR_RETURN(AicGemm g, FoldGemm(t, pairs, shape.gemm_dtype, s, shape.model));
      into->push_back(std::move(g));
    }
    return Status::Ok();
  };
  FP_RETURN_IF_ERROR(fold(shape.layer_gemms, &out->layer_gemms));
  FP_RETURN_IF_ERROR(fold(shape.dense_gemms, &out->dense_gemms));
  FP_RETURN_IF_ERROR(fold(shape.moe_gemms, &out->moe_gemms));
  FP_ASSIGN_OR_RETURN(out->lm_head, FoldGemm(t, pairs, shape.gemm_dtype, shape.lm_head, shape.model));
  out->files.push_back(t.path());
  return Status::Ok();
}

// ---- attention ---------------------------------------------------------------------

Key AttentionKey(const AicModelShape& shape, int64_t window) {
  return Key{{"num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "window_size"},
             {Int(shape.heads), Int(shape.kv_heads), Int(shape.head_dim), shape.kv_dtype, Int(window)},
             {}};
}

std::string AttentionNeed(const AicModelShape& shape, const AicAttentionGroup& g) {
  return fmt::format("{} layers of {}{}", g.layers, shape.model,
                     g.window > 0 ? fmt::format(" with a {}-token window", g.window) : std::string());
}

Status LoadContext(const AicSource& src, const AicModelShape& shape, const AicAttentionGroup& g,
                   AicAttentionTables* out, std::vector<std::string>* files) {
  FP_ASSIGN_OR_RETURN(const Table t, Table::Open(src.dir, "attention/vllm/" + src.version + "/context_attention_perf"));
  Key key = AttentionKey(shape, g.window);
  FP_RETURN_IF_ERROR(key.Resolve(t));
  FP_ASSIGN_OR_RETURN(const size_t batch, t.Column("batch_size"));
  FP_ASSIGN_OR_RETURN(const size_t isl, t.Column("isl"));
  FP_ASSIGN_OR_RETURN(const size_t latency, t.Column("latency"));
  Points points;
  FP_RETURN_IF_ERROR(
      t.ForEachRow([&](const std::vector<std::string_view>& f, int line_no, std::string_view line) -> Status {
        if (f[batch] != "1" || !key.Matches(f)) return Status::Ok();
        FP_ASSIGN_OR_RETURN(const double s, t.Number(f, isl, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double ms, t.Number(f, latency, line_no, line, kMaxLatencyMs));
        if (s >= 1) Add(&points, s, ms * kNsPerMs);
        return Status::Ok();
      }));
  if (points.empty()) return MissingShape(t, key, "context attention (batch_size 1)", AttentionNeed(shape, g));
  out->context = CurveOf(points);
  files->push_back(t.path());
  return Status::Ok();
}

Status LoadGeneration(const AicSource& src, const AicModelShape& shape, const AicAttentionGroup& g,
                      AicAttentionTables* out, std::vector<std::string>* files) {
  FP_ASSIGN_OR_RETURN(const Table t,
                      Table::Open(src.dir, "attention/vllm/" + src.version + "/generation_attention_perf"));
  Key key = AttentionKey(shape, g.window);
  FP_RETURN_IF_ERROR(key.Resolve(t));
  FP_ASSIGN_OR_RETURN(const size_t batch, t.Column("batch_size"));
  FP_ASSIGN_OR_RETURN(const size_t step, t.Column("step"));
  FP_ASSIGN_OR_RETURN(const size_t latency, t.Column("latency"));
  std::map<double, Points> by_batch;
  FP_RETURN_IF_ERROR(
      t.ForEachRow([&](const std::vector<std::string_view>& f, int line_no, std::string_view line) -> Status {
        if (!key.Matches(f)) return Status::Ok();
        FP_ASSIGN_OR_RETURN(const double b, t.Number(f, batch, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double s, t.Number(f, step, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double ms, t.Number(f, latency, line_no, line, kMaxLatencyMs));
        if (b >= 1) Add(&by_batch[b], s, ms * kNsPerMs);
        return Status::Ok();
      }));
  if (by_batch.empty()) return MissingShape(t, key, "generation attention", AttentionNeed(shape, g));
  for (const auto& [b, points] : by_batch) {
    out->generation.batches.push_back(b);
    out->generation.rows.push_back(CurveOf(points));
  }
  files->push_back(t.path());
  return Status::Ok();
}

// ---- MoE ---------------------------------------------------------------------------

Status LoadMoe(const AicSource& src, const AicModelShape& shape, AicKernels* out) {
  FP_ASSIGN_OR_RETURN(const Table t, Table::Open(src.dir, "moe/vllm/" + src.version + "/moe_perf"));
  Key key{
      {"moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "distribution"},
      {shape.moe_dtype, Int(shape.hidden), Int(shape.expert_intermediate), Int(shape.experts_per_token),
       Int(shape.experts), Int(shape.moe_tp), Int(shape.moe_ep), src.moe_distribution},
      {}};
  FP_RETURN_IF_ERROR(key.Resolve(t));
  FP_ASSIGN_OR_RETURN(const size_t tokens, t.Column("num_tokens"));
  FP_ASSIGN_OR_RETURN(const size_t latency, t.Column("latency"));
  Points points;
  FP_RETURN_IF_ERROR(
      t.ForEachRow([&](const std::vector<std::string_view>& f, int line_no, std::string_view line) -> Status {
        if (!key.Matches(f)) return Status::Ok();
        FP_ASSIGN_OR_RETURN(const double n, t.Number(f, tokens, line_no, line, kMaxShape));
        FP_ASSIGN_OR_RETURN(const double ms, t.Number(f, latency, line_no, line, kMaxLatencyMs));
        Add(&points, n, ms * kNsPerMs);
        return Status::Ok();
      }));
  if (points.empty()) {
    return MissingShape(t, key, "MoE", fmt::format("{} MoE layers of {}", shape.moe_layers, shape.model));
  }
  out->moe = CurveOf(points);
  out->has_moe = true;
  out->files.push_back(t.path());
  return Status::Ok();
}

// Σ_{q=c+1}^{c+n} min(q, w) (w = 0: unbounded), the query-key pairs of a causal chunk.
double Pairs(double c, double n, double w) {
  const double lo = c + 1;
  const double hi = c + n;
  if (w <= 0 || hi <= w) return (lo + hi) * n / 2;
  if (lo > w) return w * n;
  return (lo + w) * (w - lo + 1) / 2 + w * (hi - w);
}

Expected<std::string> TableDtype(DType t, std::string_view what) {
  if (t == DType::kBf16) return std::string("bfloat16");
  if (t == DType::kFp8) return std::string("fp8");
  return InvalidInput(fmt::format("{} '{}' has no aiconfigurator rows (measured: bf16, fp8)", what, DTypeName(t)));
}

}  // namespace

// ---- shapes ------------------------------------------------------------------------

Expected<AicModelShape> AicShapeOf(const ModelSpec& model, const Parallelism& layout, DType weight_dtype,
                                   DType kv_dtype) {
  if (model.mla) {
    return InvalidInput(
        fmt::format("model '{}' uses multi-head latent attention; the aiconfigurator attention "
                    "tables measure grouped-query attention only",
                    model.name));
  }
  const int64_t tp = std::max<int64_t>(1, layout.tp);
  const int64_t ep = std::max<int64_t>(1, layout.ep);
  if (model.layers < 1 || model.hidden < 1 || model.heads < 1 || model.kv_heads < 1 || model.head_dim < 1 ||
      model.vocab < 1) {
    return InvalidInput(
        fmt::format("model '{}' needs layers, hidden, heads, kv_heads, head_dim and vocab >= 1", model.name));
  }
  if (model.heads % tp != 0) {
    return InvalidInput(
        fmt::format("model '{}': heads ({}) must be a multiple of tp ({})", model.name, model.heads, tp));
  }
  if (model.kv_heads >= tp ? model.kv_heads % tp != 0 : tp % model.kv_heads != 0) {
    return InvalidInput(
        fmt::format("model '{}': kv_heads ({}) and tp ({}) must divide one another", model.name, model.kv_heads, tp));
  }
  AicModelShape s;
  s.model = model.name;
  s.layers = model.layers;
  s.dense_layers = DenseFfnLayers(model);
  s.moe_layers = MoeLayers(model);
  s.hidden = model.hidden;
  s.heads = model.heads / tp;
  s.kv_heads = std::max<int64_t>(1, model.kv_heads / tp);
  s.head_dim = model.head_dim;
  FP_ASSIGN_OR_RETURN(s.gemm_dtype, TableDtype(weight_dtype, "weight dtype"));
  s.moe_dtype = s.gemm_dtype;
  FP_ASSIGN_OR_RETURN(s.kv_dtype, TableDtype(kv_dtype, "kv dtype"));
  const int64_t h = model.hidden;
  s.layer_gemms = {{"qkv_proj", (s.heads + 2 * s.kv_heads) * s.head_dim, h}, {"o_proj", h, s.heads * s.head_dim}};
  const int64_t up = model.gated_mlp ? 2 : 1;
  if (s.dense_layers > 0) {
    if (model.intermediate < 1 || model.intermediate % tp != 0) {
      return InvalidInput(fmt::format("model '{}': intermediate ({}) must be a positive multiple of tp ({})",
                                      model.name, model.intermediate, tp));
    }
    const int64_t f = model.intermediate / tp;
    s.dense_gemms = {{"gate_up_proj", up * f, h}, {"down_proj", h, f}};
    s.ffn_per_rank = f;
  }
  if (s.moe_layers > 0) {
    const MoeSpec& moe = *model.moe;
    if (tp % ep != 0) return InvalidInput(fmt::format("ep ({}) must divide tp ({})", ep, tp));
    s.experts = moe.experts;
    s.experts_per_token = moe.experts_per_token;
    s.expert_intermediate = moe.expert_intermediate;
    s.moe_tp = tp / ep;
    s.moe_ep = ep;
    s.moe_gemms.push_back({"router", moe.experts, h});
    const int64_t shared = moe.shared_experts * moe.shared_intermediate;
    if (shared > 0) {
      if (shared % tp != 0) {
        return InvalidInput(fmt::format("model '{}': the shared experts' width ({}) must be a multiple of tp ({})",
                                        model.name, shared, tp));
      }
      s.moe_gemms.push_back({"shared_gate_up", up * shared / tp, h});
      s.moe_gemms.push_back({"shared_down", h, shared / tp});
    }
  }
  s.lm_head = {"lm_head", (model.vocab + tp - 1) / tp, h};
  s.vocab = model.vocab;
  s.kv_bytes = kv_dtype == DType::kFp8 ? 1 : 2;
  if (const int64_t global = GlobalLayers(model); global > 0) s.attention.push_back({global, 0});
  if (const int64_t windowed = WindowedLayers(model); windowed > 0) {
    s.attention.push_back({windowed, model.sliding_window});
  }
  return s;
}

// ---- lookups -----------------------------------------------------------------------

double AicGemm::Value(int64_t m, bool* outside) const {
  if (beyond_grid) *outside = true;
  return over_m.Value(static_cast<double>(m), outside);
}

double AicAttentionGrid::Value(double batch, double step, bool* outside) const {
  if (batches.size() == 1 || batch <= batches.front()) {
    if (batch > batches.front()) *outside = true;
    return rows.front().Value(step, outside);
  }
  if (batch > batches.back()) *outside = true;
  const auto it = std::upper_bound(batches.begin(), batches.end(), batch);
  const size_t i = std::min(static_cast<size_t>(it - batches.begin()) - 1, batches.size() - 2);
  const double t = (batch - batches[i]) / (batches[i + 1] - batches[i]);
  // At a measured batch the row above does not take part (nor flag a step it lacks).
  if (t == 0) return rows[i].Value(step, outside);
  const double a = rows[i].Value(step, outside);
  const double b = rows[i + 1].Value(step, outside);
  return std::max(0.0, a + (b - a) * t);
}

double AicAttentionTables::PrefillChunk(int64_t context_tokens, int64_t new_tokens, bool* outside) const {
  const double c = static_cast<double>(context_tokens);
  const double n = static_cast<double>(new_tokens);
  const double w = static_cast<double>(group.window);
  const double s = c + n;
  const double last = context.xs.back();
  double whole = 0;
  if (s > last && context.xs.size() > 1) {
    // Beyond the longest measured prompt: the edge value grown with the pairs (header).
    *outside = true;
    bool ignored = false;
    whole = context.Value(last, &ignored) * Pairs(0, s, w) / Pairs(0, last, w);
  } else {
    whole = context.Value(s, outside);
  }
  return whole * Pairs(c, n, w) / Pairs(0, s, w);
}

Expected<AicKernels> AicKernels::Load(const AicSource& source, const AicModelShape& shape) {
  if (!perf_internal::IsTableFolder(source.dir)) {
    return InvalidInput(
        fmt::format("{}: not a directory (expected an aiconfigurator GPU folder such as "
                    "profiles/aiconfigurator/h100_sxm)",
                    source.dir));
  }
  AicKernels k;
  k.source = source;
  FP_RETURN_IF_ERROR(LoadGemms(source, shape, &k));
  std::vector<std::string> context_files;
  std::vector<std::string> generation_files;
  for (const AicAttentionGroup& g : shape.attention) {
    AicAttentionTables a;
    a.group = g;
    FP_RETURN_IF_ERROR(LoadContext(source, shape, g, &a, &context_files));
    FP_RETURN_IF_ERROR(LoadGeneration(source, shape, g, &a, &generation_files));
    k.attention.push_back(std::move(a));
  }
  if (!context_files.empty()) k.files.push_back(context_files.front());
  if (!generation_files.empty()) k.files.push_back(generation_files.front());
  if (shape.moe_layers > 0) FP_RETURN_IF_ERROR(LoadMoe(source, shape, &k));
  return k;
}

// ---- the model ---------------------------------------------------------------------

AicBreakdown AicStepModel::Explain(std::span<const StepChunk> chunks, StepPadding padding) const {
  AicBreakdown b;
  bool outside = false;
  int64_t tokens = padding.decodes;
  int64_t decodes = padding.decodes;
  double context_sum = static_cast<double>(padding.decodes) * static_cast<double>(padding.context_tokens);
  for (const StepChunk& c : chunks) {
    tokens += c.new_tokens;
    if (c.decode) {
      ++decodes;
      context_sum += static_cast<double>(c.context_tokens);
      continue;
    }
    for (const AicAttentionTables& a : kernels_.attention) {
      b.context_attention_ns +=
          static_cast<double>(a.group.layers) * a.PrefillChunk(c.context_tokens, c.new_tokens, &outside);
    }
  }
  const int64_t sequences = static_cast<int64_t>(chunks.size()) + padding.decodes;
  b.tokens = tokens;
  b.sequences = sequences;
  b.decodes = decodes;
  if (tokens == 0) return b;
  if (decodes > 0) {
    b.mean_context = context_sum / static_cast<double>(decodes);
    for (const AicAttentionTables& a : kernels_.attention) {
      b.generation_attention_ns += static_cast<double>(a.group.layers) *
                                   a.generation.Value(static_cast<double>(decodes), b.mean_context, &outside);
    }
  }
  const auto sum = [&](const std::vector<AicGemm>& gemms, int64_t m) {
    double ns = 0;
    for (const AicGemm& g : gemms) ns += g.Value(m, &outside);
    return ns;
  };
  b.layer_gemms_ns = static_cast<double>(shape_.layers) * sum(kernels_.layer_gemms, tokens);
  b.ffn_ns = static_cast<double>(shape_.dense_layers) * sum(kernels_.dense_gemms, tokens);
  if (shape_.moe_layers > 0) {
    b.moe_ns = static_cast<double>(shape_.moe_layers) *
               (kernels_.moe.Value(static_cast<double>(tokens), &outside) + sum(kernels_.moe_gemms, tokens));
  }
  b.lm_head_ns = kernels_.lm_head.Value(sequences, &outside);
  b.other_kernels_ns = OtherKernelsNs(tokens, sequences);
  const ParallelLinks& links = comm_.links();
  if (links.tp > 1 || links.pp > 1) {
    const Bytes activations(tokens * shape_.hidden * kActivationBytes);
    b.collectives = comm_.TpAllReduce(activations, &outside) * (kTpAllReducesPerLayer * shape_.layers) +
                    comm_.PpSendRecv(activations, &outside) * (kPpTensorsPerBoundary * (links.pp - 1));
  }
  const double ns = b.layer_gemms_ns + b.ffn_ns + b.moe_ns + b.context_attention_ns + b.generation_attention_ns +
                    b.lm_head_ns + b.other_kernels_ns;
  b.total = Duration::Nanos(std::llround(ns)) + b.collectives;
  b.extrapolated = outside;
  return b;
}

double AicStepModel::OtherKernelsNs(int64_t tokens, int64_t sequences) const {
  if (!other_.enabled) return 0;
  const auto kernel = [&](double bytes) { return std::max(other_.floor_ns, bytes / other_.bytes_per_ns); };
  const double t = static_cast<double>(tokens);
  const double hidden = static_cast<double>(shape_.hidden) * kActivationBytes;
  const double qk = static_cast<double>((shape_.heads + shape_.kv_heads) * shape_.head_dim) * kActivationBytes;
  const double kv = static_cast<double>(2 * shape_.kv_heads * shape_.head_dim * shape_.kv_bytes);
  const double every_layer = 2 * kernel(4 * t * hidden) + kernel(2 * t * qk) + kernel(2 * t * kv);
  const double activation = kernel(3 * t * static_cast<double>(shape_.ffn_per_rank) * kActivationBytes);
  const double logits = static_cast<double>(sequences) * static_cast<double>(shape_.vocab) * 4;
  const double per_step =
      kernel(2 * t * hidden) + kernel(3 * t * hidden) + kSamplerKernels * other_.floor_ns + 2 * logits / other_.bytes_per_ns;
  return static_cast<double>(shape_.layers) * every_layer + static_cast<double>(shape_.dense_layers) * activation +
         per_step;
}

StepCost AicStepModel::Cost(std::span<const StepChunk> chunks) const {
  return CostPadded(chunks, StepPadding{});
}

StepCost AicStepModel::CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const {
  const AicBreakdown b = Explain(chunks, padding);
  return StepCost{b.total, b.collectives, b.extrapolated};
}

namespace {

Json GemmJson(const AicGemm& g) {
  Json j{{"name", g.shape.name},
         {"n", g.shape.n},
         {"k", g.shape.k},
         {"measured_n", {g.n_lo, g.n_hi}},
         {"measured_k", {g.k_lo, g.k_hi}},
         {"m_points", g.over_m.xs.size()},
         {"max_m", g.over_m.xs.back()}};
  if (g.beyond_grid) j["beyond_grid"] = true;
  return j;
}

Json GemmsJson(const std::vector<AicGemm>& gemms) {
  Json a = Json::array();
  for (const AicGemm& g : gemms) a.push_back(GemmJson(g));
  return a;
}

}  // namespace

Json AicStepModel::Describe() const {
  Json j;
  j["kind"] = "aiconfigurator";
  j["dir"] = kernels_.source.dir;
  j["version"] = kernels_.source.version;
  j["device"] = kernels_.device;
  j["files"] = kernels_.files;
  j["model"] = shape_.model;
  j["layers"] = shape_.layers;
  j["dense_layers"] = shape_.dense_layers;
  j["gemm_dtype"] = shape_.gemm_dtype;
  j["kv_cache_dtype"] = shape_.kv_dtype;
  j["gemms_per_layer"] = GemmsJson(kernels_.layer_gemms);
  j["gemms_per_dense_layer"] = GemmsJson(kernels_.dense_gemms);
  j["lm_head"] = GemmJson(kernels_.lm_head);
  Json attention = Json::array();
  for (const AicAttentionTables& a : kernels_.attention) {
    attention.push_back(Json{{"layers", a.group.layers},
                             {"window_size", a.group.window},
                             {"num_heads", shape_.heads},
                             {"num_key_value_heads", shape_.kv_heads},
                             {"head_dim", shape_.head_dim},
                             {"context_max_isl", a.context.xs.back()},
                             {"generation_batches", a.generation.batches}});
  }
  j["attention"] = attention;
  j["prefill_attention"] =
      "context_attention at batch 1, isl = context + chunk, times the chunk's share of the "
      "query-key pairs; one call per chunk";
  j["decode_attention"] = "generation_attention at (decodes, mean context)";
  if (shape_.moe_layers > 0) {
    j["moe_layers"] = shape_.moe_layers;
    j["gemms_per_moe_layer"] = GemmsJson(kernels_.moe_gemms);
    j["moe"] = Json{{"moe_dtype", shape_.moe_dtype},
                    {"experts", shape_.experts},
                    {"topk", shape_.experts_per_token},
                    {"inter_size", shape_.expert_intermediate},
                    {"moe_tp_size", shape_.moe_tp},
                    {"moe_ep_size", shape_.moe_ep},
                    {"distribution", kernels_.source.moe_distribution},
                    {"max_tokens", kernels_.moe.xs.back()}};
  }
  const ParallelLinks& links = comm_.links();
  if (links.tp > 1 || links.pp > 1) j["parallel_comm"] = comm_.Describe();
  if (other_.enabled) {
    j["other_kernels"] = Json{{"floor_us", other_.floor_ns / 1e3},
                              {"floor_source", "the shortest bf16 GEMM the tables measure"},
                              {"bandwidth_bytes_per_s", other_.bytes_per_ns * 1e9},
                              {"per_layer", "2 residual-add + RMSNorm, rotary, KV-cache write, SiLU-and-multiply"},
                              {"per_step", "embedding, final norm, sampler"}};
  } else {
    j["other_kernels"] = "none";
  }
  j["interpolation"] =
      "linear per axis; n and k bilinear at load; beyond the last point the edge slope "
      "(context attention: grown with the query-key pairs), flagged";
  return j;
}

}  // namespace fleetplan
