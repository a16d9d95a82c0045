// Layouts decided on a workload (plan/workload_layout.h) and the near misses and stated
// operating point of the static search (plan/layout.h).
#include "fleetplan/plan/workload_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/json.h"
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

WorkloadLayoutResult Decide(const std::string& text, const std::string& cluster, int64_t top, int jobs = 1) {
  WorkloadLayoutRequest q;
  q.simulate_top = top;
  q.jobs = jobs;
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

TEST(WorkloadLayout, BadRequestsNameTheFlag) {
  WorkloadLayoutRequest q;
  q.simulate_top = 0;
  const Expected<WorkloadLayoutResult> r =
      DecideLayoutOnWorkload(Load(Scenario("2/s", "10s")), Short("1x8xh100-sxm-80g"), q);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(r.status().message(), "--simulate-top: expected an integer between 1 and 64, got 0");
}

}  // namespace
}  // namespace fleetplan
