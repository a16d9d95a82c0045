// CUDA graphs: bucket choice, fallback and the eager_fallback: false rule, YAML parsing and
// errors, and the decorator (padding at the mean context, eager launch cost).
#include "fleetplan/perf/cuda_graphs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/perf/affine.h"
#include "perf/perf_test_util.h"

namespace fleetplan {
namespace {

using perf_test::Decode;
using perf_test::Decodes;
using perf_test::Prefill;
using perf_test::Yaml;

CudaGraphPolicy Policy(bool eager_fallback = true) {
  auto p = CudaGraphPolicy::Create({1, 4, 8, 16, 32}, eager_fallback, std::nullopt);
  EXPECT_TRUE(p.ok());
  return std::move(p).value();
}

void ExpectBucket(const GraphBucket& b, int64_t padded, bool graphed, bool fallback, bool unexpected) {
  EXPECT_EQ(b.padded, padded);
  EXPECT_EQ(b.graphed, graphed);
  EXPECT_EQ(b.fallback, fallback);
  EXPECT_EQ(b.unexpected, unexpected);
}

TEST(CudaGraphPolicy, PadsToTheSmallestBucketThatFits) {
  const CudaGraphPolicy p = Policy();
  ExpectBucket(p.Bucket(1), 1, true, false, false);
  ExpectBucket(p.Bucket(2), 4, true, false, false);
  ExpectBucket(p.Bucket(4), 4, true, false, false);
  ExpectBucket(p.Bucket(5), 8, true, false, false);
  ExpectBucket(p.Bucket(17), 32, true, false, false);
  ExpectBucket(p.Bucket(32), 32, true, false, false);
}

TEST(CudaGraphPolicy, AboveTheLargestBucketRunsEager) {
  ExpectBucket(Policy(true).Bucket(33), 33, false, true, false);
  // eager_fallback: false cannot split the batch either: eager, and flagged.
  ExpectBucket(Policy(false).Bucket(33), 33, false, true, true);
  ExpectBucket(Policy(false).Bucket(32), 32, true, false, false);
}

TEST(CudaGraphPolicy, DisabledPolicyNeverGraphs) {
  const CudaGraphPolicy off;
  EXPECT_FALSE(off.enabled());
  ExpectBucket(off.Bucket(3), 3, false, false, false);
}

TEST(CudaGraphPolicy, PaddedLimit) {
  EXPECT_EQ(Policy().PaddedLimit(20), 32);
  EXPECT_EQ(Policy().PaddedLimit(256), 256);
  EXPECT_EQ(CudaGraphPolicy().PaddedLimit(20), 20);
}

TEST(CudaGraphPolicy, DefaultEagerCostIsTwoAllReducePenaltiesPerLayerWithTp) {
  EXPECT_EQ(DefaultEagerLaunchPerLayer(1), Duration());
  EXPECT_EQ(DefaultEagerLaunchPerLayer(4), Us(34));
}

TEST(CudaGraphPolicyParse, ScenarioForm) {
  const YamlDocument doc = Yaml("cuda_graphs: {buckets: [1, 4, 8, 16, 32], eager_fallback: false,\n"
                                "              eager_launch_per_layer: 12.5us}\n");
  const auto p = CudaGraphPolicy::Parse(doc.root()["cuda_graphs"]);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_THAT(p->buckets(), ::testing::ElementsAre(1, 4, 8, 16, 32));
  EXPECT_FALSE(p->eager_fallback());
  EXPECT_EQ(p->eager_launch_per_layer(), Ns(12'500));
}

TEST(CudaGraphPolicyParse, AbsentOrNullIsDisabledAndFallbackDefaultsToTrue) {
  const YamlDocument doc = Yaml("a: null\nb: {buckets: [8]}\n");
  const auto absent = CudaGraphPolicy::Parse(doc.root()["missing"]);
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->enabled());
  const auto null = CudaGraphPolicy::Parse(doc.root()["a"]);
  ASSERT_TRUE(null.ok());
  EXPECT_FALSE(null->enabled());
  const auto b = CudaGraphPolicy::Parse(doc.root()["b"]);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->eager_fallback());
  EXPECT_FALSE(b->eager_launch_per_layer().has_value());
}

TEST(CudaGraphPolicyParse, ErrorsAreLocated) {
  const YamlDocument doc = Yaml(
      "unsorted: {buckets: [1, 8, 4]}\n"
      "zero: {buckets: [0, 4]}\n"
      "empty: {buckets: []}\n"
      "typo: {buckets: [1], eager_fallbak: true}\n"
      "huge: {buckets: [1, 320000]}\n");
  auto error = [&](const char* key) {
    const auto p = CudaGraphPolicy::Parse(doc.root()[key]);
    EXPECT_FALSE(p.ok()) << key;
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_EQ(error("unsorted"),
            "scenario.yaml:1:28: unsorted.buckets[2]: buckets must be strictly increasing "
            "integers in [1, 8192]; 4 follows 8\n"
            "    1 | unsorted: {buckets: [1, 8, 4]}\n"
            "      |                            ^\n");
  EXPECT_THAT(error("zero"), ::testing::StartsWith("scenario.yaml:2:18: zero.buckets[0]: expected an "
                                                   "integer >= 1, got 0"));
  EXPECT_THAT(error("empty"), ::testing::StartsWith("scenario.yaml:3:18: empty.buckets: expected at "
                                                    "least one bucket"));
  EXPECT_THAT(error("typo"),
              ::testing::StartsWith("scenario.yaml:4:22: typo: unknown field 'eager_fallbak'; did "
                                    "you mean 'eager_fallback'? (valid: buckets, eager_fallback, "
                                    "eager_launch_per_layer)"));
  EXPECT_THAT(error("huge"), ::testing::StartsWith("scenario.yaml:5:21: huge.buckets[1]: expected an "
                                                   "integer in [1, 8192], got 320000"));
}

// Records the padding it was asked for; costs 1 ms per decode and 1 us per prefill token.
class RecordingModel final : public StepCostModel {
 public:
  StepCost Cost(std::span<const StepChunk> chunks) const override {
    return CostPadded(chunks, StepPadding{});
  }
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override {
    last_padding = padding;
    const StepShape s = SummarizePadded(chunks, padding);
    return StepCost{Ms(1) * s.decode_seqs + Us(1) * s.prefill_tokens, Duration(), false};
  }
  std::string kind() const override { return "recording"; }
  Json Describe() const override { return Json{{"kind", "recording"}}; }
  Duration PrefillCostPerToken() const override { return Us(1); }
  mutable StepPadding last_padding{-1, -1};
};

TEST(GraphedStepModel, GraphedDecodeIsCostedAtTheBucketWithMeanContextPadding) {
  auto inner = std::make_unique<RecordingModel>();
  const RecordingModel* rec = inner.get();
  const GraphedStepModel model(std::move(inner), Policy(), 80, Us(34));
  // Contexts 100, 200, 301, 400, 500: mean 300.2 -> 300; padded 5 -> 8.
  const std::vector<StepChunk> five = {Decode(100), Decode(200), Decode(301), Decode(400), Decode(500)};
  EXPECT_EQ(model.Cost(five).gpu, Ms(8));
  EXPECT_EQ(rec->last_padding.decodes, 3);
  EXPECT_EQ(rec->last_padding.context_tokens, 300);
  // A bucket hit exactly pads nothing.
  EXPECT_EQ(model.Cost(Decodes(4, 10)).gpu, Ms(4));
  EXPECT_EQ(rec->last_padding.decodes, 0);
}

TEST(GraphedStepModel, EagerStepsPayTheLaunchCostPerLayer) {
  const GraphedStepModel model(std::make_unique<RecordingModel>(), Policy(), 80, Us(34));
  EXPECT_EQ(model.eager_overhead(), Ns(2'720'000));  // 80 × 34 us
  // 40 decodes: above the largest bucket -> eager at 40: 40 ms + 2.72 ms.
  EXPECT_EQ(model.Cost(Decodes(40, 10)).gpu, Ns(42'720'000));
  // Any prefill work runs eager: 2 decodes + 100 tokens = 2 ms + 0.1 ms + 2.72 ms.
  std::vector<StepChunk> mixed = Decodes(2, 10);
  mixed.push_back(Prefill(100));
  EXPECT_EQ(model.Cost(mixed).gpu, Ns(4'820'000));
  EXPECT_EQ(model.kind(), "recording");
  EXPECT_EQ(model.PrefillCostPerToken(), Us(1));
}

TEST(GraphedStepModel, WrapsAffineExactly) {
  const AffineParams p{Ms(20), Us(35), Ms(45), Us(500)};
  const GraphedStepModel model(std::make_unique<AffineStepModel>(p), Policy(), 80, Us(34));
  // 5 decodes graphed at 8: 45 + 8 × 0.5 = 49 ms; 33 decodes eager: 45 + 16.5 + 2.72.
  EXPECT_EQ(model.Cost(Decodes(5, 100)).gpu, Ms(49));
  EXPECT_EQ(model.Cost(Decodes(33, 100)).gpu, Ns(64'220'000));
  const Json j = model.Describe();
  EXPECT_EQ(j["kind"], "affine");
  EXPECT_EQ(j["cuda_graphs"]["buckets"], Json({1, 4, 8, 16, 32}));
  EXPECT_EQ(j["cuda_graphs"]["eager_step_overhead_ns"], 2'720'000);
}

}  // namespace
}  // namespace fleetplan
