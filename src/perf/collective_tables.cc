#include "fleetplan/perf/collective_tables.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/text_lines.h"
#include "perf/gzip_file.h"
#include "perf/csv_fields.h"

namespace fleetplan {

namespace {

namespace fs = std::filesystem;
using perf_internal::ReadMaybeGzip;

constexpr double kNsPerUs = 1e3;
constexpr double kNsPerMs = 1e6;
constexpr double kBytesPerKiB = 1024;
// The activations the forward pass exchanges are bf16.
constexpr double kActivationElementBytes = 2;
// Upper bounds that keep every sum far inside int64 nanoseconds: an hour per collective,
// a TiB per message.
constexpr double kMaxNs = 3.6e12;
constexpr double kMaxBytes = 1099511627776.0;
constexpr double kMaxRanks = 1 << 20;

// The formats, told apart by their headers.
enum class Format { kAicNccl, kAicVllm, kApex, kVidur };

constexpr std::string_view kAicNcclHeader =
    "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency";
constexpr std::string_view kAicVllmHeader =
    "framework,version,device,op_name,kernel_source,allreduce_dtype,num_gpus,message_size,latency,backend";
constexpr std::string_view kApexHeader = "gpu,num_nodes,num_gpus_per_node,dtype,size(kb),time(us)";


std::optional<CollectiveOp> OpOf(std::string_view name) {
  if (name == "all_reduce") return CollectiveOp::kAllReduce;
  if (name == "all_gather") return CollectiveOp::kAllGather;
  if (name == "reduce_scatter") return CollectiveOp::kReduceScatter;
  if (name == "alltoall" || name == "all_to_all") return CollectiveOp::kAllToAll;
  if (name == "sendrecv" || name == "send_recv") return CollectiveOp::kSendRecv;
  return std::nullopt;
}

// Bytes per element of a dtype the tables name; 0 = a type we skip (not 2-byte).
double ElementBytes(std::string_view dtype) {
  if (dtype == "half" || dtype == "float16" || dtype == "bfloat16" || dtype == "fp16" || dtype == "bf16") {
    return kActivationElementBytes;
  }
  return 0;
}

std::optional<Format> FormatOf(std::string_view header) {
  if (header == kAicNcclHeader) return Format::kAicNccl;
  if (header == kAicVllmHeader) return Format::kAicVllm;
  if (header == kApexHeader) return Format::kApex;
  if (header.starts_with(",time_stats.")) return Format::kVidur;
  return std::nullopt;
}

// One file's rows, accumulated per curve and size (sums and counts, averaged at the end).
struct Accumulated {
  std::map<CollectiveKey, std::map<double, std::pair<double, int64_t>>> points;
};

// The location of field `k` of `line`, 1-based column.
SourceLocation FieldAt(const std::string& path, int line_no, std::string_view line,
                       const std::vector<std::string_view>& fields, size_t k) {
  int column = 1;
  for (size_t i = 0; i < k; ++i) column += static_cast<int>(fields[i].size()) + 1;
  return SourceLocation{path, line_no, column, std::string(line)};
}

class FileParser {
 public:
  FileParser(std::string path, Format format, std::vector<std::string_view> header)
      : path_(std::move(path)), format_(format), header_(std::move(header)) {}

  Status Parse(std::string_view text, Accumulated* out) {
    FP_RETURN_IF_ERROR(Columns());
    TextLines lines(text);
    std::string_view line;
    while (lines.Next(&line)) {
      if (lines.line_no() == 1 || line.empty()) continue;
      FP_RETURN_IF_ERROR(Row(lines.line_no(), line, out));
    }
    return Status::Ok();
  }

 private:
  // Index of a header column; an error naming the file when missing.
  Expected<size_t> Column(std::string_view name) const {
    const auto it = std::find(header_.begin(), header_.end(), name);
    if (it == header_.end()) return InvalidInput(fmt::format("{}: header has no column '{}'", path_, name));
    return static_cast<size_t>(it - header_.begin());
  }

  Status Columns() {
    switch (format_) {
      case Format::kAicNccl:
      case Format::kAicVllm: {
        FP_ASSIGN_OR_RETURN(op_, Column("op_name"));
        FP_ASSIGN_OR_RETURN(dtype_, Column(format_ == Format::kAicNccl ? "nccl_dtype" : "allreduce_dtype"));
        FP_ASSIGN_OR_RETURN(ranks_, Column("num_gpus"));
        FP_ASSIGN_OR_RETURN(size_, Column("message_size"));
        FP_ASSIGN_OR_RETURN(time_, Column("latency"));
        if (format_ == Format::kAicVllm) {
          FP_ASSIGN_OR_RETURN(backend_, Column("backend"));
        }
        return Status::Ok();
      }
      case Format::kApex: {
        FP_ASSIGN_OR_RETURN(nodes_, Column("num_nodes"));
        FP_ASSIGN_OR_RETURN(per_node_, Column("num_gpus_per_node"));
        FP_ASSIGN_OR_RETURN(dtype_, Column("dtype"));
        FP_ASSIGN_OR_RETURN(size_, Column("size(kb)"));
        FP_ASSIGN_OR_RETURN(time_, Column("time(us)"));
        // The operation is the file name: all_reduce.csv, sendrecv.csv.gz, ...
        std::string stem = fs::path(path_).filename().string();
        for (const char* ext : {".gz", ".csv"}) {
          if (stem.ends_with(ext)) stem.resize(stem.size() - std::string_view(ext).size());
        }
        const std::optional<CollectiveOp> op = OpOf(stem);
        if (!op) {
          return InvalidInput(fmt::format("{}: an APEX+ collective table is named after its operation "
                                          "(all_reduce, all_gather, reduce_scatter, alltoall, sendrecv), got '{}'",
                                          path_, stem));
        }
        file_op_ = *op;
        return Status::Ok();
      }
      case Format::kVidur: {
        FP_ASSIGN_OR_RETURN(op_, Column("collective"));
        FP_ASSIGN_OR_RETURN(ranks_, Column("num_workers"));
        FP_ASSIGN_OR_RETURN(per_node_, Column("devices_per_node"));
        FP_ASSIGN_OR_RETURN(size_, Column("size"));
        // The median column of the file's one collective: ",time_stats.<op>.min,...".
        const std::string_view first = header_.size() > 1 ? header_[1] : std::string_view();
        const std::string_view prefix = first.substr(0, first.rfind('.') + 1);
        FP_ASSIGN_OR_RETURN(time_, Column(std::string(prefix) + "median"));
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  Expected<double> Number(const std::string& path, int line_no, std::string_view line,
                          const std::vector<std::string_view>& fields, size_t k, double max) const {
    const std::string_view f = fields[k];
    double v = 0;
    const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || !std::isfinite(v) || v < 0 || v > max) {
      return LocatedError(FieldAt(path, line_no, line, fields, k), header_[k],
                          fmt::format("expected a number in [0, {}], got '{}'", max, f));
    }
    return v;
  }

  Status Row(int line_no, std::string_view line, Accumulated* out) {
    const std::vector<std::string_view> f = SplitCsvFields(line);
    if (f.size() != header_.size()) {
      return LocatedError(SourceLocation{path_, line_no, 1, std::string(line)}, "row",
                          fmt::format("expected {} fields, got {}", header_.size(), f.size()));
    }
    CollectiveKey key;
    double bytes = 0;
    double ns = 0;
    switch (format_) {
      case Format::kAicNccl:
      case Format::kAicVllm: {
        const std::optional<CollectiveOp> op = OpOf(f[op_]);
        if (!op) {
          return LocatedError(FieldAt(path_, line_no, line, f, op_), "op_name",
                              fmt::format("unknown collective '{}'", f[op_]));
        }
        const double element = ElementBytes(f[dtype_]);
        if (element == 0) return Status::Ok();  // not a 2-byte type
        if (format_ == Format::kAicVllm && f[backend_] != "vllm_graph") return Status::Ok();
        key.impl = format_ == Format::kAicVllm ? CollectiveImpl::kVllm : CollectiveImpl::kNccl;
        key.op = *op;
        FP_ASSIGN_OR_RETURN(const double ranks, Number(path_, line_no, line, f, ranks_, kMaxRanks));
        key.ranks = static_cast<int64_t>(ranks);
        key.nodes = 1;
        FP_ASSIGN_OR_RETURN(const double elements, Number(path_, line_no, line, f, size_, kMaxBytes / element));
        bytes = elements * element;
        FP_ASSIGN_OR_RETURN(const double ms, Number(path_, line_no, line, f, time_, kMaxNs / kNsPerMs));
        ns = ms * kNsPerMs;
        break;
      }
      case Format::kApex: {
        if (ElementBytes(f[dtype_]) == 0) return Status::Ok();
        key.op = file_op_;
        FP_ASSIGN_OR_RETURN(const double nodes, Number(path_, line_no, line, f, nodes_, kMaxRanks));
        FP_ASSIGN_OR_RETURN(const double per_node, Number(path_, line_no, line, f, per_node_, kMaxRanks));
        key.nodes = static_cast<int64_t>(nodes);
        key.ranks = static_cast<int64_t>(nodes * per_node);
        FP_ASSIGN_OR_RETURN(const double kib, Number(path_, line_no, line, f, size_, kMaxBytes / kBytesPerKiB));
        bytes = kib * kBytesPerKiB;
        FP_ASSIGN_OR_RETURN(const double us, Number(path_, line_no, line, f, time_, kMaxNs / kNsPerUs));
        ns = us * kNsPerUs;
        break;
      }
      case Format::kVidur: {
        const std::optional<CollectiveOp> op = OpOf(f[op_]);
        if (!op) {
          return LocatedError(FieldAt(path_, line_no, line, f, op_), "collective",
                              fmt::format("unknown collective '{}'", f[op_]));
        }
        key.op = *op;
        FP_ASSIGN_OR_RETURN(const double ranks, Number(path_, line_no, line, f, ranks_, kMaxRanks));
        FP_ASSIGN_OR_RETURN(const double per_node, Number(path_, line_no, line, f, per_node_, kMaxRanks));
        key.ranks = static_cast<int64_t>(ranks);
        key.nodes = per_node >= 1 ? static_cast<int64_t>(std::ceil(ranks / per_node)) : 1;
        FP_ASSIGN_OR_RETURN(bytes, Number(path_, line_no, line, f, size_, kMaxBytes));
        FP_ASSIGN_OR_RETURN(const double ms, Number(path_, line_no, line, f, time_, kMaxNs / kNsPerMs));
        ns = ms * kNsPerMs;
        break;
      }
    }
    if (key.ranks < 1 || key.nodes < 1) {
      return LocatedError(SourceLocation{path_, line_no, 1, std::string(line)}, "row",
                          "expected at least one GPU on at least one node");
    }
    auto& point = out->points[key][bytes];
    point.first += ns;
    ++point.second;
    return Status::Ok();
  }

  std::string path_;
  Format format_;
  std::vector<std::string_view> header_;
  size_t op_ = 0, dtype_ = 0, ranks_ = 0, nodes_ = 0, per_node_ = 0, size_ = 0, time_ = 0, backend_ = 0;
  CollectiveOp file_op_ = CollectiveOp::kAllReduce;
};

bool IsCsvName(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".csv") || name.ends_with(".csv.gz");
}

// Index i with xs[i] <= x < xs[i+1], clamped to [0, size - 2]. REQUIRES: size >= 2.
size_t Segment(const std::vector<double>& xs, double x) {
  const auto it = std::upper_bound(xs.begin(), xs.end(), x);
  const size_t i = it == xs.begin() ? 0 : static_cast<size_t>(it - xs.begin()) - 1;
  return std::min(i, xs.size() - 2);
}

}  // namespace

std::string_view CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kSendRecv:
      return "send_recv";
  }
  return "unknown";
}

std::string_view CollectiveImplName(CollectiveImpl impl) {
  return impl == CollectiveImpl::kVllm ? "vllm" : "nccl";
}

Duration CollectiveCurve::At(Bytes message, bool* outside) const {
  const double x = static_cast<double>(message.count());
  double v = 0;
  if (x <= bytes.front() || bytes.size() == 1) {
    if (x > bytes.front()) *outside = true;
    v = ns.front();
  } else {
    if (x > bytes.back()) *outside = true;
    const size_t i = Segment(bytes, x);
    v = ns[i] + (ns[i + 1] - ns[i]) * (x - bytes[i]) / (bytes[i + 1] - bytes[i]);
  }
  return Duration::Nanos(std::llround(std::clamp(v, 0.0, kMaxNs)));
}

Expected<CollectiveTables> CollectiveTables::Load(const std::vector<std::string>& paths) {
  CollectiveTables t;
  t.paths_ = paths;
  // Every file to read, in the order given (folders: sorted paths below them), and
  // whether it was named directly.
  std::vector<std::pair<std::string, bool>> files;
  for (const std::string& p : paths) {
    if (perf_internal::IsTableFolder(p)) {
      FP_ASSIGN_OR_RETURN(std::vector<std::string> below, perf_internal::TableFilesBelow(p));
      for (std::string& f : below) {
        if (IsCsvName(fs::path(f))) files.emplace_back(std::move(f), false);
      }
    } else if (perf_internal::IsTableFile(p)) {
      files.emplace_back(p, true);
    } else {
      return InvalidInput(fmt::format("{}: no such collective table file or folder", p));
    }
  }
  for (const auto& [path, named] : files) {
    FP_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzip(path));
    std::string_view first(text);
    first = first.substr(0, first.find('\n'));
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    const std::optional<Format> format = FormatOf(first);
    if (!format) {
      if (!named) continue;
      return LocatedError(SourceLocation{path, 1, 1, std::string(first)}, "header",
                          fmt::format("not a collective table: expected the header of aiconfigurator's nccl_perf "
                                      "('{}') or custom_allreduce_perf ('{}'), APEX+ ('{}') or Vidur "
                                      "(',time_stats.<op>.min,...')",
                                      kAicNcclHeader, kAicVllmHeader, kApexHeader));
    }
    Accumulated acc;
    FileParser parser(path, *format, SplitCsvFields(first));
    FP_RETURN_IF_ERROR(parser.Parse(text, &acc));
    t.files_.push_back(path);
    for (const auto& [key, points] : acc.points) {
      if (const auto it = t.curves_.find(key); it != t.curves_.end()) {
        return InvalidInput(fmt::format("{}: {} {} over {} GPUs on {} node(s) is also stated by {}; name one of them",
                                        path, CollectiveImplName(key.impl), CollectiveOpName(key.op), key.ranks,
                                        key.nodes, it->second.origin));
      }
      CollectiveCurve c;
      c.origin = path;
      for (const auto& [bytes, sum] : points) {
        c.bytes.push_back(bytes);
        c.ns.push_back(sum.first / static_cast<double>(sum.second));
      }
      t.curves_.emplace(key, std::move(c));
    }
  }
  if (t.curves_.empty()) {
    return InvalidInput(fmt::format("{}: no collective table rows of a 2-byte type (half, bfloat16) found",
                                    fmt::join(paths, ", ")));
  }
  return t;
}

const CollectiveCurve* CollectiveTables::Find(const CollectiveKey& key) const {
  const auto it = curves_.find(key);
  return it == curves_.end() ? nullptr : &it->second;
}

Json CollectiveTables::Describe() const {
  Json curves = Json::array();
  for (const auto& [key, c] : curves_) {
    curves.push_back(Json{{"impl", std::string(CollectiveImplName(key.impl))},
                          {"op", std::string(CollectiveOpName(key.op))},
                          {"ranks", key.ranks},
                          {"nodes", key.nodes},
                          {"points", static_cast<int64_t>(c.bytes.size())},
                          {"min_bytes", c.bytes.front()},
                          {"max_bytes", c.bytes.back()},
                          {"file", c.origin}});
  }
  return Json{{"paths", paths_}, {"curves", curves}};
}

// ---- ParallelComm -----------------------------------------------------------------

Duration ParallelComm::TpAllReduce(Bytes message, bool* outside, CommSource* source) const {
  const int64_t n = links_.tp;
  if (n <= 1) {
    if (source != nullptr) *source = CommSource::kNone;
    return Duration();
  }
  const bool custom = VllmUsesCustomAllReduce(n, message, links_.tp_nvlink, links_.peer_to_peer);
  if (tables_ != nullptr) {
    const CollectiveImpl impl = custom ? CollectiveImpl::kVllm : CollectiveImpl::kNccl;
    if (const CollectiveCurve* c = tables_->Find({impl, CollectiveOp::kAllReduce, n, 1})) {
      if (source != nullptr) *source = CommSource::kTable;
      return c->At(message, outside);
    }
  }
  if (source != nullptr) *source = CommSource::kAlphaBeta;
  if (custom) return CustomAllReduceTime(n, message, links_.tp_link, links_.tp_nvlink);
  const LinkCost link = links_.peer_to_peer ? links_.tp_link : HostStaged(links_.tp_link);
  return AllReduceRingTime(n, message, link);
}

Duration ParallelComm::PpSendRecv(Bytes message, bool* outside, CommSource* source) const {
  if (links_.pp <= 1) {
    if (source != nullptr) *source = CommSource::kNone;
    return Duration();
  }
  if (tables_ != nullptr) {
    const int64_t nodes = links_.pp_spans_nodes ? 2 : 1;
    if (const CollectiveCurve* c = tables_->Find({CollectiveImpl::kNccl, CollectiveOp::kSendRecv, 2, nodes})) {
      if (source != nullptr) *source = CommSource::kTable;
      return c->At(message, outside);
    }
  }
  if (source != nullptr) *source = CommSource::kAlphaBeta;
  // Between nodes the NIC carries the transfer; peer-to-peer access is a PCIe matter.
  const bool staged = !links_.peer_to_peer && !links_.pp_spans_nodes;
  return SendRecvTime(message, staged ? HostStaged(links_.pp_link) : links_.pp_link);
}

Json ParallelComm::Describe() const {
  Json j;
  j["tp"] = links_.tp;
  j["pp"] = links_.pp;
  j["peer_to_peer"] = links_.peer_to_peer;
  if (links_.tp > 1) {
    j["tp_all_reduces_per_layer"] = kTpAllReducesPerLayer;
    j["tp_link"] = Json{{"bandwidth_gbps", links_.tp_link.bandwidth / 1e9},
                        {"latency_us", links_.tp_link.latency.micros()},
                        {"nvlink", links_.tp_nvlink}};
    j["tp_all_reduce"] =
        "vLLM's choice: custom all-reduce (ranks 2/4/6/8, peer-to-peer, 2 ranks or NVLink, message < 8 MiB), else "
        "NCCL; a table of that implementation when given, else alpha-beta" +
        std::string(links_.peer_to_peer ? "" : " (NCCL staged through host memory: 2 PCIe hops)");
  }
  if (links_.pp > 1) {
    j["pp_tensors_per_boundary"] = kPpTensorsPerBoundary;
    j["pp_link"] = Json{{"bandwidth_gbps", links_.pp_link.bandwidth / 1e9},
                        {"latency_us", links_.pp_link.latency.micros()},
                        {"spans_nodes", links_.pp_spans_nodes}};
  }
  j["source"] = tables_ != nullptr ? Json(tables_->Describe()) : Json("alpha-beta");
  return j;
}

}  // namespace fleetplan
