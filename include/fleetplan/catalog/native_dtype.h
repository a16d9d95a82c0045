// The one check of whether a GPU has a number format natively, shared by layout, fit and
// experts so that they agree on what a GPU can run.
// Thread model: pure function.
#pragma once

#include <string>
#include <string_view>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/hardware.h"

namespace fleetplan {

// Empty when `gpu` has `t` natively (GpuSpec::Supports), else "<label> has no native <t>
// for the <what> (its formats: ...)".
std::string NativeDTypeGap(const GpuSpec& gpu, std::string_view label, DType t, std::string_view what);

}  // namespace fleetplan
