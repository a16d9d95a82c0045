// Builds the step cost model of a scenario's `engine.step_model`, wrapped in the CUDA-graph
// decorator when `engine.cuda_graphs` is declared.
//
//   engine:
//     step_model: {kind: roofline, compute_efficiency: 0.8}      # or affine, table
//     cuda_graphs: {buckets: [1, 4, 8, 16, 32], eager_fallback: true}
//
// Kinds (one builder each; docs/step-models.md has the YAML of each):
//   affine    {kind: affine, prefill: {base, per_token}, decode: {base, per_seq}}
//   roofline  {kind: roofline[, compute_efficiency, attention_efficiency, memory_efficiency]}
//   table     {kind: table, file: path.csv[, extrapolate: false]}; a relative path resolves
//             against the scenario file's folder
//   kernel-table {kind: kernel-table, dir: profile/tp1[, collectives: alpha-beta |
//             {tables: PATH | [PATH, ...]}]}: per-layer kernel tables (perf/kernel_table.h);
//             layers / experts from the model, tp / pp / ep from the layout, the EP
//             exchange and TP all-reduces over tp_link, PP send/recv over pp_link, peer-to-
//             peer access from the GPU; collectives from measured tables
//             (perf/collective_tables.h) where they state the curve, else alpha-beta;
//             `dir` and table paths resolve like `file`
//   aiconfigurator {kind: aiconfigurator[, dir: GPU folder, version: 0.24.0,
//             moe_distribution: balanced, collectives: ..., other_kernels: true]}:
//             aiconfigurator's measured vLLM kernels (perf/aiconfigurator.h) at the shapes
//             of one rank of the scenario's model, layout, weight and KV formats, plus the
//             kernels the tables do not time (AicOtherKernels) unless other_kernels is
//             false; `dir` absent means the tables that ship for the scenario's GPU
//             (GpuSpec::kernel_tables); collectives as for kernel-table, but absent means
//             the measured tables under `dir`/comm
//
// The default step model (no `engine.step_model`), DefaultStepModel: aiconfigurator on the
// GPU's shipped tables when it has them and they cover the model's shapes, else roofline.
// An unknown kind is a located error with did-you-mean and the valid names.
//
// CUDA graphs: when ctx.cuda_graphs is enabled the model is wrapped in GraphedStepModel
// (padding of graphed decode steps, eager launch cost otherwise). Leave it disabled for a
// measured model (affine, table) whose numbers already include the engine's graphs.
// Thread model: pure function; the result is immutable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/perf/cuda_graphs.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

struct StepModelContext {
  // Model, GPU, layout (tp/pp/ep), weight and KV dtypes, kv_window, and the engine limits
  // max_batched_tokens and max_running (a table's coverage is checked against them).
  // REQUIRES for roofline: ValidateMemoryInputs(memory) returns nothing.
  MemoryInputs memory;
  LinkSpec tp_link;          // between the tp ranks of a stage (hardware.intra_node_link)
  LinkSpec pp_link;          // between pipeline stages (intra or inter node)
  std::string scenario_dir;  // folder of the scenario file ("" = current directory)
  CudaGraphPolicy cuda_graphs;  // engine.cuda_graphs; disabled = no decorator
};

// The default collective source of a kernel-table step model (an aiconfigurator model
// reads `dir`/comm by default).
inline constexpr const char* kAlphaBetaCollectives = "alpha-beta";

// The valid `kind` names, sorted.
const std::vector<std::string>& StepModelKinds();

// `node` is the `engine.step_model` map. Every error is located at the offending field.
Expected<std::unique_ptr<StepCostModel>> MakeStepCostModel(const YamlNode& node,
                                                           const StepModelContext& ctx);

// The step model a scenario without `engine.step_model` gets, and why (for notes):
// `{kind: aiconfigurator}` on a GPU with shipped kernel tables whose shapes cover the
// model (grouped-query attention, bf16 or fp8 weights and KV, divisible heads), else
// `{kind: roofline}`.
struct DefaultStepModelChoice {
  std::string yaml;    // the step_model map to build
  std::string reason;  // one line: which model and why
};
DefaultStepModelChoice DefaultStepModel(const StepModelContext& ctx);

// Builds DefaultStepModel(ctx).
Expected<std::unique_ptr<StepCostModel>> MakeDefaultStepCostModel(const StepModelContext& ctx);

// Resolves a `file:` value against the scenario folder (absolute paths stay as they are).
std::string ResolveScenarioPath(const std::string& scenario_dir, const std::string& file);

}  // namespace fleetplan
