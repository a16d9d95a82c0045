#include "fleetplan/memory/inputs.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace fleetplan {
namespace {

struct FieldName {
  MemoryField field;
  std::string_view name;
};

constexpr std::array<FieldName, 14> kFieldNames = {{
    {MemoryField::kModel, "model"},
    {MemoryField::kGpu, "gpu"},
    {MemoryField::kTp, "tp"},
    {MemoryField::kPp, "pp"},
    {MemoryField::kEp, "ep"},
    {MemoryField::kWeightDType, "weight_dtype"},
    {MemoryField::kKvDType, "kv_dtype"},
    {MemoryField::kKvWindow, "kv_window"},
    {MemoryField::kGpuMemoryUtilization, "gpu_memory_utilization"},
    {MemoryField::kBlockTokens, "block_tokens"},
    {MemoryField::kMaxBatchedTokens, "max_batched_tokens"},
    {MemoryField::kMaxRunning, "max_running"},
    {MemoryField::kContext, "context"},
    {MemoryField::kConcurrency, "concurrency"},
}};

using Check = std::optional<FieldError>;

Check Fail(MemoryField field, std::string message) { return FieldError{field, std::move(message)}; }

Check CheckRange(MemoryField field, int64_t value, int64_t max) {
  if (value < 1) return Fail(field, fmt::format("expected an integer >= 1, got {}", value));
  if (value > max) return Fail(field, fmt::format("expected an integer <= {}, got {}", max, value));
  return std::nullopt;
}

std::string JoinInts(const std::vector<int64_t>& values) {
  return fmt::format("{}", fmt::join(values, ", "));
}

// The catalog's shape checks (positive sizes, consistent MoE/MLA/window fields, counts
// that fit in int64), so a hand-built or inline spec never reaches an assertion.
Check CheckModelShape(const ModelSpec& m) {
  std::optional<ModelSpecProblem> p = FindModelSpecProblem(m);
  if (!p) return std::nullopt;
  if (p->field.empty()) return Fail(MemoryField::kModel, fmt::format("model '{}': {}", m.name, p->message));
  return Fail(MemoryField::kModel, fmt::format("model '{}': {}: {}", m.name, p->field, p->message));
}

// The tp rules of the attention (heads, KV heads); ep is checked on its own.
Check CheckTpAgainstModel(const ModelSpec& m, int64_t tp) {
  auto valid = [&] { return JoinInts(ValidTpValues(m, 1)); };
  if (tp > m.heads || m.heads % tp != 0) {
    return Fail(MemoryField::kTp,
                fmt::format("tp {} does not divide the {} attention heads of '{}' (valid tp: {})",
                            tp, m.heads, m.name, valid()));
  }
  if (!m.mla && tp % m.kv_heads != 0 && m.kv_heads % tp != 0) {
    return Fail(MemoryField::kTp,
                fmt::format("tp {} is neither a divisor nor a multiple of the {} KV heads of "
                            "'{}' (valid tp: {})",
                            tp, m.kv_heads, m.name, valid()));
  }
  return std::nullopt;
}

Check CheckEp(const ModelSpec& m, const Parallelism& p) {
  if (Check c = CheckRange(MemoryField::kEp, p.ep, m.heads)) return c;
  if (p.ep == 1) return std::nullopt;
  if (!m.moe) {
    return Fail(MemoryField::kEp,
                fmt::format("ep {} needs a mixture-of-experts model; '{}' is dense (use ep 1)",
                            p.ep, m.name));
  }
  if (m.moe->experts % p.ep != 0) {
    return Fail(MemoryField::kEp, fmt::format("ep {} does not divide the {} routed experts of '{}'",
                                              p.ep, m.moe->experts, m.name));
  }
  if (p.tp % p.ep != 0) {
    return Fail(MemoryField::kEp,
                fmt::format("ep {} does not divide tp {} (ep splits the experts across the tp "
                            "ranks of a stage)",
                            p.ep, p.tp));
  }
  return std::nullopt;
}

Check CheckLayout(const ModelSpec& m, const Parallelism& p) {
  if (Check c = CheckRange(MemoryField::kTp, p.tp, kMaxSequences)) return c;
  if (Check c = CheckRange(MemoryField::kPp, p.pp, kMaxSequences)) return c;
  if (Check c = CheckTpAgainstModel(m, p.tp)) return c;
  if (p.pp > m.layers) {
    return Fail(MemoryField::kPp,
                fmt::format("pp {} exceeds the {} layers of '{}'", p.pp, m.layers, m.name));
  }
  return CheckEp(m, p);
}

Check CheckEngineKnobs(const MemoryInputs& in) {
  if (in.kv_window) {
    if (Check c = CheckRange(MemoryField::kKvWindow, *in.kv_window, kMaxTokens)) return c;
  }
  const double u = in.gpu_memory_utilization;
  if (!(u > 0.0 && u <= 1.0)) {
    return Fail(MemoryField::kGpuMemoryUtilization,
                fmt::format("expected a number in (0, 1], got {}", u));
  }
  if (Check c = CheckRange(MemoryField::kBlockTokens, in.block_tokens, kMaxTokens)) return c;
  if (Check c = CheckRange(MemoryField::kMaxBatchedTokens, in.max_batched_tokens, kMaxTokens)) {
    return c;
  }
  return CheckRange(MemoryField::kMaxRunning, in.max_running, kMaxSequences);
}

// Keeps every byte product of the planner far from int64 overflow (see kMaxKvBytesPerToken).
Check CheckKvBound(const MemoryInputs& in) {
  const ModelSpec& m = in.model;
  const int64_t per_layer = KvElementsPerTokenPerLayer(m);
  const int64_t bits = BitsPerElement(in.kv_dtype);
  const int64_t limit_bits = kMaxKvBytesPerToken * 8;
  if (per_layer > limit_bits / m.layers / bits) {
    return Fail(MemoryField::kModel,
                fmt::format("model '{}': KV per token ({} layers × {} elements) exceeds the "
                            "planning bound of {} bytes; check the model shape",
                            m.name, m.layers, per_layer, kMaxKvBytesPerToken));
  }
  return std::nullopt;
}

// The activation workspace (overhead.h) in long double, so an absurd shape is an input
// error rather than an int64 overflow.
Check CheckActivationBound(const MemoryInputs& in) {
  using LD = long double;
  const ModelSpec& m = in.model;
  LD widest = LD(m.heads + 2 * m.kv_heads) * LD(m.head_dim) + LD(3) * LD(m.intermediate);
  if (m.moe) {
    widest += LD(3) * (LD(m.moe->experts_per_token) * LD(m.moe->expert_intermediate) +
                       LD(m.moe->shared_experts) * LD(m.moe->shared_intermediate));
  }
  if (m.mla) widest += LD(m.heads) * LD(4) * LD(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim);
  const LD bytes = LD(4) * (LD(4) * LD(m.hidden) + widest) * LD(in.max_batched_tokens) +
                   LD(in.max_running) * LD(m.vocab) * LD(4);
  if (bytes > LD(int64_t{1} << 62)) {
    return Fail(MemoryField::kModel,
                fmt::format("model '{}': the activation workspace of a {}-token step exceeds "
                            "2^62 bytes; check the model shape",
                            m.name, in.max_batched_tokens));
  }
  return std::nullopt;
}

}  // namespace

std::string_view MemoryFieldName(MemoryField field) {
  for (const FieldName& f : kFieldNames) {
    if (f.field == field) return f.name;
  }
  return "unknown";
}

std::vector<int64_t> ValidTpValues(const ModelSpec& model, int64_t ep) {
  std::vector<int64_t> out;
  if (model.heads < 1 || ep < 1 || (!model.mla && model.kv_heads < 1)) return out;
  for (int64_t tp = ep; tp <= model.heads; tp += ep) {
    const bool heads_ok = model.heads % tp == 0;
    const bool kv_ok = model.mla || tp % model.kv_heads == 0 || model.kv_heads % tp == 0;
    if (heads_ok && kv_ok) out.push_back(tp);
  }
  return out;
}

std::optional<FieldError> ValidateMemoryInputs(const MemoryInputs& in) {
  if (Check c = CheckModelShape(in.model)) return c;
  if (in.gpu.memory.count() <= 0) {
    return Fail(MemoryField::kGpu, fmt::format("gpu '{}': memory must be > 0, got {} B",
                                               in.gpu.name, in.gpu.memory.count()));
  }
  if (Check c = CheckLayout(in.model, in.layout)) return c;
  if (Check c = CheckEngineKnobs(in)) return c;
  if (Check c = CheckKvBound(in)) return c;
  return CheckActivationBound(in);
}

}  // namespace fleetplan
