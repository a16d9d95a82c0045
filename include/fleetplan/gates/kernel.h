// The kernel gate: should a new kernel (attention, GEMM, a fused op) be enabled, at which
// shapes, judged at three levels that each have their own verdict.
//
// KERNEL.yaml (docs/gates.md has a full example):
//   kernel: paged-attention-v3          a name for the report (never evidence)
//   identity: {artifact, runtime, runtime_version, hardware, engine_config}
//   policy: {min_op_saving: 5%, min_step_saving: 1%, min_goodput_gain: 0%}   (optional)
//   isolated:
//     time_saved: 22%                   the op takes 22% less time than the trusted one
//     correctness: {single_token_decode: pass, non_multiple_context: pass,
//                   partial_pages: pass, empty_sequences: pass, mask_boundaries: pass,
//                   tolerance: pass}    declared evidence; each case `pass` or `fail`
//   step: {time: 5.0ms, op_time: 2.0ms, added: 0.3ms}
//   shapes:                             optional: the conditional decision
//     - {name: decode-b1-ctx4k, time_saved: 30%, step: {time: .., op_time: .., added: ..}}
//   workload:                           optional: when the kernel changes an engine value
//     scenario: base.yaml               relative to KERNEL.yaml
//     candidate: {block_tokens: 32, step_model: {...}}
//
// Levels:
//  1 isolated: pass when every correctness case is declared and passes and time_saved
//    >= policy.min_op_saving (default: > 0); a case declared `fail` fails; a missing case
//    or time_saved holds.
//  2 step: the op's share s = op_time / time; the step saving is at most
//      max_saving_ms = time_saved × op_time (= s × time_saved × time)
//    and what the step really saves is that minus the work the kernel adds (metadata,
//    block-table transfer, layout conversion):
//      net_saving_ms = max_saving_ms - added,   speedup_pct = 100 × net_saving_ms / time
//    pass when speedup_pct >= policy.min_step_saving (default: > 0). Nearest passing: the
//    time_saved, or the added work, that reaches the threshold.
//  3 workload (with `workload:`): the scenario is simulated as given and with the
//    candidate's engine values (block_tokens: KV page size; step_model: a step model
//    measured with the kernel — its files resolve against the scenario's folder), with the
//    fleet core (Bind -> Simulate). SLO-qualified goodput decides: pass when candidate >=
//    baseline × (1 + min_goodput_gain); each side reports KV capacity (blocks, tokens),
//    preemptions, prefix-cache hit tokens and SLO attainment. No baseline goodput holds.
// Every level also requires identified evidence (a missing identity field holds).
// With `shapes:`, each shape is judged on levels 1-2 with its own time_saved (and its own
// step, or the top-level one); the decision is conditional: `enable` lists the shapes
// that pass and `disable` the ones that fail. The overall decision: hold if anything
// holds; fail if no shape (or, without shapes, some level) fails; pass otherwise.
// Thread model: value types and pure functions; deterministic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/gates/gate.h"

namespace fleetplan {

// The correctness cases the isolated level requires, in report order.
const std::vector<std::string>& KernelCorrectnessCases();

struct KernelStep {
  double time_ms = 0;
  double op_time_ms = 0;
  std::optional<double> added_ms;  // missing: the step level holds
};

struct KernelShape {
  std::string name;
  double time_saved = 0;  // fraction (0.22 = 22%)
  std::optional<KernelStep> step;
};

struct KernelWorkloadSide {
  double goodput_rps = 0;
  std::optional<double> slo_attainment;
  int64_t kv_blocks = 0;
  int64_t block_tokens = 0;
  int64_t preemptions = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t requests = 0;
};

struct KernelSpec {
  std::string file;
  std::string kernel;
  EvidenceIdentity identity;
  double min_op_saving = 0;      // fractions; a threshold of 0 means "strictly more than 0"
  double min_step_saving = 0;
  double min_goodput_gain = 0;
  std::optional<double> time_saved;
  std::vector<std::pair<std::string, std::string>> correctness;  // (case, "pass"|"fail")
  std::optional<KernelStep> step;
  std::vector<KernelShape> shapes;
  // The workload level, simulated when the spec is read (Bind -> Simulate both ways).
  std::optional<KernelWorkloadSide> baseline;
  std::optional<KernelWorkloadSide> candidate;
  std::string scenario;          // as written in the file
  Json candidate_changes;        // what the candidate changes, for the report
};

// Reads KERNEL.yaml and, with a workload section, runs both simulations.
Expected<KernelSpec> LoadKernelSpec(const std::string& path);
Expected<KernelSpec> ReadKernelSpec(const YamlNode& root, const std::string& file, const std::string& dir);

struct KernelStepFigures {
  double op_share_pct = 0;
  double max_saving_ms = 0;
  double net_saving_ms = 0;
  double speedup_pct = 0;
};
// REQUIRES: step.time_ms > 0, step.added_ms set.
KernelStepFigures StepFigures(const KernelStep& step, double time_saved);

struct KernelLevel {
  std::string name;
  std::optional<GateDecision> verdict;  // nullopt: not evaluated (no workload section)
  std::vector<GateCheck> checks;
  Json figures = Json::object();
};

struct KernelGateResult {
  std::string kernel;
  std::string file;
  EvidenceIdentity identity;
  KernelLevel isolated, step, workload;
  std::vector<std::pair<KernelShape, GateDecision>> shapes;
  std::vector<std::string> enable, disable;
  GateDecision decision = GateDecision::kHold;
};

KernelGateResult RunKernelGate(const KernelSpec& spec);
Json ToJson(const KernelGateResult& r);
std::string ToText(const KernelGateResult& r);
int ExitCode(const KernelGateResult& r);
Expected<GateReport> RunKernelRequest(const GateRequest& request);

// "22%" -> 0.22 (a number followed by %, may be negative, below 100%). Located errors.
Expected<double> ReadPercent(const YamlNode& node);

}  // namespace fleetplan
