// The HTML page of a capacity run (capacity.html beside capacity.json; docs/capacity.md).
//
// Rendered from the capacity.json document in memory, so every figure is one of its keys
// and the page is byte-identical whenever capacity.json is. Sections, one row each:
//
//   decision      the chosen layout, its fleet, cost and budget, and the verdict of the
//                 simulated loss (or why no layout fits)
//   requirements  prompt / decode / concurrency / SLO replicas per layout, binding marked
//   losses        replicas each loss scenario needs per layout, the one that sets the size
//   placement     replicas per failure domain against the GPUs each offers
//   simulated     attainment per class before and after the deciding loss, with targets
//   inputs        the spec's digest, demand, domains, survive rule, prices, and the
//                 per-replica capacity's evidence
// Thread model: pure functions.
#pragma once

#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/report/page.h"

namespace fleetplan::report {

Page CapacityPage(const Json& capacity);
std::string CapacityHtml(const Json& capacity);

}  // namespace fleetplan::report
