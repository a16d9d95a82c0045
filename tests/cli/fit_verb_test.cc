// `fleetplan fit`, run in-process: exit codes, the report on stdout, and the exact text of
// input errors (located at the flag or the scenario line) on stderr.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "cli/verbs.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/json.h"

#include "support/shared_data.h"

namespace fleetplan::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using CliRun = testing::CliRun;

CliRun Fit(std::vector<std::string> args) {
  args.insert(args.begin(), "fit");
  return testing::RunFleetplan(std::move(args));
}

const std::vector<std::string> kQuickStart = {"--model",   "atlas-70b", "--gpu",  "h100-sxm-80g",
                                              "--tp",      "4",         "--context", "32768",
                                              "--concurrency", "64"};

std::vector<std::string> QuickStartWith(std::vector<std::string> extra) {
  std::vector<std::string> args = kQuickStart;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A scenario file in the temp directory, removed with the object.
class TempScenario {
 public:
  explicit TempScenario(std::string_view text)
      : path_((std::filesystem::temp_directory_path() /
               fmt::format("fleetplan-fit-test-{}.yaml", ::getpid()))
                  .string()) {
    std::ofstream(path_) << text;
  }
  ~TempScenario() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ValidNames(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

template <typename Map>
std::vector<std::string> Keys(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [name, unused] : m) out.push_back(name);
  return out;
}

TEST(FitVerb, QuickStartDoesNotFitAndSaysWhy) {
  const CliRun r = Fit(kQuickStart);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, StartsWith("fleetplan fit: atlas-70b on h100-sxm-80g (79.65 GiB each), tp 4 × "
                                "pp 1 = 4 GPUs per replica\n"));
  EXPECT_THAT(r.out, HasSubstr("VERDICT  does not fit; binding constraint: kv\n"));
  EXPECT_THAT(r.out, HasSubstr("NEAREST PASSING VALUES"));
  EXPECT_EQ(r.err, "fleetplan fit: does not fit (binding constraint: kv)\n");
}

TEST(FitVerb, FitsExitsZero) {
  const CliRun r = Fit({"--model", "atlas-70b", "--gpu", "h100-sxm-80g", "--tp", "4", "--context",
                     "8192", "--concurrency", "16"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("VERDICT  fits: 16 sequences × "));
  EXPECT_EQ(r.err, "");
}

TEST(FitVerb, JsonCarriesTheStableKeys) {
  const CliRun r = Fit(QuickStartWith({"--json"}));
  EXPECT_EQ(r.code, 1);
  const Json j = Json::parse(r.out);
  for (const char* section_key :
       {"/weights/bytes_total", "/weights/bytes_per_rank", "/kv/bytes_per_token",
        "/kv/bytes_per_token_per_rank", "/kv/bytes_per_sequence", "/kv/bytes_per_sequence_per_rank",
        "/kv/window_tokens", "/capacity/kv_bytes_per_rank", "/capacity/max_sequences", "/fits",
        "/binding_constraint", "/reasons"}) {
    EXPECT_TRUE(j.contains(Json::json_pointer(section_key))) << section_key;
  }
  EXPECT_EQ(j["binding_constraint"], "kv");
  EXPECT_EQ(j["kv"]["bytes_per_token"], 327680);
  EXPECT_EQ(j["inputs"]["tp"], 4);
}

TEST(FitVerb, WeightAndKvFormatsAreSeparateInputs) {
  const Json base = Json::parse(Fit(QuickStartWith({"--json"})).out);
  const Json kv8 = Json::parse(Fit(QuickStartWith({"--json", "--kv-dtype", "fp8"})).out);
  const Json w8 = Json::parse(Fit(QuickStartWith({"--json", "--weight-dtype", "fp8"})).out);
  EXPECT_EQ(kv8["weights"]["bytes_per_rank"], base["weights"]["bytes_per_rank"]);
  EXPECT_EQ(kv8["kv"]["bytes_per_token"].get<int64_t>() * 2, base["kv"]["bytes_per_token"]);
  EXPECT_EQ(w8["kv"]["bytes_per_token"], base["kv"]["bytes_per_token"]);
  EXPECT_LT(w8["weights"]["bytes_per_rank"], base["weights"]["bytes_per_rank"]);
  fmt::print("weights/rank bf16 {} B, with fp8 KV {} B; KV/token bf16 {} B, with fp8 weights {} B\n",
             base["weights"]["bytes_per_rank"].get<int64_t>(),
             kv8["weights"]["bytes_per_rank"].get<int64_t>(),
             base["kv"]["bytes_per_token"].get<int64_t>(), w8["kv"]["bytes_per_token"].get<int64_t>());
}

TEST(FitVerb, ShorterWindowReducesKvNotWeights) {
  const Json full = Json::parse(Fit(QuickStartWith({"--json"})).out);
  const Json win = Json::parse(Fit(QuickStartWith({"--json", "--kv-window", "4096"})).out);
  EXPECT_EQ(win["weights"]["bytes_per_rank"], full["weights"]["bytes_per_rank"]);
  EXPECT_EQ(win["kv"]["window_tokens"], 4096);
  EXPECT_LT(win["kv"]["bytes_per_sequence_per_rank"], full["kv"]["bytes_per_sequence_per_rank"]);
  EXPECT_GT(win["capacity"]["max_sequences"], full["capacity"]["max_sequences"]);
}

TEST(FitVerb, UnknownModelAndGpuSuggestTheNearestName) {
  CliRun r = Fit({"--model", "atlas-7b", "--gpu", "h100-sxm-80g"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, fmt::format("--model: unknown model 'atlas-7b'; did you mean 'atlas-70b'? "
                               "(valid: {})\n",
                               ValidNames(Keys(Catalog::Builtin().models()))));
  r = Fit({"--model", "atlas-70b", "--gpu", "h100-sxm-80gb"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, fmt::format("--gpu: unknown gpu 'h100-sxm-80gb'; did you mean 'h100-sxm-80g'? "
                               "(valid: {})\n",
                               ValidNames(Keys(Catalog::Builtin().gpus()))));
}

TEST(FitVerb, TpThatDoesNotDivideTheHeads) {
  const CliRun r = Fit({"--model", "atlas-70b", "--gpu", "h100-sxm-80g", "--tp", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--tp: tp 3 does not divide the 64 attention heads of 'atlas-70b' (valid tp: "
                   "1, 2, 4, 8, 16, 32, 64)\n");
}

TEST(FitVerb, ZeroNegativeAndMalformedValues) {
  struct Case {
    std::vector<std::string> extra;
    std::string err;
  };
  const Case cases[] = {
      {{"--context", "0"}, "--context: expected an integer >= 1, got 0\n"},
      {{"--concurrency", "-4"}, "--concurrency: expected an integer >= 1, got -4\n"},
      {{"--block-tokens", "0"}, "--block-tokens: expected an integer >= 1, got 0\n"},
      {{"--kv-window", "-1"}, "--kv-window: expected an integer >= 1, got -1\n"},
      {{"--tp", "four"}, "--tp: expected an integer, got 'four'\n"},
      {{"--gpu-memory-utilization", "0"},
       "--gpu-memory-utilization: expected a number in (0, 1], got 0\n"},
      {{"--gpu-memory", "0GiB"}, "--gpu-memory: gpu 'h100-sxm-80g': memory must be > 0, got 0 B\n"},
      {{"--context", "200000"},
       "--context: expected at most 131072 (the max_context of 'atlas-70b'), got 200000\n"},
  };
  for (const Case& c : cases) {
    const CliRun r = Fit(QuickStartWith(c.extra));
    EXPECT_EQ(r.code, 2) << c.extra[0];
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.out, "");
  }
}

TEST(FitVerb, UnknownUnitAndFormat) {
  CliRun r = Fit(QuickStartWith({"--gpu-memory", "80GX"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("--gpu-memory: "));
  EXPECT_THAT(r.err, HasSubstr("'80GX'"));
  r = Fit(QuickStartWith({"--kv-dtype", "fp9"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--kv-dtype: unknown dtype 'fp9'; did you mean 'fp8'? (valid: bf16, fp16, fp8, "
                   "int8, int4, fp4, fp32)\n");
}

TEST(FitVerb, ScenarioWithMisspelledKeyIsLocated) {
  const TempScenario s("model:\n  name: atlas-70b\nhardware:\n  gpu: h100-sxm-80g\n"
                       "deployment:\n  tp: 4\n  gpu_memory_utilisation: 0.9\n");
  const CliRun r = Fit({"--scenario", s.path()});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, s.path() +
                       ":7:3: deployment: unknown field 'gpu_memory_utilisation'; did you mean "
                       "'gpu_memory_utilization'? (valid: replicas, tp, pp, ep, "
                       "gpu_memory_utilization, pools, disaggregation)\n"
                       "    7 |   gpu_memory_utilisation: 0.9\n"
                       "      |   ^\n");
}

TEST(FitVerb, FlagsOverrideTheScenario) {
  const TempScenario s("model: {name: atlas-70b, max_context: 32768}\nhardware: {gpu: h100-sxm-80g}\n"
                       "deployment: {tp: 4}\nengine: {scheduler: {max_running: 8}}\n");
  const Json j = Json::parse(Fit({"--scenario", s.path(), "--tp", "8", "--json"}).out);
  EXPECT_EQ(j["inputs"]["tp"], 8);
  EXPECT_EQ(j["inputs"]["concurrency"], 8);
  EXPECT_EQ(j["inputs"]["context"], 32768);
}

TEST(FitVerb, ReferenceScenario) {
  FP_REQUIRE_SHARED_DATA();
  const CliRun r = Fit({"--scenario", ::fleetplan::testing::SharedDataRoot() + "/../spec/scenario-v1.yaml", "--json"});
  EXPECT_EQ(r.code, 1);  // 256 sequences of 32768 tokens do not fit on 4 × 80 GB
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["inputs"]["model"], "atlas-70b");
  EXPECT_EQ(j["inputs"]["concurrency"], 256);
  EXPECT_EQ(j["binding_constraint"], "kv");
}

TEST(FitVerb, UsageErrors) {
  CliRun r = Fit({"--gpu", "h100-sxm-80g"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("missing model: pass --model NAME"));
  r = Fit({"--model", "atlas-70b", "--gpu", "h100-sxm-80g", "--pool", "decode"});
  EXPECT_EQ(r.code, 2);
  r = Fit({"--model", "atlas-70b", "--no-such-flag"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace fleetplan::cli
