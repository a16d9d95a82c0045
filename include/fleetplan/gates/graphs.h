// The graphs gate: which CUDA-graph buckets to capture for a decode batch-size
// distribution, and what they buy per step under a graph-memory budget.
//
// GRAPHS.yaml (docs/gates.md has a full example):
//   identity: {artifact, runtime, runtime_version, hardware, engine_config}
//   batches: {1: 0.3, 2-4: 0.3, 5-16: 0.3, 17-48: 0.1}  decode batch size or range -> share
//                                    (a range spreads its share evenly over its sizes;
//                                    shares are normalised to sum to 1)
//   batches_from: run/report.json    instead of `batches`: a simulation's decode-only steps
//                                    by batch size (report.json engine.decode_batches),
//                                    relative to this file
//   buckets: [1, 2, 4, 8, 16, 32]    the candidate bucket set (strictly increasing)
//   eager_cpu: 4ms                   CPU launch time of one eager decode step
//   graph_cpu: 0.3ms                 CPU time of one graph replay
//   graph_dispatch: 0.05ms           padding / dispatch cost of a graphed step
//   gpu: {1: 6ms, 8: 6.4ms, 32: 7.5ms, 64: 9ms}   measured GPU time per batch (linear
//                                    between measured batches; never extrapolated)
//   graph_memory: {1: 20MiB, 64: 120MiB}  memory per captured bucket (a size, or a table
//                                    interpolated the same way)
//   memory_budget: 1GiB              what the captured graphs may take
//   capture_time: 0.4s               (optional) compile/capture time per bucket
//
// Per batch size b: eager_ms = eager_cpu + gpu(b); dispatch goes to the smallest bucket
// B >= b: graph_ms = graph_cpu + graph_dispatch + gpu(B), padded_slots = B - b; above
// the largest bucket the step falls back to eager. Over the distribution:
//   bucket_hit_rate = Σ share of graphed sizes, fallback_rate = 1 - bucket_hit_rate,
//   padding_ratio   = Σ share × padded / Σ share × B over graphed sizes,
//   expected_step_ms = Σ share × (graph_ms or eager_ms), graph_memory = Σ memory(B).
// Proposal: greedy from no buckets, add the size (any size of the distribution) that most
// lowers expected_step_ms while the memory fits the budget, until no addition helps;
// sizes left above the largest proposed bucket run eager (allowed fallback for rare
// shapes). Compilation time (capture_time × buckets) is reported apart from the steady
// state. Decision: pass when the candidate set fits the budget and is no slower than
// all-eager; fail otherwise with the proposal as the nearest passing set; hold on a
// missing identity or a GPU time that the table does not cover.
// Thread model: value types and pure functions; deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/gates/gate.h"

namespace fleetplan {

// Largest decode batch size a histogram may name.
inline constexpr int64_t kMaxGraphGateBatch = 65536;

// A measured table batch -> value, linear between points, undefined outside.
struct BatchTable {
  std::vector<std::pair<int64_t, double>> points;  // ascending batch
  // nullopt outside [first, last].
  std::optional<double> At(int64_t batch) const;
};

struct GraphsSpec {
  std::string file;
  EvidenceIdentity identity;
  std::vector<std::pair<int64_t, double>> batches;  // (size, share), ascending, shares sum to 1
  std::string batches_from;  // the report.json the histogram came from ("" = declared)
  std::vector<int64_t> buckets;
  double eager_cpu_ms = 0;
  double graph_cpu_ms = 0;
  double graph_dispatch_ms = 0;
  BatchTable gpu_ms;
  BatchTable graph_memory_bytes;
  Bytes memory_budget;
  std::optional<double> capture_time_s;
};

Expected<GraphsSpec> ReadGraphsSpec(const YamlNode& root, const std::string& file);
Expected<GraphsSpec> LoadGraphsSpec(const std::string& path);

struct GraphsBatchRow {
  int64_t batch = 0;
  double share = 0;
  std::optional<int64_t> bucket;  // nullopt: eager fallback
  double eager_ms = 0;
  std::optional<double> graph_ms;
  int64_t padded_slots = 0;
};

struct GraphsEvaluation {
  std::vector<int64_t> buckets;
  std::vector<GraphsBatchRow> per_batch;
  double expected_step_ms = 0;
  double bucket_hit_rate = 0;
  double padding_ratio = 0;
  double fallback_rate = 0;
  int64_t graph_memory_bytes = 0;
  std::vector<int64_t> uncovered;  // sizes whose GPU time (or bucket memory) the tables lack
};

GraphsEvaluation EvaluateBuckets(const GraphsSpec& spec, const std::vector<int64_t>& buckets);
// The greedy proposal (see above); only sizes the tables cover are considered.
std::vector<int64_t> ProposeBuckets(const GraphsSpec& spec);

struct GraphsGateResult {
  std::string file;
  std::string batches_from;
  EvidenceIdentity identity;
  GraphsEvaluation candidate;
  GraphsEvaluation eager;      // no buckets
  GraphsEvaluation proposed;
  std::optional<double> compile_s;
  std::optional<double> proposed_compile_s;
  double memory_budget_bytes = 0;
  std::vector<GateCheck> checks;
  GateDecision decision = GateDecision::kHold;
};

GraphsGateResult RunGraphsGate(const GraphsSpec& spec);
Json ToJson(const GraphsGateResult& r);
std::string ToText(const GraphsGateResult& r);
Expected<GateReport> RunGraphsRequest(const GateRequest& request);

}  // namespace fleetplan
