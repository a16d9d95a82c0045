// The registry of gates: one row each. `fleetplan gate <name>` is built from these rows
// (src/cli/gate_verb.cc); adding a gate is adding a row here, never a branch in the verb.
#include "fleetplan/gates/gate.h"
#include "fleetplan/gates/graphs.h"
#include "fleetplan/gates/kernel.h"
#include "fleetplan/gates/quantization.h"
#include "fleetplan/gates/speculation.h"

namespace fleetplan {

const std::vector<GateRow>& GateRows() {
  static const std::vector<GateRow> rows = {
      {"speculation",
       "does a draft pay for itself against ordinary decoding; which of two drafts is cheaper",
       "ROUNDS.jsonl [ROUNDS2.jsonl]: one speculative round per line (draft, target, draft_ms, verify_ms)", 1, 2,
       {{"--ordinary", "measured cost of one ordinary decode step (e.g. 8ms); required"},
        {"--policy", "policy YAML: basis, min_rounds, min_acceptance_rate, min_remaining_output, graph_buckets, memory"},
        {"--basis", "emitted (default: the target's own token counts) or accepted (the conservative rule); overrides the policy's"}},
       "  fleetplan gate speculation rounds.jsonl --ordinary 8ms\n"
       "  fleetplan gate speculation draft_a.jsonl draft_b.jsonl --ordinary 8ms --json\n",
       &RunSpeculationRequest},
      {"kernel",
       "should a new kernel be enabled: isolated speedup and correctness, engine-step saving, workload goodput",
       "KERNEL.yaml: identity, isolated {time_saved, correctness}, step {time, op_time, added}, shapes, workload", 1, 1,
       {},
       "  fleetplan gate kernel kernel.yaml\n"
       "  fleetplan gate kernel kernel.yaml --json\n",
       &RunKernelRequest},
      {"graphs",
       "which CUDA-graph buckets to capture for a decode batch distribution, under a graph-memory budget",
       "GRAPHS.yaml: batches (size or range -> share), buckets, eager_cpu, graph_cpu, graph_dispatch, gpu, "
       "graph_memory, memory_budget", 1, 1,
       {},
       "  fleetplan gate graphs graphs.yaml\n"
       "  fleetplan gate graphs graphs.yaml --json\n",
       &RunGraphsRequest},
      {"quantization",
       "does a quantized checkpoint advance: hardware support, quality, paired regression (aggregate and every "
       "protected slice), memory from fit, TTFT, ITL, throughput, per candidate",
       "GATE.yaml: policy, baseline, candidates (each with identity and measurements)", 1, 1,
       {},
       "  fleetplan gate quantization gate.yaml\n"
       "  fleetplan gate quantization gate.yaml --json --seed 7\n",
       &RunQuantizationRequest},
  };
  return rows;
}

}  // namespace fleetplan
