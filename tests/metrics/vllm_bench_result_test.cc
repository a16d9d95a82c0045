// The `vllm bench serve` result file as a value (metrics/vllm_bench.h): detailed and
// aggregate-only files, and the located errors of malformed ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "fleetplan/metrics/vllm_bench.h"

namespace fleetplan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Two requests, the second with three gaps; the stated figures of the client.
constexpr std::string_view kDetailed = R"({
  "date": "20250414-171118", "backend": "vllm", "model_id": "meta-llama/Llama-3.3-70B-Instruct",
  "num_prompts": 2, "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null,
  "duration": 3.5, "completed": 2, "total_input_tokens": 300, "total_output_tokens": 5,
  "request_goodput:": null,
  "input_lens": [100, 200], "output_lens": [1, 4],
  "ttfts": [0.05, 0.1], "itls": [[], [0.02, 0.03, 0.04]],
  "generated_texts": ["a", "bcd"], "errors": ["", ""],
  "mean_ttft_ms": 75.0, "median_ttft_ms": 75.0, "p99_ttft_ms": 99.5, "mean_tpot_ms": 30.0,
  "std_itl_ms": 8.2, "p99.9_itl_ms": 40.0
})";

TEST(VllmBenchResult, ReadsADetailedFile) {
  Expected<VllmBenchResult> r = ParseVllmBenchResult(kDetailed, "qps_4.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->detailed());
  EXPECT_EQ(r->model_id, "meta-llama/Llama-3.3-70B-Instruct");
  ASSERT_TRUE(r->request_rate.has_value());
  EXPECT_DOUBLE_EQ(*r->request_rate, 4.0);
  EXPECT_DOUBLE_EQ(r->burstiness, 1.0);
  EXPECT_FALSE(r->max_concurrency.has_value());
  EXPECT_EQ(r->completed, 2);
  ASSERT_EQ(r->requests.size(), 2u);
  EXPECT_EQ(r->requests[1].input_tokens, 200);
  EXPECT_EQ(r->requests[1].output_tokens, 4);
  EXPECT_EQ(r->requests[1].ttft, Ms(100));
  EXPECT_EQ(r->requests[1].e2e, Ms(190));  // ttft + the three gaps
  ASSERT_EQ(r->requests[1].itls.size(), 3u);
  EXPECT_EQ(r->requests[1].itls[2], Ms(40));
  EXPECT_EQ(r->requests[0].e2e, Ms(50));
  EXPECT_EQ(r->Stated("mean", "ttft"), 75.0);
  EXPECT_EQ(r->Stated("p99.9", "itl"), 40.0);
  EXPECT_EQ(r->Stated("std", "itl"), 8.2);
  EXPECT_FALSE(r->Stated("mean", "e2el").has_value());
  EXPECT_THAT(r->digest, StartsWith("sha256:"));
}

TEST(VllmBenchResult, LatenciesGiveTheEndToEndTime) {
  std::string text(kDetailed);
  text.replace(text.find("\"errors\""), 0, R"("latencies": [0.06, 0.25], )");
  Expected<VllmBenchResult> r = ParseVllmBenchResult(text, "qps_4.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->requests[1].e2e, Ms(250));
}

TEST(VllmBenchResult, RateInfAndAConcurrencyCap) {
  std::string text(kDetailed);
  text.replace(text.find("4.0"), 3, "\"inf\"");
  text.replace(text.find("null"), 4, "16");
  text.replace(text.find("\"burstiness\": 1.0"), 17, "\"burstiness\": 0.5");
  Expected<VllmBenchResult> r = ParseVllmBenchResult(text, "qps_inf.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->request_rate.has_value());
  EXPECT_EQ(r->max_concurrency, 16);
  EXPECT_DOUBLE_EQ(r->burstiness, 0.5);
}

TEST(VllmBenchResult, FailedRequestsKeepTheirLengthsButNoTimes) {
  std::string text(kDetailed);
  text.replace(text.find(R"(["", ""])"), 8, R"(["", "Bad Gateway"])");
  text.replace(text.find("[0.05, 0.1]"), 11, "[0.05, 0]");
  Expected<VllmBenchResult> r = ParseVllmBenchResult(text, "f.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->requests[1].failed);
  EXPECT_FALSE(r->requests[0].failed);
}

// Without --save-detailed: the client's settings and its figures only.
constexpr std::string_view kAggregate = R"({"backend": "vllm", "model_id": "m", "num_prompts": 100,
  "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": 8, "duration": 60.5, "completed": 100,
  "total_input_tokens": 102400, "total_output_tokens": 12800,
  "mean_ttft_ms": 80.5, "median_ttft_ms": 70.0, "p99_ttft_ms": 300.0,
  "mean_tpot_ms": 20.0, "median_tpot_ms": 19.0, "p99_tpot_ms": 30.0,
  "mean_itl_ms": 20.0, "median_itl_ms": 19.5, "p99_itl_ms": 45.0})";

TEST(VllmBenchResult, ReadsAnAggregateOnlyFile) {
  Expected<VllmBenchResult> r = ParseVllmBenchResult(kAggregate, "agg.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->detailed());
  EXPECT_EQ(r->max_concurrency, 8);
  EXPECT_EQ(r->total_input_tokens, 102400);
  EXPECT_EQ(r->total_output_tokens, 12800);
  EXPECT_EQ(r->Stated("median", "tpot"), 19.0);
  ASSERT_TRUE(r->duration_s.has_value());
  EXPECT_DOUBLE_EQ(*r->duration_s, 60.5);
}

std::string ErrorOf(std::string_view text) {
  Expected<VllmBenchResult> r = ParseVllmBenchResult(text, "r.json");
  return r.ok() ? std::string("ok") : r.status().message();
}

TEST(VllmBenchResult, AnAggregateOnlyFileMustStateWhatIsCompared) {
  std::string text(kAggregate);
  text.replace(text.find("\"mean_tpot_ms\": 20.0, "), 22, "");
  EXPECT_THAT(ErrorOf(text), HasSubstr("missing required field 'mean_tpot_ms': the file has no per-request arrays"));
  text = std::string(kAggregate);
  text.replace(text.find("\"total_input_tokens\": 102400,"), 29, "");
  EXPECT_THAT(ErrorOf(text), HasSubstr("missing required field 'total_input_tokens'"));
}

TEST(VllmBenchResult, MalformedValuesAreLocated) {
  std::string text(kDetailed);
  text.replace(text.find("4.0"), 3, "\"fast\"");
  EXPECT_THAT(ErrorOf(text), StartsWith("r.json:3:37: request_rate: expected requests per second > 0 or \"inf\", "
                                        "got \"fast\""));

  text = std::string(kDetailed);
  text.replace(text.find("[100, 200]"), 10, "[100, -2]");
  EXPECT_THAT(ErrorOf(text), StartsWith("r.json:6:23: input_lens[1]: expected an integer >= 0, got -2"));

  text = std::string(kDetailed);
  text.replace(text.find("0.03"), 4, "\"x\"");
  EXPECT_THAT(ErrorOf(text), StartsWith("r.json:7:38: itls[1]: expected gaps in seconds >= 0, got \"x\""));

  text = std::string(kDetailed);
  text.replace(text.find("\"max_concurrency\": null"), 23, "\"max_concurrency\": 0");
  EXPECT_THAT(ErrorOf(text), HasSubstr("max_concurrency: expected an integer >= 1, got 0"));

  text = std::string(kDetailed);
  text.replace(text.find("\"p99_ttft_ms\": 99.5"), 19, "\"p99_ttft_ms\": \"slow\"");
  EXPECT_THAT(ErrorOf(text), HasSubstr("p99_ttft_ms: expected milliseconds >= 0, got \"slow\""));

  text = std::string(kDetailed);
  text.replace(text.find("\"itls\": [[], [0.02, 0.03, 0.04]],"), 33, "");
  EXPECT_THAT(ErrorOf(text), HasSubstr("missing required field 'itls'"));

  EXPECT_THAT(ErrorOf(R"({"request_rate": 1, "ttfts": [0.1)"), HasSubstr("r.json:1:"));
  EXPECT_THAT(ErrorOf("[1, 2]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(ErrorOf(R"({"completed": 1})"), HasSubstr("missing required field 'request_rate'"));
}

TEST(VllmBenchResult, AMissingFileIsAnError) {
  Expected<VllmBenchResult> r = ReadVllmBenchResult("/nonexistent/qps_1.json");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("/nonexistent/qps_1.json"));
}

}  // namespace
}  // namespace fleetplan
