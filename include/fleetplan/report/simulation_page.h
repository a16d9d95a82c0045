// The HTML report of a simulation (report.html beside report.json; docs/report.md).
//
// Rendered from the run's report document — the in-memory value report.json is written
// from (fleet/run.h RunResult::report), never re-read from the file — so every figure on
// the page is one of report.json's, traceable by its key, and the page is byte-identical
// whenever report.json is. The page is a list of sections (page.h), one registry row
// each, in this order:
//
//   verdict        SLO attainment and goodput per class, the binding objective
//   latency        CDFs of TTFT, TPOT, ITL-max and E2E per class, SLO thresholds drawn
//   e2e-by-output  E2E p50 / p99 by output-length bucket, with bucket targets
//   timeseries     the run over time (report.json `timeseries`): fleet and per replica
//   replicas       replica utilisation and routing balance
//   prefix-cache   what the prefix cache saved, per class
//   kv-transfer    the prefill/decode pools' stages (admission, prefill, transfer)
//   inputs         scenario digest, seed, deployment and every derived value (notes)
// A section whose feature the run did not use says so rather than disappearing, so the
// page always has the same sections.
// Thread model: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/report/page.h"

namespace fleetplan::report {

// The simulation page's sections, in page order.
const std::vector<SectionRow>& SimulationSections();

// The page of a report.json document.
Page SimulationPage(const Json& report);
std::string SimulationHtml(const Json& report);

}  // namespace fleetplan::report
