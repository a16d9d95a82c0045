// Distributions: parameter validation (exact messages), golden first draws, the number
// of stream draws per sample, the incomplete gamma function against closed forms, and
// statistical checks of every sampler against its analytic law.
//
// Statistical method (fixed seeds, so every check is deterministic):
//  - Moments: the sample mean must lie within 5 standard errors, sqrt(var / N), of the
//    analytic mean, and the unbiased sample variance within 5 standard errors,
//    sqrt((mu4 - var^2) / N) with mu4 the analytic fourth central moment, of the analytic
//    variance. Under the normal approximation a 5-SE miss has probability ~6e-7.
//  - Kolmogorov-Smirnov: D_N = sup |F_N(x) - F(x)| against Cdf(); reject at
//    alpha = 0.001 when D_N > c / sqrt(N), c = sqrt(-ln(alpha / 2) / 2) = 1.94947
//    (asymptotic Kolmogorov distribution; accurate for N in the thousands).
//  - Discrete laws (Zipf, Empirical, bounded integers): Pearson chi-square against the
//    exact probabilities, critical values at alpha = 0.001 from the chi-square table
//    (cross-checked below with RegularizedLowerGamma).
#include "fleetplan/core/distributions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

namespace fleetplan {
namespace {

constexpr int kSamples = 20000;
constexpr double kStandardErrors = 5.0;
constexpr double kKsCoefficientAlpha001 = 1.94947;  // sqrt(-ln(0.0005) / 2)
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Chi-square critical values at alpha = 0.001 by degrees of freedom.
constexpr double kChiSquare001Df3 = 16.266;
constexpr double kChiSquare001Df4 = 18.467;
constexpr double kChiSquare001Df9 = 27.877;
constexpr double kChiSquare001Df49 = 85.351;

template <typename Dist>
std::vector<double> SampleMany(const Dist& dist, RngStream rng, int n = kSamples) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(static_cast<double>(dist.Sample(rng)));
  return out;
}

struct Moments {
  double mean;
  double variance;  // unbiased
};

Moments SampleMoments(const std::vector<double>& xs) {
  const double n = static_cast<double>(xs.size());
  double mean = 0;
  for (double x : xs) mean += x / n;
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return {mean, ss / (n - 1)};
}

// Checks mean and variance against the analytic values; mu4 is the analytic fourth
// central moment (sets the standard error of the sample variance).
void ExpectMoments(const std::vector<double>& xs, double mean, double variance, double mu4) {
  const double n = static_cast<double>(xs.size());
  const Moments m = SampleMoments(xs);
  EXPECT_NEAR(m.mean, mean, kStandardErrors * std::sqrt(variance / n)) << "sample mean";
  EXPECT_NEAR(m.variance, variance, kStandardErrors * std::sqrt((mu4 - variance * variance) / n))
      << "sample variance";
}

double KsStatistic(std::vector<double> xs, const std::function<double(double)>& cdf) {
  std::sort(xs.begin(), xs.end());
  const double n = static_cast<double>(xs.size());
  double d = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double f = cdf(xs[i]);
    d = std::max(d, static_cast<double>(i + 1) / n - f);
    d = std::max(d, f - static_cast<double>(i) / n);
  }
  return d;
}

double KsCritical(size_t n) { return kKsCoefficientAlpha001 / std::sqrt(static_cast<double>(n)); }

template <typename Dist>
void ExpectKsPasses(const Dist& dist, const std::vector<double>& xs) {
  EXPECT_LT(KsStatistic(xs, [&](double x) { return dist.Cdf(x); }), KsCritical(xs.size()));
}

double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probabilities,
                 int total) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probabilities[i] * total;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

// How many NextU64 draws one call of `sample` consumed: the stream must then equal a
// copy advanced by exactly that many raw draws.
int DrawsConsumed(const std::function<void(RngStream&)>& sample) {
  RngStream used(42, "draw-count");
  sample(used);
  RngStream raw(42, "draw-count");
  for (int k = 0; k < 16; ++k) {
    RngStream probe_used = used;
    RngStream probe_raw = raw;
    if (probe_used.NextU64() == probe_raw.NextU64()) return k;
    raw.NextU64();
  }
  return -1;
}

// ---- Validation: exact messages, code 3.

template <typename T>
void ExpectInvalid(const Expected<T>& made, const std::string& message) {
  ASSERT_FALSE(made.ok()) << "expected: " << message;
  EXPECT_EQ(made.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(made.status().exit_code(), 3);
  EXPECT_EQ(made.status().message(), message);
}

TEST(DistributionValidation, Exponential) {
  ExpectInvalid(Exponential::Make(0), "exponential mean: expected a finite number > 0, got 0");
  ExpectInvalid(Exponential::Make(-1.5),
                "exponential mean: expected a finite number > 0, got -1.5");
  ExpectInvalid(Exponential::Make(kNaN), "exponential mean: expected a finite number > 0, got nan");
  ExpectInvalid(Exponential::Make(kInf), "exponential mean: expected a finite number > 0, got inf");
  EXPECT_TRUE(Exponential::Make(1e-9).ok());
}

TEST(DistributionValidation, Gamma) {
  ExpectInvalid(Gamma::Make(0, 1), "gamma mean: expected a finite number > 0, got 0");
  ExpectInvalid(Gamma::Make(1, 0), "gamma cv: expected a finite number > 0, got 0");
  ExpectInvalid(Gamma::Make(1, -0.5), "gamma cv: expected a finite number > 0, got -0.5");
  ExpectInvalid(Gamma::Make(1, kNaN), "gamma cv: expected a finite number > 0, got nan");
  ExpectInvalid(Gamma::Make(kInf, 1), "gamma mean: expected a finite number > 0, got inf");
  ExpectInvalid(Gamma::Make(1, 1e200),
                "gamma cv: expected a value whose shape 1/cv^2 = 0 and scale mean/shape are "
                "positive normal doubles, got cv 1e+200 with mean 1");
  EXPECT_TRUE(Gamma::Make(1, 100).ok());
}

TEST(DistributionValidation, Lognormal) {
  ExpectInvalid(Lognormal::FromMedianP99(5, 3),
                "lognormal p99: expected a value > median 5, got 3");
  ExpectInvalid(Lognormal::FromMedianP99(5, 5),
                "lognormal p99: expected a value > median 5, got 5");
  ExpectInvalid(Lognormal::FromMedianP99(0, 3),
                "lognormal median: expected a finite number > 0, got 0");
  ExpectInvalid(Lognormal::FromMedianP99(1e300, std::nextafter(1e300, 2e300)),
                "lognormal p99: expected a value distinguishable from median 1e+300 after log(), "
                "got 1.0000000000000002e+300");
  ExpectInvalid(Lognormal::FromMedianP99(1, kInf),
                "lognormal p99: expected a finite number > 0, got inf");
}

TEST(DistributionValidation, Uniform) {
  ExpectInvalid(Uniform::Make(2, 1), "uniform hi: expected a value >= lo 2, got 1");
  ExpectInvalid(Uniform::Make(kNaN, 1), "uniform lo: expected a finite number, got nan");
  ExpectInvalid(Uniform::Make(0, -kInf), "uniform hi: expected a finite number, got -inf");
  ExpectInvalid(Uniform::Make(-1e308, 1e308),
                "uniform: expected hi - lo to be a finite number, got lo -1e+308 and hi 1e+308");
  EXPECT_TRUE(Uniform::Make(3, 3).ok());
}

TEST(DistributionValidation, Zipf) {
  ExpectInvalid(Zipf::Make(0, 1), "zipf n: expected an integer >= 1, got 0");
  ExpectInvalid(Zipf::Make(-4, 1), "zipf n: expected an integer >= 1, got -4");
  ExpectInvalid(Zipf::Make(Zipf::kMaxRanks + 1, 1),
                "zipf n: expected at most 16777216 ranks (the sampling table holds n doubles), "
                "got 16777217");
  ExpectInvalid(Zipf::Make(10, -1), "zipf s: expected a finite number >= 0, got -1");
  ExpectInvalid(Zipf::Make(10, kNaN), "zipf s: expected a finite number >= 0, got nan");
}

TEST(DistributionValidation, Empirical) {
  ExpectInvalid(Empirical::Make({}), "empirical values: expected at least one value, got none");
  ExpectInvalid(Empirical::Make({1, kNaN}),
                "empirical values[1]: expected a finite number, got nan");
  ExpectInvalid(Empirical::Make({1, 2, -kInf}),
                "empirical values[2]: expected a finite number, got -inf");
}

// ---- Golden first draws from RngStream(42, "test"): a change here changes outputs.

template <typename F>
std::vector<double> FirstFour(F sample) {
  RngStream rng(42, "test");
  std::vector<double> out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<double>(sample(rng)));
  return out;
}

TEST(DistributionGolden, FirstDrawsOfEachDistribution) {
  using V = std::vector<double>;
  EXPECT_EQ(FirstFour([](RngStream& r) { return SampleStandardNormal(r); }),
            (V{-1.9769743671089981, 1.0601093418206777, 0.90309364946608717, -2.4118692105287685}));
  const Exponential exp = *Exponential::Make(2.0);
  EXPECT_EQ(FirstFour([&](RngStream& r) { return exp.Sample(r); }),
            (V{4.0749196121293529, 1.5202569622236861, 1.1603992533422374, 7.1224876090279192}));
  const Gamma gamma_low_cv = *Gamma::Make(3.0, 0.5);
  EXPECT_EQ(FirstFour([&](RngStream& r) { return gamma_low_cv.Sample(r); }),
            (V{0.77580414486576621, 0.52966190358099619, 0.53696735356877001, 2.6667559941647627}));
  const Gamma gamma_high_cv = *Gamma::Make(3.0, 2.0);
  EXPECT_EQ(
      FirstFour([&](RngStream& r) { return gamma_high_cv.Sample(r); }),
      (V{2.168270727281878e-07, 1.9052744063356293, 0.0014581072037527759, 0.13358422531929509}));
  const Lognormal lognormal = *Lognormal::FromMedianP99(100, 1000);
  EXPECT_EQ(FirstFour([&](RngStream& r) { return lognormal.Sample(r); }),
            (V{14.131267268929706, 285.55963998907697, 244.45691305073652, 9.1883587104243052}));
  const Uniform uniform = *Uniform::Make(-1, 3);
  EXPECT_EQ(
      FirstFour([&](RngStream& r) { return uniform.Sample(r); }),
      (V{-0.47856228445069915, 0.8704253782688296, 1.2391464282951139, -0.88638610254138905}));
  const Zipf zipf = *Zipf::Make(100, 1.1);
  EXPECT_EQ(FirstFour([&](RngStream& r) { return zipf.Sample(r); }), (V{1, 5, 7, 1}));
  const Empirical empirical = *Empirical::Make({5, 1, 2.5, 9, 7});
  EXPECT_EQ(FirstFour([&](RngStream& r) { return empirical.Sample(r); }), (V{1, 5, 5, 1}));
}

TEST(DistributionDraws, EachSampleConsumesTheDocumentedNumberOfDraws) {
  const Exponential exp = *Exponential::Make(1);
  const Lognormal lognormal = *Lognormal::FromMedianP99(1, 10);
  const Uniform uniform = *Uniform::Make(0, 1);
  const Zipf zipf = *Zipf::Make(1000, 1);
  const Empirical empirical = *Empirical::Make({1, 2, 3});
  EXPECT_EQ(DrawsConsumed([](RngStream& r) { SampleStandardNormal(r); }), 2);
  EXPECT_EQ(DrawsConsumed([&](RngStream& r) { exp.Sample(r); }), 1);
  EXPECT_EQ(DrawsConsumed([&](RngStream& r) { lognormal.Sample(r); }), 2);
  EXPECT_EQ(DrawsConsumed([&](RngStream& r) { uniform.Sample(r); }), 1);
  EXPECT_EQ(DrawsConsumed([&](RngStream& r) { zipf.Sample(r); }), 1);
  EXPECT_EQ(DrawsConsumed([&](RngStream& r) { empirical.Sample(r); }), 1);
}

// ---- Incomplete gamma against closed forms.

// P(a, x) for integer a: 1 - e^-x * sum_{k < a} x^k / k! (the Poisson tail), summed
// with terms computed in logs.
double IntegerShapeLowerGamma(int a, double x) {
  double tail = 0;
  for (int k = 0; k < a; ++k) {
    tail += std::exp(-x + k * std::log(x) - std::lgamma(k + 1.0));
  }
  return 1.0 - tail;
}

TEST(RegularizedLowerGamma, MatchesThePoissonTailForIntegerShapes) {
  for (int a : {1, 2, 5, 20, 100}) {
    for (double x : {0.01, 0.5, 1.0, 3.0, 7.5, 19.0, 25.0, 80.0, 100.0, 130.0}) {
      EXPECT_NEAR(RegularizedLowerGamma(a, x), IntegerShapeLowerGamma(a, x), 1e-12)
          << "a=" << a << " x=" << x;
    }
  }
}

TEST(RegularizedLowerGamma, MatchesErfForHalfIntegerShapes) {
  for (double x : {1e-6, 0.1, 0.7, 1.5, 2.0, 4.0, 12.0}) {
    const double r = std::sqrt(x);
    EXPECT_NEAR(RegularizedLowerGamma(0.5, x), std::erf(r), 1e-13) << x;
    EXPECT_NEAR(RegularizedLowerGamma(1.5, x),
                std::erf(r) - 2 * r * std::exp(-x) / std::sqrt(std::numbers::pi), 1e-13)
        << x;
  }
}

TEST(RegularizedLowerGamma, EdgesAndMonotonicity) {
  EXPECT_EQ(RegularizedLowerGamma(2, 0), 0.0);
  EXPECT_EQ(RegularizedLowerGamma(2, -1), 0.0);
  EXPECT_EQ(RegularizedLowerGamma(2, kInf), 1.0);
  double previous = 0;
  for (double x = 0.05; x < 40; x += 0.05) {
    const double p = RegularizedLowerGamma(7.3, x);
    ASSERT_GE(p, previous) << x;
    ASSERT_LE(p, 1.0) << x;
    previous = p;
  }
}

TEST(RegularizedLowerGamma, ConfirmsTheChiSquareCriticalValuesUsedHere) {
  // The chi-square CDF with k degrees of freedom is P(k/2, x/2); the table values are
  // rounded to 3 decimals, hence the tolerance.
  EXPECT_NEAR(1 - RegularizedLowerGamma(1.5, kChiSquare001Df3 / 2), 0.001, 1e-6);
  EXPECT_NEAR(1 - RegularizedLowerGamma(2.0, kChiSquare001Df4 / 2), 0.001, 1e-6);
  EXPECT_NEAR(1 - RegularizedLowerGamma(4.5, kChiSquare001Df9 / 2), 0.001, 1e-6);
  EXPECT_NEAR(1 - RegularizedLowerGamma(24.5, kChiSquare001Df49 / 2), 0.001, 1e-6);
}

// ---- Standard normal.

TEST(StandardNormal, MomentsAndKs) {
  const std::vector<double> xs = [] {
    RngStream rng(7, "normal");
    std::vector<double> out;
    for (int i = 0; i < kSamples; ++i) out.push_back(SampleStandardNormal(rng));
    return out;
  }();
  ExpectMoments(xs, 0, 1, 3);
  EXPECT_LT(KsStatistic(xs, [](double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }),
            KsCritical(xs.size()));
}

// ---- Exponential.

TEST(Exponential, MomentsKsAndCdf) {
  const Exponential dist = *Exponential::Make(2.5);
  const std::vector<double> xs = SampleMany(dist, RngStream(7, "exponential"));
  const double m = dist.mean();
  ExpectMoments(xs, m, m * m, 9 * m * m * m * m);
  ExpectKsPasses(dist, xs);
  EXPECT_NEAR(dist.Cdf(m * std::numbers::ln2), 0.5, 1e-15);
  EXPECT_EQ(dist.Cdf(0), 0.0);
  EXPECT_EQ(dist.Cdf(-1), 0.0);
  EXPECT_GT(*std::min_element(xs.begin(), xs.end()), -1e-300);  // never negative
}

// ---- Gamma.

class GammaByCv : public ::testing::TestWithParam<double> {};

TEST_P(GammaByCv, MomentsAndKs) {
  const double cv = GetParam();
  const Gamma dist = *Gamma::Make(4.0, cv);
  EXPECT_DOUBLE_EQ(dist.shape(), 1 / (cv * cv));
  EXPECT_DOUBLE_EQ(dist.shape() * dist.scale(), 4.0);
  const std::vector<double> xs = SampleMany(dist, RngStream(7, "gamma"));
  const double k = dist.shape();
  const double theta = dist.scale();
  ExpectMoments(xs, k * theta, k * theta * theta, 3 * k * (k + 2) * std::pow(theta, 4));
  ExpectKsPasses(dist, xs);
  for (double x : xs) ASSERT_GE(x, 0.0);
}

// cv < 1: shape > 1 (Marsaglia-Tsang directly); cv = 1: the exponential; cv > 1: the
// U^(1/k) boost.
INSTANTIATE_TEST_SUITE_P(Shapes, GammaByCv, ::testing::Values(0.1, 0.25, 0.5, 1.0, 1.5, 3.0));

TEST(Gamma, CvOneIsTheExponential) {
  const Gamma gamma = *Gamma::Make(3, 1);
  const Exponential exp = *Exponential::Make(3);
  for (double x : {0.01, 0.5, 3.0, 9.0, 40.0}) EXPECT_NEAR(gamma.Cdf(x), exp.Cdf(x), 1e-14) << x;
}

TEST(Gamma, TinyCvConcentratesAtTheMean) {
  const Gamma dist = *Gamma::Make(10, 1e-3);  // shape 1e6
  RngStream rng(7, "gamma-tiny-cv");
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR(dist.Sample(rng), 10, 10 * 1e-3 * 6);
  EXPECT_NEAR(dist.Cdf(10), 0.5, 1e-3);  // median -> mean as shape grows
}

TEST(Gamma, HugeCvStaysFiniteAndNonNegative) {
  const Gamma dist = *Gamma::Make(1, 100);  // shape 1e-4: almost all mass underflows to 0
  RngStream rng(7, "gamma-huge-cv");
  for (int i = 0; i < 1000; ++i) {
    const double x = dist.Sample(rng);
    ASSERT_TRUE(std::isfinite(x));
    ASSERT_GE(x, 0.0);
  }
}

// ---- Lognormal.

TEST(Lognormal, ParametersFromMedianAndP99) {
  const Lognormal dist = *Lognormal::FromMedianP99(100, 1000);
  EXPECT_DOUBLE_EQ(dist.mu(), std::log(100.0));
  EXPECT_DOUBLE_EQ(dist.sigma(), std::log(10.0) / 2.3263478740408408);
  EXPECT_NEAR(dist.Cdf(100), 0.5, 1e-15);
  EXPECT_NEAR(dist.Cdf(1000), 0.99, 1e-12);
  EXPECT_EQ(dist.Cdf(0), 0.0);
}

TEST(Lognormal, MomentsAndKs) {
  const Lognormal dist = *Lognormal::FromMedianP99(50, 200);
  const std::vector<double> xs = SampleMany(dist, RngStream(7, "lognormal"));
  const double s2 = dist.sigma() * dist.sigma();
  const double variance = (std::exp(s2) - 1) * std::exp(2 * dist.mu() + s2);
  const double kurtosis = std::exp(4 * s2) + 2 * std::exp(3 * s2) + 3 * std::exp(2 * s2) - 3;
  EXPECT_DOUBLE_EQ(dist.mean(), std::exp(dist.mu() + s2 / 2));
  ExpectMoments(xs, dist.mean(), variance, kurtosis * variance * variance);
  ExpectKsPasses(dist, xs);
}

// ---- Uniform.

TEST(Uniform, MomentsKsAndRange) {
  const Uniform dist = *Uniform::Make(-2, 6);
  const std::vector<double> xs = SampleMany(dist, RngStream(7, "uniform"));
  const double width = 8;
  ExpectMoments(xs, dist.mean(), width * width / 12, std::pow(width, 4) / 80);
  ExpectKsPasses(dist, xs);
  for (double x : xs) {
    ASSERT_GE(x, -2.0);
    ASSERT_LT(x, 6.0);
  }
  EXPECT_EQ(dist.Cdf(-3), 0.0);
  EXPECT_EQ(dist.Cdf(2), 0.5);
  EXPECT_EQ(dist.Cdf(6), 1.0);
}

TEST(Uniform, DegenerateRangeAlwaysGivesLo) {
  const Uniform dist = *Uniform::Make(3, 3);
  RngStream rng(7, "uniform-point");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(dist.Sample(rng), 3.0);
  EXPECT_EQ(dist.Cdf(2.999), 0.0);
  EXPECT_EQ(dist.Cdf(3), 1.0);
}

// ---- Zipf.

std::vector<int> CountRanks(const Zipf& dist, RngStream rng, int draws) {
  std::vector<int> counts(static_cast<size_t>(dist.n()), 0);
  for (int i = 0; i < draws; ++i) {
    const int64_t rank = dist.Sample(rng);
    EXPECT_GE(rank, 1);
    EXPECT_LE(rank, dist.n());
    ++counts[static_cast<size_t>(rank - 1)];
  }
  return counts;
}

std::vector<double> RankProbabilities(const Zipf& dist) {
  std::vector<double> p;
  for (int64_t k = 1; k <= dist.n(); ++k) p.push_back(dist.Probability(k));
  return p;
}

TEST(Zipf, ProbabilitiesAreNormalisedPowerLaw) {
  const Zipf dist = *Zipf::Make(50, 0.8);
  double harmonic = 0;
  for (int k = 1; k <= 50; ++k) harmonic += std::pow(k, -0.8);
  double total = 0;
  for (int k = 1; k <= 50; ++k) {
    EXPECT_NEAR(dist.Probability(k), std::pow(k, -0.8) / harmonic, 1e-15) << k;
    total += dist.Probability(k);
  }
  EXPECT_NEAR(total, 1.0, 1e-14);
  EXPECT_EQ(dist.Probability(0), 0.0);
  EXPECT_EQ(dist.Probability(51), 0.0);
}

TEST(Zipf, FrequenciesPassChiSquareTenRanks) {
  const Zipf dist = *Zipf::Make(10, 1.1);
  EXPECT_LT(ChiSquare(CountRanks(dist, RngStream(7, "zipf10"), kSamples), RankProbabilities(dist),
                      kSamples),
            kChiSquare001Df9);
}

TEST(Zipf, FrequenciesPassChiSquareFiftyRanks) {
  // Smallest expected count: P(50) * N = 0.0053 * 20000 ~ 105, well above 5.
  const Zipf dist = *Zipf::Make(50, 0.8);
  EXPECT_LT(ChiSquare(CountRanks(dist, RngStream(7, "zipf50"), kSamples), RankProbabilities(dist),
                      kSamples),
            kChiSquare001Df49);
}

TEST(Zipf, ExponentZeroIsUniformAndOneRankIsConstant) {
  const Zipf flat = *Zipf::Make(5, 0);
  for (int k = 1; k <= 5; ++k) EXPECT_NEAR(flat.Probability(k), 0.2, 1e-15);
  EXPECT_LT(ChiSquare(CountRanks(flat, RngStream(7, "zipf-flat"), kSamples),
                      RankProbabilities(flat), kSamples),
            kChiSquare001Df4);
  const Zipf single = *Zipf::Make(1, 2);
  RngStream rng(7, "zipf-one");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(single.Sample(rng), 1);
  EXPECT_EQ(single.Probability(1), 1.0);
}

TEST(Zipf, CopiesShareTheTableAndDrawAlike) {
  const Zipf a = *Zipf::Make(1000, 1.2);
  const Zipf b = a;  // NOLINT(performance-unnecessary-copy-initialization): the point
  RngStream ra(1, "z");
  RngStream rb(1, "z");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.Sample(ra), b.Sample(rb));
  EXPECT_EQ(b.n(), 1000);
  EXPECT_EQ(b.s(), 1.2);
}

// ---- Empirical.

TEST(Empirical, FrequenciesMeanAndCdf) {
  const std::vector<double> values = {1, 2, 2, 3, 10};
  const Empirical dist = *Empirical::Make(values);
  EXPECT_EQ(dist.size(), 5u);
  EXPECT_DOUBLE_EQ(dist.mean(), 3.6);
  EXPECT_EQ(dist.Cdf(0.5), 0.0);
  EXPECT_EQ(dist.Cdf(1), 0.2);
  EXPECT_EQ(dist.Cdf(2), 0.6);
  EXPECT_EQ(dist.Cdf(9.99), 0.8);
  EXPECT_EQ(dist.Cdf(10), 1.0);

  const std::vector<double> xs = SampleMany(dist, RngStream(7, "empirical"));
  const std::vector<double> distinct = {1, 2, 3, 10};
  std::vector<int> counts(distinct.size(), 0);
  for (double x : xs) {
    const auto it = std::find(distinct.begin(), distinct.end(), x);
    ASSERT_NE(it, distinct.end()) << "drew a value not in the set: " << x;
    ++counts[static_cast<size_t>(it - distinct.begin())];
  }
  EXPECT_LT(ChiSquare(counts, {0.2, 0.4, 0.2, 0.2}, kSamples), kChiSquare001Df3);

  // Population variance and fourth central moment of the five values.
  double variance = 0;
  double mu4 = 0;
  for (double v : values) {
    variance += (v - 3.6) * (v - 3.6) / 5;
    mu4 += std::pow(v - 3.6, 4) / 5;
  }
  ExpectMoments(xs, 3.6, variance, mu4);
}

TEST(Empirical, DrawsDoNotDependOnInputOrder) {
  const Empirical a = *Empirical::Make({3, 1, 2, 8});
  const Empirical b = *Empirical::Make({8, 2, 1, 3});
  RngStream ra(1, "e");
  RngStream rb(1, "e");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.Sample(ra), b.Sample(rb));
}

TEST(Empirical, SingleValueIsConstantAndHugeValuesKeepAFiniteMean) {
  const Empirical one = *Empirical::Make({4.5});
  RngStream rng(1, "e1");
  for (int i = 0; i < 50; ++i) ASSERT_EQ(one.Sample(rng), 4.5);
  const Empirical huge = *Empirical::Make({1.5e308, 1.5e308});
  EXPECT_EQ(huge.mean(), 1.5e308);
}

}  // namespace
}  // namespace fleetplan
