// Built-in model shapes. Every shape is copied from the model's config.json on Hugging
// Face (repository named in `source`); the published parameter counts are those of the
// model card, model page or technical report named there. Counts are never stored:
// CountParams derives them, and catalog tests compare the two.
#include <string>
#include <utility>

#include "catalog/builtin.h"

namespace fleetplan::catalog_internal {
namespace {

// Llama 3 tokenizer size (128,000 BPE tokens + 256 special tokens).
constexpr int64_t kLlama3Vocab = 128256;
// Llama 3.1 context length (rope-scaled), per the model cards.
constexpr int64_t kLlama31Context = 131072;
// Qwen3 tokenizer size as in config.json (padded above the 151,669 used tokens).
constexpr int64_t kQwen3Vocab = 151936;
// Qwen3 native context, per the model cards (131,072 with YaRN).
constexpr int64_t kQwen3Context = 32768;

ModelSpec Llama(std::string name, std::string description, std::string source, int64_t layers,
                int64_t hidden, int64_t heads, int64_t intermediate) {
  ModelSpec m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.source = std::move(source);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = intermediate;
  m.vocab = kLlama3Vocab;
  m.max_context = kLlama31Context;
  return m;
}

ModelSpec Atlas() {
  ModelSpec m = Llama("atlas-70b", "Atlas, the reference scenario: a ~70B dense GQA decoder, BF16",
                      "fleetplan reference scenario (docs/plan.md, the Atlas bundle); shape as in "
                      "meta-llama/Llama-3.1-70B config.json",
                      80, 8192, 64, 28672);
  return m;  // not a published model: no published count
}

ModelSpec Llama31_8b() {
  ModelSpec m = Llama("llama-3.1-8b", "Llama 3.1 8B, dense GQA decoder",
                      "meta-llama/Llama-3.1-8B config.json; count: model page (safetensors) "
                      "8.03B params",
                      32, 4096, 32, 14336);
  m.published_params = 8'030'000'000;
  return m;
}

ModelSpec Llama31_70b() {
  ModelSpec m = Llama("llama-3.1-70b", "Llama 3.1 70B, dense GQA decoder",
                      "meta-llama/Llama-3.1-70B config.json; count: model page (safetensors) "
                      "70.6B params",
                      80, 8192, 64, 28672);
  m.published_params = 70'600'000'000;
  return m;
}

ModelSpec Llama31_405b() {
  ModelSpec m = Llama("llama-3.1-405b", "Llama 3.1 405B, dense GQA decoder",
                      "meta-llama/Llama-3.1-405B config.json; count: model card, 405B params", 126,
                      16384, 128, 53248);
  m.published_params = 405'000'000'000;
  return m;
}

ModelSpec Qwen3_32b() {
  ModelSpec m;
  m.name = "qwen3-32b";
  m.description = "Qwen3 32B, dense GQA decoder with q/k RMSNorm";
  m.source = "Qwen/Qwen3-32B config.json; count: model card, 32.8B params (31.2B non-embedding)";
  m.layers = 64;
  m.hidden = 5120;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = 25600;
  m.vocab = kQwen3Vocab;
  m.qk_norm = true;
  m.max_context = kQwen3Context;
  m.published_params = 32'800'000'000;
  return m;
}

ModelSpec Qwen3_30bA3b() {
  ModelSpec m;
  m.name = "qwen3-30b-a3b";
  m.description = "Qwen3 30B-A3B, MoE: 128 experts, top-8, every layer";
  m.source = "Qwen/Qwen3-30B-A3B config.json; count: model card, 30.5B total, 3.3B activated";
  m.layers = 48;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.intermediate = 6144;  // config.json intermediate_size; unused: every layer is MoE
  m.vocab = kQwen3Vocab;
  m.qk_norm = true;
  m.max_context = kQwen3Context;
  m.moe = MoeSpec{.experts = 128, .experts_per_token = 8, .expert_intermediate = 768};
  m.published_params = 30'500'000'000;
  m.published_active_params = 3'300'000'000;
  return m;
}

ModelSpec Mixtral8x7b() {
  ModelSpec m;
  m.name = "mixtral-8x7b";
  m.description = "Mixtral 8x7B, MoE: 8 experts, top-2, every layer";
  m.source =
      "mistralai/Mixtral-8x7B-v0.1 config.json; count: Mistral AI, \"Mixtral of experts\" "
      "(2023-12-11): 46.7B total, 12.9B per token";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = 14336;  // unused: every layer is MoE
  m.vocab = 32000;
  m.max_context = 32768;
  m.moe = MoeSpec{.experts = 8, .experts_per_token = 2, .expert_intermediate = 14336};
  m.published_params = 46'700'000'000;
  m.published_active_params = 12'900'000'000;
  return m;
}

ModelSpec Mistral7b() {
  ModelSpec m;
  m.name = "mistral-7b";
  m.description = "Mistral 7B v0.1, dense GQA decoder, sliding window 4096 on every layer";
  m.source =
      "mistralai/Mistral-7B-v0.1 config.json (sliding_window 4096); count: model page "
      "(safetensors) 7.24B params";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = 14336;
  m.vocab = 32000;
  m.max_context = 32768;
  m.sliding_window = 4096;
  m.published_params = 7'240'000'000;
  return m;
}

ModelSpec Gemma2_27b() {
  ModelSpec m;
  m.name = "gemma-2-27b";
  m.description = "Gemma 2 27B, dense GQA decoder, sliding window 4096 on every other layer";
  m.source =
      "google/gemma-2-27b config.json; count: Gemma 2 technical report (arXiv:2408.00118) "
      "Table 2, 1,179,648,000 embedding + 26,047,480,320 non-embedding";
  m.layers = 46;
  m.hidden = 4608;
  m.heads = 32;
  m.kv_heads = 16;
  m.head_dim = 128;
  m.intermediate = 36864;
  m.vocab = 256000;
  m.tied_embeddings = true;
  m.norms_per_layer = 4;  // pre and post norm around both attention and FFN
  m.max_context = 8192;
  m.sliding_window = 4096;
  m.global_every = 2;  // layers 1, 3, 5, ... (0-based) are global
  m.published_params = 27'227'128'320;
  return m;
}

ModelSpec Llava15_7b() {
  ModelSpec m;
  m.name = "llava-1.5-7b";
  m.description = "LLaVA 1.5 7B: CLIP ViT-L/14-336 + 2-layer MLP projector + Vicuna-7B decoder";
  m.source =
      "llava-hf/llava-1.5-7b-hf config.json (text: Llama-2-7B shape, vision: "
      "openai/clip-vit-large-patch14-336); count: model page (safetensors) 7.06B params";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.head_dim = 128;
  m.intermediate = 11008;
  m.vocab = 32064;  // 32,000 + the <image> token, padded to a multiple of 64
  m.max_context = 4096;
  m.native_dtype = DType::kFp16;
  VisionSpec v;
  v.layers = 24;
  v.hidden = 1024;
  v.heads = 16;
  v.intermediate = 4096;
  v.patch_size = 14;
  v.image_size = 336;
  // Linear(1024, 4096) + GELU + Linear(4096, 4096), with biases.
  v.projector_params = (1024 * 4096 + 4096) + (4096 * 4096 + 4096);
  v.tokens_per_image = 576;  // (336 / 14)^2 patch features; the class token is dropped
  m.vision = v;
  m.published_params = 7'060'000'000;
  return m;
}

ModelSpec DeepseekV3() {
  ModelSpec m;
  m.name = "deepseek-v3";
  m.description =
      "DeepSeek-V3, MoE with multi-head latent attention: 256 routed experts, "
      "top-8, 1 shared; first 3 layers dense";
  m.source =
      "deepseek-ai/DeepSeek-V3 config.json; count: DeepSeek-V3 technical report "
      "(arXiv:2412.19437), 671B total, 37B activated per token (main model; the 14B "
      "multi-token-prediction module is not counted)";
  m.layers = 61;
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 128;  // config.json num_key_value_heads; the cache holds the latent instead
  m.head_dim = 192;  // qk_nope_head_dim + qk_rope_head_dim
  m.intermediate = 18432;
  m.vocab = 129280;
  m.max_context = 163840;
  m.native_dtype = DType::kFp8;
  m.moe = MoeSpec{.experts = 256,
                  .experts_per_token = 8,
                  .expert_intermediate = 2048,
                  .shared_experts = 1,
                  .shared_intermediate = 2048,
                  .first_dense_layers = 3,
                  .router_bias = true};
  m.mla = MlaSpec{.q_lora_rank = 1536,
                  .kv_lora_rank = 512,
                  .qk_nope_head_dim = 128,
                  .qk_rope_head_dim = 64,
                  .v_head_dim = 128};
  m.published_params = 671'000'000'000;
  m.published_active_params = 37'000'000'000;
  return m;
}

}  // namespace

std::vector<ModelSpec> BuiltinModels() {
  return {Atlas(),       Llama31_8b(), Llama31_70b(), Llama31_405b(), Qwen3_32b(), Qwen3_30bA3b(),
          Mixtral8x7b(), Mistral7b(),  Gemma2_27b(),  Llava15_7b(),   DeepseekV3()};
}

}  // namespace fleetplan::catalog_internal
