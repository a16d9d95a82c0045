#include "fleetplan/fleet/run.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/output_folder.h"
#include "fleetplan/fleet/autoscaler.h"
#include "fleetplan/fleet/timeline.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/memory/fit.h"
#include "fleetplan/memory/plan.h"
#include "fleetplan/metrics/percentile.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/metrics/report.h"
#include "fleetplan/workload/generator.h"
#include "fleetplan/workload/trace.h"

namespace fleetplan {
namespace {

constexpr const char* kVersion = "0.1.0";
// requests.jsonl is written in chunks of about this size (one write per chunk).
constexpr size_t kRecordFlushBytes = size_t{1} << 20;

// Receives every request's end and every step; feeds the report, the records file and
// the timeline.
class RunSink final : public EngineObserver, public FleetObserver {
 public:
  RunSink(ReportBuilder* builder, const RequestSource* source) : builder_(builder), source_(source) {}

  void SetRecords(OutputFile* records) { records_ = records; }
  void SetTimeline(TimelineWriter* t) { timeline_ = t; }
  void SetSimulation(Simulation* sim) { sim_ = sim; }
  void SetStopWhen(const std::function<bool(const RequestRecord&)>* stop_when) { stop_when_ = stop_when; }
  void SetOnRecord(const std::function<void(const RequestRecord&)>* on_record) { on_record_ = on_record; }

  void OnRequestDone(const RequestOutcome& o) override {
    RequestRecord r = ToRequestRecord(o);
    // An outcome without a replica was never routed (a live route of its id, if any, is
    // another request's: admission's duplicates).
    if (const RouteInfo* route = sim_ != nullptr && o.replica >= 0 ? sim_->route_of(o.id) : nullptr) {
      r.replica = route->replica;
      r.matched_prefix_tokens = route->matched_prefix_tokens;
      r.queue_age_at_assignment = route->queue_age;
    }
    builder_->Add(r);
    load_.Add(r);
    if (on_record_ != nullptr && *on_record_) (*on_record_)(r);
    if (stop_when_ != nullptr && *stop_when_ && (*stop_when_)(r) && sim_ != nullptr) {
      sim_->RequestStop();
    }
    if (records_ != nullptr) {
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

  const LoadTracker& load() const { return load_; }

  // Writes what is buffered; the first write error, if any.
  Status Close() {
    if (records_ == nullptr) return Status::Ok();
    Flush();
    return records_status_;
  }

 private:
  void Flush() {
    if (records_status_.ok()) records_status_ = records_->Write(buffer_);
    buffer_.clear();
  }
  ReportBuilder* builder_;
  const RequestSource* source_;
  OutputFile* records_ = nullptr;  // the run's OutputFolder owns it
  Status records_status_;
  std::string buffer_;
  TimelineWriter* timeline_ = nullptr;
  Simulation* sim_ = nullptr;
  const std::function<bool(const RequestRecord&)>* stop_when_ = nullptr;
  LoadTracker load_;
  const std::function<void(const RequestRecord&)>* on_record_ = nullptr;
};

Json MemoryJson(const FleetPlan& plan) {
  const BoundPool& primary = plan.primary_pool();
  const MemoryInputs& m0 = primary.fit.memory;
  const KvPoolSize& kv = primary.kv;
  Json j;
  j["model"] = m0.model.name;
  j["gpu"] = m0.gpu.name;
  j["tp"] = m0.layout.tp;
  j["pp"] = m0.layout.pp;
  j["ep"] = m0.layout.ep;
  j["replicas"] = plan.replicas();
  j["gpus"] = plan.replicas() * m0.layout.gpus();
  j["weight_dtype"] = std::string(DTypeName(m0.weight_dtype));
  j["kv_dtype"] = std::string(DTypeName(m0.kv_dtype));
  j["gpu_memory_utilization"] = m0.gpu_memory_utilization;
  j["kv_bytes_per_rank"] = kv.kv_bytes_per_rank.count();
  j["kv_bytes_per_token_per_rank"] = kv.kv_bytes_per_token_per_rank.count();
  j["block_tokens"] = kv.block_tokens;
  j["kv_blocks_per_replica"] = kv.kv_blocks_per_replica;
  j["kv_tokens_per_replica"] = kv.kv_blocks_per_replica * kv.block_tokens;
  if (plan.pools.size() > 1) {
    Json list = Json::array();
    for (const BoundPool& p : plan.pools) {
      const MemoryInputs& m = p.fit.memory;
      list.push_back({{"role", std::string(PoolRoleName(p.role))},
                      {"replicas", p.replicas},
                      {"tp", m.layout.tp},
                      {"pp", m.layout.pp},
                      {"ep", m.layout.ep},
                      {"gpus", p.replicas * m.layout.gpus()},
                      {"kv_blocks_per_replica", p.kv.kv_blocks_per_replica},
                      {"kv_bytes_per_token", p.kv.kv_bytes_per_token_per_rank.count() * m.layout.gpus()}});
    }
    j["gpus"] = 0;
    for (const Json& p : list) j["gpus"] = j["gpus"].get<int64_t>() + p["gpus"].get<int64_t>();
    j["pools"] = std::move(list);
  }
  return j;
}

// Nearest-rank percentile of unsorted values, in ms; 0 when empty.
double PercentileMs(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  return static_cast<double>(NearestRankSelect(v, q)) / 1e6;
}

FleetResult Collect(Simulation& sim, Report report, Duration span) {
  FleetResult r;
  r.report = std::move(report);
  r.span = span;
  for (int32_t i = 0; i < sim.replica_count(); ++i) {
    const Engine& e = sim.replica(i);
    ReplicaResult rep{i, sim.role(i), sim.state(i), sim.figures(i), e.stats(), e.pool().total(), 0.0};
    rep.ttft_p99_ms = PercentileMs(rep.figures.ttft_ns, 0.99);
    r.kv_blocks += rep.kv_blocks;
    r.engine += rep.engine;
    r.engine.completed -= rep.figures.handed_off;  // a handed-off prompt is not a completed request
    r.replicas.push_back(std::move(rep));
  }
  sim.ForEachComponent([&](FleetComponent& c) { c.AddSummary(span, r.component_lines); });
  return r;
}

Json EngineJson(const FleetResult& r, bool cuda_graphs, std::optional<SpeculationBasis> speculation) {
  Json replicas = Json::array();
  for (const ReplicaResult& rep : r.replicas) {
    Json j = rep.engine.ToJson(rep.kv_blocks, r.span, cuda_graphs, speculation);
    j.erase("decode_batches");  // the fleet's histogram is the one the graphs gate reads
    j["replica"] = rep.id;
    replicas.push_back(std::move(j));
  }
  Json j = r.engine.ToJson(r.kv_blocks, r.span * static_cast<int64_t>(r.replicas.size()), cuda_graphs, speculation);
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

double BusyFraction(const EngineStats& e, Duration span) {
  return span.seconds() > 0 ? e.busy.seconds() / span.seconds() : 0.0;
}

std::string ReplicaLine(const ReplicaResult& r, Duration span, bool pooled) {
  const std::string role = pooled ? fmt::format(" [{}]", PoolRoleName(r.role)) : "";
  const int64_t handed_off = r.figures.handed_off;
  const std::string handoffs = handed_off > 0 ? fmt::format(", prompts handed off {}", handed_off) : "";
  const std::string state = r.state != ReplicaState::kReady ? fmt::format(" ({})", ReplicaStateName(r.state)) : "";
  // "-", not 0.0, when no request got a first token here.
  const std::string p99 = r.figures.ttft_ns.empty() ? "-" : fmt::format("{:.1f} ms", r.ttft_p99_ms);
  return fmt::format("  replica {}{}{}: routed {}, completed {}{}, busy {:.1f}%, max queue {}, TTFT p99 {}\n",
                     r.id, role, state, r.figures.routed, r.engine.completed - handed_off, handoffs,
                     100.0 * BusyFraction(r.engine, span), r.figures.max_queue_depth, p99);
}

std::string ReplicaLines(const FleetResult& r, bool pooled) {
  const auto& reps = r.replicas;
  if (reps.size() <= 1) return "";
  std::string out = "replicas:\n";
  if (reps.size() <= kSummaryReplicaLines) {
    for (const ReplicaResult& rep : reps) out += ReplicaLine(rep, r.span, pooled);
    return out;
  }
  size_t busiest = 0;
  size_t idlest = 0;
  for (size_t i = 1; i < reps.size(); ++i) {
    if (reps[i].engine.busy > reps[busiest].engine.busy) busiest = i;
    if (reps[i].engine.busy < reps[idlest].engine.busy) idlest = i;
  }
  out += ReplicaLine(reps[busiest], r.span, pooled);
  out += ReplicaLine(reps[idlest], r.span, pooled);
  return out + fmt::format("  ... {} replicas in all: the busiest and the least busy above; report.json `replicas` "
                           "has every one\n",
                           reps.size());
}

std::string SummaryText(const FleetPlan& plan, uint64_t seed, const FleetResult& r,
                        const std::vector<std::string>& files) {
  const MemoryInputs& m = plan.primary_pool().fit.memory;
  const KvPoolSize& kv = plan.primary_pool().kv;
  std::string out = fmt::format("scenario {} (seed {}): {} x {} tp{} pp{} on {}, {} KV blocks of {} tokens per replica\n",
                                plan.name, seed, plan.replicas(), m.model.name, m.layout.tp, m.layout.pp, m.gpu.name,
                                kv.kv_blocks_per_replica, kv.block_tokens);
  // The fit verdict `fleetplan fit --scenario` gives: max_running sequences at
  // max_context. A run goes ahead when it does not fit (the engine admits what its KV
  // holds and preempts), but it says so, as fit does.
  const FitRequest& fit = plan.primary_pool().fit;
  if (Expected<FitResult> verdict = CheckFit(fit); verdict.ok() && !verdict->fits && verdict->max_sequences > 0) {
    out += fmt::format("does not fit as configured: engine.scheduler.max_running {} sequences of max_context {} "
                       "tokens, but a replica's KV holds {} at that context (`fleetplan fit --scenario` says the "
                       "same); the engine admits what fits and preempts the rest\n",
                       fit.concurrency, fit.context, verdict->max_sequences);
  }
  const bool pooled = plan.pools.size() > 1;
  if (pooled) {
    std::vector<std::string> pools;
    for (const BoundPool& p : plan.pools) {
      pools.push_back(fmt::format("{} {} x tp{} pp{} ({} KV blocks each)", PoolRoleName(p.role), p.replicas,
                                  p.fit.memory.layout.tp, p.fit.memory.layout.pp, p.kv.kv_blocks_per_replica));
    }
    out += fmt::format("pools: {}\n", fmt::join(pools, "; "));
  }
  out += FormatReportText(r.report);
  const EngineStats& e = r.engine;
  const Duration replica_span = r.span * static_cast<int64_t>(r.replicas.size());
  out += fmt::format("engine: {} steps, {:.1f} tokens/step, {} preemptions, {} rejections, busy {:.1f}%, max decode gap {:.1f} ms\n",
                     e.steps, e.steps > 0 ? static_cast<double>(e.prefill_tokens + e.decode_tokens) / static_cast<double>(e.steps) : 0.0,
                     e.preemptions, e.rejections, 100.0 * BusyFraction(e, replica_span), e.max_decode_gap.millis());
  if (plan.engine.prefix_cache.enabled) {
    const PrefixCacheCounters& pc = e.prefix_cache;
    const double hit_rate =
        pc.lookup_tokens > 0 ? static_cast<double>(pc.hit_tokens) / static_cast<double>(pc.lookup_tokens) : 0.0;
    out += fmt::format("prefix cache: {} lookups, hit rate {:.1f}% of looked-up tokens, {} prefill tokens saved "
                       "({:.1f} s of prefill), {} evictions, {} invalidations\n",
                       pc.lookups, 100.0 * hit_rate, pc.saved_prefill_tokens, pc.saved_prefill.seconds(), pc.evictions,
                       pc.invalidations);
  }
  if (plan.cuda_graphs.enabled()) {
    const GraphCounters& g = e.cuda_graphs;
    const auto rate = [](int64_t part, int64_t whole) {
      return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
    };
    out += fmt::format("cuda graphs: {} decode-only steps, bucket hit {:.1f}%, padding {:.1f}% of padded slots, "
                       "eager fallback {:.1f}%\n",
                       g.decode_only_steps, 100.0 * rate(g.graphed_steps, g.decode_only_steps),
                       100.0 * rate(g.padded_slots - g.real_slots, g.padded_slots),
                       100.0 * rate(g.fallback_steps, g.decode_only_steps));
  }
  if (plan.engine.speculation.enabled()) {
    const SpeculationCounters& sc = e.speculation;
    const auto per = [](int64_t n, int64_t d) { return d > 0 ? static_cast<double>(n) / static_cast<double>(d) : 0.0; };
    out += fmt::format("speculation ({}, {} tokens/round): {} rounds in {} steps, {:.2f} accepted and {:.2f} emitted "
                       "per round (acceptance {:.1f}%), {} ordinary decodes, draft {:.1f} s of GPU time\n",
                       plan.engine.speculation.method, plan.engine.speculation.tokens_per_round, sc.rounds,
                       sc.verify_steps, per(sc.accepted_tokens, sc.rounds), per(sc.emitted_tokens, sc.rounds),
                       100.0 * per(sc.accepted_tokens, sc.drafted_tokens), sc.ordinary_decodes,
                       sc.draft_time.seconds());
    if (const auto cost = sc.Economics(plan.engine.speculation.basis)) {
      out += fmt::format("speculation cost ({} basis): a verify step {:.3g} ms against {:.3g} ms for the same step "
                         "decoding ordinarily: {:.3g} ms per emitted token, {} per accepted token: {}\n",
                         SpeculationBasisName(cost->basis), cost->round_ms, cost->ordinary_ms, cost->per_emitted_ms,
                         cost->per_accepted_ms ? fmt::format("{:.3g} ms", *cost->per_accepted_ms) : "n/a",
                         cost->pays ? "pays" : fmt::format("does not pay (break-even {:.3g} accepted per round, "
                                                           "{:.3g} accepted)", cost->break_even_accepted,
                                                           cost->mean_accepted));
    }
  }
  out += ReplicaLines(r, pooled);
  for (const std::string& line : r.component_lines) out += line;
  out += OverloadText(r.overload);
  for (const auto& f : files) out += fmt::format("wrote {}\n", f);
  return out;
}

}  // namespace

Status RemoveStaleOutput(const std::string& path, bool written, std::vector<std::string>* removed) {
  std::error_code ec;
  if (written || !std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) return Status::Ok();
  if (!std::filesystem::remove(path, ec) || ec) {
    return InvalidInput(fmt::format("cannot remove '{}' from an earlier run: {}", path, ec.message()));
  }
  removed->push_back(path);
  return Status::Ok();
}

Expected<RunResult> Simulate(const FleetPlan& plan, const RunOptions& opt) {
  const uint64_t seed = opt.seed.value_or(plan.seed);
  SourceLimits limits;
  limits.requests = opt.requests;
  limits.duration = opt.duration;
  std::unique_ptr<RequestSource> owned_source;
  if (opt.source == nullptr) {
    FP_ASSIGN_OR_RETURN(owned_source, MakeRequestSource(plan.workload, seed, limits));
  }
  RequestSource* const source = opt.source != nullptr ? opt.source : owned_source.get();
  FP_ASSIGN_OR_RETURN(ReportBuilder builder, ReportBuilder::Create(source->names().classes, plan.slo,
                                                                   /*open_classes=*/false));

  RunSink sink(&builder, source);
  sink.SetOnRecord(&opt.on_record);
  std::vector<std::string> files;
  std::vector<std::string> removed;
  const std::string dir = opt.out_dir.value_or(plan.output.dir);
  // The run's files are one set (core/output_folder.h): the folder is locked against a
  // second run, and every file goes to a temp file until the run completes, so an
  // interrupted or failed run leaves the earlier run's files as they were.
  std::unique_ptr<OutputFolder> folder;
  std::unique_ptr<TimelineWriter> timeline;
  if (opt.write_files) {
    FP_ASSIGN_OR_RETURN(folder, OutputFolder::Lock(dir));
    if (opt.write_requests.value_or(plan.output.requests)) {
      FP_ASSIGN_OR_RETURN(OutputFile * records, folder->Add("requests.jsonl"));
      sink.SetRecords(records);
    }
    if (opt.write_timeline.value_or(plan.output.timeline)) {
      FP_ASSIGN_OR_RETURN(OutputFile * file, folder->Add("timeline.json"));
      FP_ASSIGN_OR_RETURN(timeline, TimelineWriter::Open(file, static_cast<int32_t>(plan.replicas()), &source->names()));
      sink.SetTimeline(timeline.get());
    }
  }

  FleetSetup setup = plan.Setup();
  // The time series judge outcomes by the same objectives as the report.
  setup.classes.names = source->names().classes;
  for (const std::string& c : setup.classes.names) {
    const ClassSlo* slo = plan.slo.Find(c);
    setup.classes.objectives.push_back(slo != nullptr ? slo->objectives : ClassObjectives{});
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::Create(setup, &sink));
  sink.SetSimulation(sim.get());
  sink.SetStopWhen(&opt.stop_when);
  if (timeline) {
    sim->SetFleetObserver(&sink);
    if (plan.pools.size() > 1) {
      for (int32_t i = 0; i < sim->replica_count(); ++i) timeline->LabelReplica(i, PoolRoleName(sim->role(i)));
    }
  }
  Status invariants = Status::Ok();
  if (opt.check_invariants_every_event) {
    sim->SetEventHook([&] {
      if (invariants.ok()) invariants = sim->CheckInvariants();
    });
  }
  FP_RETURN_IF_ERROR(sim->Run(*source, opt.progress));
  FP_RETURN_IF_ERROR(invariants);
  FP_RETURN_IF_ERROR(sim->CheckInvariants());
  FP_RETURN_IF_ERROR(sink.Close());
  std::optional<TimeSeriesData> series;
  if (const TimeSeriesRecorder* ts = sim->component<TimeSeriesRecorder>()) series = ts->Snapshot(sim->end_time());
  if (timeline) {
    if (const Autoscaler* as = sim->component<Autoscaler>()) {
      std::vector<TimelineWriter::StateSpan> spans;
      for (const ReplicaStateSpan& s : as->StateSpans()) {
        spans.push_back({s.replica, ReplicaStateName(s.state), s.start, s.end});
      }
      timeline->AddReplicaStates(spans);
    }
    if (series) timeline->AddTimeSeries(*series);
    FP_RETURN_IF_ERROR(timeline->Close());
  }

  // A trace's content digest (the whole file, also past an early stop) is part of the
  // run's identity: report.json `workload.digest` and inputs_digest cover it.
  if (auto* trace = dynamic_cast<TraceSource*>(source)) {
    FP_ASSIGN_OR_RETURN(std::string trace_digest, trace->FinishDigest());
    (void)trace_digest;  // Describe() reports it
  }
  FP_ASSIGN_OR_RETURN(Report report, std::move(builder).Finish());
  report.notes.insert(report.notes.end(), plan.notes.begin(), plan.notes.end());
  // What the generator adjusted, as `trace gen` reports it: never silent.
  if (const auto* gen = dynamic_cast<const GeneratorSource*>(source)) {
    const GeneratorAdjustments& adj = gen->adjustments();
    for (const auto& [path, count] : adj.capped_draws) {
      report.notes.push_back(fmt::format("adjusted: {} draws of {} capped at its max", count, path));
    }
    if (adj.sessions_cut > 0) {
      report.notes.push_back(fmt::format("adjusted: {} sessions cut by the end of the workload", adj.sessions_cut));
    }
  }
  const Duration span = sim->end_time() - sim->first_arrival();
  FleetResult fleet = Collect(*sim, std::move(report), span);
  bool fixed_fleet = sim->replica_count() == plan.replicas();
  for (int32_t i = 0; i < sim->replica_count(); ++i) fixed_fleet = fixed_fleet && sim->state(i) == ReplicaState::kReady;
  fleet.overload = sink.load().Diagnose(plan.replicas(), fixed_fleet, source->names().classes);

  Json j = ReportToJson(fleet.report);
  AddPrefixCacheJson(*sim, source->names(), j);
  j["fleetplan_version"] = kVersion;
  j["scenario"] = {{"name", plan.name}, {"source", plan.source}, {"digest", plan.scenario_digest}, {"seed", seed}};
  Json catalogs = Json::array();
  for (const ScenarioInput& c : plan.catalog_files) catalogs.push_back({{"path", c.path}, {"digest", c.digest}});
  // User catalogs change what names mean, so they are inputs of the run (listed only
  // when there are some: a run on the built-in catalog keeps its report and digest).
  if (!catalogs.empty()) j["inputs"]["catalogs"] = catalogs;
  j["workload"] = source->Describe();
  j["deployment"] = MemoryJson(plan);
  j["step_model"] = plan.primary_pool().cost->Describe();
  j["engine"] = EngineJson(fleet, plan.cuda_graphs.enabled(),
                          plan.engine.speculation.enabled() ? std::optional(plan.engine.speculation.basis)
                                                            : std::nullopt);
  j["replicas"] = sim->ReplicaReportJson(span, &j["engine"]["replicas"]);
  sim->AddComponentReports(span, j);
  j["overload"] = OverloadJson(fleet.overload);
  if (sim->stop_requested()) j["stopped_early"] = true;
  j["simulation"] = {{"events", sim->events()},
                     {"requests", sim->requests_done()},
                     {"first_arrival_s", sim->first_arrival().seconds()},
                     {"end_s", sim->end_time().seconds()}};
  Json identity = {{"scenario", plan.scenario_digest}, {"seed", seed}, {"workload", j["workload"]}};
  if (!catalogs.empty()) identity["catalogs"] = catalogs;
  FP_ASSIGN_OR_RETURN(std::string inputs_digest, DigestOfJson(identity));
  j["inputs_digest"] = inputs_digest;

  RunResult result;
  if (opt.write_files) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(j));
    FP_ASSIGN_OR_RETURN(OutputFile * report_file, folder->Add("report.json"));
    FP_RETURN_IF_ERROR(report_file->Write(text));
    std::vector<std::string> owned = {"report.json", "requests.jsonl", "timeline.json"};
    std::vector<std::string> pages;
    for (const RunPage& page : opt.pages) {
      owned.push_back(page.name);
      if (!page.render) continue;
      FP_ASSIGN_OR_RETURN(OutputFile * file, folder->Add(page.name));
      FP_ASSIGN_OR_RETURN(std::string page_text, page.render(j));
      FP_RETURN_IF_ERROR(file->Write(page_text));
      pages.push_back(folder->PathOf(page.name));
    }
    // The folder describes one run: a file this run does not write, left by an earlier
    // run, is removed (and said so) rather than left beside the new report.json.
    FP_RETURN_IF_ERROR(folder->Commit(owned, &removed));
    files.push_back(dir + "/report.json");
    if (opt.write_requests.value_or(plan.output.requests)) files.push_back(dir + "/requests.jsonl");
    if (timeline) files.push_back(dir + "/timeline.json");
    files.insert(files.end(), pages.begin(), pages.end());
  }
  result.summary = SummaryText(plan, seed, fleet, files);
  for (const auto& f : removed) result.summary += fmt::format("removed {} (from an earlier run; not written by this one)\n", f);
  result.result = std::move(fleet);
  result.report = std::move(j);
  result.files = std::move(files);
  result.out_dir = opt.write_files ? dir : std::string();
  result.timeseries = std::move(series);
  result.names = source->names();
  result.requests = sim->requests_done();
  result.events = sim->events();
  result.simulated_end = sim->end_time();
  result.stopped_early = sim->stop_requested();
  return result;
}

Expected<RunResult> RunScenario(const Scenario& scenario, const RunOptions& options) {
  FP_ASSIGN_OR_RETURN(FleetPlan plan, Bind(scenario));
  return Simulate(plan, options);
}

}  // namespace fleetplan
