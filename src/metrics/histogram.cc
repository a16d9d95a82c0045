#include "fleetplan/metrics/histogram.h"

#include <algorithm>
#include <array>

#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

// 1-2-5 per decade from 0.1 ms to 5,000 s: fine enough to read p50..p99 of TPOT (tens
// of ms) and E2E (minutes) from one ladder, short enough to print (24 edges).
constexpr std::array<int64_t, 24> kDefaultEdgesNs = [] {
  std::array<int64_t, 24> edges{};
  int64_t decade = 100'000;  // 0.1 ms in ns
  size_t i = 0;
  while (i < edges.size()) {
    edges[i++] = decade;
    edges[i++] = decade * 2;
    edges[i++] = decade * 5;
    decade *= 10;
  }
  return edges;
}();

}  // namespace

std::span<const int64_t> DefaultLatencyEdgesNs() { return kDefaultEdgesNs; }

HistogramEdges HistogramEdges::WithTargets(std::span<const Duration> targets) {
  HistogramEdges h;
  h.edges_ns_.assign(kDefaultEdgesNs.begin(), kDefaultEdgesNs.end());
  for (Duration t : targets) {
    FP_ASSERT(t > Duration());
    h.edges_ns_.push_back(t.ns());
  }
  std::sort(h.edges_ns_.begin(), h.edges_ns_.end());
  h.edges_ns_.erase(std::unique(h.edges_ns_.begin(), h.edges_ns_.end()), h.edges_ns_.end());
  return h;
}

size_t HistogramEdges::BucketOf(Duration v) const {
  return static_cast<size_t>(std::lower_bound(edges_ns_.begin(), edges_ns_.end(), v.ns()) -
                             edges_ns_.begin());
}

}  // namespace fleetplan
