#include "fleetplan/metrics/percentile.h"

#include <cmath>

namespace fleetplan {

int64_t NearestRank(int64_t p, int64_t n) {
  FP_ASSERT(p >= 0 && p <= 100 && n > 0);
  const int64_t rank = (p * n + 99) / 100;
  return std::max<int64_t>(rank, 1);
}

int64_t NearestRankOf(double q, int64_t n) {
  FP_ASSERT(q >= 0 && q <= 1 && n > 0);
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(q * static_cast<double>(n))), 1, n);
}

double InterpolatedPercentile(std::vector<double> values, double p) {
  FP_ASSERT(p >= 0 && p <= 100);
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace fleetplan
