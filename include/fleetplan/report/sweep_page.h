// The HTML page of a sweep (sweep.html beside sweep.json; docs/sweep.md).
//
// Rendered from a page view of the sweep (SweepResult::PageView: sweep.json's document with
// at most the first 1,000 configurations and the first 16 search curves, and `shown`
// saying how many of how many), so every figure is one of sweep.json's keys and the page
// is byte-identical whenever sweep.json is. When configurations are left out, the
// configurations and pareto sections say so. Sections, one row each:
//
//   summary         points by status, the targets, the best configuration per objective
//                   (winner or tie)
//   configurations  every configuration's means over seeds: GPUs, goodput, goodput per
//                   GPU, the first target class's TTFT p99, max rate, whether it meets
//   pareto          goodput per GPU against the front class's TTFT p99: every
//                   configuration as a dot, the Pareto front as a line
//   max-rate        with a search: attainment against rate for every configuration (the
//                   first seed's probes), the target drawn
//   inputs          the spec: base, digest, axes, overrides, seeds, price
// Thread model: pure functions.
#pragma once

#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/report/page.h"

namespace fleetplan::report {

Page SweepPage(const Json& sweep);
std::string SweepHtml(const Json& sweep);

}  // namespace fleetplan::report
