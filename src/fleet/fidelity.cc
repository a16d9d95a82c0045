#include "fleetplan/fleet/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/text_lines.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/metrics/percentile.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/perf/kernel_table.h"
#include "fleet/sample_stats.h"

namespace fleetplan {

namespace {

using fleet_internal::Mean;
using fleet_internal::Round4;

namespace fs = std::filesystem;

constexpr std::string_view kCalibrationSchemaV1 = "fleetplan-calibration-v1";
constexpr std::string_view kCalibrationSchema = "fleetplan-calibration-v2";
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
    j = ParseJsonText(text);
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

Expected<std::string> CatalogModelName(const std::string& hf, const std::string& path) {
  if (std::optional<std::string> name = CatalogModelForHfName(hf)) return *name;
  std::string full = hf.substr(hf.find('/') == std::string::npos ? 0 : hf.find('/') + 1);
  std::transform(full.begin(), full.end(), full.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
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
  run->moe = Catalog::Builtin().Model(run->catalog_model)->moe.has_value();
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
  if (run->ticks.empty()) {
    // An empty file (or a header alone) measured nothing: say so, as for a missing one.
    run->notes.push_back("timeseries.csv has no rows: no measured queue time series");
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



Json Summary(const std::vector<double>& v) {
  return Json{{"mean", Mean(v)}, {"p50", InterpolatedPercentile(v, 50)}, {"p90", InterpolatedPercentile(v, 90)},
              {"p99", InterpolatedPercentile(v, 99)}};
}

// Rounds to 4 decimals so reports stay short and stable.

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
                      bool independent_dp_ranks, std::vector<std::string>* notes) {
  EngineConfig e;
  e.scheduler.policy = "decode-first";
  e.scheduler.max_batched_tokens = run.max_num_batched_tokens;
  e.scheduler.max_running = run.max_num_seqs;
  e.scheduler.chunk_tokens = run.max_num_batched_tokens;
  e.block_tokens = run.block_size;
  e.host_overhead = cal.host.per_step;
  e.host_per_sequence = cal.host.per_sequence;
  e.host_per_prefill_token = cal.host.per_prefill_token;
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
  // vLLM steps the data-parallel ranks of an MoE model together (their expert layers
  // exchange tokens every step; an idle rank runs a dummy batch): one lock-step group.
  if (run.dp > 1 && run.moe && !independent_dp_ranks) {
    for (ReplicaSetup& r : setup.replicas) r.lockstep_group = 0;
  }
  setup.router.policy = "least-outstanding";
  return setup;
}

struct Replay {
  Recorder recorder;
  int64_t replicas = 1;
  int64_t extrapolated_steps = 0;
  bool lockstep = false;  // the DP ranks stepped together
  std::vector<std::string> notes;
  Json model;
};

Status Simulate(const MeasuredRun& run, const std::string& profile, const Calibration& cal, Replay* out,
                bool independent_dp_ranks = false) {
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const StepCostModel> model, BuildModel(run, profile, cal));
  out->model = model->Describe();
  const FleetSetup setup = BuildFleet(run, model, cal, independent_dp_ranks, &out->notes);
  out->lockstep = !setup.replicas.empty() && setup.replicas[0].lockstep_group >= 0;
  out->replicas = static_cast<int64_t>(setup.replicas.size());
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::Create(setup, &out->recorder));
  std::vector<Request> requests;
  for (const MeasuredRequest& m : run.requests) requests.push_back(m.request);
  VectorSource source(std::move(requests));
  FP_RETURN_IF_ERROR(sim->Run(source));
  for (int32_t r = 0; r < sim->replica_count(); ++r) out->extrapolated_steps += sim->replica(r).stats().extrapolated_steps;
  return Status::Ok();
}

// The kernel profile of `run`: `given` (or its tp<N> folder), else the one the shared
// data's layout implies — which a run copied elsewhere does not have: then the error says
// to name it with --profile.
Expected<std::string> ProfileFor(const MeasuredRun& run, const std::string& given) {
  if (given.empty()) {
    std::string derived = DefaultProfileDir(run);
    if (!fs::is_directory(derived)) {
      return InvalidInput(fmt::format("{}: no kernel profile was given, and the one the shared data's layout implies "
                                      "({}) is not a directory: name the run's profile with --profile DIR "
                                      "(docs/validate.md)",
                                      run.dir, derived));
    }
    return derived;
  }
  if (fs::exists(fs::path(given) / "dense.csv")) return given;
  return (fs::path(given) / fmt::format("tp{}", run.tp)).string();
}

}  // namespace

std::optional<std::string> CatalogModelForHfName(std::string_view hf) {
  std::string name(hf.substr(hf.find('/') == std::string_view::npos ? 0 : hf.find('/') + 1));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  while (!name.empty()) {
    if (Catalog::Builtin().Model(name).ok()) return name;
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos) break;
    name.resize(dash);
  }
  return std::nullopt;
}

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

namespace {

// A calibration time field: a number of `unit`s in [0, 1e6] (absent: 0).
Expected<Duration> CalibrationTime(const Json& j, const std::string& path, const char* key, double ns_per_unit) {
  if (!j.contains(key)) return Duration();
  const Json& v = j[key];
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1e6) {
    return MetaError(
        path, key,
        fmt::format("expected a number of {} in [0, 1e6]", ns_per_unit == 1 ? "nanoseconds" : "microseconds"));
  }
  return Duration::Nanos(std::llround(v.get<double>() * ns_per_unit));
}

}  // namespace

Expected<Calibration> LoadCalibration(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  FP_ASSIGN_OR_RETURN(const Json j, ParseJsonObject(path, text));
  const Json schema = j.value("schema", Json());
  const std::string schema_name = schema.is_string() ? schema.get<std::string>() : std::string();
  const bool v1 = schema_name == kCalibrationSchemaV1;
  if (!v1 && schema_name != kCalibrationSchema) {
    return MetaError(path, "schema",
                     fmt::format("expected '{}' (or the older '{}'), got {}", kCalibrationSchema, kCalibrationSchemaV1,
                                 schema.is_null() ? "none" : schema.dump()));
  }
  static const std::vector<std::string> kKeysV1 = {"fitted_on", "gpu_time_scale", "host_overhead_us", "method",
                                                   "schema"};
  static const std::vector<std::string> kKeys = {
      "fitted_on", "gpu_time_scale", "host_overhead_us", "host_per_prefill_token_ns", "host_per_sequence_us",
      "method",    "schema"};
  for (const auto& item : j.items()) {
    const std::string& k = item.key();
    if (v1 && std::find(kKeys.begin(), kKeys.end(), k) != kKeys.end() &&
        std::find(kKeysV1.begin(), kKeysV1.end(), k) == kKeysV1.end()) {
      return MetaError(path, k,
                       fmt::format("a batch term of the host overhead needs schema '{}' (the file says '{}')",
                                   kCalibrationSchema, kCalibrationSchemaV1));
    }
    if (std::find(kKeys.begin(), kKeys.end(), k) == kKeys.end()) return MetaError(path, k, UnknownNameMessage("key", k, kKeys));
  }
  Calibration c;
  c.source = path;
  if (!j.contains("host_overhead_us")) {
    return MetaError(path, "host_overhead_us", "missing required field (microseconds of host overhead per step)");
  }
  FP_ASSIGN_OR_RETURN(c.host.per_step, CalibrationTime(j, path, "host_overhead_us", 1e3));
  FP_ASSIGN_OR_RETURN(c.host.per_sequence, CalibrationTime(j, path, "host_per_sequence_us", 1e3));
  FP_ASSIGN_OR_RETURN(c.host.per_prefill_token, CalibrationTime(j, path, "host_per_prefill_token_ns", 1));
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
  j["host_overhead_us"] = Round4(c.host.per_step.micros());
  j["host_per_sequence_us"] = Round4(c.host.per_sequence.micros());
  j["host_per_prefill_token_ns"] = c.host.per_prefill_token.ns();
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
  if (replay.lockstep) {
    notes.push_back(
        "DP ranks of an MoE model step in lock-step (as vLLM runs them): a step starts on every rank at "
        "once and ends on every rank when the slowest ends");
  } else if (run.dp > 1) {
    notes.push_back(run.moe
                        ? "DP ranks simulated as independent replicas (--independent-dp-ranks: vLLM steps an MoE "
                          "model's ranks together)"
                        : "DP ranks simulated as independent replicas (a dense model's ranks do not step together)");
  }
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

// A calibration fitted only on runs of other hardware ("<hw>/<model>" names): its
// cross-validation held out runs of those only, so nothing tested a transfer to this one.
std::optional<std::string> OtherHardwareNote(const MeasuredRun& run, const Calibration& cal) {
  if (cal.fitted_on.empty()) return std::nullopt;
  const auto hardware = [](const std::string& name) { return name.substr(0, name.find('/')); };
  const std::string mine = hardware(run.name);
  for (const std::string& r : cal.fitted_on) {
    if (hardware(r) == mine) return std::nullopt;
  }
  return fmt::format("the calibration was fitted on runs of other hardware only ({}): nothing in its fit tested "
                     "whether it carries to {} (docs/FIDELITY.md section 4)",
                     fmt::join(cal.fitted_on, ", "), mine);
}

Expected<ValidationResult> ValidateRun(const MeasuredRun& run, const ValidationOptions& options) {
  FP_ASSIGN_OR_RETURN(const std::string profile, ProfileFor(run, options.profile_dir));
  std::vector<std::string> profile_notes;
  FP_RETURN_IF_ERROR(CheckProfileMatchesRun(run, profile, options.allow_mismatch, &profile_notes));
  Replay replay;
  FP_RETURN_IF_ERROR(Simulate(run, profile, options.calibration, &replay, options.independent_dp_ranks));
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
  std::vector<KindRequest> kind_requests;
  for (const MeasuredRequest& m : run.requests) {
    const RequestOutcome& o = replay.recorder.outcomes.at(m.request.id);  // PairUp checked every one finished
    KindRequest k{o.replica, o.arrival, *o.first_token, *o.finish, m.ttft, std::nullopt};
    if (m.tpot && o.output_tokens >= 2) k.measured_decode = m.e2e - m.ttft;
    kind_requests.push_back(k);
  }
  res.kinds = DecomposeByStepKind(replay.recorder.steps, kind_requests);
  j["by_step_kind"] = res.kinds.ToJson();
  j["simulation"] = {{"steps", static_cast<int64_t>(replay.recorder.steps.size())},
                     {"extrapolated_steps", replay.extrapolated_steps},
                     {"scheduler", "decode-first (vLLM v1: running first, then waiting FCFS, chunked prefill)"},
                     {"router", run.dp > 1 ? "least-outstanding over DP ranks" : "single replica"}};
  j["notes"] = Notes(run, replay);
  for (const std::string& n : profile_notes) j["notes"].push_back(n);
  if (std::optional<std::string> n = OtherHardwareNote(run, options.calibration)) j["notes"].push_back(*n);
  return res;
}

namespace {

// Solves the n x n system m * x = b (row-major m) by Gaussian elimination with partial
// pivoting; nullopt when a pivot is below 1e-12 of the largest diagonal entry (the
// columns are collinear: the data does not identify every unknown).
std::optional<std::vector<double>> SolveLinear(std::vector<double> m, std::vector<double> b, size_t n) {
  double scale = 0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(m[i * n + i]));
  if (scale <= 0) return std::nullopt;
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::abs(m[r * n + c]) > std::abs(m[pivot * n + c])) pivot = r;
    }
    if (std::abs(m[pivot * n + c]) < 1e-12 * scale) return std::nullopt;
    if (pivot != c) {
      for (size_t k = 0; k < n; ++k) std::swap(m[c * n + k], m[pivot * n + k]);
      std::swap(b[c], b[pivot]);
    }
    for (size_t r = c + 1; r < n; ++r) {
      const double f = m[r * n + c] / m[c * n + c];
      for (size_t k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n, 0.0);
  for (size_t i = n; i-- > 0;) {
    double v = b[i];
    for (size_t k = i + 1; k < n; ++k) v -= m[i * n + k] * x[k];
    x[i] = v / m[i * n + i];
  }
  return x;
}

// Weighted normal equations of a least-squares problem: sum_i w_i (y_i - x_i . theta)^2.
struct NormalEquations {
  explicit NormalEquations(size_t unknowns) : n(unknowns), m(unknowns * unknowns, 0.0), b(unknowns, 0.0) {}
  void Add(const std::vector<double>& x, double y, double w) {
    for (size_t i = 0; i < n; ++i) {
      b[i] += w * x[i] * y;
      for (size_t k = 0; k < n; ++k) m[i * n + k] += w * x[i] * x[k];
    }
  }
  // The least-squares solution restricted to the unknowns in `use` (others 0).
  std::optional<std::vector<double>> Solve(const std::vector<size_t>& use) const {
    const size_t k = use.size();
    std::vector<double> sm(k * k), sb(k);
    for (size_t i = 0; i < k; ++i) {
      sb[i] = b[use[i]];
      for (size_t j = 0; j < k; ++j) sm[i * k + j] = m[use[i] * n + use[j]];
    }
    auto sub = SolveLinear(std::move(sm), std::move(sb), k);
    if (!sub) return std::nullopt;
    std::vector<double> x(n, 0.0);
    for (size_t i = 0; i < k; ++i) x[use[i]] = (*sub)[i];
    return x;
  }
  // The loss up to a constant: theta' M theta - 2 theta' b.
  double Loss(const std::vector<double>& x) const {
    double l = 0;
    for (size_t i = 0; i < n; ++i) {
      l -= 2 * x[i] * b[i];
      for (size_t k = 0; k < n; ++k) l += x[i] * m[i * n + k] * x[k];
    }
    return l;
  }
  size_t n;
  std::vector<double> m;
  std::vector<double> b;
};

// The steps of one replica in start order, with their ends for binary search.
struct ReplicaSteps {
  std::vector<const StepRecord*> steps;
  std::vector<SimTime> ends;
};

std::vector<ReplicaSteps> ByReplica(const std::vector<StepRecord>& steps) {
  std::vector<ReplicaSteps> out;
  for (const StepRecord& s : steps) {
    const size_t r = static_cast<size_t>(s.replica);
    if (out.size() <= r) out.resize(r + 1);
    out[r].steps.push_back(&s);
    out[r].ends.push_back(s.end);
  }
  return out;
}

// Calls fn(step, overlap) for every step of `r` that ended in (from, to], with the part of
// the step inside the span.
template <typename Fn>
void ForStepsIn(const ReplicaSteps& r, SimTime from, SimTime to, Fn fn) {
  auto it = std::upper_bound(r.ends.begin(), r.ends.end(), from);
  for (size_t i = static_cast<size_t>(it - r.ends.begin()); i < r.steps.size() && r.ends[i] <= to; ++i) {
    const StepRecord& s = *r.steps[i];
    fn(s, std::min(s.end, to) - std::max(s.start, from));
  }
}

// Cuts one span into time per kind (index kStepKinds = no step in flight).
std::array<double, kStepKinds + 1> SpanByKind(const ReplicaSteps& r, SimTime from, SimTime to,
                                              std::array<bool, kStepKinds>* touched) {
  std::array<double, kStepKinds + 1> ms{};
  Duration covered;
  ForStepsIn(r, from, to, [&](const StepRecord& s, Duration overlap) {
    const size_t k = static_cast<size_t>(ClassifyStep(s.shape));
    ms[k] += overlap.millis();
    (*touched)[k] = true;
    covered += overlap;
  });
  ms[kStepKinds] = std::max(0.0, (to - from - covered).millis());
  return ms;
}

// Fills a span's figures from per-request predicted time by kind and measured totals.
void SpanFigures(const std::vector<std::array<double, kStepKinds + 1>>& predicted, const std::vector<double>& measured,
                 KindSpanFigures* f) {
  const size_t n = predicted.size();
  f->requests = static_cast<int64_t>(n);
  if (n == 0) return;
  double measured_sum = 0, predicted_sum = 0;
  std::array<double, kStepKinds + 1> by_kind{};
  std::array<double, kStepKinds + 1> contribution{};
  for (size_t i = 0; i < n; ++i) {
    double total = 0;
    for (size_t k = 0; k <= kStepKinds; ++k) total += predicted[i][k];
    measured_sum += measured[i];
    predicted_sum += total;
    for (size_t k = 0; k <= kStepKinds; ++k) {
      by_kind[k] += predicted[i][k];
      if (total > 0) contribution[k] += (total - measured[i]) * predicted[i][k] / total;
    }
  }
  const double count = static_cast<double>(n);
  f->measured_ms = Round4(measured_sum / count);
  f->total_error_pct = measured_sum > 0 ? Round4(100.0 * (predicted_sum - measured_sum) / measured_sum) : 0.0;
  for (size_t k = 0; k <= kStepKinds; ++k) {
    f->predicted_ms[k] = Round4(by_kind[k] / count);
    f->contribution_pct[k] = measured_sum > 0 ? Round4(100.0 * contribution[k] / measured_sum) : 0.0;
  }
  // Kinds with at least kMinShare of the measured time enter the regression; the others
  // stay at their predicted time (their e_k is not identified).
  constexpr double kMinShare = 0.01;
  std::vector<size_t> use;
  for (size_t k = 0; k <= kStepKinds; ++k) {
    if (measured_sum > 0 && by_kind[k] >= kMinShare * measured_sum) use.push_back(k);
  }
  while (!use.empty()) {
    NormalEquations eq(kStepKinds + 1);
    for (size_t i = 0; i < n; ++i) {
      if (measured[i] <= 0) continue;
      std::vector<double> x(kStepKinds + 1, 0.0);
      double fixed = 0;
      for (size_t k = 0; k <= kStepKinds; ++k) {
        if (std::find(use.begin(), use.end(), k) != use.end())
          x[k] = predicted[i][k];
        else
          fixed += predicted[i][k];
      }
      eq.Add(x, measured[i] - fixed, 1.0 / (measured[i] * measured[i]));
    }
    if (const auto u = eq.Solve(use)) {
      // measured_k = u_k * predicted_k: the kind's error is predicted / measured - 1.
      for (size_t k : use) {
        if ((*u)[k] > 0) f->step_error_pct[k] = Round4(100.0 * (1.0 / (*u)[k] - 1.0));
      }
      return;
    }
    // Collinear: drop the kind with the least time and try again.
    size_t least = 0;
    for (size_t i = 1; i < use.size(); ++i) {
      if (by_kind[use[i]] < by_kind[use[least]]) least = i;
    }
    use.erase(use.begin() + static_cast<std::ptrdiff_t>(least));
  }
}

Json SpanJson(const KindSpanFigures& f, bool with_idle) {
  Json kinds;
  for (size_t k = 0; k <= (with_idle ? kStepKinds : kStepKinds - 1); ++k) {
    const std::string name = k == kStepKinds ? "idle" : std::string(StepKindName(static_cast<StepKind>(k)));
    double total = 0;
    for (double v : f.predicted_ms) total += v;
    Json x{{"predicted_ms", f.predicted_ms[k]},
           {"share_pct", total > 0 ? Round4(100.0 * f.predicted_ms[k] / total) : 0.0},
           {"contribution_pct", f.contribution_pct[k]},
           {"step_error_pct", f.step_error_pct[k] ? Json(*f.step_error_pct[k]) : Json()}};
    if (k < kStepKinds) x["steps"] = f.steps[k];
    kinds[name] = std::move(x);
  }
  return Json{{"measured_ms", f.measured_ms},
              {"total_error_pct", f.total_error_pct},
              {"requests", f.requests},
              {"kinds", std::move(kinds)}};
}

}  // namespace

StepKind ClassifyStep(const StepShape& shape) {
  if (shape.decode_seqs == 0) return StepKind::kPrefill;
  if (shape.prefill_seqs == 0) return StepKind::kDecode;
  return StepKind::kMixed;
}

std::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kPrefill:
      return "prefill";
    case StepKind::kDecode:
      return "decode";
    case StepKind::kMixed:
      return "mixed";
  }
  return "unknown";
}

KindDecomposition DecomposeByStepKind(const std::vector<StepRecord>& steps, const std::vector<KindRequest>& requests) {
  KindDecomposition d;
  std::array<double, kStepKinds> total_ms{};
  for (const StepRecord& s : steps) {
    const size_t k = static_cast<size_t>(ClassifyStep(s.shape));
    ++d.steps[k];
    total_ms[k] += (s.end - s.start).millis();
  }
  for (size_t k = 0; k < kStepKinds; ++k)
    d.step_mean_ms[k] = d.steps[k] > 0 ? Round4(total_ms[k] / static_cast<double>(d.steps[k])) : 0.0;
  const std::vector<ReplicaSteps> by_replica = ByReplica(steps);
  std::vector<std::array<double, kStepKinds + 1>> ttft, decode;
  std::vector<double> ttft_measured, decode_measured;
  // A step counts once per span kind however many requests it touches.
  std::vector<std::array<bool, kStepKinds>> ttft_touched, decode_touched;
  std::map<const StepRecord*, std::array<bool, 2>> seen;
  for (const KindRequest& r : requests) {
    const size_t rep = static_cast<size_t>(r.replica);
    static const ReplicaSteps kNone;
    const ReplicaSteps& rs = rep < by_replica.size() ? by_replica[rep] : kNone;
    std::array<bool, kStepKinds> unused{};
    ttft.push_back(SpanByKind(rs, r.arrival, r.first_token, &unused));
    ttft_measured.push_back(r.measured_ttft.millis());
    ForStepsIn(rs, r.arrival, r.first_token, [&](const StepRecord& s, Duration) { seen[&s][0] = true; });
    if (r.measured_decode) {
      decode.push_back(SpanByKind(rs, r.first_token, r.finish, &unused));
      decode_measured.push_back(r.measured_decode->millis());
      ForStepsIn(rs, r.first_token, r.finish, [&](const StepRecord& s, Duration) { seen[&s][1] = true; });
    }
  }
  for (const auto& [step, spans] : seen) {
    const size_t k = static_cast<size_t>(ClassifyStep(step->shape));
    if (spans[0]) ++d.ttft.steps[k];
    if (spans[1]) ++d.decode.steps[k];
  }
  SpanFigures(ttft, ttft_measured, &d.ttft);
  SpanFigures(decode, decode_measured, &d.decode);
  return d;
}

Json KindDecomposition::ToJson() const {
  Json j;
  for (size_t k = 0; k < kStepKinds; ++k) {
    j["steps"][std::string(StepKindName(static_cast<StepKind>(k)))] =
        Json{{"count", steps[k]}, {"mean_ms", step_mean_ms[k]}};
  }
  j["ttft"] = SpanJson(ttft, true);
  j["decode"] = SpanJson(decode, false);
  return j;
}

namespace {

// The fit's unknowns, in this order: per_step, per_sequence, per_prefill_token (ns) and
// the GPU time scale.
constexpr size_t kFitParams = 4;

// Adds each measured request's TPOT row (docs in fidelity.h) to `eq`, weighted so every
// run counts equally and each request relative to its run's mean measured TPOT.
Status AddFitRows(const MeasuredRun& run, const Replay& replay, double scale, NormalEquations* eq) {
  const std::vector<ReplicaSteps> by_replica = ByReplica(replay.recorder.steps);
  std::vector<std::pair<std::vector<double>, double>> rows;
  double mean = 0;
  for (const MeasuredRequest& m : run.requests) {
    if (!m.tpot) continue;
    const auto it = replay.recorder.outcomes.find(m.request.id);
    if (it == replay.recorder.outcomes.end() || it->second.status != RequestStatus::kOk) {
      return InvalidInput(fmt::format("{}: request {} cannot complete in the replay", run.dir, m.request.id));
    }
    const RequestOutcome& o = it->second;
    if (o.output_tokens < 2 || static_cast<size_t>(o.replica) >= by_replica.size()) continue;
    std::vector<double> x(kFitParams, 0.0);
    // Time a step waited for the other ranks of a lock-step group: fixed by the schedule,
    // taken off the measured side.
    double wait = 0;
    ForStepsIn(by_replica[static_cast<size_t>(o.replica)], *o.first_token, *o.finish,
               [&](const StepRecord& s, Duration) {
                 wait += static_cast<double>((s.end - s.start - s.host - s.gpu).ns());
                 x[0] += 1;
                 x[1] += static_cast<double>(s.shape.batch_size());
                 x[2] += static_cast<double>(s.shape.prefill_tokens);
                 x[3] += static_cast<double>(s.gpu.ns()) / scale;
               });
    const double tokens = static_cast<double>(o.output_tokens - 1);
    for (double& v : x) v /= tokens;
    const double y = static_cast<double>(m.tpot->ns()) - wait / tokens;
    mean += y;
    rows.emplace_back(std::move(x), y);
  }
  if (rows.empty()) return Status::Ok();
  mean /= static_cast<double>(rows.size());
  const double w = 1.0 / (mean * mean * static_cast<double>(rows.size()));
  for (const auto& [x, y] : rows) eq->Add(x, y, w);
  return Status::Ok();
}

// The best solution with every unknown >= 0 and the scale in the model: every subset of
// the host terms is solved unconstrained and the feasible one with the least loss wins
// (eight subsets; exact and deterministic).
std::optional<std::vector<double>> SolveNonNegative(const NormalEquations& eq) {
  std::optional<std::vector<double>> best;
  double best_loss = 0;
  for (unsigned mask = 0; mask < 8; ++mask) {
    std::vector<size_t> use;
    for (size_t i = 0; i < 3; ++i) {
      if ((mask >> i) & 1u) use.push_back(i);
    }
    use.push_back(3);
    const auto x = eq.Solve(use);
    if (!x || (*x)[3] <= 0 || std::any_of(x->begin(), x->end(), [](double v) { return v < 0; })) continue;
    const double loss = eq.Loss(*x);
    if (!best || loss < best_loss) {
      best = x;
      best_loss = loss;
    }
  }
  return best;
}

Calibration FromParams(const std::vector<double>& x) {
  Calibration c;
  c.host.per_step = Duration::Nanos(std::llround(x[0]));
  c.host.per_sequence = Duration::Nanos(std::llround(x[1]));
  c.host.per_prefill_token = Duration::Nanos(std::llround(x[2]));
  c.gpu_time_scale = x[3];
  return c;
}

bool Moved(const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    // Host terms below 1 ns are at the resolution of the result.
    if (std::abs(a[i] - b[i]) > kFitTolerance * std::max(std::abs(a[i]), i < 3 ? 1e3 : 1.0)) return true;
  }
  return false;
}

}  // namespace

namespace {

// One least-squares fit (the rounds of FitCalibration) on `runs`.
struct FitOutcome {
  std::vector<double> params;  // kFitParams
  bool converged = false;
  int64_t rounds = 0;
  std::string spread;  // when not converged: the last rounds' range, in words
};

struct FitCounter {
  const FitProgressFn& progress;
  int64_t done = 0;
  int64_t most = 0;
  void Tick() {
    if (progress) progress(++done, most);
  }
};

Expected<FitOutcome> FitParams(const std::vector<const MeasuredRun*>& runs, const std::vector<std::string>& profiles,
                               FitCounter& counter) {
  FitOutcome out;
  std::vector<double>& params = out.params;
  params = {0, 0, 0, 1};
  std::vector<std::vector<double>> late;  // solutions of the last kFitAveraged rounds
  while (out.rounds < kFitRounds && !out.converged) {
    ++out.rounds;
    const Calibration c = FromParams(params);
    NormalEquations eq(kFitParams);
    for (size_t i = 0; i < runs.size(); ++i) {
      Replay replay;
      FP_RETURN_IF_ERROR(Simulate(*runs[i], profiles[i], c, &replay));
      FP_RETURN_IF_ERROR(AddFitRows(*runs[i], replay, c.gpu_time_scale, &eq));
      counter.Tick();
    }
    const auto next = SolveNonNegative(eq);
    if (!next) {
      return InvalidInput(
          "validate --fit: the runs do not identify the calibration (no request with 2 or more tokens?)");
    }
    out.converged = !Moved(params, *next);
    if (out.rounds > kFitRounds - kFitAveraged) late.push_back(*next);
    // After kFitFullRounds rounds without settling, go halfway: the schedule moves with the
    // parameters, and a full step can swing between two schedules without settling.
    if (out.rounds <= kFitFullRounds || out.converged) {
      params = *next;
    } else {
      for (size_t i = 0; i < kFitParams; ++i) params[i] = 0.5 * (params[i] + (*next)[i]);
    }
  }
  if (out.converged) return out;
  // Not settled: a replay's schedule is not a smooth function of the parameters (a request
  // admitted one step earlier changes every later batch), so the solutions wander in a
  // region; their mean over the last rounds is the estimate and their range its spread.
  std::vector<double> lo(kFitParams, 1e300), hi(kFitParams, -1e300);
  params.assign(kFitParams, 0.0);
  for (const std::vector<double>& x : late) {
    for (size_t i = 0; i < kFitParams; ++i) {
      params[i] += x[i] / static_cast<double>(late.size());
      lo[i] = std::min(lo[i], x[i]);
      hi[i] = std::max(hi[i], x[i]);
    }
  }
  out.spread = fmt::format(
      "not settled after {} rounds: mean of the last {} rounds' solutions, which spread over per_step {:.0f}..{:.0f} "
      "us, per_sequence {:.2f}..{:.2f} us, per_prefill_token {:.0f}..{:.0f} ns, gpu_time_scale {:.4f}..{:.4f}",
      kFitRounds, kFitAveraged, lo[0] / 1e3, hi[0] / 1e3, lo[1] / 1e3, hi[1] / 1e3, lo[2], hi[2], lo[3], hi[3]);
  return out;
}

// The uncalibrated model: no host overhead, the tables as measured.
const std::vector<double>& Prior() {
  static const std::vector<double> prior = {0, 0, 0, 1};
  return prior;
}

// prior + share × (fit − prior).
std::vector<double> Shrink(const std::vector<double>& fit, double share) {
  std::vector<double> x(kFitParams);
  for (size_t i = 0; i < kFitParams; ++i) x[i] = Prior()[i] + share * (fit[i] - Prior()[i]);
  return x;
}

// (predicted − measured) / measured of `run`'s mean TPOT under `params`.
Expected<double> TpotError(const MeasuredRun& run, const std::string& profile, const std::vector<double>& params) {
  Replay replay;
  FP_RETURN_IF_ERROR(Simulate(run, profile, FromParams(params), &replay));
  FP_ASSIGN_OR_RETURN(const Metrics x, PairUp(run, replay));
  double measured = 0, predicted = 0;
  for (size_t i = 0; i < x.tpot.measured.size(); ++i) {
    measured += x.tpot.measured[i];
    predicted += x.tpot.predicted[i];
  }
  return measured > 0 ? predicted / measured - 1.0 : 0.0;
}

// The share of the fit that carries to a run it was not fitted on: each training run in
// turn is held out, the fit on the others is shrunk toward the prior by each share of
// kShrinkShares, and the share whose held-out mean TPOT errors have the least sum of
// squares wins (ties: the smaller share). `table` gets the errors, in words.
Expected<double> CrossValidatedShare(const std::vector<MeasuredRun>& runs, const std::vector<std::string>& profiles,
                                     FitCounter& counter, std::string& table) {
  std::vector<double> sse(kShrinkShares.size(), 0.0);
  std::vector<std::string> folds;
  for (size_t held = 0; held < runs.size(); ++held) {
    std::vector<const MeasuredRun*> others;
    std::vector<std::string> other_profiles;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (i == held) continue;
      others.push_back(&runs[i]);
      other_profiles.push_back(profiles[i]);
    }
    FP_ASSIGN_OR_RETURN(const FitOutcome fit, FitParams(others, other_profiles, counter));
    std::vector<std::string> errors;
    for (size_t k = 0; k < kShrinkShares.size(); ++k) {
      FP_ASSIGN_OR_RETURN(const double e, TpotError(runs[held], profiles[held], Shrink(fit.params, kShrinkShares[k])));
      counter.Tick();
      sse[k] += e * e;
      errors.push_back(fmt::format("{:+.1f}%", 100.0 * e));
    }
    folds.push_back(fmt::format("{} held out: {}", runs[held].name, fmt::join(errors, " ")));
  }
  size_t best = 0;
  for (size_t k = 1; k < kShrinkShares.size(); ++k) {
    if (sse[k] < sse[best] * (1 - 1e-9)) best = k;
  }
  table = fmt::format("held-out mean TPOT error at shares {}: {}", fmt::join(kShrinkShares, "/"), fmt::join(folds, "; "));
  return kShrinkShares[best];
}

}  // namespace

Expected<Calibration> FitCalibration(const std::vector<MeasuredRun>& runs, const std::vector<std::string>& profile_dirs,
                                     const FitProgressFn& progress, bool cross_validate) {
  if (runs.empty()) return UsageError("fit needs at least one run directory");
  std::vector<std::string> profiles;
  std::vector<const MeasuredRun*> all;
  for (size_t i = 0; i < runs.size(); ++i) {
    FP_ASSIGN_OR_RETURN(std::string profile, ProfileFor(runs[i], i < profile_dirs.size() ? profile_dirs[i] : ""));
    profiles.push_back(std::move(profile));
    std::vector<std::string> ignored;
    FP_RETURN_IF_ERROR(CheckProfileMatchesRun(runs[i], profiles.back(), /*allow_mismatch=*/false, &ignored));
    all.push_back(&runs[i]);
  }
  const auto n = static_cast<int64_t>(runs.size());
  FitCounter counter{progress};
  const bool shrink = cross_validate && n > 1;
  counter.most = kFitRounds * n + (shrink ? n * (kFitRounds * (n - 1) + static_cast<int64_t>(kShrinkShares.size())) : 0);
  FP_ASSIGN_OR_RETURN(const FitOutcome fit, FitParams(all, profiles, counter));
  double share = 1.0;
  std::string shrunk;
  if (shrink) {
    std::string table;
    FP_ASSIGN_OR_RETURN(share, CrossValidatedShare(runs, profiles, counter, table));
    shrunk = fmt::format("; then shrunk toward no calibration (no host overhead, scale 1) to share {} of the fit, the "
                         "share that predicted best the run held out of a fit on the others ({})",
                         share, table);
  } else {
    shrunk = n > 1 ? "; not cross-validated (--no-shrink): the fit is used whole, in sample"
                   : "; one run: not cross-validated, the fit is used whole";
  }
  Calibration best = FromParams(Shrink(fit.params, share));
  for (const MeasuredRun& r : runs) best.fitted_on.push_back(r.name);
  best.method = fmt::format(
      "least squares on per-request TPOT: TPOT_i = mean over the steps of its decode span of (per_step + per_sequence "
      "* sequences + per_prefill_token * prompt tokens + gpu_time_scale * kernel-table time), every term >= 0, runs "
      "weighted equally, requests relative to their run's mean TPOT; replayed with the result and solved again ({}){}",
      fit.converged ? fmt::format("converged in {} round{}", fit.rounds, fit.rounds == 1 ? "" : "s") : fit.spread,
      shrunk);
  return best;
}

std::vector<std::string> CalibrationWarnings(const Calibration& c, bool converged) {
  std::vector<std::string> out;
  if (c.gpu_time_scale < kPlausibleScaleLo || c.gpu_time_scale > kPlausibleScaleHi) {
    out.push_back(
        fmt::format("gpu_time_scale {:.2f} is outside {:.2f}..{:.2f}: the kernel tables are that far from "
                    "the runs' GPU time, so check the runs (a profile of another GPU or model?) before using it",
                    c.gpu_time_scale, kPlausibleScaleLo, kPlausibleScaleHi));
  }
  if (!converged || c.method.find("not settled") != std::string::npos) {
    out.push_back(
        fmt::format("the fit had not settled after {} rounds: the values are the mean of the last {} "
                    "rounds' solutions, whose spread the method states; the runs determine them only that "
                    "well",
                    kFitRounds, kFitAveraged));
  }
  return out;
}

Expected<MeasuredRun> SyntheticRun(const MeasuredRun& like, const std::string& profile_dir, const Calibration& truth) {
  Replay replay;
  FP_ASSIGN_OR_RETURN(const std::string like_profile, ProfileFor(like, profile_dir));
  FP_RETURN_IF_ERROR(Simulate(like, like_profile, truth, &replay));
  MeasuredRun out = like;
  out.ticks.clear();
  for (MeasuredRequest& m : out.requests) {
    const auto it = replay.recorder.outcomes.find(m.request.id);
    if (it == replay.recorder.outcomes.end() || it->second.status != RequestStatus::kOk) {
      return InvalidInput(fmt::format("{}: request {} cannot complete in the replay", like.dir, m.request.id));
    }
    const RequestOutcome& o = it->second;
    m.ttft = *o.first_token - o.arrival;
    m.e2e = *o.finish - o.arrival;
    m.tpot.reset();
    if (o.output_tokens >= 2) m.tpot = Duration::Nanos((*o.finish - *o.first_token).ns() / (o.output_tokens - 1));
  }
  return out;
}

}  // namespace fleetplan
