// Invalidations: prefix-cache invalidation events (workload.events) as a fleet
// component. Each applies to every replica's cache at its time, before arrivals at the
// same time (its event is pushed first). Its events are passive: one due after the last
// request has ended is dropped, so it cannot stretch the simulated span.
// Thread model: single-threaded; deterministic.
#pragma once

#include "fleetplan/fleet/component.h"

namespace fleetplan {

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kInvalidationsRow = "invalidations";

class Invalidations final : public FleetComponent {
 public:
  explicit Invalidations(Simulation& sim) : sim_(sim) {}
  std::string_view name() const override { return "invalidations"; }
  void OnStart(SimTime now) override;
  void OnEvent(const Event& e) override;

 private:
  Simulation& sim_;
};

}  // namespace fleetplan
