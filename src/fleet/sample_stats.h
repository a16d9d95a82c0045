// Summary statistics of measured and simulated samples, as the replays of measured runs
// (fidelity.cc, bench_validation.cc) report them; their percentiles are
// metrics/percentile.h's InterpolatedPercentile. Internal to the fleet layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace fleetplan::fleet_internal {

// 0 for no samples.
inline double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// Four decimals, for figures written to JSON.
inline double Round4(double x) { return std::round(x * 1e4) / 1e4; }

}  // namespace fleetplan::fleet_internal
