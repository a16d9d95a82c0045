// Fit reports: the stable JSON keys scripts rely on, and the text's arithmetic lines.
#include "fleetplan/memory/fit_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "memory/test_specs.h"

namespace fleetplan {
namespace {

using memory_test::Dense70b;
using memory_test::Inputs;
using memory_test::MlaModel;
using memory_test::SmallMoe;
using memory_test::Windowed;
using ::testing::HasSubstr;

FitResult QuickStart(int64_t concurrency) {
  FitRequest r;
  r.memory = Inputs(Dense70b(), 4);
  r.memory.max_running = concurrency;
  r.context = 32768;
  r.concurrency = concurrency;
  Expected<FitResult> result = CheckFit(r);
  EXPECT_TRUE(result.ok());
  return std::move(result).value();
}

TEST(FitReportJson, StableKeysCarryTheNumbers) {
  const FitResult r = QuickStart(64);
  const Json j = FitReportJson(r, {});
  EXPECT_EQ(j.at("weights").at("bytes_total").get<int64_t>(), 141'107'412'992);
  EXPECT_EQ(j.at("weights").at("bytes_per_rank").get<int64_t>(), 35'278'831'616);
  EXPECT_EQ(j.at("kv").at("bytes_per_token").get<int64_t>(), 327'680);
  EXPECT_EQ(j.at("kv").at("bytes_per_token_per_rank").get<int64_t>(), 81'920);
  EXPECT_EQ(j.at("kv").at("bytes_per_sequence").get<int64_t>(), 10'737'418'240);
  EXPECT_EQ(j.at("kv").at("bytes_per_sequence_per_rank").get<int64_t>(), 2'684'354'560);
  EXPECT_EQ(j.at("kv").at("window_tokens").get<int64_t>(), 32768);
  EXPECT_EQ(j.at("capacity").at("kv_bytes_per_rank").get<int64_t>(), 40'034'811'904);
  EXPECT_EQ(j.at("capacity").at("max_sequences").get<int64_t>(), 14);
  EXPECT_EQ(j.at("fits").get<bool>(), false);
  EXPECT_EQ(j.at("binding_constraint").get<std::string>(), "kv");
  EXPECT_EQ(j.at("reasons").size(), 1u);
  EXPECT_EQ(j.at("nearest").at("context").at("context").get<int64_t>(), 7632);
  EXPECT_TRUE(j.at("nearest").at("tp").is_null());
}

TEST(FitReportJson, FitsHasNoNearestAndNoneBinding) {
  const Json j = FitReportJson(QuickStart(8), {});
  EXPECT_TRUE(j.at("fits").get<bool>());
  EXPECT_EQ(j.at("binding_constraint").get<std::string>(), "none");
  EXPECT_TRUE(j.at("reasons").empty());
  EXPECT_TRUE(j.at("nearest").is_null());
}

TEST(FitReportText, ShowsTheArithmeticOfEachSection) {
  const std::string derived[] = {"concurrency 64 (test)"};
  const std::string text = FitReportText(QuickStart(64), derived);
  std::printf("%s", text.c_str());
  EXPECT_THAT(text, HasSubstr("fleetplan fit: dense-70b on gpu-80g (80.00 GiB each), tp 4 × pp 1 = "
                              "4 GPUs per replica\n"));
  EXPECT_THAT(text, HasSubstr("  derived  concurrency 64 (test)\n"));
  EXPECT_THAT(text, HasSubstr("131.42 GiB (141107412992 B)"));
  EXPECT_THAT(text, HasSubstr("2 (K, V) × 8 KV heads × 128 head_dim = 2048 elements × 2 B"));
  EXPECT_THAT(text, HasSubstr("80.00 GiB × 0.9 gpu_memory_utilization"));
  EXPECT_THAT(text, HasSubstr("37.29 GiB (40034811904 B)"));
  EXPECT_THAT(text, HasSubstr("30544 blocks = 488704 tokens"));
  EXPECT_THAT(text, HasSubstr("VERDICT  does not fit; binding constraint: kv\n"));
  EXPECT_THAT(text, HasSubstr("--context 7632"));
  EXPECT_THAT(text, HasSubstr("--tp 8 --kv-dtype fp8"));
}

TEST(FitReportText, NamesReplicationAndLatentKv) {
  FitRequest r;
  r.memory = Inputs(Dense70b(), 16);
  r.context = 4096;
  EXPECT_THAT(FitReportText(*CheckFit(r), {}),
              HasSubstr("note: tp 16 > 8 KV heads: each rank holds 1 KV head, each head replicated "
                        "on 2 ranks"));
  r.memory = Inputs(MlaModel(), 4);
  EXPECT_THAT(FitReportText(*CheckFit(r), {}),
              HasSubstr("note: MLA latent KV is not sharded by TP: each of the 4 ranks of a stage "
                        "holds the whole latent"));
}

TEST(FitReportText, MoeVlmAndPipelineSections) {
  FitRequest r;
  r.memory = Inputs(SmallMoe(), 2, 2);
  r.context = 4096;
  const std::string moe = FitReportText(*CheckFit(r), {});
  EXPECT_THAT(moe, HasSubstr("MoE: 86.99 GiB resident; active per token 12.88 B params"));
  EXPECT_THAT(moe, HasSubstr("per stage (a block spans every stage: blocks per replica = min = "));
  r.memory = Inputs(Windowed(), 2);
  const std::string windowed = FitReportText(*CheckFit(r), {});
  EXPECT_THAT(windowed, HasSubstr("  window: 23 global layers keep the whole context, 4096 tokens\n"
                                  "          23 sliding-window layers keep min(context, window 4096) "
                                  "= 4096 tokens\n"));
}

}  // namespace
}  // namespace fleetplan
