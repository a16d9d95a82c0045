// Canary comparisons: the Mann-Whitney U test against reference values, verdicts by
// direction and tolerance, no-data holds (NaN, empty, all errored, too few), and strata
// that disagree with the aggregate (Simpson's paradox) hold.
#include "fleetplan/rollout/compare.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

TEST(MannWhitney, MatchesScipyAsymptoticWithContinuityAndTies) {
  // scipy.stats.mannwhitneyu(x, y, method="asymptotic") (continuity-corrected, tie-corrected).
  const std::vector<double> x = {1, 2, 3, 4, 5}, y = {6, 7, 8, 9, 10};
  const MannWhitneyResult r = MannWhitney(x, y);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.p_value, 0.012185780355344813, 1e-12);
  const std::vector<double> a = {1, 1, 2, 3, 5, 5}, b = {2, 2, 3, 4, 6, 7, 7};
  const MannWhitneyResult t = MannWhitney(a, b);
  EXPECT_DOUBLE_EQ(t.u, 11.5);
  EXPECT_NEAR(t.p_value, 0.19357346445798274, 1e-12);
  const std::vector<double> same = {3, 3, 3};
  EXPECT_DOUBLE_EQ(MannWhitney(same, same).p_value, 1.0);
}

// Lognormal-ish latencies around `median_ms`, deterministic.
std::vector<double> Latencies(uint64_t seed, int n, double median_ms) {
  RngStream rng(seed, "latencies");
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(median_ms * std::exp(0.3 * (rng.NextDouble() + rng.NextDouble() - 1.0)));
  return v;
}

MetricPolicy P95Policy() { return MetricPolicy{"ttft_ms", Better::kLower, 0.05, 0.05, 50}; }

TEST(CompareMetric, ARegressionBeyondToleranceFailsAndAnImprovementPasses) {
  const auto base = Latencies(1, 400, 100);
  const MetricComparison slower = CompareMetric(P95Policy(), Latencies(2, 400, 120), base);
  EXPECT_EQ(slower.verdict, CanaryVerdict::kFail);
  EXPECT_NEAR(slower.effect, 0.20, 0.03);
  EXPECT_LT(slower.test.p_value, 1e-6);
  EXPECT_NE(slower.reason.find("regressed"), std::string::npos) << slower.reason;
  const MetricComparison faster = CompareMetric(P95Policy(), Latencies(3, 400, 80), base);
  EXPECT_EQ(faster.verdict, CanaryVerdict::kPass);
  EXPECT_NE(faster.reason.find("improved"), std::string::npos) << faster.reason;
  // 2% slower is significant on many samples but inside the 5% tolerance.
  const MetricComparison slight = CompareMetric(P95Policy(), Latencies(4, 4000, 102), Latencies(5, 4000, 100));
  EXPECT_EQ(slight.verdict, CanaryVerdict::kPass);
  // Higher is better (a quality score): a drop fails.
  const MetricPolicy quality{"accuracy", Better::kHigher, 0.01, 0.05, 50};
  EXPECT_EQ(CompareMetric(quality, Latencies(6, 400, 0.80), Latencies(7, 400, 0.90)).verdict, CanaryVerdict::kFail);
  EXPECT_EQ(CompareMetric(quality, Latencies(8, 400, 0.95), Latencies(9, 400, 0.90)).verdict, CanaryVerdict::kPass);
}

TEST(CompareMetric, NoDataHoldsNeverPasses) {
  const auto base = Latencies(1, 400, 100);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> empty;
  const std::vector<double> all_errored(400, nan);
  const auto few = Latencies(2, 10, 100);
  for (const auto* cand : {&empty, &all_errored, &few}) {
    const MetricComparison c = CompareMetric(P95Policy(), *cand, base);
    EXPECT_EQ(c.verdict, CanaryVerdict::kHold);
    EXPECT_TRUE(c.no_data);
    EXPECT_NE(c.reason.find("no data to decide on"), std::string::npos) << c.reason;
  }
  EXPECT_EQ(CompareMetric(P95Policy(), all_errored, base).candidate_dropped, 400);
  // NaN is dropped, never read as 0 (which would pass a "lower is better" check).
  std::vector<double> some_nan = Latencies(3, 400, 120);
  for (size_t i = 0; i < some_nan.size(); i += 2) some_nan[i] = nan;
  const MetricComparison half = CompareMetric(P95Policy(), some_nan, base);
  EXPECT_EQ(half.candidate_n, 200);
  EXPECT_EQ(half.verdict, CanaryVerdict::kFail);
  EXPECT_EQ(ComparisonJson(CompareMetric(P95Policy(), empty, base))["verdict"], "hold");
}

TEST(CompareStratified, AMixShiftThatReversesTheAggregateHolds) {
  // Short prompts are fast (50 ms), long ones slow (500 ms). The candidate is 3% faster in
  // each class but got 40% long prompts against the baseline's 10%: pooled, it looks slower.
  const std::vector<StratumSamples> strata = {
      {"short", Latencies(1, 600, 48.5), Latencies(2, 900, 50)},
      {"long", Latencies(3, 400, 485), Latencies(4, 100, 500)},
  };
  const StratifiedComparison s = CompareStratified(P95Policy(), strata);
  EXPECT_EQ(s.aggregate.verdict, CanaryVerdict::kFail);
  for (const auto& [name, c] : s.strata) EXPECT_EQ(c.verdict, CanaryVerdict::kPass) << name;
  EXPECT_TRUE(s.disagree);
  EXPECT_EQ(s.verdict, CanaryVerdict::kHold);
  EXPECT_NE(s.reason.find("Simpson's paradox"), std::string::npos) << s.reason;
}

TEST(CompareStratified, ARegressionHiddenInOneStratumHoldsAndAStratumWithoutDataHolds) {
  // The rare long class regresses 30%; the pooled samples, mostly short, pass.
  const std::vector<StratumSamples> hidden = {
      {"short", Latencies(1, 2000, 50), Latencies(2, 2000, 50)},
      {"long", Latencies(3, 60, 650), Latencies(4, 60, 500)},
  };
  const StratifiedComparison s = CompareStratified(P95Policy(), hidden);
  EXPECT_EQ(s.aggregate.verdict, CanaryVerdict::kPass);
  EXPECT_EQ(s.strata[1].second.verdict, CanaryVerdict::kFail);
  EXPECT_EQ(s.verdict, CanaryVerdict::kHold);
  EXPECT_NE(s.reason.find("the aggregate passes but long regressed"), std::string::npos) << s.reason;
  const std::vector<StratumSamples> missing = {
      {"short", Latencies(1, 600, 50), Latencies(2, 600, 50)},
      {"long", {}, Latencies(4, 100, 500)},
  };
  const StratifiedComparison m = CompareStratified(P95Policy(), missing);
  EXPECT_EQ(m.verdict, CanaryVerdict::kHold);
  EXPECT_NE(m.reason.find("no data for long"), std::string::npos) << m.reason;
  // Agreement: every stratum and the aggregate pass.
  const std::vector<StratumSamples> fine = {
      {"short", Latencies(1, 600, 50), Latencies(2, 600, 50)},
      {"long", Latencies(3, 200, 500), Latencies(4, 200, 500)},
  };
  EXPECT_EQ(CompareStratified(P95Policy(), fine).verdict, CanaryVerdict::kPass);
}

}  // namespace
}  // namespace fleetplan
