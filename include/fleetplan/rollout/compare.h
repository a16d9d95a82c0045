// Candidate against baseline on per-request samples from the same window: the canary
// comparison a rollout stage's exit criteria read (docs/rollout.md "Comparing a metric").
//
// Per metric: the statistics it is judged on (median, p95, p99, mean, error rate), each
// with a direction (lower or higher is better) and a tolerance on the effect it accepts in
// the bad direction; a significance level; a minimum sample count per side. The default for
// a latency is median and p95: a regression of the tail alone is a regression.
//   effect    relative change of the statistic (candidate / baseline - 1); for the error
//             rate the difference of the two rates in points (candidate - baseline)
//   test      median: a Mann-Whitney U test (exact ranks, tie- and continuity-corrected
//             normal approximation); p95, p99, mean: a percentile bootstrap of the effect
//             over requests (both sides resampled, seeded: deterministic), significant when
//             its (1 - alpha) interval excludes 0; error rate: a two-proportion z test
// The verdict of one statistic:
//   no-data   a side has no usable sample: empty, every value NaN or infinite (an errored
//             measurement), or fewer than the minimum — never a pass (Argo Rollouts can
//             report success when every measurement errored; Kayenta scores an empty
//             group 100; Flagger can read NaN as 0). The error rate counts every sample,
//             errored ones included, against the minimum;
//   fail      the test is significant (p < alpha) and the effect is beyond the tolerance
//             in the bad direction;
//   pass      otherwise.
// Stratified: the same comparison per stratum (workload class) and on the pooled samples;
// the m strata with enough samples are each tested at alpha / m (Bonferroni), so that one
// of them fails by chance with probability at most alpha.
//   - the aggregate short of samples holds;
//   - a stratum with enough samples regresses: fail, whether or not the pooled samples show
//     it (a class's own comparison is not confounded by the mix; pooled quantiles of classes
//     of different scales hide a class's tail) — a stratum short of samples cannot veto it;
//   - the aggregate regresses while no stratum does: hold (every stratum has data: the mix
//     shifted, Simpson's paradox; some lack data: nothing confirms it);
//   - the aggregate and every stratum pass: pass; a stratum short of samples keeps the
//     pass from being declared (hold).
// Thread model: pure functions; deterministic (the bootstrap draws from a stream named by
// the metric, statistic and stratum under the policy's seed).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

enum class Better : int { kLower = 0, kHigher = 1 };

// Values reach JSON and policies by name (StatisticName): explicit, never renumber.
enum class Statistic : int { kMedian = 0, kP95 = 1, kP99 = 2, kMean = 3, kErrorRate = 4 };
std::string_view StatisticName(Statistic s);  // "median", "p95", "p99", "mean", "error_rate"
const std::vector<std::string>& StatisticNames();
Expected<Statistic> ParseStatistic(std::string_view name);  // InvalidInput with the known names

struct StatisticPolicy {
  Statistic statistic = Statistic::kMedian;
  Better better = Better::kLower;  // the error rate is always lower-is-better
  double tolerance = 0.05;         // relative (points for the error rate)
};

struct MetricPolicy {
  std::string name;
  Better better = Better::kLower;
  double tolerance = 0.05;    // the default tolerance of every statistic
  double alpha = 0.05;        // two-sided significance level
  int64_t min_samples = 50;   // per side
  // Judged on these; empty means median and p95 at `better` and `tolerance`.
  std::vector<StatisticPolicy> statistics;
  uint64_t seed = 0;              // the bootstrap's master seed
  int64_t bootstrap_resamples = 1000;
};
// The statistics a policy is judged on, defaults filled in.
std::vector<StatisticPolicy> StatisticsOf(const MetricPolicy& policy);

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
  Statistic statistic = Statistic::kMedian;
  CanaryVerdict verdict = CanaryVerdict::kHold;
  bool no_data = false;
  int64_t candidate_n = 0;      // usable samples
  int64_t baseline_n = 0;
  int64_t candidate_dropped = 0;  // NaN or infinite
  int64_t baseline_dropped = 0;
  double candidate_value = 0;   // the statistic on each side
  double baseline_value = 0;
  double effect = 0;  // relative change (0 when the baseline's value is 0); points for the error rate
  MannWhitneyResult test;  // median: the U test; other statistics: p_value only
  // The bootstrap's (1 - alpha) interval of the effect (p95, p99, mean).
  std::optional<std::pair<double, double>> interval;
  std::string reason;  // one sentence with the numbers
};
// `stream` names the bootstrap's random stream (the stratum, for example).
MetricComparison CompareStatistic(const MetricPolicy& policy, const StatisticPolicy& statistic,
                                  std::span<const double> candidate, std::span<const double> baseline,
                                  std::string_view stream = "pooled");
// The median at the policy's direction and tolerance.
MetricComparison CompareMetric(const MetricPolicy& policy, std::span<const double> candidate,
                               std::span<const double> baseline);

struct StratumSamples {
  std::string name;
  std::vector<double> candidate;
  std::vector<double> baseline;
};
struct StratifiedComparison {
  Statistic statistic = Statistic::kMedian;
  CanaryVerdict verdict = CanaryVerdict::kHold;
  MetricComparison aggregate;
  std::vector<std::pair<std::string, MetricComparison>> strata;
  bool disagree = false;  // aggregate and strata point different ways
  std::string reason;
};
StratifiedComparison CompareStratified(const MetricPolicy& policy, const StatisticPolicy& statistic,
                                       const std::vector<StratumSamples>& strata);
// The median at the policy's direction and tolerance.
StratifiedComparison CompareStratified(const MetricPolicy& policy, const std::vector<StratumSamples>& strata);

// Every statistic of a metric, stratified: fail when one fails, else hold when one holds,
// else pass; the reason is the deciding statistic's.
struct MetricVerdict {
  CanaryVerdict verdict = CanaryVerdict::kHold;
  std::vector<StratifiedComparison> statistics;
  std::string reason;
};
MetricVerdict CompareMetricStratified(const MetricPolicy& policy, const std::vector<StratumSamples>& strata);

Json ComparisonJson(const MetricComparison& c);
Json StratifiedJson(const StratifiedComparison& c);
// {"verdict", "reason", "statistics": {name: StratifiedJson}}
Json MetricVerdictJson(const MetricVerdict& v);

}  // namespace fleetplan
