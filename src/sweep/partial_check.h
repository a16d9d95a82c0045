// What `sweep merge` accepts from a partial result (sweep.h MergePartials): a partial is a
// file that left the process that wrote it, so its spec and every row are checked against
// what a run writes before the summary reads them — types, ranges and the arithmetic the
// spec fixes — and a forged or damaged file is a located error, never a type error deep in
// the summary, an infinite interval or a status the counts do not know.
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"

namespace fleetplan::sweep_internal {

// The partial's `spec`: each field the summary and the writers read has its type; the
// configurations are the product of the axes' value counts and the points that times the
// seeds (recomputed, not trusted), at most kMaxSweepPoints. Errors: InvalidInput
// "spec.FIELD: ..." (the caller names the file).
Status CheckPartialSpec(const Json& spec);

// One row, as point `index` of `spec` (which passed CheckPartialSpec): its configuration,
// seed and axis values are the ones the spec gives that index; its status is ok, invalid
// or failed; gpus a positive integer; attainments within [0, 1]; every other figure a
// finite number within kMaxPartialFigure. nullopt when it passes, else "FIELD: ...".
std::optional<std::string> CheckPartialRow(const Json& spec, const Json& row, int64_t index);

}  // namespace fleetplan::sweep_internal
