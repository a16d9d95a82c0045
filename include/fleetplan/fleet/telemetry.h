// Telemetry: the routers' view of the replicas (fleet component).
//
// What a router knows of a replica is its telemetry as of the last refresh — waiting
// and running requests, outstanding tokens, KV blocks used — plus what the router itself
// sent there since (requests and their tokens), plus what other components add to it
// (requests on their way to a replica that its engine does not count yet). With
// router.telemetry_delay 0 the view refreshes before every decision; otherwise a
// periodic event refreshes it every telemetry_delay while anything else is still to
// happen.
// Thread model: single-threaded; deterministic.
#pragma once

#include <vector>

#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/router.h"

namespace fleetplan {

class Telemetry final : public FleetComponent {
 public:
  explicit Telemetry(Simulation& sim);
  std::string_view name() const override { return "telemetry"; }

  // The view of `replicas` (one entry each, in order), without per-request beliefs.
  std::vector<ReplicaView> View(const std::vector<int32_t>& replicas) const;
  // A routing decision is about to be made at `now`.
  void BeforeDecision(SimTime now);
  // After the first arrival is announced: starts the periodic refresh, if any.
  void StartPeriodic(SimTime now);

  Status OnReplicaAdded(int32_t id) override;
  void OnDispatched(const Request& r, int32_t replica, int64_t tokens) override;
  void OnEvent(const Event& e) override;

 private:
  void Refresh(SimTime now);

  Simulation& sim_;
  Duration delay_;
  std::vector<ReplicaTelemetry> telemetry_;  // per replica, as of the last refresh
  std::vector<int64_t> sent_requests_;       // per replica, since the refresh
  std::vector<int64_t> sent_tokens_;
};

}  // namespace fleetplan
