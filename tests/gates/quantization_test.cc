// The quantization gate: the support table's fallback, independent gates per candidate,
// paired regression (aggregate and each protected slice), McNemar, holds on missing
// evidence, and the report naming which candidate advances and why.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/catalog/quant_support.h"
#include "fleetplan/gates/quantization.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// n items, the first `passed` pass.
std::string Items(int n, int passed) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i < passed ? 1 : 0);
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string Identity(const std::string& artifact, const std::string& hw = "a100-80g") {
  return fmt::format("{{artifact: '{}', runtime: vllm, runtime_version: 0.6.4, hardware: {}, engine_config: "
                     "'sha256:e1'}}",
                     artifact, hw);
}

std::string Arm(const std::string& name, const std::string& method, const std::string& weight, int mmlu, int tool,
                const std::string& serving, const std::string& identity) {
  return fmt::format(
      "  name: {}\n  method: {}\n  identity: {}\n"
      "  tasks: {{mmlu: {{items: {}}}}}\n  slices: {{tool_call_validity: {{items: {}}}}}\n"
      "  serving: {}\n"
      "  fit: {{model: llama-3.1-8b, gpu: a100-80g, tp: 1, context: 8192, concurrency: 16, weight_dtype: {}}}\n",
      name, method, identity, Items(200, mmlu), Items(200, tool), serving, weight);
}

// An arm as a sequence element: two more spaces of indent.
std::string Item(const std::string& arm) {
  std::string out;
  size_t pos = 0;
  while (pos < arm.size()) {
    const size_t end = arm.find('\n', pos);
    out += "  " + arm.substr(pos, end - pos + 1);
    pos = end + 1;
  }
  return out;
}

std::string Spec(int w4_mmlu = 153, int w4_tool = 196, const std::string& w4_identity = Identity("sha256:w4")) {
  return "policy:\n"
         "  target: {gpu: a100-80g, runtime: vllm, runtime_version: 0.6.4}\n"
         "  min_quality: {mmlu: 0.7}\n"
         "  max_regression: 0.05\n"
         "  protected_slices: {tool_call_validity: 0.03}\n"
         "  max_ttft: 300ms\n  max_itl: 30ms\n  min_throughput: 2000\n"
         "baseline:\n" +
         Arm("bf16", "bf16", "bf16", 156, 198, "{ttft: 200ms, itl: 25ms, throughput: 2100}", Identity("sha256:b")) +
         "candidates:\n"
         "  -\n" +
         Item(Arm("fp8-w8a8", "fp8", "fp8", 156, 198, "{ttft: 150ms, itl: 18ms, throughput: 2900}",
                  Identity("sha256:f8"))) +
         "  -\n" +
         Item(Arm("w4a16", "w4a16", "int4", w4_mmlu, w4_tool, "{ttft: 160ms, itl: 15ms, throughput: 3100}",
                  w4_identity));
}

QuantGateResult Gate(const std::string& text) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(text, "gate.yaml");
  EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.status().message());
  if (!doc.ok()) return {};
  Expected<QuantSpec> spec = ReadQuantSpec(doc->root(), "gate.yaml");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? RunQuantizationGate(*spec, 1) : QuantGateResult{};
}

const GateCheck& CheckNamed(const QuantCandidateResult& c, const std::string& name) {
  for (const GateCheck& g : c.checks) {
    if (g.name == name) return g;
  }
  static const GateCheck none;
  ADD_FAILURE() << "no check " << name;
  return none;
}

TEST(QuantSupport, Fp8OnAmpereFallsBackToWeightOnly) {
  EXPECT_EQ(GpuGeneration("a100-80g"), "ampere");
  EXPECT_EQ(GpuGeneration("h100-sxm-80g"), "hopper");
  EXPECT_EQ(GpuGeneration("mi300x"), std::nullopt);
  const QuantSupportRow* row = FindQuantSupport("fp8", "ampere", "vllm");
  ASSERT_NE(row, nullptr);
  EXPECT_STREQ(row->support, "fallback");
  EXPECT_STREQ(row->falls_back_to, "weight-only fp8 (W8A16, FP8 Marlin)");
  EXPECT_STREQ(FindQuantSupport("fp8", "hopper", "vllm")->support, "native");
  EXPECT_EQ(FindQuantSupport("fp8", "ampere", "sglang"), nullptr);
  EXPECT_LT(CompareVersions("0.6.3", "0.6.4"), 0);
  EXPECT_GT(CompareVersions("0.10.0", "0.9.2"), 0);
  EXPECT_EQ(CompareVersions("0.6.4", "0.6.4"), 0);
}

TEST(QuantizationGate, StrongQualityOnUnsupportedHardwareLosesToGoodServing) {
  const QuantGateResult r = Gate(Spec());
  ASSERT_EQ(r.candidates.size(), 2u);
  const QuantCandidateResult& fp8 = r.candidates[0];
  const QuantCandidateResult& w4 = r.candidates[1];
  // FP8: same quality as the baseline, great serving numbers, but on Ampere it runs
  // weight-only: the hardware gate fails on its own, the others still report.
  EXPECT_EQ(fp8.decision, GateDecision::kFail);
  EXPECT_EQ(CheckNamed(fp8, "hardware").decision, GateDecision::kFail);
  EXPECT_EQ(CheckNamed(fp8, "hardware").reason,
            "fp8 on a100-80g (ampere) falls back to weight-only fp8 (W8A16, FP8 Marlin): the measured fp8 path does "
            "not run there");
  EXPECT_EQ(CheckNamed(fp8, "hardware").nearest_passing, "a GPU of generation hopper or ada");
  EXPECT_EQ(CheckNamed(fp8, "regression.aggregate").decision, GateDecision::kPass);
  EXPECT_EQ(CheckNamed(fp8, "ttft").decision, GateDecision::kPass);
  // W4A16: 1.5 points lower on mmlu (0.765 vs 0.78), the interval within the 5-point
  // margin; serves well.
  EXPECT_EQ(w4.decision, GateDecision::kPass) << ToText(r);
  EXPECT_THAT(r.advance, ElementsAre("w4a16"));
  EXPECT_THAT(ToText(r), HasSubstr("advance to staging: w4a16"));
}

TEST(QuantizationGate, AnAcceptableAggregateCannotHideASlice) {
  // Same mmlu as the baseline, but tool-call validity drops from 0.99 to 0.90.
  const QuantGateResult r = Gate(Spec(156, 180));
  const QuantCandidateResult& w4 = r.candidates[1];
  EXPECT_EQ(CheckNamed(w4, "regression.aggregate").decision, GateDecision::kPass);
  EXPECT_EQ(CheckNamed(w4, "regression.tool_call_validity").decision, GateDecision::kFail);
  EXPECT_EQ(w4.decision, GateDecision::kFail);
  const Json n = CheckNamed(w4, "regression.tool_call_validity").numbers;
  EXPECT_EQ(n["drop"], 0.09);
  EXPECT_EQ(n["mcnemar"]["b"], 18);
  EXPECT_EQ(n["mcnemar"]["c"], 0);
  EXPECT_EQ(n["mcnemar"]["method"], "exact");
}

TEST(QuantizationGate, AnIntervalStraddlingTheMarginHolds) {
  // mmlu 0.78 -> 0.72: drop 0.06, and 200 items cannot tell it from the 0.05 margin.
  const QuantGateResult r = Gate(Spec(144));
  EXPECT_EQ(CheckNamed(r.candidates[1], "regression.aggregate").decision, GateDecision::kHold);
}

TEST(QuantizationGate, UnidentifiedOrOffTargetEvidenceHolds) {
  const QuantGateResult r = Gate(Spec(153, 196, "{artifact: 'sha256:w4'}"));
  EXPECT_EQ(r.candidates[1].decision, GateDecision::kHold);
  EXPECT_TRUE(r.advance.empty());
  const QuantGateResult off = Gate(Spec(153, 196, Identity("sha256:w4", "h100-sxm-80g")));
  EXPECT_EQ(CheckNamed(off.candidates[1], "ttft").decision, GateDecision::kHold);
  EXPECT_EQ(CheckNamed(off.candidates[1], "ttft").reason, "measured on h100-sxm-80g, the target is a100-80g");
}

TEST(QuantizationGate, McNemarExactAndContinuityCorrected) {
  EXPECT_DOUBLE_EQ(McNemarP(0, 0), 1.0);
  EXPECT_NEAR(McNemarP(0, 5), 2.0 / 32, 1e-12);             // exact: 2 x 0.5^5
  EXPECT_NEAR(McNemarP(2, 8), 2 * 56.0 / 1024, 1e-12);      // exact: 2 x (1 + 10 + 45) / 2^10
  EXPECT_NEAR(McNemarP(10, 30), std::erfc(std::sqrt(9.025 / 2)), 1e-12);  // (|10-30|-1)^2/40 = 9.025
}

TEST(QuantizationGate, ErrorsAreLocated) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(
      "policy: {target: {gpu: a100-80g, runtime: vllm, runtime_version: 0.6.4}, max_regression: 0.05}\n"
      "baseline: {name: b, method: bf16, tasks: {mmlu: {items: [1, 2]}}}\n"
      "candidates: [{name: c, method: fp8}]\n",
      "gate.yaml");
  ASSERT_TRUE(doc.ok());
  Expected<QuantSpec> spec = ReadQuantSpec(doc->root(), "gate.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr("gate.yaml:2:61: baseline.tasks.mmlu.items[1]: expected 0 (failed) or 1 (passed), got 2"));
}

}  // namespace
}  // namespace fleetplan
