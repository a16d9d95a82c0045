#include "fleetplan/perf/kernel_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/text_lines.h"
#include "fleetplan/core/limits.h"
#include "perf/gzip_file.h"
#include "perf/csv_fields.h"

namespace fleetplan {

namespace {

using perf_internal::ReadMaybeGzip;

constexpr double kNsPerUs = 1e3;
// The largest kernel time a table may state (one hour), so sums stay far inside int64 ns.
constexpr double kMaxKernelUs = 3.6e9;

// `name` or `name.gz` inside `dir`; "" when neither exists.
std::string FindTable(const std::string& dir, const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(dir) / name;
  if (std::filesystem::is_regular_file(p)) return p.string();
  if (std::filesystem::is_regular_file(p.string() + ".gz")) return p.string() + ".gz";
  return {};
}

// One parsed CSV: the text column (if any) and the numeric columns of every row.
struct CsvRow {
  std::string label;         // first column when the table has a text column
  std::vector<double> values;
};


// Parses `text` whose header must be `header`; with `labelled` the first column is text.
Expected<std::vector<CsvRow>> ParseCsv(const std::string& path, std::string_view text,
                                       std::string_view header, bool labelled) {
  std::vector<CsvRow> rows;
  const size_t columns = SplitCsvFields(header).size();
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    const int line_no = lines.line_no();
    const SourceLocation where{path, line_no, 1, std::string(line)};
    if (line_no == 1) {
      if (line != header) return LocatedError(where, "header", fmt::format("expected '{}'", header));
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = SplitCsvFields(line);
    if (fields.size() != columns) {
      return LocatedError(where, "row", fmt::format("expected {} fields ({}), got {}", columns, header, fields.size()));
    }
    CsvRow row;
    int column = 1;
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string_view f = fields[k];
      if (k == 0 && labelled) {
        row.label = std::string(f);
      } else {
        double v = 0;
        const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
        if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || !std::isfinite(v) || v < 0 ||
            v > kMaxKernelUs) {
          return LocatedError(SourceLocation{path, line_no, column, std::string(line)}, SplitCsvFields(header)[k],
                              fmt::format("expected a number in [0, {}], got '{}'", kMaxKernelUs, f));
        }
        row.values.push_back(v);
      }
      column += static_cast<int>(f.size()) + 1;
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return InvalidInput(fmt::format("{}: no rows", path));
  return rows;
}

Expected<std::vector<CsvRow>> LoadCsv(const std::string& dir, const std::string& name,
                                      std::string_view header, bool labelled) {
  const std::string path = FindTable(dir, name);
  if (path.empty()) return InvalidInput(fmt::format("{}: missing kernel table '{}' (or '{}.gz')", dir, name, name));
  FP_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzip(path));
  return ParseCsv(path, text, header, labelled);
}

// Sums of time per x over `rows` (x = values[0], time = values[1] in us).
using Points = std::map<double, double>;

KernelCurve CurveOf(const Points& points) {
  KernelCurve c;
  for (const auto& [x, us] : points) {
    c.xs.push_back(x);
    c.ns.push_back(us * kNsPerUs);
  }
  return c;
}

KernelGrid GridOf(const std::map<double, Points>& by_x) {
  KernelGrid g;
  for (const auto& [x, points] : by_x) {
    g.xs.push_back(x);
    g.rows.push_back(CurveOf(points));
  }
  return g;
}

// Ops of dense.csv that run once per step rather than once per layer.
bool IsPerStepOp(const std::string& op) { return op == "embedding" || op == "final_layernorm"; }

Status LoadDense(const std::string& dir, KernelTables* t) {
  FP_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, LoadCsv(dir, "dense.csv", "layer,tokens,time_us", true));
  std::map<std::string, Points> by_op;
  for (const CsvRow& r : rows) by_op[r.label][r.values[0]] = r.values[1];
  Points step, layer;
  const Points& grid = by_op.begin()->second;
  for (const auto& [op, points] : by_op) {
    if (points.size() != grid.size() ||
        !std::equal(points.begin(), points.end(), grid.begin(), [](auto& a, auto& b) { return a.first == b.first; })) {
      return InvalidInput(fmt::format("{}/dense.csv: op '{}' is measured at other token counts than '{}'", dir, op,
                                      by_op.begin()->first));
    }
    Points& into = IsPerStepOp(op) ? step : layer;
    for (const auto& [x, us] : points) into[x] += us;
    if (!IsPerStepOp(op)) t->dense_ops.push_back(op);
  }
  if (layer.empty()) return InvalidInput(fmt::format("{}/dense.csv: no per-layer ops", dir));
  if (step.empty()) step = Points{{1.0, 0.0}};
  t->per_step = CurveOf(step);
  t->per_layer = CurveOf(layer);
  return Status::Ok();
}

Status LoadPerSequence(const std::string& dir, KernelTables* t) {
  FP_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows,
                      LoadCsv(dir, "per_sequence.csv", "layer,sequences,time_us", true));
  Points sum;
  for (const CsvRow& r : rows) sum[r.values[0]] += r.values[1];
  t->per_sequence = CurveOf(sum);
  return Status::Ok();
}

Status LoadAttention(const std::string& dir, KernelTables* t) {
  FP_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows,
                      LoadCsv(dir, "attention.csv", "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us", false));
  std::map<double, Points> prefill, decode;
  for (const CsvRow& r : rows) {
    const std::vector<double>& v = r.values;
    if (v[0] > 0 && v[2] == 0) prefill[v[0]][v[1]] = v[4];
    if (v[0] == 0 && v[2] > 0) decode[v[2]][v[3]] = v[4];
  }
  if (prefill.empty() || decode.empty()) {
    return InvalidInput(fmt::format("{}/attention.csv: needs rows with n_decode = 0 (prefill only) and rows "
                                    "with prefill_chunk = 0 (decode only)",
                                    dir));
  }
  t->prefill_attention = GridOf(prefill);
  t->decode_attention = GridOf(decode);
  return Status::Ok();
}

Status LoadMoe(const std::string& dir, KernelTables* t) {
  if (FindTable(dir, "moe.csv").empty()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, LoadCsv(dir, "moe.csv", "tokens,activated_experts,time_us", false));
  std::map<double, Points> by_tokens;
  for (const CsvRow& r : rows) by_tokens[r.values[0]][r.values[1]] = r.values[2];
  t->moe = GridOf(by_tokens);
  t->has_moe = true;
  return Status::Ok();
}

// skew_fit.per_tp.<tp>.alpha_default of ../meta.json; 0 when absent or disabled.
Status LoadSkewAlpha(const std::string& dir, int64_t tp, KernelTables* t) {
  const std::filesystem::path meta = std::filesystem::path(dir).parent_path() / "meta.json";
  if (!std::filesystem::is_regular_file(meta)) return Status::Ok();
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(meta.string()));
  if (FindJsonNestingBeyond(text) != std::string::npos) {
    return InvalidInput(fmt::format("{}: {}", meta.string(), JsonNestingMessage()));
  }
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidInput(fmt::format("{}: not valid JSON", meta.string()));
  const Json::json_pointer ptr("/skew_fit/per_tp/" + std::to_string(tp) + "/alpha_default");
  if (j.contains(ptr) && j.at(ptr).is_number()) t->skew_alpha = j.at(ptr).get<double>();
  return Status::Ok();
}

// Index i with xs[i] <= x < xs[i+1], clamped to [0, size - 2]. REQUIRES: size >= 2.
size_t Segment(const std::vector<double>& xs, double x) {
  const auto it = std::upper_bound(xs.begin(), xs.end(), x);
  const size_t i = it == xs.begin() ? 0 : static_cast<size_t>(it - xs.begin()) - 1;
  return std::min(i, xs.size() - 2);
}

double Lerp(double x0, double y0, double x1, double y1, double x) {
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

}  // namespace

double KernelCurve::Value(double x, bool* outside) const {
  if (x <= xs.front() || xs.size() == 1) {
    if (x > xs.front()) *outside = true;
    return ns.front();
  }
  if (x > xs.back()) *outside = true;
  const size_t i = Segment(xs, x);
  return std::max(0.0, Lerp(xs[i], ns[i], xs[i + 1], ns[i + 1], x));
}

double KernelGrid::Value(double x, double y, bool* outside) const {
  if (x <= xs.front() || xs.size() == 1) {
    if (x > xs.front()) *outside = true;
    return rows.front().Value(y, outside);
  }
  if (x > xs.back()) *outside = true;
  const size_t i = Segment(xs, x);
  // Rows are ragged where the missing points are impossible (a 2-token batch activates at
  // most 16 experts): past one row's end that row keeps its last value, and the point is
  // outside the measurements only when it is past both rows' ends.
  bool past_a = false;
  bool past_b = false;
  const double a = rows[i].Value(std::min(y, rows[i].xs.back()), &past_a);
  const double b = rows[i + 1].Value(std::min(y, rows[i + 1].xs.back()), &past_b);
  if (y > rows[i].xs.back() && y > rows[i + 1].xs.back()) {
    bool ignored = false;
    *outside = true;
    return std::max(0.0, Lerp(xs[i], rows[i].Value(y, &ignored), xs[i + 1], rows[i + 1].Value(y, &ignored), x));
  }
  return std::max(0.0, Lerp(xs[i], a, xs[i + 1], b, x));
}

Expected<KernelTables> KernelTables::Load(const std::string& dir, int64_t tp) {
  if (!std::filesystem::is_directory(dir)) return InvalidInput(fmt::format("{}: not a directory", dir));
  KernelTables t;
  t.dir = dir;
  FP_RETURN_IF_ERROR(LoadDense(dir, &t));
  FP_RETURN_IF_ERROR(LoadPerSequence(dir, &t));
  FP_RETURN_IF_ERROR(LoadAttention(dir, &t));
  FP_RETURN_IF_ERROR(LoadMoe(dir, &t));
  FP_RETURN_IF_ERROR(LoadSkewAlpha(dir, tp, &t));
  return t;
}

double KernelTableStepModel::MoeNs(int64_t tokens, bool* outside) const {
  const double e = static_cast<double>(shape_.experts);
  const double k = static_cast<double>(shape_.experts_per_token);
  const double ep = static_cast<double>(shape_.ep);
  const double reach = static_cast<double>(tokens) * ep;  // tokens of every EP rank
  const double local = (e / ep) * (1.0 - std::pow(1.0 - k / e, reach));
  return tables_.moe.Value(static_cast<double>(tokens), local, outside);
}

Duration KernelTableStepModel::EpExchange(int64_t tokens) const {
  if (shape_.ep <= 1) return Duration();
  const Bytes gathered(tokens * shape_.ep * shape_.hidden * shape_.activation_bytes);
  return AllGatherTime(shape_.ep, gathered, shape_.ep_link) + ReduceScatterTime(shape_.ep, gathered, shape_.ep_link);
}

Duration KernelTableStepModel::ParallelCommunication(int64_t tokens, bool* outside) const {
  const ParallelLinks& links = shape_.comm.links();
  if (links.tp <= 1 && links.pp <= 1) return Duration();
  const Bytes activations(tokens * shape_.hidden * shape_.activation_bytes);
  const Duration tp = shape_.comm.TpAllReduce(activations, outside) * (kTpAllReducesPerLayer * shape_.layers);
  const Duration pp = shape_.comm.PpSendRecv(activations, outside) * (kPpTensorsPerBoundary * (links.pp - 1));
  return tp + pp;
}

StepCost KernelTableStepModel::CostOf(std::span<const StepChunk> chunks, StepPadding padding) const {
  bool outside = false;
  const KernelTables& t = tables_;
  int64_t tokens = padding.decodes;
  int64_t decodes = padding.decodes;
  int64_t decode_kv = padding.decodes * padding.context_tokens;
  int64_t max_kv = padding.decodes > 0 ? padding.context_tokens : 0;
  double prefill_attention = 0;
  for (const StepChunk& c : chunks) {
    tokens += c.new_tokens;
    if (c.decode) {
      ++decodes;
      decode_kv += c.context_tokens;
      max_kv = std::max(max_kv, c.context_tokens);
    } else {
      prefill_attention += t.prefill_attention.Value(static_cast<double>(c.new_tokens),
                                                     static_cast<double>(c.context_tokens), &outside);
    }
  }
  double decode_attention = 0;
  if (decodes > 0) {
    const double n = static_cast<double>(decodes);
    const double mean = t.decode_attention.Value(n, static_cast<double>(decode_kv) / n, &outside);
    const double max = t.decode_attention.Value(n, static_cast<double>(max_kv), &outside);
    decode_attention = mean + t.skew_alpha * std::max(0.0, max - mean);
  }
  const double x = static_cast<double>(tokens);
  double layer = t.per_layer.Value(x, &outside) + prefill_attention + decode_attention;
  Duration comm;
  if (shape_.experts > 0) {
    layer += MoeNs(tokens, &outside);
    comm = EpExchange(tokens) * shape_.layers;
  }
  comm += ParallelCommunication(tokens, &outside);
  const double seqs = static_cast<double>(static_cast<int64_t>(chunks.size()) + padding.decodes);
  const double ns = t.per_step.Value(x, &outside) + static_cast<double>(shape_.layers) * layer +
                    t.per_sequence.Value(seqs, &outside);
  return StepCost{Duration::Nanos(std::llround(ns)) + comm, comm, outside};
}

StepCost KernelTableStepModel::Cost(std::span<const StepChunk> chunks) const {
  return CostOf(chunks, StepPadding{});
}

StepCost KernelTableStepModel::CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const {
  return CostOf(chunks, padding);
}

Json KernelTableStepModel::Describe() const {
  Json j;
  j["kind"] = "kernel-table";
  j["dir"] = tables_.dir;
  j["layers"] = shape_.layers;
  j["dense_ops_per_layer"] = tables_.dense_ops;
  j["per_step_ops"] = {"embedding", "final_layernorm"};
  j["per_sequence_ops"] = {"lm_head", "sampler"};
  j["attention"] = "prefill-only rows per chunk + decode-only rows at mean KV, skew-corrected";
  j["skew_alpha"] = tables_.skew_alpha;
  j["moe"] = tables_.has_moe && shape_.experts > 0;
  if (shape_.experts > 0) {
    j["experts"] = shape_.experts;
    j["experts_per_token"] = shape_.experts_per_token;
    j["ep"] = shape_.ep;
    if (shape_.ep > 1) {
      j["ep_exchange"] = "all-gather + reduce-scatter of hidden states per MoE layer (alpha-beta)";
      j["ep_link_gbps"] = shape_.ep_link.bandwidth / 1e9;
      j["ep_link_latency_us"] = shape_.ep_link.latency.micros();
      j["hidden"] = shape_.hidden;
    }
  }
  const ParallelLinks& links = shape_.comm.links();
  if (links.tp > 1 || links.pp > 1) {
    j["parallel_comm"] = shape_.comm.Describe();
    j["hidden"] = shape_.hidden;
  }
  j["interpolation"] = "linear per axis; beyond the last point the edge slope, flagged";
  return j;
}

}  // namespace fleetplan
