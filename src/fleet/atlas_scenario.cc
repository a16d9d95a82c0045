#include "fleetplan/fleet/scenario.h"

namespace fleetplan {

// The reference scenario (Atlas). Kept in step with docs/scenario.md; every key shown is
// part of the format contract.
std::string_view AtlasScenarioYaml() {
  return R"yaml(# fleetplan scenario, format version 1 — the built-in reference example (Atlas).
# Copy it with `fleetplan simulate --print-scenario > atlas.yaml`, edit, and run
# `fleetplan simulate atlas.yaml`. Unknown keys are errors. Durations carry units
# (ms, s, m, h), sizes carry units (KiB, MiB, GiB, GB), rates carry units (/s, /m).
version: 1
name: atlas-baseline
seed: 42                          # master seed; every component draws from its own named stream

model:
  name: atlas-70b                 # built-in catalog (`fleetplan catalog models`), or `spec:` inline
  weight_dtype: bf16              # bf16 | fp16 | fp8 | int8 | int4 | fp4 | fp32
  kv_dtype: bf16                  # independent of weight_dtype (same formats)
  kv_window: null                 # sliding window kept in KV (tokens); null = full context
  max_context: 32768

hardware:
  gpu: h100-sxm-80g               # `fleetplan catalog gpus`
  nodes: 3
  gpus_per_node: 8
  intra_node_link: nvlink4        # `fleetplan catalog links`
  inter_node_link: ib-ndr-400

deployment:                       # one pool; for prefill/decode pools write instead:
  replicas: 6                     #   pools: [{role: prefill, replicas: 2, tp: 4}, {role: decode, replicas: 2, tp: 4}]
  tp: 4                           #   disaggregation: {colocate_below_tokens: 2048}
  pp: 1
  gpu_memory_utilization: 0.90

engine:
  scheduler:
    policy: bounded-chunk         # prefill-first | decode-first | bounded-chunk | priority-aging
    max_batched_tokens: 8192      # token budget per step
    max_running: 256
    chunk_tokens: 512             # largest prefill chunk per request per step
    max_decode_stall: 150ms       # bounded-chunk: no running decoder waits longer than this
    aging_per_step: 0.05          # priority-aging: score = priority + aging_per_step * waiting_steps
  kv:
    block_tokens: 16
  prefix_cache:
    enabled: true
    eviction: lru
  preemption: recompute
  version: "0.10"                 # the vLLM release modelled: sets the CPU time per step (docs/step-models.md)
  # step_model absent: the GPU's default, h100-sxm-80g's measured kernels; name one to
  # override it: {kind: roofline | affine | table | kernel-table | aiconfigurator}
  cuda_graphs: {buckets: [1, 4, 8, 16, 32], eager_fallback: true}

router:
  policy: cache-aware             # round-robin | least-outstanding | cache-aware | adapter-aware | weighted
  telemetry_delay: 50ms           # the router sees replica state this old

workload:
  duration: 10m
  arrival: {process: poisson, rate: 8/s}
  tenants: {count: 20, popularity: {zipf: 1.1}}
  classes:
    interactive:
      share: 0.70
      prompt:
        - {segment: tenant-instructions, tokens: 1500}
        - {segment: unique, tokens: {lognormal: {median: 300, p99: 2000}}}
      output_tokens: {lognormal: {median: 150, p99: 800}}
    document:
      share: 0.20
      prompt:
        - {segment: tenant-instructions, tokens: 1500}
        - {segment: document, tokens: 4000, pool: 200}
        - {segment: unique, tokens: 500}
      output_tokens: {lognormal: {median: 200, p99: 300}, max: 300}
    research:
      share: 0.10
      prompt:
        - {segment: unique, tokens: {uniform: [8000, 30000]}}
      output_tokens: {uniform: [1000, 4000]}

slo:
  interactive: {ttft: 600ms, itl_max: 150ms}
  document:    {ttft: 2s, tpot: 80ms}
  research:    {e2e: 10m}

output:
  dir: out/atlas-baseline
  requests: true                  # requests.jsonl, one record per request
  timeline: true                  # timeline.json, Chrome trace event format (opens in Perfetto)
)yaml";
}

Expected<Scenario> LoadAtlasScenario(const ScenarioLoadOptions& options) {
  return LoadScenarioText(AtlasScenarioYaml(), "<built-in atlas>", "", options);
}

}  // namespace fleetplan
