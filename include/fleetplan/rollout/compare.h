// Candidate against baseline on per-request samples from the same window: the canary
// comparison a rollout stage's exit criteria read (docs/rollout.md "Comparing a metric").
//
// Per metric: a direction (lower or higher is better), a tolerance on the effect (the
// relative change of the median the stage accepts in the bad direction), a significance
// level, and a minimum sample count per side. The verdict:
//   no-data   a side has no usable sample: empty, every value NaN or infinite (an errored
//             measurement), or fewer than the minimum — never a pass (Argo Rollouts can
//             report success when every measurement errored; Kayenta scores an empty
//             group 100; Flagger can read NaN as 0);
//   fail      the Mann-Whitney U test says the samples differ (two-sided p < alpha) and
//             the median moved beyond the tolerance in the bad direction;
//   pass      otherwise.
// Stratified: the same comparison per stratum (workload class) and on the pooled samples.
// When they disagree — the aggregate passes while a stratum fails, or the aggregate fails
// while every stratum passes (a workload-mix shift: Simpson's paradox) — the comparison
// holds and says so; a stratum without data holds too.
// Thread model: pure functions; deterministic (no randomness: exact ranks, normal
// approximation with tie correction).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"

namespace fleetplan {

enum class Better : int { kLower = 0, kHigher = 1 };

struct MetricPolicy {
  std::string name;
  Better better = Better::kLower;
  double tolerance = 0.05;    // accepted relative change of the median in the bad direction
  double alpha = 0.05;        // two-sided significance level
  int64_t min_samples = 50;   // per side
};

struct MannWhitneyResult {
  double u = 0;        // U of the candidate sample
  double z = 0;        // normal approximation, tie- and continuity-corrected
  double p_value = 1;  // two-sided
};
// REQUIRES: both samples non-empty and finite.
MannWhitneyResult MannWhitney(std::span<const double> candidate, std::span<const double> baseline);

// Values reach JSON by name (CanaryVerdictName): explicit, never renumber.
enum class CanaryVerdict : int { kPass = 0, kFail = 1, kHold = 2 };
std::string_view CanaryVerdictName(CanaryVerdict v);

struct MetricComparison {
  CanaryVerdict verdict = CanaryVerdict::kHold;
  bool no_data = false;
  int64_t candidate_n = 0;      // usable samples
  int64_t baseline_n = 0;
  int64_t candidate_dropped = 0;  // NaN or infinite
  int64_t baseline_dropped = 0;
  double candidate_median = 0;
  double baseline_median = 0;
  double effect = 0;  // candidate median / baseline median - 1 (0 when the baseline median is 0)
  MannWhitneyResult test;
  std::string reason;  // one sentence with the numbers
};
MetricComparison CompareMetric(const MetricPolicy& policy, std::span<const double> candidate,
                               std::span<const double> baseline);

struct StratumSamples {
  std::string name;
  std::vector<double> candidate;
  std::vector<double> baseline;
};
struct StratifiedComparison {
  CanaryVerdict verdict = CanaryVerdict::kHold;
  MetricComparison aggregate;
  std::vector<std::pair<std::string, MetricComparison>> strata;
  bool disagree = false;  // aggregate and strata point different ways
  std::string reason;
};
StratifiedComparison CompareStratified(const MetricPolicy& policy, const std::vector<StratumSamples>& strata);

Json ComparisonJson(const MetricComparison& c);
Json StratifiedJson(const StratifiedComparison& c);

}  // namespace fleetplan
