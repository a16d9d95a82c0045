#include "fleetplan/canary/rollback_exercise.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "fleetplan/canary/simulated_canary.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/traffic_split.h"

namespace fleetplan {
namespace {

constexpr std::string_view kOneFleet =
    "the rollback exercise runs the baseline and the candidate as one fleet of mixed replicas, which does not carry";

YamlNode Node(const Scenario& s, std::initializer_list<std::string_view> path) {
  YamlNode n = s.document->root();
  for (std::string_view k : path) n = n[k];
  return n;
}

// A feature of one scenario that the one-fleet model does not carry.
Status CheckCarried(const Scenario& s) {
  const bool prefill =
      std::any_of(s.pools.begin(), s.pools.end(), [](const PoolSpec& p) { return p.role != PoolRole::kMixed; });
  if (prefill) return Node(s, {"deployment", "pools"}).Error(fmt::format("{} prefill/decode pools", kOneFleet));
  if (s.autoscaling.enabled) return Node(s, {"autoscaling"}).Error(fmt::format("{} autoscaling", kOneFleet));
  if (s.admission.enabled) return Node(s, {"admission"}).Error(fmt::format("{} fleet admission", kOneFleet));
  if (s.adapters.enabled) return Node(s, {"engine", "adapters"}).Error(fmt::format("{} adapter residency", kOneFleet));
  if (s.replication.enabled) {
    return Node(s, {"router", "replication"}).Error(fmt::format("{} hot-prefix replication", kOneFleet));
  }
  if (!s.events.empty()) return Node(s, {"workload", "events"}).Error(fmt::format("{} cache invalidations", kOneFleet));
  return Status::Ok();
}

// Settings both revisions share in one fleet (the router beliefs' block size and cache
// model, the telemetry the routers read).
Status CheckShared(const Scenario& b, const Scenario& c) {
  const auto differs = [&](std::initializer_list<std::string_view> path, std::string what, std::string here,
                           std::string there) {
    return Node(c, path).Error(
        fmt::format("{} here, {} in the baseline ({}): both revisions share one fleet, so they "
                    "need the same {}",
                    here, there, b.display_name, what));
  };
  if (b.engine.block_tokens != c.engine.block_tokens) {
    return differs({"engine", "kv", "block_tokens"}, "KV block size", std::to_string(c.engine.block_tokens),
                   std::to_string(b.engine.block_tokens));
  }
  const PrefixCacheConfig& pb = b.engine.prefix_cache;
  const PrefixCacheConfig& pc = c.engine.prefix_cache;
  if (pb.enabled != pc.enabled || pb.share_across_tenants != pc.share_across_tenants) {
    return differs({"engine", "prefix_cache"}, "prefix cache settings (enabled, share_across_tenants)",
                   fmt::format("{}/{}", pc.enabled, pc.share_across_tenants),
                   fmt::format("{}/{}", pb.enabled, pb.share_across_tenants));
  }
  if (b.router.telemetry_delay != c.router.telemetry_delay) {
    return differs({"router", "telemetry_delay"}, "telemetry delay",
                   fmt::format("{} ns", c.router.telemetry_delay.ns()),
                   fmt::format("{} ns", b.router.telemetry_delay.ns()));
  }
  if (b.router.precise != c.router.precise) {
    return differs({"router", "precise"}, "router.precise", fmt::format("{}", c.router.precise),
                   fmt::format("{}", b.router.precise));
  }
  return Status::Ok();
}

// The baseline's plan with the candidate's pools after its own, each with the
// candidate's engine settings, and the split.
Expected<FleetPlan> OneFleet(const Scenario& b, const Scenario& c, TrafficSplitConfig split) {
  FP_ASSIGN_OR_RETURN(FleetPlan base, Bind(b));
  FP_ASSIGN_OR_RETURN(FleetPlan cand, Bind(c));
  FleetPlan plan = base;
  EngineConfig engine = cand.engine;
  engine.cuda_graphs = cand.cuda_graphs;
  for (BoundPool p : cand.pools) {
    p.engine = engine;
    plan.pools.push_back(std::move(p));
  }
  // The kernel's router is not asked (the split routes every request), but prefix beliefs
  // are kept only when it reads prefixes: the one that does, when either does.
  if (!RouterReadsPrefixes(base.router) && RouterReadsPrefixes(cand.router)) plan.router = cand.router;
  split.first_candidate = static_cast<int32_t>(base.replicas());
  split.baseline_router = base.router;
  split.candidate_router = cand.router;
  plan.traffic_split = split;
  plan.name = fmt::format("{} + {} (rollback exercise)", base.name, cand.name);
  plan.notes.push_back(fmt::format(
      "rollback exercise: replicas 0..{} are the baseline's ({}), {}..{} the candidate's "
      "({})",
      split.first_candidate - 1, b.display_name, split.first_candidate, plan.replicas() - 1, c.display_name));
  return plan;
}

Expected<SimTime> RollbackTime(const Scenario& s, const RollbackExerciseOptions& o) {
  const std::optional<Duration> end = s.workload.duration;
  if (!o.rollback_at && !end) {
    return InvalidInput(
        fmt::format("{}: the workload has no duration to roll back in the middle of; give the "
                    "rollback time (--rollback-at)",
                    s.display_name));
  }
  const Duration at = o.rollback_at.value_or(end ? *end / 2 : Duration());
  if (end && at >= *end) {
    return InvalidInput(
        fmt::format("a rollback at {:g} s is not before the end of {}'s arrivals ({:g} s): no request "
                    "would arrive after it",
                    at.seconds(), s.display_name, end->seconds()));
  }
  return SimTime() + at;
}

// The latest time a record names.
SimTime EndOf(const RequestRecord& r) {
  return std::max({r.arrival, r.first_token.value_or(r.arrival), r.finish.value_or(r.arrival)});
}

// Folds every record into the exercise's counts.
struct Observer {
  const SplitAssignment& assign;
  int32_t first_candidate;
  RollbackExercise& e;

  void operator()(const RequestRecord& r) const {
    ++e.requests;
    const bool assigned = assign.ToCandidate(r.id);
    const bool routed = r.replica.has_value();
    const bool on_candidate = routed && *r.replica >= first_candidate;
    if (on_candidate && EndOf(r) > e.rollback_at) ++e.candidate_ended_after_rollback;
    if (on_candidate) e.last_candidate_end = std::max(e.last_candidate_end.value_or(SimTime()), EndOf(r));
    if (r.arrival < e.rollback_at) {
      ++e.before;
      e.before_assigned_candidate += assigned ? 1 : 0;
      e.before_ended_candidate += on_candidate ? 1 : 0;
      e.before_ended_baseline += routed && !on_candidate ? 1 : 0;
      return;
    }
    ++e.after;
    e.after_assigned_candidate += assigned ? 1 : 0;
    e.after_served_candidate += on_candidate ? 1 : 0;
    e.after_served_baseline += routed && !on_candidate ? 1 : 0;
    e.after_not_routed += routed ? 0 : 1;
    e.after_ok += r.status == RecordStatus::kOk ? 1 : 0;
  }
};

void CollectReplicas(const FleetResult& result, int32_t first_candidate, RollbackExercise& e) {
  for (const ReplicaResult& r : result.replicas) {
    ExercisedReplica x{r.id,
                       r.id >= first_candidate,
                       r.state,
                       r.figures.routed,
                       r.engine.completed,
                       r.figures.drain_requeued,
                       r.figures.drain_cancelled,
                       r.figures.drain_rejected};
    if (x.candidate) {
      e.requeued_to_baseline += x.requeued;
      e.drain_cancelled += x.cancelled;
      e.drain_rejected += x.rejected;
    }
    e.replicas.push_back(x);
  }
}

Expected<std::string> DigestOfFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return DigestOf(bytes);
}

Status WriteEvidence(RollbackExercise& e, const RollbackExerciseOptions& o) {
  Json data = RollbackExerciseJson(e);
  data.erase("files");
  const auto base = [](const std::string& f) { return std::filesystem::path(f).filename().string(); };
  data["records"] = {{"file", base(e.records_file)}, {"digest", e.records_digest}};
  data["report"] = {{"file", base(e.report_file)}, {"digest", e.report_digest}};
  const Json doc = {
      {"evidence",
       {{"kind", "rollback-exercise"}, {"observed_at", FormatUtcTime(o.observed_at)}, {"source", o.source}}},
      {"data", std::move(data)}};
  FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(doc));
  e.evidence_file = (std::filesystem::path(o.out_dir) / "rollback.json").string();
  e.evidence_digest = DigestOf(text);
  return WriteFileAtomic(e.evidence_file, text);
}

}  // namespace

Expected<RollbackExercise> ExerciseRollback(const Scenario& baseline, const Scenario& candidate,
                                            const RollbackExerciseOptions& o) {
  FP_ASSERT(o.share >= 0 && o.share <= 1);
  FP_RETURN_IF_ERROR(CheckSameWindow(baseline, candidate, o.seed));
  for (const Scenario* s : {&baseline, &candidate}) FP_RETURN_IF_ERROR(CheckCarried(*s));
  FP_RETURN_IF_ERROR(CheckShared(baseline, candidate));
  RollbackExercise e;
  e.candidate_revision = o.candidate_revision;
  e.candidate_namespace = o.candidate_namespace;
  e.baseline_revision = o.baseline_revision;
  e.share = o.share;
  e.seed = o.seed.value_or(baseline.seed);
  e.grace = o.grace;
  FP_ASSIGN_OR_RETURN(e.rollback_at, RollbackTime(baseline, o));
  TrafficSplitConfig split;
  split.seed = e.seed;
  split.share = o.share;
  split.rollback_at = e.rollback_at;
  split.rollback_grace = o.grace;
  FP_ASSIGN_OR_RETURN(FleetPlan plan, OneFleet(baseline, candidate, split));
  const SplitAssignment assign(e.seed, o.share);
  const int32_t first = plan.traffic_split->first_candidate;
  RunOptions opt;
  opt.out_dir = o.out_dir;
  opt.seed = e.seed;
  opt.write_requests = true;
  opt.write_timeline = false;
  opt.check_invariants_every_event = o.check_invariants_every_event;
  opt.on_record = Observer{assign, first, e};
  FP_ASSIGN_OR_RETURN(RunResult run, Simulate(plan, opt));
  CollectReplicas(run.result, first, e);
  e.records_file = run.out_dir + "/requests.jsonl";
  e.report_file = run.out_dir + "/report.json";
  FP_ASSIGN_OR_RETURN(e.records_digest, DigestOfFile(e.records_file));
  FP_ASSIGN_OR_RETURN(e.report_digest, DigestOfFile(e.report_file));
  FP_RETURN_IF_ERROR(WriteEvidence(e, o));
  return e;
}

Json RollbackExerciseJson(const RollbackExercise& e) {
  Json replicas = Json::array();
  int64_t retained = 0;
  for (const ExercisedReplica& r : e.replicas) {
    retained += r.candidate ? 1 : 0;
    replicas.push_back({{"id", r.id},
                        {"revision", r.candidate ? e.candidate_revision : e.baseline_revision},
                        {"state", std::string(ReplicaStateName(r.state))},
                        {"routed", r.routed},
                        {"completed", r.completed},
                        {"requeued", r.requeued},
                        {"cancelled", r.cancelled},
                        {"rejected", r.rejected}});
  }
  const auto file = [](const std::string& f, const std::string& d) { return Json{{"file", f}, {"digest", d}}; };
  return Json{
      {"simulated", true},
      {"candidate", e.candidate_revision},
      {"serving", e.baseline_revision},
      {"retained_namespace", e.candidate_namespace},
      {"split", e.share},
      {"seed", e.seed},
      {"rollback_at_s", RoundForReport(e.rollback_at.seconds())},
      {"grace_s", RoundForReport(e.grace.seconds())},
      {"requests", e.requests},
      {"before_rollback",
       {{"arrived", e.before},
        {"assigned_candidate", e.before_assigned_candidate},
        {"ended_on_candidate", e.before_ended_candidate},
        {"ended_on_baseline", e.before_ended_baseline}}},
      {"after_rollback",
       {{"arrived", e.after},
        {"assigned_candidate", e.after_assigned_candidate},
        {"served_by_baseline", e.after_served_baseline},
        {"served_by_candidate", e.after_served_candidate},
        {"not_routed", e.after_not_routed},
        {"ok", e.after_ok}}},
      {"candidate_held_at_rollback",
       {{"ended_on_candidate_after_rollback", e.candidate_ended_after_rollback},
        {"requeued_to_baseline", e.requeued_to_baseline},
        {"cancelled", e.drain_cancelled},
        {"rejected", e.drain_rejected}}},
      {"last_candidate_end_s", e.last_candidate_end ? Json(RoundForReport(e.last_candidate_end->seconds())) : Json()},
      {"candidate_replicas_listed", retained},
      {"replicas", std::move(replicas)},
      {"files",
       {{"records", file(e.records_file, e.records_digest)},
        {"report", file(e.report_file, e.report_digest)},
        {"evidence", file(e.evidence_file, e.evidence_digest)}}}};
}

Expected<Json> ExerciseLadderRollback(const Ladder& l, Json rollout, const LadderExerciseOptions& o) {
  if (rollout["decision"] != "rollback") return rollout;
  if (l.candidate_scenario.empty() || l.baseline_scenario.empty()) {
    const Status located = l.candidate_where->Error(
        "exercising the rollback needs the two fleets: candidate.scenario and baseline.scenario (scenario files, "
        "relative to the ladder)");
    return Status(StatusCode::kUsage, located.message());
  }
  FP_ASSIGN_OR_RETURN(Scenario baseline, LoadScenario(l.baseline_scenario));
  FP_ASSIGN_OR_RETURN(Scenario candidate, LoadScenario(l.candidate_scenario));
  const std::string stage = rollout["stage"].get<std::string>();
  const auto it = std::find_if(l.stages.begin(), l.stages.end(), [&](const LadderStage& s) { return s.name == stage; });
  FP_ASSERT(it != l.stages.end());  // EvaluateLadder names one of the ladder's stages
  RollbackExerciseOptions x;
  x.out_dir = o.out_dir;
  x.share = it->traffic;
  x.rollback_at = o.rollback_at;
  x.grace = o.grace;
  x.observed_at = o.as_of;
  x.candidate_revision = l.candidate_revision;
  x.candidate_namespace = l.candidate_namespace;
  x.baseline_revision = l.baseline_revision;
  x.source = fmt::format(
      "fleetplan rollout --exercise-rollback (simulated): ladder {} ({}), stage {} at {}, "
      "baseline {} ({}), candidate {} ({})",
      l.display_name, l.digest, stage, FormatShare(it->traffic), baseline.display_name, baseline.digest,
      candidate.display_name, candidate.digest);
  FP_ASSIGN_OR_RETURN(RollbackExercise e, ExerciseRollback(baseline, candidate, x));
  rollout["rollback"]["exercised"] = RollbackExerciseJson(e);
  return rollout;
}

}  // namespace fleetplan
