// Max-rate search: the highest arrival rate at which every targeted class meets its SLO
// attainment, with the other axes fixed (docs/sweep.md "Max-rate search").
//
// Bisection in log-rate inside [low, high], assuming low passes and high fails, until
// hi / lo <= 1 + resolution; an end is probed only when every probe fell on one side of it
// (so a search costs about log2(ln(high/low) / ln(1 + resolution)) probes: 8 for 0.5/s ..
// 64/s at 2%). Outcomes: "found" (max_rate = the highest passing rate, bracket [it, the
// lowest failing]); "below-low" (low fails: no rate in range passes); "above-high" (high
// passes). Attainment is not guaranteed monotone in rate (queueing noise, a seed's luck):
// every probe is reported, and `monotone` is false when a complete probe at a higher rate
// has a higher attainment than one at a lower rate by more than the tolerance, for any class.
// Thread model: pure given the probe function.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/sweep/spec.h"

namespace fleetplan {

struct RateProbe {
  double rate = 0;          // per second, as simulated
  bool passed = false;      // every targeted class met its target
  bool complete = true;     // false: stopped early once it could no longer pass
  AttainmentTargets attainment;  // per targeted class; an upper bound when !complete
  double stopped_at_s = 0;  // simulated time of an early stop
  int64_t steps = 0;        // engine steps simulated (the work a step-level simulator does)
};

struct MaxRateResult {
  std::string status;             // "found" | "below-low" | "above-high"
  std::optional<double> max_rate;  // the highest passing rate probed
  std::optional<double> lowest_failing;
  bool monotone = true;
  std::vector<RateProbe> probes;  // in the order probed
};

// Attainment may rise with rate by at most this much (absolute) before the curve is
// called non-monotone: smaller wiggles are the rounding of a few requests.
inline constexpr double kMonotoneTolerance = 0.005;

using ProbeFn = std::function<Expected<RateProbe>(double rate)>;

// Errors: the first probe error (a simulation failure). `known`: a probe already run
// (the point's own run at its base rate, when that rate lies inside [low, high]): it is the
// first probe of the curve and narrows the bracket before any new probe — it passes, so
// the answer is above it; or it fails, so it is below.
Expected<MaxRateResult> SearchMaxRate(const MaxRateSearch& search, const ProbeFn& probe,
                                      const std::optional<RateProbe>& known = std::nullopt);
bool IsMonotone(const std::vector<RateProbe>& probes, double tolerance = kMonotoneTolerance);
// The rate a probe is simulated at for `rate`: rounded as RateText writes it.
double ProbeRate(double rate);
Json MaxRateJson(const MaxRateResult& result);

}  // namespace fleetplan
