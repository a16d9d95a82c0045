// The kernel gate: the step-saving arithmetic, each level's own verdict, holds on missing
// evidence, the conditional (per-shape) decision and the workload level simulated both ways.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/gates/kernel.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kIdentity =
    "identity: {artifact: 'sha256:k1', runtime: vllm, runtime_version: 0.6.3, hardware: h100-sxm-80g, "
    "engine_config: 'sha256:e1'}\n";
constexpr const char* kCorrectness =
    "  correctness: {single_token_decode: pass, non_multiple_context: pass, partial_pages: pass,\n"
    "                empty_sequences: pass, mask_boundaries: pass, tolerance: pass}\n";

Expected<KernelSpec> Read(const std::string& text, const std::string& dir = ".") {
  Expected<YamlDocument> doc = YamlDocument::LoadString(text, "kernel.yaml");
  if (!doc.ok()) return doc.status();
  return ReadKernelSpec(doc->root(), "kernel.yaml", dir);
}

KernelGateResult Gate(const std::string& text) {
  Expected<KernelSpec> spec = Read(text);
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? RunKernelGate(*spec) : KernelGateResult{};
}

std::string Full(const std::string& isolated_extra = "", const std::string& step = "{time: 5.0ms, op_time: 2.0ms, added: 0.3ms}") {
  return std::string(kIdentity) + "isolated:\n  time_saved: 22%\n" + kCorrectness + isolated_extra + "step: " + step + "\n";
}

TEST(KernelGate, StepSavingArithmeticIsPinned) {
  // The op is 2.0 of a 5.0 ms step (40%); 22% less op time saves at most 0.44 ms; the
  // kernel adds 0.3 ms of work, so the step saves 0.14 ms = 2.8%.
  const KernelStepFigures f = StepFigures({5.0, 2.0, 0.3}, 0.22);
  EXPECT_DOUBLE_EQ(f.op_share_pct, 40.0);
  EXPECT_DOUBLE_EQ(f.max_saving_ms, 0.44);
  EXPECT_DOUBLE_EQ(f.net_saving_ms, 0.44 - 0.3);
  EXPECT_DOUBLE_EQ(f.speedup_pct, 100 * (0.44 - 0.3) / 5.0);
  const Json j = ToJson(Gate(Full()));
  EXPECT_EQ(j["step"]["max_saving_ms"], 0.44);
  EXPECT_EQ(j["step"]["net_saving_ms"], 0.14);
  EXPECT_EQ(j["step"]["speedup_pct"], 2.8);
  EXPECT_EQ(j["isolated"]["verdict"], "pass");
  EXPECT_EQ(j["step"]["verdict"], "pass");
  EXPECT_EQ(j["workload"]["verdict"], nullptr);
  EXPECT_EQ(j["decision"], "pass");
  EXPECT_EQ(j["advance_to"], "staging");
}

TEST(KernelGate, TheContractExampleWithoutCorrectnessEvidenceHolds) {
  const KernelGateResult r = Gate("isolated: {time_saved: 22%}\nstep: {time: 5.0ms, op_time: 2.0ms, added: 0.3ms}\n");
  EXPECT_EQ(r.isolated.verdict, GateDecision::kHold);
  EXPECT_EQ(r.step.verdict, GateDecision::kHold);  // unidentified
  EXPECT_EQ(r.decision, GateDecision::kHold);
  EXPECT_EQ(ExitCode(r), 1);
  EXPECT_EQ(r.isolated.checks[1].reason,
            "no declared outcome for: single_token_decode, non_multiple_context, partial_pages, empty_sequences, "
            "mask_boundaries, tolerance");
  EXPECT_EQ(ToJson(r)["step"]["net_saving_ms"], 0.14);  // the numbers are still reported
}

TEST(KernelGate, LevelsAreIndependent) {
  // A declared correctness failure fails the isolated level; the step level still reports
  // its own (passing) verdict, and the decision is a reasoned fail.
  std::string text = Full();
  text.replace(text.find("partial_pages: pass"), 19, "partial_pages: fail");
  const KernelGateResult r = Gate(text);
  EXPECT_EQ(r.isolated.verdict, GateDecision::kFail);
  EXPECT_EQ(r.step.verdict, GateDecision::kPass);
  EXPECT_EQ(r.decision, GateDecision::kFail);
  EXPECT_EQ(ExitCode(r), 0);
  EXPECT_EQ(r.isolated.checks[1].reason, "declared failing: partial_pages");
}

TEST(KernelGate, AddedWorkAboveTheSavingFailsWithTheNearestPassingValues) {
  const KernelGateResult r = Gate(Full("", "{time: 5.0ms, op_time: 2.0ms, added: 0.5ms}"));
  EXPECT_EQ(r.isolated.verdict, GateDecision::kPass);
  EXPECT_EQ(r.step.verdict, GateDecision::kFail);
  const GateCheck& c = r.step.checks.back();
  EXPECT_EQ(c.reason, "at most 0.44 ms (op share 40% x 22% saved), less 0.5 ms added = -0.06 ms (-1.2% of the 5 ms "
                      "step); the policy needs > 0%");
  EXPECT_EQ(c.nearest_passing, "time_saved > 25%, or added < 0.44 ms");
}

TEST(KernelGate, MissingAddedWorkHolds) {
  const KernelGateResult r = Gate(Full("", "{time: 5.0ms, op_time: 2.0ms}"));
  EXPECT_EQ(r.step.verdict, GateDecision::kHold);
  EXPECT_THAT(r.step.checks.back().reason, HasSubstr("no measured added work"));
}

TEST(KernelGate, PolicyThresholdsAreRequirements) {
  const KernelGateResult r = Gate(std::string("policy: {min_op_saving: 25%, min_step_saving: 2%}\n") + Full());
  EXPECT_EQ(r.isolated.verdict, GateDecision::kFail);
  EXPECT_EQ(r.isolated.checks.back().nearest_passing, "time_saved >= 25%");
  EXPECT_EQ(r.step.verdict, GateDecision::kPass);  // 2.8% >= 2%
}

TEST(KernelGate, TheDecisionIsConditionalOnShapes) {
  const KernelGateResult r = Gate(Full() +
                                  "shapes:\n"
                                  "  - {name: decode-b1-ctx4k, time_saved: 30%}\n"
                                  "  - {name: decode-b64-ctx32k, time_saved: 10%}\n"
                                  "  - {name: prefill-8k, time_saved: 25%, step: {time: 40ms, op_time: 10ms, added: 1ms}}\n");
  // 30% of 2 ms = 0.6 > 0.3 added; 10% = 0.2 < 0.3; 25% of 10 ms = 2.5 > 1 ms.
  EXPECT_EQ(r.decision, GateDecision::kPass);
  EXPECT_THAT(r.enable, ElementsAre("decode-b1-ctx4k", "prefill-8k"));
  EXPECT_THAT(r.disable, ElementsAre("decode-b64-ctx32k"));
  const Json j = ToJson(r);
  EXPECT_EQ(j["shapes"][1]["verdict"], "fail");
  const KernelGateResult none = Gate(Full() + "shapes:\n  - {name: big, time_saved: 5%}\n");
  EXPECT_EQ(none.decision, GateDecision::kFail);
  EXPECT_TRUE(none.enable.empty());
}

// The docs' kernel with `time_saved: -22%` failed its isolated and step levels, then the
// per-shape savings decided "pass ... advance to staging".
TEST(KernelGate, AFailedLevelFailsTheKernelWhateverItsShapesSave) {
  const std::string shapes =
      "shapes:\n"
      "  - {name: decode-b1-ctx4k, time_saved: 30%}\n"
      "  - {name: prefill-8k, time_saved: 25%, step: {time: 40ms, op_time: 10ms, added: 1ms}}\n";
  std::string negative = Full() + shapes;
  negative.replace(negative.find("time_saved: 22%"), 15, "time_saved: -22%");
  const KernelGateResult r = Gate(negative);
  EXPECT_EQ(r.isolated.verdict, GateDecision::kFail);
  EXPECT_EQ(r.step.verdict, GateDecision::kFail);
  EXPECT_EQ(r.decision, GateDecision::kFail);
  EXPECT_TRUE(r.enable.empty());
  EXPECT_EQ(ToJson(r)["advance_to"], nullptr);
  EXPECT_THAT(ToText(r), HasSubstr("decision: fail\n"));
  // The step level alone failing (added work above the saving) fails it too.
  const KernelGateResult step = Gate(Full("", "{time: 5.0ms, op_time: 2.0ms, added: 0.5ms}") + shapes);
  EXPECT_EQ(step.isolated.verdict, GateDecision::kPass);
  EXPECT_EQ(step.step.verdict, GateDecision::kFail);
  EXPECT_EQ(step.decision, GateDecision::kFail);
  // With both levels passing the shapes still decide.
  EXPECT_EQ(Gate(Full() + shapes).decision, GateDecision::kPass);
}

TEST(KernelGate, InputErrorsAreLocated) {
  Expected<KernelSpec> bad = Read("isolated: {time_saved: 22}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("kernel.yaml:1:24: isolated.time_saved: expected a percentage like 22%, got '22'"));
  bad = Read("step: {time: 1ms, op_time: 2ms, added: 0ms}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("step.op_time: the op's time (2 ms) cannot exceed the step's (1 ms)"));
  bad = Read("isolated: {correctness: {tolerance: ok}}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("isolated.correctness.tolerance: expected `pass` or `fail`"));
  bad = Read("steps: {}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown field 'steps'; did you mean 'step'?"));
}

// A small fleet whose KV is tight: a larger page size wastes more of each sequence's last
// block, so fewer sequences fit and goodput can move.
constexpr const char* kScenario = R"(version: 1
name: kernel-workload
seed: 5
model: {name: llama-3.1-8b, max_context: 8192}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 1}
deployment: {replicas: 1, tp: 1}
engine:
  scheduler: {policy: decode-first, max_batched_tokens: 4096, max_running: 32}
  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.03ms}, decode: {base: 8ms, per_seq: 0.1ms}}
  prefix_cache: {enabled: true}
workload:
  requests: 120
  arrival: {process: poisson, rate: 20/s}
  classes:
    chat:
      share: 1.0
      prompt:
        - {segment: system, tokens: 1000}
        - {segment: unique, tokens: {uniform: [50, 300]}}
      output_tokens: {uniform: [10, 40]}
slo:
  chat: {ttft: 400ms}
)";

class KernelWorkload : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(Dir() + "/scenario.yaml") << kScenario; }
  static std::string Dir() { return ::testing::TempDir(); }
};

TEST_F(KernelWorkload, SimulatesTheScenarioBothWaysAndGoodputDecides) {
  const std::string text = Full() +
                           "workload:\n"
                           "  scenario: scenario.yaml\n"
                           "  candidate: {block_tokens: 32, step_model: {kind: affine, prefill: {base: 5ms, per_token: "
                           "0.02ms}, decode: {base: 7ms, per_seq: 0.1ms}}}\n";
  Expected<KernelSpec> spec = Read(text, Dir());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_TRUE(spec->baseline && spec->candidate);
  EXPECT_EQ(spec->baseline->block_tokens, 16);
  EXPECT_EQ(spec->candidate->block_tokens, 32);
  EXPECT_EQ(spec->baseline->requests, 120);
  // The KV bytes are the same; pages of 32 tokens halve the block count.
  EXPECT_EQ(spec->candidate->kv_blocks, spec->baseline->kv_blocks / 2);
  const KernelGateResult r = RunKernelGate(*spec);
  ASSERT_TRUE(r.workload.verdict.has_value());
  const bool better = spec->candidate->goodput_rps >= spec->baseline->goodput_rps;
  EXPECT_EQ(*r.workload.verdict, better ? GateDecision::kPass : GateDecision::kFail);
  const Json j = ToJson(r);
  EXPECT_EQ(j["workload"]["candidate_changes"]["block_tokens"], 32);
  EXPECT_TRUE(j["workload"]["baseline"].contains("kv_capacity_tokens"));
  // Deterministic: the same file gives the same report.
  Expected<KernelSpec> again = Read(text, Dir());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ToJson(RunKernelGate(*again)), j);
}

TEST_F(KernelWorkload, AStricterGoodputPolicyFailsWithTheNeededGoodput) {
  const std::string text = std::string("policy: {min_goodput_gain: 50%}\n") + Full() +
                           "workload: {scenario: scenario.yaml, candidate: {block_tokens: 16, step_model: {kind: "
                           "affine, prefill: {base: 5ms, per_token: 0.03ms}, decode: {base: 8ms, per_seq: 0.1ms}}}}\n";
  Expected<KernelSpec> spec = Read(text, Dir());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  // The candidate equals the baseline: no gain, and the policy wants +50%.
  EXPECT_EQ(spec->candidate->goodput_rps, spec->baseline->goodput_rps);
  const KernelGateResult r = RunKernelGate(*spec);
  EXPECT_EQ(r.workload.verdict, GateDecision::kFail);
  EXPECT_THAT(r.workload.checks.back().nearest_passing, HasSubstr("candidate goodput >= "));
  EXPECT_EQ(r.decision, GateDecision::kFail);
}

}  // namespace
}  // namespace fleetplan
