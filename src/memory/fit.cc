#include "fleetplan/memory/fit.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "memory/text.h"

namespace fleetplan {
namespace {

using memory_text::Gib;

std::optional<FieldError> CheckCount(MemoryField field, int64_t value, int64_t max) {
  if (value < 1) return FieldError{field, fmt::format("expected an integer >= 1, got {}", value)};
  if (value > max) return FieldError{field, fmt::format("expected an integer <= {}, got {}", max, value)};
  return std::nullopt;
}

std::string StagePrefix(const MemoryPlan& plan, int64_t stage) {
  return plan.inputs.layout.pp > 1 ? fmt::format("stage {}: ", stage) : std::string();
}

// Weights plus workspace exceed the budget on some stage: one reason per such stage.
std::vector<std::string> WeightReasons(const MemoryPlan& plan) {
  std::vector<std::string> reasons;
  for (const StagePlan& st : plan.stages) {
    if (st.usable_kv.count() >= 0) continue;
    const Bytes need = st.weights + plan.activation.total + plan.runtime.total;
    reasons.push_back(fmt::format(
        "{}weights {} + activation {} + runtime {} = {} per rank exceed the {} budget "
        "({} × {})",
        StagePrefix(plan, st.layers.stage), Gib(st.weights), Gib(plan.activation.total),
        Gib(plan.runtime.total), Gib(need), Gib(plan.budget_per_rank), Gib(plan.inputs.gpu.memory),
        plan.inputs.gpu_memory_utilization));
  }
  return reasons;
}

std::string KvReason(const FitResult& r) {
  const auto s = static_cast<size_t>(r.binding_stage);
  const Bytes per_seq = r.sequence.reserved_bytes_per_rank[s];
  const Bytes usable = r.plan.stages[s].usable_kv;
  const double needed_gib = per_seq.gib() * static_cast<double>(r.request.concurrency);
  return fmt::format(
      "{}{} × {} of KV per rank at context {} = {:.2f} GiB needed, {} usable; "
      "{} fit",
      StagePrefix(r.plan, r.binding_stage), memory_text::Count(r.request.concurrency, "sequence"),
      Gib(per_seq),
      r.request.context, needed_gib, Gib(usable), r.max_sequences);
}

int64_t MostOverBudgetStage(const MemoryPlan& plan) {
  const auto it = std::min_element(
      plan.stages.begin(), plan.stages.end(),
      [](const StagePlan& a, const StagePlan& b) { return a.usable_kv < b.usable_kv; });
  return it->layers.stage;
}

// The verdict for a valid request, without the nearest-value search.
FitResult Evaluate(const FitRequest& request) {
  FitResult r;
  r.request = request;
  Expected<MemoryPlan> plan = PlanMemory(request.memory);
  FP_ASSERT(plan.ok());  // the request was validated
  r.plan = std::move(plan).value();
  r.sequence = PlanSequenceKv(request.memory, r.plan.kv,
                              SplitStages(request.memory.model, request.memory.layout.pp),
                              request.context);
  std::vector<std::string> weight_reasons = WeightReasons(r.plan);
  if (!weight_reasons.empty()) {
    r.binding = BindingConstraint::kWeights;
    r.binding_stage = MostOverBudgetStage(r.plan);
    r.reasons = std::move(weight_reasons);
    return r;
  }
  r.max_sequences = -1;
  for (const StagePlan& st : r.plan.stages) {
    const auto s = static_cast<size_t>(st.layers.stage);
    const int64_t n = st.usable_kv.count() / r.sequence.reserved_bytes_per_rank[s].count();
    if (r.max_sequences < 0 || n < r.max_sequences) {
      r.max_sequences = n;
      r.binding_stage = st.layers.stage;
    }
  }
  r.fits = r.max_sequences >= request.concurrency;
  if (!r.fits) {
    r.binding = BindingConstraint::kKv;
    r.reasons.push_back(KvReason(r));
  }
  return r;
}

FitPoint PointOf(const FitResult& r) {
  const MemoryInputs& m = r.request.memory;
  return FitPoint{m.layout.tp, m.weight_dtype, m.kv_dtype, r.request.context,
                  r.request.concurrency, r.max_sequences};
}

// The request with one change, evaluated when valid; nullopt when it is invalid or fails.
template <typename Change>
std::optional<FitPoint> TryPassing(const FitRequest& base, Change change) {
  FitRequest req = base;
  change(req);
  if (ValidateFitRequest(req)) return std::nullopt;
  FitResult r = Evaluate(req);
  if (!r.fits) return std::nullopt;
  return PointOf(r);
}

// Largest context in [1, request.context - 1] at which the request fits. max_sequences
// never grows with context, so "fits" is true up to the boundary and false after it.
std::optional<FitPoint> LargestContext(const FitRequest& request) {
  auto at = [&](int64_t context) {
    return TryPassing(request, [&](FitRequest& r) { r.context = context; });
  };
  if (request.context <= 1 || !at(1)) return std::nullopt;
  int64_t lo = 1;                    // fits
  int64_t hi = request.context;      // does not fit
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (at(mid) ? lo : hi) = mid;
  }
  return at(lo);  // verified
}

// Narrower formats than `current`, widest first; at equal width in DTypeNames() order.
std::vector<DType> NarrowerDTypes(DType current) {
  std::vector<DType> out;
  for (const std::string& name : DTypeNames()) {
    Expected<DType> t = ParseDType(name);
    FP_ASSERT(t.ok());
    if (BitsPerElement(*t) < BitsPerElement(current)) out.push_back(*t);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](DType a, DType b) { return BitsPerElement(a) > BitsPerElement(b); });
  return out;
}

std::optional<FitPoint> SmallestTp(const FitRequest& request) {
  for (int64_t tp : ValidTpValues(request.memory.model, request.memory.layout.ep)) {
    if (tp == request.memory.layout.tp) continue;
    if (auto p = TryPassing(request, [&](FitRequest& r) { r.memory.layout.tp = tp; })) return p;
  }
  return std::nullopt;
}

std::optional<FitPoint> NarrowerKv(const FitRequest& request) {
  for (DType t : NarrowerDTypes(request.memory.kv_dtype)) {
    if (auto p = TryPassing(request, [&](FitRequest& r) { r.memory.kv_dtype = t; })) return p;
  }
  return std::nullopt;
}

std::optional<FitPoint> NarrowerWeights(const FitRequest& request) {
  for (DType t : NarrowerDTypes(request.memory.weight_dtype)) {
    if (auto p = TryPassing(request, [&](FitRequest& r) { r.memory.weight_dtype = t; })) return p;
  }
  return std::nullopt;
}

std::optional<FitPoint> TpAndKv(const FitRequest& request) {
  for (int64_t tp : ValidTpValues(request.memory.model, request.memory.layout.ep)) {
    for (DType t : NarrowerDTypes(request.memory.kv_dtype)) {
      auto p = TryPassing(request, [&](FitRequest& r) {
        r.memory.layout.tp = tp;
        r.memory.kv_dtype = t;
      });
      if (p) return p;
    }
  }
  return std::nullopt;
}

NearestPassing SearchNearest(const FitRequest& request) {
  NearestPassing n;
  n.context = LargestContext(request);
  n.tp = SmallestTp(request);
  n.kv_dtype = NarrowerKv(request);
  n.weight_dtype = NarrowerWeights(request);
  if (!n.tp && !n.kv_dtype) n.tp_and_kv_dtype = TpAndKv(request);
  return n;
}

}  // namespace

std::string_view BindingConstraintName(BindingConstraint b) {
  switch (b) {
    case BindingConstraint::kNone: return "none";
    case BindingConstraint::kWeights: return "weights";
    case BindingConstraint::kKv: return "kv";
  }
  return "unknown";
}

std::optional<FieldError> ValidateFitRequest(const FitRequest& request) {
  if (auto e = ValidateMemoryInputs(request.memory)) return e;
  if (auto e = CheckCount(MemoryField::kContext, request.context, kMaxTokens)) return e;
  const ModelSpec& m = request.memory.model;
  if (m.max_context > 0 && request.context > m.max_context) {
    return FieldError{MemoryField::kContext,
                      fmt::format("expected at most {} (the max_context of '{}'), got {}",
                                  m.max_context, m.name, request.context)};
  }
  return CheckCount(MemoryField::kConcurrency, request.concurrency, kMaxSequences);
}

Expected<FitResult> CheckFit(const FitRequest& request) {
  if (std::optional<FieldError> e = ValidateFitRequest(request)) {
    return InvalidInput(fmt::format("{}: {}", MemoryFieldName(e->field), e->message));
  }
  FitResult r = Evaluate(request);
  if (!r.fits) r.nearest = SearchNearest(request);
  return r;
}

}  // namespace fleetplan
