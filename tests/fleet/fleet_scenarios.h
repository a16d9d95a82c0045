// Scenario texts shared by the fleet tests.
#pragma once

#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan::testing {

// Runs a scenario text without writing files; its report.json.
inline Expected<Json> RunReport(const std::string& text) {
  FP_ASSIGN_OR_RETURN(Scenario s, LoadScenarioText(text, "r.yaml", ""));
  RunOptions opt;
  opt.write_files = false;
  FP_ASSIGN_OR_RETURN(RunResult r, RunScenario(s, opt));
  return r.report;
}

// Four replicas of llama-3.1-8b with an affine step model; `router` and `workload` are
// spliced in (the router block starts on line 13).
inline std::string FleetScenario(const std::string& router, const std::string& workload, const std::string& slo,
                                 const std::string& scheduler = "max_running: 64") {
  return "version: 1\n"                                                     // 1
         "name: routers\n"                                                  // 2
         "seed: 11\n"                                                       // 3
         "model: {name: llama-3.1-8b, max_context: 16384}\n"                // 4
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"      // 5
         "deployment: {replicas: 4, tp: 1, gpu_memory_utilization: 0.3}\n"  // 6
         "engine:\n"                                                        // 7
         "  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, " +
         scheduler +
         ", chunk_tokens: 1024}\n"  // 8
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}\n"  // 9
         "  host_overhead: 0.3ms\n"           // 10
         "  prefix_cache: {enabled: true}\n"  // 11
         "router:\n"                          // 12
         + router + "workload:\n" + workload + "slo:\n" + slo;
}

// One tenant sends ~92% of the traffic (Zipf 4 over 4 tenants): 3,000 tokens of tenant
// instructions + 200 unique per request, 100 output tokens.
inline std::string HotTenantWorkload(int requests, const std::string& rate) {
  return "  requests: " + std::to_string(requests) + "\n  arrival: {process: poisson, rate: " + rate +
         "}\n"
         "  tenants: {count: 4, popularity: {zipf: 4}}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 1.0\n"
         "      prompt:\n"
         "        - {segment: tenant-instructions, tokens: 3000}\n"
         "        - {segment: unique, tokens: 200}\n"
         "      output_tokens: 100\n";
}

}  // namespace fleetplan::testing
