// Adapters (LoRA): residency per replica with a memory budget and LRU, cold loads that
// delay requests, and the done-when outcome of issue 6: over 50 Zipf(1.1) adapters on 3
// replicas, adapter-aware routing lowers cold loads and adapter memory per replica
// versus round-robin, and its max queue depth stays within the bound stated below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "fleetplan/fleet/adapters.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

TEST(AdapterResidency, ColdLoadsQueueOnTheLinkAndEvictLeastRecentlyUsedUnpinned) {
  AdapterConfig c{.enabled = true, .size = MiB(100), .load_time = Ms(10), .memory_budget = MiB(200), .popularity = {}};
  AdapterResidency a(c);
  const SimTime t0 = SimTime::FromNanos(0);
  EXPECT_EQ(a.Acquire(1, t0), t0 + Ms(10));          // cold
  EXPECT_EQ(a.Acquire(2, t0), t0 + Ms(20));          // cold, waits for the link
  EXPECT_EQ(a.Acquire(1, t0 + Ms(5)), t0 + Ms(10));  // warm but still loading
  a.Release(1);
  a.Release(1);
  // 3 needs room: 1 (unpinned, least recent) goes, 2 (pinned) stays.
  EXPECT_EQ(a.Acquire(3, t0 + Ms(30)), t0 + Ms(40));
  EXPECT_FALSE(a.resident(1));
  EXPECT_TRUE(a.resident(2));
  EXPECT_TRUE(a.resident(3));
  // Both pinned: a fourth loads over budget, and says so.
  EXPECT_EQ(a.Acquire(4, t0 + Ms(50)), t0 + Ms(60));
  EXPECT_EQ(a.stats().over_budget_loads, 1);
  EXPECT_EQ(a.stats().cold_loads, 4);
  EXPECT_EQ(a.stats().evictions, 1);
  EXPECT_EQ(a.stats().peak, MiB(300));
}

std::string AdapterScenario(const std::string& router, const std::string& budget = "4GiB") {
  return "version: 1\n"
         "name: adapters\n"
         "seed: 5\n"
         "model: {name: llama-3.1-8b, max_context: 8192}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"
         "deployment: {replicas: 3, tp: 1}\n"
         "engine:\n"
         "  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 64, chunk_tokens: 1024}\n"
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: "
         "0.1ms}}\n"
         "  adapters: {size: 160MiB, load_time: 40ms, memory_budget: " +
         budget +
         "}\n"
         "router:\n" +
         router +
         "workload:\n"
         "  requests: 1500\n"
         "  arrival: {process: poisson, rate: 25/s}\n"
         "  adapters: {count: 50, popularity: {zipf: 1.1}, fraction: 1.0}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 1.0\n"
         "      prompt: [{segment: unique, tokens: {lognormal: {median: 400, p99: 2000}}}]\n"
         "      output_tokens: {lognormal: {median: 60, p99: 300}}\n"
         "slo:\n"
         "  chat: {ttft: 500ms}\n";
}

struct AdapterFigures {
  int64_t cold_loads = 0;     // over replicas
  double max_mean_bytes = 0;  // the replica holding the most adapter memory on average
  int64_t max_peak_bytes = 0;
  int64_t max_queue_depth = 0;  // over replicas
  double ttft_p99_ms = 0;       // worst replica
};

AdapterFigures RunAdapters(const std::string& router, const std::string& budget) {
  auto s = LoadScenarioText(AdapterScenario(router, budget), "a.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.write_files = false;
  auto r = RunScenario(*s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  AdapterFigures f;
  for (const Json& rep : r->report["replicas"]) {
    const Json& a = rep["adapters"];
    f.cold_loads += a["cold_loads"].get<int64_t>();
    f.max_mean_bytes = std::max(f.max_mean_bytes, a["mean_bytes"].get<double>());
    f.max_peak_bytes = std::max(f.max_peak_bytes, a["peak_bytes"].get<int64_t>());
    f.max_queue_depth = std::max(f.max_queue_depth, rep["max_queue_depth"].get<int64_t>());
    f.ttft_p99_ms = std::max(f.ttft_p99_ms, rep["ttft_p99_ms"].get<double>());
  }
  std::printf(
      "budget %s, %-14s cold loads %lld, adapter memory per replica: max mean %.0f MiB, max peak %lld MiB; max queue "
      "depth %lld; worst replica ttft p99 %.1f ms\n",
      budget.c_str(), router.substr(10, router.find('\n') - 10).c_str(), static_cast<long long>(f.cold_loads),
      f.max_mean_bytes / (1024.0 * 1024.0), static_cast<long long>(f.max_peak_bytes / (1024 * 1024)),
      static_cast<long long>(f.max_queue_depth), f.ttft_p99_ms);
  return f;
}

// The bound: adapter-aware's largest per-replica queue depth stays within twice
// round-robin's plus 4 requests (affinity may concentrate a hot adapter's burst on one
// replica until the load term, which outweighs affinity, moves it).
TEST(AdapterRouting, AdapterAwareLowersColdLoadsAndMemoryWithinAQueueBound) {
  for (const std::string budget : {"4GiB", "8GiB"}) {  // 25 adapters (LRU evicts), 51 (all fit)
    const AdapterFigures rr = RunAdapters("  policy: round-robin\n  telemetry_delay: 20ms\n", budget);
    const AdapterFigures aa = RunAdapters("  policy: adapter-aware\n  telemetry_delay: 20ms\n", budget);
    EXPECT_LT(aa.cold_loads, rr.cold_loads) << budget;
    EXPECT_LT(aa.max_mean_bytes, rr.max_mean_bytes) << budget;
    EXPECT_LE(aa.max_peak_bytes, rr.max_peak_bytes) << budget;
    EXPECT_LE(aa.max_queue_depth, 2 * rr.max_queue_depth + 4) << budget;
  }
}

// The planner's partition: 6 adapters with shares 40, 20, 15, 10, 10, 5% on 3 replicas,
// hot until 50% (the first two: 40% reaches no 50%, so the second joins), warm until 80%
// (the next two), the tail on one replica each.
TEST(AdapterPartition, HotEverywhereWarmOnTwoTailOnOne) {
  const AdapterPartition p = PartitionByPopularity({0.40, 0.20, 0.15, 0.10, 0.10, 0.05}, 3, 0.5, 0.3);
  EXPECT_EQ(p.hot, 2);
  EXPECT_EQ(p.warm, 2);
  EXPECT_EQ(p.tail, 2);
  EXPECT_EQ(p.tier[0], AdapterTier::kHot);
  EXPECT_EQ(p.tier[2], AdapterTier::kWarm);
  EXPECT_EQ(p.tier[5], AdapterTier::kTail);
  // Warm 2 on replicas 0 and 1, warm 3 on 2 and 0, tail 4 on 1, tail 5 on 2.
  EXPECT_EQ(p.on[0], (std::vector<AdapterId>{0, 1, 2, 3}));
  EXPECT_EQ(p.on[1], (std::vector<AdapterId>{0, 1, 2, 4}));
  EXPECT_EQ(p.on[2], (std::vector<AdapterId>{0, 1, 3, 5}));
  int copies = 0;
  for (AdapterId a = 0; a < 6; ++a) {
    int placed = 0;
    for (int32_t r = 0; r < 3; ++r) placed += p.places(r, a) ? 1 : 0;
    EXPECT_EQ(placed, a < 2 ? 3 : a < 4 ? 2 : 1) << a;
    copies += placed;
  }
  EXPECT_EQ(copies, 2 * 3 + 2 * 2 + 2);
  EXPECT_TRUE(p.places(3, 0));  // a replica added later takes replica 0's place
  // One replica: every adapter on it, once.
  EXPECT_EQ(PartitionByPopularity({0.5, 0.3, 0.2}, 1, 0.5, 0.3).on[0], (std::vector<AdapterId>{0, 1, 2}));
}

// by: popularity places adapters as the partition says from the start: the report states
// the plan's adapters and memory per replica beside what residency did, and cold loads
// fall below the history-based policy's.
TEST(AdapterRouting, PopularityPlacementReportsThePlanAndLoadsFewerAdapters) {
  const auto run = [](const std::string& router) {
    auto s = LoadScenarioText(AdapterScenario(router, "8GiB"), "a.yaml", "");
    EXPECT_TRUE(s.ok()) << s.status().message();
    RunOptions opt;
    opt.write_files = false;
    auto r = RunScenario(*s, opt);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r->report;
  };
  const Json history = run("  policy: adapter-aware\n  telemetry_delay: 20ms\n");
  const Json planned = run("  policy: adapter-aware\n  telemetry_delay: 20ms\n  adapter_aware: {by: popularity}\n");
  const Json& placement = planned["adapters"]["placement"];
  EXPECT_EQ(placement["by"], "popularity");
  EXPECT_EQ(history["adapters"]["placement"]["by"], "history");  // the plan is stated for both
  EXPECT_EQ(placement["hot"].get<int64_t>() + placement["warm"].get<int64_t>() + placement["tail"].get<int64_t>(), 50);
  ASSERT_EQ(placement["per_replica"].size(), 3u);
  int64_t most = 0;
  for (const Json& r : placement["per_replica"]) {
    EXPECT_EQ(r["bytes"].get<int64_t>(), r["adapters"].get<int64_t>() * 160 * 1024 * 1024);
    most = std::max(most, r["bytes"].get<int64_t>());
  }
  EXPECT_EQ(placement["max_bytes"], most);
  EXPECT_TRUE(placement["fits_budget"].get<bool>());
  int64_t cold_history = 0, cold_planned = 0;
  for (const Json& r : history["replicas"]) cold_history += r["adapters"]["cold_loads"].get<int64_t>();
  for (const Json& r : planned["replicas"]) cold_planned += r["adapters"]["cold_loads"].get<int64_t>();
  EXPECT_LT(cold_planned, cold_history);
}

TEST(AdapterRouting, SameScenarioSameReport) {
  for (const std::string router : {"  policy: adapter-aware\n  telemetry_delay: 20ms\n",
                                   "  policy: weighted\n  weighted: {adapter: 1, queue: 1, running: 1, kv: 1}\n"}) {
    auto s = LoadScenarioText(AdapterScenario(router), "a.yaml", "");
    ASSERT_TRUE(s.ok()) << s.status().message();
    RunOptions opt;
    opt.write_files = false;
    auto a = RunScenario(*s, opt);
    auto b = RunScenario(*s, opt);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->report.dump(), b->report.dump()) << router;
  }
}

TEST(AdapterRouting, LoadTimeIsDerivedFromSizeWhenNotGiven) {
  std::string text = AdapterScenario("  policy: round-robin\n");
  const std::string from = "load_time: 40ms, ";
  text.erase(text.find(from), from.size());
  auto s = LoadScenarioText(text, "a.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->adapters.load_time, Duration::Nanos(6'710'887));  // 160 MiB / 25 GB/s, rounded up
  EXPECT_NE(std::find(s->derived.begin(), s->derived.end(),
                      "engine.adapters.load_time: 6.711 ms (size / 25 GB/s host-to-device; not given)"),
            s->derived.end());
}

TEST(AdapterRouting, AdapterSectionErrorsAreLocated) {
  std::string text = AdapterScenario("  policy: round-robin\n");
  const std::string from = "memory_budget: 4GiB";
  text.replace(text.find(from), from.size(), "memory_budget: 100MiB");
  auto s = LoadScenarioText(text, "a.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("engine.adapters.memory_budget: expected at least one adapter's size "
                                      "(167772160 bytes), got 104857600 bytes"),
            std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace fleetplan
