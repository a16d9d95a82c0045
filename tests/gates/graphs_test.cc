// The graphs gate: per-batch eager and graph step times, the distribution's figures, the
// bucket proposal under a memory budget, and holds on missing evidence.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/gates/graphs.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kIdentity =
    "identity: {artifact: 'sha256:m1', runtime: vllm, runtime_version: 0.6.3, hardware: h100-sxm-80g, "
    "engine_config: 'sha256:e1'}\n";

std::string Spec(const std::string& budget = "1GiB", const std::string& batches = "{1: 0.5, 3: 0.3, 20: 0.2}") {
  return std::string(kIdentity) + "batches: " + batches + "\n" +
         "buckets: [1, 4, 8]\n"
         "eager_cpu: 4ms\n"
         "graph_cpu: 0.3ms\n"
         "graph_dispatch: 0.1ms\n"
         "gpu: {1: 6ms, 4: 6.6ms, 8: 7ms, 32: 9ms}\n"
         "graph_memory: 100MiB\n"
         "memory_budget: " + budget + "\n"
         "capture_time: 0.5s\n";
}

Expected<GraphsSpec> Read(const std::string& text) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(text, "graphs.yaml");
  if (!doc.ok()) return doc.status();
  return ReadGraphsSpec(doc->root(), "graphs.yaml");
}

GraphsGateResult Gate(const std::string& text) {
  Expected<GraphsSpec> spec = Read(text);
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? RunGraphsGate(*spec) : GraphsGateResult{};
}

TEST(GraphsGate, StepTimesPerBatchArePinned) {
  const GraphsGateResult r = Gate(Spec());
  const Json j = ToJson(r);
  // b=1: bucket 1, eager 4 + 6 = 10, graph 0.3 + 0.1 + 6 = 6.4.
  // b=3: bucket 4 (1 padded slot), eager 4 + gpu(3) = 4 + 6.4 = 10.4, graph 0.4 + 6.6 = 7.
  // b=20: above the largest bucket: eager 4 + gpu(20) = 4 + 8 = 12.
  EXPECT_EQ(j["per_batch"], Json::parse(R"([
    {"batch": 1, "share": 0.5, "bucket": 1, "eager_ms": 10.0, "graph_ms": 6.4, "padded_slots": 0},
    {"batch": 3, "share": 0.3, "bucket": 4, "eager_ms": 10.4, "graph_ms": 7.0, "padded_slots": 1},
    {"batch": 20, "share": 0.2, "bucket": null, "eager_ms": 12.0, "graph_ms": null, "padded_slots": 0}])"));
  EXPECT_EQ(j["expected_step_ms"], 7.7);         // 0.5 x 6.4 + 0.3 x 7 + 0.2 x 12
  EXPECT_EQ(j["eager_expected_step_ms"], 10.52);  // 0.5 x 10 + 0.3 x 10.4 + 0.2 x 12
  EXPECT_EQ(j["bucket_hit_rate"], 0.8);
  EXPECT_EQ(j["fallback_rate"], 0.2);
  EXPECT_EQ(j["padding_ratio"], 0.176470588);    // 0.3 x 1 / (0.5 x 1 + 0.3 x 4)
  EXPECT_EQ(j["graph_memory_bytes"], 3 * 100 * 1024 * 1024);
  EXPECT_EQ(j["compile"]["candidate_s"], 1.5);   // reported apart from the steady state
  EXPECT_EQ(j["decision"], "pass");
}

TEST(GraphsGate, TheProposalFillsFrequentCostlyGapsWithinTheBudget) {
  // Unlimited by memory: every size of the distribution gets its own bucket (6.92 ms).
  EXPECT_EQ(ToJson(Gate(Spec()))["proposed_buckets"], Json::parse("[1, 3, 20]"));
  EXPECT_EQ(ToJson(Gate(Spec()))["proposed"]["expected_step_ms"], 6.92);
  // Room for two graphs: the frequent gap at 3 first (7.84), then 20 (7.12); batch 1 pads to 3.
  EXPECT_EQ(ToJson(Gate(Spec("250MiB")))["proposed_buckets"], Json::parse("[3, 20]"));
  // Room for one: 3; the rare 20 falls back to eager.
  const Json one = ToJson(Gate(Spec("150MiB")));
  EXPECT_EQ(one["proposed_buckets"], Json::parse("[3]"));
  EXPECT_EQ(one["proposed"]["fallback_rate"], 0.2);
}

// The greedy proposal as first written: every trial set evaluated whole (cubic).
std::vector<int64_t> ReferenceProposal(const GraphsSpec& spec) {
  std::vector<int64_t> candidates;
  for (const auto& [b, share] : spec.batches) {
    if (spec.gpu_ms.At(b) && spec.graph_memory_bytes.At(b)) candidates.push_back(b);
  }
  std::vector<int64_t> chosen;
  double best = EvaluateBuckets(spec, chosen).expected_step_ms;
  while (true) {
    std::optional<int64_t> pick;
    double pick_ms = best;
    for (int64_t c : candidates) {
      if (std::binary_search(chosen.begin(), chosen.end(), c)) continue;
      std::vector<int64_t> trial = chosen;
      trial.insert(std::lower_bound(trial.begin(), trial.end(), c), c);
      const GraphsEvaluation e = EvaluateBuckets(spec, trial);
      if (e.graph_memory_bytes > spec.memory_budget.count() || !e.uncovered.empty()) continue;
      if (e.expected_step_ms < pick_ms - 1e-12) {
        pick_ms = e.expected_step_ms;
        pick = c;
      }
    }
    if (!pick) break;
    chosen.insert(std::lower_bound(chosen.begin(), chosen.end(), *pick), *pick);
    best = pick_ms;
  }
  return chosen;
}

// Regression: the proposal evaluated every trial set whole, so a 1,000-size histogram
// took 15 s. It is the same greedy, incremental.
TEST(GraphsGate, TheProposalIsTheGreedyOneAndLinearInTheBucketsItPicks) {
  const std::string kGpu = "gpu: {1: 6ms, 4: 6.6ms, 8: 7ms, 32: 9ms}";
  std::string batches = "{";
  for (int b = 1; b <= 40; ++b) batches += fmt::format("{}{}: {}", b == 1 ? "" : ", ", b * 3, (b * 7919) % 13 + 1);
  batches += "}";
  for (const char* budget : {"150MiB", "350MiB", "1GiB", "10GiB"}) {
    std::string text = Spec(budget, batches);
    text.replace(text.find(kGpu), kGpu.size(), "gpu: {1: 6ms, 4: 6.6ms, 8: 7ms, 32: 9ms, 64: 12ms, 128: 20ms}");
    const Expected<GraphsSpec> spec = Read(text);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    EXPECT_EQ(ProposeBuckets(*spec), ReferenceProposal(*spec)) << budget;
  }
  std::string large = Spec("100GiB", "{1-1000: 1}");
  large.replace(large.find(kGpu), kGpu.size(), "gpu: {1: 6ms, 1000: 40ms}");
  const Expected<GraphsSpec> spec = Read(large);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int64_t> proposed = ProposeBuckets(*spec);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(proposed.size(), 1000u);  // unlimited memory: every size its own bucket
}

TEST(GraphsGate, OverTheMemoryBudgetFailsWithTheProposalAsNearestPassing) {
  const GraphsGateResult r = Gate(Spec("250MiB"));
  EXPECT_EQ(r.decision, GateDecision::kFail);
  const GateCheck& mem = r.checks[1];
  EXPECT_EQ(mem.name, "memory");
  EXPECT_EQ(mem.reason, "graphs take 300 MiB, over the 250 MiB budget");
  EXPECT_EQ(mem.nearest_passing, "buckets [3, 20] (7.12 ms expected step, 200 MiB)");
}

TEST(GraphsGate, MissingEvidenceHolds) {
  std::string text = Spec();
  text.erase(0, std::string(kIdentity).size());
  EXPECT_EQ(Gate(text).decision, GateDecision::kHold);
  // Batch 40 is beyond the measured GPU table (up to 32): hold, never extrapolate.
  const GraphsGateResult r = Gate(Spec("1GiB", "{1: 0.5, 40: 0.5}"));
  EXPECT_EQ(r.decision, GateDecision::kHold);
  EXPECT_EQ(r.checks[1].reason, "the gpu (or graph_memory) table does not cover batch 40: measure it");
}

TEST(GraphsGate, RangesSpreadTheirShare) {
  Expected<GraphsSpec> spec = Read(Spec("1GiB", "{1: 2, 2-4: 6}"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->batches.size(), 4u);
  EXPECT_DOUBLE_EQ(spec->batches[0].second, 0.25);  // shares are normalised
  EXPECT_DOUBLE_EQ(spec->batches[1].second, 0.25);
  EXPECT_EQ(spec->batches[3].first, 4);
}

// As dashboards export a histogram: ranges with percent shares, a size inside a range
// given on its own.
TEST(GraphsGate, PercentSharesAndSizesInsideRangesAsDashboardsExportThem) {
  Expected<GraphsSpec> spec = Read(Spec("1GiB", "{\"1\": 8%, \"2-4\": 17%, \"5-8\": 25%, \"9-16\": 50%}"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->batches.size(), 16u);
  EXPECT_DOUBLE_EQ(spec->batches[0].second, 0.08);
  EXPECT_NEAR(spec->batches[1].second, 0.17 / 3, 1e-12);
  EXPECT_NEAR(spec->batches[15].second, 0.50 / 8, 1e-12);
  // Size 3 takes 10% of its range's 17%; sizes 2 and 4 share the other 7%.
  spec = Read(Spec("1GiB", "{1: 8%, 2-4: 17%, 3: 10%, 5-8: 75%}"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_NEAR(spec->batches[1].second, 0.035, 1e-12);
  EXPECT_NEAR(spec->batches[2].second, 0.10, 1e-12);
  EXPECT_NEAR(spec->batches[3].second, 0.035, 1e-12);
  double total = 0;
  for (const auto& [b, share] : spec->batches) total += share;
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(GraphsGate, InputErrorsAreLocated) {
  Expected<GraphsSpec> bad = Read(Spec("1GiB", "{1: 0.5, 4-2: 0.5}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("batches.4-2: expected a range low-high with low <= high, got '4-2'"));
  bad = Read(Spec("1GiB", "{1-4: 0.5, 3-5: 0.5}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("batches.3-5: batch size 3 is in two ranges"));
  bad = Read(Spec("1GiB", "{1-4: 20%, 3: 50%}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("the sizes of range 1-4 given on their own take 0.5, more than the "
                                                "range's 0.2"));
  bad = Read(Spec("1GiB", "{1: 8%, 2-4: 120%}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("expected a share between 0% and 100% (or a number), got '120%'"));
  bad = Read(Spec("1GiB", "{one: 1}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("expected a batch size between 1 and 65536"));
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

// `batches_from`: the histogram of a simulation's decode-only steps (report.json
// engine.decode_batches), here from a run of a small fleet in this process.
std::string SimulatedReport(const std::string& dir) {
  const std::string scenario =
      "version: 1\nname: graphs-source\nseed: 5\n"
      "model: {name: llama-3.1-8b, max_context: 8192}\n"
      "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 1}\n"
      "deployment: {replicas: 1, tp: 1}\n"
      "engine:\n  scheduler: {policy: decode-first, max_batched_tokens: 8192, max_running: 64}\n"
      "workload:\n  requests: 120\n  arrival: {process: poisson, rate: 10/s}\n"
      "  classes:\n    chat: {share: 1.0, prompt: [{segment: unique, tokens: 200}], output_tokens: {uniform: [20, 200]}}\n";
  auto s = LoadScenarioText(scenario, "graphs-source.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.write_files = false;
  auto r = RunScenario(*s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  const std::string path = dir + "/report.json";
  EXPECT_TRUE(WriteFileAtomic(path, *PrettyJson(r->report)).ok());
  return path;
}

Expected<GraphsSpec> ReadAt(const std::string& text, const std::string& file) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(text, file);
  if (!doc.ok()) return doc.status();
  return ReadGraphsSpec(doc->root(), file);
}

TEST(GraphsGate, TheHistogramComesFromASimulationsDecodeBatches) {
  const std::string dir = ::testing::TempDir() + "/graphs-from-report";
  std::filesystem::create_directories(dir);
  const std::string report = SimulatedReport(dir);
  const Json j = Json::parse(*ReadFile(report));
  const Json& batches = j["engine"]["decode_batches"];
  ASSERT_FALSE(batches.empty());
  double steps = 0;
  for (const Json& row : batches) steps += row[1].get<double>();
  // Relative to the spec file: report.json beside graphs.yaml.
  std::string text = Spec();
  text.replace(text.find("batches: {1: 0.5, 3: 0.3, 20: 0.2}"), 34, "batches_from: report.json");
  text.replace(text.find("gpu: {1: 6ms, 4: 6.6ms, 8: 7ms, 32: 9ms}"), 40, "gpu: {1: 6ms, 4: 6.6ms, 8: 7ms, 64: 11ms}");
  auto spec = ReadAt(text, dir + "/graphs.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->batches.size(), batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(spec->batches[i].first, batches[i][0].get<int64_t>());
    EXPECT_DOUBLE_EQ(spec->batches[i].second, batches[i][1].get<double>() / steps);
  }
  const GraphsGateResult r = RunGraphsGate(*spec);
  EXPECT_EQ(r.batches_from, "report.json");
  EXPECT_EQ(ToJson(r)["batches_from"], "report.json");
  EXPECT_EQ(ToJson(r)["per_batch"].size(), batches.size());
}

TEST(GraphsGate, ASimulatedHistogramMustBeASimulationReport) {
  const std::string dir = ::testing::TempDir() + "/graphs-bad-report";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomic(dir + "/not-a-report.json", "{\"points\": []}").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/idle.json",
                              "{\"fleetplan_version\": \"x\", \"engine\": {\"decode_batches\": []}}")
                  .ok());
  const auto message = [&](const std::string& batches) {
    std::string text = Spec();
    text.replace(text.find("batches: {1: 0.5, 3: 0.3, 20: 0.2}"), 34, batches);
    auto spec = ReadAt(text, dir + "/graphs.yaml");
    EXPECT_FALSE(spec.ok()) << batches;
    return spec.ok() ? std::string() : spec.status().message();
  };
  EXPECT_THAT(message("batches_from: not-a-report.json"), HasSubstr("is not a simulation report"));
  EXPECT_THAT(message("batches_from: idle.json"), HasSubstr("ran no decode-only step"));
  EXPECT_THAT(message("batches_from: missing.json"), HasSubstr("missing.json"));
  EXPECT_THAT(message("batches: {1: 1}\nbatches_from: idle.json"), HasSubstr("not both"));
  EXPECT_THAT(message("batches_from: idle.json"), HasSubstr("graphs.yaml:"));
}

}  // namespace
}  // namespace fleetplan
