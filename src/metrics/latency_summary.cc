#include "fleetplan/metrics/latency_summary.h"

#include <algorithm>

#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

// Sum of non-negative int64 values without overflow: 1M samples of a day each exceed
// int64, so the sum is kept in 128 bits (a GCC/Clang extension, hence __extension__).
__extension__ typedef unsigned __int128 UInt128;

}  // namespace

LatencySummary Summarize(std::vector<int64_t>& samples) {
  LatencySummary s;
  s.count = static_cast<int64_t>(samples.size());
  if (samples.empty()) return s;
  // Select the ranks in increasing order; each selection only looks right of the last.
  const int64_t percentiles[] = {50, 90, 95, 99};
  std::optional<Duration>* outs[] = {&s.p50, &s.p90, &s.p95, &s.p99};
  auto begin = samples.begin();
  for (size_t i = 0; i < 4; ++i) {
    const auto nth = samples.begin() + (NearestRank(percentiles[i], s.count) - 1);
    if (nth >= begin) {
      std::nth_element(begin, nth, samples.end());
      begin = nth;
    }
    *outs[i] = Duration::Nanos(*nth);
  }
  s.max = Duration::Nanos(*std::max_element(begin, samples.end()));
  UInt128 sum = 0;
  for (int64_t v : samples) {
    FP_ASSERT(v >= 0);
    sum += static_cast<UInt128>(v);
  }
  s.mean_ns = static_cast<double>(sum) / static_cast<double>(s.count);
  return s;
}

}  // namespace fleetplan
