// The step-model factory: every kind from scenario YAML, located errors with did-you-mean,
// table paths relative to the scenario folder, load-time coverage checks, graph wrapping.
#include "fleetplan/perf/factory.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/catalog/catalog.h"
#include "perf/perf_test_util.h"

namespace fleetplan {
namespace {

using perf_test::Decodes;
using perf_test::Prefill;
using perf_test::Yaml;
using ::testing::HasSubstr;
using ::testing::StartsWith;

StepModelContext Context() {
  const Catalog& c = Catalog::Builtin();
  StepModelContext ctx;
  ctx.memory.model = c.Model("atlas-70b").value();
  ctx.memory.gpu = c.Gpu("h100-sxm-80g").value();
  ctx.memory.layout = Parallelism{4, 1, 1};
  ctx.memory.max_running = 16;
  ctx.memory.max_batched_tokens = 1024;
  ctx.tp_link = c.Link("nvlink4").value();
  ctx.pp_link = c.Link("ib-ndr-400").value();
  return ctx;
}

Expected<std::unique_ptr<StepCostModel>> Make(std::string_view yaml, const StepModelContext& ctx) {
  const YamlDocument doc = Yaml(yaml);
  return MakeStepCostModel(doc.root()["engine"]["step_model"], ctx);
}

std::string Error(std::string_view yaml, const StepModelContext& ctx = Context()) {
  auto m = Make(yaml, ctx);
  EXPECT_FALSE(m.ok());
  if (m.ok()) return "";
  EXPECT_EQ(m.status().exit_code(), 3);
  return m.status().message();
}

// A scenario folder with profiles/t.csv: the 3 × 3 grid of table_test.cc.
class ScenarioDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("perf_factory_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_ / "profiles");
    std::ofstream(dir_ / "profiles" / "t.csv") << "decode_batch,prefill_tokens,step_ms\n"
                                                  "0,0,10\n0,512,20.24\n0,1024,30.48\n"
                                                  "8,0,14\n8,512,28.336\n8,1024,42.672\n"
                                                  "16,0,18\n16,512,36.432\n16,1024,54.864\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  StepModelContext Ctx() const {
    StepModelContext ctx = Context();
    ctx.scenario_dir = dir_.string();
    return ctx;
  }
  std::string Csv() const { return (dir_ / "profiles" / "t.csv").string(); }
  std::filesystem::path dir_;
};

TEST(MakeStepCostModel, KindsAreListedSorted) {
  EXPECT_THAT(StepModelKinds(),
              ::testing::ElementsAre("affine", "aiconfigurator", "kernel-table", "roofline", "table"));
}

TEST(MakeStepCostModel, BuildsAffine) {
  auto m = Make("engine:\n  step_model: {kind: affine, prefill: {base: 20ms, per_token: 0.035ms}, "
                "decode: {base: 45ms, per_seq: 0ms}}\n",
                Context());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->kind(), "affine");
  EXPECT_EQ((*m)->Cost(Decodes(10, 5)).gpu, Ms(45));
}

TEST(MakeStepCostModel, BuildsRoofline) {
  auto m = Make("engine:\n  step_model: {kind: roofline, compute_efficiency: 0.6}\n", Context());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->kind(), "roofline");
  EXPECT_EQ((*m)->Describe()["compute_efficiency"], 0.6);
  EXPECT_GT((*m)->Cost(Decodes(8, 100)).gpu, Ms(10));
}

TEST(MakeStepCostModelErrors, UnknownKindHasDidYouMean) {
  EXPECT_EQ(Error("engine:\n  step_model:\n    kind: rooflin\n"),
            "scenario.yaml:3:11: engine.step_model.kind: unknown step model kind 'rooflin'; did "
            "you mean 'roofline'? (valid: affine, aiconfigurator, kernel-table, roofline, table)\n"
            "    3 |     kind: rooflin\n"
            "      |           ^\n");
  EXPECT_THAT(Error("engine:\n  step_model:\n    kind: analytic\n"),
              StartsWith("scenario.yaml:3:11: engine.step_model.kind: unknown step model kind "
                         "'analytic' (valid: affine, aiconfigurator, kernel-table, roofline, table)"));
}

TEST(MakeStepCostModelErrors, NotAMapOrNoKind) {
  EXPECT_THAT(Error("engine:\n  step_model: roofline\n"),
              StartsWith("scenario.yaml:2:15: engine.step_model: expected a map with a `kind` "
                         "(affine, aiconfigurator, kernel-table, roofline, table)"));
  EXPECT_THAT(Error("engine:\n  step_model: {file: t.csv}\n"),
              StartsWith("scenario.yaml:2:15: engine.step_model: missing required field 'kind'"));
}

TEST(MakeStepCostModelErrors, KeysOfAnotherKindAreUnknown) {
  EXPECT_THAT(Error("engine:\n  step_model: {kind: roofline, file: t.csv}\n"),
              StartsWith("scenario.yaml:2:32: engine.step_model: unknown field 'file' (valid: kind, "
                         "compute_efficiency, attention_efficiency, memory_efficiency)"));
}

TEST(MakeStepCostModelErrors, RooflineLayoutErrorIsLocatedAtTheStepModel) {
  StepModelContext ctx = Context();
  ctx.memory.layout.tp = 3;
  EXPECT_THAT(Error("engine:\n  step_model: {kind: roofline}\n", ctx),
              StartsWith("scenario.yaml:2:15: engine.step_model: tp: "));
}

TEST_F(ScenarioDir, TablePathResolvesAgainstTheScenarioFolder) {
  StepModelContext ctx = Ctx();
  auto m = Make("engine:\n  step_model: {kind: table, file: profiles/t.csv}\n", ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->kind(), "table");
  EXPECT_EQ((*m)->Describe()["file"], Csv());
  EXPECT_EQ((*m)->Cost(Decodes(8, 100)).gpu, Ms(14));
}

TEST_F(ScenarioDir, TableMustCoverTheEngineLimitsUnlessExtrapolating) {
  StepModelContext ctx = Ctx();
  ctx.memory.max_running = 64;
  ctx.memory.max_batched_tokens = 8192;
  EXPECT_EQ(Error("engine:\n  step_model: {kind: table, file: profiles/t.csv}\n", ctx),
            fmt::format("scenario.yaml:2:35: engine.step_model.file: step table '{}' covers "
                        "decode_batch 0..16 and prefill_tokens 0..1024, but steps reach "
                        "decode_batch 0..64 and prefill_tokens 0..8192; extend the table or set "
                        "extrapolate: true\n"
                        "    2 |   step_model: {{kind: table, file: profiles/t.csv}}\n"
                        "      |                                   ^\n",
                        Csv()));
  auto m = Make("engine:\n  step_model: {kind: table, file: profiles/t.csv, extrapolate: true}\n", ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const StepCost cost = (*m)->Cost(Decodes(24, 100));
  EXPECT_EQ(cost.gpu, Ms(22));
  EXPECT_TRUE(cost.extrapolated);
}

TEST_F(ScenarioDir, GraphPaddingCountsInTheCoverage) {
  // max_running 16 fits the grid, but a bucket list ending at 32 pads 9..16 up to 32.
  StepModelContext ctx = Ctx();
  ctx.cuda_graphs = CudaGraphPolicy::Create({1, 8, 32}, true, std::nullopt).value();
  EXPECT_THAT(Error("engine:\n  step_model: {kind: table, file: profiles/t.csv}\n", ctx),
              HasSubstr("decode_batch 0..32 and prefill_tokens 0..1024; extend the table or set "
                        "extrapolate: true (max_running 16 runs as CUDA-graph bucket 32)"));
}

TEST_F(ScenarioDir, MissingTableFileIsLocatedAtTheFileField) {
  EXPECT_THAT(Error("engine:\n  step_model: {kind: table, file: profiles/nope.csv}\n", Ctx()),
              StartsWith("scenario.yaml:2:35: engine.step_model.file: cannot read step table: "));
}

TEST_F(ScenarioDir, CsvErrorsKeepTheirOwnLocation) {
  std::ofstream(dir_ / "profiles" / "bad.csv") << "decode_batch,prefill_tokens,step_ms\n0,0,x\n";
  EXPECT_THAT(Error("engine:\n  step_model: {kind: table, file: profiles/bad.csv}\n", Ctx()),
              StartsWith(fmt::format("{}:2:5: step_ms: expected milliseconds",
                                     (dir_ / "profiles" / "bad.csv").string())));
}

TEST(MakeStepCostModel, DeclaredGraphsWrapTheModel) {
  StepModelContext ctx = Context();
  ctx.cuda_graphs = CudaGraphPolicy::Create({1, 4, 8}, true, std::nullopt).value();
  auto m = Make("engine:\n  step_model: {kind: affine, prefill: {base: 20ms, per_token: 0.035ms}, "
                "decode: {base: 45ms, per_seq: 1ms}}\n",
                ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Json j = (*m)->Describe();
  EXPECT_EQ(j["kind"], "affine");
  // tp 4 default: 80 layers × 2 × 17 us = 2.72 ms per eager step.
  EXPECT_EQ(j["cuda_graphs"]["eager_step_overhead_ns"], 2'720'000);
  EXPECT_EQ((*m)->Cost(Decodes(3, 10)).gpu, Ms(49));              // padded to 4
  EXPECT_EQ((*m)->Cost(Decodes(9, 10)).gpu, Ns(56'720'000));      // eager: 45 + 9 + 2.72
}

TEST(ResolveScenarioPath, RelativeToTheScenarioFolder) {
  EXPECT_EQ(ResolveScenarioPath("configs", "profiles/t.csv"), "configs/profiles/t.csv");
  EXPECT_EQ(ResolveScenarioPath("configs", "../shared/t.csv"), "shared/t.csv");
  EXPECT_EQ(ResolveScenarioPath("configs", "/abs/t.csv"), "/abs/t.csv");
  EXPECT_EQ(ResolveScenarioPath("", "t.csv"), "t.csv");
}

}  // namespace
}  // namespace fleetplan
