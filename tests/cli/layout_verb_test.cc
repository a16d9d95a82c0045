// `fleetplan layout`: exit codes, JSON keys, and located errors for bad cluster files.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/perf/stated_error.h"
#include "fleetplan/metrics/records_io.h"

namespace fleetplan::cli {
namespace {

using CliResult = testing::CliRun;

CliResult Fleetplan(std::vector<std::string> args) {
  return testing::RunFleetplan(std::move(args));
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(LayoutVerb, RanksLayoutsAsJson) {
  const CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_FALSE(j["feasible"].empty());
  const Json& best = j["feasible"][0];
  EXPECT_EQ(best["tp"], 8);
  EXPECT_EQ(best["pp"], 1);
  EXPECT_EQ(best["decode_rank"], 1);
  for (const char* key :
       {"dp", "replicas", "bytes_per_rank", "prefill_ms", "decode_ms", "comm_ms", "tokens_per_s_per_gpu"}) {
    EXPECT_TRUE(best.contains(key)) << key;
  }
  // Rejected in enumeration order: tp 1 × pp 1 first (weights), tp 3 among them (heads).
  EXPECT_EQ(j["rejected"][0]["tp"], 1);
  EXPECT_EQ(j["rejected"][0]["pp"], 1);
  EXPECT_EQ(j["rejected"][0]["reason"].get<std::string>().rfind("one replica does not fit: weights 131.42 GiB", 0), 0u);
  bool saw_tp3 = false;
  for (const Json& x : j["rejected"]) {
    if (x["tp"] != 3) continue;
    saw_tp3 = true;
    EXPECT_EQ(x["reason"],
              "tp 3 does not divide the 64 attention heads of 'atlas-70b' (valid tp: 1, 2, 4, 8, 16, 32, 64)");
  }
  EXPECT_TRUE(saw_tp3);
  EXPECT_EQ(j["ranking"]["decode"]["threshold"], 0.05);
}

TEST(LayoutVerb, TextStatesDefaultsAndWhatIfRemovals) {
  const CliResult r =
      Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--without", "nvlink:n0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("removed nvlink:n0 (what-if)"), std::string::npos);
  EXPECT_NE(r.out.find("inter-node link ib-ndr-400: default (short form)"), std::string::npos);
  EXPECT_NE(r.out.find("batch 64: default (--batch not given)"), std::string::npos);
  EXPECT_NE(r.out.find("islands with slow TP links: n0: pcie5 (64 GB/s, NVLink down)"), std::string::npos);
}

TEST(LayoutVerb, NothingFeasibleIsACheckFailure) {
  const CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x1xl4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("fleetplan layout: no feasible layout (1 rejected; each with its reason above)"),
            std::string::npos)
      << r.err;
}

TEST(LayoutVerb, BadValuesAreLocatedAtTheirFlag) {
  CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--batch", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--batch: expected an integer, got 'x'\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "2x8xh100-sxm-80"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind(
                "--cluster: short form '2x8xh100-sxm-80': unknown gpu 'h100-sxm-80'; did you mean 'h100-sxm-80g'?", 0),
            0u)
      << r.err;
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--without", "gpu:n0/9"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "--without: gpu:n0/9: node 'n0' has GPUs 0..7, got '9'\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--all-reduce", "rnig"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--all-reduce: unknown all-reduce algorithm 'rnig'; did you mean 'ring'? (valid: ring, tree)\n");
  r = Fleetplan({"layout", "--model", "atlas-70b"});
  EXPECT_EQ(r.code, 2);
}

TEST(LayoutVerb, BadClusterFilesAreLocatedErrorsWithExitCode3) {
  const std::string unknown_gpu = WriteFile("unknown_gpu.yaml",
                                            "racks:\n"
                                            "  - name: r0\n"
                                            "    nodes:\n"
                                            "      - {name: n0, gpu: h100-sxm-80, gpus: 8}\n");
  CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", unknown_gpu});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.substr(0, r.err.find(" (valid:")),
            unknown_gpu + ":4:25: racks[0].nodes[0].gpu: unknown gpu 'h100-sxm-80'; did you mean 'h100-sxm-80g'?");

  const std::string missing_node = WriteFile("missing_node.yaml",
                                             "racks:\n"
                                             "  - name: r0\n"
                                             "    nodes:\n"
                                             "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
                                             "      - {name: n1, gpu: h100-sxm-80g, gpus: 8}\n"
                                             "connections:\n"
                                             "  - {between: [n0, n9], link: nvlink4}\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", missing_node});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, missing_node +
                       ":7:20: connections[0].between[1]: unknown node 'n9'; did you mean 'n0'? (valid: n0, n1)\n"
                       "    7 |   - {between: [n0, n9], link: nvlink4}\n"
                       "      |                    ^\n");

  const std::string zero = WriteFile("zero_bandwidth.yaml",
                                     "links:\n"
                                     "  fabric: {kind: roce, bandwidth: 0GB/s, latency: 3us}\n"
                                     "racks:\n"
                                     "  - name: r0\n"
                                     "    nodes: [{name: n0, gpu: h100-sxm-80g, gpus: 8}]\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", zero});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, zero +
                       ":2:35: links.fabric.bandwidth: expected a bandwidth above 0 and at most 100TB/s, got '0GB/s'\n"
                       "    2 |   fabric: {kind: roce, bandwidth: 0GB/s, latency: 3us}\n"
                       "      |                                   ^\n");

  const std::string duplicate = WriteFile("duplicate.yaml",
                                          "racks:\n"
                                          "  - name: r0\n"
                                          "    nodes:\n"
                                          "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
                                          "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", duplicate});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, duplicate +
                       ":5:16: racks[0].nodes[1].name: duplicate name 'n0': already names a node at line 4\n"
                       "    5 |       - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
                       "      |                ^\n");
}

// A short two-class workload on one 8-GPU node (simulations take milliseconds). At 30/s
// the simulation separates the layouts clearly (TP8 reaches about 67% of TP4 × dp 2); at
// 4/s every layout meets the SLOs and the model cannot choose without staging.
std::string SmallScenario(const std::string& rate = "30/s") {
  return WriteFile("layout_scenario_" + std::to_string(std::hash<std::string>{}(rate)) + ".yaml",
                   "version: 1\n"
                   "name: layout-cli\n"
                   "seed: 3\n"
                   "model: {name: atlas-70b, max_context: 8192}\n"
                   "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"
                   "deployment: {replicas: 2, tp: 4}\n"
                   "engine:\n"
                   "  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 128}\n"
                   "workload:\n"
                   "  duration: 30s\n"
                   "  arrival: {process: poisson, rate: " + rate + "}\n"
                   "  classes:\n"
                   "    interactive:\n"
                   "      share: 0.7\n"
                   "      prompt: [{segment: unique, tokens: {uniform: [200, 1200]}}]\n"
                   "      output_tokens: {uniform: [50, 250]}\n"
                   "    batch:\n"
                   "      share: 0.3\n"
                   "      prompt: [{segment: unique, tokens: 2000}]\n"
                   "      output_tokens: 100\n"
                   "slo:\n"
                   "  interactive: {ttft: 1s, tpot: 60ms}\n"
                   "  batch: {e2e: 30s}\n"
                   "output: {dir: out/layout-cli}\n");
}

TEST(LayoutVerb, ScenarioJsonHasTheSimulatedContract) {
  const CliResult r = Fleetplan({"layout", "--scenario", SmallScenario(), "--simulate-top", "3", "--json", "--model-error", "0.05"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["simulated"].size(), 3u);
  std::vector<int64_t> static_ranks;
  for (size_t i = 0; i < j["simulated"].size(); ++i) {
    const Json& s = j["simulated"][i];
    for (const char* key : {"tp", "pp", "ep", "dp", "static_rank", "simulated_rank", "goodput_per_gpu", "attainment"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
    EXPECT_EQ(s["simulated_rank"], static_cast<int64_t>(i) + 1);
    static_ranks.push_back(s["static_rank"].get<int64_t>());
    EXPECT_TRUE(s["attainment"].contains("interactive"));
    EXPECT_TRUE(s["attainment"].contains("batch"));
    EXPECT_GE(s["attainment"]["interactive"].get<double>(), 0.0);
    EXPECT_LE(s["attainment"]["interactive"].get<double>(), 1.0);
  }
  std::sort(static_ranks.begin(), static_ranks.end());
  EXPECT_EQ(static_ranks, (std::vector<int64_t>{1, 2, 3}));
  const Json& d = j["decision"];
  EXPECT_EQ(d["tp"], j["simulated"][0]["tp"]);
  EXPECT_EQ(d["pp"], j["simulated"][0]["pp"]);
  EXPECT_EQ(d["dp"], j["simulated"][0]["dp"]);
  EXPECT_EQ(d["layout"], j["simulated"][0]["layout"]);
  // The three operating points, the typical one in inputs, and the cluster the scenario names.
  ASSERT_EQ(j["operating_points"].size(), 3u);
  EXPECT_EQ(j["operating_points"][0]["name"], "batch-1");
  EXPECT_EQ(j["operating_points"][1]["name"], "typical");
  EXPECT_EQ(j["operating_points"][2]["name"], "max-throughput");
  EXPECT_EQ(j["inputs"]["operating_point"]["rule"], "fleet-concurrency");
  EXPECT_EQ(j["inputs"]["operating_point"]["fleet_sequences"], j["workload"]["concurrency"]);
  EXPECT_EQ(j["cluster"]["name"], "1x8xh100-sxm-80g");
  EXPECT_NE(j["derived"].dump().find("cluster 1x8xh100-sxm-80g: the scenario's hardware (--cluster not given)"),
            std::string::npos);
}

TEST(LayoutVerb, ScenarioTextShowsStaticAgainstSimulatedRanksAndTheCrossover) {
  const CliResult r = Fleetplan({"layout", "--scenario", SmallScenario(), "--cluster", "1x8xh100-sxm-80g", "--model-error", "0.05"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* text : {"Static decode ranking at each operating point", "  batch-1: ", "  typical: Little's law: ",
                           "  max-throughput: ", "Simulated on the scenario's workload (top 4 of the typical point",
                           "  sim static  layout", "Crossovers (static decode model, by fleet concurrency):",
                           "Decision:\n  tp "}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << " not in\n" << r.out;
  }
}

TEST(LayoutVerb, ScenarioJsonIsTheSameForAnyNumberOfJobs) {
  const std::string scenario = SmallScenario();
  const CliResult one = Fleetplan({"layout", "--scenario", scenario, "--jobs", "1", "--json", "--model-error", "0.05"});
  const CliResult four = Fleetplan({"layout", "--scenario", scenario, "--jobs", "4", "--json", "--model-error", "0.05"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, four.out);
}

TEST(LayoutVerb, ScenarioTheModelCannotDecideExitsOneAndNamesWhatToStage) {
  const std::string scenario = SmallScenario("4/s");
  CliResult r = Fleetplan({"layout", "--scenario", scenario, "--json", "--quiet"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("fleetplan layout: no decision without a measured staging result: the model cannot separate "
                        "tp 8 × pp 1 × dp 1, ",
                        0),
            0u)
      << r.err;
  // Without --model-error the band is the stated error of the scenario's step model on its
  // GPU: the measured kernels on H100 (perf/stated_error.h).
  EXPECT_NE(r.err.find("(within its 23% error); stage them and pass --staging LAYOUT=RECORDS"), std::string::npos);
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["decision"]["status"], "needs-staging");
  EXPECT_EQ(j["decision"]["basis"], "needs-staging");
  EXPECT_EQ(j["decision"]["failure_domain"], "node");
  EXPECT_EQ(j["decision"]["model_error"], StatedErrorOf("aiconfigurator", "h100-sxm-80g").step_time);
  EXPECT_NE(j["derived"].dump().find("the stated error of aiconfigurator on h100-sxm-80g"), std::string::npos)
      << j["derived"].dump();
  EXPECT_GE(j["decision"]["needs_staging"].size(), 2u);
  // A tighter declared model error lets the model choose on its own figures.
  r = Fleetplan({"layout", "--scenario", scenario, "--model-error", "0.001", "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["decision"]["status"], "chosen");
}

// Simulating candidates takes seconds on a real workload: stderr shows each stage's
// progress (a plain final line per stage when it is not a terminal), nothing with --quiet.
TEST(LayoutVerb, ScenarioShowsProgressOverTheSimulationsUnlessQuiet) {
  const std::string scenario = SmallScenario();
  CliResult r = Fleetplan({"layout", "--scenario", scenario, "--simulate-top", "3", "--json", "--model-error", "0.05"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("layout [########################] 3/3 simulations 100% in "), std::string::npos) << r.err;
  r = Fleetplan({"layout", "--scenario", scenario, "--simulate-top", "3", "--json", "--quiet", "--model-error", "0.05"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(LayoutVerb, StagingRecordsDecideBetweenCandidatesTheModelCannotSeparate) {
  const std::string scenario = SmallScenario("4/s");
  const Json waiting = Json::parse(Fleetplan({"layout", "--scenario", scenario, "--json"}).out);
  std::vector<std::string> args = {"layout", "--scenario", scenario, "--json"};
  const WorkloadNames names{{"interactive", "batch"}, {}, {}};
  for (const Json& s : waiting["simulated"]) {
    if (std::find(waiting["decision"]["needs_staging"].begin(), waiting["decision"]["needs_staging"].end(),
                  s["layout"]) == waiting["decision"]["needs_staging"].end()) {
      continue;
    }
    // Measured: TP4 × PP1 meets every objective, the others miss TTFT on one request in three.
    const bool best = s["tp"] == 4 && s["pp"] == 1;
    std::string text;
    for (int i = 0; i < 60; ++i) {
      RequestRecord rec;
      rec.id = i;
      rec.arrival = SimTime::FromNanos(int64_t{500'000'000} * i);
      rec.first_token = rec.arrival + Duration::Nanos(int64_t{1'000'000} * (!best && i % 3 == 0 ? 3000 : 200));
      rec.finish = *rec.first_token + Duration::Nanos(int64_t{20'000'000} * 99);
      rec.input_tokens = 500;
      rec.output_tokens = 100;
      AppendRecordJsonl(rec, names, &text);
    }
    const std::string spec = fmt::format("tp{}xpp{}", s["tp"].get<int64_t>(), s["pp"].get<int64_t>());
    args.push_back("--staging");
    args.push_back(spec + "=" + WriteFile("staging_" + spec + ".jsonl", text));
  }
  ASSERT_GE(args.size(), 8u);
  const CliResult r = Fleetplan(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["decision"]["status"], "chosen");
  EXPECT_EQ(j["decision"]["basis"], "staging");
  EXPECT_EQ(j["decision"]["tp"], 4);
  EXPECT_EQ(j["decision"]["pp"], 1);
  for (const Json& s : j["simulated"]) {
    if (s["tp"] == 4 && s["pp"] == 1) {
      EXPECT_EQ(s["staging"]["requests"], 60);
      EXPECT_EQ(s["staging"]["format"], "fleetplan");
      EXPECT_EQ(s["staging"]["fleet_attainment"], 1.0);
    }
  }
}

TEST(LayoutVerb, ChoiceFlagsAreCheckedAndNeedTheScenario) {
  const std::string scenario = SmallScenario();
  CliResult r = Fleetplan({"layout", "--scenario", scenario, "--staging", "tp4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--staging: 'tp4': expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1\n");
  r = Fleetplan({"layout", "--scenario", scenario, "--failure-domain", "region"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--failure-domain: unknown failure domain 'region' (valid: node, rack, zone)\n");
  for (const char* bad : {"0", "1", "1.5", "-0.1", "nan", "five"}) {
    r = Fleetplan({"layout", "--scenario", scenario, "--model-error", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.err.rfind("--model-error: expected ", 0), 0u) << r.err;
  }
  r = Fleetplan({"layout", "--scenario", scenario, "--staging", "tp4=no-such-records.jsonl"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind("--staging: tp4=no-such-records.jsonl: ", 0), 0u) << r.err;
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--failure-domain", "rack"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "fleetplan layout: --failure-domain needs --scenario\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--staging", "tp8=x.jsonl"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "fleetplan layout: --staging needs --scenario\n");
}

TEST(LayoutVerb, TheBuiltInAtlasScenarioIsNamedAtlas) {
  const CliResult r =
      Fleetplan({"layout", "--scenario", "atlas", "--cluster", "2x8xh100-sxm-80g", "--simulate-top", "1", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["scenario"]["name"], "<built-in atlas>");
  EXPECT_EQ(j["model"], "atlas-70b");
  EXPECT_EQ(j["simulated"].size(), 1u);
}

TEST(LayoutVerb, NearMissesAreListedWithHowManySequencesFit) {
  const CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("operating point: decode 64 sequences per replica at 8192 tokens"), std::string::npos);
  EXPECT_NE(r.out.find("Near misses (one replica fits, but fewer sequences than the operating point asks):\n"
                       "  tp 4 × pp 1: fits 59 of 64 sequences at 8192 tokens (timed at 59; ranked after the "
                       "layouts that fit)\n"),
            std::string::npos)
      << r.out;
  const CliResult js = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--json"});
  ASSERT_EQ(js.code, 0) << js.err;
  const Json j = Json::parse(js.out);
  EXPECT_EQ(j["inputs"]["operating_point"]["batch"], 64);
  EXPECT_EQ(j["inputs"]["operating_point"]["context"], 8192);
  EXPECT_EQ(j["inputs"]["operating_point"]["rule"], "per-replica");
  bool listed = false;
  for (const Json& f : j["feasible"]) {
    if (f["tp"] == 4 && f["pp"] == 1) {
      listed = true;
      EXPECT_EQ(f["near_miss"]["text"], "fits 59 of 64 sequences");
      EXPECT_EQ(f["batch"], 59);
    }
  }
  EXPECT_TRUE(listed);
}

TEST(LayoutVerb, ScenarioInputErrorsAreLocatedWithStableExitCodes) {
  CliResult r = Fleetplan({"layout", "--scenario", "no-such-scenario.yaml"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "--scenario: cannot read 'no-such-scenario.yaml': No such file or directory\n");
  const std::string scenario = SmallScenario();
  for (const char* k : {"0", "-2", "65"}) {
    r = Fleetplan({"layout", "--scenario", scenario, "--simulate-top", k});
    EXPECT_EQ(r.code, 2) << k;
    EXPECT_EQ(r.err, std::string("--simulate-top: expected an integer between 1 and 64, got ") + k + "\n");
  }
  r = Fleetplan({"layout", "--scenario", scenario, "--simulate-top", "two"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--simulate-top: expected an integer, got 'two'\n");
  r = Fleetplan({"layout", "--scenario", scenario, "--jobs", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--jobs: expected an integer between 1 and 64, got 0\n");
  // An error inside the file is located there, not at the flag.
  const std::string bad = WriteFile("layout_bad.yaml", "version: 1\nname: x\n");
  r = Fleetplan({"layout", "--scenario", bad});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind(bad + ":1:1: missing required field 'model'", 0), 0u) << r.err;
}

TEST(LayoutVerb, ScenarioFlagsThatDoNotMixAreUsageErrors) {
  const std::string scenario = SmallScenario();
  CliResult r = Fleetplan({"layout", "--scenario", scenario, "--batch", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("fleetplan layout: --batch cannot be combined with --scenario: the scenario gives it", 0), 0u)
      << r.err;
  r = Fleetplan({"layout", "--scenario", scenario, "--model", "atlas-70b"});
  EXPECT_EQ(r.code, 2);
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--simulate-top", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "fleetplan layout: --simulate-top needs --scenario\n");
  r = Fleetplan({"layout", "--cluster", "1x8xh100-sxm-80g"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("fleetplan layout: --model and --cluster are required (or --scenario FILE)", 0), 0u);
}

TEST(LayoutVerb, HelpTeachesTheScenarioFlagsWithAnExample) {
  const CliResult r = Fleetplan({"layout", "--help"});
  ASSERT_EQ(r.code, 0);
  for (const char* text : {"--scenario", "--simulate-top", "--jobs", "Little's law",
                           "fleetplan layout --scenario atlas --cluster 2x8xh100-sxm-80g --simulate-top 4",
                           "fits 59 of 64 sequences"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace fleetplan::cli
