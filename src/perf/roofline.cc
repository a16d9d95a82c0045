#include "fleetplan/perf/roofline.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/memory/kv.h"
#include "fleetplan/memory/weights.h"

namespace fleetplan {

namespace {

enum class TermKind { kLinear, kHead, kRouted, kSkipped };

// How a weight term of memory/weights.h is read in a step.
TermKind KindOf(const WeightTerm& t, bool tied_head_is_embedding) {
  if (t.name == "embedding") return tied_head_is_embedding ? TermKind::kHead : TermKind::kSkipped;
  if (t.name.rfind("lm head", 0) == 0) return TermKind::kHead;
  if (t.name == "routed experts") return TermKind::kRouted;
  if (t.name.rfind("vision", 0) == 0) return TermKind::kSkipped;
  return TermKind::kLinear;
}

// Σ_{q = context + 1}^{context + n} min(q, window): keys seen by each query of a prefill
// chunk under causal masking and a window.
double PrefillPairs(int64_t context, int64_t n, int64_t window) {
  const double a = static_cast<double>(context + 1);
  const double b = static_cast<double>(context + n);
  const double w = static_cast<double>(window);
  const double count = static_cast<double>(n);
  if (b <= w) return (a + b) * count / 2.0;
  if (a >= w) return w * count;
  return (a + w) * (w - a + 1.0) / 2.0 + w * (b - w);
}

// A decode sees min(context + 1, window) keys and reads their KV.
void AddDecode(int64_t context, int64_t window, double times, double* pairs, double* kv) {
  const double keys = static_cast<double>(std::min(context + 1, window));
  *pairs += times * keys;
  *kv += times * keys;
}

Status CheckEfficiency(double v, std::string_view name) {
  if (v > 0 && v <= 1) return Status::Ok();
  return InvalidInput(fmt::format("{}: expected a number in (0, 1], got {}", name, v));
}

double Seconds(double value, double per_second) { return value / per_second; }

Duration FromSeconds(double s) { return Duration::Nanos(std::llround(s * 1e9)); }

}  // namespace

Expected<RooflineParams> RooflineStepModel::Parse(const YamlNode& node) {
  FP_RETURN_IF_ERROR(
      node.CheckKeys({"kind", "compute_efficiency", "attention_efficiency", "memory_efficiency"}));
  RooflineParams p;
  const std::pair<const char*, double*> fields[] = {
      {"compute_efficiency", &p.compute_efficiency},
      {"attention_efficiency", &p.attention_efficiency},
      {"memory_efficiency", &p.memory_efficiency}};
  for (const auto& [key, target] : fields) {
    const YamlNode v = node[key];
    if (!v.present() || v.IsNull()) continue;
    FP_ASSIGN_OR_RETURN(const double x, v.AsDouble());
    if (!(x > 0 && x <= 1)) return v.Error(fmt::format("expected a number in (0, 1], got {}", v.Text()));
    *target = x;
  }
  return p;
}

Expected<std::unique_ptr<RooflineStepModel>> RooflineStepModel::Create(const RooflineInputs& in) {
  if (const auto bad = ValidateMemoryInputs(in.memory)) {
    return InvalidInput(fmt::format("{}: {}", MemoryFieldName(bad->field), bad->message));
  }
  FP_RETURN_IF_ERROR(CheckEfficiency(in.params.compute_efficiency, "compute_efficiency"));
  FP_RETURN_IF_ERROR(CheckEfficiency(in.params.attention_efficiency, "attention_efficiency"));
  FP_RETURN_IF_ERROR(CheckEfficiency(in.params.memory_efficiency, "memory_efficiency"));
  const GpuSpec& gpu = in.memory.gpu;
  if (!(gpu.memory_bandwidth > 0) || !(gpu.PeakFlops(in.memory.weight_dtype) > 0) ||
      !(gpu.PeakFlops(kActivationDType) > 0)) {
    return InvalidInput(fmt::format("gpu '{}': the roofline needs memory_bandwidth and peak FLOP/s > 0",
                                    gpu.name));
  }
  if (in.memory.layout.tp > 1 && !(in.tp_link.bandwidth > 0)) {
    return InvalidInput(fmt::format("link '{}': tp {} needs a link bandwidth > 0", in.tp_link.name,
                                    in.memory.layout.tp));
  }
  if (in.memory.layout.pp > 1 && !(in.pp_link.bandwidth > 0)) {
    return InvalidInput(fmt::format("link '{}': pp {} needs a link bandwidth > 0", in.pp_link.name,
                                    in.memory.layout.pp));
  }
  return std::unique_ptr<RooflineStepModel>(new RooflineStepModel(in));
}

RooflineStepModel::RooflineStepModel(const RooflineInputs& in) : in_(in) {
  const MemoryInputs& mem = in_.memory;
  const ModelSpec& m = mem.model;
  tp_ = mem.layout.tp;
  hidden_ = m.hidden;
  const WeightsPlan weights = PlanWeights(mem);
  const bool has_head_term = std::any_of(weights.terms.begin(), weights.terms.end(),
                                         [](const WeightTerm& t) { return t.name.rfind("lm head", 0) == 0; });
  for (const StageLayers& sl : SplitStages(m, mem.layout.pp)) {
    Stage st;
    st.layers = sl.layers;
    st.global_layers = sl.global_layers;
    st.windowed_layers = sl.windowed_layers;
    const size_t s = static_cast<size_t>(sl.stage);
    const bool last = sl.stage + 1 == mem.layout.pp;
    for (const WeightTerm& t : weights.terms) {
      const double params = static_cast<double>(t.params_per_rank[s]);
      const double bytes = static_cast<double>(t.bytes_per_rank[s].count());
      switch (KindOf(t, !has_head_term && last)) {
        case TermKind::kLinear:
          st.linear_params += params;
          st.linear_bytes += bytes;
          break;
        case TermKind::kHead:
          st.head_params += params;
          st.head_bytes += bytes;
          break;
        case TermKind::kRouted:
          st.routed_params += params;
          st.routed_bytes += bytes;
          break;
        case TermKind::kSkipped:
          break;
      }
    }
    stages_.push_back(st);
  }

  const KvShape kv = PlanKvShape(mem);
  kv_bytes_per_layer_rank_ = static_cast<double>(kv.bytes_per_layer_per_rank.count());
  const KvWindows windows = WindowsAt(mem, kMaxTokens);
  global_window_ = windows.global_tokens;
  windowed_window_ = windows.windowed_tokens;

  const double heads_per_rank = static_cast<double>(m.heads) / static_cast<double>(tp_);
  if (m.mla) {
    const MlaSpec& mla = *m.mla;
    decode_flops_per_pair_ =
        heads_per_rank * static_cast<double>(4 * mla.kv_lora_rank + 2 * mla.qk_rope_head_dim);
    prefill_flops_per_pair_ = heads_per_rank * static_cast<double>(2 * (mla.qk_nope_head_dim + mla.qk_rope_head_dim) +
                                                                   2 * mla.v_head_dim);
  } else {
    decode_flops_per_pair_ = 4.0 * heads_per_rank * static_cast<double>(m.head_dim);
    prefill_flops_per_pair_ = decode_flops_per_pair_;
  }
  if (m.moe) {
    top_k_ = m.moe->experts_per_token;
    top_k_share_ = static_cast<double>(top_k_) / static_cast<double>(m.moe->experts);
    experts_per_rank_ = m.moe->experts / mem.layout.ep;
  }
  linear_peak_ = mem.gpu.PeakFlops(mem.weight_dtype) * in_.params.compute_efficiency;
  attention_peak_ = mem.gpu.PeakFlops(kActivationDType) * in_.params.attention_efficiency;
  bandwidth_ = mem.gpu.memory_bandwidth * in_.params.memory_efficiency;
}

RooflineStepModel::Tally RooflineStepModel::Count(std::span<const StepChunk> chunks,
                                                  StepPadding padding) const {
  Tally t;
  for (const StepChunk& c : chunks) {
    t.seqs += 1;
    if (c.decode) {
      t.tokens += 1;
      AddDecode(c.context_tokens, global_window_, 1, &t.global.decode_pairs, &t.global.kv_tokens);
      AddDecode(c.context_tokens, windowed_window_, 1, &t.windowed.decode_pairs,
                &t.windowed.kv_tokens);
      continue;
    }
    const double n = static_cast<double>(c.new_tokens);
    t.tokens += n;
    t.global.prefill_pairs += PrefillPairs(c.context_tokens, c.new_tokens, global_window_);
    t.global.kv_tokens += n + static_cast<double>(std::min(c.context_tokens, global_window_));
    t.windowed.prefill_pairs += PrefillPairs(c.context_tokens, c.new_tokens, windowed_window_);
    t.windowed.kv_tokens += n + static_cast<double>(std::min(c.context_tokens, windowed_window_));
  }
  if (padding.decodes > 0) {
    const double times = static_cast<double>(padding.decodes);
    t.seqs += times;
    t.tokens += times;
    AddDecode(padding.context_tokens, global_window_, times, &t.global.decode_pairs,
              &t.global.kv_tokens);
    AddDecode(padding.context_tokens, windowed_window_, times, &t.windowed.decode_pairs,
              &t.windowed.kv_tokens);
  }
  return t;
}

RooflineBreakdown RooflineStepModel::Explain(std::span<const StepChunk> chunks, StepPadding padding) const {
  const Tally t = Count(chunks, padding);
  RooflineBreakdown b;
  // Experts a rank may touch this step: at most every token's top-k, at most all it holds.
  const double touched_share =
      experts_per_rank_ > 0
          ? std::min(1.0, t.tokens * static_cast<double>(top_k_) / static_cast<double>(experts_per_rank_))
          : 0.0;
  double linear_s = 0, attention_s = 0, lc_s = 0, lm_s = 0, ac_s = 0, am_s = 0;
  for (const Stage& st : stages_) {
    const double gl = static_cast<double>(st.global_layers);
    const double wl = static_cast<double>(st.windowed_layers);
    const double lin_flops =
        2.0 * (t.tokens * (st.linear_params + st.routed_params * top_k_share_) + t.seqs * st.head_params);
    const double lin_bytes = st.linear_bytes + st.head_bytes + st.routed_bytes * touched_share;
    const double attn_flops =
        decode_flops_per_pair_ * (gl * t.global.decode_pairs + wl * t.windowed.decode_pairs) +
        prefill_flops_per_pair_ * (gl * t.global.prefill_pairs + wl * t.windowed.prefill_pairs);
    const double kv = kv_bytes_per_layer_rank_ * (gl * t.global.kv_tokens + wl * t.windowed.kv_tokens);
    const double lc = Seconds(lin_flops, linear_peak_);
    const double lm = Seconds(lin_bytes, bandwidth_);
    const double ac = Seconds(attn_flops, attention_peak_);
    const double am = Seconds(kv, bandwidth_);
    b.linear_flops += lin_flops;
    b.weight_bytes += lin_bytes;
    b.attention_flops += attn_flops;
    b.kv_bytes += kv;
    lc_s += lc;
    lm_s += lm;
    ac_s += ac;
    am_s += am;
    linear_s += std::max(lc, lm);
    attention_s += std::max(ac, am);
  }
  const Bytes activations = BytesFor(kActivationDType, static_cast<int64_t>(t.tokens) * hidden_);
  const int64_t layers = in_.memory.model.layers;
  const int64_t handoffs = in_.memory.layout.pp - 1;
  const Duration all_reduce = AllReduceRingTime(tp_, activations, LinkCost::Of(in_.tp_link));
  const Duration handoff =
      handoffs > 0 ? SendRecvTime(activations, LinkCost::Of(in_.pp_link)) : Duration();
  b.linear_compute = FromSeconds(lc_s);
  b.linear_memory = FromSeconds(lm_s);
  b.attention_compute = FromSeconds(ac_s);
  b.attention_memory = FromSeconds(am_s);
  b.linear = FromSeconds(linear_s);
  b.attention = FromSeconds(attention_s);
  b.collectives = all_reduce * (kTpAllReducesPerLayer * layers) + handoff * handoffs;
  b.total = b.linear + b.attention + b.collectives;
  b.linear_memory_bound = lm_s > lc_s;
  b.attention_memory_bound = am_s > ac_s;
  return b;
}

StepCost RooflineStepModel::Cost(std::span<const StepChunk> chunks) const {
  const RooflineBreakdown b = Explain(chunks);
  return StepCost{b.total, b.collectives, false};
}

StepCost RooflineStepModel::CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const {
  const RooflineBreakdown b = Explain(chunks, padding);
  return StepCost{b.total, b.collectives, false};
}

Json RooflineStepModel::Describe() const {
  const MemoryInputs& mem = in_.memory;
  Json j;
  j["kind"] = "roofline";
  j["compute_efficiency"] = in_.params.compute_efficiency;
  j["attention_efficiency"] = in_.params.attention_efficiency;
  j["memory_efficiency"] = in_.params.memory_efficiency;
  j["model"] = mem.model.name;
  j["gpu"] = mem.gpu.name;
  j["tp"] = mem.layout.tp;
  j["pp"] = mem.layout.pp;
  j["ep"] = mem.layout.ep;
  j["weight_dtype"] = std::string(DTypeName(mem.weight_dtype));
  j["kv_dtype"] = std::string(DTypeName(mem.kv_dtype));
  j["linear_flops_per_s"] = RoundForReport(linear_peak_);
  j["attention_flops_per_s"] = RoundForReport(attention_peak_);
  j["memory_bytes_per_s"] = RoundForReport(bandwidth_);
  j["kv_bytes_per_token_per_layer_per_rank"] = kv_bytes_per_layer_rank_;
  j["attention_flops_per_pair_per_layer_per_rank"] = {{"decode", decode_flops_per_pair_},
                                                      {"prefill", prefill_flops_per_pair_}};
  j["global_window_tokens"] = global_window_;
  j["windowed_window_tokens"] = windowed_window_;
  j["tp_link"] = {{"name", in_.tp_link.name},
                  {"bandwidth_bytes_per_s", in_.tp_link.bandwidth},
                  {"latency_ns", in_.tp_link.latency.ns()}};
  j["pp_link"] = {{"name", in_.pp_link.name},
                  {"bandwidth_bytes_per_s", in_.pp_link.bandwidth},
                  {"latency_ns", in_.pp_link.latency.ns()}};
  Json stages = Json::array();
  for (const Stage& st : stages_) {
    stages.push_back({{"layers", st.layers},
                      {"global_layers", st.global_layers},
                      {"windowed_layers", st.windowed_layers},
                      {"linear_params_per_rank", st.linear_params},
                      {"linear_bytes_per_rank", st.linear_bytes},
                      {"lm_head_params_per_rank", st.head_params},
                      {"lm_head_bytes_per_rank", st.head_bytes},
                      {"routed_expert_params_per_rank", st.routed_params},
                      {"routed_expert_bytes_per_rank", st.routed_bytes}});
  }
  j["stages"] = std::move(stages);
  if (experts_per_rank_ > 0) {
    j["moe"] = {{"experts_per_rank", experts_per_rank_},
                {"top_k", top_k_},
                {"touched_experts", "min(experts_per_rank, tokens * top_k) per MoE layer (upper bound)"}};
  }
  return j;
}

}  // namespace fleetplan
