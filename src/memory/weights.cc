#include "fleetplan/memory/weights.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A half-open range of layer indices.
struct LayerRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// The part of `total` (spread evenly over the layers of `set`) that falls in `stage`.
// Cumulative rounding, so the parts of all stages add up to `total` exactly.
int64_t StageShare(int64_t total, LayerRange set, LayerRange stage) {
  if (set.size() <= 0 || total == 0) return 0;
  auto before = [&](int64_t layer) { return std::clamp(layer, set.begin, set.end) - set.begin; };
  return total * before(stage.end) / set.size() - total * before(stage.begin) / set.size();
}

bool IsGlobalLayer(const ModelSpec& m, int64_t layer) {
  if (m.sliding_window == 0) return true;
  return m.global_every > 0 && (layer + 1) % m.global_every == 0;
}

// Wide parts (embedding, LM head, norms, router, vision) stay at 16 bits under quantization.
DType WideDType(DType weight) { return BitsPerElement(weight) >= 16 ? weight : kWideWeightDType; }

// Builds the terms one at a time; each term gets its per-stage, per-rank params.
class TermBuilder {
 public:
  TermBuilder(const MemoryInputs& in, std::vector<StageLayers> stages)
      : in_(in), stages_(std::move(stages)) {}

  const std::vector<StageLayers>& stages() const { return stages_; }
  int64_t tp() const { return in_.layout.tp; }
  int64_t pp() const { return in_.layout.pp; }
  bool last(size_t s) const { return s + 1 == stages_.size(); }
  LayerRange range(size_t s) const {
    return {stages_[s].first_layer, stages_[s].first_layer + stages_[s].layers};
  }

  // `per_rank(stage index)` returns the params one rank of that stage holds.
  template <typename PerRank>
  void Add(std::string name, DType dtype, std::string sharding, int64_t params, PerRank per_rank) {
    WeightTerm t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.sharding = std::move(sharding);
    t.params = params;
    t.bytes = BytesFor(dtype, params);
    for (size_t s = 0; s < stages_.size(); ++s) {
      const int64_t p = per_rank(s);
      t.params_per_rank.push_back(p);
      t.bytes_per_rank.push_back(BytesFor(dtype, p));
    }
    const bool holds_any = std::any_of(t.params_per_rank.begin(), t.params_per_rank.end(),
                                       [](int64_t p) { return p > 0; });
    if (params > 0 || holds_any) terms_.push_back(std::move(t));
  }

  // A term spread over the layers of `set`, sharded `ways` ways on each rank of a stage.
  void AddLayered(std::string name, DType dtype, std::string sharding, int64_t params,
                  LayerRange set, int64_t ways) {
    Add(std::move(name), dtype, std::move(sharding), params,
        [&](size_t s) { return CeilDiv(StageShare(params, set, range(s)), ways); });
  }

  std::vector<WeightTerm> Take() { return std::move(terms_); }

 private:
  const MemoryInputs& in_;
  std::vector<StageLayers> stages_;
  std::vector<WeightTerm> terms_;
};

std::string Tp(int64_t tp) { return fmt::format("TP/{}", tp); }

// K/V projection parameters of one layer (GQA), bias included.
int64_t KvProjectionParamsPerLayer(const ModelSpec& m) {
  const int64_t width = m.kv_heads * m.head_dim;
  return 2 * (m.hidden * width + (m.qkv_bias ? width : 0));
}

// MLA down-projections of one layer (q_a when queries are compressed, kv_a with the RoPE
// key), replicated on every TP rank.
int64_t MlaDownProjectionParamsPerLayer(const ModelSpec& m) {
  const MlaSpec& mla = *m.mla;
  return m.hidden * mla.q_lora_rank + m.hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim);
}

// MLA latent RMSNorm weights of one layer (after q_a and kv_a), replicated.
int64_t MlaLatentNormParamsPerLayer(const ModelSpec& m) {
  return m.mla->q_lora_rank + m.mla->kv_lora_rank;
}

// Per-head q/k RMSNorm weights of one layer (qk_norm), replicated on every TP rank.
int64_t QkNormParamsPerLayer(const ModelSpec& m) { return m.qk_norm ? 2 * m.head_dim : 0; }

void AddAttention(TermBuilder& b, const MemoryInputs& in, int64_t attention,
                  std::vector<std::string>& notes) {
  const ModelSpec& m = in.model;
  const LayerRange all{0, m.layers};
  const int64_t tp = b.tp();
  if (m.mla) {
    const int64_t down = MlaDownProjectionParamsPerLayer(m) * m.layers;
    const int64_t norms = MlaLatentNormParamsPerLayer(m) * m.layers;
    FP_ASSERT(down + norms <= attention);
    b.AddLayered("attention q/kv up, o (MLA)", in.weight_dtype, Tp(tp), attention - down - norms,
                 all, tp);
    b.AddLayered("attention q_a/kv_a down (MLA)", in.weight_dtype, "replicated", down, all, 1);
    b.AddLayered("attention latent norms (MLA)", WideDType(in.weight_dtype), "replicated", norms,
                 all, 1);
    if (tp > 1) notes.push_back("MLA down-projections (q_a, kv_a) are replicated on every TP rank");
    return;
  }
  const int64_t kv = KvProjectionParamsPerLayer(m) * m.layers;
  const int64_t qk_norm = QkNormParamsPerLayer(m) * m.layers;
  FP_ASSERT(kv + qk_norm <= attention);
  b.AddLayered("attention q/o", in.weight_dtype, Tp(tp), attention - kv - qk_norm, all, tp);
  if (tp <= m.kv_heads) {
    b.AddLayered("attention k/v", in.weight_dtype,
                 fmt::format("TP/{} ({} of {} KV heads per rank)", tp, m.kv_heads / tp, m.kv_heads),
                 kv, all, tp);
  } else {
    const int64_t copies = tp / m.kv_heads;
    b.AddLayered("attention k/v", in.weight_dtype,
                 fmt::format("1 of {} KV heads per rank, each on {} ranks", m.kv_heads, copies), kv,
                 all, m.kv_heads);
    notes.push_back(fmt::format("tp {} > {} KV heads: each K/V projection head is replicated on {} "
                                "ranks",
                                tp, m.kv_heads, copies));
  }
  b.AddLayered("attention q/k norms", WideDType(in.weight_dtype), "replicated", qk_norm, all, 1);
}

void AddEmbeddings(TermBuilder& b, const MemoryInputs& in, const ParamBreakdown& p,
                   std::vector<std::string>& notes) {
  const DType wide = WideDType(in.weight_dtype);
  const int64_t tp = b.tp();
  const std::string where_first = b.pp() > 1 ? ", first stage" : "";
  const std::string where_last = b.pp() > 1 ? ", last stage" : "";
  b.Add("embedding", wide, fmt::format("vocab-parallel TP/{}{}", tp, where_first), p.embedding,
        [&](size_t s) { return s == 0 ? CeilDiv(p.embedding, tp) : 0; });
  if (p.lm_head > 0) {
    b.Add("lm head", wide, fmt::format("vocab-parallel TP/{}{}", tp, where_last), p.lm_head,
          [&](size_t s) { return b.last(s) ? CeilDiv(p.lm_head, tp) : 0; });
  } else if (b.pp() > 1) {
    b.Add("lm head (copy of the tied embedding)", wide,
          fmt::format("vocab-parallel TP/{}{}", tp, where_last), 0,
          [&](size_t s) { return b.last(s) ? CeilDiv(p.embedding, tp) : 0; });
    notes.push_back("tied embeddings with pp > 1: the last stage loads its own copy for the LM "
                    "head");
  }
  if (tp > 1) notes.push_back("embedding and LM head are vocab-parallel: vocab/tp rows per rank");
}

void AddFfn(TermBuilder& b, const MemoryInputs& in, const ParamBreakdown& p,
            std::vector<std::string>& notes) {
  const ModelSpec& m = in.model;
  const int64_t tp = b.tp();
  const int64_t first_moe = m.moe ? m.moe->first_dense_layers : m.layers;
  const LayerRange dense{0, first_moe};
  const LayerRange moe{first_moe, m.layers};
  b.AddLayered("dense ffn", in.weight_dtype, Tp(tp), p.ffn_dense, dense, tp);
  if (!m.moe) return;
  const int64_t ep = in.layout.ep;
  const int64_t experts = m.moe->experts;
  const std::string expert_sharding =
      ep > 1 ? fmt::format("EP {} × TP/{}: {} of {} experts per rank", ep, tp / ep, experts / ep,
                           experts)
             : fmt::format("TP/{}: all {} experts on every rank", tp, experts);
  b.AddLayered("routed experts", in.weight_dtype, expert_sharding, p.ffn_experts, moe, tp);
  b.AddLayered("shared experts", in.weight_dtype, Tp(tp), p.ffn_shared, moe, tp);
  b.AddLayered("router", WideDType(in.weight_dtype), "replicated", p.router, moe, 1);
  notes.push_back("MoE router is replicated on every rank");
}

void AddVision(TermBuilder& b, const MemoryInputs& in, const ParamBreakdown& p) {
  const DType wide = WideDType(in.weight_dtype);
  const int64_t tp = b.tp();
  const std::string where = b.pp() > 1 ? ", first stage" : "";
  b.Add("vision encoder", wide, fmt::format("TP/{}{}", tp, where), p.vision_encoder,
        [&](size_t s) { return s == 0 ? CeilDiv(p.vision_encoder, tp) : 0; });
  b.Add("vision projector", wide, fmt::format("TP/{}{}", tp, where), p.vision_projector,
        [&](size_t s) { return s == 0 ? CeilDiv(p.vision_projector, tp) : 0; });
}

bool IsVisionTerm(const WeightTerm& t) { return t.name.rfind("vision", 0) == 0; }

// Bytes and params touched per token: everything but the vision tower, with the routed
// experts counted at top-k / experts of their total.
void SetActive(const MemoryInputs& in, WeightsPlan& w) {
  for (const WeightTerm& t : w.terms) {
    if (IsVisionTerm(t)) continue;
    if (t.name == "routed experts") {
      const int64_t active = t.params / in.model.moe->experts * in.model.moe->experts_per_token;
      w.active_params_per_token += active;
      w.active_bytes_per_token += BytesFor(t.dtype, active);
      continue;
    }
    w.active_params_per_token += t.params;
    w.active_bytes_per_token += t.bytes;
  }
}

void Summarize(const MemoryInputs& in, WeightsPlan& w) {
  w.bytes_per_rank.assign(static_cast<size_t>(in.layout.pp), Bytes(0));
  for (const WeightTerm& t : w.terms) {
    w.bytes_total += t.bytes;
    if (t.name == "vision encoder") w.vision_encoder_bytes += t.bytes;
    if (t.name == "vision projector") w.vision_projector_bytes += t.bytes;
    if (!IsVisionTerm(t)) w.decoder_bytes += t.bytes;
    for (size_t s = 0; s < t.bytes_per_rank.size(); ++s) w.bytes_per_rank[s] += t.bytes_per_rank[s];
  }
  for (Bytes b : w.bytes_per_rank) w.replica_bytes += b * in.layout.tp;
  SetActive(in, w);
}

}  // namespace

std::vector<StageLayers> SplitStages(const ModelSpec& model, int64_t pp) {
  FP_ASSERT(pp >= 1 && pp <= model.layers);
  std::vector<int64_t> sizes(static_cast<size_t>(pp), model.layers / pp);
  const int64_t remainder = model.layers % pp;
  for (int64_t i = 2; i < remainder + 2; ++i) sizes[static_cast<size_t>(pp - i)] += 1;
  std::vector<StageLayers> stages;
  int64_t first = 0;
  for (int64_t s = 0; s < pp; ++s) {
    StageLayers st;
    st.stage = s;
    st.first_layer = first;
    st.layers = sizes[static_cast<size_t>(s)];
    for (int64_t layer = first; layer < first + st.layers; ++layer) {
      (IsGlobalLayer(model, layer) ? st.global_layers : st.windowed_layers) += 1;
    }
    first += st.layers;
    stages.push_back(st);
  }
  return stages;
}

WeightsPlan PlanWeights(const MemoryInputs& in) {
  const ModelSpec& m = in.model;
  const ParamBreakdown p = CountParams(m);
  WeightsPlan w;
  w.params_total = p.total();
  TermBuilder b(in, SplitStages(m, in.layout.pp));
  AddEmbeddings(b, in, p, w.notes);
  AddAttention(b, in, p.attention, w.notes);
  AddFfn(b, in, p, w.notes);
  b.AddLayered("norms", WideDType(in.weight_dtype), "replicated", p.norms, LayerRange{0, m.layers},
               1);
  AddVision(b, in, p);
  w.notes.push_back("norms are replicated on every rank");
  if (WideDType(in.weight_dtype) != in.weight_dtype) {
    w.notes.push_back(fmt::format("{} applies to the linear layers; embedding, LM head, norms, "
                                  "router and vision tower stay {}",
                                  DTypeName(in.weight_dtype), DTypeName(kWideWeightDType)));
  }
  w.terms = b.Take();
  Summarize(in, w);
  return w;
}

}  // namespace fleetplan
