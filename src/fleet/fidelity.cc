#include "fleetplan/fleet/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/text_lines.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/perf/kernel_table.h"

namespace fleetplan {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCalibrationSchema = "fleetplan-calibration-v1";
// Content ids of the replayed prompts: one unique segment per request, so no prefix is
// shared (the runs' prompts are distinct ShareGPT conversations; their token ids were
// not published).
constexpr ContentId kPromptContentBase = 1'000'000;

Status MetaError(const std::string& path, std::string_view field, std::string_view message) {
  return LocatedError(SourceLocation{path, 0, 0, {}}, field, message);
}

// `text` (the file at `path`) as one JSON object. A syntax error (a truncated file, a
// stray comma) is located at the line and column where the parser stopped.
Expected<Json> ParseJsonObject(const std::string& path, const std::string& text) {
  if (FindJsonNestingBeyond(text) != std::string::npos) return MetaError(path, "", JsonNestingMessage());
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    const std::size_t at = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const std::string_view before = std::string_view(text).substr(0, at);
    const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
    const std::size_t line_end = std::min(text.find('\n', line_start), text.size());
    SourceLocation where{path, static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1,
                         static_cast<int>(at - line_start) + 1, text.substr(line_start, line_end - line_start)};
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 3, column 1: <what>".
    std::string what = e.what();
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    if (at >= text.size()) what += " (is the file truncated?)";
    return LocatedError(where, "", fmt::format("invalid JSON: {}", what));
  }
  if (!j.is_object()) return MetaError(path, "", fmt::format("expected a JSON object, got {}", j.type_name()));
  return j;
}

// meta.json field `a.b` as an integer >= 1 (or nullopt when null / absent and optional).
Expected<std::optional<int64_t>> MetaCount(const Json& meta, const std::string& path, const std::string& field,
                                           bool required) {
  std::string pointer = "/" + field;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  const Json::json_pointer ptr(pointer);
  if (!meta.contains(ptr) || meta.at(ptr).is_null()) {
    if (!required) return std::optional<int64_t>();
    return MetaError(path, field, "missing required field");
  }
  const Json& v = meta.at(ptr);
  if (!v.is_number_integer() || v.get<int64_t>() < 1) {
    return MetaError(path, field, fmt::format("expected an integer >= 1, got {}", v.dump()));
  }
  return std::optional<int64_t>(v.get<int64_t>());
}

// "Qwen/Qwen3-30B-A3B-Instruct-2507" -> "qwen3-30b-a3b": the lowercased name after the
// organisation, shortened at '-' until the catalog knows it.
Expected<std::string> CatalogModelName(const std::string& hf, const std::string& path) {
  std::string name = hf.substr(hf.find('/') == std::string::npos ? 0 : hf.find('/') + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string full = name;
  while (!name.empty()) {
    if (Catalog::Builtin().Model(name).ok()) return name;
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos) break;
    name.resize(dash);
  }
  return MetaError(path, "model", Catalog::Builtin().Model(full).status().message());
}

class CollectSink final : public RecordSink {
 public:
  Expected<ClassId> ResolveClass(std::string_view /*name*/) override { return ClassId{0}; }
  bool NeedsItl(ClassId /*id*/) const override { return false; }
  void Add(const RequestRecord& r) override { records.push_back(r); }
  std::vector<RequestRecord> records;
};

Status ReadMeta(const std::string& dir, MeasuredRun* run, int64_t* num_requests) {
  const std::string path = (fs::path(dir) / "meta.json").string();
  if (!fs::is_regular_file(path)) return MetaError(path, "", "missing file: a run directory needs meta.json");
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  FP_ASSIGN_OR_RETURN(const Json meta, ParseJsonObject(path, text));
  if (!meta.contains("model") || !meta["model"].is_string()) return MetaError(path, "model", "missing required string field");
  run->hf_model = meta["model"].get<std::string>();
  // vLLM's run metadata names the device as hardware.device_name (optional).
  const Json::json_pointer device("/hardware/device_name");
  if (meta.contains(device) && meta.at(device).is_string()) run->gpu = meta.at(device).get<std::string>();
  FP_ASSIGN_OR_RETURN(run->catalog_model, CatalogModelName(run->hf_model, path));
  FP_ASSIGN_OR_RETURN(auto tp, MetaCount(meta, path, "engine_kwargs.tensor_parallel_size", false));
  FP_ASSIGN_OR_RETURN(auto dp, MetaCount(meta, path, "engine_kwargs.data_parallel_size", false));
  FP_ASSIGN_OR_RETURN(auto seqs, MetaCount(meta, path, "engine_kwargs.max_num_seqs", true));
  FP_ASSIGN_OR_RETURN(auto budget, MetaCount(meta, path, "engine_kwargs.max_num_batched_tokens", true));
  FP_ASSIGN_OR_RETURN(auto block, MetaCount(meta, path, "kv_cache.block_size", false));
  FP_ASSIGN_OR_RETURN(auto blocks, MetaCount(meta, path, "kv_cache.num_gpu_blocks", false));
  FP_ASSIGN_OR_RETURN(auto count, MetaCount(meta, path, "num_requests", false));
  run->tp = tp.value_or(1);
  run->dp = dp.value_or(1);
  const Json::json_pointer ep_ptr("/engine_kwargs/enable_expert_parallel");
  const bool ep = meta.contains(ep_ptr) && meta.at(ep_ptr).is_boolean() && meta.at(ep_ptr).get<bool>();
  run->ep = ep ? run->tp * run->dp : 1;
  run->max_num_seqs = *seqs;
  run->max_num_batched_tokens = *budget;
  run->block_size = block.value_or(16);
  run->kv_blocks = blocks;
  *num_requests = count.value_or(0);
  return Status::Ok();
}

Status ReadRequests(const std::string& dir, int64_t num_requests, MeasuredRun* run) {
  const std::string path = (fs::path(dir) / "requests.jsonl").string();
  if (!fs::is_regular_file(path)) return MetaError(path, "", "missing file: a run directory needs requests.jsonl");
  FP_ASSIGN_OR_RETURN(const std::unique_ptr<RecordReader> reader, MakeRecordReader("llmservingsim"));
  CollectSink sink;
  FP_ASSIGN_OR_RETURN(const RecordsFileInfo info, reader->Read(path, sink));
  for (const std::string& n : info.notes) run->notes.push_back(n);
  if (num_requests > 0 && info.records != num_requests) {
    return MetaError(path, "", fmt::format("{} records, but meta.json num_requests says {}", info.records, num_requests));
  }
  SimTime origin = SimTime::Max();
  for (const RequestRecord& r : sink.records) origin = std::min(origin, r.arrival);
  for (const RequestRecord& r : sink.records) {
    MeasuredRequest m;
    m.request.id = r.id;
    m.request.arrival = SimTime() + (r.arrival - origin);
    m.request.prompt = {PromptSegment{kPromptContentBase + static_cast<ContentId>(r.id), r.input_tokens}};
    m.request.output_tokens = r.output_tokens;
    m.ttft = *r.first_token - r.arrival;
    m.e2e = *r.finish - r.arrival;
    if (r.output_tokens >= 2) m.tpot = Duration::Nanos((*r.finish - *r.first_token).ns() / (r.output_tokens - 1));
    run->requests.push_back(std::move(m));
  }
  return Status::Ok();
}

// timeseries.csv: t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct (optional file).
Status ReadTicks(const std::string& dir, MeasuredRun* run) {
  const std::string path = (fs::path(dir) / "timeseries.csv").string();
  if (!fs::is_regular_file(path)) {
    run->notes.push_back("timeseries.csv absent: no measured queue time series");
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  constexpr std::string_view kHeader = "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct";
  TextLines lines(text);
  std::string_view view;
  while (lines.Next(&view)) {
    const std::string line(view);  // sscanf needs it terminated
    const int line_no = lines.line_no();
    const SourceLocation where{path, line_no, 1, line};
    if (line_no == 1) {
      if (line != kHeader) return LocatedError(where, "header", fmt::format("expected '{}'", kHeader));
      continue;
    }
    if (line.empty()) continue;
    MeasuredTick tick;
    double thr_p = 0, thr_g = 0, running = 0, waiting = 0, kv = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "%lf,%lf,%lf,%lf,%lf,%lf%c", &tick.t, &thr_p, &thr_g, &running, &waiting, &kv,
                    &tail) != 6 || running < 0 || waiting < 0) {
      return LocatedError(where, "row", "expected 6 numbers (t, throughputs, running >= 0, waiting >= 0, kv %)");
    }
    tick.running = std::llround(running);
    tick.waiting = std::llround(waiting);
    run->ticks.push_back(tick);
  }
  return Status::Ok();
}

// sim_cluster_config.json: link_bw (GB/s) and link_latency (ns); else the catalog's pcie5.
Status ReadLink(const std::string& dir, MeasuredRun* run) {
  const std::string path = (fs::path(dir) / "sim_cluster_config.json").string();
  if (!fs::is_regular_file(path)) {
    FP_ASSIGN_OR_RETURN(const LinkSpec pcie, Catalog::Builtin().Link("pcie5"));
    run->link_bandwidth = pcie.bandwidth;
    run->link_latency = pcie.latency;
    run->link_source = "catalog link pcie5 (the run has no sim_cluster_config.json)";
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  FP_ASSIGN_OR_RETURN(const Json j, ParseJsonObject(path, text));
  for (const char* key : {"link_bw", "link_latency"}) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() < 0 || j[key].get<double>() > 1e9) {
      return MetaError(path, key, "expected a number >= 0 (link_bw in GB/s, link_latency in ns)");
    }
  }
  if (j["link_bw"].get<double>() <= 0) return MetaError(path, "link_bw", "expected a bandwidth > 0 GB/s");
  run->link_bandwidth = j["link_bw"].get<double>() * 1e9;
  run->link_latency = Duration::FromSecondsRounded(j["link_latency"].get<double>() / 1e9);
  run->link_source = fmt::format("sim_cluster_config.json: link_bw {} GB/s, link_latency {} ns",
                                 j["link_bw"].get<double>(), j["link_latency"].get<double>());
  return Status::Ok();
}

// Peer-to-peer access of the run's GPUs: the catalog GPU whose description begins with
// the run's device name (vLLM's hardware.device_name, e.g. "NVIDIA GeForce RTX 4090");
// assumed, and noted, when the device is unnamed or not in the catalog.
void ReadPeerToPeer(MeasuredRun* run) {
  run->peer_to_peer = true;
  if (!run->gpu.empty()) {
    for (const auto& [name, gpu] : Catalog::Builtin().gpus()) {
      if (gpu.description.starts_with(run->gpu)) {
        run->peer_to_peer = gpu.peer_to_peer;
        run->notes.push_back(fmt::format("device {} is catalog GPU {}: {}", run->gpu, name,
                                         gpu.peer_to_peer ? "peer-to-peer access"
                                                          : "no peer-to-peer access (transfers staged through host memory)"));
        return;
      }
    }
  }
  run->notes.push_back(fmt::format("device {} is not in the catalog: peer-to-peer access between its GPUs assumed",
                                   run->gpu.empty() ? "(unnamed)" : run->gpu));
}

// Percentile with linear interpolation between closest ranks (numpy's default).
double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

Json Summary(const std::vector<double>& v) {
  return Json{{"mean", Mean(v)}, {"p50", Percentile(v, 50)}, {"p90", Percentile(v, 90)}, {"p99", Percentile(v, 99)}};
}

// Rounds to 4 decimals so reports stay short and stable.
double Round4(double x) { return std::round(x * 1e4) / 1e4; }

Json Rounded(Json j) {
  for (auto& item : j.items()) item.value() = Round4(item.value().get<double>());
  return j;
}

struct MetricPair {
  std::vector<double> measured;
  std::vector<double> predicted;
};

Json MetricJson(const MetricPair& m, double* mean_error) {
  const Json meas = Summary(m.measured);
  const Json pred = Summary(m.predicted);
  double ape = 0;
  for (size_t i = 0; i < m.measured.size(); ++i) {
    if (m.measured[i] > 0) ape += std::abs(m.predicted[i] - m.measured[i]) / m.measured[i];
  }
  auto err = [&](const char* key) {
    const double a = meas[key].get<double>();
    return a > 0 ? Round4(100.0 * (pred[key].get<double>() - a) / a) : 0.0;
  };
  *mean_error = err("mean");
  Json j;
  j["measured_ms"] = Rounded(meas);
  j["predicted_ms"] = Rounded(pred);
  j["mean_error_pct"] = *mean_error;
  j["p50_error_pct"] = err("p50");
  j["p90_error_pct"] = err("p90");
  j["p99_error_pct"] = err("p99");
  j["mape_pct"] = m.measured.empty() ? 0.0 : Round4(100.0 * ape / static_cast<double>(m.measured.size()));
  j["requests"] = static_cast<int64_t>(m.measured.size());
  return j;
}

class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::vector<Request> requests) : requests_(std::move(requests)) {
    std::stable_sort(requests_.begin(), requests_.end(),
                     [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
    names_.classes = {"default"};
  }
  Expected<std::optional<SimTime>> PeekArrival() override {
    if (next_ == requests_.size()) return std::optional<SimTime>();
    return std::optional<SimTime>(requests_[next_].arrival);
  }
  Expected<std::optional<Request>> Next() override {
    if (next_ == requests_.size()) return std::optional<Request>();
    return std::optional<Request>(requests_[next_++]);
  }
  bool exhausted() const override { return next_ == requests_.size(); }
  const WorkloadNames& names() const override { return names_; }
  Json Describe() const override { return Json{{"source", "run-directory"}, {"loop", "open"}}; }

 private:
  std::vector<Request> requests_;
  size_t next_ = 0;
  WorkloadNames names_;
};

class Recorder final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override { outcomes[o.id] = o; }
  void OnStep(const StepRecord& s) override { steps.push_back(s); }
  std::map<RequestId, RequestOutcome> outcomes;
  std::vector<StepRecord> steps;
};

// Multiplies the wrapped model's GPU time by the calibration's scale.
class ScaledStepModel final : public StepCostModel {
 public:
  ScaledStepModel(std::unique_ptr<StepCostModel> inner, double scale) : inner_(std::move(inner)), scale_(scale) {}
  StepCost Cost(std::span<const StepChunk> chunks) const override { return Scale(inner_->Cost(chunks)); }
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override {
    return Scale(inner_->CostPadded(chunks, padding));
  }
  std::string kind() const override { return inner_->kind(); }
  Json Describe() const override {
    Json j = inner_->Describe();
    j["gpu_time_scale"] = scale_;
    return j;
  }

 private:
  StepCost Scale(StepCost c) const {
    c.gpu = Duration::Nanos(std::llround(static_cast<double>(c.gpu.ns()) * scale_));
    return c;
  }
  std::unique_ptr<StepCostModel> inner_;
  double scale_;
};

// Predicted running / waiting at each measured tick: the state of the step in flight at
// run start + t, summed over replicas (a replica with no step in flight has no work).
Json TimeSeries(const MeasuredRun& run, const std::vector<StepRecord>& steps, int64_t replicas) {
  Json rows = Json::array();
  std::vector<size_t> next(static_cast<size_t>(replicas), 0);
  std::vector<std::vector<const StepRecord*>> by_replica(static_cast<size_t>(replicas));
  for (const StepRecord& s : steps) by_replica[static_cast<size_t>(s.replica)].push_back(&s);
  for (const MeasuredTick& tick : run.ticks) {
    const SimTime at = SimTime() + Duration::FromSecondsRounded(tick.t);
    int64_t running = 0, waiting = 0;
    for (size_t r = 0; r < by_replica.size(); ++r) {
      const auto& v = by_replica[r];
      while (next[r] < v.size() && v[next[r]]->start <= at) ++next[r];
      if (next[r] == 0) continue;
      const StepRecord* s = v[next[r] - 1];
      if (s->end < at) continue;  // no step in flight: the replica is idle (no work)
      running += s->running;
      waiting += s->waiting;
    }
    rows.push_back(Json{{"t", tick.t},
                        {"measured_running", tick.running},
                        {"measured_waiting", tick.waiting},
                        {"predicted_running", running},
                        {"predicted_waiting", waiting}});
  }
  return rows;
}

Expected<std::shared_ptr<const StepCostModel>> BuildModel(const MeasuredRun& run, const std::string& profile,
                                                          const Calibration& cal) {
  FP_ASSIGN_OR_RETURN(const ModelSpec model, Catalog::Builtin().Model(run.catalog_model));
  FP_ASSIGN_OR_RETURN(KernelTables tables, KernelTables::Load(profile, run.tp));
  KernelModelShape shape;
  shape.layers = model.layers;
  if (model.moe) {
    if (!tables.has_moe) return InvalidInput(fmt::format("{}: model '{}' is MoE but the profile has no moe.csv", profile, model.name));
    shape.experts = model.moe->experts;
    shape.experts_per_token = model.moe->experts_per_token;
    shape.ep = run.ep;
    shape.hidden = model.hidden;
    shape.ep_link = LinkCost{run.link_bandwidth, run.link_latency};
  }
  if (run.tp > 1) {
    // TP all-reduces (two per layer) over the run's link between GPUs, alpha-beta; the
    // GPUs' peer-to-peer access from the catalog GPU the run's device maps to.
    ParallelLinks links;
    links.tp = run.tp;
    links.tp_link = LinkCost{run.link_bandwidth, run.link_latency};
    links.tp_nvlink = false;  // LLMServingSim's runs are PCIe machines; the link is stated
    links.peer_to_peer = run.peer_to_peer;
    shape.hidden = model.hidden;
    shape.comm = ParallelComm(links, nullptr);
  }
  auto inner = std::make_unique<KernelTableStepModel>(std::move(tables), shape);
  return std::shared_ptr<const StepCostModel>(std::make_shared<ScaledStepModel>(std::move(inner), cal.gpu_time_scale));
}

FleetSetup BuildFleet(const MeasuredRun& run, std::shared_ptr<const StepCostModel> model, const Calibration& cal,
                      std::vector<std::string>* notes) {
  EngineConfig e;
  e.scheduler.policy = "decode-first";
  e.scheduler.max_batched_tokens = run.max_num_batched_tokens;
  e.scheduler.max_running = run.max_num_seqs;
  e.scheduler.chunk_tokens = run.max_num_batched_tokens;
  e.block_tokens = run.block_size;
  e.host_overhead = cal.host_overhead;
  if (run.kv_blocks) {
    e.kv_blocks = *run.kv_blocks;
  } else {
    int64_t blocks = 0;
    for (const MeasuredRequest& m : run.requests) {
      blocks += (m.request.prompt_tokens() + m.request.output_tokens + run.block_size - 1) / run.block_size;
    }
    e.kv_blocks = blocks;
    notes->push_back(fmt::format("meta.json states no kv_cache.num_gpu_blocks: KV assumed not binding ({} blocks "
                                 "per replica, every request's tokens at once)",
                                 blocks));
  }
  FleetSetup setup;
  for (int64_t r = 0; r < run.dp; ++r) setup.replicas.push_back(ReplicaSetup{e, model});
  setup.router.policy = "least-outstanding";
  return setup;
}

struct Replay {
  Recorder recorder;
  int64_t replicas = 1;
  int64_t extrapolated_steps = 0;
  std::vector<std::string> notes;
  Json model;
};

Status Simulate(const MeasuredRun& run, const std::string& profile, const Calibration& cal, Replay* out) {
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const StepCostModel> model, BuildModel(run, profile, cal));
  out->model = model->Describe();
  const FleetSetup setup = BuildFleet(run, model, cal, &out->notes);
  out->replicas = static_cast<int64_t>(setup.replicas.size());
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::Create(setup, &out->recorder));
  std::vector<Request> requests;
  for (const MeasuredRequest& m : run.requests) requests.push_back(m.request);
  VectorSource source(std::move(requests));
  FP_RETURN_IF_ERROR(sim->Run(source));
  for (int32_t r = 0; r < sim->replica_count(); ++r) out->extrapolated_steps += sim->replica(r).stats().extrapolated_steps;
  return Status::Ok();
}

std::string ProfileFor(const MeasuredRun& run, const std::string& given) {
  if (given.empty()) return DefaultProfileDir(run);
  if (fs::exists(fs::path(given) / "dense.csv")) return given;
  return (fs::path(given) / fmt::format("tp{}", run.tp)).string();
}

}  // namespace

Expected<MeasuredRun> LoadMeasuredRun(const std::string& dir) {
  if (!fs::is_directory(dir)) return MetaError(dir, "", "not a directory (a run directory holds meta.json and requests.jsonl)");
  MeasuredRun run;
  run.dir = dir;
  const fs::path p = fs::path(dir).lexically_normal();
  const fs::path clean = p.filename().empty() ? p.parent_path() : p;
  run.name = (clean.parent_path().filename() / clean.filename()).string();
  int64_t num_requests = 0;
  FP_RETURN_IF_ERROR(ReadMeta(dir, &run, &num_requests));
  FP_RETURN_IF_ERROR(ReadRequests(dir, num_requests, &run));
  FP_RETURN_IF_ERROR(ReadTicks(dir, &run));
  if (run.ep > 1 || run.tp > 1) FP_RETURN_IF_ERROR(ReadLink(dir, &run));
  if (run.tp > 1) ReadPeerToPeer(&run);
  return run;
}

std::string DefaultProfileDir(const MeasuredRun& run) {
  const fs::path p = fs::path(run.dir).lexically_normal();
  const fs::path clean = p.filename().empty() ? p.parent_path() : p;
  const fs::path root = clean.parent_path().parent_path().parent_path();  // above vllm-runs
  const std::string hw = clean.parent_path().filename().string();
  return (root / "perf" / hw / run.hf_model / "bf16" / fmt::format("tp{}", run.tp)).string();
}

Expected<Calibration> LoadCalibration(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  FP_ASSIGN_OR_RETURN(const Json j, ParseJsonObject(path, text));
  static const std::vector<std::string> kKeys = {"fitted_on", "gpu_time_scale", "host_overhead_us", "method", "schema"};
  for (const auto& item : j.items()) {
    const std::string& k = item.key();
    if (std::find(kKeys.begin(), kKeys.end(), k) == kKeys.end()) return MetaError(path, k, UnknownNameMessage("key", k, kKeys));
  }
  if (j.value("schema", "") != kCalibrationSchema) return MetaError(path, "schema", fmt::format("expected '{}'", kCalibrationSchema));
  Calibration c;
  c.source = path;
  const Json host = j.value("host_overhead_us", Json());
  if (!host.is_number() || host.get<double>() < 0 || host.get<double>() > 1e6) {
    return MetaError(path, "host_overhead_us", "expected a number of microseconds in [0, 1e6]");
  }
  c.host_overhead = Duration::FromMillisRounded(host.get<double>() / 1e3);
  const Json scale = j.value("gpu_time_scale", Json(1.0));
  if (!scale.is_number() || scale.get<double>() <= 0 || scale.get<double>() > 10) {
    return MetaError(path, "gpu_time_scale", "expected a number in (0, 10]");
  }
  c.gpu_time_scale = scale.get<double>();
  const Json on = j.value("fitted_on", Json::array());
  if (!on.is_array()) return MetaError(path, "fitted_on", "expected a list of run names");
  for (const Json& r : on) {
    if (!r.is_string()) return MetaError(path, "fitted_on", "expected a list of run names");
    c.fitted_on.push_back(r.get<std::string>());
  }
  c.method = j.value("method", "");
  return c;
}

Json CalibrationJson(const Calibration& c) {
  Json j;
  j["schema"] = kCalibrationSchema;
  j["host_overhead_us"] = Round4(c.host_overhead.micros());
  j["gpu_time_scale"] = Round4(c.gpu_time_scale);
  j["fitted_on"] = c.fitted_on;
  j["method"] = c.method;
  return j;
}

namespace {

struct Metrics {
  MetricPair ttft;
  MetricPair tpot;
  MetricPair e2e;
};

// Measured and predicted latencies of every request, in run order.
Expected<Metrics> PairUp(const MeasuredRun& run, const Replay& replay) {
  Metrics x;
  int64_t unfinished = 0;
  for (const MeasuredRequest& m : run.requests) {
    const auto it = replay.recorder.outcomes.find(m.request.id);
    if (it == replay.recorder.outcomes.end() || it->second.status != RequestStatus::kOk) {
      ++unfinished;
      continue;
    }
    const RequestOutcome& o = it->second;
    x.ttft.measured.push_back(m.ttft.millis());
    x.ttft.predicted.push_back((*o.first_token - o.arrival).millis());
    x.e2e.measured.push_back(m.e2e.millis());
    x.e2e.predicted.push_back((*o.finish - o.arrival).millis());
    if (m.tpot && o.output_tokens >= 2) {
      x.tpot.measured.push_back(m.tpot->millis());
      x.tpot.predicted.push_back((*o.finish - *o.first_token).millis() / static_cast<double>(o.output_tokens - 1));
    }
  }
  if (unfinished > 0) {
    return InvalidInput(fmt::format("{}: {} of its requests cannot complete in the replay (a prompt larger than the "
                                    "KV cache or max_num_batched_tokens allows?)",
                                    run.dir, unfinished));
  }
  return x;
}

Json RunJson(const MeasuredRun& run) {
  return Json{{"dir", run.dir}, {"name", run.name}, {"model", run.hf_model}, {"catalog_model", run.catalog_model},
              {"tp", run.tp}, {"dp", run.dp}, {"ep", run.ep}, {"max_num_seqs", run.max_num_seqs},
              {"max_num_batched_tokens", run.max_num_batched_tokens}, {"block_size", run.block_size},
              {"requests", static_cast<int64_t>(run.requests.size())}};
}

std::vector<std::string> Notes(const MeasuredRun& run, const Replay& replay) {
  std::vector<std::string> notes = run.notes;
  for (const std::string& n : replay.notes) notes.push_back(n);
  notes.push_back("prompts replayed as unique content: no prefix-cache hits (token ids not in the run directory)");
  if (run.dp > 1) notes.push_back("DP ranks simulated as independent replicas (no lock-step between ranks)");
  if (run.ep > 1) notes.push_back("EP exchange per MoE layer over " + run.link_source);
  if (run.tp > 1) {
    notes.push_back(fmt::format("TP: {} all-reduces of the layer's activations per layer over {} (alpha-beta, vLLM's "
                                "choice of custom kernel or NCCL)",
                                kTpAllReducesPerLayer, run.link_source));
  }
  return notes;
}

}  // namespace

// The profile folder's meta.json (beside the tp folders, or in the folder itself): the
// model and GPU its kernels were measured on. Absent: nothing to compare.
Expected<std::optional<Json>> ProfileMeta(const std::string& profile) {
  for (const fs::path& path : {fs::path(profile).parent_path() / "meta.json", fs::path(profile) / "meta.json"}) {
    if (!fs::is_regular_file(path)) continue;
    FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path.string()));
    if (FindJsonNestingBeyond(text) != std::string::npos) return MetaError(path.string(), "", JsonNestingMessage());
    Json meta = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (meta.is_discarded() || !meta.is_object()) return MetaError(path.string(), "", "not a JSON object");
    meta["__path"] = path.string();
    return std::optional<Json>(std::move(meta));
  }
  return std::optional<Json>();
}

// Refuses (or, allowed, notes) a profile measured on another model or GPU than the run.
Status CheckProfileMatchesRun(const MeasuredRun& run, const std::string& profile, bool allow_mismatch,
                              std::vector<std::string>* notes) {
  FP_ASSIGN_OR_RETURN(std::optional<Json> meta, ProfileMeta(profile));
  if (!meta) {
    notes->push_back(fmt::format("the profile {} has no meta.json: its model and GPU are not checked against the run",
                                 profile));
    return Status::Ok();
  }
  const std::string path = (*meta)["__path"].get<std::string>();
  const std::string model = meta->value("model", "");
  const std::string gpu = meta->value("gpu", "");
  std::vector<std::string> mismatches;
  if (!model.empty() && model != run.hf_model) {
    mismatches.push_back(fmt::format("its kernels were measured on {}, the run served {}", model, run.hf_model));
  }
  if (!gpu.empty() && !run.gpu.empty() && gpu != run.gpu) {
    mismatches.push_back(fmt::format("its kernels were measured on {}, the run ran on {}", gpu, run.gpu));
  }
  if (!gpu.empty() && run.gpu.empty()) {
    notes->push_back(fmt::format("the run's meta.json names no device (hardware.device_name); the profile's ({}) "
                                 "is assumed",
                                 gpu));
  }
  if (mismatches.empty()) return Status::Ok();
  if (!allow_mismatch) {
    return LocatedError(SourceLocation{path, 0, 0, {}}, "",
                        fmt::format("the profile does not match the run: {}; a profile of another model or GPU "
                                    "predicts nothing about this run (pass --allow-mismatch to replay it anyway)",
                                    fmt::join(mismatches, "; ")));
  }
  for (const std::string& m : mismatches) notes->push_back(fmt::format("warning: profile mismatch allowed: {}", m));
  return Status::Ok();
}

Expected<ValidationResult> ValidateRun(const MeasuredRun& run, const ValidationOptions& options) {
  const std::string profile = ProfileFor(run, options.profile_dir);
  std::vector<std::string> profile_notes;
  FP_RETURN_IF_ERROR(CheckProfileMatchesRun(run, profile, options.allow_mismatch, &profile_notes));
  Replay replay;
  FP_RETURN_IF_ERROR(Simulate(run, profile, options.calibration, &replay));
  FP_ASSIGN_OR_RETURN(const Metrics x, PairUp(run, replay));
  ValidationResult res;
  Json& j = res.json;
  j["run"] = RunJson(run);
  j["profile"] = profile;
  j["step_model"] = replay.model;
  j["calibration"] = CalibrationJson(options.calibration);
  j["calibration"]["source"] = options.calibration.source.empty() ? "none (zero host overhead, scale 1)" : options.calibration.source;
  j["metrics"]["ttft"] = MetricJson(x.ttft, &res.ttft_mean_error_pct);
  j["metrics"]["tpot"] = MetricJson(x.tpot, &res.tpot_mean_error_pct);
  j["metrics"]["e2e"] = MetricJson(x.e2e, &res.e2e_mean_error_pct);
  j["timeseries"] = TimeSeries(run, replay.recorder.steps, replay.replicas);
  j["simulation"] = {{"steps", static_cast<int64_t>(replay.recorder.steps.size())},
                     {"extrapolated_steps", replay.extrapolated_steps},
                     {"scheduler", "decode-first (vLLM v1: running first, then waiting FCFS, chunked prefill)"},
                     {"router", run.dp > 1 ? "least-outstanding over DP ranks" : "single replica"}};
  j["notes"] = Notes(run, replay);
  for (const std::string& n : profile_notes) j["notes"].push_back(n);
  return res;
}

namespace {

double FitLoss(const std::vector<MeasuredRun>& runs, const std::vector<std::string>& profiles, const Calibration& c,
               Status* error) {
  double loss = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto res = ValidateRun(runs[i], ValidationOptions{profiles[i], c});
    if (!res.ok()) {
      *error = res.status();
      return 0;
    }
    loss += std::abs(res->tpot_mean_error_pct) + std::abs(res->e2e_mean_error_pct);
  }
  return loss / static_cast<double>(runs.size());
}

// Grid of the fit: host overhead 0..kMaxHostUs in kHostStepUs, scale kScaleLo..kScaleHi.
constexpr int64_t kHostStepUs = 100;
constexpr int64_t kMaxHostUs = 4000;
constexpr int64_t kScaleSteps = 16;
constexpr double kScaleLo = 0.70;
constexpr double kScaleStep = 0.04;

}  // namespace

Expected<Calibration> FitCalibration(const std::vector<MeasuredRun>& runs, const std::vector<std::string>& profile_dirs,
                                     const FitProgressFn& progress) {
  if (runs.empty()) return UsageError("fit needs at least one run directory");
  std::vector<std::string> profiles;
  for (size_t i = 0; i < runs.size(); ++i) profiles.push_back(ProfileFor(runs[i], i < profile_dirs.size() ? profile_dirs[i] : ""));
  Calibration best;
  double best_loss = -1;
  Status error;
  const int64_t points = kScaleSteps * (kMaxHostUs / kHostStepUs + 1);
  int64_t done = 0;
  for (int64_t s = 0; s < kScaleSteps; ++s) {
    for (int64_t h = 0; h <= kMaxHostUs; h += kHostStepUs) {
      Calibration c;
      c.host_overhead = Us(h);
      c.gpu_time_scale = kScaleLo + kScaleStep * static_cast<double>(s);
      const double loss = FitLoss(runs, profiles, c, &error);
      if (!error.ok()) return error;
      if (best_loss < 0 || loss < best_loss) {
        best_loss = loss;
        best = c;
      }
      if (progress) progress(++done, points);
    }
  }
  for (const MeasuredRun& r : runs) best.fitted_on.push_back(r.name);
  best.method = fmt::format("grid search: host_overhead 0..{} us step {} us, gpu_time_scale {:.2f}..{:.2f} step {:.2f}; "
                            "minimises mean over runs of |TPOT mean error %| + |E2E mean error %| (loss {:.3f})",
                            kMaxHostUs, kHostStepUs, kScaleLo, kScaleLo + kScaleStep * (kScaleSteps - 1), kScaleStep,
                            best_loss);
  return best;
}

std::vector<std::string> CalibrationGridEdges(const Calibration& c) {
  std::vector<std::string> out;
  const double scale_hi = kScaleLo + kScaleStep * (kScaleSteps - 1);
  if (c.host_overhead >= Us(kMaxHostUs)) {
    out.push_back(fmt::format("host_overhead {} us is the largest value of the fit's grid: the best value may be "
                              "larger, so check the runs (a profile of another GPU or model?) before using it",
                              kMaxHostUs));
  }
  if (c.gpu_time_scale <= kScaleLo + 1e-9 || c.gpu_time_scale >= scale_hi - 1e-9) {
    out.push_back(fmt::format("gpu_time_scale {:.2f} is the {} value of the fit's grid ({:.2f}..{:.2f}): the best "
                              "value may lie beyond it, so check the runs (a profile of another GPU or model?) "
                              "before using it",
                              c.gpu_time_scale, c.gpu_time_scale <= kScaleLo + 1e-9 ? "smallest" : "largest", kScaleLo,
                              scale_hi));
  }
  return out;
}

}  // namespace fleetplan
