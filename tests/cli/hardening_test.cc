// Regression tests for the hardening pass (crashes, hangs, wrong numbers and output
// writing found by a bad-input sweep), end to end through cli::Main. Each defect has a
// test named after it; each cause class has one test over a family of inputs: every
// reader x deep nesting, every time scaling x overflow, every output path kind x writing.
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/output_file.h"
#include "support/files.h"

namespace fleetplan::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::CliRun;

CliRun Fleetplan(std::vector<std::string> args) { return testing::RunFleetplan(std::move(args)); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Deep(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

// A small scenario: one llama-3.1-8b replica; `workload` is the workload section.
std::string Scenario(const std::string& workload, const std::string& model_extra = "") {
  return "version: 1\nmodel: {name: llama-3.1-8b" + model_extra + "}\nhardware: {gpu: h100-sxm-80g}\n" +
         "engine:\n  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, "
         "per_seq: 0.1ms}}\nworkload:\n" +
         workload;
}

constexpr const char* kSmallWorkload =
    "  requests: 20\n"
    "  arrival: {process: poisson, rate: 20/s}\n"
    "  classes:\n"
    "    default:\n"
    "      share: 1\n"
    "      prompt: [{segment: unique, tokens: 200}]\n"
    "      output_tokens: 20\n";

class Hardening : public testing::TempFolderTest {
 protected:
  // One bad input file and the verb that reads it.
  struct FileCase {
    std::string name;
    std::string file;
    std::string text;
    std::vector<std::string> args;  // the file's path is appended (a run directory's, for run/meta.json)
    std::string expected;           // in the error message
  };
  // Each case exits 3 (invalid input) with `expected` in its message.
  void ExpectInvalidInput(const std::vector<FileCase>& cases) {
    for (const FileCase& c : cases) {
      std::string path = Write(c.file, c.text);
      if (c.file == "run/meta.json") path = Path("run");
      std::vector<std::string> args = c.args;
      args.push_back(path);
      const CliRun r = Fleetplan(args);
      EXPECT_EQ(r.code, 3) << c.name << "\n" << r.err;
      EXPECT_THAT(r.err, HasSubstr(c.expected)) << c.name;
    }
  }
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

// ---- Crashes --------------------------------------------------------------------------

// Every reader x deep nesting: arrays nested 50,000 deep are a located input error (exit
// 3) naming the limit, in every JSON and YAML input fleetplan reads.
TEST_F(Hardening, C1_DeepJsonNestingIsALocatedError) {
  const std::string deep = Deep(50'000);
  const std::string header =
      R"({"adapters":[],"classes":["c"],"format":"fleetplan-trace","source":{},"tenants":[],"version":1})";
  // The record readers check each field's type before descending into it, so a deep
  // value in a typed field is a type error at the field (located, exit 3) before depth
  // matters; the depth limit itself is pinned in tests/metrics/json_cursor_test.cc.
  const std::string limit = "nested more than 64 deep";
  const std::vector<FileCase> cases = {
      {"fleetplan trace row", "row.jsonl",
       header + "\n" + R"({"arrival_ns":0,"class":"c","id":0,"output_tokens":1,"priority":0,"prompt":)" + deep + "}\n",
       {"trace", "stats"}, limit},
      {"fleetplan trace header", "header.jsonl",
       R"({"format":"fleetplan-trace","version":1,"source":)" + deep + "}\n", {"trace", "stats"}, limit},
      {"mooncake row", "mooncake.jsonl",
       R"({"timestamp":0,"input_length":1,"output_length":1,"hash_ids":)" + deep + "}\n",
       {"trace", "convert", "--format", "mooncake", "-o", Path("out.jsonl")}, limit},
      {"fleetplan records", "records.jsonl", R"({"id":0,"class":)" + deep + "}\n",
       {"report", "--format", "fleetplan", "--records"}, "records.jsonl:1:17: class: expected a string, got an array"},
      {"llmservingsim records", "lss.jsonl", R"({"request_id":)" + deep + "}\n",
       {"report", "--format", "llmservingsim", "--records"}, "lss.jsonl:1:15: request_id: expected a string or integer"},
      {"vllm-bench result", "bench.json", R"({"ttfts":)" + deep + "}\n", {"report", "--format", "vllm-bench", "--records"}, limit},
      {"scenario YAML", "scenario.yaml", "version: 1\nmodel: " + deep + "\n", {"simulate", "--quiet"}, limit},
      {"cluster YAML", "cluster.yaml", "racks: " + deep + "\n", {"layout", "--model", "llama-3.1-8b", "--cluster"}, limit},
      {"catalog YAML", "catalog.yaml", "models: " + deep + "\n",
       {"fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-80g", "--catalog"}, limit},
      {"run directory meta.json", "run/meta.json", R"({"model":)" + deep + "}\n", {"validate"}, limit},
  };
  ExpectInvalidInput(cases);
  // A trace replayed by a scenario (simulate crashed too).
  Write("deep-trace.jsonl", cases[0].text);
  const std::string scenario =
      Write("replay.yaml", Scenario("  trace: {file: deep-trace.jsonl, format: fleetplan}\n"));
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("run-out")});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("deep-trace.jsonl:2:"));
  EXPECT_THAT(r.err, HasSubstr("nested more than 64 deep"));
}

// Every JSON reader x a number beyond a double's range: `1e999` is a located syntax
// error (exit 3), not an escaped nlohmann out_of_range (found by gates_fuzz in the
// speculation rounds reader; the trace, records, run-directory and emulator readers
// caught the same narrow exception).
TEST_F(Hardening, C1_NumberBeyondADoubleInJsonIsALocatedError) {
  const std::string header =
      R"({"adapters":[],"classes":["c"],"format":"fleetplan-trace","source":{},"tenants":[],"version":1})";
  // Each error is located at the number's line.
  const std::vector<FileCase> cases = {
      {"fleetplan trace row", "row.jsonl",
       header + "\n" + R"({"arrival_ns":1e999,"class":"c","id":0,"output_tokens":1,"priority":0,"prompt":[]})" + "\n",
       {"trace", "stats"}, "row.jsonl:2:"},
      {"fleetplan trace header", "header.jsonl", R"({"format":"fleetplan-trace","version":1e999})" "\n",
       {"trace", "stats", "--format", "fleetplan"}, "header.jsonl:1:"},
      {"mooncake row", "mooncake.jsonl", R"({"timestamp":0,"input_length":1e999,"output_length":1,"hash_ids":[1]})" "\n",
       {"trace", "convert", "--format", "mooncake", "-o", Path("out.jsonl")}, "mooncake.jsonl:1:"},
      {"speculation rounds", "rounds.jsonl", R"({"draft": [1], "target": [1], "draft_ms": 7e888888, "verify_ms": 2})" "\n",
       {"gate", "speculation", "--ordinary", "8ms"}, "rounds.jsonl:1:"},
      {"run directory meta.json", "run/meta.json", "{\n  \"duration_s\": 1e999\n}\n", {"validate"}, "meta.json:2:"},
  };
  ExpectInvalidInput(cases);
}

// Every time scaling x overflow: a replay speed that pushes an arrival past the
// simulator's time range is an input error at the row, in every trace format and through
// a scenario; a vanishing generated rate is "never", not an overflow.
TEST_F(Hardening, C2_TimeScalingOverflowIsALocatedInputError) {
  struct Case {
    std::string format;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"mooncake", "{\"timestamp\":0,\"input_length\":10,\"output_length\":5,\"hash_ids\":[1]}\n"
                   "{\"timestamp\":600000000,\"input_length\":10,\"output_length\":5,\"hash_ids\":[2]}\n"},
      {"csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\n600000,10,5\n"},
      {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0000000,10,5\n"
                "2023-11-23 18:00:00.0000000,10,5\n"},
      {"burstgpt",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,ChatGPT,10,5,15,Conversation log\n"
       "600000,ChatGPT,10,5,15,Conversation log\n"},
      {"fleetplan",
       R"({"adapters":[],"classes":["c"],"format":"fleetplan-trace","source":{},"tenants":[],"version":1})"
       "\n"
       R"({"arrival_ns":0,"class":"c","id":0,"output_tokens":5,"priority":0,"prompt":[[1,10]]})"
       "\n"
       R"({"arrival_ns":600000000000000,"class":"c","id":1,"output_tokens":5,"priority":0,"prompt":[[2,10]]})"
       "\n"},
  };
  for (const Case& c : cases) {
    const std::string trace = Write(c.format + ".trace", c.text);
    for (const std::string verb : {"stats", "convert"}) {
      std::vector<std::string> args = {"trace", verb, trace, "--format", c.format, "--speed", "1e-7"};
      if (verb == "convert") args.insert(args.end(), {"-o", Path("converted.jsonl")});
      const CliRun r = Fleetplan(args);
      EXPECT_EQ(r.code, 3) << c.format << " " << verb << "\n" << r.out << r.err;
      const std::string line = c.format == "mooncake" ? ":2:" : ":3:";  // mooncake has no header
      EXPECT_THAT(r.err, HasSubstr(c.format + ".trace" + line)) << c.format << " " << verb;
      EXPECT_THAT(r.err, HasSubstr("beyond the 146 years a simulation can span")) << c.format;
      EXPECT_THAT(r.out, Not(HasSubstr("-"))) << "no negative span printed: " << r.out;
    }
    EXPECT_FALSE(fs::exists(Path("converted.jsonl.tmp")));
  }
  // vllm-bench: a duration beyond the time range.
  const std::string bench = Write("bench.json", R"({"duration": 1e300, "ttfts": [0.1], "itls": [[]],
    "input_lens": [10], "output_lens": [1], "errors": [""]})");
  const CliRun bench_run = Fleetplan({"report", "--records", bench, "--format", "vllm-bench"});
  EXPECT_EQ(bench_run.code, 3) << bench_run.err;
  EXPECT_THAT(bench_run.err, HasSubstr("duration"));
  // A generated arrival process whose gaps are "never": no overflow, no crash.
  const std::string slow = Write(
      "slow.yaml", Scenario("  requests: 3\n  arrival: {process: poisson, rate: 0.000000000000000000000000000001/s}\n  classes:\n    default:\n"
                            "      share: 1\n      prompt: [{segment: unique, tokens: 20}]\n      output_tokens: 2\n"));
  const CliRun gen = Fleetplan({"trace", "gen", slow, "-o", Path("slow.jsonl"), "--seed", "1"});
  ASSERT_EQ(gen.code, 0) << gen.err;
  EXPECT_THAT(ReadAll(Path("slow.jsonl")), HasSubstr(fmt::format("\"arrival_ns\":{},", kMaxTimeNs)));
}

TEST_F(Hardening, C3_ScenarioReplaySpeedOverflowNamesTheRow) {
  Write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,5\n");
  const std::string scenario = Write("s.yaml", Scenario("  trace: {file: t.csv, format: csv, speed: 1e-300}\n"));
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("t.csv:3:1: arrival_s: at replay speed 1e-300"));
  EXPECT_THAT(r.err, Not(HasSubstr("-9223372036854775808")));
}

TEST_F(Hardening, C4_HugeTokenCountIsRejectedBeforeAllocation) {
  const std::string trace = Write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,1000000000000,5\n");
  const std::string scenario = Write("s.yaml", Scenario("  trace: {file: t.csv, format: csv}\n"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"simulate", scenario, "--quiet", "--out", Path("out")},
        std::vector<std::string>{"trace", "convert", trace, "-o", Path("c.jsonl")},
        std::vector<std::string>{"trace", "stats", trace}}) {
    const CliRun r = Fleetplan(args);
    EXPECT_EQ(r.code, 3) << args[0] << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr("t.csv:2:3: prompt_tokens: expected at most 16777216 tokens"));
  }
  // The same limit in the other formats and in a generated workload.
  const std::string mooncake =
      Write("m.jsonl", "{\"timestamp\":0,\"input_length\":5,\"output_length\":100000000,\"hash_ids\":[1]}\n");
  const CliRun m = Fleetplan({"trace", "stats", mooncake});
  EXPECT_EQ(m.code, 3);
  EXPECT_THAT(m.err, HasSubstr("output_length: expected an integer in [1, 16777216]"));
}

// ---- Hangs and memory blow-ups ---------------------------------------------------------

TEST_F(Hardening, H1_TraceStatsRejectsAHugeRowAtReadTime) {
  const std::string trace = Write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,1000000000000,5\n");
  const CliRun r = Fleetplan({"trace", "stats", trace});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("fleetplan's limit per request"));
}

TEST_F(Hardening, H2_RequestsLongerThanTheContextAreInputErrorsForGeneratedWorkloads) {
  const auto with_prompt = [&](const std::string& tokens) {
    return Scenario(std::string("  requests: 5\n  arrival: {process: poisson, rate: 5/s}\n  classes:\n    long:\n"
                                "      share: 1\n      prompt: [{segment: unique, tokens: ") +
                    tokens + "}]\n      output_tokens: 10\n");
  };
  const CliRun huge = Fleetplan({"simulate", Write("huge.yaml", with_prompt("1000000000")), "--quiet"});
  EXPECT_EQ(huge.code, 3);
  EXPECT_THAT(huge.err, HasSubstr("huge.yaml:12:42: workload.classes.long.prompt[0].tokens: expected at most "
                                  "16777216 tokens"));
  const CliRun over = Fleetplan({"simulate", Write("over.yaml", with_prompt("200000")), "--quiet"});
  EXPECT_EQ(over.code, 3);
  EXPECT_THAT(over.err, HasSubstr("workload.classes.long: every request of this class has at least 200010 tokens "
                                  "(prompt + output), more than model.max_context (131072)"));
  // A distribution that only may exceed it is noted, and those requests are rejected.
  const CliRun may = Fleetplan({"simulate", Write("may.yaml", with_prompt("{uniform: [100, 200000]}")), "--quiet",
                                "--out", Path("may-out")});
  EXPECT_EQ(may.code, 0) << may.err;
  EXPECT_THAT(may.out, HasSubstr("workload.classes.long: requests of up to 200010 tokens can exceed "
                                 "model.max_context (131072)"));
}

TEST_F(Hardening, H3_HugeClosedLoopIsRejectedAtReadTime) {
  const std::string scenario = Write(
      "s.yaml", Scenario("  requests: 100\n  arrival: {process: closed-loop, users: 1000000000, think_time: 1s}\n"
                         "  classes:\n    default:\n      share: 1\n      prompt: [{segment: unique, tokens: 20}]\n"
                         "      output_tokens: 2\n"));
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet"});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("workload.arrival.users: expected at most 1000000 users"));
}

TEST_F(Hardening, H4_HugeClusterIsCappedWithTheLimit) {
  const CliRun r = Fleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "100000x8xh100-sxm-80g"});
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_THAT(r.err, HasSubstr(fmt::format("100000 nodes exceed fleetplan's limit of {}", kMaxClusterNodes)));
  const CliRun ok = Fleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "64x8xh100-sxm-80g"});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST_F(Hardening, H5_OversizedYamlIsRejectedBeforeParsing) {
  const std::string line = Write("line.yaml", "version: 1\nmodel: [" + std::string(2 << 20, '1') + "]\n");
  const CliRun r = Fleetplan({"simulate", line, "--quiet"});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("line.yaml:2: line 2 has 2097162 bytes; fleetplan reads YAML lines of at most 1024 KiB"));
  std::string big;
  while (big.size() <= kMaxYamlFileBytes) big += "# a comment line that takes space in a large file\n";
  const CliRun file = Fleetplan({"simulate", Write("big.yaml", big), "--quiet"});
  EXPECT_EQ(file.code, 3);
  EXPECT_THAT(file.err, HasSubstr("fleetplan reads YAML files of at most 16 MiB"));
}

// ---- Wrong numbers ---------------------------------------------------------------------

TEST_F(Hardening, W1_SummaryHeaderShowsTheSeedUsed) {
  const std::string scenario = Write("s.yaml", Scenario(kSmallWorkload));
  const CliRun r = Fleetplan({"simulate", scenario, "--seed", "11", "--quiet", "--out", Path("out")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(seed 11)"));
  EXPECT_EQ(Json::parse(ReadAll(Path("out/report.json")))["scenario"]["seed"], 11);
}

TEST_F(Hardening, W3_MaxContextIsEnforcedForTraces) {
  Write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,45500,10\n0.5,1000,10\n");
  const std::string scenario =
      Write("s.yaml", Scenario("  trace: {file: t.csv, format: csv}\n", ", max_context: 32768") +
                          "output: {requests: true}\n");
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream records(ReadAll(Path("out/requests.jsonl")));
  std::string first, second;
  std::getline(records, first);
  std::getline(records, second);
  const Json a = Json::parse(first);
  const Json b = Json::parse(second);
  const Json& longer = a["input_tokens"] == 45500 ? a : b;
  const Json& shorter = a["input_tokens"] == 45500 ? b : a;
  EXPECT_EQ(longer["status"], "rejected");
  EXPECT_THAT(longer["reason"].get<std::string>(),
              ::testing::StartsWith("context: 45510 tokens (prompt 45500 + output 10) exceed the model's "
                                    "max_context of 32768"));
  EXPECT_EQ(shorter["status"], "ok");
  EXPECT_FALSE(shorter.contains("reason"));
}

TEST_F(Hardening, W4_EmptyLatencyDistributionsAreNullNotZero) {
  // Two replicas, one request: one replica never gets a first token.
  const std::string scenario = Write(
      "s.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n"
                "deployment: {replicas: 2}\nworkload:\n  requests: 1\n  arrival: {process: poisson, rate: 1/s}\n"
                "  classes:\n    default:\n      share: 1\n      prompt: [{segment: unique, tokens: 20}]\n"
                "      output_tokens: 2\n");
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("TTFT p99 -\n"));
  const Json report = Json::parse(ReadAll(Path("out/report.json")));
  int nulls = 0;
  for (const Json& replica : report["replicas"]) nulls += replica["ttft_p99_ms"].is_null() ? 1 : 0;
  EXPECT_EQ(nulls, 1);
}

// ---- Output writing --------------------------------------------------------------------

// Every output path kind x writing: a new path and a regular file are replaced atomically
// (no temp file left), a symlink keeps pointing where it did, a FIFO and a device are
// written through (never replaced), "-" is standard output, a directory is an error.
TEST_F(Hardening, S1_OutputPathKindsAreWrittenByTheirKind) {
  const std::string text = "{\"a\":1}\n";
  // New path (parents created) and an existing regular file.
  ASSERT_TRUE(WriteOutputFile(Path("new/dir/x.json"), text).ok());
  EXPECT_EQ(ReadAll(Path("new/dir/x.json")), text);
  Write("regular.json", "old");
  ASSERT_TRUE(WriteOutputFile(Path("regular.json"), text).ok());
  EXPECT_EQ(ReadAll(Path("regular.json")), text);
  // A symlink to a regular file: the link stays, its target is replaced.
  Write("target.json", "old");
  fs::create_symlink(Path("target.json"), Path("link.json"));
  ASSERT_TRUE(WriteOutputFile(Path("link.json"), text).ok());
  EXPECT_TRUE(fs::is_symlink(Path("link.json")));
  EXPECT_EQ(ReadAll(Path("target.json")), text);
  // A FIFO: written through while a reader drains it.
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  std::string drained;
  std::thread reader([&] { drained = ReadAll(Path("fifo")); });
  ASSERT_TRUE(WriteOutputFile(Path("fifo"), text).ok());
  reader.join();
  EXPECT_EQ(drained, text);
  EXPECT_EQ(fs::status(Path("fifo")).type(), fs::file_type::fifo);
  // Devices: /dev/null takes it and stays a device; /dev/full fails without replacing it.
  ASSERT_TRUE(WriteOutputFile("/dev/null", text).ok());
  EXPECT_EQ(fs::status("/dev/null").type(), fs::file_type::character);
  if (fs::exists("/dev/full")) {
    const Status full = WriteOutputFile("/dev/full", text);
    EXPECT_EQ(full.message(), "cannot write '/dev/full': No space left on device");
    EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
  }
  // A directory is an error.
  EXPECT_EQ(WriteOutputFile(dir_.string(), text).message(), "cannot write '" + dir_.string() + "': Is a directory");
  // "-" is standard output.
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  const Status to_stdout = WriteOutputFile("-", text);
  std::cout.rdbuf(saved);
  ASSERT_TRUE(to_stdout.ok());
  EXPECT_EQ(captured.str(), text);
  // No temp file is left anywhere.
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr(".tmp"))) << e.path();
  }
}

TEST_F(Hardening, S1_TraceOutputsFollowTheSameRule) {
  const std::string trace = Write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,5\n");
  // A symlink stays a symlink.
  Write("target.jsonl", "old");
  fs::create_symlink(Path("target.jsonl"), Path("link.jsonl"));
  CliRun r = Fleetplan({"trace", "convert", trace, "-o", Path("link.jsonl")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(Path("link.jsonl")));
  EXPECT_THAT(ReadAll(Path("target.jsonl")), HasSubstr("fleetplan-trace"));
  // A device is written through, not replaced.
  r = Fleetplan({"trace", "convert", trace, "-o", "/dev/null"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(fs::status("/dev/null").type(), fs::file_type::character);
  if (fs::exists("/dev/full")) {
    r = Fleetplan({"trace", "convert", trace, "-o", "/dev/full"});
    EXPECT_EQ(r.code, 3);
    EXPECT_THAT(r.err, HasSubstr("/dev/full: cannot write: No space left on device"));
    EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
  }
  // "-" writes the trace to stdout and the summary to stderr.
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  r = Fleetplan({"trace", "convert", trace, "-o", "-"});
  std::cout.rdbuf(saved);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(captured.str(), ::testing::StartsWith("{\"adapters\":[]"));
  EXPECT_THAT(r.err, HasSubstr("converted 2 requests"));
  EXPECT_THAT(r.err, HasSubstr("to   - (fleetplan, sha256:"));
  EXPECT_EQ(r.out, "");
  for (const std::string& name : Listing()) EXPECT_THAT(name, Not(HasSubstr(".tmp"))) << name;
}

TEST_F(Hardening, S2_StaleOutputsOfAnEarlierRunAreRemoved) {
  const std::string scenario =
      Write("s.yaml", Scenario(kSmallWorkload) + "output: {requests: true, timeline: true}\n");
  ASSERT_EQ(Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")}).code, 0);
  ASSERT_TRUE(fs::exists(Path("out/requests.jsonl")));
  ASSERT_TRUE(fs::exists(Path("out/timeline.json")));
  const CliRun r =
      Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out"), "--no-requests", "--no-timeline"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(Path("out/requests.jsonl")));
  EXPECT_FALSE(fs::exists(Path("out/timeline.json")));
  EXPECT_TRUE(fs::exists(Path("out/report.json")));
  EXPECT_THAT(r.out, HasSubstr("removed " + Path("out/requests.jsonl") + " (from an earlier run"));
}

TEST_F(Hardening, S2_ReportHtmlIsWrittenByDefaultAndNoHtmlRemovesAStaleOne) {
  const std::string scenario = Write("s.yaml", Scenario(kSmallWorkload));
  const CliRun first = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  ASSERT_EQ(first.code, 0) << first.err;
  ASSERT_TRUE(fs::exists(Path("out/report.html")));
  EXPECT_THAT(first.out, HasSubstr("wrote " + Path("out/report.html")));
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out"), "--no-html"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(Path("out/report.html")));
  EXPECT_THAT(r.out, HasSubstr("removed " + Path("out/report.html") + " (from an earlier run"));
  // output.html: false in the scenario does the same as --no-html.
  const std::string off = Write("off.yaml", Scenario(kSmallWorkload) + "output: {html: false}\n");
  const CliRun o = Fleetplan({"simulate", off, "--quiet", "--out", Path("out2")});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(fs::exists(Path("out2/report.html")));
  EXPECT_TRUE(fs::exists(Path("out2/report.json")));
}

TEST_F(Hardening, S7_EmptyOutIsAUsageError) {
  const std::string scenario = Write("s.yaml", Scenario(kSmallWorkload));
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", ""});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--out: expected a folder name, got ''"));
}

TEST_F(Hardening, S12_DurationAndRequestsAreExclusiveAsInTheTraceVerbs) {
  const std::string scenario = Write("s.yaml", Scenario(kSmallWorkload));
  const CliRun sim = Fleetplan({"simulate", scenario, "--quiet", "--duration", "1s", "--requests", "5"});
  EXPECT_EQ(sim.code, 2);
  EXPECT_THAT(sim.err, HasSubstr("excludes"));
  const CliRun gen = Fleetplan({"trace", "gen", scenario, "-o", Path("t.jsonl"), "--duration", "1s", "--requests", "5"});
  EXPECT_EQ(gen.code, 2);
}

TEST_F(Hardening, S14_SimulateReportsCappedDrawsAsTraceGenDoes) {
  const std::string scenario = Write(
      "s.yaml", Scenario("  requests: 50\n  arrival: {process: poisson, rate: 20/s}\n  classes:\n    default:\n"
                         "      share: 1\n      prompt: [{segment: unique, tokens: 50}]\n"
                         "      output_tokens: {lognormal: {median: 40, p99: 400}, max: 40}\n"));
  const CliRun gen = Fleetplan({"trace", "gen", scenario, "-o", Path("t.jsonl"), "--seed", "3"});
  ASSERT_EQ(gen.code, 0) << gen.err;
  const CliRun sim = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out"), "--seed", "3"});
  ASSERT_EQ(sim.code, 0) << sim.err;
  const std::string marker = " draws of workload.classes.default.output_tokens capped at its max";
  const size_t at = gen.out.find(marker);
  ASSERT_NE(at, std::string::npos) << gen.out;
  const size_t start = gen.out.rfind(' ', at - 1) + 1;
  const std::string count = gen.out.substr(start, at - start);
  EXPECT_THAT(sim.out, HasSubstr("adjusted: " + count + marker));
  const Json report = Json::parse(ReadAll(Path("out/report.json")));
  EXPECT_THAT(report["notes"].dump(), HasSubstr("adjusted: " + count + marker));
}

}  // namespace
}  // namespace fleetplan::cli
