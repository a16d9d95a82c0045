// engine.speculation in a scenario: what the reader takes (SpeculationSpec) and what Bind
// derives from it per pool (the draft's memory out of the KV pool, its step model).
//
//   engine:
//     speculation:
//       method: draft                   # or ngram (host-side drafting: no GPU time, no memory)
//       draft: {model: llama-3.2-1b}    # method draft: a catalog model; optional
//                                       # weight_dtype (default bf16) and step_model (any
//                                       # engine.step_model kind; default roofline)
//       tokens_per_round: 4             # k, 1..64
//       acceptance: [0.8, 0.7, 0.6, 0.5]  # conditional by position (k values in [0, 1]),
//                                       # or {rounds: rounds.jsonl}: a measured rounds file
//                                       # (evidence/speculation_rounds.h), relative to the
//                                       # scenario; its conditional acceptance by position
//       disable_above_batch: 32         # optional: no drafting while more requests run
//       min_remaining: 2                # requests with fewer output tokens left decode ordinarily
//
// Memory (method draft): the draft is sharded tp ways like the target (vLLM's default) and
// holds its weights and its own KV for every token the target holds, so per rank
//   kv_blocks = (usable KV - draft weights) / (block_tokens * (target + draft KV per token)).
// Speculation needs one pipeline stage (pp 1) and no prefill pool: located errors.
// Engine mechanics and the acceptance draw: engine/speculation.h.
// Thread model: values; the draft cost model is immutable and shared.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/engine/speculation.h"
#include "fleetplan/memory/plan.h"
#include "fleetplan/perf/factory.h"

namespace fleetplan {

struct SpeculationSpec {
  SpeculationConfig config;           // everything but the draft's cost model and stream
  std::optional<ModelSpec> draft;     // method draft
  DType draft_weight_dtype = DType::kBf16;
  std::optional<YamlNode> draft_step_model;
  std::optional<YamlNode> where;      // the engine.speculation node (errors found at Bind)
  bool enabled() const { return config.enabled(); }
};

// What the draft takes per rank and the pool it leaves.
struct DraftMemory {
  Bytes weights_per_rank;
  Bytes kv_per_token_per_rank;
  int64_t kv_blocks_before = 0;
  int64_t kv_blocks_after = 0;
};

// Method draft: the pool `kv` of a replica laid out as `target` after the draft takes its
// share (DraftMemory), and the draft's step cost model. Errors are located at the
// speculation section: the draft does not shard tp ways, or leaves no KV block.
struct BoundDraft {
  DraftMemory memory;
  std::shared_ptr<const StepCostModel> cost;
};
Expected<BoundDraft> BindDraft(const SpeculationSpec& spec, const MemoryInputs& target, const KvPoolSize& kv,
                               const StepModelContext& target_ctx);

}  // namespace fleetplan
