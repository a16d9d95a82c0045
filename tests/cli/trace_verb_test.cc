// `fleetplan trace gen|stats|convert` end to end through cli::Main: outputs, digests,
// the shared public traces, exit codes and located errors.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/verbs.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"

#include "cli/cli_run.h"
#include "support/shared_data.h"

namespace fleetplan::cli {
namespace {

using testing::CliRun;

CliRun Fleetplan(std::vector<std::string> args) { return testing::RunFleetplan(std::move(args)); }

std::string Shared(const std::string& relative) { return testing::SharedPath(relative); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TraceVerbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fleetplan-trace-verb-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
    return Path(name);
  }
  std::filesystem::path dir_;
};

constexpr const char* kScenario = R"(seed: 42
workload:
  duration: 1m
  arrival: {process: poisson, rate: 20/s}
  tenants: {count: 4, popularity: {zipf: 1.1}}
  classes:
    interactive:
      share: 0.8
      prompt:
        - {segment: tenant-instructions, tokens: 1024}
        - {segment: unique, tokens: {lognormal: {median: 300, p99: 2000}}}
      output_tokens: {lognormal: {median: 150, p99: 800}, max: 500}
    research:
      share: 0.2
      prompt:
        - {segment: unique, tokens: {uniform: [8000, 30000]}}
      output_tokens: {uniform: [1000, 4000]}
)";

TEST_F(TraceVerbTest, GenIsDeterministicAndStatsReadsItBack) {
  const std::string scenario = Write("s.yaml", kScenario);
  const CliRun a = Fleetplan({"trace", "gen", scenario, "-o", Path("a.jsonl"), "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  const CliRun b = Fleetplan({"trace", "gen", scenario, "-o", Path("b.jsonl"), "--json"});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(ReadAll(Path("a.jsonl")), ReadAll(Path("b.jsonl")));
  const Json ja = Json::parse(a.out);
  EXPECT_EQ(ja["digest"], DigestOf(ReadAll(Path("a.jsonl"))));
  EXPECT_EQ(ja["source"]["loop"], "open");
  EXPECT_EQ(ja["source"]["seed"], 42);
  const int64_t n = ja["requests"].get<int64_t>();
  EXPECT_GT(n, 1000);  // 20/s for 60 s

  const CliRun stats = Fleetplan({"trace", "stats", Path("a.jsonl"), "--json"});
  ASSERT_EQ(stats.code, 0) << stats.err;
  const Json js = Json::parse(stats.out);
  EXPECT_EQ(js["stats"]["requests"], n);
  EXPECT_EQ(js["trace"]["format"], "fleetplan");
  EXPECT_EQ(js["trace"]["digest"], ja["digest"]);
  EXPECT_LE(js["stats"]["classes"]["interactive"]["output_tokens"]["max"].get<int64_t>(), 500);
  // Every interactive request starts with one of 4 tenants' 1024-token instructions, exactly
  // two 512-token blocks; everything else is unique content. So the repeated blocks are
  // exactly two per interactive request beyond the first of each tenant.
  const Json& blocks = js["stats"]["prefix_blocks"];
  const int64_t interactive = js["stats"]["classes"]["interactive"]["requests"].get<int64_t>();
  EXPECT_EQ(blocks["total"].get<int64_t>() - blocks["distinct"].get<int64_t>(), 2 * (interactive - 4));

  const CliRun other_seed = Fleetplan({"trace", "gen", scenario, "-o", Path("c.jsonl"), "--seed", "7"});
  ASSERT_EQ(other_seed.code, 0) << other_seed.err;
  EXPECT_NE(ReadAll(Path("c.jsonl")), ReadAll(Path("a.jsonl")));
  EXPECT_NE(other_seed.out.find("wrote "), std::string::npos);
}

// Regression: write failures said "disk full?" or "cannot write the trace file here"
// without the system's reason.
TEST_F(TraceVerbTest, AWriteFailureNamesTheSystemsReason) {
  const std::string scenario = Write("s.yaml", kScenario);
  std::filesystem::create_symlink(Path("loopB"), Path("loopA"));
  std::filesystem::create_symlink(Path("loopA"), Path("loopB"));
  const CliRun loop = Fleetplan({"trace", "gen", scenario, "-o", Path("loopA"), "--requests", "5"});
  EXPECT_EQ(loop.code, 3);
  EXPECT_NE(loop.err.find("Too many levels of symbolic links"), std::string::npos) << loop.err;
  if (std::filesystem::exists("/dev/full")) {
    const CliRun full = Fleetplan({"trace", "gen", scenario, "-o", "/dev/full", "--requests", "5"});
    EXPECT_EQ(full.code, 3);
    EXPECT_NE(full.err.find("/dev/full: cannot write: No space left on device"), std::string::npos) << full.err;
  }
}

TEST_F(TraceVerbTest, RequestsFlagReplacesTheScenarioDuration) {
  const std::string scenario = Write("s.yaml", kScenario);
  const CliRun r = Fleetplan({"trace", "gen", scenario, "-o", Path("t.jsonl"), "--requests", "5000", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["requests"], 5000);  // beyond the scenario's 1m (~1200 requests)
  const CliRun both = Fleetplan({"trace", "gen", scenario, "-o", Path("t.jsonl"), "--requests", "5", "--duration", "1s"});
  EXPECT_EQ(both.code, 2);
  const CliRun bad = Fleetplan({"trace", "gen", scenario, "-o", Path("t.jsonl"), "--requests", "many"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "--requests: expected an integer >= 1, got 'many'\n");
}

TEST_F(TraceVerbTest, SharedMooncakeConversationTrace) {
  FP_REQUIRE_SHARED_DATA();
  const CliRun r = Fleetplan({"trace", "stats", Shared("traces/mooncake/conversation_trace.jsonl"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["trace"]["format"], "mooncake");
  EXPECT_EQ(j["stats"]["requests"], 12031);
  EXPECT_EQ(j["stats"]["prefix_blocks"]["distinct"], 182790);
  EXPECT_EQ(j["stats"]["span_s"], 3536.999);
  EXPECT_EQ(j["trace"]["digest"], DigestOf(ReadAll(Shared("traces/mooncake/conversation_trace.jsonl"))));
  const CliRun text = Fleetplan({"trace", "stats", Shared("traces/mooncake/conversation_trace.jsonl")});
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("requests     12031\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("288500 blocks of 512 tokens, 182790 distinct"), std::string::npos) << text.out;
}

TEST_F(TraceVerbTest, SharedAzureCodeTrace) {
  FP_REQUIRE_SHARED_DATA();
  const CliRun r = Fleetplan({"trace", "stats", Shared("traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["trace"]["format"], "azure");
  EXPECT_EQ(j["stats"]["requests"], 8819);
  EXPECT_EQ(j["stats"]["prompt_tokens"]["max"], 7437);
  EXPECT_EQ(j["stats"]["output_tokens"]["max"], 1899);
  EXPECT_NEAR(j["stats"]["rate_per_s"].get<double>(), 2.57, 0.005);
}

// B1: the hint for a slowed replay that outruns the simulator names flags that exist.
TEST_F(TraceVerbTest, ASlowReplayBeyondTheSimulatedSpanNamesTheFlagsThatCutIt) {
  const std::string trace = Write(
      "t.jsonl", std::string(R"({"classes":["chat"],"format":"fleetplan-trace","source":{},"version":1})") + "\n" +
                     R"({"arrival_ns":0,"class":"chat","id":0,"output_tokens":5,"prompt":[[11,100]]})" + "\n" +
                     R"({"arrival_ns":1000000000000000,"class":"chat","id":1,"output_tokens":5,"prompt":[[12,100]]})" +
                     "\n");
  const CliRun r = Fleetplan({"trace", "convert", trace, "--speed", "1e-7", "-o", Path("x.jsonl")});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("use a larger speed or cut the trace (`trace convert --duration` or `--requests`)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--until"), std::string::npos) << r.err;
}

TEST_F(TraceVerbTest, ConvertThenConvertAgainIsByteIdentical) {
  FP_REQUIRE_SHARED_DATA();
  const std::string in = Shared("traces/mooncake/synthetic_trace.jsonl");
  const CliRun first = Fleetplan({"trace", "convert", in, "-o", Path("a.jsonl"), "--class", "chat", "--json"});
  ASSERT_EQ(first.code, 0) << first.err;
  const Json j = Json::parse(first.out);
  EXPECT_EQ(j["requests"], 3993);
  EXPECT_EQ(j["input"]["digest"], DigestOf(ReadAll(in)));
  const CliRun second = Fleetplan({"trace", "convert", Path("a.jsonl"), "-o", Path("b.jsonl")});
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(ReadAll(Path("a.jsonl")), ReadAll(Path("b.jsonl")));
  // The converted trace has the same statistics as the original.
  const Json s1 = Json::parse(Fleetplan({"trace", "stats", in, "--json"}).out)["stats"];
  const Json s2 = Json::parse(Fleetplan({"trace", "stats", Path("b.jsonl"), "--json"}).out)["stats"];
  EXPECT_EQ(s1["prefix_blocks"], s2["prefix_blocks"]);
  EXPECT_EQ(s1["prompt_tokens"], s2["prompt_tokens"]);
  EXPECT_EQ(s2["prefix_blocks"]["distinct"], 43924);
}

TEST_F(TraceVerbTest, SpeedKeepsOrderAndHalvesTheSpan) {
  FP_REQUIRE_SHARED_DATA();
  const std::string in = Shared("traces/mooncake/synthetic_trace.jsonl");
  const Json normal = Json::parse(Fleetplan({"trace", "stats", in, "--json"}).out)["stats"];
  const CliRun fast = Fleetplan({"trace", "stats", in, "--speed", "2", "--json"});
  ASSERT_EQ(fast.code, 0) << fast.err;
  const Json twice = Json::parse(fast.out)["stats"];
  EXPECT_EQ(twice["requests"], normal["requests"]);
  EXPECT_NEAR(twice["span_s"].get<double>(), normal["span_s"].get<double>() / 2, 1e-6);
  EXPECT_EQ(twice["prompt_tokens"], normal["prompt_tokens"]);
}

TEST_F(TraceVerbTest, BadInputIsExitThreeWithALocatedError) {
  const std::string t = Write("t.jsonl",
                              "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
                              "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": \"x\", \"hash_ids\": [1]}\n");
  const CliRun r = Fleetplan({"trace", "stats", t});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, t + ":2:55: output_length: expected an integer in [1, 16777216], got a string (\"x\")\n"
                       "    2 | {\"timestamp\": 5, \"input_length\": 10, \"output_length\": \"x\", \"hash_ids\": [1]}\n"
                       "      |                                                       ^\n");
  const std::string ambiguous = Write("t.csv", "{\"timestamp\": 0}\n");
  const CliRun amb = Fleetplan({"trace", "stats", ambiguous});
  EXPECT_EQ(amb.code, 3);
  EXPECT_NE(amb.err.find("cannot tell the trace format: the name ends in .csv but the first line looks like JSON; "
                         "pass --format"),
            std::string::npos);
  const CliRun format = Fleetplan({"trace", "stats", ambiguous, "--format", "mooncak"});
  EXPECT_EQ(format.code, 2);
  EXPECT_EQ(format.err, "--format: unknown trace format 'mooncak'; did you mean 'mooncake'? (valid: fleetplan, "
                        "mooncake, azure, burstgpt, csv)\n");
  const CliRun empty = Fleetplan({"trace", "stats", Write("e.csv", "")});
  EXPECT_EQ(empty.code, 3);
  const CliRun missing = Fleetplan({"trace", "stats", Path("missing.jsonl")});
  EXPECT_EQ(missing.code, 3);
  const CliRun usage = Fleetplan({"trace", "stats"});
  EXPECT_EQ(usage.code, 2);
}

TEST_F(TraceVerbTest, GenRefusesClosedLoopAndMissingSeed) {
  const std::string closed = Write("c.yaml", R"(seed: 1
workload:
  requests: 10
  arrival: {process: closed-loop, users: 2, think_time: 1s}
  classes:
    a: {share: 1, prompt: [{segment: unique, tokens: 5}], output_tokens: 5}
)");
  const CliRun r = Fleetplan({"trace", "gen", closed, "-o", Path("t.jsonl")});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("a closed-loop workload needs completions from a simulation"), std::string::npos) << r.err;
  std::string no_seed = kScenario;
  no_seed.erase(0, no_seed.find('\n') + 1);
  const CliRun s = Fleetplan({"trace", "gen", Write("n.yaml", no_seed), "-o", Path("t.jsonl")});
  EXPECT_EQ(s.code, 3);
  EXPECT_NE(s.err.find("no seed: set `seed:` in the scenario or pass --seed"), std::string::npos) << s.err;
  EXPECT_FALSE(std::filesystem::exists(Path("t.jsonl")));
}

}  // namespace
}  // namespace fleetplan::cli
