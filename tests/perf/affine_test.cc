// The affine step model: exact nanosecond costs on hand-computed cases, the mixed-step
// rule (one base per forward pass), padding, YAML parsing and its errors.
#include "fleetplan/perf/affine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "perf/perf_test_util.h"

namespace fleetplan {
namespace {

using perf_test::Decode;
using perf_test::Decodes;
using perf_test::Prefill;
using perf_test::Yaml;

// prefill: base 20 ms, 35 us per token; decode: base 45 ms, 0.5 ms per sequence.
AffineStepModel Model() {
  return AffineStepModel(AffineParams{Ms(20), Us(35), Ms(45), Us(500)});
}

TEST(AffineStepModel, PrefillOnlyStepIsBasePlusPerToken) {
  // 20 ms + 100 × 35 us = 23.5 ms.
  const std::vector<StepChunk> chunks = {Prefill(100)};
  EXPECT_EQ(Model().Cost(chunks).gpu, Ns(23'500'000));
  // Two chunks in one pass pay one base: 20 ms + (100 + 412) × 35 us = 37.92 ms.
  const std::vector<StepChunk> two = {Prefill(100), Prefill(412, 1000)};
  EXPECT_EQ(Model().Cost(two).gpu, Ns(37'920'000));
}

TEST(AffineStepModel, DecodeOnlyStepIsBasePlusPerSequence) {
  // 45 ms + 8 × 0.5 ms = 49 ms; context length does not enter.
  EXPECT_EQ(Model().Cost(Decodes(8, 10)).gpu, Ms(49));
  EXPECT_EQ(Model().Cost(Decodes(8, 30000)).gpu, Ms(49));
}

TEST(AffineStepModel, MixedStepPaysTheLargerBaseOnce) {
  // 5 decodes + prefill chunks of 100 and 200 tokens:
  // max(20, 45) ms + 300 × 35 us + 5 × 0.5 ms = 45 + 10.5 + 2.5 = 58 ms.
  std::vector<StepChunk> chunks = Decodes(5, 700);
  chunks.push_back(Prefill(100));
  chunks.push_back(Prefill(200, 4096));
  const StepCost cost = Model().Cost(chunks);
  EXPECT_EQ(cost.gpu, Ms(58));
  EXPECT_EQ(cost.collectives, Duration());
  EXPECT_FALSE(cost.extrapolated);
  // When the prefill base is the larger one it is the one paid: 60 ms + 35 us + 1 ms.
  const AffineStepModel heavy_prefill(AffineParams{Ms(60), Us(35), Ms(45), Ms(1)});
  const std::vector<StepChunk> one_each = {Decode(10), Prefill(1, 10)};
  EXPECT_EQ(heavy_prefill.Cost(one_each).gpu, Ns(61'035'000));
}

TEST(AffineStepModel, PaddingCountsAsDecodes) {
  // 3 real decodes padded to 8: 45 ms + 8 × 0.5 ms.
  EXPECT_EQ(Model().CostPadded(Decodes(3, 100), StepPadding{5, 100}).gpu, Ms(49));
  EXPECT_EQ(Model().CostPadded(Decodes(3, 100), StepPadding{}).gpu, Ns(46'500'000));
}

TEST(AffineStepModel, PrefillCostPerTokenIsTheMarginalCost) {
  EXPECT_EQ(Model().PrefillCostPerToken(), Us(35));
}

TEST(AffineStepModel, ParsesTheScenarioFormKeepingNanosecondPrecision) {
  const YamlDocument doc = Yaml(
      "step_model: {kind: affine, prefill: {base: 20ms, per_token: 0.035ms},\n"
      "             decode: {base: 45ms, per_seq: 0.0123456ms}}\n");
  const auto p = AffineStepModel::Parse(doc.root()["step_model"]);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->prefill_base, Ms(20));
  EXPECT_EQ(p->prefill_per_token, Ns(35'000));
  EXPECT_EQ(p->decode_base, Ms(45));
  EXPECT_EQ(p->decode_per_seq, Ns(12'346));  // 12,345.6 ns rounds to the nearest ns
  const AffineStepModel model(*p);
  // 45 ms + 3 × 12,346 ns + 20 × 35,000 ns (mixed) = 45,737,038 ns.
  std::vector<StepChunk> chunks = Decodes(3, 1);
  chunks.push_back(Prefill(20));
  EXPECT_EQ(model.Cost(chunks).gpu, Ns(45'737'038));
}

TEST(AffineStepModel, DescribeShowsEveryParameter) {
  const Json j = Model().Describe();
  EXPECT_EQ(j["kind"], "affine");
  EXPECT_EQ(j["prefill"]["base_ns"], 20'000'000);
  EXPECT_EQ(j["prefill"]["per_token_ns"], 35'000);
  EXPECT_EQ(j["decode"]["base_ns"], 45'000'000);
  EXPECT_EQ(j["decode"]["per_seq_ns"], 500'000);
}

TEST(AffineStepModelErrors, UnknownKeyIsLocatedWithDidYouMean) {
  const YamlDocument doc = Yaml(
      "step_model:\n"
      "  kind: affine\n"
      "  prefill: {base: 20ms, per_tokens: 0.035ms}\n"
      "  decode: {base: 45ms, per_seq: 0ms}\n");
  const auto p = AffineStepModel::Parse(doc.root()["step_model"]);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "scenario.yaml:3:25: step_model.prefill: unknown field 'per_tokens'; did you mean "
            "'per_token'? (valid: base, per_token)\n"
            "    3 |   prefill: {base: 20ms, per_tokens: 0.035ms}\n"
            "      |                         ^\n");
  EXPECT_EQ(p.status().exit_code(), 3);
}

TEST(AffineStepModelErrors, MissingFieldAndBareNumberAreLocated) {
  const YamlDocument missing = Yaml(
      "step_model:\n"
      "  kind: affine\n"
      "  prefill: {base: 20ms, per_token: 0.035ms}\n"
      "  decode: {base: 45ms}\n");
  const auto p = AffineStepModel::Parse(missing.root()["step_model"]);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              ::testing::StartsWith("scenario.yaml:4:11: step_model.decode: missing required "
                                    "field 'per_seq'"));

  const YamlDocument unitless = Yaml(
      "step_model:\n"
      "  kind: affine\n"
      "  prefill: {base: 20, per_token: 0.035ms}\n"
      "  decode: {base: 45ms, per_seq: 0ms}\n");
  const auto q = AffineStepModel::Parse(unitless.root()["step_model"]);
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(),
              ::testing::StartsWith("scenario.yaml:3:19: step_model.prefill.base: expected a "
                                    "duration with a unit"));
}

}  // namespace
}  // namespace fleetplan
