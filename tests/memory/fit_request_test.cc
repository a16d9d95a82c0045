// Reading fit's inputs from a scenario and resolving them against the catalog: strict
// reads, unknown keys, defaults listed, and errors located at the value at fault.
#include "fleetplan/memory/fit_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;

Expected<FitSpec> Read(std::string_view yaml, const std::string& pool = "") {
  Expected<YamlDocument> doc = YamlDocument::LoadString(yaml, "scenario.yaml");
  if (!doc.ok()) return doc.status();
  return ReadFitScenario(*doc, pool, ValueOrigin::Flag("--pool"));
}

std::string ErrorOf(std::string_view yaml, const std::string& pool = "") {
  Expected<FitSpec> spec = Read(yaml, pool);
  if (!spec.ok()) return spec.status().message();
  Expected<ResolvedFit> fit = ResolveFitSpec(*spec, Catalog::Builtin());
  return fit.ok() ? "ok" : fit.status().message();
}

constexpr std::string_view kScenario = R"(version: 1
name: small
model:
  name: atlas-70b
  weight_dtype: bf16
  kv_dtype: fp8
  kv_window: null
  max_context: 16384
hardware:
  gpu: h100-sxm-80g
deployment:
  tp: 4
  gpu_memory_utilization: 0.85
engine:
  scheduler: {max_running: 32, max_batched_tokens: 4096}
  kv: {block_tokens: 32}
router: {policy: round-robin}
)";

TEST(ReadFitScenario, ReadsTheValuesFitNeedsWithTheirOrigins) {
  Expected<FitSpec> spec = Read(kScenario);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model_name.value, "atlas-70b");
  EXPECT_EQ(spec->kv_dtype.value, DType::kFp8);
  ASSERT_TRUE(spec->kv_window.value.has_value());
  EXPECT_FALSE(spec->kv_window.value->has_value());  // explicit null: full context
  EXPECT_EQ(spec->context.value, 16384);
  EXPECT_EQ(spec->tp.value, 4);
  EXPECT_EQ(spec->tp.origin.path, "deployment.tp");
  EXPECT_EQ(spec->tp.origin.where.line, 12);
  EXPECT_EQ(spec->concurrency.value, 32);
  EXPECT_EQ(spec->concurrency.origin.path, "engine.scheduler.max_running");
  EXPECT_EQ(spec->block_tokens.value, 32);
  EXPECT_EQ(spec->max_batched_tokens.value, 4096);
  EXPECT_DOUBLE_EQ(*spec->gpu_memory_utilization.value, 0.85);
}

TEST(ResolveFitSpec, FillsDefaultsAndListsThem) {
  Expected<FitSpec> spec = Read("model: {name: atlas-70b}\nhardware: {gpu: h100-sxm-80g}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  Expected<ResolvedFit> fit = ResolveFitSpec(*spec, Catalog::Builtin());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->request.context, 131072);
  // From a scenario, an absent max_running is the engine's default, as the simulation runs it.
  EXPECT_EQ(fit->request.concurrency, 256);
  EXPECT_EQ(fit->request.memory.max_running, 256);
  EXPECT_EQ(fit->request.memory.layout.tp, 1);
  EXPECT_THAT(fit->derived,
              ElementsAre("context 131072: the max_context of 'atlas-70b' (not given)",
                          "defaults (not given): tp 1, pp 1, ep 1, weight_dtype bf16 (the "
                          "checkpoint's), kv_dtype bf16, kv_window none (full context), "
                          "gpu_memory_utilization 0.9, block_tokens 16, max_batched_tokens 8192, "
                          "engine.scheduler.max_running 256"));
  // From flags alone, the fit verb's concurrency is one sequence.
  FitSpec flags;
  flags.model_name.Set("atlas-70b", ValueOrigin::Flag("--model"));
  flags.gpu_name.Set("h100-sxm-80g", ValueOrigin::Flag("--gpu"));
  Expected<ResolvedFit> from_flags = ResolveFitSpec(flags, Catalog::Builtin());
  ASSERT_TRUE(from_flags.ok()) << from_flags.status().message();
  EXPECT_EQ(from_flags->request.concurrency, 1);
}

TEST(ReadFitScenario, ReferenceScenarioFromTheSpec) {
  FP_REQUIRE_SHARED_DATA();
  Expected<FitSpec> spec = ReadFitScenario(::fleetplan::testing::SharedDataRoot() + "/../spec/scenario-v1.yaml", "",
                                           ValueOrigin::Flag("--pool"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  Expected<ResolvedFit> fit = ResolveFitSpec(*spec, Catalog::Builtin());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->request.memory.model.name, "atlas-70b");
  EXPECT_EQ(fit->request.memory.gpu.name, "h100-sxm-80g");
  EXPECT_EQ(fit->request.memory.layout.tp, 4);
  EXPECT_EQ(fit->request.context, 32768);
  EXPECT_EQ(fit->request.concurrency, 256);
  EXPECT_EQ(fit->request.memory.block_tokens, 16);
  EXPECT_EQ(fit->request.memory.max_batched_tokens, 8192);
  EXPECT_FALSE(fit->request.memory.kv_window.has_value());
}

TEST(ReadFitScenario, MisspelledKeysAreLocatedErrors) {
  EXPECT_EQ(ErrorOf("model: {name: atlas-70b}\ndeploymnet: {tp: 4}\n"),
            "scenario.yaml:2:1: unknown field 'deploymnet'; did you mean 'deployment'? "
            "(valid: version, name, seed, model, hardware, deployment, engine, router, workload, "
            "slo, output, faults, catalog, admission, autoscaling)\n"
            "    2 | deploymnet: {tp: 4}\n"
            "      | ^\n");
  EXPECT_EQ(ErrorOf("engine:\n  scheduler:\n    max_runing: 8\n"),
            "scenario.yaml:3:5: engine.scheduler: unknown field 'max_runing'; did you "
            "mean 'max_running'? (valid: policy, max_batched_tokens, max_running, chunk_tokens, "
            "max_decode_stall, aging_per_step, max_waiting, admission, "
            "reject_unreachable_deadline, num_scheduler_steps)\n"
            "    3 |     max_runing: 8\n"
            "      |     ^\n");
}

TEST(ReadFitScenario, BadValuesAreLocatedErrors) {
  EXPECT_EQ(ErrorOf("model: {name: atlas-70b, weight_dtype: bf61}\n"),
            "scenario.yaml:1:40: model.weight_dtype: unknown dtype 'bf61'; did you mean 'bf16'? "
            "(valid: bf16, fp16, fp8, int8, int4, fp4, fp32)\n"
            "    1 | model: {name: atlas-70b, weight_dtype: bf61}\n"
            "      |                                        ^\n");
  EXPECT_EQ(ErrorOf("model: {name: atlas-70b}\nhardware: {gpu: h100-sxm-80g}\n"
                    "deployment: {tp: 3}\n"),
            "scenario.yaml:3:18: deployment.tp: tp 3 does not divide the 64 attention heads of "
            "'atlas-70b' (valid tp: 1, 2, 4, 8, 16, 32, 64)\n"
            "    3 | deployment: {tp: 3}\n"
            "      |                  ^\n");
  EXPECT_EQ(ErrorOf("model: {name: atlas-70b}\nhardware: {gpu: h100-sxm-80g}\n"
                    "deployment: {gpu_memory_utilization: 1.5}\n"),
            "scenario.yaml:3:38: deployment.gpu_memory_utilization: expected a number in (0, 1], "
            "got 1.5\n"
            "    3 | deployment: {gpu_memory_utilization: 1.5}\n"
            "      |                                      ^\n");
  EXPECT_EQ(ErrorOf("version: 2\n"),
            "scenario.yaml:1:10: version: unsupported scenario version 2; expected 1\n"
            "    1 | version: 2\n"
            "      |          ^\n");
}

TEST(ReadFitScenario, UnknownModelIsLocatedWithSuggestion) {
  const std::string e = ErrorOf("model: {name: atlas-7b}\nhardware: {gpu: h100-sxm-80g}\n");
  EXPECT_THAT(e, ::testing::StartsWith("scenario.yaml:1:15: model.name: unknown model 'atlas-7b'; "
                                       "did you mean 'atlas-70b'? (valid: "));
}

constexpr std::string_view kPools = R"(model: {name: atlas-70b}
hardware: {gpu: h100-sxm-80g}
deployment:
  pools:
    - {role: prefill, tp: 8}
    - {role: decode, tp: 4}
)";

TEST(ReadFitScenario, PoolsAreChosenByRole) {
  Expected<FitSpec> spec = Read(kPools, "decode");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->tp.value, 4);
  EXPECT_EQ(spec->tp.origin.path, "deployment.pools[1].tp");
  EXPECT_EQ(ErrorOf(kPools),
            "scenario.yaml:5:5: deployment.pools: the scenario has 2 pools (prefill, decode); "
            "choose one with --pool ROLE\n"
            "    5 |     - {role: prefill, tp: 8}\n"
            "      |     ^\n");
  EXPECT_EQ(ErrorOf(kPools, "decod"),
            "--pool: unknown pool role 'decod'; did you mean 'decode'? (valid: prefill, decode)");
}

TEST(ReadFitScenario, InlineModelSpec) {
  Expected<FitSpec> spec = Read(
      "model:\n  name: tiny\n  spec: {layers: 2, hidden: 256, heads: 4, kv_heads: 2, head_dim: 64,"
      " intermediate: 512, vocab: 1000, max_context: 2048}\nhardware: {gpu: h100-sxm-80g}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  Expected<ResolvedFit> fit = ResolveFitSpec(*spec, Catalog::Builtin());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->request.memory.model.name, "tiny");
  EXPECT_EQ(fit->request.memory.model.layers, 2);
  EXPECT_EQ(fit->request.context, 2048);
}

}  // namespace
}  // namespace fleetplan
