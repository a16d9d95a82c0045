// Our own distributions over RngStream (see rng.h for why they are ours).
//
// Each is a small value type with Sample(RngStream&) and its analytic mean/CDF where one
// exists (tests compare sample moments and run a Kolmogorov-Smirnov check against Cdf()).
// Parameters are validated by the factory functions, which return a plain (unlocated)
// InvalidInput message of the form "<distribution> <parameter>: expected ..., got ...";
// callers that read YAML add the location and the field path.
//
//  - Exponential{mean}:              inversion, -mean * log(U), U in (0,1]
//  - Gamma{mean, cv}:                shape k = 1/cv^2, scale = mean/k; Marsaglia-Tsang
//                                    (with the U^(1/k) boost for k < 1); normal draws by
//                                    Box-Muller, one per call, never cached, so a stream's
//                                    position depends only on the stream's own draws (no
//                                    hidden state in the distribution object)
//  - Lognormal{median, p99}:         mu = ln(median), sigma = (ln(p99) - mu) / z_0.99
//                                    with z_0.99 = 2.3263478740408408
//  - Uniform{lo, hi}:                continuous on [lo, hi) (lo == hi: always lo)
//  - Zipf{n, s}:                     ranks 1..n with P(k) ~ k^-s; inverse-CDF table with
//                                    binary search (O(log n) per draw, O(n) memory)
//  - Empirical{values}:              draws one of the given values uniformly (with
//                                    repetition, i.e. the empirical distribution); the
//                                    draw does not depend on the order values were given
// Draw costs: Exponential and Uniform take one NextU64 per sample, Lognormal two,
// Empirical one (rarely more), Zipf one; Gamma a small random number (rejection).
// Floating-point results use only <cmath> (log, exp, cos, sqrt, pow, erfc, lgamma), so
// they are byte-stable wherever libm rounds those the same way (glibc does).
// Thread model: immutable after construction; Sample mutates only the stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/rng.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

// Standard normal by Box-Muller (one value per call; consumes exactly two draws).
double SampleStandardNormal(RngStream& rng);

// The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), the
// CDF of Gamma(shape a, scale 1) at x. Series for x < a + 1, Lentz continued fraction
// otherwise (Numerical Recipes' gser/gcf); about 1e-14 absolute accuracy for moderate a.
// REQUIRES: a > 0. x <= 0 (or NaN) gives 0, x = +inf gives 1.
// Not safe to call concurrently (std::lgamma may write the global signgam).
double RegularizedLowerGamma(double a, double x);

class Exponential {
 public:
  static Expected<Exponential> Make(double mean);  // mean > 0, finite
  double Sample(RngStream& rng) const;
  double mean() const { return mean_; }
  double Cdf(double x) const;
 private:
  explicit Exponential(double mean) : mean_(mean) {}
  double mean_;
};

class Gamma {
 public:
  // mean > 0, cv > 0, both finite, and shape 1/cv^2 and scale mean/shape normal doubles.
  static Expected<Gamma> Make(double mean, double cv);
  double Sample(RngStream& rng) const;
  double mean() const { return mean_; }
  double cv() const { return cv_; }
  double shape() const { return shape_; }
  double scale() const { return scale_; }
  double Cdf(double x) const;  // regularized lower incomplete gamma; thread-safe
 private:
  Gamma(double mean, double cv);
  double mean_, cv_, shape_, scale_;
  double log_gamma_shape_;  // ln Gamma(shape), computed once so Cdf is thread-safe
};

class Lognormal {
 public:
  static Expected<Lognormal> FromMedianP99(double median, double p99);  // 0 < median < p99
  double Sample(RngStream& rng) const;
  double mu() const { return mu_; }
  double sigma() const { return sigma_; }
  double mean() const;
  double Cdf(double x) const;
 private:
  Lognormal(double mu, double sigma) : mu_(mu), sigma_(sigma) {}
  double mu_, sigma_;
};

class Uniform {
 public:
  static Expected<Uniform> Make(double lo, double hi);  // lo <= hi, both and hi-lo finite
  double Sample(RngStream& rng) const;
  double mean() const { return (lo_ + hi_) / 2; }
  double Cdf(double x) const;
 private:
  Uniform(double lo, double hi) : lo_(lo), hi_(hi) {}
  double lo_, hi_;
};

class Zipf {
 public:
  // The largest n accepted: the table is n doubles (128 MiB at this size), far beyond any
  // popularity ranking a scenario needs, and a typo of a few digits fails cleanly here
  // instead of exhausting memory.
  static constexpr int64_t kMaxRanks = int64_t{1} << 24;

  static Expected<Zipf> Make(int64_t n, double s);  // 1 <= n <= kMaxRanks, s >= 0 finite
                                                    // (s = 0: uniform)
  int64_t Sample(RngStream& rng) const;             // in [1, n]
  // P(rank) from the normalised table; 0 outside [1, n].
  double Probability(int64_t rank) const;
  int64_t n() const { return static_cast<int64_t>(cdf_->size()); }
  double s() const { return s_; }
 private:
  Zipf(std::shared_ptr<const std::vector<double>> cdf, double s) : cdf_(std::move(cdf)), s_(s) {}
  std::shared_ptr<const std::vector<double>> cdf_;  // shared: copies are cheap; back() == 1
  double s_;
};

class Empirical {
 public:
  static Expected<Empirical> Make(std::vector<double> values);  // non-empty, finite
  double Sample(RngStream& rng) const;
  double mean() const { return mean_; }
  double Cdf(double x) const;  // fraction of values <= x
  size_t size() const { return sorted_->size(); }
 private:
  Empirical(std::shared_ptr<const std::vector<double>> sorted, double mean)
      : sorted_(std::move(sorted)), mean_(mean) {}
  std::shared_ptr<const std::vector<double>> sorted_;  // shared: copies are cheap
  double mean_;
};

}  // namespace fleetplan
