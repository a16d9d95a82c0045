// Step cost models: how long one engine step takes on one replica.
//
// The engine describes a step as the chunks it computes — one per scheduled request —
// and a cost model turns that into a duration. `Cost` is pure: same batch, same answer,
// no state, no randomness, so the scheduler may also call it to predict (bounded-chunk
// keeps a step under its stall bound by asking before it commits).
//
// Token-range arithmetic of one chunk (one request, one step):
//
//   | context_tokens (already in KV) | new_tokens (computed now) |
//   0                                ^ context_tokens            ^ context_tokens + new_tokens
//
// A chunk is a decode when it computes the single token sampled by the previous step
// (`decode == true`, new_tokens == 1); everything else — a first prefill chunk, a later
// chunk of a chunked prefill, a recompute after preemption — is prefill work. There is no
// other phase flag (STYLE "One state variable instead of phases").
//
// The models (docs/step-models.md has each formula):
//   affine    perf/affine.h     measured service model: base + per-token / per-sequence
//   table     perf/table.h      measured (decode_batch, prefill_tokens) -> step_ms grid
//   roofline  perf/roofline.h   FLOPs and bytes of the step over the GPU's ceilings
//   kernel-table    perf/kernel_table.h    per-layer kernels measured with the engine
//   aiconfigurator  perf/aiconfigurator.h  aiconfigurator's measured kernels at a
//                                          catalog model's shapes
// perf/cuda_graphs.h decorates any of them with CUDA-graph padding and eager launch cost;
// perf/factory.h builds one from the scenario's `engine.step_model`.
//
// Cost is on the simulator's hot path: O(batch), no allocation, for every built-in model.
// Host overhead per step (scheduler, sampling: CPU time the GPU waits for) is not part of
// StepCost; the engine adds it itself (perf/host_overhead.h, EngineConfig::host()).
//
// Thread model: implementations are immutable after construction and safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

struct StepChunk {
  int64_t context_tokens = 0;  // tokens of this request already in KV before the step
  int64_t new_tokens = 0;      // tokens computed in this step (>= 1)
  bool decode = false;         // computes the one token sampled by the previous step
};

// Aggregates every cost model needs; computed once per step by Summarize().
struct StepShape {
  int64_t decode_seqs = 0;
  int64_t decode_context_tokens = 0;  // sum of context_tokens over decodes
  int64_t prefill_seqs = 0;
  int64_t prefill_tokens = 0;         // sum of new_tokens over prefill chunks
  // sum over prefill chunks of new * (context + (new + 1) / 2): query-key pairs attended,
  // the quadratic attention term of chunked prefill.
  double prefill_attention_pairs = 0;
  int64_t prefill_context_tokens = 0; // sum of context_tokens over prefill chunks
  int64_t total_tokens() const { return decode_seqs + prefill_tokens; }
  int64_t batch_size() const { return decode_seqs + prefill_seqs; }
};
StepShape Summarize(std::span<const StepChunk> chunks);

// Extra decode chunks that a step computes but nobody asked for: a CUDA graph captured
// for batch 8 replays 8 decodes even when 5 are real (perf/cuda_graphs.h). Each padding
// decode has `context_tokens` of context.
struct StepPadding {
  int64_t decodes = 0;
  int64_t context_tokens = 0;
};
// Summarize(chunks) plus the padding decodes.
StepShape SummarizePadded(std::span<const StepChunk> chunks, StepPadding padding);

// The cost of one step, split so reports can show where time goes.
struct StepCost {
  Duration gpu;             // model forward time (including collectives)
  Duration collectives;     // part of `gpu` spent in TP/PP communication (0 if not modelled)
  // Set by a model that had to go outside its measured range: the report lists it.
  bool extrapolated = false;
};

class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  // REQUIRES: chunks non-empty; each chunk has new_tokens >= 1.
  virtual StepCost Cost(std::span<const StepChunk> chunks) const = 0;
  // The cost of `chunks` plus `padding` (a graph replay at a padded batch size). The
  // built-in models override it without allocating; the default copies the padded batch
  // into a vector and calls Cost.
  // REQUIRES: as Cost; padding.decodes >= 0, padding.context_tokens >= 0.
  virtual StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const;
  // Stable name of the model kind ("affine", "table", "roofline", "kernel-table",
  // "aiconfigurator").
  virtual std::string kind() const = 0;
  // The model's parameters, for the report (every derived constant visible).
  virtual Json Describe() const = 0;
  // Marginal cost of computing one more prompt token on an otherwise idle replica: what a
  // router multiplies by the prompt tokens a replica lacks. Default: Cost of one chunk of
  // kPrefillProbeTokens tokens divided by kPrefillProbeTokens.
  virtual Duration PrefillCostPerToken() const;
};

// The probe chunk of the default PrefillCostPerToken: a typical prefill chunk
// (engine.scheduler.chunk_tokens of the reference scenario), long enough that a step's
// fixed cost is amortized the way chunked prefill amortizes it.
inline constexpr int64_t kPrefillProbeTokens = 512;

// Longest time one step-model time parameter may state (engine.host_overhead, an affine
// base, per_token or per_seq): a real step takes milliseconds, so a value past this is a
// slipped unit ("1h" for "1ms"), which would make every request wait hours.
// docs/limits.md.
inline constexpr Duration kMaxStepTime = Duration::Nanos(10'000'000'000);  // 10 s

class YamlNode;
// The duration at `node` (required), at most kMaxStepTime: "expected a duration of at
// most 10s (a step-model time; docs/limits.md), got '1h'", located at the value.
Expected<Duration> ReadStepTime(const YamlNode& node);

}  // namespace fleetplan
