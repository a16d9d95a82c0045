// Catalog::ParseModelSpec: a model spec from YAML (catalog files, scenario `model.spec`).
// The reader only maps keys to fields; every range and consistency rule lives in
// FindModelSpecProblem (model.cc), and its finding is located at the offending key.
#include <string>
#include <vector>

#include "catalog/readers.h"
#include "fleetplan/catalog/catalog.h"

namespace fleetplan {
namespace {

const std::vector<std::string> kModelKeys = {"description",
                                             "source",
                                             "layers",
                                             "hidden",
                                             "heads",
                                             "kv_heads",
                                             "head_dim",
                                             "intermediate",
                                             "vocab",
                                             "gated_mlp",
                                             "tied_embeddings",
                                             "qkv_bias",
                                             "qk_norm",
                                             "norms_per_layer",
                                             "max_context",
                                             "native_dtype",
                                             "sliding_window",
                                             "global_every",
                                             "experts",
                                             "experts_per_token",
                                             "expert_intermediate",
                                             "shared_experts",
                                             "shared_intermediate",
                                             "first_dense_layers",
                                             "router_bias",
                                             "mla",
                                             "vision",
                                             "published_params",
                                             "published_active_params"};
// The flat MoE keys besides `experts`; they need experts >= 1.
const std::vector<std::string> kMoeIntKeys = {"experts_per_token", "expert_intermediate",
                                              "shared_experts", "shared_intermediate",
                                              "first_dense_layers"};
const std::vector<std::string> kMlaKeys = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                           "qk_rope_head_dim", "v_head_dim"};
const std::vector<std::string> kVisionKeys = {
    "layers",     "hidden",   "heads",     "intermediate",     "patch_size",
    "image_size", "channels", "gated_mlp", "projector_params", "tokens_per_image"};

// The node at a dotted path below `node` ("mla.kv_lora_rank"); `node` itself for "".
YamlNode NodeAt(const YamlNode& node, std::string_view dotted) {
  YamlNode at = node;
  while (!dotted.empty()) {
    const size_t dot = dotted.find('.');
    at = at[dotted.substr(0, dot)];
    dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
  }
  return at;
}

Status ReadShape(const YamlNode& node, ModelSpec& m) {
  FP_ASSIGN_OR_RETURN(m.layers, node["layers"].AsInt());
  FP_ASSIGN_OR_RETURN(m.hidden, node["hidden"].AsInt());
  FP_ASSIGN_OR_RETURN(m.heads, node["heads"].AsInt());
  FP_ASSIGN_OR_RETURN(m.kv_heads, node["kv_heads"].AsInt());
  FP_ASSIGN_OR_RETURN(m.head_dim, node["head_dim"].AsInt());
  FP_ASSIGN_OR_RETURN(m.intermediate, node["intermediate"].IntOr(0));
  FP_ASSIGN_OR_RETURN(m.vocab, node["vocab"].AsInt());
  FP_ASSIGN_OR_RETURN(m.gated_mlp, node["gated_mlp"].BoolOr(true));
  FP_ASSIGN_OR_RETURN(m.tied_embeddings, node["tied_embeddings"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(m.qkv_bias, node["qkv_bias"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(m.qk_norm, node["qk_norm"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(m.norms_per_layer, node["norms_per_layer"].IntOr(2));
  FP_ASSIGN_OR_RETURN(m.max_context, node["max_context"].IntOr(0));
  FP_ASSIGN_OR_RETURN(m.sliding_window, node["sliding_window"].IntOr(0));
  FP_ASSIGN_OR_RETURN(m.global_every, node["global_every"].IntOr(0));
  FP_ASSIGN_OR_RETURN(m.published_params, node["published_params"].IntOr(0));
  FP_ASSIGN_OR_RETURN(m.published_active_params, node["published_active_params"].IntOr(0));
  FP_ASSIGN_OR_RETURN(const std::string dtype, node["native_dtype"].StringOr("bf16"));
  Expected<DType> parsed = ParseDType(dtype);
  if (!parsed.ok()) return node["native_dtype"].Error(parsed.status().message());
  m.native_dtype = *parsed;
  return Status::Ok();
}

std::string DenseOnlyMessage(std::string_view key) {
  return std::string(key) +
         " applies to mixture-of-experts models only; set experts >= 1 or "
         "remove it";
}

// `experts: 0` (or absent) is a dense model; then the other MoE keys must be absent or 0.
Status ReadMoe(const YamlNode& node, ModelSpec& m) {
  FP_ASSIGN_OR_RETURN(const int64_t experts, node["experts"].IntOr(0));
  if (experts == 0) {
    for (const std::string& key : kMoeIntKeys) {
      FP_ASSIGN_OR_RETURN(const int64_t value, node[key].IntOr(0));
      if (value != 0) return node[key].Error(DenseOnlyMessage(key));
    }
    FP_ASSIGN_OR_RETURN(const bool router_bias, node["router_bias"].BoolOr(false));
    if (router_bias) return node["router_bias"].Error(DenseOnlyMessage("router_bias"));
    return Status::Ok();
  }
  MoeSpec e;
  e.experts = experts;
  FP_ASSIGN_OR_RETURN(e.experts_per_token, node["experts_per_token"].AsInt());
  FP_ASSIGN_OR_RETURN(e.expert_intermediate, node["expert_intermediate"].AsInt());
  FP_ASSIGN_OR_RETURN(e.shared_experts, node["shared_experts"].IntOr(0));
  FP_ASSIGN_OR_RETURN(e.shared_intermediate, node["shared_intermediate"].IntOr(0));
  FP_ASSIGN_OR_RETURN(e.first_dense_layers, node["first_dense_layers"].IntOr(0));
  FP_ASSIGN_OR_RETURN(e.router_bias, node["router_bias"].BoolOr(false));
  m.moe = e;
  return Status::Ok();
}

Status ReadMla(const YamlNode& node, ModelSpec& m) {
  const YamlNode mla = node["mla"];
  if (!mla.present() || mla.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(mla.CheckKeys(kMlaKeys));
  MlaSpec a;
  FP_ASSIGN_OR_RETURN(a.q_lora_rank, mla["q_lora_rank"].IntOr(0));
  FP_ASSIGN_OR_RETURN(a.kv_lora_rank, mla["kv_lora_rank"].AsInt());
  FP_ASSIGN_OR_RETURN(a.qk_nope_head_dim, mla["qk_nope_head_dim"].AsInt());
  FP_ASSIGN_OR_RETURN(a.qk_rope_head_dim, mla["qk_rope_head_dim"].AsInt());
  FP_ASSIGN_OR_RETURN(a.v_head_dim, mla["v_head_dim"].AsInt());
  m.mla = a;
  return Status::Ok();
}

Status ReadVision(const YamlNode& node, ModelSpec& m) {
  const YamlNode vision = node["vision"];
  if (!vision.present() || vision.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(vision.CheckKeys(kVisionKeys));
  VisionSpec v;
  FP_ASSIGN_OR_RETURN(v.layers, vision["layers"].AsInt());
  FP_ASSIGN_OR_RETURN(v.hidden, vision["hidden"].AsInt());
  FP_ASSIGN_OR_RETURN(v.heads, vision["heads"].AsInt());
  FP_ASSIGN_OR_RETURN(v.intermediate, vision["intermediate"].AsInt());
  FP_ASSIGN_OR_RETURN(v.patch_size, vision["patch_size"].AsInt());
  FP_ASSIGN_OR_RETURN(v.image_size, vision["image_size"].AsInt());
  FP_ASSIGN_OR_RETURN(v.channels, vision["channels"].IntOr(3));
  FP_ASSIGN_OR_RETURN(v.gated_mlp, vision["gated_mlp"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(v.projector_params, vision["projector_params"].AsInt());
  FP_ASSIGN_OR_RETURN(v.tokens_per_image, vision["tokens_per_image"].AsInt());
  m.vision = v;
  return Status::Ok();
}

}  // namespace

Expected<ModelSpec> Catalog::ParseModelSpec(const YamlNode& node, std::string name) {
  FP_RETURN_IF_ERROR(node.CheckKeys(kModelKeys));
  ModelSpec m;
  m.name = std::move(name);
  FP_ASSIGN_OR_RETURN(m.description, node["description"].StringOr(""));
  FP_ASSIGN_OR_RETURN(m.source, node["source"].StringOr(catalog_internal::UserSource(node)));
  FP_RETURN_IF_ERROR(ReadShape(node, m));
  FP_RETURN_IF_ERROR(ReadMoe(node, m));
  FP_RETURN_IF_ERROR(ReadMla(node, m));
  FP_RETURN_IF_ERROR(ReadVision(node, m));
  if (std::optional<ModelSpecProblem> problem = FindModelSpecProblem(m)) {
    return NodeAt(node, problem->field).Error(problem->message);
  }
  return m;
}

}  // namespace fleetplan
