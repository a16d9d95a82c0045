// Verification of a sized fleet: the chosen layout's fleet simulated on its own workload
// with the loss that decided its size happening mid-run (docs/capacity.md "Verified by
// simulation").
//
// A domain loss is simulated in its region: the region's replicas, at the region's peak
// rate; the lost domain's replicas fail at `loss_at` (in-flight work on them is cancelled,
// counted). A region loss is simulated on the whole fleet at the total peak rate, so the
// surviving regions take the lost region's demand. Attainment is reported per class for
// requests that arrived before the loss and after it, against the search's attainment
// targets (0.99 per SLO class when capacity was not searched).
// Thread model: pure; runs one simulation.
#pragma once

#include "fleetplan/capacity/capacity.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

Expected<Json> VerifyAfterLoss(const CapacitySpec& spec, const LayoutCapacity& chosen);

}  // namespace fleetplan
