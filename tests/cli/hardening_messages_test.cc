// Error messages that named the wrong cause, no cause or no place (B1-B16): each now
// names what is wrong, where (file:line:col when there is a file) and what to do. One
// test per defect, named after it; exact texts are pinned where they are the contract.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/fleet/fidelity.h"
#include "support/shared_data.h"
#include "support/files.h"
#include "support/small_scenarios.h"

namespace fleetplan::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::CliRun;

CliRun Fleetplan(std::vector<std::string> args) { return testing::RunFleetplan(std::move(args)); }

template <typename T>
std::string ErrorOf(const Expected<T>& e) {
  return e.ok() ? "(ok)" : e.status().message();
}

constexpr const char* kHead = "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n";
constexpr const char* kStepModel = testing::kAffineStepModel;
constexpr const char* kWorkload = testing::kTenRequestsWorkload;

class HardeningMessages : public testing::TempFolderTest {
 protected:
  std::string Scenario(const std::string& name, const std::string& extra = "") const {
    return Write(name, std::string(kHead) + kStepModel + extra + kWorkload);
  }
};

TEST_F(HardeningMessages, B12_UnknownVerbIsNamedWithDidYouMeanAndTheVerbs) {
  const CliRun typo = Fleetplan({"simulat", "x.yaml"});
  EXPECT_EQ(typo.code, 2);
  EXPECT_THAT(typo.err, StartsWith("fleetplan: unknown verb 'simulat'; did you mean 'simulate'? (valid: catalog, fit, "
                                   "simulate, report, layout, place, experts, trace, validate, sweep, capacity, "
                                   "evidence, rollout, plan, gate, serve)\n"));
  const CliRun bogus = Fleetplan({"bogus"});
  EXPECT_EQ(bogus.code, 2);
  EXPECT_THAT(bogus.err, StartsWith("fleetplan: unknown verb 'bogus' (valid: catalog, fit,"));
  EXPECT_THAT(bogus.err, Not(HasSubstr("subcommand is required")));
}

// A verb that needs a sub-verb lists them when it gets none or an unknown one.
TEST_F(HardeningMessages, SubVerbs_AVerbWithoutItsSubVerbListsThem) {
  const CliRun none = Fleetplan({"catalog"});
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, StartsWith("fleetplan catalog: name what to do: "));
  EXPECT_THAT(none.err, HasSubstr("models"));
  EXPECT_THAT(none.err, HasSubstr("Run `fleetplan catalog --help` for each one."));
  const CliRun nope = Fleetplan({"gate", "nope", "x"});
  EXPECT_EQ(nope.code, 2);
  EXPECT_THAT(nope.err, StartsWith("fleetplan gate: unknown gate sub-verb 'nope'"));
  EXPECT_THAT(nope.err, HasSubstr("speculation"));
  EXPECT_THAT(nope.err, Not(HasSubstr("subcommand is required")));
  // A known sub-verb still runs, and --help still helps.
  EXPECT_EQ(Fleetplan({"catalog", "models"}).code, 0);
  EXPECT_EQ(Fleetplan({"gate", "--help"}).code, 0);
}

TEST_F(HardeningMessages, B1_UnterminatedQuoteIsTheYamlErrorAtItsPlace) {
  const std::string path = Write("q.yaml", "version: 1\nname: \"atlas\nmodel: {name: llama-3.1-8b}\n" +
                                               std::string("hardware: {gpu: h100-sxm-80g}\n") + kWorkload);
  const CliRun r = Fleetplan({"simulate", path, "--quiet", "--out", Path("out")});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith(path + ":2:7: name: invalid YAML: unterminated quoted string: the \" here is never "
                                       "closed\n"));
  const std::string single = Write("s.yaml", "version: 1\nname: 'it''s\nmodel: {name: llama-3.1-8b}\n");
  EXPECT_THAT(Fleetplan({"fit", "--scenario", single}).err, StartsWith(single + ":2:7: name: invalid YAML: "
                                                                                "unterminated quoted string"));
}

TEST_F(HardeningMessages, B13_TabIndentMergeKeyAndEmptyFileNameTheCause) {
  const std::string tab = Write("tab.yaml", "version: 1\nmodel:\n\tname: llama-3.1-8b\nhardware: {gpu: h100-sxm-80g}\n");
  const CliRun t = Fleetplan({"fit", "--scenario", tab});
  EXPECT_EQ(t.code, 3);
  EXPECT_THAT(t.err, StartsWith(tab + ":3:1: invalid YAML: a tab in the indentation; YAML indents with spaces only\n"));
  const std::string merge = Write("merge.yaml", "version: 1\nbase: &b {gpu: h100-sxm-80g}\nmodel: {name: llama-3.1-8b}\n"
                                                "hardware:\n  <<: *b\n");
  const CliRun m = Fleetplan({"fit", "--scenario", merge});
  EXPECT_EQ(m.code, 3);
  EXPECT_THAT(m.err, StartsWith(merge + ":5:3: hardware: YAML merge keys ('<<') are not supported; write the fields "
                                        "out (an alias of a whole value, `key: *name`, works)\n"));
  const std::string empty = Write("empty.yaml", "");
  const CliRun e = Fleetplan({"simulate", empty, "--quiet", "--out", Path("out")});
  EXPECT_EQ(e.code, 3);
  EXPECT_EQ(e.err, empty + ":1:1: the file is empty: missing required field 'model'\n");
  const std::string comments = Write("comments.yaml", "# nothing yet\n");
  EXPECT_THAT(Fleetplan({"simulate", comments, "--quiet", "--out", Path("out")}).err,
              StartsWith(comments + ":1:1: the file is only comments (no YAML value): missing required field 'model'"));
  EXPECT_EQ(Fleetplan({"fit", "--scenario", empty}).err,
            empty + ":1:1: the file is empty: missing required field 'model'\n");
}

TEST_F(HardeningMessages, B2_AzureCsvWithCrlfLineEndingsIsRead) {
  const std::string trace = Write("azure.csv",
                                  "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:00:00.0000000,10,5\r\n"
                                  "2023-11-16 18:00:01.0000000,20,6\r\n");
  const CliRun r = Fleetplan({"trace", "stats", trace, "--format", "azure"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("requests     2\n"));
  const CliRun detected = Fleetplan({"trace", "stats", trace});
  EXPECT_EQ(detected.code, 0) << detected.err;
}

TEST_F(HardeningMessages, B7_RecordsWithABomReadAndInvalidUtf8IsLocated) {
  const std::string line =
      R"({"id":0,"class":"default","arrival_s":0,"first_token_s":0.1,"finish_s":0.5,"status":"ok","input_tokens":10,"output_tokens":5})";
  const std::string bom = Write("bom.jsonl", "\xEF\xBB\xBF" + line + "\n");
  const CliRun b = Fleetplan({"report", "--records", bom});
  EXPECT_EQ(b.code, 0) << b.err;
  const std::string bad = Write("bad.jsonl", R"({"id":0,"class":"d)" "\xff" R"(","arrival_s":0})" "\n");
  const CliRun u = Fleetplan({"report", "--records", bad});
  EXPECT_EQ(u.code, 3);
  EXPECT_EQ(u.err, bad + ":1:19: expected UTF-8 text, found the byte 0xff\n");
}

TEST_F(HardeningMessages, B8_ADirectoryAsInputIsNamed) {
  fs::create_directories(Path("run"));
  const CliRun report = Fleetplan({"report", "--records", Path("run")});
  EXPECT_EQ(report.code, 3);
  EXPECT_EQ(report.err, Path("run") + ": is a directory, not a records file (a run's records are its requests.jsonl)\n");
  const CliRun stats = Fleetplan({"trace", "stats", Path("run")});
  EXPECT_EQ(stats.code, 3);
  EXPECT_EQ(stats.err, Path("run") + ": is a directory, not a trace file\n");
}

TEST_F(HardeningMessages, B3_ExponentAndInfinityAreOutOfRangeNotAMissingUnit) {
  const std::string scenario = Scenario("s.yaml");
  const CliRun d = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out"), "--duration", "1e30s"});
  EXPECT_EQ(d.code, 2);
  EXPECT_EQ(d.err, "--duration: expected a duration of at most 2562047h (64-bit nanoseconds), got '1e30s' (out of "
                   "range)\n");
  const CliRun g = Fleetplan({"fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-80g", "--gpu-memory", "1e30GiB",
                              "--context", "4096"});
  EXPECT_EQ(g.code, 2);
  EXPECT_EQ(g.err, "--gpu-memory: expected a size of at most 8388607TiB (64-bit bytes), got '1e30GiB' (out of range)\n");
  EXPECT_EQ(ErrorOf(ParseRate("inf/s")), "expected a rate of at most 1000000000/s, got 'inf/s' (out of range)");
  EXPECT_EQ(ErrorOf(ParseRate("1e-300/s")),
            "expected a rate with a unit (/s, /m, /min, /h) written without an exponent, got '1e-300/s'");
  EXPECT_EQ(ErrorOf(ParseDuration("1.5e3ms")),
            "expected a duration with a unit (ns, us, ms, s, m, min, h) written without an exponent, got '1.5e3ms'; "
            "write '1500ms'");
  // Located in a scenario too.
  const std::string rate = Write("rate.yaml", std::string(kHead) + kStepModel +
                                                  "workload:\n  requests: 10\n  arrival: {process: poisson, rate: "
                                                  "inf/s}\n  classes:\n    default: {share: 1, prompt: [{segment: "
                                                  "unique, tokens: 100}], output_tokens: 10}\n");
  EXPECT_THAT(Fleetplan({"simulate", rate, "--quiet", "--out", Path("out")}).err,
              StartsWith(rate + ":8:37: workload.arrival.rate: expected a rate of at most 1000000000/s, got 'inf/s' "
                                "(out of range)"));
}

TEST_F(HardeningMessages, B4_UnitSuggestionsAreSensibleOrAbsent) {
  const std::string duration = "expected a duration with a unit (ns, us, ms, s, m, min, h), got ";
  const std::string size = "expected a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got ";
  EXPECT_EQ(ErrorOf(ParseDuration("6OOms")), duration + "'6OOms'; the letter 'O' is not a digit: did you mean '600ms'?");
  EXPECT_EQ(ErrorOf(ParseBytes("1PiB")), size + "'1PiB'; the largest unit is TiB: write '1024TiB'");
  EXPECT_EQ(ErrorOf(ParseDuration("2d")), duration + "'2d'; the largest unit is h: write '48h'");
  // No suggestion that changes the unit's first letter.
  EXPECT_EQ(ErrorOf(ParseBytes("1QiB")), size + "'1QiB'");
  // Near misses still get theirs.
  EXPECT_EQ(ErrorOf(ParseDuration("600 msec")), duration + "'600 msec'; did you mean '600 ms'?");
}

TEST_F(HardeningMessages, B5_RangeErrorsNameTheRealRange) {
  const std::string scenario = Scenario("s.yaml");
  const CliRun flag = Fleetplan({"simulate", scenario, "--quiet", "--seed", "18446744073709551615"});
  EXPECT_EQ(flag.code, 2);
  EXPECT_EQ(flag.err, "--seed: expected an integer from 0 to 9223372036854775807, got '18446744073709551615'\n");
  const std::string seeded = Write("seed.yaml", "seed: 18446744073709551615\n" + std::string(kHead) + kStepModel + kWorkload);
  const CliRun key = Fleetplan({"simulate", seeded, "--quiet"});
  EXPECT_EQ(key.code, 3);
  EXPECT_THAT(key.err, StartsWith(seeded + ":1:7: seed: expected an integer from 0 to 9223372036854775807, got "
                                           "'18446744073709551615'"));
  const std::string mooncake =
      Write("m.jsonl", R"({"timestamp":18446744073709551616,"input_length":10,"output_length":5,"hash_ids":[1]})" "\n");
  const CliRun m = Fleetplan({"trace", "stats", mooncake, "--format", "mooncake"});
  EXPECT_EQ(m.code, 3);
  EXPECT_THAT(m.err, HasSubstr("18446744073709551616 (an integer out of the 64-bit range)"));
  EXPECT_THAT(m.err, Not(HasSubstr("fraction")));
}

TEST_F(HardeningMessages, B6_DurationsMustBePositiveWithOneMessage) {
  const std::string scenario = Scenario("s.yaml");
  for (const std::string d : {"0s", "0", "-1s"}) {
    const CliRun sim = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out"), "--duration=" + d});
    EXPECT_EQ(sim.code, 2) << d;
    EXPECT_EQ(sim.err, "--duration: expected a duration > 0, got '" + d + "'\n");
    const CliRun gen = Fleetplan({"trace", "gen", scenario, "-o", Path("t.jsonl"), "--seed", "1", "--duration=" + d});
    EXPECT_EQ(gen.code, 2) << d;
    EXPECT_EQ(gen.err, "--duration: expected a duration > 0, got '" + d + "'\n");
  }
  const std::string recorded = Write("r.yaml", std::string(kHead) + kStepModel + kWorkload + "output: {requests: true}\n");
  const CliRun ok = Fleetplan({"simulate", recorded, "--quiet", "--out", Path("out")});
  ASSERT_EQ(ok.code, 0) << ok.err;
  const CliRun window = Fleetplan({"report", "--records", Path("out/requests.jsonl"), "--window", "0s"});
  EXPECT_EQ(window.code, 2);
  EXPECT_EQ(window.err, "--window: expected a duration > 0, got '0s'\n");
  const std::string zero = Write("zero.yaml", std::string(kHead) + kStepModel +
                                                  "workload:\n  duration: 0s\n  arrival: {process: poisson, rate: 20/s}\n"
                                                  "  classes:\n    default: {share: 1, prompt: [{segment: unique, "
                                                  "tokens: 100}], output_tokens: 10}\n");
  EXPECT_THAT(Fleetplan({"simulate", zero, "--quiet", "--out", Path("out")}).err,
              StartsWith(zero + ":7:13: workload.duration: expected a duration > 0, got '0s'"));
}

TEST_F(HardeningMessages, B9_OneBlockTooLargeSaysWhatItNeedsAndWhere) {
  const std::string scenario = Write("kv.yaml", std::string(kHead) +
                                                    "engine:\n  kv: {block_tokens: 1000000000}\n" +
                                                    std::string(kStepModel).substr(8) + kWorkload);
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.err, StartsWith(scenario + ":5:22: engine.kv.block_tokens: one KV block of 1000000000 tokens needs "
                                           "131072.0 GB per rank, more than the "));
  EXPECT_THAT(r.err, HasSubstr("use a smaller engine.kv.block_tokens (vLLM uses 16)"));
}

TEST_F(HardeningMessages, B10_MissingTraceIsLocatedAtItsScenarioLine) {
  const std::string scenario = Write("t.yaml", std::string(kHead) + kStepModel +
                                                   "workload:\n  trace: {file: missing.jsonl, format: fleetplan}\n");
  const CliRun r = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith(scenario + ":7:17: workload.trace.file: cannot open the trace file '" +
                                Path("missing.jsonl") + "': no such file (a relative path is read from the "
                                                        "scenario's folder)"));
}

TEST_F(HardeningMessages, B11_TruncatedMetaJsonIsLocatedAndFitChecksItsOutputFirst) {
  Write("run/meta.json", "{\"model\": \"meta-llama/Llama-3.1-8B\",\n \"engine_kwargs\": {\"max_num_seqs\": 8,\n");
  Write("run/requests.jsonl", "");
  const CliRun r = Fleetplan({"validate", Path("run")});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith(Path("run/meta.json") + ":3:1: invalid JSON: "));
  EXPECT_THAT(r.err, HasSubstr("(is the file truncated?)"));
  // --fit into a path that cannot be written fails before any fitting.
  const std::string file = Write("not-a-folder", "x");
  const auto start = std::chrono::steady_clock::now();
  const CliRun fit = Fleetplan({"validate", "--fit", file + "/calibration.json", Path("run")});
  EXPECT_EQ(fit.code, 3);
  EXPECT_EQ(fit.err, "--fit: cannot write '" + file + "/calibration.json': '" + file + "' is not a folder\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  const CliRun folder = Fleetplan({"validate", "--fit", Path("run"), Path("run")});
  EXPECT_EQ(folder.code, 3);
  EXPECT_THAT(folder.err, HasSubstr("Is a directory"));
}

TEST_F(HardeningMessages, B14_EachVerbsHelpEndsWithItsOwnExamplesAndExitCodes) {
  const std::string global_example = "fleetplan gate speculation rounds.jsonl --ordinary 8ms";
  for (const std::string verb : {"catalog", "fit", "simulate", "report", "layout", "place", "experts", "trace",
                                 "validate", "sweep", "capacity", "evidence", "rollout", "plan", "serve"}) {
    const CliRun r = Fleetplan({verb, "--help"});
    EXPECT_EQ(r.code, 0) << verb;
    EXPECT_THAT(r.out, Not(HasSubstr(global_example))) << verb;
    EXPECT_THAT(r.out, HasSubstr("xit")) << verb << " names its exit codes";
  }
  for (const std::string verb : {"simulate", "trace"}) {
    EXPECT_THAT(Fleetplan({verb, "--help"}).out, HasSubstr("Exit codes: 0 done")) << verb;
  }
  EXPECT_THAT(Fleetplan({"trace", "gen", "--help"}).out, HasSubstr("fleetplan trace gen scenario.yaml"));
  EXPECT_THAT(Fleetplan({"report", "--help"}).out, HasSubstr("fleetplan report --records out/requests.jsonl"));
  EXPECT_THAT(Fleetplan({"--help"}).out, HasSubstr(global_example));
}

TEST_F(HardeningMessages, B15_AnImplausibleOrUnconvergedFitIsFlagged) {
  Calibration c;
  c.host.per_step = Duration::Nanos(4'000'000);
  c.gpu_time_scale = 1.0;
  EXPECT_TRUE(CalibrationWarnings(c).empty());
  c.gpu_time_scale = 0.65;
  ASSERT_EQ(CalibrationWarnings(c).size(), 1u);
  EXPECT_THAT(CalibrationWarnings(c)[0], StartsWith("gpu_time_scale 0.65 is outside 0.70..1.30"));
  c.gpu_time_scale = 1.0;
  ASSERT_EQ(CalibrationWarnings(c, /*converged=*/false).size(), 1u);
  EXPECT_THAT(CalibrationWarnings(c, false)[0], StartsWith("the fit had not settled after 24 rounds"));
}

TEST_F(HardeningMessages, B16_CountsAndArticlesReadAsEnglish) {
  const CliRun layout = Fleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "1x8xh100-sxm-80g", "--quiet"});
  EXPECT_EQ(layout.code, 0) << layout.err;
  EXPECT_THAT(layout.out, HasSubstr("(8 GPUs, 8 healthy, 1 node)"));
  const std::string trace = Write("azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens,Extra\n");
  const CliRun azure = Fleetplan({"trace", "stats", trace, "--format", "azure"});
  EXPECT_EQ(azure.code, 3);
  EXPECT_THAT(azure.err, HasSubstr("in the header of an azure trace"));
}

TEST_F(HardeningMessages, B16_ValidateStatesTheZeroCalibrationOnce) {
  FP_REQUIRE_SHARED_DATA();
  Write("run/meta.json", R"({"model": "meta-llama/Llama-3.1-8B", "num_requests": 1,
      "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 8, "max_num_batched_tokens": 512},
      "kv_cache": {"block_size": 16, "num_gpu_blocks": 1000}})");
  Write("run/requests.jsonl",
        R"({"request_id": "a", "input_toks": 100, "output_toks": 10, "arrival_time": 10.0, "queued_ts": 10.0, "scheduled_ts": 10.0, "first_token_ts": 10.05, "last_token_ts": 10.3})"
        "\n");
  const CliRun r = Fleetplan({"validate", Path("run"), "--profile",
                              testing::SharedPath("profiles/llmservingsim/perf/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\ncalibration none (zero host overhead, scale 1)\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("fitted on")));
}

}  // namespace
}  // namespace fleetplan::cli

namespace fleetplan::cli {
namespace {

// One rule for every verb (core/flag_error.h): a flag's value that does not parse, names
// nothing known or is out of range is a usage error, exit 2, naming the flag; what is wrong
// inside a file a flag names stays an input error, exit 3, located in the file.
TEST_F(HardeningMessages, B5_EveryBadFlagValueIsAUsageErrorAndABadFileAnInputError) {
  const std::string scenario = Scenario("s.yaml");
  const std::vector<std::vector<std::string>> bad_values = {
      {"fit", "--model", "atlas-70b", "--gpu", "h100-sxm-80g", "--tp", "-4"},
      {"fit", "--model", "atlas-7b", "--gpu", "h100-sxm-80g"},
      {"experts", "--counts", "1,2,3,4", "--ranks", "0"},
      {"layout", "--scenario", scenario, "--simulate-top", "0"},
      {"layout", "--scenario", scenario, "--rows", "-1"},
      {"layout", "--scenario", scenario, "--jobs", "-1"},
      {"gate", "speculation", Path("none.jsonl"), "--ordinary", "0ms"},
      {"simulate", scenario, "--quiet", "--out", Path("out"), "--duration", "0s"},
      {"trace", "gen", scenario, "-o", Path("t.jsonl"), "--seed", "1", "--requests", "0"},
      {"serve", scenario, "--port", "-1"},
      {"serve", scenario, "--speed", "0"},
  };
  for (const std::vector<std::string>& args : bad_values) {
    const CliRun r = Fleetplan(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << args[args.size() - 2] << " " << args.back() << ": " << r.err;
    EXPECT_EQ(r.err.rfind("--", 0), 0u) << r.err;  // the message starts with the flag
  }
  const CliRun in_file = Fleetplan({"simulate", Write("bad.yaml", "version: 1\nmodle: x\n"), "--quiet"});
  EXPECT_EQ(in_file.code, 3) << in_file.err;
  EXPECT_NE(in_file.err.find("bad.yaml:2:1"), std::string::npos) << in_file.err;
}

}  // namespace
}  // namespace fleetplan::cli
