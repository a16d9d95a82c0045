// Inputs that were silently accepted (S3, S6, S8, S9, S10, S11, S13): each is now refused
// with a located, actionable error and the stable exit code, or (S13's --compare) reports
// the outcome it shows. One test per defect, named after it; S4 (`version:` may be
// omitted) is documented behaviour, pinned by tests/fleet/scenario_defaults_doc_test.cc.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "support/files.h"
#include "support/small_scenarios.h"

namespace fleetplan::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::CliRun;

CliRun Fleetplan(std::vector<std::string> args) { return testing::RunFleetplan(std::move(args)); }

constexpr const char* kStepModel = testing::kAffineStepModel;
constexpr const char* kWorkload = testing::kTenRequestsWorkload;

class HardeningAccepts : public testing::TempFolderTest {
};

TEST_F(HardeningAccepts, S3_CatalogModelNameBesideAnInlineSpecIsALocatedError) {
  const std::string spec =
      "spec: {layers: 2, hidden: 256, heads: 4, kv_heads: 2, head_dim: 64, intermediate: 512, vocab: 1000, "
      "max_context: 2048}";
  const std::string both = Write("both.yaml", "version: 1\nmodel:\n  name: atlas-70b\n  " + spec +
                                                  "\nhardware: {gpu: h100-sxm-80g}\n" + kStepModel + kWorkload);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"simulate", both, "--quiet", "--out", Path("out")},
        std::vector<std::string>{"fit", "--scenario", both}}) {
    const CliRun r = Fleetplan(args);
    EXPECT_EQ(r.code, 3) << args[0] << ": " << r.out << r.err;
    EXPECT_THAT(r.err, StartsWith(both + ":3:9: model.name: 'atlas-70b' is a catalog model, and model.spec "
                                         "defines an inline model beside it; use one: drop model.spec to run the "
                                         "catalog model, or give the inline model a name of its own"))
        << args[0];
  }
  // A name of its own labels the inline model, as before.
  const std::string named = Write("named.yaml", "version: 1\nmodel:\n  name: toy\n  " + spec +
                                                    "\nhardware: {gpu: h100-sxm-80g}\n" + kStepModel + kWorkload);
  const CliRun ok = Fleetplan({"fit", "--scenario", named});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("toy"));
}

TEST_F(HardeningAccepts, S6_StepModelTimesAreBoundedAtTenSeconds) {
  const std::string host = Write("host.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n"
                                              "engine:\n  host_overhead: 1h\n" +
                                                  std::string(kStepModel).substr(8) + kWorkload);
  const CliRun r = Fleetplan({"simulate", host, "--quiet", "--out", Path("out")});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, StartsWith(host + ":5:18: engine.host_overhead: expected a duration of at most 10 s (a "
                                       "step-model time; docs/limits.md), got '1h'"));
  const std::string base = Write("base.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n"
                                              "engine:\n  step_model: {kind: affine, prefill: {base: 8ms, per_token: "
                                              "0.02ms}, decode: {base: 2h, per_seq: 0.1ms}}\n" +
                                                  std::string(kWorkload));
  const CliRun b = Fleetplan({"simulate", base, "--quiet", "--out", Path("out")});
  EXPECT_EQ(b.code, 3) << b.out << b.err;
  EXPECT_THAT(b.err, HasSubstr("engine.step_model.decode.base: expected a duration of at most 10 s"));
  // 10 s itself is accepted.
  const std::string edge = Write("edge.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n"
                                              "engine:\n  host_overhead: 10s\n" +
                                                  std::string(kStepModel).substr(8) + kWorkload);
  const CliRun e = Fleetplan({"trace", "gen", edge, "-o", Path("t.jsonl"), "--quiet", "--seed", "1"});
  EXPECT_EQ(e.code, 0) << e.err;
}

TEST_F(HardeningAccepts, S8_ReportRefusesClassForRecordsThatNameTheirClasses) {
  const std::string scenario =
      Write("s.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n" +
                          std::string(kStepModel) + kWorkload + "output: {requests: true}\n");
  const CliRun sim = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  ASSERT_EQ(sim.code, 0) << sim.err;
  const std::string records = Path("out/requests.jsonl");
  const CliRun r = Fleetplan({"report", "--records", records, "--class", "foo"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.err, "--class: fleetplan records name each record's class (classes in '" + records +
                       "': default); --class sets the class of records in formats without one (llmservingsim, "
                       "vllm-bench): drop it\n");
  EXPECT_EQ(Fleetplan({"report", "--records", records}).code, 0);
}

TEST_F(HardeningAccepts, S9_LayoutRowsBelowOneIsAUsageError) {
  for (const std::string rows : {"0", "-1"}) {
    const CliRun r =
        Fleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "1x8xh100-sxm-80g", "--quiet", "--rows=" + rows});
    EXPECT_EQ(r.code, 2) << rows << ": " << r.err;
    EXPECT_EQ(r.err, "--rows: expected an integer >= 1, got '" + rows + "'\n");
  }
  EXPECT_EQ(Fleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "1x8xh100-sxm-80g", "--quiet", "--rows", "1"})
                .code,
            0);
  // The same rule on a scenario's workload, before anything is simulated.
  const std::string scenario = Write("s.yaml", "version: 1\nseed: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: "
                                               "h100-sxm-80g}\n" + std::string(kStepModel) + kWorkload);
  const CliRun r = Fleetplan({"layout", "--scenario", scenario, "--quiet", "--rows", "0"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err, "--rows: expected an integer >= 1, got '0'\n");
}

TEST_F(HardeningAccepts, S10_FitAndExpertsRefuseAFormatTheGpuLacksAsLayoutDoes) {
  const std::string gap = "h100-sxm-80g has no native fp4 for the weights (its formats: bf16, fp16, fp32, fp8, int8, int4)";
  const CliRun layout = Fleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "1x8xh100-sxm-80g",
                                   "--weight-dtype", "fp4", "--quiet"});
  EXPECT_EQ(layout.code, 1);
  EXPECT_THAT(layout.out, HasSubstr(gap));
  const CliRun fit = Fleetplan({"fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-80g", "--weight-dtype", "fp4",
                                "--context", "4096"});
  EXPECT_EQ(fit.code, 2) << fit.out;
  EXPECT_EQ(fit.err, "--weight-dtype: " + gap + "\n");
  const CliRun experts = Fleetplan({"experts", "--counts", "10,7,3,1,5,5,2,9", "--ranks", "2", "--model",
                                    "mixtral-8x7b", "--gpu", "h100-sxm-80g", "--weight-dtype", "fp4"});
  EXPECT_EQ(experts.code, 2) << experts.out;
  EXPECT_EQ(experts.err, "--weight-dtype: " + gap + "\n");
  // A scenario is read by the same rule, located at its value.
  const std::string scenario =
      Write("fp4.yaml", "version: 1\nmodel: {name: llama-3.1-8b, weight_dtype: fp4}\nhardware: {gpu: h100-sxm-80g}\n" +
                            std::string(kStepModel) + kWorkload);
  const CliRun sim = Fleetplan({"simulate", scenario, "--quiet", "--out", Path("out")});
  EXPECT_EQ(sim.code, 3);
  EXPECT_THAT(sim.err, StartsWith(scenario + ":2:43: model.weight_dtype: " + gap));
  // A GPU that has fp4 passes.
  EXPECT_EQ(Fleetplan({"fit", "--model", "llama-3.1-8b", "--gpu", "b200-192g", "--weight-dtype", "fp4", "--context", "4096"})
                .code,
            0);
}

TEST_F(HardeningAccepts, S11_PrintScenarioRefusesAFileAndJson) {
  const std::string scenario = Write("s.yaml", "version: 1\n");
  const CliRun file = Fleetplan({"simulate", scenario, "--print-scenario"});
  EXPECT_EQ(file.code, 2);
  EXPECT_EQ(file.out, "");
  EXPECT_THAT(file.err, HasSubstr("--print-scenario prints the built-in Atlas scenario and takes no SCENARIO (got '" +
                                  scenario + "')"));
  const CliRun json = Fleetplan({"simulate", "--print-scenario", "--json"});
  EXPECT_EQ(json.code, 2);
  EXPECT_EQ(json.out, "");
  EXPECT_THAT(json.err, HasSubstr("--print-scenario prints the scenario as YAML"));
  const CliRun plain = Fleetplan({"simulate", "--print-scenario"});
  EXPECT_EQ(plain.code, 0);
  EXPECT_THAT(plain.out, HasSubstr("version: 1"));
}

TEST_F(HardeningAccepts, S13_DuplicateWithoutIsAUsageError) {
  for (const std::string verb : {"layout", "place"}) {
    std::vector<std::string> args = {verb, "--cluster", "2x8xh100-sxm-80g", "--without", "node:n1", "--without",
                                     "node:n1"};
    if (verb == "layout") args.insert(args.end(), {"--model", "llama-3.1-8b", "--quiet"});
    if (verb == "place") args.insert(args.end(), {"--sizes", "1"});
    const CliRun r = Fleetplan(args);
    EXPECT_EQ(r.code, 2) << verb << ": " << r.err;
    EXPECT_EQ(r.err, "--without: 'node:n1' is given twice (each removal once: what is lost is lost)\n") << verb;
  }
}

TEST_F(HardeningAccepts, S13_PlaceCompareFailsWhenAComparedPolicyLeavesAGroupUnplaced) {
  const std::string requests = Write("requests.yaml",
                                     "allocations:\n  - {name: svc, gpus: [n0/0, n0/1]}\nrequests:\n"
                                     "  - {name: one-a, gpus: 1}\n  - {name: one-b, gpus: 1}\n  - {name: four, gpus: 4}\n");
  const CliRun r = Fleetplan({"place", "--cluster", "2x4xh100-sxm-80g", "--requests", requests, "--compare"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("Policy tight: 3 placed, 0 unplaced"));
  EXPECT_EQ(r.err, "fleetplan place: policy most-free left 1 of 3 group(s) unplaced\n");
  // Without --compare the chosen policy alone decides.
  EXPECT_EQ(Fleetplan({"place", "--cluster", "2x4xh100-sxm-80g", "--requests", requests}).code, 0);
}

}  // namespace
}  // namespace fleetplan::cli
