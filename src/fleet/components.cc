// The fleet component registry (component.h): one row per feature, in the order the
// kernel calls them. A new feature is a new component and one row here.
#include <fmt/format.h>

#include "fleetplan/fleet/adapter_component.h"
#include "fleetplan/fleet/admission.h"
#include "fleetplan/fleet/autoscaler.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/disaggregation.h"
#include "fleetplan/fleet/invalidations.h"
#include "fleetplan/fleet/prefix_beliefs.h"
#include "fleetplan/fleet/replica_loss.h"
#include "fleetplan/fleet/replication.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/fleet/telemetry.h"
#include "fleetplan/fleet/timeseries.h"
#include "fleetplan/fleet/traffic_split.h"

namespace fleetplan {
namespace {

bool Always(const FleetSetup&) { return true; }
bool HasPrefillPool(const FleetSetup& s) {
  for (const ReplicaSetup& r : s.replicas) {
    if (r.role == PoolRole::kPrefill) return true;
  }
  return false;
}

template <typename T>
Expected<std::unique_ptr<FleetComponent>> Make(Simulation& sim) {
  return std::unique_ptr<FleetComponent>(std::make_unique<T>(sim));
}

Expected<std::unique_ptr<FleetComponent>> MakeReplication(Simulation& sim) {
  PrefixBeliefs* beliefs = sim.find_component<PrefixBeliefs>();
  if (beliefs == nullptr) {
    return InvalidInput("hot-prefix replication needs the prefix cache and a router that reads prefixes");
  }
  return std::unique_ptr<FleetComponent>(
      std::make_unique<Replication>(sim, *beliefs, static_cast<int32_t>(sim.setup().replicas.size())));
}

}  // namespace

const std::vector<FleetComponentRow>& FleetComponents() {
  // `wanted` null: the row is built when the setup has its entry (FleetSetup::components).
  static const std::vector<FleetComponentRow> rows = {
      {"telemetry", &Always, &Make<Telemetry>},
      {"prefix-beliefs", &PrefixBeliefs::Wanted, &Make<PrefixBeliefs>},
      {kAdaptersRow, nullptr, &Make<AdapterComponent>},
      {kReplicationRow, nullptr, &MakeReplication},
      {kInvalidationsRow, nullptr, &Make<Invalidations>},
      {kAdmissionRow, nullptr, &Make<Admission>},
      {kDisaggregationRow, &HasPrefillPool, &Make<Disaggregation>},
      {kTimeSeriesRow, nullptr, &Make<TimeSeriesRecorder>},
      {kReplicaLossesRow, nullptr, &Make<ReplicaLosses>},
      {kAutoscalerRow, nullptr, &Make<Autoscaler>},
      {kTrafficSplitRow, nullptr, &TrafficSplit::Make},
  };
  return rows;
}

}  // namespace fleetplan
