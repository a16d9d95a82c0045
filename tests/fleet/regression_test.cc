// Regressions of the fleet layer, each named after what broke.
#include <string>

#include <gtest/gtest.h>

#include "fleet_scenarios.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/prefix_beliefs.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {
namespace {

// The built-in Atlas scenario with `line` removed and `duration` of traffic.
std::string AtlasWithout(const std::string& line, const std::string& duration) {
  std::string text(AtlasScenarioYaml());
  const size_t at = text.find(line);
  EXPECT_NE(at, std::string::npos) << line;
  text.erase(at, text.find('\n', at) - at + 1);
  const size_t d = text.find("duration: 10m");
  EXPECT_NE(d, std::string::npos);
  text.replace(d, 13, "duration: " + duration);
  return text;
}

// Defect: a scenario without engine.scheduler.max_running ran with max_running = 1 (the
// fit verb's default concurrency, copied back by the fleet reader) instead of 256.
TEST(ScenarioDefaults, AbsentMaxRunningRunsWithTheEngineDefault) {
  const std::string without = AtlasWithout("    max_running: 256\n", "20s");
  auto s = LoadScenarioText(without, "atlas.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->engine.scheduler.max_running, 256);
  EXPECT_EQ(s->fit.concurrency, 256);
  EXPECT_EQ(s->fit.memory.max_running, 256);
  bool noted = false;
  for (const std::string& d : s->derived) noted = noted || d.find("engine.scheduler.max_running 256") != std::string::npos;
  EXPECT_TRUE(noted) << "the filled-in max_running is listed in notes";

  // The run is the one with the value stated.
  std::string with(AtlasScenarioYaml());
  with.replace(with.find("duration: 10m"), 13, "duration: 20s");
  auto a = testing::RunReport(without);
  auto b = testing::RunReport(with);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(Json((*a)["classes"]), Json((*b)["classes"]));
  EXPECT_EQ(Json((*a)["engine"]), Json((*b)["engine"]));
  EXPECT_GT((*a)["engine"]["tokens_per_step"].get<double>(), 20.0);
}

// Defect: router traits were compared as strings in several places that disagreed; a
// `weighted` router without a prefix weight plus router.replication passed the reader,
// then failed at run time with an unlocated error. The registry row's trait decides.
TEST(RouterRegistry, ReplicationWithAWeightedRouterThatIgnoresPrefixesIsALocatedError) {
  const std::string text = testing::FleetScenario(
      "  policy: weighted\n  weighted: {queue: 1, kv: 1}\n  replication: {replica_rate: 2/s}\n",
      testing::HotTenantWorkload(50, "10/s"), "  chat: {ttft: 1s}\n");
  auto s = LoadScenarioText(text, "r.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.status().message().find("r.yaml:15:"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("router.replication: hot-prefix replication needs engine.prefix_cache.enabled "
                                      "and a router that reads prefixes (cache-aware, weighted; weighted with a "
                                      "`prefix` weight > 0), got policy weighted"),
            std::string::npos)
      << s.status().message();
  // With a prefix weight the same router reads prefixes, and the scenario runs.
  const std::string with_prefix = testing::FleetScenario(
      "  policy: weighted\n  weighted: {prefix: 1, queue: 1}\n  replication: {replica_rate: 2/s}\n",
      testing::HotTenantWorkload(50, "10/s"), "  chat: {ttft: 1s}\n");
  auto r = testing::RunReport(with_prefix);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->contains("prefix_replication"));
}

// Defect: the router's prefix view was sized from replicas[0], which is the prefill pool
// in a pooled scenario; each replica's record now holds its own pool's worth of blocks.
TEST(PrefixBeliefs, EachReplicasRecordIsSizedByItsOwnKvPool) {
  const std::string text =
      "version: 1\nname: pools\nseed: 1\nmodel: {name: llama-3.1-8b, max_context: 16384}\n"
      "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 4}\n"
      "deployment:\n  pools:\n    - {role: prefill, replicas: 1, tp: 1, gpu_memory_utilization: 0.25}\n"
      "    - {role: decode, replicas: 2, tp: 1, gpu_memory_utilization: 0.6}\n"
      "engine:\n  prefix_cache: {enabled: true}\n"
      "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}\n"
      "router: {policy: cache-aware}\n"
      "workload:\n" + testing::HotTenantWorkload(20, "5/s");
  auto s = LoadScenarioText(text, "pools.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto plan = Bind(*s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto sim = Simulation::Create(plan->Setup(), nullptr);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  const PrefixBeliefs* beliefs = (*sim)->component<PrefixBeliefs>();
  ASSERT_NE(beliefs, nullptr);
  ASSERT_EQ(beliefs->view().replica_count(), 3);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(beliefs->view().capacity_blocks(i), (*sim)->replica(i).pool().total()) << i;
  }
  EXPECT_GT(beliefs->view().capacity_blocks(1), 2 * beliefs->view().capacity_blocks(0));
}

// Defect: a closed loop with a drawn think time ended in an internal error ("request 34
// arrives at ... before the simulated time"): after a completion the source announced a
// request due before the one the fleet already held, and the fleet held only one.
TEST(ClosedLoop, DrawnThinkTimesWithManyUsersRunToTheEnd) {
  for (const char* think : {"{uniform: [100ms, 300ms]}", "{exponential: {mean: 200ms}}"}) {
    const std::string text = testing::FleetScenario(
        "  policy: least-outstanding\n",
        std::string("  requests: 400\n  arrival: {process: closed-loop, users: 8, think_time: ") + think +
            "}\n  classes:\n    chat: {share: 1, prompt: [{segment: unique, tokens: {uniform: [100, 2000]}}], "
            "output_tokens: {uniform: [5, 200]}}\n",
        "  chat: {ttft: 1s}\n");
    auto r = testing::RunReport(text);
    ASSERT_TRUE(r.ok()) << think << ": " << r.status().message();
    EXPECT_EQ((*r)["classes"]["chat"]["status"]["ok"].get<int64_t>(), 400) << think;
  }
}

// Defect: router.telemetry_delay at the top of its documented range (2562047h, the
// largest duration) never finished, even for 5 requests: the next refresh's time
// overflowed int64 into the past. It now saturates, and the run ends as with any delay
// longer than the run.
TEST(Telemetry, TheLargestTelemetryDelayFinishes) {
  std::string at_max(AtlasScenarioYaml());
  at_max.replace(at_max.find("telemetry_delay: 50ms"), 21, "telemetry_delay: 2562047h");
  at_max.replace(at_max.find("duration: 10m"), 13, "duration: 5s");
  std::string long_delay = at_max;
  long_delay.replace(long_delay.find("telemetry_delay: 2562047h"), 25, "telemetry_delay: 2562000h");
  auto a = testing::RunReport(at_max);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = testing::RunReport(long_delay);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_GT((*a)["fleet"]["requests"].get<int64_t>(), 0);
  // No refresh happens within the run either way: the same requests, the same figures.
  EXPECT_EQ(Json((*a)["classes"]), Json((*b)["classes"]));
}

}  // namespace
}  // namespace fleetplan
