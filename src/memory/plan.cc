#include "fleetplan/memory/plan.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fleetplan {
namespace {

// memory × utilization rounded to the nearest byte, in long double, so that 80 GiB × 0.70
// lands on the byte a person gets by hand despite 0.70 having no exact binary form.
Bytes Budget(const MemoryInputs& in) {
  const long double exact = static_cast<long double>(in.gpu.memory.count()) *
                            static_cast<long double>(in.gpu_memory_utilization);
  return Bytes(static_cast<int64_t>(std::llround(exact)));
}

StagePlan PlanStage(const MemoryPlan& plan, const StageLayers& layers) {
  StagePlan st;
  st.layers = layers;
  st.weights = plan.weights.bytes_per_rank.at(static_cast<size_t>(layers.stage));
  st.kv_bytes_per_token = plan.kv.bytes_per_layer_per_rank * layers.layers;
  st.block_bytes = st.kv_bytes_per_token * plan.inputs.block_tokens;
  st.usable_kv = plan.budget_per_rank - st.weights - plan.activation.total - plan.runtime.total;
  st.kv_blocks = st.usable_kv.count() > 0 ? st.usable_kv.count() / st.block_bytes.count() : 0;
  return st;
}

}  // namespace

Expected<MemoryPlan> PlanMemory(const MemoryInputs& in) {
  if (std::optional<FieldError> e = ValidateMemoryInputs(in)) {
    return InvalidInput(fmt::format("{}: {}", MemoryFieldName(e->field), e->message));
  }
  MemoryPlan plan;
  plan.inputs = in;
  plan.weights = PlanWeights(in);
  plan.kv = PlanKvShape(in);
  plan.activation = PlanActivation(in);
  plan.runtime = PlanRuntimeOverhead(in);
  plan.budget_per_rank = Budget(in);
  for (const StageLayers& layers : SplitStages(in.model, in.layout.pp)) {
    plan.stages.push_back(PlanStage(plan, layers));
  }
  const auto fewest = std::min_element(
      plan.stages.begin(), plan.stages.end(),
      [](const StagePlan& a, const StagePlan& b) { return a.kv_blocks < b.kv_blocks; });
  plan.binding_stage = fewest->layers.stage;
  plan.kv_blocks_per_replica = fewest->kv_blocks;
  return plan;
}

Expected<KvPoolSize> SizeKvPool(const MemoryInputs& in) {
  FP_ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(in));
  const StagePlan& st = plan.binding();
  KvPoolSize pool;
  pool.kv_bytes_per_rank = st.usable_kv;
  pool.kv_bytes_per_token_per_rank = st.kv_bytes_per_token;
  pool.block_tokens = in.block_tokens;
  pool.block_bytes_per_rank = st.block_bytes;
  pool.kv_blocks_per_replica = plan.kv_blocks_per_replica;
  pool.binding_stage = plan.binding_stage;
  return pool;
}

}  // namespace fleetplan
