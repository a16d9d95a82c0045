// Limits of the sweep layer shared by its readers (docs/limits.md).
#pragma once

#include <cstdint>

namespace fleetplan::sweep_internal {

// Most points one spec may describe: a sweep larger than this is a typo, not a plan. The
// spec reader refuses more, and so does `sweep merge` for a partial's spec.
inline constexpr int64_t kMaxSweepPoints = 1'000'000;

// Largest magnitude of a figure in a partial's row (counts, rates per second,
// milliseconds, GPUs): far above any real run, and a million of them sum to a finite
// number, so a merged interval never overflows.
inline constexpr double kMaxPartialFigure = 1e12;

}  // namespace fleetplan::sweep_internal
