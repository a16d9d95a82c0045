// Small scenarios the tests share: an 8B model on one GPU per replica with affine steps,
// so a minute of traffic simulates in milliseconds.
#pragma once

#include <string>
#include <string_view>

namespace fleetplan::testing {

// Two replicas, one interactive class at 6/s for 60 s, a 300 ms TTFT objective (the
// capacity tests size fleets of it).
inline constexpr std::string_view kSmallInteractive = R"(version: 1
name: small
seed: 5
model: {name: llama-3.1-8b, max_context: 8192}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.5}
engine:
  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 32}
  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.2ms}}
router: {policy: least-outstanding}
workload:
  duration: 60s
  arrival: {process: poisson, rate: 6/s}
  classes:
    interactive:
      share: 1.0
      prompt: [{segment: unique, tokens: {uniform: [200, 800]}}]
      output_tokens: {uniform: [20, 60]}
slo:
  interactive: {ttft: 300ms}
)";

// Workload classes for CanaryScenario: chat and docs, or chat alone.
inline constexpr std::string_view kChatAndDocs =
    "    chat: {share: 0.7, prompt: [{segment: unique, tokens: 400}], output_tokens: {uniform: [20, 60]}}\n"
    "    docs: {share: 0.3, prompt: [{segment: unique, tokens: 2000}], output_tokens: {uniform: [50, 100]}}\n";
inline constexpr std::string_view kChatOnly =
    "    chat: {share: 1.0, prompt: [{segment: unique, tokens: 400}], output_tokens: {uniform: [20, 60]}}\n";

// Two replicas at 6/s for 60 s writing requests.jsonl: a candidate or baseline of a canary
// comparison, slower as `decode_per_seq` grows.
inline std::string CanaryScenario(std::string_view decode_per_seq, std::string_view classes = kChatAndDocs) {
  return "version: 1\nname: canary\nseed: 11\nmodel: {name: llama-3.1-8b, max_context: 8192}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"
         "deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.5}\n"
         "engine:\n  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 32}\n"
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: " +
         std::string(decode_per_seq) +
         "}}\nrouter: {policy: least-outstanding}\n"
         "workload:\n  duration: 60s\n  arrival: {process: poisson, rate: 6/s}\n  classes:\n" +
         std::string(classes) + "slo:\n  chat: {ttft: 1s}\noutput: {requests: true}\n";
}

}  // namespace fleetplan::testing

namespace fleetplan::testing {

// CanaryScenario at 10/s for 600 s (about 6,000 requests, still well under a second to
// simulate): enough requests that a 1% or 10% split leaves the ladder's minimum samples
// per class. `replicas` and `decode_per_seq` make a candidate regress.
inline std::string LongCanaryScenario(std::string_view decode_per_seq, int replicas = 2) {
  std::string s = CanaryScenario(decode_per_seq);
  const auto replace = [&s](std::string_view from, const std::string& to) { s.replace(s.find(from), from.size(), to); };
  replace("duration: 60s", "duration: 600s");
  replace("rate: 6/s", "rate: 10/s");
  replace("replicas: 2,", "replicas: " + std::to_string(replicas) + ",");
  return s;
}

// Fragments the hardening tests assemble scenarios from: an affine step model, and ten
// 100-token requests at 20/s in one class.
inline constexpr const char* kAffineStepModel =
    "engine:\n  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, "
    "per_seq: 0.1ms}}\n";
inline constexpr const char* kTenRequestsWorkload =
    "workload:\n  requests: 10\n  arrival: {process: poisson, rate: 20/s}\n  classes:\n    default:\n"
    "      share: 1\n      prompt: [{segment: unique, tokens: 100}]\n      output_tokens: 10\n";

}  // namespace fleetplan::testing
