// Validation from `vllm bench serve` result files (fleet/bench_validation.h): the setup's
// located errors, the replay of detailed, aggregate-only and concurrency-capped files, the
// JSON contract, and the published A100 runs when the shared data is there.
#include "fleetplan/fleet/bench_validation.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support/build_paths.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::string_view kSetup = R"(model: meta-llama/Llama-3.1-8B-Instruct
gpu: h100-sxm-80g
tp: 1
engine:
  version: 0.10.2
  max_num_batched_tokens: 2048
  max_num_seqs: 64
  block_size: 16
  gpu_memory_utilization: 0.9
  enable_chunked_prefill: true
  enable_prefix_caching: true
)";

std::string SetupError(std::string_view text) {
  Expected<BenchSetup> s = ParseBenchSetup(text, "setup.yaml");
  return s.ok() ? std::string("ok") : s.status().message();
}

TEST(BenchSetup, ReadsTheFlagsAndMapsTheModel) {
  Expected<BenchSetup> s = ParseBenchSetup(kSetup, "setup.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->catalog_model, "llama-3.1-8b");
  EXPECT_EQ(s->gpu, "h100-sxm-80g");
  EXPECT_EQ(s->engine_version, "0.10.2");
  EXPECT_TRUE(s->chunked_prefill);
  EXPECT_THAT(fmt::format("{}", fmt::join(s->notes, "\n")),
              HasSubstr("model meta-llama/Llama-3.1-8B-Instruct is catalog model llama-3.1-8b"));
  EXPECT_THAT(fmt::format("{}", fmt::join(s->notes, "\n")), HasSubstr("engine.step_model not given"));
}

TEST(BenchSetup, MultiStepSchedulingReachesTheScenario) {
  std::string text(kSetup);
  text += "  num_scheduler_steps: 10\n";
  Expected<BenchSetup> s = ParseBenchSetup(text, "setup.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->num_scheduler_steps, 10);
  const Expected<int64_t> steps = s->scenario->root()["engine"]["scheduler"]["num_scheduler_steps"].AsInt();
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  EXPECT_EQ(*steps, 10);
  EXPECT_THAT(fmt::format("{}", fmt::join(s->notes, "\n")),
              HasSubstr("engine.num_scheduler_steps 10: decode runs of 10 steps admit nothing until they end"));
}

TEST(BenchSetup, BadKeysAndValuesAreLocated) {
  std::string text(kSetup);
  text.replace(text.find("max_num_seqs"), 12, "max_num_seq");
  EXPECT_THAT(SetupError(text), StartsWith("setup.yaml:7:3: engine: unknown field 'max_num_seq'; did you mean "
                                           "'max_num_seqs'?"));
  text = std::string(kSetup);
  text.replace(text.find("max_num_seqs: 64"), 16, "max_num_seqs: 0");
  EXPECT_THAT(SetupError(text), StartsWith("setup.yaml:7:17: engine.max_num_seqs: expected an integer >= 1, got 0"));
  text = std::string(kSetup);
  text.replace(text.find("  max_num_batched_tokens: 2048\n"), 30, "");
  EXPECT_THAT(SetupError(text), HasSubstr("engine: missing required field 'max_num_batched_tokens'"));
  text = std::string(kSetup);
  text.replace(text.find("tp: 1"), 5, "tpp: 1");
  EXPECT_THAT(SetupError(text), StartsWith("setup.yaml:3:1: unknown field 'tpp'; did you mean 'tp'?"));
  EXPECT_THAT(SetupError("model: acme/Frobnicator-9B\ngpu: h100-sxm-80g\nengine: {max_num_batched_tokens: 8}\n"),
              StartsWith("setup.yaml:1:8: model: 'acme/Frobnicator-9B' is neither a catalog model"));
  EXPECT_THAT(SetupError("model: llama-3.1-8b\ngpu: h100-sxm\nengine: {max_num_batched_tokens: 8}\n"),
              StartsWith("setup.yaml:2:6: gpu:"));
  EXPECT_THAT(SetupError("model: llama-3.1-8b\ngpu: h100-sxm-80g\nengine: {max_num_batched_tokens: 8, "
                         "kv_cache_dtype: fp7}\n"),
              HasSubstr("engine.kv_cache_dtype: unknown dtype 'fp7'"));
  EXPECT_THAT(SetupError("model: llama-3.1-8b\ngpu: h100-sxm-80g\nengine: {max_num_batched_tokens: 8, "
                         "enable_chunked_prefill: yes}\n"),
              HasSubstr("engine.enable_chunked_prefill"));
  EXPECT_THAT(SetupError("- 1\n"), HasSubstr("expected a mapping"));
}

// A step model the scenario reader refuses is located in the setup, where it is written.
TEST(BenchSetup, AStepModelErrorPointsAtTheSetup) {
  std::string text(kSetup);
  text += "  step_model: {kind: rooflin}\n";
  Expected<BenchSetup> s = ParseBenchSetup(text, "setup.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  VllmBenchResult r;
  r.request_rate = 1.0;
  r.requests.push_back(VllmBenchRequest{100, 10, false, Ms(50), Ms(300), {}});
  Expected<BenchValidation> v = ValidateBenchResults(*s, {r});
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), StartsWith("setup.yaml:12:"));
  EXPECT_THAT(v.status().message(), HasSubstr("rooflin"));
}

// Eight requests of a small run, all sent at once.
std::string DetailedResult(std::string_view rate, std::string_view cap) {
  return fmt::format(R"({{"model_id": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": {}, "burstiness": 1.0,
    "max_concurrency": {}, "duration": 2.0, "completed": 8, "num_prompts": 8,
    "input_lens": [100, 200, 300, 400, 500, 600, 700, 800], "output_lens": [20, 20, 20, 20, 40, 40, 40, 1],
    "ttfts": [0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09],
    "itls": [{}],
    "errors": ["", "", "", "", "", "", "", ""], "mean_ttft_ms": 55.0}})",
                     rate, cap, "[0.01], [0.01, 0.01], [0.01], [0.02, 0.02], [0.01, 0.01, 0.01], [0.01], [0.01], []");
}

TEST(BenchValidation, ReplaysDetailedFilesIntoTheContract) {
  Expected<BenchSetup> s = ParseBenchSetup(kSetup, "setup.yaml");
  ASSERT_TRUE(s.ok());
  std::vector<VllmBenchResult> results;
  for (const std::string& text :
       {DetailedResult("\"inf\"", "null"), DetailedResult("2.0", "null"), DetailedResult("\"inf\"", "2")}) {
    Expected<VllmBenchResult> r = ParseVllmBenchResult(text, "r.json");
    ASSERT_TRUE(r.ok()) << r.status().message();
    results.push_back(*r);
  }
  Expected<BenchValidation> v = ValidateBenchResults(*s, results);
  ASSERT_TRUE(v.ok()) << v.status().message();
  const Json& j = v->json;
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_EQ(j["points"][0]["label"], "rate inf");
  EXPECT_EQ(j["points"][0]["request_rate"], "inf");
  EXPECT_EQ(j["points"][1]["label"], "rate 2/s");
  EXPECT_EQ(j["points"][2]["label"], "concurrency 2, rate inf");
  EXPECT_EQ(j["points"][2]["max_concurrency"], 2);
  for (const Json& p : j["points"]) {
    for (const char* m : {"ttft", "tpot", "e2e"}) {
      const Json& e = p["metrics"][m]["mean_error_pct"];
      ASSERT_TRUE(e.is_number()) << m << " " << p.dump();
      EXPECT_TRUE(std::isfinite(e.get<double>()));
    }
    EXPECT_EQ(p["requests"], 8);
  }
  // Measured as vLLM computes it: TTFT per request; TPOT over the 7 requests with 2+ tokens.
  const Json& m = j["points"][0]["metrics"];
  EXPECT_DOUBLE_EQ(m["ttft"]["measured_ms"]["mean"].get<double>(), 55.0);
  EXPECT_DOUBLE_EQ(m["ttft"]["measured_ms"]["median"].get<double>(), 55.0);
  // Request 1: 2 gaps of 10 ms over 19 tokens.
  EXPECT_NEAR(m["tpot"]["measured_ms"]["p99"].get<double>(), 2.0 * 20 / 19, 0.5);
  EXPECT_EQ(m["itl"]["measured_ms"]["median"], 10.0);
  // The cap holds requests back at the client (their clocks start when sent): less
  // queueing in the engine, so a lower simulated TTFT, and a longer run.
  EXPECT_LT(j["points"][2]["metrics"]["ttft"]["simulated_ms"]["mean"].get<double>(),
            m["ttft"]["simulated_ms"]["mean"].get<double>());
  EXPECT_GT(j["points"][2]["simulated_duration_s"].get<double>(), j["points"][0]["simulated_duration_s"].get<double>());
  EXPECT_EQ(j["setup"]["catalog_model"], "llama-3.1-8b");
  EXPECT_GT(j["setup"]["kv_blocks"].get<int64_t>(), 0);
  EXPECT_TRUE(j["step_model"].contains("kind"));
  EXPECT_TRUE(j["summary"]["tpot"]["mean_abs_error_pct"].is_number());
  // Deterministic: the same inputs give the same report.
  Expected<BenchValidation> again = ValidateBenchResults(*s, results);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->json.dump(), j.dump());
  EXPECT_THAT(BenchValidationText(j), HasSubstr("concurrency 2, rate inf"));
}

// A warm prefix cache: the prompts are found cached, so the simulated TTFT falls; without
// prefix caching in the setup it is refused.
TEST(BenchValidation, AWarmPrefixCacheServesThePromptsFromTheCache) {
  Expected<BenchSetup> s = ParseBenchSetup(kSetup, "setup.yaml");
  ASSERT_TRUE(s.ok());
  Expected<VllmBenchResult> r = ParseVllmBenchResult(DetailedResult("\"inf\"", "null"), "r.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  Expected<BenchValidation> cold = ValidateBenchResults(*s, {*r});
  BenchReplayOptions warm_options;
  warm_options.warm_prefix_cache = true;
  Expected<BenchValidation> warm = ValidateBenchResults(*s, {*r}, warm_options);
  ASSERT_TRUE(cold.ok() && warm.ok());
  const Json& cm = cold->json["points"][0]["metrics"];
  const Json& wm = warm->json["points"][0]["metrics"];
  EXPECT_LT(wm["ttft"]["simulated_ms"]["mean"].get<double>(), cm["ttft"]["simulated_ms"]["mean"].get<double>());
  EXPECT_EQ(warm->json["points"][0]["requests"], 8);
  EXPECT_THAT(warm->json["notes"].dump(), HasSubstr("warm prefix cache"));
  // The measured side does not change.
  EXPECT_EQ(wm["ttft"]["measured_ms"], cm["ttft"]["measured_ms"]);

  std::string no_cache(kSetup);
  no_cache.replace(no_cache.find("enable_prefix_caching: true"), 27, "enable_prefix_caching: false");
  Expected<BenchSetup> s2 = ParseBenchSetup(no_cache, "setup.yaml");
  ASSERT_TRUE(s2.ok());
  Expected<BenchValidation> refused = ValidateBenchResults(*s2, {*r}, warm_options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("engine.enable_prefix_caching is not true"));
}

TEST(BenchValidation, AnAggregateOnlyFileIsReplayedWithMeanLengths) {
  Expected<BenchSetup> s = ParseBenchSetup(kSetup, "setup.yaml");
  ASSERT_TRUE(s.ok());
  Expected<VllmBenchResult> r = ParseVllmBenchResult(
      R"({"request_rate": 4.0, "burstiness": 1.0, "completed": 50, "total_input_tokens": 25000,
          "total_output_tokens": 5000, "mean_ttft_ms": 40.0, "median_ttft_ms": 35.0, "p99_ttft_ms": 90.0,
          "mean_tpot_ms": 8.0, "median_tpot_ms": 7.9, "p99_tpot_ms": 9.5, "mean_itl_ms": 8.0})",
      "agg.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  Expected<BenchValidation> v = ValidateBenchResults(*s, {*r});
  ASSERT_TRUE(v.ok()) << v.status().message();
  const Json& p = v->json["points"][0];
  EXPECT_EQ(p["detailed"], false);
  EXPECT_EQ(p["requests"], 50);
  EXPECT_THAT(p["notes"].dump(), HasSubstr("lengths synthesised, 50 requests (completed) of 500 prompt tokens"));
  EXPECT_THAT(p["notes"].dump(), HasSubstr("measured mean E2E estimated as mean TTFT + mean TPOT x (mean output - 1)"));
  EXPECT_DOUBLE_EQ(p["metrics"]["e2e"]["measured_ms"]["mean"].get<double>(), 40.0 + 8.0 * 99);
  EXPECT_DOUBLE_EQ(p["metrics"]["ttft"]["measured_ms"]["p99"].get<double>(), 90.0);
  for (const char* m : {"ttft", "tpot", "e2e"}) EXPECT_TRUE(p["metrics"][m]["mean_error_pct"].is_number()) << m;
}

// The published A100 runs (set 06) with the setups kept in the repository.
TEST(BenchValidation, PublishedA100RunsReplay) {
  FP_REQUIRE_SHARED_DATA();
  const std::string root = testing::SharedPath("measurements/06_surajssd_a100_llama33_70b_tp8_vs_tp4pp2/per_request");
  if (!std::filesystem::is_directory(root)) GTEST_SKIP() << "no " << root;
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"tp8_pp1", "a100-40g-llama-3.3-70b-tp8.yaml"}, {"tp4_pp2_ib_optimized", "a100-40g-llama-3.3-70b-tp4-pp2.yaml"}};
  for (const auto& [folder, setup_file] : runs) {
    Expected<BenchSetup> s = LoadBenchSetup(std::string(FLEETPLAN_SOURCE_DIR) + "/docs/fidelity/setups/" + setup_file);
    ASSERT_TRUE(s.ok()) << s.status().message();
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(root + "/" + folder)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    ASSERT_EQ(files.size(), 4u) << folder;
    std::vector<VllmBenchResult> results;
    for (const std::string& f : files) {
      Expected<VllmBenchResult> r = ReadVllmBenchResult(f);
      ASSERT_TRUE(r.ok()) << r.status().message();
      results.push_back(*r);
    }
    Expected<BenchValidation> v = ValidateBenchResults(*s, results);
    ASSERT_TRUE(v.ok()) << v.status().message();
    ASSERT_EQ(v->json["points"].size(), 4u);
    for (const Json& p : v->json["points"]) {
      EXPECT_EQ(p["requests"], 200);
      for (const char* m : {"ttft", "tpot", "e2e"}) {
        const Json& e = p["metrics"][m]["mean_error_pct"];
        ASSERT_TRUE(e.is_number()) << folder << " " << p["label"] << " " << m;
        EXPECT_TRUE(std::isfinite(e.get<double>()));
      }
    }
    // The file's own mean TTFT and TPOT are what is measured here too.
    EXPECT_NEAR(v->json["points"][0]["metrics"]["ttft"]["measured_ms"]["mean"].get<double>(),
                results[0].Stated("mean", "ttft").value(), 1e-3);
    EXPECT_NEAR(v->json["points"][0]["metrics"]["tpot"]["measured_ms"]["mean"].get<double>(),
                results[0].Stated("mean", "tpot").value(), 1e-3);
  }
}

}  // namespace
}  // namespace fleetplan
