// Layouts decided on a workload (plan/workload_layout.h) and the near misses and stated
// operating point of the static search (plan/layout.h).
#include "fleetplan/plan/workload_layout.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/json.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/layout_report.h"

namespace fleetplan {
namespace {

Cluster Short(const std::string& form) {
  Expected<Cluster> c = ParseClusterShortForm(form, Catalog::Builtin());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

LayoutRequest Atlas() {
  LayoutRequest r;
  r.model = *Catalog::Builtin().Model("atlas-70b");
  return r;
}

const FeasibleLayout* Find(const LayoutResult& r, int64_t tp, int64_t pp) {
  for (const FeasibleLayout& f : r.feasible) {
    if (f.layout.tp == tp && f.layout.pp == pp && f.layout.ep == 1) return &f;
  }
  return nullptr;
}

// A short workload of one class at `rate`: the lower the rate, the fewer sequences the
// fleet holds at once.
std::string Scenario(const std::string& rate, const std::string& duration) {
  return "version: 1\n"
         "name: layout-test\n"
         "seed: 7\n"
         "model: {name: atlas-70b, max_context: 8192}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"
         "deployment: {replicas: 2, tp: 4}\n"
         "engine:\n"
         "  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 128}\n"
         // The rates below were chosen against the roofline with no host overhead: these
         // tests are about how layouts are decided, not about the default step model.
         "  step_model: {kind: roofline}\n"
         "  host_overhead: 0ms\n"
         "workload:\n"
         "  duration: " + duration + "\n"
         "  arrival: {process: poisson, rate: " + rate + "}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 1.0\n"
         "      prompt: [{segment: unique, tokens: {uniform: [200, 1200]}}]\n"
         "      output_tokens: {uniform: [50, 250]}\n"
         "slo:\n"
         "  chat: {ttft: 1s, tpot: 60ms}\n"
         "output: {dir: out/layout-test}\n";
}

fleetplan::Scenario Load(const std::string& text) {
  Expected<fleetplan::Scenario> s = LoadScenarioText(text, "layout-test.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

WorkloadLayoutResult Decide(const std::string& text, const std::string& cluster, int64_t top, int jobs = 1,
                            std::vector<StagingInput> staging = {}) {
  WorkloadLayoutRequest q;
  q.simulate_top = top;
  q.jobs = jobs;
  q.staging = std::move(staging);
  Expected<WorkloadLayoutResult> r = DecideLayoutOnWorkload(Load(text), Short(cluster), q);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

TEST(LayoutNearMiss, ALayoutThatHoldsFewerSequencesIsListedWithHowManyFit) {
  LayoutRequest q = Atlas();
  const Cluster c = Short("1x8xh100-sxm-80g");
  // Without near misses (the library default) tp 4 is rejected at 64 × 8192 tokens...
  Expected<LayoutResult> strict = SearchLayouts(q, c);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(Find(*strict, 4, 1), nullptr);
  // ...with them it is kept, timed at what fits, ranked after every layout that fits 64.
  q.keep_near_misses = true;
  Expected<LayoutResult> r = SearchLayouts(q, c);
  ASSERT_TRUE(r.ok());
  const FeasibleLayout* tp4 = Find(*r, 4, 1);
  ASSERT_NE(tp4, nullptr);
  EXPECT_TRUE(tp4->near_miss());
  EXPECT_EQ(tp4->batch_asked, 64);
  EXPECT_EQ(tp4->batch, tp4->max_sequences);
  EXPECT_LT(tp4->batch, 64);
  EXPECT_GT(tp4->batch, 0);
  EXPECT_EQ(tp4->decode.tokens, tp4->batch);
  for (const FeasibleLayout& f : r->feasible) {
    if (!f.near_miss()) {
      EXPECT_LT(f.decode_rank, tp4->decode_rank) << LayoutName(f.layout);
    }
  }
  for (const size_t i : r->decode.close) EXPECT_FALSE(r->feasible[i].near_miss());
  const std::string fits = "fits " + std::to_string(tp4->batch) + " of 64 sequences";
  EXPECT_EQ(NearMissText(*tp4), fits);
  EXPECT_NE(LayoutReportText(*r, c).find("tp 4 × pp 1: " + fits + " at 8192 tokens"), std::string::npos);
  const Json j = LayoutReportJson(*r, c);
  bool listed = false;
  for (const Json& f : j["feasible"]) {
    if (f["tp"] != 4 || f["pp"] != 1) continue;
    listed = true;
    EXPECT_EQ(f["near_miss"]["fits_sequences"], tp4->batch);
    EXPECT_EQ(f["near_miss"]["asked_sequences"], 64);
    EXPECT_EQ(f["near_miss"]["text"], fits);
  }
  EXPECT_TRUE(listed);
  // A layout whose weights do not fit is still rejected: not one sequence fits.
  bool tp1 = false;
  for (const RejectedLayout& x : r->rejected) tp1 = tp1 || (x.layout.tp == 1 && x.layout.pp == 1);
  EXPECT_TRUE(tp1);
}

TEST(LayoutOperatingPoint, TheRankedPointIsStatedInInputs) {
  const Cluster c = Short("1x8xh100-sxm-80g");
  Expected<LayoutResult> r = SearchLayouts(Atlas(), c);
  ASSERT_TRUE(r.ok());
  const Json op = LayoutReportJson(*r, c)["inputs"]["operating_point"];
  EXPECT_EQ(op["rule"], "per-replica");
  EXPECT_EQ(op["batch"], 64);
  EXPECT_EQ(op["context"], 8192);
  EXPECT_EQ(op["prefill_tokens"], 8192);
  EXPECT_EQ(op["text"], "decode 64 sequences per replica at 8192 tokens");
  EXPECT_NE(LayoutReportText(*r, c).find("operating point: decode 64 sequences per replica at 8192 tokens"),
            std::string::npos);
}

TEST(LayoutOperatingPoint, FleetConcurrencySplitsOverTheReplicas) {
  LayoutRequest q = Atlas();
  q.batch_rule = BatchRule::kFleetConcurrency;
  q.fleet_sequences = 33;
  q.context = 2048;
  Expected<LayoutResult> r = SearchLayouts(q, Short("2x8xh100-sxm-80g"));
  ASSERT_TRUE(r.ok());
  const FeasibleLayout* tp8 = Find(*r, 8, 1);
  const FeasibleLayout* tp4 = Find(*r, 4, 1);
  ASSERT_NE(tp8, nullptr);
  ASSERT_NE(tp4, nullptr);
  EXPECT_EQ(tp8->dp, 2);
  EXPECT_EQ(tp8->batch, 17);  // ceil(33 / 2)
  EXPECT_EQ(tp4->dp, 4);
  EXPECT_EQ(tp4->batch, 9);  // ceil(33 / 4)
  q.fleet_sequences = 0;
  EXPECT_EQ(SearchLayouts(q, Short("2x8xh100-sxm-80g")).status().message(),
            "fleet_sequences: expected an integer between 1 and 16777216, got 0");
}

TEST(WorkloadLayout, SimulatesTheTopStaticLayoutsAndRanksThemByGoodputPerGpu) {
  const WorkloadLayoutResult r = Decide(Scenario("4/s", "40s"), "1x8xh100-sxm-80g", 3);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].name, "batch-1");
  EXPECT_EQ(r.points[1].name, "typical");
  EXPECT_EQ(r.points[2].name, "max-throughput");
  EXPECT_GT(r.workload.rate_per_s, 3.0);
  EXPECT_LT(r.workload.rate_per_s, 5.0);
  EXPECT_GE(r.workload.concurrency, 1);
  EXPECT_EQ(r.workload.reference.tp, 4);  // the scenario's own layout
  ASSERT_FALSE(r.simulated.empty());
  ASSERT_TRUE(r.decision.has_value());
  EXPECT_EQ(*r.decision, 0u);
  for (size_t i = 0; i < r.simulated.size(); ++i) {
    const SimulatedLayout& s = r.simulated[i];
    EXPECT_TRUE(s.error.empty()) << s.error;
    EXPECT_EQ(s.simulated_rank, static_cast<int64_t>(i) + 1);
    EXPECT_GE(s.static_rank, 1);
    EXPECT_EQ(s.static_ranks.size(), 3u);
    EXPECT_GT(s.requests, 0);
    EXPECT_EQ(s.gpus, s.dp * s.layout.gpus());
    ASSERT_EQ(s.class_attainment.count("chat"), 1u);
    if (i > 0) {
      EXPECT_GE(r.simulated[i - 1].goodput_per_gpu, s.goodput_per_gpu);
    }
  }
  // Static ranks of the candidates are the typical point's top ranks, in some order.
  std::vector<int64_t> ranks;
  for (const SimulatedLayout& s : r.simulated) ranks.push_back(s.static_rank);
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(ranks[i], static_cast<int64_t>(i) + 1);
  EXPECT_EQ(r.crossovers.size(), r.simulated.size() - 1);
}

TEST(WorkloadLayout, SameInputsGiveByteIdenticalJsonForAnyNumberOfThreads) {
  const std::string text = Scenario("4/s", "30s");
  const Cluster c = Short("1x8xh100-sxm-80g");
  const Expected<std::string> one = CanonicalJson(WorkloadLayoutJson(Decide(text, "1x8xh100-sxm-80g", 3, 1), c));
  const Expected<std::string> three = CanonicalJson(WorkloadLayoutJson(Decide(text, "1x8xh100-sxm-80g", 3, 3), c));
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*one, *three);
}

TEST(WorkloadLayout, MoreCandidatesThanFitSimulatesEveryOneAndSaysSo) {
  const WorkloadLayoutResult r = Decide(Scenario("2/s", "20s"), "1x8xh100-sxm-80g", 64);
  const size_t fit = r.points[r.typical].result.feasible.size();
  EXPECT_EQ(r.simulated.size(), fit);
  const std::string note = "simulate-top 64: " + std::to_string(fit) + " layout(s) fit at the typical point";
  bool said = false;
  for (const std::string& d : r.derived) said = said || d.rfind(note, 0) == 0;
  EXPECT_TRUE(said);
}

// On one 8-GPU node the static model puts TP8 first at both loads. The simulator agrees at
// 4/s, where every layout meets the SLOs and TP8's shorter steps finish sooner; at 40/s one
// TP8 replica queues past its TTFT objective while two TP4 replicas keep up, so the
// simulated decision moves to TP4 × dp 2 (static rank 2).
TEST(WorkloadLayout, LowAndHighConcurrencyChangeWhichLayoutTheSimulationPrefers) {
  const WorkloadLayoutResult low = Decide(Scenario("4/s", "40s"), "1x8xh100-sxm-80g", 4);
  const WorkloadLayoutResult high = Decide(Scenario("40/s", "20s"), "1x8xh100-sxm-80g", 4);
  ASSERT_TRUE(low.decision && high.decision);
  EXPECT_LT(low.workload.concurrency, high.workload.concurrency);
  const SimulatedLayout& a = low.simulated[*low.decision];
  const SimulatedLayout& b = high.simulated[*high.decision];
  EXPECT_EQ(a.layout.tp, 8);
  EXPECT_EQ(a.dp, 1);
  EXPECT_EQ(a.static_rank, 1);
  EXPECT_EQ(b.layout.tp, 4);
  EXPECT_EQ(b.layout.pp, 1);
  EXPECT_EQ(b.dp, 2);
  EXPECT_EQ(b.static_rank, 2);  // the static model alone would have kept TP8
  EXPECT_GT(b.attainment.value_or(0), 0.99);
  // TP8 at 40/s: simulated, but well short of its SLOs.
  for (const SimulatedLayout& s : high.simulated) {
    if (s.layout.tp == 8 && s.layout.pp == 1) {
      EXPECT_LT(s.attainment.value_or(1), 0.5);
      EXPECT_EQ(s.static_rank, 1);
    }
  }
}

const SimulatedLayout* FindSim(const WorkloadLayoutResult& r, int64_t tp, int64_t pp) {
  for (const SimulatedLayout& s : r.simulated) {
    if (s.layout.tp == tp && s.layout.pp == pp) return &s;
  }
  return nullptr;
}

// On two nodes at 4/s every candidate meets the SLOs, so all are within 5% of the leader.
// TP8 × PP2 × dp 1 has the second-best goodput per GPU but its one replica spans both
// nodes: losing either leaves nothing, so it ranks after the TP4 fleets that keep half.
TEST(WorkloadLayout, WithinTheCloseBandTheFleetThatSurvivesANodeLossRanksFirst) {
  const WorkloadLayoutResult r = Decide(Scenario("4/s", "40s"), "2x8xh100-sxm-80g", 4);
  const SimulatedLayout* spread = FindSim(r, 8, 2);
  const SimulatedLayout* tp4 = FindSim(r, 4, 1);
  ASSERT_NE(spread, nullptr);
  ASSERT_NE(tp4, nullptr);
  EXPECT_GT(spread->goodput_per_gpu, tp4->goodput_per_gpu);
  EXPECT_EQ(spread->replicas_after_loss.node, 0);
  ASSERT_TRUE(spread->after_loss && tp4->after_loss);
  EXPECT_EQ(spread->after_loss->replicas, 0);
  EXPECT_EQ(spread->after_loss->goodput_per_gpu, 0.0);
  EXPECT_EQ(tp4->after_loss->replicas, tp4->dp / 2);
  EXPECT_GT(tp4->after_loss->goodput_per_gpu, 0.9 * tp4->goodput_per_gpu);  // half the fleet still serves 4/s
  EXPECT_GT(spread->simulated_rank, tp4->simulated_rank);
  for (size_t i = 0; i < r.simulated.size(); ++i) EXPECT_EQ(r.simulated[i].simulated_rank, static_cast<int64_t>(i) + 1);
  const Json j = WorkloadLayoutJson(r, Short("2x8xh100-sxm-80g"));
  for (const Json& s : j["simulated"]) {
    EXPECT_TRUE(s["replicas_after_loss"].contains("rack"));
    ASSERT_TRUE(s["after_loss"].is_object()) << s.dump();  // every candidate is in the band here
    EXPECT_EQ(s["after_loss"]["domain"], "node");
    EXPECT_TRUE(s["staging"].is_null());
  }
}

// Records of a staging run: `n` chat requests a quarter second apart, every `miss`-th one
// answered after 2 s (past the 1 s TTFT objective), the others after 0.3 s.
std::string StagingRecords(const std::string& name, int n, int miss) {
  std::string text;
  const WorkloadNames names{{"chat"}, {}, {}};
  for (int i = 0; i < n; ++i) {
    RequestRecord rec;
    rec.id = i;
    rec.arrival = SimTime::FromNanos(int64_t{250'000'000} * i);
    rec.first_token = rec.arrival + Duration::Nanos(int64_t{1'000'000} * (miss > 0 && i % miss == 0 ? 2000 : 300));
    rec.finish = *rec.first_token + Duration::Nanos(int64_t{20'000'000} * 99);
    rec.input_tokens = 700;
    rec.output_tokens = 100;
    AppendRecordJsonl(rec, names, &text);
  }
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// On one node at 4/s no layout separates from TP8 by more than the model's 5% error, on
// goodput or after losing the node (which leaves nothing for any of them): the model does
// not choose. Staging results for the undecided candidates let the measurement choose,
// here against the model's provisional pick.
TEST(WorkloadLayout, CandidatesTheModelCannotSeparateWaitForStagingAndTheMeasurementDecides) {
  const std::string text = Scenario("4/s", "40s");
  const WorkloadLayoutResult waiting = Decide(text, "1x8xh100-sxm-80g", 4);
  ASSERT_TRUE(waiting.choice && waiting.decision);
  EXPECT_EQ(waiting.choice->basis, ChoiceBasis::kNeedsStaging);
  EXPECT_EQ(waiting.simulated[*waiting.decision].layout.tp, 8);  // provisional
  ASSERT_FALSE(waiting.choice->indistinguishable.empty());
  std::vector<StagingInput> staging;
  for (const size_t i : waiting.choice->needs_staging) {
    const SimulatedLayout& c = waiting.simulated[i];
    const bool tp4 = c.layout.tp == 4 && c.layout.pp == 1;
    const std::string spec = fmt::format("tp{}xpp{}", c.layout.tp, c.layout.pp);
    Expected<StagingInput> in = ParseStagingSpec(spec + "=" + StagingRecords(spec + ".jsonl", 100, tp4 ? 0 : 4));
    ASSERT_TRUE(in.ok()) << in.status().message();
    staging.push_back(*in);
  }
  const WorkloadLayoutResult staged = Decide(text, "1x8xh100-sxm-80g", 4, 1, staging);
  ASSERT_TRUE(staged.choice && staged.decision);
  EXPECT_EQ(staged.choice->basis, ChoiceBasis::kStaging);
  const SimulatedLayout& d = staged.simulated[*staged.decision];
  EXPECT_EQ(d.layout.tp, 4);
  EXPECT_EQ(d.layout.pp, 1);
  ASSERT_TRUE(d.staging);
  EXPECT_EQ(d.staging->requests, 100);
  EXPECT_EQ(d.staging->gpus, d.dp * 4);
  EXPECT_NEAR(d.staging->goodput_per_gpu, d.staging->goodput_rps / static_cast<double>(d.staging->gpus), 1e-12);
  EXPECT_EQ(d.staging->format, "fleetplan");
  const Json j = WorkloadLayoutJson(staged, Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(j["decision"]["status"], "chosen");
  EXPECT_EQ(j["decision"]["basis"], "staging");
  EXPECT_EQ(j["decision"]["tp"], 4);
  const Json w = WorkloadLayoutJson(waiting, Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(w["decision"]["status"], "needs-staging");
  EXPECT_EQ(w["decision"]["needs_staging"].size(), waiting.choice->needs_staging.size());
  EXPECT_NE(WorkloadLayoutText(waiting, Short("1x8xh100-sxm-80g")).find("NEEDS STAGING before choosing"),
            std::string::npos);
}

TEST(WorkloadLayout, AStagingSpecThatNamesNoSimulatedCandidateIsAnError) {
  Expected<StagingInput> in = ParseStagingSpec("tp1=" + StagingRecords("tp1.jsonl", 10, 0));
  ASSERT_TRUE(in.ok());
  WorkloadLayoutRequest q;
  q.simulate_top = 2;
  q.staging = {*in};
  const Expected<WorkloadLayoutResult> r =
      DecideLayoutOnWorkload(Load(Scenario("4/s", "10s")), Short("1x8xh100-sxm-80g"), q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(r.status().message().rfind("--staging: tp1: 0 simulated candidate(s) are tp 1 × pp 1 (simulated: tp 8 × pp 1, ", 0),
            0u)
      << r.status().message();
}

TEST(WorkloadLayout, ABadStagingFileFailsBeforeAnySimulation) {
  const std::string bad = ::testing::TempDir() + "bad-staging.jsonl";
  std::ofstream(bad) << "{\"id\": 1, \"class\": \"chat\"\n";
  Expected<StagingInput> in = ParseStagingSpec("tp8=" + bad);
  ASSERT_TRUE(in.ok());
  WorkloadLayoutRequest q;
  q.staging = {*in};
  const Expected<WorkloadLayoutResult> r =
      DecideLayoutOnWorkload(Load(Scenario("4/s", "10s")), Short("1x8xh100-sxm-80g"), q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("--staging: tp8=" + bad + ": ", 0), 0u) << r.status().message();
}

TEST(WorkloadLayout, BadRequestsNameTheFlag) {
  WorkloadLayoutRequest q;
  q.simulate_top = 0;
  const Expected<WorkloadLayoutResult> r =
      DecideLayoutOnWorkload(Load(Scenario("2/s", "10s")), Short("1x8xh100-sxm-80g"), q);
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  EXPECT_EQ(r.status().message(), "--simulate-top: expected an integer between 1 and 64, got 0");
}

}  // namespace
}  // namespace fleetplan
