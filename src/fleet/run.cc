#include "fleetplan/fleet/run.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
class RunSink final : public EngineObserver, public FleetObserver {
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
  void OnRoute(const RouteEvent& e) override {
    if (timeline_ != nullptr) timeline_->OnRoute(e);
  }
  void OnTransfer(const TransferEvent& e) override {
    if (timeline_ != nullptr) timeline_->OnTransfer(e);
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

Expected<std::shared_ptr<const StepCostModel>> BuildCostModel(const Scenario& s, const FitRequest& fit) {
  StepModelContext ctx;
  ctx.memory = fit.memory;
  ctx.tp_link = s.intra_node_link;
  ctx.pp_link = fit.memory.layout.gpus() <= s.gpus_per_node ? s.intra_node_link : s.inter_node_link;
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

// One pool, built: its KV pool size and step cost model.
struct BuiltPool {
  const PoolSpec* spec;
  KvPoolSize kv;
  std::shared_ptr<const StepCostModel> cost;
};

Expected<BuiltPool> BuildPool(const Scenario& s, const PoolSpec& pool) {
  const MemoryInputs& m = pool.fit.memory;
  FP_ASSIGN_OR_RETURN(KvPoolSize kv, SizeKvPool(m));
  if (kv.kv_blocks_per_replica < 1) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("{}{} on {} with tp {} pp {} leaves no memory for KV cache (usable KV per rank: {} "
                              "bytes); run `fleetplan fit` on this scenario for the arithmetic",
                              pool.role != PoolRole::kMixed ? fmt::format("the {} pool: ", PoolRoleName(pool.role)) : "",
                              m.model.name, m.gpu.name, m.layout.tp, m.layout.pp, kv.kv_bytes_per_rank.count()));
  }
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const StepCostModel> cost, BuildCostModel(s, pool.fit));
  return BuiltPool{&pool, kv, std::move(cost)};
}

// The replicas of every pool, in pool order.
std::vector<ReplicaSetup> ReplicaSetups(const Scenario& s, const std::vector<BuiltPool>& pools) {
  std::vector<ReplicaSetup> out;
  for (const BuiltPool& p : pools) {
    EngineConfig engine = s.engine;
    engine.kv_blocks = p.kv.kv_blocks_per_replica;
    engine.cuda_graphs = s.cuda_graphs;
    const int64_t gpus = p.spec->fit.memory.layout.gpus();
    ReplicaSetup r{engine, p.cost, p.spec->role, p.kv.kv_bytes_per_token_per_rank.count() * gpus, 0};
    // Every rank sends its shard of the KV over its own NIC.
    if (p.spec->role == PoolRole::kPrefill) {
      r.link_bytes_per_second = std::max<int64_t>(1, static_cast<int64_t>(s.transfer_link.bandwidth) * gpus);
    }
    out.insert(out.end(), static_cast<size_t>(p.spec->replicas), r);
  }
  return out;
}

Json MemoryJson(const Scenario& s, const KvPoolSize& kv, const std::vector<BuiltPool>& pools) {
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
  if (pools.size() > 1) {
    Json list = Json::array();
    for (const BuiltPool& p : pools) {
      const MemoryInputs& m = p.spec->fit.memory;
      list.push_back({{"role", std::string(PoolRoleName(p.spec->role))},
                      {"replicas", p.spec->replicas},
                      {"tp", m.layout.tp},
                      {"pp", m.layout.pp},
                      {"ep", m.layout.ep},
                      {"gpus", p.spec->replicas * m.layout.gpus()},
                      {"kv_blocks_per_replica", p.kv.kv_blocks_per_replica},
                      {"kv_bytes_per_token", p.kv.kv_bytes_per_token_per_rank.count() * m.layout.gpus()}});
    }
    j["gpus"] = 0;
    for (const Json& p : list) j["gpus"] = j["gpus"].get<int64_t>() + p["gpus"].get<int64_t>();
    j["pools"] = std::move(list);
  }
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
    const int64_t handed_off = sim.figures(i).handed_off;
    if (sim.stages() != nullptr) {
      r["role"] = std::string(PoolRoleName(sim.role(i)));
      r["prompts_handed_off"] = handed_off;  // included in this replica's `completed`
    }
    replicas.push_back(std::move(r));
    blocks += e.pool().total();
    total += st;
    total.completed -= handed_off;  // a handed-off prompt is not a completed request
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

// One line per replica (the busiest and the least busy of a fleet above
// kSummaryReplicaLines; report.json has them all).
constexpr size_t kSummaryReplicaLines = 16;

std::string ReplicaLine(const Json& figures, const Json& engine) {
  const auto i = figures["replica"].get<int64_t>();
  const std::string role = engine.contains("role") ? fmt::format(" [{}]", engine["role"].get<std::string>()) : "";
  const int64_t handed_off = engine.value("prompts_handed_off", int64_t{0});
  const std::string handoffs = handed_off > 0 ? fmt::format(", prompts handed off {}", handed_off) : "";
  return fmt::format("  replica {}{}: routed {}, completed {}{}, busy {:.1f}%, max queue {}, TTFT p99 {:.1f} ms\n", i,
                     role, figures["routed"].get<int64_t>(), engine["completed"].get<int64_t>() - handed_off, handoffs,
                     100.0 * engine["busy_fraction"].get<double>(), figures["max_queue_depth"].get<int64_t>(),
                     figures["ttft_p99_ms"].get<double>());
}

std::string ReplicaLines(const Json& report) {
  const Json& figures = report["replicas"];
  const Json& engines = report["engine"]["replicas"];
  if (figures.size() <= 1) return "";
  std::string out = "replicas:\n";
  if (figures.size() <= kSummaryReplicaLines) {
    for (size_t i = 0; i < figures.size(); ++i) out += ReplicaLine(figures[i], engines[i]);
    return out;
  }
  size_t busiest = 0;
  size_t idlest = 0;
  for (size_t i = 1; i < engines.size(); ++i) {
    const double b = engines[i]["busy_fraction"].get<double>();
    if (b > engines[busiest]["busy_fraction"].get<double>()) busiest = i;
    if (b < engines[idlest]["busy_fraction"].get<double>()) idlest = i;
  }
  out += ReplicaLine(figures[busiest], engines[busiest]);
  out += ReplicaLine(figures[idlest], engines[idlest]);
  return out + fmt::format("  ... {} replicas in all: the busiest and the least busy above; report.json `replicas` "
                           "has every one\n",
                           figures.size());
}

std::string StageLines(const Json& report) {
  if (!report.contains("disaggregation")) return "";
  const Json& d = report["disaggregation"];
  const Json& t = d["transfer"];
  std::string out = fmt::format(
      "disaggregation: {} requests disaggregated, {} colocated (below {} uncached tokens); prefill pool busy {:.1f}%, "
      "decode pool busy {:.1f}%, {} waited for a decode slot\n",
      d["requests"]["disaggregated"].get<int64_t>(), d["requests"]["colocated"].get<int64_t>(),
      d["colocate_below_tokens"].get<int64_t>(), 100.0 * d["prefill"]["busy_fraction"].get<double>(),
      100.0 * d["decode"]["busy_fraction"].get<double>(), d["admission"]["waited"].get<int64_t>());
  out += fmt::format(
      "kv transfer: {} of {} attempts completed, {:.2f} GB, p50 {:.1f} ms, p99 {:.1f} ms; {} timeouts, {} failures, "
      "{} retries, {} recomputed, {} rejected\n",
      t["completed"].get<int64_t>(), t["count"].get<int64_t>(), static_cast<double>(t["bytes"].get<int64_t>()) / 1e9,
      t["duration"]["p50_ms"].get<double>(), t["duration"]["p99_ms"].get<double>(), t["timeouts"].get<int64_t>(),
      t["failures"].get<int64_t>(), t["retries"].get<int64_t>(), t["recomputations"].get<int64_t>(),
      t["rejections"].get<int64_t>());
  return out;
}

std::string SummaryText(const Scenario& s, const Report& report, const Json& full, const KvPoolSize& kv,
                        const std::vector<std::string>& files) {
  const Json& engine = full["engine"];
  std::string out = fmt::format("scenario {} (seed {}): {} x {} tp{} pp{} on {}, {} KV blocks of {} tokens per replica\n",
                                s.name, s.seed, s.replicas, s.fit.memory.model.name, s.fit.memory.layout.tp,
                                s.fit.memory.layout.pp, s.fit.memory.gpu.name, kv.kv_blocks_per_replica, kv.block_tokens);
  if (s.pools.size() > 1) {
    std::vector<std::string> pools;
    for (const Json& p : full["deployment"]["pools"]) {
      pools.push_back(fmt::format("{} {} x tp{} pp{} ({} KV blocks each)", p["role"].get<std::string>(),
                                  p["replicas"].get<int64_t>(), p["tp"].get<int64_t>(), p["pp"].get<int64_t>(),
                                  p["kv_blocks_per_replica"].get<int64_t>()));
    }
    out += fmt::format("pools: {}\n", fmt::join(pools, "; "));
  }
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
  out += ReplicaLines(full);
  out += StageLines(full);
  if (full.contains("prefix_replication")) {
    const Json& p = full["prefix_replication"];
    out += fmt::format("prefix replication: {} prefixes, {} replicated, {} copies added, {} removed, at most {} "
                       "replicas for one prefix\n",
                       p["prefixes"].get<int64_t>(), p["replicated_prefixes"].get<int64_t>(),
                       p["members_added"].get<int64_t>(), p["members_removed"].get<int64_t>(),
                       p["max_members"].get<int64_t>());
  }
  for (const auto& f : files) out += fmt::format("wrote {}\n", f);
  return out;
}

}  // namespace

Expected<RunResult> RunScenario(const Scenario& s, const RunOptions& opt) {
  // A scenario built in code may leave `pools` empty: one mixed pool of `replicas` x `fit`.
  const std::vector<PoolSpec> specs = s.pools.empty() ? std::vector<PoolSpec>{{PoolRole::kMixed, s.fit, s.replicas}}
                                                      : s.pools;
  std::vector<BuiltPool> pools;
  for (const PoolSpec& p : specs) {
    FP_ASSIGN_OR_RETURN(BuiltPool built, BuildPool(s, p));
    pools.push_back(std::move(built));
  }
  // The headline pool (Scenario::fit): the first that serves requests.
  const BuiltPool& primary =
      *std::find_if(pools.begin(), pools.end(), [](const BuiltPool& p) { return p.spec->role != PoolRole::kPrefill; });
  const KvPoolSize& kv = primary.kv;
  const std::shared_ptr<const StepCostModel>& cost = primary.cost;

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
  setup.replicas = ReplicaSetups(s, pools);
  setup.router = s.router;
  setup.disaggregation = s.disaggregation;
  setup.replication = s.replication;
  FP_ASSIGN_OR_RETURN(setup.invalidations, ResolveInvalidations(s.events, source->names()));
  setup.adapters = s.adapters;
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::Create(setup, &sink));
  sink.SetSimulation(sim.get());
  if (timeline) {
    sim->SetFleetObserver(&sink);
    if (specs.size() > 1) {
      for (int32_t i = 0; i < sim->replica_count(); ++i) timeline->LabelReplica(i, PoolRoleName(sim->role(i)));
    }
  }
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
  j["deployment"] = MemoryJson(s, kv, pools);
  j["step_model"] = cost->Describe();
  const Duration span = sim->end_time() - sim->first_arrival();
  j["engine"] = EngineJson(*sim, span, s.cuda_graphs.enabled());
  j["replicas"] = sim->ReplicaReportJson(span);
  if (sim->stages() != nullptr) j["disaggregation"] = sim->StageReportJson(span);
  if (sim->placement() != nullptr) j["prefix_replication"] = sim->placement()->stats().ToJson();
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
  result.summary = SummaryText(s, report, j, kv, files);
  result.report = std::move(j);
  result.files = std::move(files);
  result.requests = sim->requests_done();
  result.events = sim->events();
  result.simulated_end = sim->end_time();
  return result;
}

}  // namespace fleetplan
