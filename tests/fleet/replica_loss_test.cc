// Replica losses as a plan field: the listed replicas fail at their time (drained with no
// grace), what they held is requeued on the survivors, every request still ends once, the
// fleet's invariants hold after every event, and report.json lists the losses.
#include <gtest/gtest.h>

#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

constexpr std::string_view kFour = R"(version: 1
name: losses
seed: 3
model: {name: llama-3.1-8b, max_context: 16384}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment: {replicas: 4, tp: 1, gpu_memory_utilization: 0.3}
engine:
  scheduler: {policy: decode-first, max_batched_tokens: 4096, max_running: 64}
  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}
router: {policy: least-outstanding}
workload:
  duration: 40s
  arrival: {process: poisson, rate: 40/s}
  classes:
    chat: {share: 1, prompt: [{segment: unique, tokens: 600}], output_tokens: 200}
slo:
  chat: {ttft: 1s}
)";

TEST(ReplicaLosses, ListedReplicasFailAtTheirTimeAndTheirRequestsMoveToTheSurvivors) {
  auto scenario = LoadScenarioText(kFour, "losses.yaml", "");
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  auto plan = Bind(*scenario);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  plan->replica_losses.push_back(ReplicaLoss{SimTime::FromNanos(Sec(20).ns()), {0, 1}});
  RunOptions opt;
  opt.write_files = false;
  opt.check_invariants_every_event = true;
  int64_t routed_after = 0, to_lost_after = 0;
  opt.on_record = [&](const RequestRecord& r) {
    if (r.arrival.ns() <= Sec(20).ns() || !r.replica) return;
    ++routed_after;
    if (*r.replica < 2) ++to_lost_after;
  };
  auto run = Simulate(*plan, opt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  // Nothing that arrived after the loss was served by a lost replica.
  EXPECT_GT(routed_after, 500);
  EXPECT_EQ(to_lost_after, 0);
  int64_t requeued = 0;
  for (const ReplicaResult& r : run->result.replicas) {
    if (r.id < 2) {
      EXPECT_EQ(r.state, ReplicaState::kGone);
      requeued += r.figures.drain_requeued;
    } else {
      EXPECT_EQ(r.state, ReplicaState::kReady);
      EXPECT_EQ(r.figures.drain_requeued, 0);
    }
  }
  // At 40/s with 200-token answers each replica holds tens of requests: they are requeued.
  EXPECT_GT(requeued, 10);
  EXPECT_EQ(run->report["fleet"]["requests"].get<int64_t>(), run->requests);
  ASSERT_TRUE(run->report.contains("replica_losses"));
  EXPECT_EQ(run->report["replica_losses"][0]["replicas"], Json::array({0, 1}));
  EXPECT_EQ(run->report["replica_losses"][0]["expiry"], "requeue");
  // The plan's digest covers the losses.
  auto without = Bind(*scenario);
  ASSERT_TRUE(without.ok());
  EXPECT_NE(*plan->Digest(), *without->Digest());
}

// Behind admission, a request its lost replica gives back was admitted once: it is routed
// again as it is — not admitted a second time, not rejected as a duplicate of itself — and
// admission's count of requests in flight stays equal to what the fleet routes.
TEST(ReplicaLosses, RequeuedRequestsBehindAdmissionAreRoutedAgainNotTakenForDuplicates) {
  std::string text(kFour);
  text += "admission:\n  classes: {chat: {priority: 1, max_queue: 1000, max_wait: 60s}}\n"
          "  default_class: chat\n  max_in_flight_per_replica: 64\n";
  auto scenario = LoadScenarioText(text, "losses.yaml", "");
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  auto plan = Bind(*scenario);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  plan->replica_losses.push_back(ReplicaLoss{SimTime::FromNanos(Sec(20).ns()), {0, 1}});
  RunOptions opt;
  opt.write_files = false;
  opt.check_invariants_every_event = true;
  int64_t not_ok = 0;
  opt.on_record = [&](const RequestRecord& r) { not_ok += r.status != RecordStatus::kOk ? 1 : 0; };
  auto run = Simulate(*plan, opt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  int64_t requeued = 0;
  for (const ReplicaResult& r : run->result.replicas) requeued += r.figures.drain_requeued;
  EXPECT_GT(requeued, 10);
  EXPECT_EQ(not_ok, 0);
  EXPECT_EQ(run->report["admission"]["classes"]["chat"]["rejected_total"], 0);
  EXPECT_EQ(run->report["admission"]["classes"]["chat"]["arrived"].get<int64_t>(), run->requests);
}

}  // namespace
}  // namespace fleetplan
