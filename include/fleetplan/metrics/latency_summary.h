// Exact latency distributions: nearest-rank percentiles over every sample.
//
// Nearest rank (no interpolation; percentile.h, NearestRank): the p-th percentile of n
// sorted samples is the sample at 1-based rank ceil(p * n / 100). Every reported
// percentile is therefore a latency some request actually had. The mean is the integer
// sum divided by n (order-free, so it is the same however the samples arrived).
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fleetplan/core/units.h"
#include "fleetplan/metrics/percentile.h"

namespace fleetplan {

struct LatencySummary {
  int64_t count = 0;
  // All absent when count == 0.
  std::optional<Duration> p50, p90, p95, p99, max;
  std::optional<double> mean_ns;
  bool operator==(const LatencySummary&) const = default;
};

// Summarises `samples` (nanoseconds). Reorders them (selection, O(n)).
LatencySummary Summarize(std::vector<int64_t>& samples);

}  // namespace fleetplan
