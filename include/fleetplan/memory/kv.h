// KV-cache arithmetic: bytes per token (whole model and per rank), which tokens of a
// sequence each layer keeps, and the blocks a sequence reserves.
//
// Per token per layer, K and V together:
//   GQA: 2 × kv_heads × head_dim elements; a rank holds kv_heads/tp heads, or one head when
//        tp > kv_heads (each head then replicated tp/kv_heads times across the stage);
//   MLA: kv_lora_rank + qk_rope_head_dim elements (one latent, shared by all heads); it is
//        not sharded by TP: every rank of the stage holds the whole latent.
// Windows: a global layer keeps min(context, kv_window) tokens of a sequence; a layer the
// model windows keeps min(context, model window, kv_window) (kv_window unset = no limit).
// Blocks: KV is paged in blocks of block_tokens tokens. A layer that keeps a window of W
// tokens of a longer sequence can touch one block more than W/block_tokens, because the
// window rarely starts on a block boundary (vLLM reserves the same):
//
//   block_tokens 8, window 20:  |b0      |b1      |b2      |b3      |b4      |
//   worst placement (tokens 15..34):  [.......x|xxxxxxxx|xxxxxxxx|xxx.....]
//   blocks = ceil((W - 1) / block_tokens) + 1 = ceil(19 / 8) + 1 = 4
//
// and never more than the ceil(context / block_tokens) blocks of the whole context.
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetplan/core/units.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/memory/weights.h"

namespace fleetplan {

struct KvShape {
  bool latent = false;                   // MLA
  int64_t elements_per_layer = 0;        // per token, whole model (KvElementsPerTokenPerLayer)
  int64_t elements_per_layer_per_rank = 0;
  int64_t kv_heads_per_rank = 0;         // GQA; 0 for MLA
  int64_t replication = 1;               // ranks of a stage holding the same KV element
  Bytes bytes_per_layer;                 // per token: BytesFor(kv_dtype, elements_per_layer)
  Bytes bytes_per_layer_per_rank;        // per token: BytesFor(kv_dtype, ..._per_rank)
  Bytes bytes_per_token;                 // per token, all layers, whole model, no replicas
};

// REQUIRES: ValidateMemoryInputs(in) returned nothing.
KvShape PlanKvShape(const MemoryInputs& in);

// Tokens of one sequence at `context` that each kind of layer keeps.
struct KvWindows {
  int64_t context = 0;
  int64_t global_tokens = 0;    // min(context, kv_window)
  int64_t windowed_tokens = 0;  // min(context, model window, kv_window)
};

// REQUIRES: context >= 1.
KvWindows WindowsAt(const MemoryInputs& in, int64_t context);

// Blocks one layer reserves for a sequence of `context` tokens of which it keeps `window`
// (see the picture above). REQUIRES: context, window, block_tokens >= 1.
int64_t LayerBlocks(int64_t context, int64_t window, int64_t block_tokens);

// The KV of one sequence.
struct SequenceKv {
  KvWindows windows;
  Bytes bytes;  // whole model, token-exact: Σ layers (tokens kept × bytes_per_layer)
  // Per stage (index = stage), one rank:
  std::vector<Bytes> bytes_per_rank;            // token-exact
  std::vector<int64_t> layer_blocks_per_rank;   // Σ layers LayerBlocks(...)
  std::vector<Bytes> reserved_bytes_per_rank;   // layer_blocks × block_tokens × bytes_per_layer_per_rank
};

// REQUIRES: ValidateMemoryInputs(in) returned nothing; stages == SplitStages(...); context >= 1.
SequenceKv PlanSequenceKv(const MemoryInputs& in, const KvShape& kv,
                          const std::vector<StageLayers>& stages, int64_t context);

}  // namespace fleetplan
