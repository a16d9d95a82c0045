// The replica table's drain with a grace period: routing stops at the drain, in-flight
// requests finish within the grace, and at its end whatever the replica still holds is
// requeued (arrival unchanged) or cancelled (reason `drained`), counted per replica;
// grace 0 is a failure. The fleet's invariants are checked after every event.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {
namespace {

// Two replicas of llama-3.1-8b with affine steps, busy enough that each holds tens of
// requests at any time (40 requests/s, 200-token answers).
std::string BusyPair(const std::string& deployment = "deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.3}\n",
                     const std::string& extra = "") {
  return "version: 1\n"
         "name: drain\n"
         "seed: 7\n"
         "model: {name: llama-3.1-8b, max_context: 16384}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n" +
         deployment +
         "engine:\n"
         "  scheduler: {policy: decode-first, max_batched_tokens: 4096, max_running: 64}\n"
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}\n"
         "router: {policy: least-outstanding}\n"
         "workload:\n"
         "  requests: 1200\n"
         "  arrival: {process: poisson, rate: 40/s}\n"
         "  classes:\n"
         "    chat: {share: 1, prompt: [{segment: unique, tokens: 600}], output_tokens: 200}\n" +
         extra;
}

FleetPlan BindText(const std::string& text) {
  auto s = LoadScenarioText(text, "drain.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto plan = Bind(*s);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

class Outcomes final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override {
    ++ends[o.id];
    by_id[o.id] = o;
  }
  std::map<RequestId, RequestOutcome> by_id;
  std::map<RequestId, int> ends;  // every request ends exactly once
};

// A simulation with its invariants checked after every event.
struct Checked {
  explicit Checked(const FleetPlan& plan) {
    auto created = Simulation::Create(plan.Setup(), &outcomes);
    EXPECT_TRUE(created.ok()) << created.status().message();
    sim = std::move(created).value();
    auto src = MakeRequestSource(plan.workload, plan.seed);
    EXPECT_TRUE(src.ok());
    source = std::move(src).value();
    sim->SetEventHook([this] {
      const Status st = sim->CheckInvariants();
      ASSERT_TRUE(st.ok()) << st.message();
      ++checks;
    });
    EXPECT_TRUE(sim->Start(source.get()).ok());
  }
  Outcomes outcomes;
  std::unique_ptr<Simulation> sim;
  std::unique_ptr<RequestSource> source;
  int64_t checks = 0;
};

std::set<RequestId> Ids(const std::vector<RequestId>& v) { return {v.begin(), v.end()}; }

// Replica 0 drains at 10 s with 2 s of grace, requeueing: what it still holds at 12 s
// (known just before, as the expiry comes first among the events at 12 s) moves to
// replica 1 with its arrival unchanged; the rest finished on 0 within the grace.
TEST(ReplicaTable, DrainGraceRequeuesWhatIsLeftAtExpiryWithTheOriginalArrival) {
  const FleetPlan plan = BindText(BusyPair());
  Checked c(plan);
  Simulation& s = *c.sim;
  ASSERT_TRUE(s.DrainReplica(0, SimTime() + Sec(10), Sec(2), DrainExpiry::kRequeue).ok());
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(10) - Duration::Nanos(1)).ok());
  const std::set<RequestId> at_drain = Ids(s.replica(0).LiveIds());
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(12) - Duration::Nanos(1)).ok());
  EXPECT_EQ(s.state(0), ReplicaState::kDraining);
  const std::set<RequestId> at_expiry = Ids(s.replica(0).LiveIds());
  ASSERT_TRUE(s.Finish().ok());
  EXPECT_EQ(s.state(0), ReplicaState::kGone);
  EXPECT_GT(c.checks, 5000);
  ASSERT_GT(at_expiry.size(), 10u);
  ASSERT_GT(at_drain.size(), at_expiry.size());  // some finished within the grace
  for (RequestId id : at_expiry) EXPECT_EQ(at_drain.count(id), 1u) << id;  // nothing new after the drain

  const ReplicaFigures& f = s.figures(0);
  EXPECT_EQ(f.drain_requeued, static_cast<int64_t>(at_expiry.size()));
  EXPECT_EQ(f.drain_cancelled, 0);
  EXPECT_EQ(f.drain_rejected, 0);
  ASSERT_EQ(c.outcomes.by_id.size(), 1200u);
  for (const auto& [id, n] : c.outcomes.ends) EXPECT_EQ(n, 1) << id;
  for (const auto& [id, o] : c.outcomes.by_id) {
    EXPECT_EQ(o.status, RequestStatus::kOk) << id;
    if (at_expiry.count(id) != 0) {
      // Served again on replica 1: the arrival is the original, so the TTFT counts the
      // time lost on replica 0 (more than its wait there, from before 10 s to 12 s).
      EXPECT_EQ(o.replica, 1) << id;
      EXPECT_LT(o.arrival, SimTime() + Sec(10)) << id;
      ASSERT_TRUE(o.first_token.has_value());
      EXPECT_GE(*o.first_token, SimTime() + Sec(12)) << id;
    } else if (o.replica == 0) {
      EXPECT_LT(o.arrival, SimTime() + Sec(10)) << id;
      EXPECT_LE(*o.finish, SimTime() + Sec(12)) << id;
    }
  }
  // report.json `replicas[0].drain`
  Json engine = Json::array({Json::object(), Json::object()});
  const Json replicas = s.ReplicaReportJson(s.end_time() - SimTime(), &engine);
  EXPECT_EQ(replicas[0]["drain"]["requeued"].get<int64_t>(), static_cast<int64_t>(at_expiry.size()));
  EXPECT_EQ(replicas[0]["drain"]["cancelled"].get<int64_t>(), 0);
  EXPECT_EQ(replicas[0]["state"].get<std::string>(), "gone");
  EXPECT_FALSE(replicas[1].contains("drain"));
}

// Grace 0 is a failure: at 10 s everything replica 0 holds ends cancelled with reason
// `drained`, each counted once.
TEST(ReplicaTable, ZeroGraceCancelLosesTheReplicaAtOnce) {
  const FleetPlan plan = BindText(BusyPair());
  Checked c(plan);
  Simulation& s = *c.sim;
  ASSERT_TRUE(s.DrainReplica(0, SimTime() + Sec(10), Duration(), DrainExpiry::kCancel).ok());
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(10) - Duration::Nanos(1)).ok());
  const std::set<RequestId> held = Ids(s.replica(0).LiveIds());
  ASSERT_TRUE(s.Finish().ok());
  ASSERT_GT(held.size(), 10u);
  EXPECT_EQ(s.figures(0).drain_cancelled, static_cast<int64_t>(held.size()));
  EXPECT_EQ(s.figures(0).drain_requeued, 0);
  int64_t drained = 0;
  for (const auto& [id, n] : c.outcomes.ends) EXPECT_EQ(n, 1) << id;
  for (const auto& [id, o] : c.outcomes.by_id) {
    if (o.status == RequestStatus::kCancelled) {
      EXPECT_EQ(o.reason, "drained") << id;
      EXPECT_EQ(o.replica, 0) << id;
      EXPECT_EQ(held.count(id), 1u) << id;
      // Those in the step in flight leave when it ends (a step is well under 100 ms).
      EXPECT_LT(*o.finish, SimTime() + Sec(10) + Ms(100)) << id;
      ++drained;
    } else {
      EXPECT_EQ(o.status, RequestStatus::kOk) << id;
    }
  }
  EXPECT_EQ(drained, static_cast<int64_t>(held.size()));
}

// Requeueing with no replica ready rejects, with a reason, and counts the rejections.
TEST(ReplicaTable, RequeueWithNoReadyReplicaRejectsWithAReason) {
  const FleetPlan plan = BindText(BusyPair());
  Checked c(plan);
  Simulation& s = *c.sim;
  ASSERT_TRUE(s.DrainReplica(1, SimTime() + Sec(10)).ok());  // no grace limit: finishes its work
  ASSERT_TRUE(s.DrainReplica(0, SimTime() + Sec(10), Sec(1), DrainExpiry::kRequeue).ok());
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(11) - Duration::Nanos(1)).ok());
  const std::set<RequestId> held = Ids(s.replica(0).LiveIds());
  ASSERT_TRUE(s.Finish().ok());
  ASSERT_GT(held.size(), 5u);
  EXPECT_EQ(s.figures(0).drain_rejected, static_cast<int64_t>(held.size()));
  EXPECT_EQ(s.figures(0).drain_requeued, 0);
  EXPECT_FALSE(s.figures(1).drain_limited);
  for (RequestId id : held) {
    const RequestOutcome& o = c.outcomes.by_id.at(id);
    EXPECT_EQ(o.status, RequestStatus::kRejected) << id;
    EXPECT_EQ(o.reason, "its replica was lost and no ready replica can take it") << id;
  }
}

// A replica drained while still pending never loads and never serves.
TEST(ReplicaTable, AReplicaDrainedWhilePendingNeverLoads) {
  const FleetPlan plan = BindText(BusyPair());
  Checked c(plan);
  Simulation& s = *c.sim;
  auto added = s.AddReplica(plan.Setup().replicas[0], SimTime() + Sec(20), Sec(5));
  ASSERT_TRUE(added.ok());
  ASSERT_TRUE(s.DrainReplica(*added, SimTime() + Sec(10), Duration(), DrainExpiry::kRequeue).ok());
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(30)).ok());
  EXPECT_EQ(s.state(*added), ReplicaState::kGone);
  ASSERT_TRUE(s.Finish().ok());
  EXPECT_EQ(s.state(*added), ReplicaState::kGone);
  EXPECT_EQ(s.figures(*added).routed, 0);
  EXPECT_EQ(s.figures(*added).drain_requeued, 0);
}

// Bad drains are refused with a reason.
TEST(ReplicaTable, DrainGraceRefusesNegativeGraceAndPrefillReplicas) {
  const FleetPlan plan = BindText(BusyPair());
  Checked c(plan);
  const Status negative = c.sim->DrainReplica(0, SimTime() + Sec(1), Duration::Nanos(-1), DrainExpiry::kCancel);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.message(), "a drain's grace period must be >= 0");
  const Status unknown = c.sim->DrainReplica(5, SimTime() + Sec(1), Sec(1), DrainExpiry::kCancel);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(), "no replica 5 (the fleet has 2)");
  ASSERT_TRUE(c.sim->Finish().ok());
}

// Disaggregated pools: a decode replica lost with handoffs bound for it (waiting for a
// slot, queued for a transfer, moving, or still prefilling elsewhere) gives each of them
// up exactly once; requeued, every request still ends, and no block is left anywhere.
TEST(ReplicaTable, LosingADecodeReplicaGivesUpItsHandoffsToo) {
  const std::string pools =
      "deployment:\n"
      "  pools:\n"
      "    - {role: prefill, replicas: 2, tp: 1, gpu_memory_utilization: 0.3}\n"
      "    - {role: decode, replicas: 2, tp: 1, gpu_memory_utilization: 0.3}\n"
      "  disaggregation: {timeout: 2s}\n";
  for (const DrainExpiry expiry : {DrainExpiry::kRequeue, DrainExpiry::kCancel}) {
    const FleetPlan plan = BindText(BusyPair(pools));
    Checked c(plan);
    Simulation& s = *c.sim;
    int32_t decode = -1;
    for (int32_t i = 0; i < s.replica_count(); ++i) {
      if (s.role(i) == PoolRole::kDecode && decode < 0) decode = i;
    }
    ASSERT_GE(decode, 0);
    ASSERT_TRUE(s.DrainReplica(decode, SimTime() + Sec(10), Duration(), expiry).ok());
    ASSERT_TRUE(s.RunUntil(SimTime() + Sec(10) - Duration::Nanos(1)).ok());
    int64_t bound = 0;  // routed requests whose serving replica is `decode`
    s.ForEachRoute([&](RequestId, const RouteInfo& info) { bound += info.replica == decode ? 1 : 0; });
    // Some of them are still handoffs (prefilling, queued or moving), not in its engine.
    const int64_t in_engine = s.replica(decode).live_requests() - s.replica(decode).importing_count();
    EXPECT_GT(bound - in_engine, 0) << bound << " bound, " << in_engine << " in the decode engine";
    ASSERT_TRUE(s.Finish().ok()) << DrainExpiryName(expiry);
    const ReplicaFigures& f = s.figures(decode);
    ASSERT_GT(bound, 5);
    EXPECT_EQ(f.drain_requeued + f.drain_cancelled + f.drain_rejected, bound) << DrainExpiryName(expiry);
    EXPECT_EQ(expiry == DrainExpiry::kRequeue ? f.drain_requeued : f.drain_cancelled, bound);
    ASSERT_EQ(c.outcomes.by_id.size(), 1200u);
    for (const auto& [id, n] : c.outcomes.ends) EXPECT_EQ(n, 1) << id;
    int64_t drained = 0;
    for (const auto& [id, o] : c.outcomes.by_id) drained += o.reason == "drained" ? 1 : 0;
    EXPECT_EQ(drained, f.drain_cancelled);
    const Status refused = s.DrainReplica(0, s.now(), Sec(1), DrainExpiry::kCancel);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("replica 0 is a prefill replica"), std::string::npos) << refused.message();
  }
}

}  // namespace
}  // namespace fleetplan
