// ValidateMemoryInputs: every bad value is a FieldError naming the field, expected vs got,
// and the valid values where the list is short. Exact texts are pinned.
#include "fleetplan/memory/inputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "memory/test_specs.h"

namespace fleetplan {
namespace {

using memory_test::Dense70b;
using memory_test::Inputs;
using memory_test::SmallMoe;
using ::testing::ElementsAre;

std::string Error(const MemoryInputs& in) {
  std::optional<FieldError> e = ValidateMemoryInputs(in);
  if (!e) return "ok";
  return std::string(MemoryFieldName(e->field)) + ": " + e->message;
}

TEST(ValidateMemoryInputs, AcceptsTheReferenceLayout) {
  EXPECT_EQ(Error(Inputs(Dense70b(), 4)), "ok");
  EXPECT_EQ(Error(Inputs(Dense70b(), 16)), "ok");  // KV heads replicated, still valid
}

TEST(ValidateMemoryInputs, TpMustDivideTheAttentionHeads) {
  EXPECT_EQ(Error(Inputs(Dense70b(), 3)),
            "tp: tp 3 does not divide the 64 attention heads of 'dense-70b' (valid tp: 1, 2, 4, "
            "8, 16, 32, 64)");
  EXPECT_EQ(Error(Inputs(Dense70b(), 128)),
            "tp: tp 128 does not divide the 64 attention heads of 'dense-70b' (valid tp: 1, 2, 4, "
            "8, 16, 32, 64)");
}

TEST(ValidateMemoryInputs, TpMustAgreeWithTheKvHeads) {
  ModelSpec m = Dense70b();
  m.heads = 48;
  m.kv_heads = 12;  // 16 divides the 48 heads but neither divides nor is a multiple of 12
  EXPECT_EQ(Error(Inputs(m, 16)),
            "tp: tp 16 is neither a divisor nor a multiple of the 12 KV heads of 'dense-70b' "
            "(valid tp: 1, 2, 3, 4, 6, 12, 24, 48)");
}

TEST(ValidateMemoryInputs, ZeroAndNegativeCountsAreErrors) {
  MemoryInputs in = Inputs(Dense70b(), 0);
  EXPECT_EQ(Error(in), "tp: expected an integer >= 1, got 0");
  in = Inputs(Dense70b(), 1, -2);
  EXPECT_EQ(Error(in), "pp: expected an integer >= 1, got -2");
  in = Inputs(Dense70b(), 1);
  in.block_tokens = 0;
  EXPECT_EQ(Error(in), "block_tokens: expected an integer >= 1, got 0");
  in = Inputs(Dense70b(), 1);
  in.kv_window = -5;
  EXPECT_EQ(Error(in), "kv_window: expected an integer >= 1, got -5");
  in = Inputs(Dense70b(), 1);
  in.max_batched_tokens = int64_t{1} << 31;
  EXPECT_EQ(Error(in), "max_batched_tokens: expected an integer <= 1073741824, got 2147483648");
  in = Inputs(Dense70b(), 1);
  in.gpu.memory = Bytes(0);
  EXPECT_EQ(Error(in), "gpu: gpu 'gpu-80g': memory must be > 0, got 0 B");
}

TEST(ValidateMemoryInputs, UtilizationMustBeAFraction) {
  MemoryInputs in = Inputs(Dense70b(), 1);
  in.gpu_memory_utilization = 0.0;
  EXPECT_EQ(Error(in), "gpu_memory_utilization: expected a number in (0, 1], got 0");
  in.gpu_memory_utilization = 1.5;
  EXPECT_EQ(Error(in), "gpu_memory_utilization: expected a number in (0, 1], got 1.5");
  in.gpu_memory_utilization = 1.0;
  EXPECT_EQ(Error(in), "ok");
}

TEST(ValidateMemoryInputs, PipelineStagesAtMostLayers) {
  EXPECT_EQ(Error(Inputs(Dense70b(), 1, 81)), "pp: pp 81 exceeds the 80 layers of 'dense-70b'");
  EXPECT_EQ(Error(Inputs(Dense70b(), 1, 80)), "ok");
}

TEST(ValidateMemoryInputs, ExpertParallelNeedsMoeAndDivisibility) {
  MemoryInputs in = Inputs(Dense70b(), 4);
  in.layout.ep = 2;
  EXPECT_EQ(Error(in), "ep: ep 2 needs a mixture-of-experts model; 'dense-70b' is dense (use ep 1)");
  in = Inputs(SmallMoe(), 4);
  in.layout.ep = 8;
  EXPECT_EQ(Error(in),
            "ep: ep 8 does not divide tp 4 (ep splits the experts across the tp ranks of a stage)");
  in = Inputs(SmallMoe(), 8);
  in.layout.ep = 8;
  EXPECT_EQ(Error(in), "ok");
  in.model.moe->experts = 12;
  in.layout.ep = 8;
  EXPECT_EQ(Error(in), "ep: ep 8 does not divide the 12 routed experts of 'moe-8x'");
}

TEST(ValidateMemoryInputs, BrokenModelShapeIsAModelError) {
  ModelSpec m = Dense70b();
  m.layers = 0;
  EXPECT_EQ(Error(Inputs(m, 1)),
            "model: model 'dense-70b': layers: expected an integer in [1, 16777216], got 0");
}

TEST(ValidTpValues, ListsDivisorsThatAgreeWithKvHeadsAndEp) {
  EXPECT_THAT(ValidTpValues(Dense70b(), 1), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  EXPECT_THAT(ValidTpValues(SmallMoe(), 4), ElementsAre(4, 8, 16, 32));
}

TEST(MemoryFieldName, UsesTheScenarioSpelling) {
  EXPECT_EQ(MemoryFieldName(MemoryField::kGpuMemoryUtilization), "gpu_memory_utilization");
  EXPECT_EQ(MemoryFieldName(MemoryField::kKvWindow), "kv_window");
  EXPECT_EQ(MemoryFieldName(MemoryField::kConcurrency), "concurrency");
}

}  // namespace
}  // namespace fleetplan
