// The HTML page of `fleetplan validate RESULT.json ... --setup SETUP.yaml --html FILE`
// (docs/validate.md "vLLM bench result files"), rendered from the report's JSON
// (fleet/bench_validation.h), so every figure on it is one of the JSON's keys. Sections:
//
//   summary   the setup (model, GPU, layout, engine limits, KV blocks, step model) and the
//             mean |error| of TTFT, TPOT and E2E over the points
//   points    per point: requests, measured / simulated mean, median and p99 of TTFT,
//             TPOT, E2E (and ITL where measured), signed errors
//   ttft      measured and simulated mean TTFT against the request rate (or the
//             concurrency, when every point has one); a point sent all at once ("inf")
//             is drawn right of the largest finite rate and marked
//   tpot      the same for mean TPOT
//   notes     the setup's and each point's notes
// Thread model: pure functions.
#pragma once

#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/report/page.h"

namespace fleetplan::report {

Page BenchValidationPage(const Json& report);
std::string BenchValidationHtml(const Json& report);

}  // namespace fleetplan::report
