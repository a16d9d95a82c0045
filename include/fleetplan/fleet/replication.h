// Replication: hot-prefix placement as a fleet component (router.replication; needs the
// prefix cache and a router that reads prefixes).
//
// A request whose prompt has a full prefix (prefix_placement.h) is routed among that
// prefix's placement — the ready members of it — by the router's policy; the first
// request of a prefix is routed among every ready serving replica and its replica
// becomes the placement. Report: `prefix_replication` (ReplicationStats::ToJson).
// Replicas that join mid-run are candidates for the free routing of unplaced prefixes;
// a placement's growth considers the replicas the fleet had at creation (the placement
// is sized then).
// Thread model: single-threaded; deterministic.
#pragma once

#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/prefix_placement.h"

namespace fleetplan {

class PrefixBeliefs;

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kReplicationRow = "replication";

class Replication final : public FleetComponent {
 public:
  // REQUIRES: beliefs outlives this (both are components of `sim`).
  Replication(Simulation& sim, PrefixBeliefs& beliefs, int32_t replicas);
  std::string_view name() const override { return "replication"; }
  const PrefixPlacement& placement() const { return placement_; }

  std::optional<RouteDecision> Route(const Request& r, SimTime now) override;
  void AddReport(Duration span, Json& report) const override;

 private:
  Simulation& sim_;
  PrefixBeliefs& beliefs_;
  PrefixPlacement placement_;
  int32_t replicas_;  // at creation: the placement's index range
};

}  // namespace fleetplan
