// The percentile definitions (metrics/percentile.h): exact values on small arrays, the
// edges (no samples, one sample, p0, p100), and where the two rank spellings differ.
#include "fleetplan/metrics/percentile.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(NearestRankPercent, IsTheCeilingOfPTimesNOverOneHundredAtLeastOne) {
  EXPECT_EQ(NearestRank(0, 5), 1);    // p0: the minimum
  EXPECT_EQ(NearestRank(1, 5), 1);    // ceil(0.05)
  EXPECT_EQ(NearestRank(20, 5), 1);   // exactly 1
  EXPECT_EQ(NearestRank(21, 5), 2);   // ceil(1.05)
  EXPECT_EQ(NearestRank(50, 4), 2);
  EXPECT_EQ(NearestRank(100, 5), 5);  // p100: the maximum
  EXPECT_EQ(NearestRank(7, 100), 7);  // integer arithmetic: exactly 7
  EXPECT_EQ(NearestRank(99, 1), 1);   // one sample
}

TEST(NearestRankFraction, IsTheCeilingOfTheDoubleProductClampedToOneToN) {
  EXPECT_EQ(NearestRankOf(0.0, 5), 1);  // clamped up to 1
  EXPECT_EQ(NearestRankOf(0.2, 5), 1);
  EXPECT_EQ(NearestRankOf(0.5, 4), 2);
  EXPECT_EQ(NearestRankOf(0.5, 5), 3);
  EXPECT_EQ(NearestRankOf(0.99, 100), 99);
  EXPECT_EQ(NearestRankOf(0.99, 101), 100);
  EXPECT_EQ(NearestRankOf(1.0, 5), 5);
  EXPECT_EQ(NearestRankOf(0.5, 1), 1);
  // 0.07 * 100 rounds to 7.000000000000001 as a double: the fraction form's rank is 8,
  // the percent form's 7. Both are kept because reports are pinned to each.
  EXPECT_EQ(NearestRankOf(0.07, 100), 8);
  EXPECT_EQ(NearestRank(7, 100), 7);
}

TEST(NearestRankValue, SortedAndSelectedAgree) {
  const std::vector<int64_t> sorted = {10, 20, 30, 40, 50};
  EXPECT_EQ(NearestRankSorted(sorted, 0.0), 10);
  EXPECT_EQ(NearestRankSorted(sorted, 0.5), 30);
  EXPECT_EQ(NearestRankSorted(sorted, 0.99), 50);
  EXPECT_EQ(NearestRankSorted(sorted, 1.0), 50);
  for (const double q : {0.0, 0.1, 0.2, 0.21, 0.5, 0.8, 0.81, 0.99, 1.0}) {
    std::vector<int64_t> shuffled = {40, 10, 50, 30, 20};
    EXPECT_EQ(NearestRankSelect(shuffled, q), NearestRankSorted(sorted, q)) << q;
  }
  std::vector<double> one = {7.5};
  EXPECT_EQ(NearestRankSelect(one, 0.0), 7.5);
  EXPECT_EQ(NearestRankSelect(one, 1.0), 7.5);
}

TEST(InterpolatedPercentile, InterpolatesBetweenClosestRanksAsNumpy) {
  const std::vector<double> v = {4, 1, 3, 2};  // sorted: 1 2 3 4
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(v, 50), 2.5);  // h = 1.5
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(v, 90), 3.7);  // h = 2.7
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile({10, 20, 30}, 25), 15);  // h = 0.5
}

TEST(InterpolatedPercentile, EdgesAreZeroForNoSamplesAndTheSampleForOne) {
  EXPECT_EQ(InterpolatedPercentile({}, 0), 0);
  EXPECT_EQ(InterpolatedPercentile({}, 50), 0);
  EXPECT_EQ(InterpolatedPercentile({}, 100), 0);
  EXPECT_EQ(InterpolatedPercentile({3.25}, 0), 3.25);
  EXPECT_EQ(InterpolatedPercentile({3.25}, 99), 3.25);
  EXPECT_EQ(InterpolatedPercentile({3.25}, 100), 3.25);
}

}  // namespace
}  // namespace fleetplan
