// A `fit:` section inside a gate file: the fit verb's inputs as a YAML map, resolved
// against the built-in catalog and checked by memory/fit. Internal to the gates module.
//   fit: {model: atlas-70b, gpu: h100-sxm-80g, tp: 4, context: 32768, concurrency: 64,
//         weight_dtype: fp8, kv_dtype: fp8}
// Keys: model, gpu, tp, pp, weight_dtype, kv_dtype, context, concurrency,
// gpu_memory_utilization, block_tokens; unknown keys and bad values are located errors.
#pragma once

#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/memory/fit.h"

namespace fleetplan::gates_detail {

// REQUIRES nothing; an absent node is a located "missing required field" error.
Expected<FitResult> CheckFitSection(const YamlNode& node);

}  // namespace fleetplan::gates_detail
