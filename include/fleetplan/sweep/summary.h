// What a sweep concludes from its point rows (docs/sweep.md "Output"):
//   configurations[]  per configuration, every figure's mean and 95% interval over seeds
//                     (Student's t; no interval with one seed), its status, and whether
//                     it meets every target: the interval's lower bound of each targeted
//                     class's attainment >= the target;
//   best              per objective — `goodput_per_gpu` (highest, meeting the targets),
//                     `fewest_gpus` (lowest GPUs meeting the targets at the point's rate,
//                     then highest goodput per GPU), `max_rate_per_gpu` (with a search) —
//                     chosen on the lower bound; every configuration whose interval reaches
//                     the winner's lower bound is listed in `tied_with`, and the call is
//                     "tie" rather than "winner" when there is one;
//   pareto            the configurations not dominated in (goodput per GPU up, TTFT p99 of
//                     the pareto class down), by TTFT;
//   counts, notes     points by status; non-monotone searches; seeds that disagree.
// Everything is a function of the spec description and the rows, so a merge of partial
// results gives the same bytes as one run.
// Thread model: pure functions.
#pragma once

#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

// Two-sided 95% Student's t quantile for `df` degrees of freedom (df >= 1).
double StudentT95(int64_t df);

// {"mean", "ci95": [lo, hi] or null, "n"} over `values` (n >= 1).
Json MeanInterval(const std::vector<double>& values);

// The sweep document: spec description, rows (sorted by index; one per point), and the
// conclusions above. Errors: rows missing or repeated (InternalError naming the index).
Expected<Json> SummarizeSweep(const Json& spec, std::vector<Json> rows);

// One CSV row per point, the figures of its JSON row (header first; RFC 4180 quoting).
std::string SweepCsv(const Json& sweep);

// The human summary: one line per configuration, the best per objective, the front.
std::string SweepText(const Json& sweep);

}  // namespace fleetplan
