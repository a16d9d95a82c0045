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
bool HasAdapters(const FleetSetup& s) { return s.adapters.enabled; }
bool HasReplication(const FleetSetup& s) { return s.replication.enabled; }
bool HasAdmission(const FleetSetup& s) { return s.admission.enabled; }
bool HasInvalidations(const FleetSetup& s) { return !s.invalidations.empty(); }
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
  static const std::vector<FleetComponentRow> rows = {
      {"telemetry", &Always, &Make<Telemetry>},
      {"prefix-beliefs", &PrefixBeliefs::Wanted, &Make<PrefixBeliefs>},
      {"adapters", &HasAdapters, &Make<AdapterComponent>},
      {"replication", &HasReplication, &MakeReplication},
      {"invalidations", &HasInvalidations, &Make<Invalidations>},
      {"admission", &HasAdmission, &Make<Admission>},
      {"disaggregation", &HasPrefillPool, &Make<Disaggregation>},
      {"timeseries", &TimeSeriesRecorder::Wanted, &Make<TimeSeriesRecorder>},
      {"replica-losses", &ReplicaLosses::Wanted, &Make<ReplicaLosses>},
      {"autoscaler", &Autoscaler::Wanted, &Make<Autoscaler>},
      {"traffic-split", &TrafficSplit::Wanted, &TrafficSplit::Make},
  };
  return rows;
}

}  // namespace fleetplan
