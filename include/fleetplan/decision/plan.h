// `fleetplan plan`: one release decision bound to the inputs it came from (docs/plan.md).
//
//   bundle ─► inputs      every file's identity; evidence fresh at --as-of and signed as
//                         the policy requires; the policy signed by the deployment's key
//          ─► coverage, controls    the workload covers the policy's classes; the
//                         deployment keeps its controls and objectives no looser
//          ─► fit, layout         layouts of the model ranked on the inventory's GPU
//          ─► capacity    each candidate sized at its benchmark rate across the
//                         inventory's domains, surviving the policy's loss, priced; the
//                         cheapest chosen and simulated through its deciding loss
//          ─► simulation  the chosen fleet at peak through the deployment's admission and
//                         routing: attainment against the policy, no benign request refused
//          ─► gates       the gates the policy requires, on the bound evidence
//          ─► rollout     the ladder's stage decision
//          ─► sensitivity each declared perturbation re-run; review triggers
// decision.release: fail when any check fails, else hold when any holds, else pass;
// `reasons` lists the checks that decided (every check when it passes).
// digest: SHA-256 over the canonical JSON of the bound inputs (name, kind, revision,
// content digest; every file the bundle's ReadLog recorded, bound by name or not) and the
// decision; plan.json carries no wall-clock time, so the same
// bundle and --as-of give byte-identical output.
// Thread model: single-threaded; deterministic.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/gates/gate.h"

namespace fleetplan {

struct PlanOptions {
  UtcTime as_of;
  std::optional<std::string> policy_key_pem;  // the key deployment trusts for policy
  bool sensitivity = true;                    // run the policy's perturbations
  std::function<void(std::string_view step)> on_step;  // progress: called as each step starts
};

struct PlanResult {
  Json json;         // plan.json
  std::string text;  // plan.txt
  GateDecision release = GateDecision::kHold;
};

// Errors: invalid input (a located Status) only; every judgement is a check in the result.
Expected<PlanResult> RunPlan(const PlanBundle& bundle, const PlanOptions& options);

// The steps RunPlan reports through on_step, in order.
const std::vector<std::string>& PlanSteps();

}  // namespace fleetplan
