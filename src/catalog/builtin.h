// The built-in catalog data (builtin_models.cc, builtin_gpus.cc, builtin_links.cc).
// Each entry names its public source in `source`; catalog.cc indexes them by name.
// Thread model: pure functions returning fresh values.
#pragma once

#include <vector>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/model.h"

namespace fleetplan::catalog_internal {

std::vector<ModelSpec> BuiltinModels();
std::vector<GpuSpec> BuiltinGpus();
std::vector<LinkSpec> BuiltinLinks();

}  // namespace fleetplan::catalog_internal
