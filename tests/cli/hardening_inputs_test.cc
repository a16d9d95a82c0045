// Scenario inputs: `-` reads the scenario from stdin (M3) and user catalogs reach every
// verb that reads a scenario (M4). One test per defect, named after it.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/files.h"

namespace fleetplan::cli {
namespace {

using testing::CliRun;

std::string Temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Runs the real binary with `stdin_path` as its standard input; returns (exit code, stdout).
std::pair<int, std::string> RunWithStdin(const std::string& args, const std::string& stdin_path) {
  const std::string out = ::testing::TempDir() + "stdin-run.out";
  const std::string cmd = fmt::format("'{}' {} < '{}' > '{}' 2>/dev/null", FLEETPLAN_BINARY, args, stdin_path, out);
  const int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), testing::FileText(out)};
}

// A small two-pool scenario: long prompts prefill on the prefill pool and their KV moves
// over `link` to the decode pool.
std::string PoolsScenario(const std::string& extra_root, const std::string& link) {
  return extra_root + R"(version: 1
name: pools-link
seed: 17
model: {name: llama-3.1-8b, max_context: 16384}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment:
  pools:
    - {role: prefill, replicas: 1, tp: 1}
    - {role: decode, replicas: 1, tp: 1}
  disaggregation: {link: )" + link + R"(, setup: 2ms}
engine:
  scheduler: {max_batched_tokens: 8192, max_running: 64}
  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, per_seq: 0.1ms}}
workload:
  requests: 40
  arrival: {process: poisson, rate: 5/s}
  classes:
    long: {share: 1, prompt: [{segment: unique, tokens: 4000}], output_tokens: 20}
)";
}

constexpr const char* kLinkCatalog =
    "links:\n"
    "  lab-22g: {description: a 22 GiB/s KV-transfer fabric, kind: roce, bandwidth: 22GiB/s, latency: 5us}\n";

TEST(HardeningInputs, M3_DashReadsTheScenarioFromStdin) {
  const std::string scenario = Temp("stdin-scenario.yaml", PoolsScenario("", "ib-ndr-400"));
  const std::string out_dir = ::testing::TempDir() + "stdin-out";
  const auto [code, out] = RunWithStdin(fmt::format("simulate - --quiet --json --out '{}'", out_dir), scenario);
  ASSERT_EQ(code, 0) << out;
  const Json j = Json::parse(out);
  EXPECT_EQ(j["scenario"]["source"], "<stdin>");
  EXPECT_EQ(j["scenario"]["name"], "pools-link");
  // The same bytes from a file give the same run.
  const CliRun file = testing::RunFleetplan({"simulate", scenario, "--quiet", "--json", "--out", out_dir});
  ASSERT_EQ(file.code, 0) << file.err;
  EXPECT_EQ(Json::parse(file.out)["inputs_digest"], j["inputs_digest"]);
}

TEST(HardeningInputs, M3_DashReadsTheScenarioFromStdinForFitAndTraceGen) {
  const std::string scenario = Temp("stdin-scenario.yaml", PoolsScenario("", "ib-ndr-400"));
  const auto [fit_code, fit_out] = RunWithStdin("fit --scenario - --pool decode --context 4096 --json", scenario);
  EXPECT_EQ(fit_code, 0) << fit_out;
  EXPECT_NE(fit_out.find("\"fits\": true"), std::string::npos) << fit_out;
  const std::string trace = ::testing::TempDir() + "stdin-trace.jsonl";
  const auto [gen_code, gen_out] = RunWithStdin(fmt::format("trace gen - -o '{}' --quiet", trace), scenario);
  EXPECT_EQ(gen_code, 0) << gen_out;
  EXPECT_NE(gen_out.find("wrote 40 requests"), std::string::npos) << gen_out;
}

TEST(HardeningInputs, M3_ErrorsInAStdinScenarioNameStdin) {
  const std::string scenario = Temp("stdin-bad.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardwre: {}\n");
  const std::string err = ::testing::TempDir() + "stdin-bad.err";
  const std::string cmd = fmt::format("'{}' simulate - --quiet < '{}' 2> '{}' > /dev/null", FLEETPLAN_BINARY, scenario, err);
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(testing::FileText(err).rfind("<stdin>:3:1: ", 0), 0u) << testing::FileText(err);
}

TEST(HardeningInputs, M4_ScenarioCatalogKeyDefinesAKvTransferLink) {
  Temp("catalog-22g.yaml", kLinkCatalog);
  const std::string fast = Temp("pools-fast.yaml", PoolsScenario("", "ib-ndr-400"));
  const std::string slow = Temp("pools-22g.yaml", PoolsScenario("catalog: catalog-22g.yaml\n", "lab-22g"));
  const CliRun f = testing::RunFleetplan({"simulate", fast, "--quiet", "--json", "--out", ::testing::TempDir() + "o1"});
  const CliRun s = testing::RunFleetplan({"simulate", slow, "--quiet", "--json", "--out", ::testing::TempDir() + "o2"});
  ASSERT_EQ(f.code, 0) << f.err;
  ASSERT_EQ(s.code, 0) << s.err;
  const Json fj = Json::parse(f.out);
  const Json sj = Json::parse(s.out);
  // The 22 GiB/s link (23.6 GB/s) is slower than ib-ndr-400 (50 GB/s): every transfer of
  // the same bytes takes longer.
  const Json& ft = fj["disaggregation"]["transfer"];
  const Json& st = sj["disaggregation"]["transfer"];
  ASSERT_GT(st["count"].get<int64_t>(), 0);
  EXPECT_EQ(st["bytes"], ft["bytes"]);
  EXPECT_GT(st["duration"]["p50_ms"].get<double>(), 1.8 * ft["duration"]["p50_ms"].get<double>());
  // The catalog is an input of the run: listed with its digest, and part of inputs_digest.
  ASSERT_EQ(sj["inputs"]["catalogs"].size(), 1u);
  EXPECT_EQ(sj["inputs"]["catalogs"][0]["path"], ::testing::TempDir() + "catalog-22g.yaml");
  EXPECT_EQ(sj["inputs"]["catalogs"][0]["digest"].get<std::string>().substr(0, 7), "sha256:");
  EXPECT_FALSE(fj["inputs"].contains("catalogs"));
}

TEST(HardeningInputs, M4_CatalogFlagOnSimulateFitAndTraceGen) {
  const std::string catalog = Temp("catalog-flag.yaml", kLinkCatalog);
  const std::string scenario = Temp("pools-flag.yaml", PoolsScenario("", "lab-22g"));
  // Without the catalog the link is unknown; with --catalog it resolves.
  const CliRun without = testing::RunFleetplan({"simulate", scenario, "--quiet", "--out", ::testing::TempDir() + "o3"});
  EXPECT_EQ(without.code, 3);
  EXPECT_NE(without.err.find("unknown link 'lab-22g'"), std::string::npos) << without.err;
  const CliRun with = testing::RunFleetplan(
      {"simulate", scenario, "--catalog", catalog, "--quiet", "--json", "--out", ::testing::TempDir() + "o3"});
  ASSERT_EQ(with.code, 0) << with.err;
  EXPECT_EQ(Json::parse(with.out)["inputs"]["catalogs"][0]["path"], catalog);
  // fit --scenario reads the scenario's catalog key; trace gen checks catalogs too.
  const std::string model_catalog = Temp("catalog-model.yaml",
                                         "models:\n  tiny-7b: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, "
                                         "head_dim: 128, intermediate: 14336, vocab: 128256, max_context: 8192}\n");
  const std::string fit_scenario =
      Temp("fit-catalog.yaml", "version: 1\ncatalog: [catalog-model.yaml]\nmodel: {name: tiny-7b}\nhardware: {gpu: h100-sxm-80g}\n"
                               "engine: {scheduler: {max_running: 8}}\n");
  const CliRun fit = testing::RunFleetplan({"fit", "--scenario", fit_scenario});
  EXPECT_EQ(fit.code, 0) << fit.err;
  const CliRun gen = testing::RunFleetplan({"trace", "gen", scenario, "-o", ::testing::TempDir() + "gen.jsonl",
                                            "--catalog", ::testing::TempDir() + "no-such-catalog.yaml", "--quiet"});
  EXPECT_EQ(gen.code, 3);
  EXPECT_NE(gen.err.find("no-such-catalog.yaml"), std::string::npos) << gen.err;
  (void)model_catalog;
}

TEST(HardeningInputs, M4_MissingScenarioCatalogIsLocatedAtTheKey) {
  const std::string scenario = Temp("pools-missing-catalog.yaml", PoolsScenario("catalog: nowhere.yaml\n", "lab-22g"));
  const CliRun r = testing::RunFleetplan({"simulate", scenario, "--quiet"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            scenario + ":1:10: catalog: cannot read catalog file '" + ::testing::TempDir() +
                "nowhere.yaml' (paths are relative to the scenario's folder)");
}

}  // namespace
}  // namespace fleetplan::cli
