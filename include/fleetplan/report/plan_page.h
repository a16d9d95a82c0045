// The HTML page of a plan (report.html beside plan.json; docs/plan.md).
//
// Rendered from the plan.json document in memory (decision/plan.h PlanResult::json), so
// every figure is one of its keys and the page is byte-identical whenever plan.json is.
// The decision comes first; then what it rests on. Sections, one registry row each, in
// this order:
//
//   decision     the release (pass / fail / hold) in large type, the summary sentence,
//                the rollout stage, and the deciding reasons, each with its gate's name,
//                the numbers that decided it and the nearest passing value
//   checks       every check in the order the plan ran them
//   inputs       every bound file: name, kind, role, revision, content digest, and for
//                evidence its freshness at --as-of with when it was observed and expires
//   fleet        the chosen layout, replicas per failure domain (bars), GPUs used against
//                offered, the cost against the budget, the candidates compared, and the
//                layouts ranked on one node (or why no fleet was sized)
//   simulation   the chosen fleet at peak: attainment per class against the policy's
//                targets (bars with target marks), admission per class
//   gates        each policy gate's candidates and the checks that did not pass
//   rollout      the ladder's stages as a strip and a table, the stage it stopped at
//                highlighted, with each stage's verdict and reason
//   sensitivity  each declared perturbation and the threshold where the decision changes;
//                the review triggers
//   digest       the plan's digest, what it covers, the plan's name and --as-of
// A part the plan did not reach (no fleet sized when coverage fails, --no-sensitivity)
// says so rather than disappearing, so the page always has the same sections.
// Thread model: pure functions.
#pragma once

#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/report/page.h"

namespace fleetplan::report {

// The plan page's sections, in page order.
const std::vector<SectionRow>& PlanSections();

// The page of a plan.json document.
Page PlanPage(const Json& plan);
std::string PlanHtml(const Json& plan);

}  // namespace fleetplan::report
