#include "fleetplan/catalog/model.h"

#include <fmt/format.h>

#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

// Largest value accepted for any single dimension (layers, widths, vocab, experts): far
// above any published model, low enough that sums of two dimensions cannot overflow.
constexpr int64_t kMaxDimension = int64_t{1} << 24;
// Largest total parameter count accepted (10^15, ~1000x the largest published model): keeps
// every derived byte count far inside int64 and catches unit mistakes in user files.
constexpr double kMaxParams = 1e15;
// A model has at most this many norm vectors per layer (gemma-2 has 4).
constexpr int64_t kMaxNormsPerLayer = 16;

// The parameter arithmetic of model.h, over T = int64_t (exact counts) or T = double (the
// overflow check in FindModelSpecProblem, which runs before any exact count).
template <typename T>
struct Counts {
  T embedding{}, lm_head{}, attention{}, ffn_dense{}, ffn_experts{}, ffn_shared{}, router{};
  T norms{}, vision_encoder{}, vision_projector{}, unvisited_experts{};
};

template <typename T>
T V(int64_t x) {
  return static_cast<T>(x);
}

template <typename T>
T FfnParams(const ModelSpec& m, int64_t width) {
  const int64_t matrices = m.gated_mlp ? 3 : 2;
  return V<T>(matrices) * V<T>(m.hidden) * V<T>(width);
}

template <typename T>
T MlaAttentionPerLayer(const ModelSpec& m) {
  const MlaSpec& a = *m.mla;
  const T q_out = V<T>(m.heads) * V<T>(a.qk_nope_head_dim + a.qk_rope_head_dim);
  const T q = a.q_lora_rank > 0 ? V<T>(m.hidden) * V<T>(a.q_lora_rank) + V<T>(a.q_lora_rank) +
                                      V<T>(a.q_lora_rank) * q_out
                                : V<T>(m.hidden) * q_out;
  const T kv_a = V<T>(m.hidden) * V<T>(a.kv_lora_rank + a.qk_rope_head_dim) + V<T>(a.kv_lora_rank);
  const T kv_b = V<T>(a.kv_lora_rank) * V<T>(m.heads) * V<T>(a.qk_nope_head_dim + a.v_head_dim);
  const T o = V<T>(m.heads) * V<T>(a.v_head_dim) * V<T>(m.hidden);
  return q + kv_a + kv_b + o;
}

template <typename T>
T GqaAttentionPerLayer(const ModelSpec& m) {
  const T q_width = V<T>(m.heads) * V<T>(m.head_dim);
  const T kv_width = V<T>(m.kv_heads) * V<T>(m.head_dim);
  T total = V<T>(m.hidden) * (q_width + V<T>(2) * kv_width) + q_width * V<T>(m.hidden);
  if (m.qkv_bias) total += q_width + V<T>(2) * kv_width;
  if (m.qk_norm) total += V<T>(2) * V<T>(m.head_dim);
  return total;
}

// CLIP-style ViT: see model.h for the formula.
template <typename T>
T VisionEncoderParams(const VisionSpec& v) {
  const T h = V<T>(v.hidden);
  const T side = V<T>(v.image_size / v.patch_size);
  const T patches = side * side;
  const T embeddings =
      V<T>(v.channels) * V<T>(v.patch_size) * V<T>(v.patch_size) * h + h + (patches + V<T>(1)) * h;
  const T pre_post_norms = V<T>(4) * h;
  const T attention = V<T>(4) * (h * h + h);
  const T layer_norms = V<T>(4) * h;
  const T i = V<T>(v.intermediate);
  const T mlp = v.gated_mlp ? V<T>(3) * h * i + V<T>(2) * i + h : V<T>(2) * h * i + i + h;
  return embeddings + pre_post_norms + V<T>(v.layers) * (attention + layer_norms + mlp);
}

template <typename T>
Counts<T> Count(const ModelSpec& m) {
  Counts<T> c;
  c.embedding = V<T>(m.vocab) * V<T>(m.hidden);
  c.lm_head = m.tied_embeddings ? T{} : c.embedding;
  c.attention = V<T>(m.layers) * (m.mla ? MlaAttentionPerLayer<T>(m) : GqaAttentionPerLayer<T>(m));
  c.ffn_dense = V<T>(DenseFfnLayers(m)) * FfnParams<T>(m, m.intermediate);
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    const T moe_layers = V<T>(MoeLayers(m));
    const T one_expert = FfnParams<T>(m, e.expert_intermediate);
    c.ffn_experts = moe_layers * V<T>(e.experts) * one_expert;
    c.unvisited_experts = moe_layers * V<T>(e.experts - e.experts_per_token) * one_expert;
    c.ffn_shared = moe_layers * V<T>(e.shared_experts) * FfnParams<T>(m, e.shared_intermediate);
    const T router_per_layer =
        V<T>(m.hidden) * V<T>(e.experts) + (e.router_bias ? V<T>(e.experts) : T{});
    c.router = moe_layers * router_per_layer;
  }
  c.norms = V<T>(m.layers) * V<T>(m.norms_per_layer) * V<T>(m.hidden) + V<T>(m.hidden);
  if (m.vision) {
    c.vision_encoder = VisionEncoderParams<T>(*m.vision);
    c.vision_projector = V<T>(m.vision->projector_params);
  }
  return c;
}

template <typename T>
T Total(const Counts<T>& c) {
  return c.embedding + c.lm_head + c.attention + c.ffn_dense + c.ffn_experts + c.ffn_shared +
         c.router + c.norms + c.vision_encoder + c.vision_projector;
}

ModelSpecProblem Problem(std::string field, std::string message) {
  return ModelSpecProblem{std::move(field), std::move(message)};
}

// "<field> must be an integer in [min, kMaxDimension], got <v>" when out of range.
std::optional<ModelSpecProblem> CheckDimension(std::string_view field, int64_t value, int64_t min) {
  if (value >= min && value <= kMaxDimension) return std::nullopt;
  return Problem(std::string(field),
                 fmt::format("expected an integer in [{}, {}], got {}", min, kMaxDimension, value));
}

std::optional<ModelSpecProblem> FindShapeProblem(const ModelSpec& m) {
  const std::pair<std::string_view, int64_t> required[] = {
      {"layers", m.layers},     {"hidden", m.hidden},     {"heads", m.heads},
      {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim}, {"vocab", m.vocab},
  };
  for (const auto& [field, value] : required) {
    if (auto p = CheckDimension(field, value, 1)) return p;
  }
  if (m.heads % m.kv_heads != 0) {
    return Problem("kv_heads", fmt::format("heads ({}) must be a multiple of kv_heads ({})",
                                           m.heads, m.kv_heads));
  }
  if (m.norms_per_layer < 0 || m.norms_per_layer > kMaxNormsPerLayer) {
    return Problem("norms_per_layer", fmt::format("expected an integer in [0, {}], got {}",
                                                  kMaxNormsPerLayer, m.norms_per_layer));
  }
  if (m.published_params < 0) {
    return Problem("published_params", fmt::format("expected an integer >= 0 (0 = unknown), got {}",
                                                   m.published_params));
  }
  if (m.published_active_params < 0) {
    return Problem(
        "published_active_params",
        fmt::format("expected an integer >= 0 (0 = unknown), got {}", m.published_active_params));
  }
  if (m.max_context < 0) {
    return Problem("max_context", fmt::format("expected an integer >= 0, got {}", m.max_context));
  }
  return std::nullopt;
}

std::optional<ModelSpecProblem> FindWindowProblem(const ModelSpec& m) {
  if (auto p = CheckDimension("sliding_window", m.sliding_window, 0)) return p;
  if (m.global_every < 0 || m.global_every > m.layers) {
    return Problem("global_every", fmt::format("expected an integer in [0, layers = {}], got {}",
                                               m.layers, m.global_every));
  }
  if (m.global_every > 0 && m.sliding_window == 0) {
    return Problem("global_every",
                   fmt::format("global_every ({}) interleaves windowed and global layers, so "
                               "sliding_window must be >= 1, got 0",
                               m.global_every));
  }
  return std::nullopt;
}

std::optional<ModelSpecProblem> FindMoeProblem(const ModelSpec& m) {
  if (!m.moe) return std::nullopt;
  const MoeSpec& e = *m.moe;
  if (auto p = CheckDimension("experts", e.experts, 1)) return p;
  if (e.experts_per_token < 1 || e.experts_per_token > e.experts) {
    return Problem("experts_per_token",
                   fmt::format("expected an integer in [1, experts = {}], got {}", e.experts,
                               e.experts_per_token));
  }
  if (auto p = CheckDimension("expert_intermediate", e.expert_intermediate, 1)) return p;
  if (auto p = CheckDimension("shared_experts", e.shared_experts, 0)) return p;
  if (e.shared_experts > 0) {
    if (auto p = CheckDimension("shared_intermediate", e.shared_intermediate, 1)) return p;
  }
  if (e.first_dense_layers < 0 || e.first_dense_layers >= m.layers) {
    return Problem("first_dense_layers", fmt::format("expected an integer in [0, layers - 1 = {}], "
                                                     "got {}",
                                                     m.layers - 1, e.first_dense_layers));
  }
  return std::nullopt;
}

// REQUIRES: FindMoeProblem(m) found nothing (DenseFfnLayers reads first_dense_layers).
std::optional<ModelSpecProblem> FindFfnProblem(const ModelSpec& m) {
  if (auto p = CheckDimension("intermediate", m.intermediate, 0)) return p;
  if (DenseFfnLayers(m) > 0 && m.intermediate == 0) {
    return Problem("intermediate", fmt::format("expected an integer >= 1 ({} layers have a dense "
                                               "FFN of this width), got 0",
                                               DenseFfnLayers(m)));
  }
  return std::nullopt;
}

std::optional<ModelSpecProblem> FindMlaProblem(const ModelSpec& m) {
  if (!m.mla) return std::nullopt;
  const MlaSpec& a = *m.mla;
  const std::pair<std::string_view, int64_t> required[] = {
      {"mla.kv_lora_rank", a.kv_lora_rank},
      {"mla.qk_nope_head_dim", a.qk_nope_head_dim},
      {"mla.qk_rope_head_dim", a.qk_rope_head_dim},
      {"mla.v_head_dim", a.v_head_dim},
  };
  for (const auto& [field, value] : required) {
    if (auto p = CheckDimension(field, value, 1)) return p;
  }
  return CheckDimension("mla.q_lora_rank", a.q_lora_rank, 0);
}

std::optional<ModelSpecProblem> FindVisionProblem(const ModelSpec& m) {
  if (!m.vision) return std::nullopt;
  const VisionSpec& v = *m.vision;
  const std::pair<std::string_view, int64_t> required[] = {
      {"vision.layers", v.layers},         {"vision.hidden", v.hidden},
      {"vision.heads", v.heads},           {"vision.intermediate", v.intermediate},
      {"vision.patch_size", v.patch_size}, {"vision.image_size", v.image_size},
      {"vision.channels", v.channels},     {"vision.tokens_per_image", v.tokens_per_image},
  };
  for (const auto& [field, value] : required) {
    if (auto p = CheckDimension(field, value, 1)) return p;
  }
  if (v.hidden % v.heads != 0) {
    return Problem("vision.heads", fmt::format("vision.hidden ({}) must be a multiple of "
                                               "vision.heads ({})",
                                               v.hidden, v.heads));
  }
  if (v.image_size % v.patch_size != 0) {
    return Problem("vision.patch_size", fmt::format("vision.image_size ({}) must be a multiple of "
                                                    "vision.patch_size ({})",
                                                    v.image_size, v.patch_size));
  }
  if (v.projector_params < 0 || static_cast<double>(v.projector_params) > kMaxParams) {
    return Problem(
        "vision.projector_params",
        fmt::format("expected an integer in [0, {:.0e}], got {}", kMaxParams, v.projector_params));
  }
  return std::nullopt;
}

}  // namespace

int64_t ParamBreakdown::decoder_total() const {
  return embedding + lm_head + attention + ffn_dense + ffn_experts + ffn_shared + router + norms;
}

int64_t ParamBreakdown::total() const {
  return decoder_total() + vision_encoder + vision_projector;
}

ParamBreakdown CountParams(const ModelSpec& m) {
  FP_ASSERT(m.layers > 0 && m.kv_heads > 0 && (!m.vision || m.vision->patch_size > 0));
  const Counts<int64_t> c = Count<int64_t>(m);
  ParamBreakdown out;
  out.embedding = c.embedding;
  out.lm_head = c.lm_head;
  out.attention = c.attention;
  out.ffn_dense = c.ffn_dense;
  out.ffn_experts = c.ffn_experts;
  out.ffn_shared = c.ffn_shared;
  out.router = c.router;
  out.norms = c.norms;
  out.vision_encoder = c.vision_encoder;
  out.vision_projector = c.vision_projector;
  out.active_per_token = out.decoder_total() - c.unvisited_experts;
  return out;
}

int64_t WindowedLayers(const ModelSpec& m) {
  if (m.sliding_window == 0) return 0;
  if (m.global_every == 0) return m.layers;
  return m.layers - m.layers / m.global_every;
}

int64_t GlobalLayers(const ModelSpec& m) { return m.layers - WindowedLayers(m); }

int64_t DenseFfnLayers(const ModelSpec& m) { return m.moe ? m.moe->first_dense_layers : m.layers; }

int64_t MoeLayers(const ModelSpec& m) { return m.layers - DenseFfnLayers(m); }

int64_t KvElementsPerTokenPerLayer(const ModelSpec& m) {
  if (m.mla) return m.mla->kv_lora_rank + m.mla->qk_rope_head_dim;
  return 2 * m.kv_heads * m.head_dim;
}

std::string_view AttentionKindName(const ModelSpec& m) {
  if (m.mla) return "mla";
  if (m.kv_heads == m.heads) return "mha";
  if (m.kv_heads == 1) return "mqa";
  return "gqa";
}

std::optional<ModelSpecProblem> FindModelSpecProblem(const ModelSpec& m) {
  if (auto p = FindShapeProblem(m)) return p;
  if (auto p = FindWindowProblem(m)) return p;
  if (auto p = FindMoeProblem(m)) return p;
  if (auto p = FindFfnProblem(m)) return p;
  if (auto p = FindMlaProblem(m)) return p;
  if (auto p = FindVisionProblem(m)) return p;
  const double total = Total(Count<double>(m));
  if (total > kMaxParams) {
    return Problem("", fmt::format("the shape has {:.3e} parameters, more than the limit "
                                   "{:.0e}; check the sizes",
                                   total, kMaxParams));
  }
  return std::nullopt;
}

}  // namespace fleetplan
