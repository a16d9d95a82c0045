// The quantization gate: does a quantized checkpoint advance, judged by independent gates
// per candidate against a baseline (e.g. BF16 vs W4A16 vs FP8).
//
// GATE.yaml (docs/gates.md has a full example):
//   policy:
//     target: {gpu: a100-80g, runtime: vllm, runtime_version: 0.6.4}
//     min_quality: {mmlu: 0.6}            absolute score per task (0..1)
//     max_regression: 0.02                aggregate drop vs baseline (score points)
//     protected_slices: {tool_call_validity: 0.01}   max drop per slice
//     max_logprob_drift: 0.05             (optional) mean |delta log-prob|, nats
//     max_ttft: 500ms, max_itl: 40ms, min_throughput: 2000   (tokens/s)
//   baseline:   {name, method, identity, tasks, slices, logprob_drift, serving, fit}
//   candidates: [{name, method, identity, tasks, slices, logprob_drift, serving, fit}, ...]
// A task or slice is {items: [0, 1, ...]} (pass/fail per item), {scores: [0.5, ...]}
// (a score per item) or {score: 0.71} (aggregate only). serving: {ttft, itl, throughput}
// measured at representative shapes; fit: the fit verb's inputs at the target concurrency.
//
// Gates, each with its own decision (a candidate advances only when all pass):
//   identity    every measurement names artifact, runtime, version, hardware, config
//   hardware    catalog/quant_support.h: the (method, GPU generation, runtime) row:
//               native passes; fallback fails naming what really runs (FP8 on Ampere
//               runs weight-only); unsupported fails; no row, or a runtime older than
//               the row, holds
//   quality     every task's score >= min_quality (a task without a score holds)
//   regression  aggregate and every protected slice, each its own check: the drop
//               d = baseline - candidate (mean over items, mean over tasks for the
//               aggregate) with a paired 95% bootstrap interval over items (RngStream(seed,
//               "gate.quantization.bootstrap"), kQuantResamples resamples): pass when the
//               interval's upper end <= the margin, fail when its lower end > the margin,
//               hold when it straddles the margin or no per-item outcomes exist (an
//               aggregate score alone cannot be paired). Pass/fail items also report
//               McNemar's test on the discordant pairs (b: baseline right, candidate
//               wrong; c: the reverse): exact two-sided binomial p when b + c < 25,
//               else the continuity-corrected chi-square (|b - c| - 1)^2 / (b + c).
//   drift       logprob_drift <= max_logprob_drift (only when the policy sets one)
//   memory      memory/fit of the candidate's fit section: fits at its concurrency
//   ttft, itl, throughput   measured serving figures against the policy; measurements
//               taken on other hardware than the target hold. Nothing is derived from
//               the bit width.
// Thread model: value types and pure functions; deterministic for a given seed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/gates/gate.h"
#include "fleetplan/memory/fit.h"

namespace fleetplan {

inline constexpr int kQuantResamples = 2000;

struct QualityEvidence {
  std::vector<double> outcomes;  // per item (0/1 for items, scores for scores)
  bool binary = false;           // items: pass/fail
  std::optional<double> score;   // aggregate; the mean of the outcomes when they are given
};

struct QuantArm {
  std::string name;
  std::string method;
  EvidenceIdentity identity;
  std::vector<std::pair<std::string, QualityEvidence>> tasks;   // file order
  std::vector<std::pair<std::string, QualityEvidence>> slices;
  std::optional<double> logprob_drift;
  std::optional<double> ttft_ms, itl_ms, throughput;
  std::optional<FitResult> fit;
};

struct QuantPolicy {
  std::string gpu, runtime, runtime_version;
  std::vector<std::pair<std::string, double>> min_quality;
  double max_regression = 0;
  std::vector<std::pair<std::string, double>> protected_slices;
  std::optional<double> max_logprob_drift, max_ttft_ms, max_itl_ms, min_throughput;
};

struct QuantSpec {
  std::string file;
  QuantPolicy policy;
  QuantArm baseline;
  std::vector<QuantArm> candidates;
};

Expected<QuantSpec> ReadQuantSpec(const YamlNode& root, const std::string& file);
Expected<QuantSpec> LoadQuantSpec(const std::string& path);

// McNemar on discordant counts: exact two-sided binomial when b + c < 25, else the
// continuity-corrected chi-square with one degree of freedom. 1 when b + c == 0.
double McNemarP(int64_t b, int64_t c);

struct QuantCandidateResult {
  std::string name;
  std::string method;
  std::vector<GateCheck> checks;  // identity, hardware, quality, regression..., memory, ...
  GateDecision decision = GateDecision::kHold;
};

struct QuantGateResult {
  std::string file;
  std::vector<QuantCandidateResult> candidates;
  std::vector<std::string> advance;  // names that pass
};

QuantGateResult RunQuantizationGate(const QuantSpec& spec, uint64_t seed);
Json ToJson(const QuantGateResult& r);
std::string ToText(const QuantGateResult& r);
Expected<GateReport> RunQuantizationRequest(const GateRequest& request);

}  // namespace fleetplan
