// Nearest-rank percentiles and the histogram edges, against a brute-force reference.
#include <algorithm>

#include <gtest/gtest.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/metrics/histogram.h"
#include "fleetplan/metrics/latency_summary.h"

namespace fleetplan {
namespace {

TEST(NearestRank, MatchesTheDefinition) {
  EXPECT_EQ(NearestRank(50, 1), 1);
  EXPECT_EQ(NearestRank(99, 1), 1);
  EXPECT_EQ(NearestRank(50, 4), 2);
  EXPECT_EQ(NearestRank(50, 5), 3);
  EXPECT_EQ(NearestRank(90, 10), 9);
  EXPECT_EQ(NearestRank(99, 100), 99);
  EXPECT_EQ(NearestRank(99, 101), 100);
  EXPECT_EQ(NearestRank(100, 7), 7);
}

TEST(Summarize, EmptyHasOnlyACount) {
  std::vector<int64_t> none;
  const LatencySummary s = Summarize(none);
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.p50, std::nullopt);
  EXPECT_EQ(s.max, std::nullopt);
  EXPECT_EQ(s.mean_ns, std::nullopt);
}

TEST(Summarize, AgreesWithSortingOnRandomSamples) {
  RngStream rng(11, "summary");
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng.NextBelow(300);
    std::vector<int64_t> v(n);
    for (auto& x : v) x = static_cast<int64_t>(rng.NextBelow(rng.NextBelow(2) ? 50 : 1'000'000'000));
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const LatencySummary s = Summarize(v);
    const auto at = [&](int64_t p) { return sorted[static_cast<size_t>(NearestRank(p, static_cast<int64_t>(n)) - 1)]; };
    ASSERT_EQ(s.count, static_cast<int64_t>(n));
    ASSERT_EQ(s.p50->ns(), at(50));
    ASSERT_EQ(s.p90->ns(), at(90));
    ASSERT_EQ(s.p95->ns(), at(95));
    ASSERT_EQ(s.p99->ns(), at(99));
    ASSERT_EQ(s.max->ns(), sorted.back());
    long double sum = 0;
    for (int64_t x : sorted) sum += static_cast<long double>(x);
    ASSERT_NEAR(*s.mean_ns, static_cast<double>(sum / static_cast<long double>(n)), 1e-6);
  }
}

TEST(Summarize, MeanDoesNotOverflow) {
  std::vector<int64_t> v(1'000, INT64_MAX / 2);
  const LatencySummary s = Summarize(v);
  EXPECT_DOUBLE_EQ(*s.mean_ns, static_cast<double>(INT64_MAX / 2));
}

TEST(HistogramEdges, DefaultLadderIsOneTwoFive) {
  const auto edges = DefaultLatencyEdgesNs();
  ASSERT_EQ(edges.size(), 24u);
  EXPECT_EQ(edges.front(), Us(100).ns());
  EXPECT_EQ(edges[3], Ms(1).ns());
  EXPECT_EQ(edges[4], Ms(2).ns());
  EXPECT_EQ(edges[5], Ms(5).ns());
  EXPECT_EQ(edges.back(), Sec(5'000).ns());
}

TEST(HistogramEdges, TargetsBecomeEdgesAndBucketsAreUpperInclusive) {
  const std::vector<Duration> targets = {Ms(600), Ms(150), Ms(600), Ms(200)};
  const HistogramEdges h = HistogramEdges::WithTargets(targets);
  const auto& e = h.edges_ns();
  EXPECT_TRUE(std::is_sorted(e.begin(), e.end()));
  EXPECT_EQ(std::adjacent_find(e.begin(), e.end()), e.end()) << "no duplicate edges";
  EXPECT_EQ(e.size(), 26u);  // 24 + 150 ms + 600 ms (200 ms was already there)
  const size_t at600 = static_cast<size_t>(std::find(e.begin(), e.end(), Ms(600).ns()) - e.begin());
  EXPECT_EQ(h.BucketOf(Ms(600)), at600);
  EXPECT_EQ(h.BucketOf(Ms(600) + Ns(1)), at600 + 1);
  EXPECT_EQ(h.BucketOf(Duration()), 0u);
  EXPECT_EQ(h.BucketOf(Sec(10'000)), e.size());  // overflow bucket
  EXPECT_EQ(h.bucket_count(), e.size() + 1);
}

}  // namespace
}  // namespace fleetplan
