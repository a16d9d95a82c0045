// Model shapes and the parameter and KV arithmetic derived from them.
//
// A ModelSpec is the architecture only (no weights). Every count is computed from the
// shape, never stored, so a user-defined model gets the same arithmetic as a built-in
// one; `published_params` / `published_active_params` are kept only so tests and listings
// can compare against the model card.
//
// Covered families:
//  - dense decoders with grouped-query attention (llama, qwen, mistral);
//  - mixture of experts (`moe`): routed experts + optional shared experts, optionally
//    the first `first_dense_layers` layers dense;
//  - sliding-window attention: every layer windowed (`sliding_window` > 0,
//    `global_every` == 0), or interleaved: one global layer per `global_every` layers
//    (gemma-2: 2, gemma-3: 6), the others windowed. Layer i (0-based) is global when
//    (i + 1) % global_every == 0, so a model has floor(layers / global_every) global
//    layers:
//        global_every = 2:  | W | G | W | G | ... |
//        global_every = 6:  | W | W | W | W | W | G | W | ... |
//  - multi-head latent attention (`mla`, DeepSeek-V3 class): the KV cache holds one
//    compressed latent of `kv_lora_rank` plus a shared RoPE key of `qk_rope_head_dim`
//    per token per layer, independent of the head count and not sharded by TP;
//  - vision-language (`vision`): a CLIP-style ViT encoder and a projector beside the
//    decoder (LLaVA class).
//
// Parameter arithmetic (per decoder layer; biases only where stated):
//   attention (GQA)  q: hidden*heads*head_dim   k, v: hidden*kv_heads*head_dim each
//                    o: heads*head_dim*hidden   (+ q/k/v biases when qkv_bias)
//                    (+ 2*head_dim when qk_norm: one RMSNorm weight each for q and k)
//   attention (MLA)  q_a: hidden*q_lora_rank + q_lora_rank (norm)
//                    q_b: q_lora_rank*heads*(qk_nope+qk_rope)   (q: hidden*heads*(...)
//                         when q_lora_rank == 0)
//                    kv_a: hidden*(kv_lora_rank+qk_rope) + kv_lora_rank (norm)
//                    kv_b: kv_lora_rank*heads*(qk_nope+v_head_dim)
//                    o: heads*v_head_dim*hidden
//   FFN              gated: 3*hidden*width, else 2*hidden*width
//   MoE layer        experts*FFN(expert_intermediate) + shared_experts*FFN(shared_intermediate)
//                    + router hidden*experts (+ experts when router_bias)
//   norms            norms_per_layer*hidden (RMSNorm weights; gemma-2 has 4 per layer)
//   model            embedding vocab*hidden, lm_head vocab*hidden unless tied, final norm
//                    hidden.
//   vision (CLIP ViT, biases and LayerNorms with bias everywhere):
//                    patch conv channels*patch^2*hidden, class token hidden, positions
//                    (patches+1)*hidden, pre and post LayerNorm 2*2*hidden, per layer
//                    4*(hidden^2+hidden) attention + 2*2*hidden norms + FFN with biases.
//                    The projector is given as a count (`projector_params`).
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

struct MoeSpec {
  int64_t experts = 0;              // routed experts per MoE layer
  int64_t experts_per_token = 0;    // top-k
  int64_t expert_intermediate = 0;  // FFN width of one routed expert
  int64_t shared_experts = 0;       // always-active experts per MoE layer
  int64_t shared_intermediate = 0;  // FFN width of one shared expert
  int64_t first_dense_layers = 0;   // leading layers with a dense FFN of `intermediate`
  bool router_bias = false;         // per-expert bias in the router (DeepSeek-V3)
};

struct MlaSpec {
  int64_t q_lora_rank = 0;   // 0 = no query compression
  int64_t kv_lora_rank = 0;  // latent width cached per token per layer
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;  // shared RoPE key width cached per token per layer
  int64_t v_head_dim = 0;
};

struct VisionSpec {
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t intermediate = 0;
  int64_t patch_size = 0;
  int64_t image_size = 0;
  int64_t channels = 3;
  bool gated_mlp = false;
  int64_t projector_params = 0;  // parameters of the vision-to-text projector
  int64_t tokens_per_image = 0;  // decoder tokens one image becomes
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string source;  // public reference for the shape and the published count

  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // dense FFN width (0 allowed only when no layer is dense)
  int64_t vocab = 0;
  bool gated_mlp = true;  // SwiGLU/GeGLU: three FFN matrices, else two
  bool tied_embeddings = false;
  bool qkv_bias = false;
  bool qk_norm = false;               // per-head RMSNorm on q and k (qwen3)
  int64_t norms_per_layer = 2;        // RMSNorm weight vectors of width `hidden` per layer
  int64_t max_context = 0;            // tokens; 0 = not stated
  DType native_dtype = DType::kBf16;  // format of the published checkpoint

  int64_t sliding_window = 0;  // tokens; 0 = none
  int64_t global_every = 0;    // interleaving period (see above); 0 = all windowed

  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  std::optional<VisionSpec> vision;

  int64_t published_params = 0;         // total, as published (0 = unknown)
  int64_t published_active_params = 0;  // per token, as published (0 = unknown / dense)
};

// Parameter counts, from the shape.
struct ParamBreakdown {
  int64_t embedding = 0;    // input embedding
  int64_t lm_head = 0;      // 0 when tied
  int64_t attention = 0;    // all layers (MLA: including its two latent norms)
  int64_t ffn_dense = 0;    // dense FFN layers
  int64_t ffn_experts = 0;  // routed experts, all layers (MoE)
  int64_t ffn_shared = 0;   // shared experts, all layers (MoE)
  int64_t router = 0;       // gate matrices and router biases (MoE)
  int64_t norms = 0;        // per-layer norms and the final norm
  int64_t vision_encoder = 0;
  int64_t vision_projector = 0;
  int64_t total() const;
  int64_t decoder_total() const;  // without the vision tower and projector
  // Parameters touched per token by the decoder: decoder_total minus the routed experts
  // a token does not visit ((experts - experts_per_token) / experts of ffn_experts).
  // Embedding and lm_head count. Dense models: decoder_total().
  int64_t active_per_token = 0;
};
// REQUIRES: !FindModelSpecProblem(m) (checked by FP_ASSERT on the fields it divides by).
ParamBreakdown CountParams(const ModelSpec& m);

// Layers whose attention is windowed vs global; WindowedLayers + GlobalLayers == layers.
int64_t WindowedLayers(const ModelSpec& m);
int64_t GlobalLayers(const ModelSpec& m);

// Layers with a dense FFN vs with experts; DenseFfnLayers + MoeLayers == layers.
int64_t DenseFfnLayers(const ModelSpec& m);
int64_t MoeLayers(const ModelSpec& m);

// KV elements per token per layer (K and V together), before any sharding:
//   GQA: 2 * kv_heads * head_dim;  MLA: kv_lora_rank + qk_rope_head_dim.
int64_t KvElementsPerTokenPerLayer(const ModelSpec& m);

// "mha" (kv_heads == heads), "mqa" (kv_heads == 1), "gqa", or "mla"; for listings.
std::string_view AttentionKindName(const ModelSpec& m);

// The first broken constraint of a spec, with the field it concerns as a key path
// relative to the spec ("kv_heads", "mla.kv_lora_rank", "vision.patch_size"; "" for the
// spec as a whole) so a reader can locate it. Checks: positive sizes, heads % kv_heads == 0, 1 <=
// experts_per_token
// <= experts, first_dense_layers < layers, an FFN width for every FFN that exists,
// image_size % patch_size == 0, sliding_window / global_every consistent, counts that
// fit in int64.
struct ModelSpecProblem {
  std::string field;
  std::string message;  // e.g. "heads (64) must be a multiple of kv_heads (6)"
};
std::optional<ModelSpecProblem> FindModelSpecProblem(const ModelSpec& m);

}  // namespace fleetplan
