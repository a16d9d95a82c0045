// Latency histograms over declared, deterministic bucket edges.
//
// The edges of a metric are a fixed 1-2-5 ladder (0.1 ms .. 5,000 s) merged with every
// SLO target of that metric in every class, so each target is an edge exactly and "how
// many requests met it" can be read off the histogram without interpolation. Buckets
// are upper-inclusive, matching the objectives' "value <= target":
//
//   bucket 0: v <= e[0] | bucket i: e[i-1] < v <= e[i] | bucket n: v > e[n-1] (overflow)
//
// One edge set per metric is shared by every class, so class histograms add up.
// Thread model: value types.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

class HistogramEdges {
 public:
  HistogramEdges() = default;
  // The default ladder merged with `targets` (sorted, de-duplicated). REQUIRES: each > 0.
  static HistogramEdges WithTargets(std::span<const Duration> targets);

  const std::vector<int64_t>& edges_ns() const { return edges_ns_; }
  size_t bucket_count() const { return edges_ns_.size() + 1; }
  // The bucket of `v` (see the header comment).
  size_t BucketOf(Duration v) const;

 private:
  std::vector<int64_t> edges_ns_;
};

// The default ladder alone: 1, 2, 5 x 10^k ms for 0.1 ms .. 5,000 s.
std::span<const int64_t> DefaultLatencyEdgesNs();

}  // namespace fleetplan
