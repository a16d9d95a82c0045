// The memory plan per rank: budget, activation workspace, runtime overhead, usable KV and
// the engine's KV block pool. Figures worked out by hand in the comments.
#include "fleetplan/memory/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "memory/test_specs.h"

namespace fleetplan {
namespace {

using memory_test::Dense70b;
using memory_test::Inputs;
using memory_test::Show;
using memory_test::SmallMoe;

// The quick-start layout: dense 70B, tp 4, 64 sequences per step, on an 80 GiB GPU.
MemoryInputs QuickStart() {
  MemoryInputs in = Inputs(Dense70b(), 4);
  in.max_running = 64;
  return in;
}

TEST(PlanActivation, DenseTp4) {
  // per token = 2 B × (4 × 8192 hidden + 3 × 28672 / 4 FFN) = 2 × (32768 + 21504) = 108,544 B;
  // × 8192 tokens = 889,192,448 B; logits 64 × 128256 × 4 B = 32,833,536 B.
  const ActivationWorkspace a = PlanActivation(QuickStart());
  EXPECT_EQ(a.per_token.count(), 108'544);
  EXPECT_EQ(a.widest_elements, 21'504);
  EXPECT_EQ(a.widest_formula, "gated FFN 3 × 28672 / tp 4");
  EXPECT_EQ(a.logits.count(), 32'833'536);
  EXPECT_EQ(a.total.count(), 889'192'448 + 32'833'536);
}

TEST(PlanActivation, MoeWidthCountsTopKExperts) {
  // top-2 × 3 × 14336 / tp 2 = 43,008 elements per token.
  const ActivationWorkspace a = PlanActivation(Inputs(SmallMoe(), 2));
  EXPECT_EQ(a.widest_elements, 43'008);
  EXPECT_EQ(a.widest_formula, "MoE FFN (top-2 × 3 × 14336 + 0 shared × 3 × 0) / tp 2");
}

TEST(PlanRuntimeOverhead, CollectivesOnlyForMultiGpuReplicas) {
  EXPECT_EQ(PlanRuntimeOverhead(Inputs(Dense70b(), 1)).total, MiB(512 + 256));
  EXPECT_EQ(PlanRuntimeOverhead(Inputs(Dense70b(), 4)).total, MiB(512 + 256 + 256));
  EXPECT_EQ(PlanRuntimeOverhead(Inputs(Dense70b(), 1, 2)).collectives, MiB(256));
}

TEST(PlanMemory, QuickStartBudgetToBlocks) {
  Expected<MemoryPlan> plan = PlanMemory(QuickStart());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const StagePlan& st = plan->binding();
  // budget 80 GiB × 0.9 = 77,309,411,328; weights 35,278,831,616; activation 922,025,984;
  // runtime 1 GiB = 1,073,741,824 → usable 40,034,811,904 B (37.29 GiB).
  EXPECT_EQ(plan->budget_per_rank.count(), 77'309'411'328);
  EXPECT_EQ(st.weights.count(), 35'278'831'616);
  EXPECT_EQ(st.usable_kv.count(), 40'034'811'904);
  // Block = 16 tokens × 80 layers × 1024 B = 1,310,720 B; 40,034,811,904 / 1,310,720 = 30544.1.
  EXPECT_EQ(st.block_bytes.count(), 1'310'720);
  EXPECT_EQ(st.kv_blocks, 30'544);
  EXPECT_EQ(plan->kv_blocks_per_replica, 30'544);
  Show("budget {} − weights {} − activation {} − runtime {} = {} B ({:.2f} GiB) usable; / {} B "
       "per block = {} blocks",
       plan->budget_per_rank.count(), st.weights.count(), plan->activation.total.count(),
       plan->runtime.total.count(), st.usable_kv.count(), st.usable_kv.gib(), st.block_bytes.count(),
       st.kv_blocks);
}

TEST(PlanMemory, BudgetRoundsToTheNearestByte) {
  MemoryInputs in = QuickStart();
  in.gpu_memory_utilization = 0.7;  // no exact binary form; 80 GiB × 0.7 = 60,129,542,144 B
  EXPECT_EQ(PlanMemory(in)->budget_per_rank.count(), 60'129'542'144);
}

TEST(PlanMemory, WeightsThatDoNotFitLeaveNoBlocks) {
  // tp 1: 141,107,412,992 B of weights on a 77,309,411,328 B budget.
  Expected<MemoryPlan> plan = PlanMemory(Inputs(Dense70b(), 1));
  ASSERT_TRUE(plan.ok());
  EXPECT_LT(plan->binding().usable_kv.count(), 0);
  EXPECT_EQ(plan->kv_blocks_per_replica, 0);
}

TEST(PlanMemory, PipelineBindingStageHasTheFewestBlocks) {
  // pp 3 splits 80 layers 27/27/26; stage 0 holds 27 layers and the embedding, so it has the
  // least room per block.
  Expected<MemoryPlan> plan = PlanMemory(Inputs(Dense70b(), 2, 3));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->stages.size(), 3u);
  EXPECT_EQ(plan->binding_stage, 0);
  for (const StagePlan& st : plan->stages) EXPECT_GE(st.kv_blocks, plan->kv_blocks_per_replica);
  EXPECT_EQ(plan->kv_blocks_per_replica, plan->stages[0].kv_blocks);
  EXPECT_LT(plan->stages[0].kv_blocks, plan->stages[2].kv_blocks);
}

TEST(PlanMemory, InvalidInputIsAnErrorNotACrash) {
  Expected<MemoryPlan> plan = PlanMemory(Inputs(Dense70b(), 3));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(plan.status().message(),
            "tp: tp 3 does not divide the 64 attention heads of 'dense-70b' (valid tp: 1, 2, 4, "
            "8, 16, 32, 64)");
}

TEST(SizeKvPool, GivesTheEngineItsBlockPool) {
  Expected<KvPoolSize> pool = SizeKvPool(QuickStart());
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->kv_bytes_per_rank.count(), 40'034'811'904);
  EXPECT_EQ(pool->kv_bytes_per_token_per_rank.count(), 81'920);
  EXPECT_EQ(pool->block_tokens, 16);
  EXPECT_EQ(pool->block_bytes_per_rank.count(), 1'310'720);
  EXPECT_EQ(pool->kv_blocks_per_replica, 30'544);
  EXPECT_EQ(pool->binding_stage, 0);
}

TEST(SizeKvPool, KvFormatDoublesBlocksAndWindowDoesNotChangeThePool) {
  MemoryInputs in = QuickStart();
  in.kv_dtype = DType::kFp8;
  // Half the bytes per block (655,360 B): 40,034,811,904 / 655,360 = 61088.3.
  EXPECT_EQ(SizeKvPool(in)->kv_blocks_per_replica, 61'088);
  in.kv_window = 1024;
  EXPECT_EQ(SizeKvPool(in)->kv_blocks_per_replica, 61'088);
}

}  // namespace
}  // namespace fleetplan
