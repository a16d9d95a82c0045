// Summary statistics of measured and simulated samples, as the replays of measured runs
// (fidelity.cc, bench_validation.cc) report them. Internal to the fleet layer.
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

// Linear interpolation between closest ranks (numpy's default, what vLLM reports); 0 for
// no samples. p in [0, 100].
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

// Four decimals, for figures written to JSON.
inline double Round4(double x) { return std::round(x * 1e4) / 1e4; }

}  // namespace fleetplan::fleet_internal
