// Sensitivity (docs/plan.md "Sensitivity and review triggers"): the decision re-run under
// declared perturbations, each one registry row. A row reads its size from the policy,
// re-runs the part of the plan it perturbs (capacity for demand, price and domains; the
// simulated requests for objectives), says whether the decision changes and to what, and
// finds by search the threshold where it first changes: a review trigger, with the
// evidence that would show it.
// Private to src/decision. Thread model: pure functions; deterministic.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "decision/steps.h"
#include "fleetplan/core/json.h"

namespace fleetplan::decision {

struct PerturbationInput {
  const PlanBundle* bundle = nullptr;
  const std::vector<CapacitySpec>* specs = nullptr;  // the candidates' capacity specs
  const CapacityOutcome* capacity = nullptr;         // the decision's sizing
  const SimulationOutcome* simulation = nullptr;     // the chosen fleet's run at peak
  const ComposedDeployment* deployment = nullptr;    // for perturbations that simulate
  const SensitivityAsk* ask = nullptr;               // the policy's entry (its extra keys)
};

struct PerturbationOutcome {
  Json json = Json::object();     // {name, size, changes, change, threshold, ...}
  std::optional<Json> trigger;    // review_triggers[] entry
};

struct PerturbationRow {
  const char* name;
  const char* what;  // one line for docs and --help
  Expected<double> (*read_size)(const YamlNode& value);
  Expected<PerturbationOutcome> (*run)(const PerturbationInput& in, double size);
};

// peak_traffic, burst, context_longer, prefix_reuse, gpu_price, domain_smaller, ttft_tightened
// (in that order).
const std::vector<PerturbationRow>& PerturbationRows();
const PerturbationRow* FindPerturbation(std::string_view name);

}  // namespace fleetplan::decision

namespace fleetplan {
using decision::FindPerturbation;
using decision::PerturbationRow;
using decision::PerturbationRows;
}  // namespace fleetplan
