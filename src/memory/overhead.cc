#include "fleetplan/memory/overhead.h"

#include <algorithm>

#include <fmt/format.h>

#include "fleetplan/catalog/dtype.h"

namespace fleetplan {
namespace {

struct Width {
  int64_t elements = 0;
  std::string formula;
};

Width AttentionWidth(const MemoryInputs& in) {
  const ModelSpec& m = in.model;
  const int64_t tp = in.layout.tp;
  const int64_t heads = m.heads / tp;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const int64_t per_head = a.qk_nope_head_dim + a.qk_rope_head_dim + a.qk_nope_head_dim + a.v_head_dim;
    return {heads * per_head,
            fmt::format("MLA attention {} heads/rank × ({} + {} + {} + {})", heads,
                        a.qk_nope_head_dim, a.qk_rope_head_dim, a.qk_nope_head_dim, a.v_head_dim)};
  }
  const int64_t kv_heads = std::max<int64_t>(1, m.kv_heads / tp);
  return {(heads + 2 * kv_heads) * m.head_dim,
          fmt::format("attention q|k|v ({} + 2 × {}) heads/rank × {}", heads, kv_heads, m.head_dim)};
}

Width DenseFfnWidth(const MemoryInputs& in) {
  const ModelSpec& m = in.model;
  const int64_t factor = m.gated_mlp ? 3 : 2;
  const int64_t tp = in.layout.tp;
  return {factor * m.intermediate / tp,
          fmt::format("{} FFN {} × {} / tp {}", m.gated_mlp ? "gated" : "plain", factor,
                      m.intermediate, tp)};
}

Width MoeFfnWidth(const MemoryInputs& in) {
  const MoeSpec& moe = *in.model.moe;
  const int64_t factor = in.model.gated_mlp ? 3 : 2;
  const int64_t tp = in.layout.tp;
  const int64_t routed = moe.experts_per_token * factor * moe.expert_intermediate;
  const int64_t shared = moe.shared_experts * factor * moe.shared_intermediate;
  return {(routed + shared) / tp,
          fmt::format("MoE FFN (top-{} × {} × {} + {} shared × {} × {}) / tp {}",
                      moe.experts_per_token, factor, moe.expert_intermediate, moe.shared_experts,
                      factor, moe.shared_intermediate, tp)};
}

Width Widest(const MemoryInputs& in) {
  Width best = AttentionWidth(in);
  const bool has_dense = !in.model.moe || in.model.moe->first_dense_layers > 0;
  for (const Width& w : {has_dense ? DenseFfnWidth(in) : Width{},
                         in.model.moe ? MoeFfnWidth(in) : Width{}}) {
    if (w.elements > best.elements) best = w;
  }
  return best;
}

}  // namespace

ActivationWorkspace PlanActivation(const MemoryInputs& in) {
  const ModelSpec& m = in.model;
  ActivationWorkspace a;
  a.tokens = in.max_batched_tokens;
  a.element_bytes = std::max<int64_t>(kActivationElementBytes, BitsPerElement(in.weight_dtype) / 8);
  a.hidden_elements = kActivationHiddenBuffers * m.hidden;
  const Width widest = Widest(in);
  a.widest_elements = widest.elements;
  a.widest_formula = widest.formula;
  a.per_token = Bytes(a.element_bytes * (a.hidden_elements + a.widest_elements));
  a.logits_rows = std::min(in.max_running, in.max_batched_tokens);
  a.logits = Bytes(a.logits_rows * m.vocab * kLogitsElementBytes);
  a.total = a.per_token * a.tokens + a.logits;
  return a;
}

RuntimeOverhead PlanRuntimeOverhead(const MemoryInputs& in) {
  RuntimeOverhead r;
  r.cuda_context = kCudaContextBytes;
  r.cuda_graphs = kCudaGraphPoolBytes;
  r.collectives = in.layout.gpus() > 1 ? kCollectiveBuffersBytes : Bytes(0);
  r.total = r.cuda_context + r.cuda_graphs + r.collectives;
  return r;
}

}  // namespace fleetplan
