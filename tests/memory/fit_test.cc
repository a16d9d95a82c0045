// Fit verdicts: the binding constraint, the boundary crossed one step at a time, and the
// nearest passing values (each re-checked here independently of the search).
#include "fleetplan/memory/fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "memory/test_specs.h"

namespace fleetplan {
namespace {

using memory_test::Dense70b;
using memory_test::Inputs;
using memory_test::Show;
using ::testing::ElementsAre;

// Dense 70B at tp 4 on an 80 GiB GPU, 64 sequences per step: 40,034,811,904 B of KV per rank
// (plan_test), 2,684,354,560 B reserved per sequence of 32768 tokens.
FitRequest QuickStart(int64_t context, int64_t concurrency) {
  FitRequest r;
  r.memory = Inputs(Dense70b(), 4);
  r.memory.max_running = 64;
  r.context = context;
  r.concurrency = concurrency;
  return r;
}

FitResult Check(const FitRequest& r) {
  Expected<FitResult> result = CheckFit(r);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return std::move(result).value();
}

TEST(CheckFit, WeightsFitButConcurrencyDoesNotBindsKv) {
  const FitResult r = Check(QuickStart(32768, 64));
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.binding, BindingConstraint::kKv);
  EXPECT_GT(r.plan.binding().usable_kv.count(), 0);  // the weights fit
  // 40,034,811,904 / 2,684,354,560 = 14.9 → 14 sequences.
  EXPECT_EQ(r.max_sequences, 14);
  EXPECT_THAT(r.reasons, ElementsAre("64 sequences × 2.50 GiB of KV per rank at context 32768 = "
                                     "160.00 GiB needed, 37.29 GiB usable; 14 fit"));
  Show("{} usable / {} per sequence = {} sequences < 64 asked → binding: {}",
       r.plan.binding().usable_kv.count(), r.sequence.reserved_bytes_per_rank[0].count(),
       r.max_sequences, BindingConstraintName(r.binding));
}

TEST(CheckFit, ConcurrencyBoundaryOneStepEachSide) {
  // 14 × 2,684,354,560 = 37,580,963,840 <= 40,034,811,904 < 15 × 2,684,354,560 = 40,265,318,400.
  const FitResult below = Check(QuickStart(32768, 14));
  const FitResult above = Check(QuickStart(32768, 15));
  EXPECT_TRUE(below.fits);
  EXPECT_EQ(below.binding, BindingConstraint::kNone);
  EXPECT_TRUE(below.reasons.empty());
  EXPECT_FALSE(above.fits);
  Show("concurrency 14: 14 × {} = {} B <= {} B fits; 15: {} B does not",
       below.sequence.reserved_bytes_per_rank[0].count(),
       14 * below.sequence.reserved_bytes_per_rank[0].count(),
       below.plan.binding().usable_kv.count(), 15 * below.sequence.reserved_bytes_per_rank[0].count());
}

TEST(CheckFit, ContextBoundaryOneTokenEachSide) {
  // 14 sequences: each may reserve 40,034,811,904 / 14 = 2,859,629,421 B = 2181.7 blocks of
  // 1,310,720 B (16 tokens × 80 layers × 1024 B). 2181 blocks = 34,896 tokens fit; one token
  // more needs block 2182.
  const FitResult fits = Check(QuickStart(34896, 14));
  const FitResult fails = Check(QuickStart(34897, 14));
  EXPECT_TRUE(fits.fits);
  EXPECT_FALSE(fails.fits);
  EXPECT_EQ(fails.binding, BindingConstraint::kKv);
  ASSERT_TRUE(fails.nearest.context);
  EXPECT_EQ(fails.nearest.context->context, 34896);
  Show("context 34896: 14 × {} B = {} B fits in {} B; context 34897: 14 × {} B = {} B does not",
       fits.sequence.reserved_bytes_per_rank[0].count(),
       14 * fits.sequence.reserved_bytes_per_rank[0].count(), fits.plan.binding().usable_kv.count(),
       fails.sequence.reserved_bytes_per_rank[0].count(),
       14 * fails.sequence.reserved_bytes_per_rank[0].count());
}

TEST(CheckFit, QuickStartNearestPassingValues) {
  const FitResult r = Check(QuickStart(32768, 64));
  // Context: 40,034,811,904 / 64 = 625,543,936 B = 477.3 blocks → 477 × 16 = 7632 tokens.
  ASSERT_TRUE(r.nearest.context);
  EXPECT_EQ(r.nearest.context->context, 7632);
  EXPECT_FALSE(r.nearest.tp);        // tp 64 still holds one KV head per rank: ~54 sequences
  EXPECT_FALSE(r.nearest.kv_dtype);  // int4/fp4 KV: 59 sequences
  EXPECT_FALSE(r.nearest.weight_dtype);
  // tp 8 + fp8 KV: 57,849,069,568 B / 671,088,640 B per sequence = 86.2 → 86.
  ASSERT_TRUE(r.nearest.tp_and_kv_dtype);
  EXPECT_EQ(r.nearest.tp_and_kv_dtype->tp, 8);
  EXPECT_EQ(r.nearest.tp_and_kv_dtype->kv_dtype, DType::kFp8);
  EXPECT_EQ(r.nearest.tp_and_kv_dtype->max_sequences, 86);
}

TEST(CheckFit, WeightsBindWhenTheyExceedTheBudget) {
  FitRequest req = QuickStart(8192, 1);
  req.memory.layout.tp = 1;
  req.memory.max_running = 1;
  const FitResult r = Check(req);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.binding, BindingConstraint::kWeights);
  EXPECT_EQ(r.max_sequences, 0);
  // 141,107,412,992 + 1,946,670,080 + 805,306,368 = 143,859,389,440 B > 77,309,411,328 B.
  EXPECT_THAT(r.reasons, ElementsAre("weights 131.42 GiB + activation 1.81 GiB + runtime 0.75 GiB "
                                     "= 133.98 GiB per rank exceed the 72.00 GiB budget "
                                     "(80.00 GiB × 0.9)"));
  EXPECT_FALSE(r.nearest.context);  // no context helps
  ASSERT_TRUE(r.nearest.tp);
  EXPECT_EQ(r.nearest.tp->tp, 2);
  // fp8 and int8 weights (67.67 GiB) leave too little for one 2.5 GiB sequence; int4 fits.
  ASSERT_TRUE(r.nearest.weight_dtype);
  EXPECT_EQ(r.nearest.weight_dtype->weight_dtype, DType::kInt4);
}

// Every proposed value must pass when applied, and the next step past it must not.
TEST(CheckFit, NearestValuesAreVerifiedBoundaries) {
  for (const FitRequest& req : {QuickStart(32768, 64), QuickStart(131072, 8), QuickStart(65536, 20)}) {
    const FitResult r = Check(req);
    ASSERT_FALSE(r.fits);
    if (r.nearest.context) {
      FitRequest at = req;
      at.context = r.nearest.context->context;
      EXPECT_TRUE(Check(at).fits);
      at.context += 1;
      EXPECT_FALSE(Check(at).fits) << "context " << at.context << " should not fit";
    }
    if (r.nearest.tp) {
      for (int64_t tp : ValidTpValues(req.memory.model, 1)) {
        FitRequest at = req;
        at.memory.layout.tp = tp;
        EXPECT_EQ(Check(at).fits, tp >= r.nearest.tp->tp) << "tp " << tp;
      }
    }
    if (r.nearest.kv_dtype) {
      FitRequest at = req;
      at.memory.kv_dtype = r.nearest.kv_dtype->kv_dtype;
      EXPECT_TRUE(Check(at).fits);
    }
  }
}

TEST(CheckFit, ContextAboveTheModelMaximumIsAnInputError) {
  Expected<FitResult> r = CheckFit(QuickStart(200000, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "context: expected at most 131072 (the max_context of 'dense-70b'), got 200000");
  r = CheckFit(QuickStart(1024, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "concurrency: expected an integer >= 1, got 0");
}

TEST(CheckFit, Deterministic) {
  const FitResult a = Check(QuickStart(32768, 64));
  const FitResult b = Check(QuickStart(32768, 64));
  EXPECT_EQ(a.reasons, b.reasons);
  EXPECT_EQ(a.nearest.context->context, b.nearest.context->context);
}

}  // namespace
}  // namespace fleetplan
