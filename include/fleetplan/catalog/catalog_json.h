// JSON forms of catalog entries, for `fleetplan catalog --json` and for reports that embed
// the model or hardware they used. Every figure carries its unit in its key
// ("memory_bytes", "latency_ns"); derived values (parameter breakdown, KV elements,
// windowed layers) sit beside the declared shape under "derived".
// Thread model: pure functions.
#pragma once

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/json.h"

namespace fleetplan {

// REQUIRES: !FindModelSpecProblem(m).
Json ModelSpecJson(const ModelSpec& m);
Json GpuSpecJson(const GpuSpec& g);
Json LinkSpecJson(const LinkSpec& l);

}  // namespace fleetplan
