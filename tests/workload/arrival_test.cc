// Arrival processes: gaps follow the declared distribution (KS / moments with fixed
// seeds), constant has no drift, on-off is silent in its off windows, and the factory
// errors name the valid processes.
#include "fleetplan/workload/arrival.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "workload/test_util.h"

namespace fleetplan {
namespace {

using testing::ParseYaml;

std::unique_ptr<ArrivalProcess> Parse(const std::string& yaml) {
  auto p = ParseOpenLoopArrivals(ParseYaml("arrival: " + yaml)["arrival"]);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.status().message());
  return p.ok() ? std::move(p).value() : nullptr;
}

std::vector<double> GapsSeconds(ArrivalProcess& process, int n, uint64_t seed = 11) {
  RngStream rng(seed, "workload.arrivals");
  std::vector<double> gaps;
  SimTime prev;
  for (int i = 0; i < n; ++i) {
    const SimTime t = process.Next(rng);
    EXPECT_GE(t, prev);
    gaps.push_back((t - prev).seconds());
    prev = t;
  }
  return gaps;
}

// KS distance of gaps that were rounded to whole nanoseconds: P(round(X) <= k ns) =
// F(k + 0.5 ns), and the sup over a step function is attained at its steps. (With
// cv = 3, ~9% of gamma gaps are below 1 ns and round to 0: the continuous KS would
// flag that rounding, not the distribution.)
template <typename Cdf>
double KsDistanceNs(std::vector<double> seconds, Cdf cdf) {
  std::vector<int64_t> ns;
  for (double s : seconds) ns.push_back(std::llround(s * 1e9));
  std::sort(ns.begin(), ns.end());
  const auto n = static_cast<double>(ns.size());
  double d = 0;
  for (size_t i = 0; i < ns.size();) {
    size_t j = i;
    while (j < ns.size() && ns[j] == ns[i]) ++j;
    const double below = cdf((static_cast<double>(ns[i]) - 0.5) / 1e9);
    const double upto = cdf((static_cast<double>(ns[i]) + 0.5) / 1e9);
    d = std::max({d, std::abs(static_cast<double>(j) / n - upto), std::abs(static_cast<double>(i) / n - below)});
    i = j;
  }
  return d;
}

template <typename Cdf>
double KsDistance(std::vector<double> xs, Cdf cdf) {
  std::sort(xs.begin(), xs.end());
  const auto n = static_cast<double>(xs.size());
  double d = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double f = cdf(xs[i]);
    d = std::max({d, std::abs(static_cast<double>(i + 1) / n - f), std::abs(f - static_cast<double>(i) / n)});
  }
  return d;
}

double KsCritical(size_t n) { return 1.95 / std::sqrt(static_cast<double>(n)); }  // 99.9%

double Mean(const std::vector<double>& xs) {
  double s = 0;
  for (double x : xs) s += x;
  return s / static_cast<double>(xs.size());
}

double Cv(const std::vector<double>& xs) {
  const double m = Mean(xs);
  double v = 0;
  for (double x : xs) v += (x - m) * (x - m);
  return std::sqrt(v / static_cast<double>(xs.size() - 1)) / m;
}

TEST(ArrivalTest, PoissonGapsAreExponential) {
  auto p = Parse("{process: poisson, rate: 8/s}");
  ASSERT_NE(p, nullptr);
  const auto gaps = GapsSeconds(*p, 20000);
  auto expo = Exponential::Make(1.0 / 8);
  ASSERT_TRUE(expo.ok());
  EXPECT_LT(KsDistance(gaps, [&](double x) { return expo->Cdf(x); }), KsCritical(gaps.size()));
  EXPECT_NEAR(Mean(gaps), 0.125, 0.125 * 4 / std::sqrt(20000.0));
  EXPECT_DOUBLE_EQ(p->MeanRate(), 8.0);
}

TEST(ArrivalTest, GammaGapsHaveTheDeclaredMeanAndCv) {
  for (double cv : {0.5, 3.0}) {
    auto p = MakeGammaArrivals(Rate{4}, cv);
    ASSERT_TRUE(p.ok());
    const auto gaps = GapsSeconds(**p, 20000);
    auto gamma = Gamma::Make(0.25, cv);
    ASSERT_TRUE(gamma.ok());
    EXPECT_LT(KsDistanceNs(gaps, [&](double x) { return x <= 0 ? 0.0 : gamma->Cdf(x); }), KsCritical(gaps.size()))
        << cv;
    EXPECT_NEAR(Mean(gaps), 0.25, 0.25 * 4 * cv / std::sqrt(20000.0)) << cv;
    EXPECT_NEAR(Cv(gaps), cv, 0.1 * cv) << cv;
  }
}

TEST(ArrivalTest, ConstantHasNoDrift) {
  auto p = Parse("{process: constant, rate: 3/s}");
  ASSERT_NE(p, nullptr);
  RngStream rng(1, "unused");
  SimTime t;
  for (int i = 0; i < 300000; ++i) t = p->Next(rng);
  EXPECT_EQ(t, SimTime::FromNanos(100'000'000'000'000));  // 300000 arrivals at 3/s: exactly 100000 s
}

TEST(ArrivalTest, OnOffIsSilentWhenOffAndPoissonWhenOn) {
  auto p = Parse("{process: on-off, rate: 20/s, on: 10s, off: 30s}");
  ASSERT_NE(p, nullptr);
  RngStream rng(5, "workload.arrivals");
  int64_t in_on = 0;
  SimTime t;
  for (int i = 0; i < 20000; ++i) {
    t = p->Next(rng);
    const int64_t phase = t.ns() % Sec(40).ns();
    ASSERT_LT(phase, Sec(10).ns()) << "arrival at " << t.seconds() << " s falls in an off window";
    ++in_on;
  }
  // 20000 arrivals at 20/s of on-time take ~1000 s of on-time, i.e. ~100 windows.
  const double windows = t.seconds() / 40.0;
  EXPECT_NEAR(static_cast<double>(in_on) / (windows * 10.0), 20.0, 0.6);
  EXPECT_DOUBLE_EQ(p->MeanRate(), 5.0);
}

TEST(ArrivalTest, CloneStartsOverAndIsDeterministic) {
  auto p = Parse("{process: gamma, rate: 8/s, cv: 2}");
  ASSERT_NE(p, nullptr);
  const auto first = GapsSeconds(*p, 100);
  auto fresh = p->Clone();
  const auto again = GapsSeconds(*fresh, 100);
  EXPECT_EQ(first, again);
}

TEST(ArrivalTest, ErrorsNameTheValidProcesses) {
  auto p = ParseOpenLoopArrivals(ParseYaml("arrival: {process: poison, rate: 8/s}")["arrival"]);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "test.yaml:1:20: arrival.process: unknown arrival process 'poison'; did you mean 'poisson'? "
            "(valid: poisson, gamma, constant, on-off, closed-loop, trace)\n"
            "    1 | arrival: {process: poison, rate: 8/s}\n      |                    ^\n");
  auto no_cv = ParseOpenLoopArrivals(ParseYaml("arrival: {process: gamma, rate: 8/s}")["arrival"]);
  ASSERT_FALSE(no_cv.ok());
  EXPECT_NE(no_cv.status().message().find("missing required field 'cv'"), std::string::npos);
  auto extra = ParseOpenLoopArrivals(ParseYaml("arrival: {process: poisson, rate: 8/s, cv: 2}")["arrival"]);
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("cv"), std::string::npos);
  auto zero = MakePoissonArrivals(Rate{0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "expected a positive rate, got 0/s");
}

// A schedule steps the Poisson rate: 8/s for 2 minutes, a 30/s burst for 2 minutes,
// then 8/s again. The counts per segment follow the rates (Poisson: within 4 standard
// deviations), and a rate of 0 is silent.
TEST(ArrivalTest, ScheduledPoissonFollowsEachStepsRate) {
  auto p = Parse("{process: poisson, rate: 8/s, schedule: [{at: 2m, rate: 30/s}, {at: 4m, rate: 8/s}, "
                 "{at: 6m, rate: 0/s}, {at: 7m, rate: 8/s}]}");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->MeanRate(), 8.0);
  RngStream rng(5, "workload.arrivals");
  int64_t counts[5] = {0, 0, 0, 0, 0};  // [0,2m) [2m,4m) [4m,6m) [6m,7m) [7m,9m)
  SimTime prev;
  while (true) {
    const SimTime t = p->Next(rng);
    ASSERT_GE(t, prev);
    prev = t;
    const double s = t.seconds();
    if (s >= 540) break;
    counts[s < 120 ? 0 : s < 240 ? 1 : s < 360 ? 2 : s < 420 ? 3 : 4]++;
  }
  const double expected[5] = {960, 3600, 960, 0, 960};
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(static_cast<double>(counts[i]), expected[i], 4 * std::sqrt(expected[i]) + 0.5) << "segment " << i;
  }
  EXPECT_EQ(counts[3], 0);
  EXPECT_EQ(p->Describe().dump(),
            R"({"process":"poisson","rate_per_s":8.0,"schedule":[{"at":"2 min","rate_per_s":30.0},)"
            R"({"at":"4 min","rate_per_s":8.0},{"at":"6 min","rate_per_s":0.0},{"at":"7 min","rate_per_s":8.0}]})");
  // Deterministic: a clone draws the same times.
  auto a = p->Clone();
  auto b = p->Clone();
  EXPECT_EQ(GapsSeconds(*a, 500), GapsSeconds(*b, 500));
}

TEST(ArrivalTest, ScheduleErrorsAreLocated) {
  auto back = ParseOpenLoopArrivals(
      ParseYaml("arrival: {process: poisson, rate: 8/s, schedule: [{at: 2m, rate: 30/s}, {at: 1m, rate: 8/s}]}")["arrival"]);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().message().substr(0, back.status().message().find('\n')),
            "test.yaml:1:78: arrival.schedule[1].at: expected a time after 2 min (steps in increasing time, after 0), got "
            "1 min");
  auto negative =
      ParseOpenLoopArrivals(ParseYaml("arrival: {process: poisson, rate: 8/s, schedule: [{at: 2m, rate: -1/s}]}")["arrival"]);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("schedule[0].rate"), std::string::npos) << negative.status().message();
  auto key = ParseOpenLoopArrivals(
      ParseYaml("arrival: {process: poisson, rate: 8/s, schedule: [{at: 2m, rates: 30/s}]}")["arrival"]);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().message().substr(0, key.status().message().find('\n')),
            "test.yaml:1:60: arrival.schedule[0]: unknown field 'rates'; did you mean 'rate'? (valid: at, rate)");
}

}  // namespace
}  // namespace fleetplan
