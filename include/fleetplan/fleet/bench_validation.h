// Validation from a user's own benchmark runs: `vllm bench serve` result files
// (metrics/vllm_bench.h) replayed on the deployment a small setup file describes, and
// the error per metric and per point (docs/validate.md "vLLM bench result files").
//
//   setup.yaml ─► BenchSetup (located errors, setup keys) ─► a scenario document built
//   from it (every value located where the setup writes it) ─► LoadScenarioDocument ─►
//   Bind ─► FleetPlan: the memory plan, KV blocks and the step model the scenario's
//   defaults give (engine.step_model only when the setup names one)
//   each RESULT.json ─► the same requests (per-request lengths, or the means when the file
//   has only aggregates) sent by the benchmark client (workload/bench_client.h: Poisson /
//   gamma gaps at the file's rate and burstiness from the scenario's seed, or all at once;
//   capped at max_concurrency) ─► Simulate ─► measured vs simulated TTFT, TPOT, E2E, ITL
//
// Measured, per request as vLLM computes them: TTFT = ttfts[i]; E2E = latencies[i] or
// ttft + sum(itls[i]); TPOT = (E2E - TTFT) / (output - 1) over requests with output > 1;
// ITL = every gap of every request, pooled. Statistics: mean, median and p99 with linear
// interpolation (numpy's, as vLLM reports them). Errors are signed,
// (simulated - measured) / measured x 100.
// Thread model: pure functions over values; deterministic (same files and setup, same
// bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/metrics/vllm_bench.h"

namespace fleetplan {

// The setup file (docs/validate.md has every key). Top level: model, gpu, tp, pp, nodes,
// gpus_per_node, intra_node_link, inter_node_link, max_model_len, seed, engine; engine:
// version, max_num_seqs, max_num_batched_tokens, block_size, gpu_memory_utilization,
// enable_chunked_prefill, enable_prefix_caching, num_scheduler_steps, weight_dtype,
// kv_cache_dtype, step_model.
struct BenchSetup {
  std::string path;
  std::string digest;  // "sha256:..." of the file's bytes
  std::string model;   // as written (a catalog name or a Hugging Face name)
  std::string catalog_model;
  std::string gpu;
  int64_t tp = 1;
  int64_t pp = 1;
  std::string engine_version;  // "" when not stated
  int64_t num_scheduler_steps = 1;
  bool chunked_prefill = true;
  uint64_t seed = 0;
  std::shared_ptr<const YamlDocument> scenario;  // the scenario document built from the setup
  std::vector<std::string> notes;                // defaults and mappings, one sentence each
};

// Unknown keys, wrong types and out-of-range values are located errors
// (setup.yaml:LINE:COL: engine.max_num_seqs: expected an integer >= 1, got 0).
Expected<BenchSetup> LoadBenchSetup(const std::string& path);
// The same from text; `path` names it in messages, its folder resolves relative paths
// (a step model's tables).
Expected<BenchSetup> ParseBenchSetup(std::string_view text, const std::string& path);

struct BenchValidation {
  Json json;  // the report: `setup`, `points[]`, `summary`, `notes` (docs/validate.md)
};

struct BenchReplayOptions {
  // The prompts had been served before each run (benchmark runs of the same prompts one
  // after another on one server with prefix caching on): each file's prompts are first
  // sent once, all at once for one token, and its requests follow when those have ended,
  // so they find their prompts in the prefix cache (workload/bench_client.h "warm-up").
  // REQUIRES of the setup engine.enable_prefix_caching (else an error).
  bool warm_prefix_cache = false;
};

// Replays every result file on the setup's deployment. Errors: the scenario the setup
// builds does not load or bind (located at the setup's keys), a replayed request that
// cannot complete (a prompt the KV cache cannot hold), a warm prefix cache without one.
Expected<BenchValidation> ValidateBenchResults(const BenchSetup& setup, const std::vector<VllmBenchResult>& results,
                                               const BenchReplayOptions& options = {});

// The compact table `fleetplan validate RESULT.json ... --setup` prints.
std::string BenchValidationText(const Json& report);

}  // namespace fleetplan
