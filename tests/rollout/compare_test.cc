// Canary comparisons: the Mann-Whitney U test against reference values, verdicts by
// direction and tolerance, no-data holds (NaN, empty, all errored, too few), and strata
// that disagree with the aggregate (Simpson's paradox) hold.
#include "fleetplan/rollout/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

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

// A policy with the defaults of MetricPolicy besides these.
MetricPolicy Policy(std::string name, Better better = Better::kLower, double tolerance = 0.05) {
  MetricPolicy p;
  p.name = std::move(name);
  p.better = better;
  p.tolerance = tolerance;
  return p;
}

MetricPolicy P95Policy() { return Policy("ttft_ms"); }

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
  const MetricPolicy quality = Policy("accuracy", Better::kHigher, 0.01);
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

TEST(CompareStratified, ARegressionHiddenInOneStratumRollsBackAndAStratumWithoutDataHolds) {
  // The rare long class regresses 30%; the pooled samples, mostly short, pass. The class's
  // own comparison is not confounded by the mix: its regression rolls back.
  const std::vector<StratumSamples> hidden = {
      {"short", Latencies(1, 2000, 50), Latencies(2, 2000, 50)},
      {"long", Latencies(3, 60, 650), Latencies(4, 60, 500)},
  };
  const StratifiedComparison s = CompareStratified(P95Policy(), hidden);
  EXPECT_EQ(s.aggregate.verdict, CanaryVerdict::kPass);
  EXPECT_EQ(s.strata[1].second.verdict, CanaryVerdict::kFail);
  EXPECT_EQ(s.verdict, CanaryVerdict::kFail);
  EXPECT_TRUE(s.disagree);
  EXPECT_NE(s.reason.find("ttft_ms: regressed in long, which the pooled samples hide: "), std::string::npos) << s.reason;
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

// The baseline's values with every value at or above its 90th percentile tripled: the
// median does not move, the tail triples.
std::vector<double> TailTripled(std::vector<double> v) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const double p90 = sorted[static_cast<size_t>(0.9 * static_cast<double>(sorted.size()))];
  for (double& x : v) {
    if (x >= p90) x *= 3;
  }
  return v;
}

TEST(CompareMetricStratified, AP95OnlyRegressionRollsBackNamingTheQuantile) {
  const auto base = Latencies(1, 400, 100);
  const std::vector<StratumSamples> strata = {{"interactive", TailTripled(base), base}};
  const MetricPolicy policy = Policy("ttft_ms");  // default statistics: median and p95
  const MetricVerdict v = CompareMetricStratified(policy, strata);
  ASSERT_EQ(v.statistics.size(), 2u);
  EXPECT_EQ(v.statistics[0].statistic, Statistic::kMedian);
  EXPECT_EQ(v.statistics[0].verdict, CanaryVerdict::kPass) << v.statistics[0].reason;
  EXPECT_EQ(v.statistics[1].statistic, Statistic::kP95);
  EXPECT_EQ(v.statistics[1].verdict, CanaryVerdict::kFail) << v.statistics[1].reason;
  EXPECT_EQ(v.verdict, CanaryVerdict::kFail);
  EXPECT_NE(v.reason.find("ttft_ms: p95 "), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("bootstrap 95% interval"), std::string::npos) << v.reason;
  EXPECT_NEAR(v.statistics[1].aggregate.effect, 2.0, 1e-9);  // the p95 tripled
  ASSERT_TRUE(v.statistics[1].aggregate.interval.has_value());
  EXPECT_GT(v.statistics[1].aggregate.interval->first, 0.0);
  // Tails tripled in the fast class of two: the pooled p95 (the slow class's) hides it.
  const auto slow = Latencies(9, 400, 2000);
  const std::vector<StratumSamples> mixed = {{"interactive", TailTripled(base), base}, {"research", slow, slow}};
  const MetricVerdict m = CompareMetricStratified(policy, mixed);
  EXPECT_EQ(m.verdict, CanaryVerdict::kFail) << m.reason;
  EXPECT_NE(m.reason.find("ttft_ms p95: regressed in interactive, which the pooled samples hide"), std::string::npos)
      << m.reason;
  // A median-only policy, the old default, misses it.
  MetricPolicy median_only = policy;
  median_only.statistics = {StatisticPolicy{Statistic::kMedian, Better::kLower, 0.05}};
  EXPECT_EQ(CompareMetricStratified(median_only, strata).verdict, CanaryVerdict::kPass);
}

TEST(CompareStatistic, TheBootstrapIsSeededAndDeterministic) {
  const auto base = Latencies(1, 300, 100);
  const auto cand = Latencies(2, 300, 104);
  const StatisticPolicy p99{Statistic::kP99, Better::kLower, 0.05};
  MetricPolicy policy = Policy("e2e_ms");
  const MetricComparison a = CompareStatistic(policy, p99, cand, base);
  const MetricComparison b = CompareStatistic(policy, p99, cand, base);
  ASSERT_TRUE(a.interval && b.interval);
  EXPECT_EQ(a.interval->first, b.interval->first);
  EXPECT_EQ(a.interval->second, b.interval->second);
  EXPECT_EQ(ComparisonJson(a).dump(), ComparisonJson(b).dump());
  policy.seed = 7;
  const MetricComparison c = CompareStatistic(policy, p99, cand, base);
  EXPECT_NE(c.interval->first, a.interval->first);  // another seed, other resamples
  EXPECT_EQ(c.candidate_value, a.candidate_value);  // the statistic itself does not depend on it
}

TEST(CompareStatistic, TheMeanAndTheErrorRateAreJudgedToo) {
  const auto base = Latencies(1, 400, 100);
  MetricPolicy policy = Policy("e2e_ms");
  const MetricComparison mean = CompareStatistic(policy, {Statistic::kMean, Better::kLower, 0.05},
                                                 Latencies(2, 400, 125), base);
  EXPECT_EQ(mean.verdict, CanaryVerdict::kFail) << mean.reason;
  EXPECT_NEAR(mean.effect, 0.25, 0.03);
  // 10% of the candidate's requests errored (NaN), none of the baseline's.
  std::vector<double> errored = Latencies(3, 400, 100);
  for (size_t i = 0; i < errored.size(); i += 10) errored[i] = std::numeric_limits<double>::quiet_NaN();
  const MetricComparison rate = CompareStatistic(policy, {Statistic::kErrorRate, Better::kLower, 0.01}, errored, base);
  EXPECT_EQ(rate.verdict, CanaryVerdict::kFail) << rate.reason;
  EXPECT_NEAR(rate.effect, 0.1, 1e-12);  // points
  EXPECT_NE(rate.reason.find("two-proportion"), std::string::npos) << rate.reason;
  // Within a 15-point tolerance it passes; the median of what finished did not move.
  EXPECT_EQ(CompareStatistic(policy, {Statistic::kErrorRate, Better::kLower, 0.15}, errored, base).verdict,
            CanaryVerdict::kPass);
  EXPECT_EQ(CompareMetric(policy, errored, base).verdict, CanaryVerdict::kPass);
  EXPECT_EQ(*ParseStatistic("error_rate"), Statistic::kErrorRate);
  EXPECT_FALSE(ParseStatistic("p50").ok());
}

TEST(CompareStratified, AStratumShortOfSamplesCannotVetoARollback) {
  // Every TTFT tripled; the research class has 35 of the 50 samples required.
  const auto tripled = [](std::vector<double> v) {
    for (double& x : v) x *= 3;
    return v;
  };
  const auto i = Latencies(1, 200, 50), d = Latencies(2, 130, 300), r = Latencies(3, 35, 1500);
  const std::vector<StratumSamples> strata = {
      {"interactive", tripled(i), i}, {"document", tripled(d), d}, {"research", tripled(r), r}};
  const StratifiedComparison s = CompareStratified(Policy("ttft_ms"), strata);
  EXPECT_EQ(s.verdict, CanaryVerdict::kFail) << s.reason;
  EXPECT_TRUE(s.strata[2].second.no_data);
  EXPECT_NE(s.reason.find("regressed in interactive, document"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("research short of samples (cannot veto a rollback)"), std::string::npos) << s.reason;
  // The same short stratum keeps a pass from being declared.
  const std::vector<StratumSamples> fine = {{"interactive", Latencies(4, 200, 50), i}, {"research", r, r}};
  const StratifiedComparison f = CompareStratified(Policy("ttft_ms"), fine);
  EXPECT_EQ(f.verdict, CanaryVerdict::kHold);
  EXPECT_NE(f.reason.find("no data for research"), std::string::npos) << f.reason;
  // The aggregate regresses but the only stratum with samples does not: nothing confirms it.
  const std::vector<StratumSamples> unconfirmed = {{"interactive", Latencies(5, 200, 50), i},
                                                   {"research", tripled(Latencies(6, 200, 1500)), Latencies(7, 40, 1500)}};
  const StratifiedComparison u = CompareStratified(Policy("ttft_ms"), unconfirmed);
  EXPECT_EQ(u.verdict, CanaryVerdict::kHold) << u.reason;
}

// Property: candidate and baseline drawn from one distribution roll back at no more than
// the stated false-alarm rate (alpha), with two strata and the default statistics.
TEST(CompareMetricStratified, SameDistributionPairsRollBackAtMostAtTheFalseAlarmRate) {
  constexpr int kTrials = 200;
  int rollbacks = 0, passes = 0;
  for (int t = 0; t < kTrials; ++t) {
    const uint64_t seed = 1000 + 4 * static_cast<uint64_t>(t);
    const std::vector<StratumSamples> strata = {
        {"short", Latencies(seed, 150, 50), Latencies(seed + 1, 150, 50)},
        {"long", Latencies(seed + 2, 80, 500), Latencies(seed + 3, 80, 500)},
    };
    MetricPolicy policy = Policy("ttft_ms");
    policy.tolerance = 0;  // any significant slowdown counts: the bare false-alarm rate
    policy.bootstrap_resamples = 200;
    const MetricVerdict v = CompareMetricStratified(policy, strata);
    rollbacks += v.verdict == CanaryVerdict::kFail;
    passes += v.verdict == CanaryVerdict::kPass;
  }
  EXPECT_LE(rollbacks, static_cast<int>(0.05 * kTrials)) << rollbacks << " rollbacks in " << kTrials;
  EXPECT_GT(passes, kTrials / 2);  // most of them promote
}

}  // namespace
}  // namespace fleetplan
