// ReplicaLosses: replicas that fail at declared times, as when a failure domain (a zone,
// a rack, a region) is lost mid-run. At its time each listed replica is drained with no
// grace (Simulation::DrainReplica): it takes no more requests, and what it holds is
// given up at once as the loss's expiry says — requeued by default (clients retry, so a
// request's TTFT includes the loss), or cancelled. The kernel counts what each replica
// gave up (report.json `replicas[].drain`); this component only schedules the losses.
// Thread model: single-threaded, owned by one Simulation; deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kReplicaLossesRow = "replica-losses";

class ReplicaLosses final : public FleetComponent {
 public:
  explicit ReplicaLosses(Simulation& sim) : sim_(sim) {}
  std::string_view name() const override { return "replica-losses"; }

  void OnStart(SimTime now) override;
  void OnEvent(const Event& e) override;
  Status CheckInvariants() const override;
  void AddReport(Duration span, Json& report) const override;
  void AddSummary(Duration span, std::vector<std::string>& lines) const override;

 private:
  const std::vector<ReplicaLoss>& Losses() const {
    return *sim_.setup().components.Find<std::vector<ReplicaLoss>>(kReplicaLossesRow);
  }

  Simulation& sim_;
  Status status_ = Status::Ok();  // the first loss the kernel refused (a bug: Bind checks ids)
  int64_t lost_ = 0;              // replicas lost so far
};

}  // namespace fleetplan
