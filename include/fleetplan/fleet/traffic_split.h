// TrafficSplit: two revisions of a service in one fleet — the baseline's replicas and the
// candidate's — with a share of the requests sent to the candidate, and, at a declared
// moment, the candidate rolled back (fleet component; docs/rollout.md "Rollback
// exercised"). Set by callers (canary/rollback_exercise.h), never by a scenario file.
//
//   replica table   | baseline: ids [0, first_candidate) | candidate: [first_candidate, n) |
//   before rollback  request id -> SplitAssignment -> candidate or baseline replicas, each
//                    revision choosing among its own ready replicas with its own router
//   at rollback_at   every candidate replica is drained (Simulation::DrainReplica): it takes
//                    no new request; what it holds at rollback_at + grace is requeued to the
//                    baseline (grace 0: at once; a request in the step in flight when that
//                    step ends). The replicas stay in the table, gone, with their figures:
//                    the candidate's namespace is retained for inspection.
//   after rollback   every request, whatever its assignment, goes to the baseline.
//
// Assignment, exactly (so other tools can reproduce it): with
//   k    = RngStream(seed, "canary-split").seed()                      (core/rng.h)
//   u(i) = (SplitMix64(k ^ SplitMix64(i)) >> 11) * 2^-53               in [0, 1)
// request id i goes to the candidate when u(i) < share. It is a pure function of
// (seed, id): the same request is the candidate's in every fleet that sees the same
// arrivals, whatever those fleets do.
//
// Invariants (CheckInvariants): every booking is counted once, by revision and by side of
// the rollback, and the counts equal the kernel's per-replica `routed`; no booking reaches
// a candidate replica at or after the rollback.
// Thread model: single-threaded, owned by one Simulation; deterministic.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/router.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

// Which requests a share sends to the candidate (the formula above).
class SplitAssignment {
 public:
  // REQUIRES: 0 <= share <= 1.
  SplitAssignment(uint64_t seed, double share);
  double Unit(RequestId id) const;  // u(id), in [0, 1)
  bool ToCandidate(RequestId id) const { return Unit(id) < share_; }
  double share() const { return share_; }

 private:
  uint64_t key_;
  double share_;
};

struct TrafficSplitConfig {
  uint64_t seed = 0;
  double share = 0;             // the candidate's share of requests, [0, 1]
  int32_t first_candidate = 0;  // replicas of the setup below it are the baseline's
  RouterConfig baseline_router;
  RouterConfig candidate_router;
  std::optional<SimTime> rollback_at;  // none: the split runs to the end
  Duration rollback_grace;             // what a candidate replica holds then is requeued
  Json ToJson() const;
};

// What the component observed (report.json `traffic_split`).
struct TrafficSplitFigures {
  // Bookings (Simulation::BookRoute, requeues included) per revision, before and at or
  // after the rollback (all "before" when there is none).
  int64_t baseline_before = 0;
  int64_t candidate_before = 0;
  int64_t baseline_after = 0;
  int64_t candidate_after = 0;  // 0 by the invariant
  // Routing decisions for requests assigned to the candidate that went to the baseline:
  // at or after the rollback, and before it for want of a ready candidate replica.
  int64_t assigned_candidate_after = 0;
  int64_t assigned_candidate_fallback = 0;
  // When each candidate replica was gone (drained: holding nothing), in id order.
  std::vector<std::pair<int32_t, SimTime>> candidate_gone;
};

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kTrafficSplitRow = "traffic-split";

class TrafficSplit final : public FleetComponent {
 public:
  static Expected<std::unique_ptr<FleetComponent>> Make(Simulation& sim);
  std::string_view name() const override { return "traffic-split"; }

  void OnStart(SimTime now) override;
  void OnEvent(const Event& e) override;
  std::optional<RouteDecision> Route(const Request& r, SimTime now) override;
  SimTime OnRouted(const Request& r, int32_t replica, SimTime now, RouteInfo& info) override;
  void OnReplicaState(int32_t id, ReplicaState state, SimTime now) override;
  Status CheckInvariants() const override;
  void AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) override;
  void AddReport(Duration span, Json& report) const override;
  void AddSummary(Duration span, std::vector<std::string>& lines) const override;

  const TrafficSplitFigures& figures() const { return figures_; }
  bool is_candidate(int32_t replica) const { return replica >= config_.first_candidate; }

 private:
  TrafficSplit(Simulation& sim, const TrafficSplitConfig& config, std::unique_ptr<Router> baseline,
               std::unique_ptr<Router> candidate);
  bool After(SimTime now) const { return config_.rollback_at && now >= *config_.rollback_at; }

  Simulation& sim_;
  const TrafficSplitConfig& config_;
  SplitAssignment assign_;
  std::unique_ptr<Router> routers_[2];  // [0] baseline, [1] candidate
  Status status_ = Status::Ok();        // the first drain the kernel refused (a bug)
  TrafficSplitFigures figures_;
};

}  // namespace fleetplan
