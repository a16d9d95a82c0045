#include "fleetplan/fleet/traffic_split.h"

#include <fmt/format.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {
namespace {

// The stream name the assignment key derives from (documented in the header).
constexpr std::string_view kSplitStream = "canary-split";
constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;

RouterContext ContextOf(const ReplicaSetup& r) {
  RouterContext c;
  c.prefill_cost_per_token = r.cost->PrefillCostPerToken();
  return c;
}

Json RouterPolicyJson(const RouterConfig& r) {
  return Json{{"policy", r.policy}};
}

}  // namespace

SplitAssignment::SplitAssignment(uint64_t seed, double share)
    : key_(RngStream(seed, kSplitStream).seed()), share_(share) {
  FP_ASSERT(share >= 0 && share <= 1);
}

double SplitAssignment::Unit(RequestId id) const {
  return static_cast<double>(SplitMix64(key_ ^ SplitMix64(static_cast<uint64_t>(id))) >> 11) * kTwoToMinus53;
}

Json TrafficSplitConfig::ToJson() const {
  Json j{{"seed", seed},
         {"share", share},
         {"first_candidate", first_candidate},
         {"baseline_router", RouterPolicyJson(baseline_router)},
         {"candidate_router", RouterPolicyJson(candidate_router)},
         {"rollback_grace_ns", rollback_grace.ns()}};
  j["rollback_at_ns"] = rollback_at ? Json(rollback_at->ns()) : Json();
  return j;
}

Expected<std::unique_ptr<FleetComponent>> TrafficSplit::Make(Simulation& sim) {
  const TrafficSplitConfig& c = *sim.setup().components.Find<TrafficSplitConfig>(kTrafficSplitRow);
  const auto& replicas = sim.setup().replicas;
  if (c.first_candidate < 1 || static_cast<size_t>(c.first_candidate) >= replicas.size()) {
    return InvalidInput(
        fmt::format("traffic split: the candidate's first replica {} leaves a revision without "
                    "replicas (the fleet has {})",
                    c.first_candidate, replicas.size()));
  }
  for (const ReplicaSetup& r : replicas) {
    if (r.role != PoolRole::kMixed) return InvalidInput("traffic split: every replica must be of the mixed role");
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Router> baseline, MakeRouter(c.baseline_router, ContextOf(replicas.front())));
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Router> candidate,
                      MakeRouter(c.candidate_router, ContextOf(replicas[static_cast<size_t>(c.first_candidate)])));
  return std::unique_ptr<FleetComponent>(new TrafficSplit(sim, c, std::move(baseline), std::move(candidate)));
}

TrafficSplit::TrafficSplit(Simulation& sim, const TrafficSplitConfig& config, std::unique_ptr<Router> baseline,
                           std::unique_ptr<Router> candidate)
    : sim_(sim), config_(config), assign_(config.seed, config.share) {
  routers_[0] = std::move(baseline);
  routers_[1] = std::move(candidate);
}

void TrafficSplit::OnStart(SimTime now) {
  if (config_.rollback_at) sim_.queue().Push(std::max(now, *config_.rollback_at), this, 0, -1, 0);
}

void TrafficSplit::OnEvent(const Event& e) {
  // The rollback: every candidate replica stops taking requests now; what it still holds
  // after the grace goes back to the baseline.
  for (int32_t id = config_.first_candidate; id < sim_.replica_count(); ++id) {
    if (sim_.state(id) == ReplicaState::kGone || sim_.state(id) == ReplicaState::kDraining) continue;
    const Status s = sim_.DrainReplica(id, e.time, config_.rollback_grace, DrainExpiry::kRequeue);
    if (!s.ok() && status_.ok()) status_ = s;
  }
}

std::optional<RouteDecision> TrafficSplit::Route(const Request& r, SimTime now) {
  const bool assigned = assign_.ToCandidate(r.id);
  const bool after = After(now);
  std::vector<int32_t> own[2];
  for (int32_t id : sim_.ready_serving()) own[is_candidate(id) ? 1 : 0].push_back(id);
  int side = assigned && !after ? 1 : 0;
  if (assigned && after) ++figures_.assigned_candidate_after;
  if (side == 1 && own[1].empty()) {
    ++figures_.assigned_candidate_fallback;
    side = 0;
  }
  if (side == 0 && own[0].empty() && !after) side = 1;  // no baseline replica ready (never drained here)
  // The kernel routes only with a ready serving replica, the baseline's are never drained
  // here, and the setup admits no component that drains them (canary/rollback_exercise.h).
  FP_ASSERT(!own[side].empty());
  const std::vector<int32_t>& replicas = own[side];
  std::vector<ReplicaView> view = sim_.BuildView(replicas);
  for (size_t i = 0; i < view.size(); ++i) {
    sim_.ForEachComponent([&](FleetComponent& c) { c.FillView(r, replicas[i], view[i]); });
  }
  RouteDecision d = routers_[side]->Route(r, view);
  FP_ASSERT(d.replica >= 0 && static_cast<size_t>(d.replica) < replicas.size());
  d.matched_prefix_tokens = view[static_cast<size_t>(d.replica)].matched_prefix_tokens;
  d.replica = replicas[static_cast<size_t>(d.replica)];
  return d;
}

SimTime TrafficSplit::OnRouted(const Request& r, int32_t replica, SimTime now, RouteInfo& info) {
  (void)r;
  (void)info;
  const bool after = After(now);
  if (is_candidate(replica)) {
    ++(after ? figures_.candidate_after : figures_.candidate_before);
  } else {
    ++(after ? figures_.baseline_after : figures_.baseline_before);
  }
  return now;
}

void TrafficSplit::OnReplicaState(int32_t id, ReplicaState state, SimTime now) {
  if (state == ReplicaState::kGone && is_candidate(id)) figures_.candidate_gone.emplace_back(id, now);
}

Status TrafficSplit::CheckInvariants() const {
  FP_RETURN_IF_ERROR(status_);
  int64_t routed[2] = {0, 0};
  for (int32_t id = 0; id < sim_.replica_count(); ++id) routed[is_candidate(id) ? 1 : 0] += sim_.figures(id).routed;
  const TrafficSplitFigures& f = figures_;
  if (routed[0] != f.baseline_before + f.baseline_after || routed[1] != f.candidate_before + f.candidate_after) {
    return InternalError(fmt::format("traffic split: bookings {} + {} and {} + {} against the replicas' {} and {}",
                                     f.baseline_before, f.baseline_after, f.candidate_before, f.candidate_after,
                                     routed[0], routed[1]));
  }
  if (f.candidate_after != 0) {
    return InternalError(
        fmt::format("traffic split: {} bookings reached the candidate after the rollback", f.candidate_after));
  }
  return Status::Ok();
}

void TrafficSplit::AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) {
  (void)span;
  (void)engine;
  figures["revision"] = is_candidate(id) ? "candidate" : "baseline";
}

void TrafficSplit::AddReport(Duration span, Json& report) const {
  (void)span;
  const TrafficSplitFigures& f = figures_;
  Json gone = Json::array();
  for (const auto& [id, at] : f.candidate_gone)
    gone.push_back({{"replica", id}, {"at_s", RoundForReport(at.seconds())}});
  Json j = config_.ToJson();
  j["routed"] = {{"baseline_before", f.baseline_before},
                 {"candidate_before", f.candidate_before},
                 {"baseline_after", f.baseline_after},
                 {"candidate_after", f.candidate_after}};
  j["assigned_candidate_after"] = f.assigned_candidate_after;
  j["assigned_candidate_fallback"] = f.assigned_candidate_fallback;
  j["candidate_gone"] = std::move(gone);
  report["traffic_split"] = std::move(j);
}

void TrafficSplit::AddSummary(Duration span, std::vector<std::string>& lines) const {
  (void)span;
  const TrafficSplitFigures& f = figures_;
  lines.push_back(
      fmt::format("traffic split: {:g}% to the candidate; routed before the rollback {} baseline, {} "
                  "candidate\n",
                  config_.share * 100, f.baseline_before, f.candidate_before));
  if (config_.rollback_at) {
    lines.push_back(
        fmt::format("rollback at {:g} s: routed after it {} baseline, {} candidate ({} assigned to the "
                    "candidate went to the baseline)\n",
                    config_.rollback_at->seconds(), f.baseline_after, f.candidate_after, f.assigned_candidate_after));
  }
}

}  // namespace fleetplan
