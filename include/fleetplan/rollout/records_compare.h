// A canary comparison of two records files (requests.jsonl of `simulate`, or measured
// records): per metric, candidate against baseline per workload class and pooled
// (compare.h). A request that did not finish ok is an errored measurement of every
// latency metric: a NaN sample, dropped and counted — never a fast one.
// Thread model: pure function of the files.
#pragma once

#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/rollout/compare.h"

namespace fleetplan {

// The latency metrics a records file gives per request, in milliseconds (lower is better).
const std::vector<std::string>& RecordMetricNames();  // "ttft_ms", "tpot_ms", "e2e_ms", "itl_max_ms"

struct RecordsComparisonOptions {
  std::vector<std::string> metrics = {"ttft_ms", "e2e_ms"};
  double tolerance = 0.05;
  double alpha = 0.05;
  int64_t min_samples = 50;
  std::vector<Statistic> statistics;  // empty: median and p95 (compare.h)
  std::string format = "fleetplan";  // records format of both files (metrics/records_io.h)
};

// {"candidate", "baseline" (path, digest, records), "metrics": {name: MetricVerdictJson},
//  "verdict": pass | fail | hold, "reasons": [...]}: fail when a metric fails, hold when
// none fails and one holds; the reasons list failures first, then holds.
Expected<Json> CompareRecordsFiles(const std::string& candidate, const std::string& baseline,
                                   const RecordsComparisonOptions& options);
// The same with one policy per metric (policy.name is the metric).
Expected<Json> CompareRecordsWithPolicies(const std::string& candidate, const std::string& baseline,
                                          const std::vector<MetricPolicy>& policies, const std::string& format);

}  // namespace fleetplan
