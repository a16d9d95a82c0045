#include "fleetplan/memory/kv.h"

#include <algorithm>

#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

KvShape PlanKvShape(const MemoryInputs& in) {
  const ModelSpec& m = in.model;
  const int64_t tp = in.layout.tp;
  KvShape kv;
  kv.elements_per_layer = KvElementsPerTokenPerLayer(m);
  if (m.mla) {
    kv.latent = true;
    kv.elements_per_layer_per_rank = kv.elements_per_layer;
    kv.replication = tp;
  } else {
    kv.kv_heads_per_rank = std::max<int64_t>(1, m.kv_heads / tp);
    kv.elements_per_layer_per_rank = kv.elements_per_layer / m.kv_heads * kv.kv_heads_per_rank;
    kv.replication = tp > m.kv_heads ? tp / m.kv_heads : 1;
  }
  kv.bytes_per_layer = BytesFor(in.kv_dtype, kv.elements_per_layer);
  kv.bytes_per_layer_per_rank = BytesFor(in.kv_dtype, kv.elements_per_layer_per_rank);
  kv.bytes_per_token = kv.bytes_per_layer * m.layers;
  return kv;
}

KvWindows WindowsAt(const MemoryInputs& in, int64_t context) {
  FP_ASSERT(context >= 1);
  KvWindows w;
  w.context = context;
  w.global_tokens = in.kv_window ? std::min(context, *in.kv_window) : context;
  w.windowed_tokens = w.global_tokens;
  if (in.model.sliding_window > 0) {
    w.windowed_tokens = std::min(w.global_tokens, in.model.sliding_window);
  }
  return w;
}

int64_t LayerBlocks(int64_t context, int64_t window, int64_t block_tokens) {
  FP_ASSERT(context >= 1 && window >= 1 && block_tokens >= 1);
  const int64_t whole = CeilDiv(context, block_tokens);
  if (window >= context) return whole;
  return std::min(whole, CeilDiv(window - 1, block_tokens) + 1);
}

SequenceKv PlanSequenceKv(const MemoryInputs& in, const KvShape& kv,
                          const std::vector<StageLayers>& stages, int64_t context) {
  SequenceKv seq;
  seq.windows = WindowsAt(in, context);
  const KvWindows& w = seq.windows;
  const int64_t global_blocks = LayerBlocks(context, w.global_tokens, in.block_tokens);
  const int64_t windowed_blocks = LayerBlocks(context, w.windowed_tokens, in.block_tokens);
  for (const StageLayers& st : stages) {
    const int64_t tokens = st.global_layers * w.global_tokens + st.windowed_layers * w.windowed_tokens;
    const int64_t layer_blocks = st.global_layers * global_blocks + st.windowed_layers * windowed_blocks;
    seq.bytes += kv.bytes_per_layer * tokens;
    seq.bytes_per_rank.push_back(kv.bytes_per_layer_per_rank * tokens);
    seq.layer_blocks_per_rank.push_back(layer_blocks);
    seq.reserved_bytes_per_rank.push_back(kv.bytes_per_layer_per_rank *
                                          (layer_blocks * in.block_tokens));
  }
  return seq;
}

}  // namespace fleetplan
