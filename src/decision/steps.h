// The plan's steps (docs/plan.md "What the plan runs"), each a function from the bundle
// and the earlier steps' typed results to its own: inputs -> requirements (coverage,
// controls) -> fleet (compose, layout, capacity, simulation) -> gates -> rollout. Every
// step reports GateChecks named by the gate that decided (GateCheck::name), with the
// numbers; a step whose inputs failed is not run and says so.
// Private to src/decision. Thread model: pure functions of their arguments.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/capacity/capacity.h"
#include "fleetplan/capacity/spec.h"
#include "fleetplan/core/json.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/gates/gate.h"
#include "fleetplan/sweep/spec.h"

namespace fleetplan::decision {

using Checks = std::vector<GateCheck>;

// --- inputs: each bound file's identity, freshness and signature ---------------------
struct InputsOutcome {
  Json inputs = Json::array();  // [{name, role, kind, revision, content_digest, freshness...}]
  Checks checks;
};
// `policy_key_pem`: the key deployment trusts for policy (never read from the bundle).
Expected<InputsOutcome> JudgeInputs(const PlanBundle& b, UtcTime as_of, const std::optional<std::string>& policy_key_pem);

// --- requirements: coverage and controls -----------------------------------------------
struct RequirementsOutcome {
  Json coverage = Json::object();
  Json controls = Json::object();
  Checks checks;
  bool coverage_ok = false;  // the fleet steps need every policy class in the workload
};
Expected<RequirementsOutcome> JudgeRequirements(const PlanBundle& b);

// --- fleet ---------------------------------------------------------------------------
// The deployment with the evidence laid over it: the workload evidence's workload, the
// policy's slo, the inventory's GPU (type, memory, GPUs per node). Documents that the
// overrides point into are kept alive by `keep`.
struct ComposedDeployment {
  SweepSpec base;  // the deployment scenario as a sweep base with the overrides
  Scenario scenario;
  std::string gpu;
  int64_t gpus_per_node = 8;
  std::vector<std::shared_ptr<YamlDocument>> keep;
};
Expected<ComposedDeployment> ComposeDeployment(const PlanBundle& b);

struct LayoutOutcome {
  Json json = Json::object();
  std::vector<LayoutChoice> candidates;  // feasible, with a benchmark rate, best decode rank first
  std::vector<double> rates;             // requests/s per replica, per candidate
  WorkloadShape shape;                   // the workload's mean request, as ranked
  std::string benchmark_method = "measured";  // the benchmark's `method`: measured | simulated
  Checks checks;
};
Expected<LayoutOutcome> RankLayouts(const PlanBundle& b, const ComposedDeployment& d);

// The capacity specs of the candidates (one layout each, its benchmark rate).
Expected<std::vector<CapacitySpec>> CapacitySpecs(const PlanBundle& b, const ComposedDeployment& d, const LayoutOutcome& l);

struct CapacityOutcome {
  std::optional<size_t> chosen;  // index into the specs
  std::vector<CapacityResult> results;  // per spec
  Json json = Json::object();
  Checks checks;
  const LayoutCapacity* Chosen() const;
};
// The plan's order of fleets: within budget first, then cheaper per hour, then fewer GPUs.
bool CheaperFleet(const LayoutCapacity& a, const LayoutCapacity& b);

// Sizes every spec (no verification), picks the cheapest sized layout within budget (ties:
// fewer GPUs, then rank), and verifies it through its deciding loss when `verify`.
Expected<CapacityOutcome> SizeFleet(const std::vector<CapacitySpec>& specs, bool verify);

// --- model error: the decision at both edges of the step model's stated error ---------
// The step model the deployment runs on the inventory's GPU, its stated error band
// (perf/stated_error.h), every candidate sized at both edges (nominal, and each simulated
// benchmark rate divided by 1 + band), whether the choice changes inside the band, and why
// the layouts differ: each one's decode step at batch 1 and at its operating point (its
// benchmark rate, by Little's law), split into collectives and the rest, in ms.
struct ModelErrorOutcome {
  Json json = Json::object();
  Checks checks;
};
// REQUIRES: `c.chosen` (a fleet was sized); `specs` and `l.candidates` align, each spec at
// the rate the plan sizes with (the benchmark's, times the verified share).
Expected<ModelErrorOutcome> JudgeModelError(const PlanBundle& b, const ComposedDeployment& d, const LayoutOutcome& l,
                                            const std::vector<CapacitySpec>& specs, const CapacityOutcome& c);

// TTFT of every request of a class with a TTFT objective, and whether it met the others.
struct TtftSample {
  double ttft_ms = 0;
  bool others_met = false;
};
struct ClassTtft {
  std::string name;
  double objective_ms = 0;
  double target = 0;
  std::vector<TtftSample> samples;
};
struct SimulationOutcome {
  Json json = Json::object();
  Checks checks;
  std::vector<ClassTtft> ttft;
};
// `extra` overrides the composed scenario further (a perturbation's), and `duration`
// replaces the policy's simulation duration.
Expected<SimulationOutcome> SimulateFleet(const PlanBundle& b, const ComposedDeployment& d, const LayoutCapacity& chosen,
                                          const std::vector<YamlOverride>& extra = {},
                                          std::optional<Duration> duration = std::nullopt);

// --- gates and rollout -------------------------------------------------------------------
struct GatesOutcome {
  Json json = Json::object();
  Checks checks;
  std::vector<std::string> advancing;  // "fp8 (quantization)": proposed candidates that pass
};
Expected<GatesOutcome> RunGates(const PlanBundle& b);

struct RolloutOutcome {
  Json json;  // rollout.json of the ladder, or null without one
  Checks checks;
  std::string stage;
  double traffic = 0;
  std::string decision;  // promote | hold | rollback | none
};
Expected<RolloutOutcome> RunRollout(const PlanBundle& b, UtcTime as_of, const std::optional<std::string>& policy_key_pem,
                                    Json& inputs, Checks& input_checks);

// A check that a step did not run because an earlier one failed.
GateCheck NotRun(std::string gate, std::string_view because);

}  // namespace fleetplan::decision
