// Percentiles of samples: the two definitions fleetplan reports, stated once.
//
// Nearest rank (every simulated latency, wait and transfer time; rollout statistics; the
// gates' round costs and bootstrap intervals). Among n samples in ascending order
// v[1..n], the q-quantile is v[r] with
//     r = ceil(q × n), clamped to [1, n].
// No interpolation: every result is a value some sample had; q = 0 (and any q with
// q × n <= 1) gives the minimum, q = 1 the maximum. The rank has two spellings, kept
// apart because reports are pinned to each bit for bit:
//   NearestRank(p, n)    p an integer percent:  r = max(1, ceil(p × n / 100)) in exact
//                        integer arithmetic, (p × n + 99) / 100
//   NearestRankOf(q, n)  q a fraction:          r = ceil(q × n) with q × n rounded as a
//                        double (0.07 × 100 is 7.000000000000001, so r = 8 where the
//                        percent form gives 7)
//
// Linear interpolation between closest ranks (numpy's default `linear`, what vLLM's
// benchmark reports; the replays of measured runs compare against it). For p in
// [0, 100] and ascending v[0..n-1]:
//     h = p / 100 × (n − 1),  lo = floor(h),  hi = min(lo + 1, n − 1)
//     P = v[lo] + (v[hi] − v[lo]) × (h − lo)
// p = 0 gives the minimum, p = 100 the maximum, one sample gives itself, no samples 0.
//
// Layering: workload (trace statistics) sits above this layer and keeps its own
// nearest rank over value -> count tables (workload/trace_stats.h).
// Thread model: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fleetplan/core/status.h"

namespace fleetplan {

// 1-based nearest rank of percent `p` among `n` samples, integer arithmetic.
// REQUIRES: 0 <= p <= 100, n > 0.
int64_t NearestRank(int64_t p, int64_t n);

// 1-based nearest rank of fraction `q` among `n` samples, double arithmetic.
// REQUIRES: 0 <= q <= 1, n > 0.
int64_t NearestRankOf(double q, int64_t n);

// The nearest-rank q-quantile of `sorted` (ascending).
// REQUIRES: !sorted.empty(), 0 <= q <= 1.
template <typename T>
T NearestRankSorted(const std::vector<T>& sorted, double q) {
  return sorted[static_cast<size_t>(NearestRankOf(q, static_cast<int64_t>(sorted.size())) - 1)];
}

// The nearest-rank q-quantile of unsorted `values`, by selection (O(n)); reorders them.
// REQUIRES: !values.empty(), 0 <= q <= 1.
template <typename T>
T NearestRankSelect(std::vector<T>& values, double q) {
  const auto nth = values.begin() + (NearestRankOf(q, static_cast<int64_t>(values.size())) - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

// The linearly interpolated p-th percentile of `values` (any order); 0 when empty.
// REQUIRES: 0 <= p <= 100.
double InterpolatedPercentile(std::vector<double> values, double p);

}  // namespace fleetplan
