#include "fleetplan/catalog/catalog_json.h"

#include <string>

namespace fleetplan {
namespace {

Json ParamsJson(const ParamBreakdown& p) {
  return Json{{"embedding", p.embedding},
              {"lm_head", p.lm_head},
              {"attention", p.attention},
              {"ffn_dense", p.ffn_dense},
              {"ffn_experts", p.ffn_experts},
              {"ffn_shared", p.ffn_shared},
              {"router", p.router},
              {"norms", p.norms},
              {"vision_encoder", p.vision_encoder},
              {"vision_projector", p.vision_projector},
              {"decoder_total", p.decoder_total()},
              {"total", p.total()},
              {"active_per_token", p.active_per_token}};
}

Json MoeJson(const MoeSpec& e) {
  return Json{{"experts", e.experts},
              {"experts_per_token", e.experts_per_token},
              {"expert_intermediate", e.expert_intermediate},
              {"shared_experts", e.shared_experts},
              {"shared_intermediate", e.shared_intermediate},
              {"first_dense_layers", e.first_dense_layers},
              {"router_bias", e.router_bias}};
}

Json MlaJson(const MlaSpec& a) {
  return Json{{"q_lora_rank", a.q_lora_rank},
              {"kv_lora_rank", a.kv_lora_rank},
              {"qk_nope_head_dim", a.qk_nope_head_dim},
              {"qk_rope_head_dim", a.qk_rope_head_dim},
              {"v_head_dim", a.v_head_dim}};
}

Json VisionJson(const VisionSpec& v) {
  return Json{{"layers", v.layers},
              {"hidden", v.hidden},
              {"heads", v.heads},
              {"intermediate", v.intermediate},
              {"patch_size", v.patch_size},
              {"image_size", v.image_size},
              {"channels", v.channels},
              {"gated_mlp", v.gated_mlp},
              {"projector_params", v.projector_params},
              {"tokens_per_image", v.tokens_per_image}};
}

Json DerivedJson(const ModelSpec& m) {
  return Json{{"params", ParamsJson(CountParams(m))},
              {"attention", std::string(AttentionKindName(m))},
              {"kv_elements_per_token_per_layer", KvElementsPerTokenPerLayer(m)},
              {"windowed_layers", WindowedLayers(m)},
              {"global_layers", GlobalLayers(m)},
              {"dense_ffn_layers", DenseFfnLayers(m)},
              {"moe_layers", MoeLayers(m)}};
}

}  // namespace

Json ModelSpecJson(const ModelSpec& m) {
  Json j{{"name", m.name},
         {"description", m.description},
         {"source", m.source},
         {"layers", m.layers},
         {"hidden", m.hidden},
         {"heads", m.heads},
         {"kv_heads", m.kv_heads},
         {"head_dim", m.head_dim},
         {"intermediate", m.intermediate},
         {"vocab", m.vocab},
         {"gated_mlp", m.gated_mlp},
         {"tied_embeddings", m.tied_embeddings},
         {"qkv_bias", m.qkv_bias},
         {"qk_norm", m.qk_norm},
         {"norms_per_layer", m.norms_per_layer},
         {"max_context", m.max_context},
         {"native_dtype", std::string(DTypeName(m.native_dtype))},
         {"sliding_window", m.sliding_window},
         {"global_every", m.global_every},
         {"moe", m.moe ? MoeJson(*m.moe) : Json(nullptr)},
         {"mla", m.mla ? MlaJson(*m.mla) : Json(nullptr)},
         {"vision", m.vision ? VisionJson(*m.vision) : Json(nullptr)},
         {"published_params", m.published_params},
         {"published_active_params", m.published_active_params}};
  j["derived"] = DerivedJson(m);
  return j;
}

Json GpuSpecJson(const GpuSpec& g) {
  Json dtypes = Json::array();
  for (DType t : g.dtypes) dtypes.push_back(std::string(DTypeName(t)));
  return Json{{"name", g.name},
              {"description", g.description},
              {"source", g.source},
              {"memory_bytes", g.memory.count()},
              {"memory_bandwidth_bytes_per_s", g.memory_bandwidth},
              {"bf16_flops", g.bf16_flops},
              {"fp8_flops", g.fp8_flops},
              {"int8_ops", g.int8_ops},
              {"fp4_flops", g.fp4_flops},
              {"dtypes", dtypes},
              {"default_intra_link", g.default_intra_link},
              {"peer_to_peer", g.peer_to_peer},
              {"kernel_tables", g.kernel_tables.empty() ? Json(nullptr) : Json(g.kernel_tables)}};
}

Json LinkSpecJson(const LinkSpec& l) {
  return Json{{"name", l.name},
              {"description", l.description},
              {"source", l.source},
              {"kind", std::string(LinkKindName(l.kind))},
              {"bandwidth_bytes_per_s", l.bandwidth},
              {"latency_ns", l.latency.ns()}};
}

}  // namespace fleetplan
