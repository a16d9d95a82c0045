#include "fleetplan/fleet/run.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/fleet/timeline.h"
#include "fleetplan/memory/plan.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/metrics/report.h"
#include "fleetplan/perf/factory.h"

namespace fleetplan {
namespace {

constexpr const char* kVersion = "0.1.0";
// requests.jsonl is written in chunks of about this size (one write per chunk).
constexpr size_t kRecordFlushBytes = size_t{1} << 20;

RecordStatus ToRecordStatus(RequestStatus s) {
  switch (s) {
    case RequestStatus::kOk: return RecordStatus::kOk;
    case RequestStatus::kRejected: return RecordStatus::kRejected;
    case RequestStatus::kCancelled: return RecordStatus::kCancelled;
    case RequestStatus::kTimeout: return RecordStatus::kTimeout;
  }
  return RecordStatus::kError;
}

RequestRecord ToRecord(const RequestOutcome& o) {
  RequestRecord r;
  r.id = o.id;
  r.class_id = o.class_id;
  r.tenant = o.tenant;
  r.status = ToRecordStatus(o.status);
  r.arrival = o.arrival;
  r.first_token = o.first_token;
  r.finish = o.finish;
  r.input_tokens = o.input_tokens;
  r.output_tokens = o.output_tokens;
  if (o.output_tokens >= 2) r.itl_max = o.itl_max;
  return r;
}

// Receives every request's end and every step; feeds the report, the records file and
// the timeline.
class RunSink final : public EngineObserver {
 public:
  RunSink(ReportBuilder* builder, const RequestSource* source) : builder_(builder), source_(source) {}

  Status OpenRecords(const std::string& path) {
    records_path_ = path;
    records_.open(path, std::ios::binary | std::ios::trunc);
    if (!records_) return InvalidInput(fmt::format("cannot write '{}'", path));
    return Status::Ok();
  }
  void SetTimeline(TimelineWriter* t) { timeline_ = t; }
  void SetSimulation(const Simulation* sim) { sim_ = sim; }

  void OnRequestDone(const RequestOutcome& o) override {
    RequestRecord r = ToRecord(o);
    if (const RouteInfo* route = sim_ != nullptr ? sim_->route_of(o.id) : nullptr) {
      r.replica = route->replica;
      r.matched_prefix_tokens = route->matched_prefix_tokens;
      r.queue_age_at_assignment = route->queue_age;
    }
    builder_->Add(r);
    if (records_.is_open()) {
      AppendRecordJsonl(r, source_->names(), &buffer_);
      if (buffer_.size() >= kRecordFlushBytes) Flush();
    }
    if (timeline_ != nullptr) timeline_->OnRequestDone(o);
  }
  void OnStep(const StepRecord& s) override {
    if (timeline_ != nullptr) timeline_->OnStep(s);
  }

  Status Close() {
    if (!records_.is_open()) return Status::Ok();
    Flush();
    records_.close();
    if (!records_) return InvalidInput(fmt::format("cannot write '{}'", records_path_));
    return Status::Ok();
  }

 private:
  void Flush() {
    records_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
  ReportBuilder* builder_;
  const RequestSource* source_;
  std::ofstream records_;
  std::string records_path_;
  std::string buffer_;
  TimelineWriter* timeline_ = nullptr;
  const Simulation* sim_ = nullptr;
};

Expected<std::shared_ptr<const StepCostModel>> BuildCostModel(const Scenario& s) {
  StepModelContext ctx;
  ctx.memory = s.fit.memory;
  ctx.tp_link = s.intra_node_link;
  ctx.pp_link = s.fit.memory.layout.gpus() <= s.gpus_per_node ? s.intra_node_link : s.inter_node_link;
  ctx.scenario_dir = s.dir;
  ctx.cuda_graphs = s.cuda_graphs;
  if (s.step_model) {
    FP_ASSIGN_OR_RETURN(auto model, MakeStepCostModel(*s.step_model, ctx));
    return std::shared_ptr<const StepCostModel>(std::move(model));
  }
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString("{kind: roofline}", "<default step model>"));
  FP_ASSIGN_OR_RETURN(auto model, MakeStepCostModel(doc.root(), ctx));
  return std::shared_ptr<const StepCostModel>(std::move(model));
}

Json MemoryJson(const Scenario& s, const KvPoolSize& kv) {
  Json j;
  j["model"] = s.fit.memory.model.name;
  j["gpu"] = s.fit.memory.gpu.name;
  j["tp"] = s.fit.memory.layout.tp;
  j["pp"] = s.fit.memory.layout.pp;
  j["ep"] = s.fit.memory.layout.ep;
  j["replicas"] = s.replicas;
  j["gpus"] = s.replicas * s.fit.memory.layout.gpus();
  j["weight_dtype"] = std::string(DTypeName(s.fit.memory.weight_dtype));
  j["kv_dtype"] = std::string(DTypeName(s.fit.memory.kv_dtype));
  j["gpu_memory_utilization"] = s.fit.memory.gpu_memory_utilization;
  j["kv_bytes_per_rank"] = kv.kv_bytes_per_rank.count();
  j["kv_bytes_per_token_per_rank"] = kv.kv_bytes_per_token_per_rank.count();
  j["block_tokens"] = kv.block_tokens;
  j["kv_blocks_per_replica"] = kv.kv_blocks_per_replica;
  j["kv_tokens_per_replica"] = kv.kv_blocks_per_replica * kv.block_tokens;
  return j;
}

Json EngineJson(const Simulation& sim, Duration span, bool cuda_graphs) {
  Json replicas = Json::array();
  EngineStats total;
  int64_t blocks = 0;
  for (int32_t i = 0; i < sim.replica_count(); ++i) {
    const Engine& e = sim.replica(i);
    const EngineStats& st = e.stats();
    Json r = st.ToJson(e.pool().total(), span, cuda_graphs);
    r["replica"] = i;
    replicas.push_back(std::move(r));
    blocks += e.pool().total();
    total += st;
  }
  Json j = total.ToJson(blocks, span * sim.replica_count(), cuda_graphs);
  j.erase("kv_peak_utilization");  // a sum of per-replica peaks is not a fleet peak
  j["replicas"] = std::move(replicas);
  return j;
}

// classes.<name>.prefix_cache and fleet.prefix_cache: the engines' counters summed over
// replicas, per class handle (a class no replica saw has zeros).
void AddPrefixCacheJson(const Simulation& sim, const WorkloadNames& names, Json& report) {
  PrefixCacheCounters fleet;
  for (size_t c = 0; c < names.classes.size(); ++c) {
    PrefixCacheCounters sum;
    for (int32_t i = 0; i < sim.replica_count(); ++i) sum += sim.replica(i).prefix_cache_for_class(static_cast<ClassId>(c));
    fleet += sum;
    Json& classes = report["classes"];
    const auto it = classes.find(names.classes[c]);
    if (it != classes.end()) (*it)["prefix_cache"] = sum.ToJson();
  }
  report["fleet"]["prefix_cache"] = fleet.ToJson();
}

std::string SummaryText(const Scenario& s, const Report& report, const Json& engine, const KvPoolSize& kv,
                        const std::vector<std::string>& files) {
  std::string out = fmt::format("scenario {} (seed {}): {} x {} tp{} pp{} on {}, {} KV blocks of {} tokens per replica\n",
                                s.name, s.seed, s.replicas, s.fit.memory.model.name, s.fit.memory.layout.tp,
                                s.fit.memory.layout.pp, s.fit.memory.gpu.name, kv.kv_blocks_per_replica, kv.block_tokens);
  out += FormatReportText(report);
  out += fmt::format("engine: {} steps, {:.1f} tokens/step, {} preemptions, {} rejections, busy {:.1f}%, max decode gap {:.1f} ms\n",
                     engine["steps"].get<int64_t>(), engine["tokens_per_step"].get<double>(),
                     engine["preemptions"].get<int64_t>(), engine["rejections"].get<int64_t>(),
                     100.0 * engine["busy_fraction"].get<double>(), engine["max_decode_gap_ms"].get<double>());
  if (s.engine.prefix_cache.enabled) {
    const Json& pc = engine["prefix_cache"];
    out += fmt::format("prefix cache: {} lookups, hit rate {:.1f}% of looked-up tokens, {} prefill tokens saved "
                       "({:.1f} s of prefill), {} evictions, {} invalidations\n",
                       pc["lookups"].get<int64_t>(), 100.0 * pc["hit_rate"].get<double>(),
                       pc["saved_prefill_tokens"].get<int64_t>(), pc["saved_prefill_ms"].get<double>() / 1000.0,
                       pc["evictions"].get<int64_t>(), pc["invalidations"].get<int64_t>());
  }
  if (s.cuda_graphs.enabled()) {
    const Json& g = engine["cuda_graphs"];
    out += fmt::format("cuda graphs: {} decode-only steps, bucket hit {:.1f}%, padding {:.1f}% of padded slots, "
                       "eager fallback {:.1f}%\n",
                       g["decode_only_steps"].get<int64_t>(), 100.0 * g["bucket_hit_rate"].get<double>(),
                       100.0 * g["padding_ratio"].get<double>(), 100.0 * g["fallback_rate"].get<double>());
  }
  for (const auto& f : files) out += fmt::format("wrote {}\n", f);
  return out;
}

}  // namespace

Expected<RunResult> RunScenario(const Scenario& s, const RunOptions& opt) {
  FP_ASSIGN_OR_RETURN(KvPoolSize kv, SizeKvPool(s.fit.memory));
  if (kv.kv_blocks_per_replica < 1) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("{} on {} with tp {} pp {} leaves no memory for KV cache (usable KV per rank: {} "
                              "bytes); run `fleetplan fit` on this scenario for the arithmetic",
                              s.fit.memory.model.name, s.fit.memory.gpu.name, s.fit.memory.layout.tp,
                              s.fit.memory.layout.pp, kv.kv_bytes_per_rank.count()));
  }
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const StepCostModel> cost, BuildCostModel(s));

  const uint64_t seed = opt.seed.value_or(s.seed);
  SourceLimits limits;
  limits.requests = opt.requests;
  limits.duration = opt.duration;
  FP_ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> source, MakeRequestSource(s.workload, seed, limits));
  FP_ASSIGN_OR_RETURN(ReportBuilder builder, ReportBuilder::Create(source->names().classes, s.slo,
                                                                   /*open_classes=*/false));

  RunSink sink(&builder, source.get());
  std::vector<std::string> files;
  const std::string dir = opt.out_dir.value_or(s.output.dir);
  std::unique_ptr<TimelineWriter> timeline;
  if (opt.write_files) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return InvalidInput(fmt::format("cannot create output folder '{}': {}", dir, ec.message()));
    if (opt.write_requests.value_or(s.output.requests)) {
      FP_RETURN_IF_ERROR(sink.OpenRecords(dir + "/requests.jsonl"));
    }
    if (opt.write_timeline.value_or(s.output.timeline)) {
      FP_ASSIGN_OR_RETURN(timeline, TimelineWriter::Open(dir + "/timeline.json", static_cast<int32_t>(s.replicas),
                                                         &source->names()));
      sink.SetTimeline(timeline.get());
    }
  }

  FleetSetup setup;
  EngineConfig engine = s.engine;
  engine.kv_blocks = kv.kv_blocks_per_replica;
  engine.cuda_graphs = s.cuda_graphs;
  setup.replicas.assign(static_cast<size_t>(s.replicas), ReplicaSetup{engine, cost});
  setup.router = s.router;
  FP_ASSIGN_OR_RETURN(setup.invalidations, ResolveInvalidations(s.events, source->names()));
  setup.adapters = s.adapters;
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::Create(setup, &sink));
  sink.SetSimulation(sim.get());
  FP_RETURN_IF_ERROR(sim->Run(*source, opt.progress));
  FP_RETURN_IF_ERROR(sim->CheckInvariants());
  FP_RETURN_IF_ERROR(sink.Close());
  if (timeline) FP_RETURN_IF_ERROR(timeline->Close());

  FP_ASSIGN_OR_RETURN(Report report, std::move(builder).Finish());
  report.notes.insert(report.notes.end(), s.derived.begin(), s.derived.end());

  Json j = ReportToJson(report);
  AddPrefixCacheJson(*sim, source->names(), j);
  j["fleetplan_version"] = kVersion;
  j["scenario"] = {{"name", s.name}, {"source", s.display_name}, {"digest", s.digest}, {"seed", seed}};
  j["workload"] = source->Describe();
  j["deployment"] = MemoryJson(s, kv);
  j["step_model"] = cost->Describe();
  const Duration span = sim->end_time() - sim->first_arrival();
  j["engine"] = EngineJson(*sim, span, s.cuda_graphs.enabled());
  j["replicas"] = sim->ReplicaReportJson(span);
  j["simulation"] = {{"events", sim->events()},
                     {"requests", sim->requests_done()},
                     {"first_arrival_s", sim->first_arrival().seconds()},
                     {"end_s", sim->end_time().seconds()}};
  FP_ASSIGN_OR_RETURN(std::string inputs_digest, DigestOfJson(Json{{"scenario", s.digest}, {"seed", seed},
                                                                    {"workload", j["workload"]}}));
  j["inputs_digest"] = inputs_digest;

  RunResult result;
  if (opt.write_files) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(j));
    FP_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.json", text));
    files.push_back(dir + "/report.json");
    if (opt.write_requests.value_or(s.output.requests)) files.push_back(dir + "/requests.jsonl");
    if (timeline) files.push_back(dir + "/timeline.json");
  }
  result.summary = SummaryText(s, report, j["engine"], kv, files);
  result.report = std::move(j);
  result.files = std::move(files);
  result.requests = sim->requests_done();
  result.events = sim->events();
  result.simulated_end = sim->end_time();
  return result;
}

}  // namespace fleetplan
