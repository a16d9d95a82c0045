// A value slot: a quantity in a workload spec that is either a fixed value or a
// distribution, optionally capped. Two units: token counts and durations.
//
// YAML syntax (docs/traces.md and src/workload/README.md repeat it):
//
//   tokens: 1500                                   fixed
//   tokens: {uniform: [8000, 30000]}               integer uniform on [a, b], both included
//   tokens: {lognormal: {median: 300, p99: 2000}}  continuous, rounded up
//   tokens: {exponential: {mean: 400}}             continuous, rounded up
//   tokens: {gamma: {mean: 400, cv: 2}}            continuous, rounded up
//   tokens: {zipf: {n: 4096, s: 1.1}}              integer rank in [1, n], P(k) ~ k^-s
//   tokens: {empirical: lengths.txt}               one number per line ('#' comments)
//   tokens: {empirical: {file: t.csv, column: c}}  one CSV column (header row names it)
//   tokens: {lognormal: {...}, max: 300}           any distribution, capped at max
//
// Token draws are whole numbers >= 1: continuous draws are rounded up (ceil), so a
// positive draw never becomes 0 (a draw that underflows to exactly 0.0 counts as 1);
// empirical values must be > 0 and are rounded up the same way. Every token count written
// (a fixed value, a uniform bound, a max) is at most kMaxRequestTokens (2^24, core/limits.h);
// a draw above it saturates there and reports itself as capped.
// `max:` caps a draw at max (min(draw, max)); Sample reports whether it capped, so the
// generator can count and report capped draws.
// Duration slots take the same shapes with durations for the parameters
// ({exponential: {mean: 5s}}, {uniform: [1s, 10s]}, a plain `2s`); empirical duration
// files hold seconds. zipf is for tokens only.
// Files named by `empirical` are relative to the YAML file that names them.
//
// Thread model: immutable after parsing; Sample mutates only the stream.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "fleetplan/core/distributions.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

// A fixed value, exact, in the slot's raw unit (tokens, or nanoseconds for durations).
struct FixedValue {
  int64_t value = 0;
};
// Tokens: integer uniform on [lo, hi] (dist is continuous on [lo, hi + 1), floored).
// Durations: continuous uniform on [lo, hi) seconds.
struct UniformRange {
  Uniform dist;
  double lo = 0, hi = 0;
};

using SlotDistribution =
    std::variant<FixedValue, UniformRange, Lognormal, Exponential, Gamma, Zipf, Empirical>;

class TokenSlot {
 public:
  // Parses a token slot at `node` (a positive integer or a distribution map).
  static Expected<TokenSlot> Parse(const YamlNode& node);
  static TokenSlot Fixed(int64_t tokens);  // REQUIRES: tokens >= 1

  // >= 1, and <= cap() when capped; *was_capped (optional) says whether the cap applied.
  int64_t Sample(RngStream& rng, bool* was_capped = nullptr) const;
  bool is_fixed() const { return std::holds_alternative<FixedValue>(dist_); }
  // Mean of the uncapped distribution in tokens (before rounding up).
  double UncappedMean() const;
  // The fewest and the most tokens a draw can give: exact for fixed values, uniform
  // ranges, zipf and a cap; for the continuous distributions and empirical values the
  // least is 1 and the most is the cap (kMaxRequestTokens when uncapped).
  int64_t MinTokens() const;
  int64_t MaxTokens() const;
  // True when MaxTokens is a value a draw can reach (not the saturation limit).
  bool HasKnownMax() const;
  const SlotDistribution& distribution() const { return dist_; }
  int64_t cap() const { return cap_; }  // 0 when uncapped
  // {"lognormal": {"median": 300, "p99": 2000}, "max": 300} — for reports.
  Json Describe() const;

 private:
  TokenSlot(SlotDistribution dist, int64_t cap, Json description);
  SlotDistribution dist_;
  int64_t cap_ = 0;
  Json description_;
};

class DurationSlot {
 public:
  static Expected<DurationSlot> Parse(const YamlNode& node);
  static DurationSlot Fixed(Duration d);  // REQUIRES: d >= 0

  // >= 0, rounded to the nearest ns; *was_capped as for TokenSlot.
  Duration Sample(RngStream& rng, bool* was_capped = nullptr) const;
  Duration cap() const { return cap_; }
  bool is_fixed() const { return std::holds_alternative<FixedValue>(dist_); }
  Json Describe() const;

 private:
  DurationSlot(SlotDistribution dist, Duration cap, Json description);
  SlotDistribution dist_;
  Duration cap_;  // Duration::Max() when uncapped
  Json description_;
};

}  // namespace fleetplan
