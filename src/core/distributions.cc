// Our own distributions over RngStream; see distributions.h for the contract.
#include "fleetplan/core/distributions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <utility>

namespace fleetplan {
namespace {

// Standard normal quantile at 0.99: p99 sits this many sigmas above the median.
constexpr double kZ99 = 2.3263478740408408;

// Marsaglia-Tsang's squeeze constant (the cheap acceptance test before the log test).
constexpr double kMarsagliaTsangSqueeze = 0.0331;

// Incomplete gamma: relative accuracy at which the series / continued fraction stop,
// the floor that keeps Lentz's method away from division by zero, and an iteration cap
// that only binds for shapes beyond ~1e10 (both need O(sqrt(shape)) terms).
constexpr double kGammaEpsilon = 1e-15;
constexpr double kGammaTiny = 1e-300;
constexpr int kGammaMaxIterations = 1'000'000;

bool IsFinite(double x) { return std::isfinite(x); }

Status MustBePositive(std::string_view what, double value) {
  if (IsFinite(value) && value > 0) return Status::Ok();
  return InvalidInput(fmt::format("{}: expected a finite number > 0, got {}", what, value));
}

Status MustBeFinite(std::string_view what, double value) {
  if (IsFinite(value)) return Status::Ok();
  return InvalidInput(fmt::format("{}: expected a finite number, got {}", what, value));
}

// ln Gamma(a) for a > 0. std::lgamma may write the global `signgam`, so it is called
// only at construction (Gamma caches it) or from the free function below.
double LogGamma(double a) { return std::lgamma(a); }

// Series for P(a, x), valid and fast for x < a + 1 (Numerical Recipes "gser").
double LowerGammaSeries(double a, double x, double log_gamma_a) {
  double term = 1.0 / a;
  double sum = term;
  double ap = a;
  for (int i = 0; i < kGammaMaxIterations; ++i) {
    ap += 1.0;
    term *= x / ap;
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * kGammaEpsilon) break;
  }
  return sum * std::exp(-x + a * std::log(x) - log_gamma_a);
}

// Continued fraction for Q(a, x) = 1 - P(a, x), valid for x >= a + 1, evaluated by the
// modified Lentz method (Numerical Recipes "gcf").
double UpperGammaContinuedFraction(double a, double x, double log_gamma_a) {
  double b = x + 1.0 - a;
  double c = 1.0 / kGammaTiny;
  double d = 1.0 / b;
  double h = d;
  for (int i = 1; i <= kGammaMaxIterations; ++i) {
    const double an = -static_cast<double>(i) * (static_cast<double>(i) - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kGammaTiny) d = kGammaTiny;
    c = b + an / c;
    if (std::fabs(c) < kGammaTiny) c = kGammaTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kGammaEpsilon) break;
  }
  return std::exp(-x + a * std::log(x) - log_gamma_a) * h;
}

double LowerGammaWithLog(double a, double x, double log_gamma_a) {
  if (!(x > 0)) return 0.0;
  if (x == std::numeric_limits<double>::infinity()) return 1.0;
  if (x < a + 1.0) return LowerGammaSeries(a, x, log_gamma_a);
  return 1.0 - UpperGammaContinuedFraction(a, x, log_gamma_a);
}

// Marsaglia and Tsang (2000), "A simple method for generating gamma variables", for
// shape >= 1: returns a Gamma(shape, 1) draw.
double SampleGammaShapeAtLeastOne(double shape, RngStream& rng) {
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    const double x = SampleStandardNormal(rng);
    const double t = 1.0 + c * x;
    if (t <= 0) continue;
    const double v = t * t * t;
    const double u = rng.NextDoubleOpenZero();
    const double x2 = x * x;
    if (u < 1.0 - kMarsagliaTsangSqueeze * x2 * x2) return d * v;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace

double RegularizedLowerGamma(double a, double x) {
  FP_ASSERT(a > 0);
  return LowerGammaWithLog(a, x, LogGamma(a));
}

double SampleStandardNormal(RngStream& rng) {
  const double u1 = rng.NextDoubleOpenZero();  // (0, 1]: log(u1) is finite
  const double u2 = rng.NextDouble();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// ---- Exponential ----------------------------------------------------------------------

Expected<Exponential> Exponential::Make(double mean) {
  FP_RETURN_IF_ERROR(MustBePositive("exponential mean", mean));
  return Exponential(mean);
}

double Exponential::Sample(RngStream& rng) const {
  return -mean_ * std::log(rng.NextDoubleOpenZero());
}

double Exponential::Cdf(double x) const {
  if (!(x > 0)) return 0.0;
  return -std::expm1(-x / mean_);
}

// ---- Gamma ----------------------------------------------------------------------------

Expected<Gamma> Gamma::Make(double mean, double cv) {
  FP_RETURN_IF_ERROR(MustBePositive("gamma mean", mean));
  FP_RETURN_IF_ERROR(MustBePositive("gamma cv", cv));
  const double shape = 1.0 / (cv * cv);
  if (!std::isnormal(shape) || !std::isnormal(mean / shape)) {
    return InvalidInput(
        fmt::format("gamma cv: expected a value whose shape 1/cv^2 = {} and scale mean/shape are "
                    "positive normal doubles, got cv {} with mean {}",
                    shape, cv, mean));
  }
  return Gamma(mean, cv);
}

Gamma::Gamma(double mean, double cv)
    : mean_(mean),
      cv_(cv),
      shape_(1.0 / (cv * cv)),
      scale_(mean / shape_),
      log_gamma_shape_(LogGamma(shape_)) {}

double Gamma::Sample(RngStream& rng) const {
  if (shape_ >= 1.0) return scale_ * SampleGammaShapeAtLeastOne(shape_, rng);
  // Boost for shape < 1: G(k) = G(k + 1) * U^(1/k), computed in logs so that a tiny
  // shape underflows gracefully to 0 instead of producing NaN.
  const double boosted = SampleGammaShapeAtLeastOne(shape_ + 1.0, rng);
  const double u = rng.NextDoubleOpenZero();
  return scale_ * boosted * std::exp(std::log(u) / shape_);
}

double Gamma::Cdf(double x) const {
  return LowerGammaWithLog(shape_, x / scale_, log_gamma_shape_);
}

// ---- Lognormal ------------------------------------------------------------------------

Expected<Lognormal> Lognormal::FromMedianP99(double median, double p99) {
  FP_RETURN_IF_ERROR(MustBePositive("lognormal median", median));
  FP_RETURN_IF_ERROR(MustBePositive("lognormal p99", p99));
  if (!(p99 > median)) {
    return InvalidInput(
        fmt::format("lognormal p99: expected a value > median {}, got {}", median, p99));
  }
  const double mu = std::log(median);
  const double sigma = (std::log(p99) - mu) / kZ99;
  if (!(sigma > 0)) {  // p99 within rounding of the median: no spread left after log()
    return InvalidInput(fmt::format(
        "lognormal p99: expected a value distinguishable from median {} after log(), got {}",
        median, p99));
  }
  return Lognormal(mu, sigma);
}

double Lognormal::Sample(RngStream& rng) const {
  return std::exp(mu_ + sigma_ * SampleStandardNormal(rng));
}

double Lognormal::mean() const { return std::exp(mu_ + 0.5 * sigma_ * sigma_); }

double Lognormal::Cdf(double x) const {
  if (!(x > 0)) return 0.0;
  return 0.5 * std::erfc(-(std::log(x) - mu_) / (sigma_ * std::numbers::sqrt2));
}

// ---- Uniform --------------------------------------------------------------------------

Expected<Uniform> Uniform::Make(double lo, double hi) {
  FP_RETURN_IF_ERROR(MustBeFinite("uniform lo", lo));
  FP_RETURN_IF_ERROR(MustBeFinite("uniform hi", hi));
  if (!(hi >= lo)) {
    return InvalidInput(fmt::format("uniform hi: expected a value >= lo {}, got {}", lo, hi));
  }
  if (!IsFinite(hi - lo)) {
    return InvalidInput(fmt::format(
        "uniform: expected hi - lo to be a finite number, got lo {} and hi {}", lo, hi));
  }
  return Uniform(lo, hi);
}

double Uniform::Sample(RngStream& rng) const {
  const double x = lo_ + (hi_ - lo_) * rng.NextDouble();
  // Rounding of lo + width * u can land on hi; keep the documented half-open range.
  return (x < hi_ || lo_ == hi_) ? x : std::nextafter(hi_, lo_);
}

double Uniform::Cdf(double x) const {
  if (x < lo_) return 0.0;
  if (x >= hi_) return 1.0;
  return (x - lo_) / (hi_ - lo_);
}

// ---- Zipf -----------------------------------------------------------------------------

Expected<Zipf> Zipf::Make(int64_t n, double s) {
  if (n < 1) return InvalidInput(fmt::format("zipf n: expected an integer >= 1, got {}", n));
  if (n > kMaxRanks) {
    return InvalidInput(fmt::format(
        "zipf n: expected at most {} ranks (the sampling table holds n doubles), got {}", kMaxRanks,
        n));
  }
  if (!IsFinite(s) || s < 0) {
    return InvalidInput(fmt::format("zipf s: expected a finite number >= 0, got {}", s));
  }
  std::vector<double> cdf(static_cast<size_t>(n));
  double total = 0.0;
  for (int64_t k = 1; k <= n; ++k) {
    total += std::pow(static_cast<double>(k), -s);
    cdf[static_cast<size_t>(k - 1)] = total;
  }
  for (double& c : cdf) c /= total;
  cdf.back() = 1.0;  // exact, so that every u in [0, 1) finds a rank
  return Zipf(std::make_shared<const std::vector<double>>(std::move(cdf)), s);
}

int64_t Zipf::Sample(RngStream& rng) const {
  const double u = rng.NextDouble();
  const auto it = std::upper_bound(cdf_->begin(), cdf_->end(), u);
  FP_ASSERT(it != cdf_->end());
  return static_cast<int64_t>(it - cdf_->begin()) + 1;
}

double Zipf::Probability(int64_t rank) const {
  if (rank < 1 || rank > n()) return 0.0;
  const auto i = static_cast<size_t>(rank - 1);
  return i == 0 ? (*cdf_)[0] : (*cdf_)[i] - (*cdf_)[i - 1];
}

// ---- Empirical ------------------------------------------------------------------------

Expected<Empirical> Empirical::Make(std::vector<double> values) {
  if (values.empty())
    return InvalidInput("empirical values: expected at least one value, got none");
  for (size_t i = 0; i < values.size(); ++i) {
    if (!IsFinite(values[i])) {
      return InvalidInput(
          fmt::format("empirical values[{}]: expected a finite number, got {}", i, values[i]));
    }
  }
  std::sort(values.begin(), values.end());
  // Sum of v / n rather than (sum of v) / n: finite for any finite inputs.
  const double n = static_cast<double>(values.size());
  const double mean = std::accumulate(values.begin(), values.end(), 0.0,
                                      [n](double acc, double v) { return acc + v / n; });
  return Empirical(std::make_shared<const std::vector<double>>(std::move(values)), mean);
}

double Empirical::Sample(RngStream& rng) const {
  return (*sorted_)[static_cast<size_t>(rng.NextBelow(sorted_->size()))];
}

double Empirical::Cdf(double x) const {
  const auto at_or_below = std::upper_bound(sorted_->begin(), sorted_->end(), x) - sorted_->begin();
  return static_cast<double>(at_or_below) / static_cast<double>(sorted_->size());
}

}  // namespace fleetplan
