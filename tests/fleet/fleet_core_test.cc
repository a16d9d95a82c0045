// The fleet kernel: bound plans and their digest, the replica table's lifecycle (replicas
// added and drained mid-run), the push API (submit, cancel, run until, token events),
// and the fleet invariants after every event on random scenarios.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fleet_scenarios.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"
#include "support/small_scenarios.h"

namespace fleetplan {
namespace {

// Two replicas of llama-3.1-8b with affine steps; `extra` is appended (more sections).
std::string TwoReplicas(const std::string& workload, const std::string& extra = "") {
  return "version: 1\n"
         "name: core\n"
         "seed: 5\n"
         "model: {name: llama-3.1-8b, max_context: 16384}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"
         "deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.3}\n"
         "engine:\n"
         "  scheduler: {policy: decode-first, max_batched_tokens: 4096, max_running: 64}\n"
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}\n"
         "router: {policy: least-outstanding}\n"
         "workload:\n" +
         workload + extra;
}

const char* kChat =
    "  requests: 600\n"
    "  arrival: {process: poisson, rate: 10/s}\n"
    "  classes:\n"
    "    chat: {share: 1, prompt: [{segment: unique, tokens: 400}], output_tokens: 50}\n";

FleetPlan BindText(const std::string& text) {
  auto s = LoadScenarioText(text, "core.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto plan = Bind(*s);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

// Collects outcomes and the replica each request ended on.
class Outcomes final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override { by_id[o.id] = o; }
  std::map<RequestId, RequestOutcome> by_id;
};

TEST(FleetPlan, DigestIsStableAndFollowsEveryField) {
  const FleetPlan a = BindText(TwoReplicas(kChat));
  const FleetPlan b = BindText(TwoReplicas(kChat));
  ASSERT_TRUE(a.Digest().ok());
  EXPECT_EQ(*a.Digest(), *b.Digest());
  EXPECT_EQ(a.Digest()->rfind("sha256:", 0), 0u);
  EXPECT_EQ(a.Digest()->size(), 7u + 64u);
  FleetPlan c = a;
  c.router.policy = "round-robin";  // a sweep changes a field, not YAML text
  EXPECT_NE(*c.Digest(), *a.Digest());
  FleetPlan d = a;
  d.pools[0].replicas = 3;
  EXPECT_NE(*d.Digest(), *a.Digest());
  EXPECT_EQ(d.Setup().replicas.size(), 3u);
  // The plan holds every resolved setting: the scheduler, the KV pool, the step model.
  const Json j = a.ToJson();
  EXPECT_EQ(j["engine"]["scheduler"]["max_running"].get<int64_t>(), 64);
  EXPECT_GT(j["pools"][0]["kv_blocks_per_replica"].get<int64_t>(), 0);
  EXPECT_EQ(j["pools"][0]["step_model"]["kind"].get<std::string>(), "affine");
}

TEST(FleetPlan, SimulatingAChangedPlanFieldMatchesTheEditedScenario) {
  FleetPlan plan = BindText(TwoReplicas(kChat));
  plan.router.policy = "round-robin";
  std::string edited = TwoReplicas(kChat);
  edited.replace(edited.find("least-outstanding"), 17, "round-robin");
  RunOptions opt;
  opt.write_files = false;
  auto a = Simulate(plan, opt);
  auto b = testing::RunReport(edited);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  Json ja = a->report;
  Json jb = *b;
  // The scenario's byte digest differs (its text does), and so do the reader's notes
  // (least-outstanding's filled-in outstanding_by); everything simulated is equal.
  for (Json* j : {&ja, &jb}) {
    j->erase("scenario");
    j->erase("notes");
  }
  ja.erase("inputs_digest");
  jb.erase("inputs_digest");
  EXPECT_EQ(ja.size(), jb.size());
  EXPECT_EQ(*CanonicalJson(ja), *CanonicalJson(jb));
}

// A replica joins at 20 s (ready 5 s later) and replica 0 drains at 30 s: the router
// sends nothing to 0 after 30 s, nothing to the new one before 25 s, replica 0 ends
// gone, and the fleet's invariants hold after every event.
TEST(ReplicaTable, AddAndDrainReplicasMidRunKeepsTheFleetInvariants) {
  const FleetPlan plan = BindText(TwoReplicas(kChat));
  const FleetSetup setup = plan.Setup();
  Outcomes outcomes;
  auto sim = Simulation::Create(setup, &outcomes);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  Simulation& s = **sim;
  auto source = MakeRequestSource(plan.workload, plan.seed);
  ASSERT_TRUE(source.ok());
  std::map<RequestId, std::pair<int32_t, SimTime>> routed;  // replica, arrival
  int64_t checks = 0;
  s.SetEventHook([&] {
    const Status st = s.CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.message();
    ++checks;
  });
  ASSERT_TRUE(s.Start(source->get()).ok());
  auto added = s.AddReplica(setup.replicas[0], SimTime() + Sec(20), Sec(5));
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, 2);
  EXPECT_EQ(s.state(2), ReplicaState::kPending);
  ASSERT_TRUE(s.DrainReplica(0, SimTime() + Sec(30)).ok());
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(22)).ok());
  EXPECT_EQ(s.state(2), ReplicaState::kLoading);
  EXPECT_EQ(s.replica(2).stats().steps, 0);
  ASSERT_TRUE(s.RunUntil(SimTime() + Sec(31)).ok());
  EXPECT_EQ(s.state(2), ReplicaState::kReady);
  EXPECT_TRUE(s.state(0) == ReplicaState::kDraining || s.state(0) == ReplicaState::kGone);
  ASSERT_TRUE(s.Finish().ok());
  EXPECT_EQ(s.state(0), ReplicaState::kGone);
  EXPECT_GT(checks, 1000);
  ASSERT_EQ(outcomes.by_id.size(), 600u);
  int64_t on_new = 0;
  for (const auto& [id, o] : outcomes.by_id) {
    EXPECT_EQ(o.status, RequestStatus::kOk) << id;
    if (o.replica == 0) {
      EXPECT_LT(o.arrival, SimTime() + Sec(30)) << id;
    }
    if (o.replica == 2) {
      EXPECT_GE(o.arrival, SimTime() + Sec(25)) << id;
      ++on_new;
    }
  }
  EXPECT_GT(on_new, 100);
  EXPECT_GT(s.figures(2).routed, 100);
  // Adding a replica of a role the fleet does not have is refused with a reason.
  ReplicaSetup prefill = setup.replicas[0];
  prefill.role = PoolRole::kPrefill;
  auto refused = s.AddReplica(prefill, s.now(), Duration());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("without a prefill pool"), std::string::npos) << refused.status().message();
}

TEST(ReplicaTable, ArrivalsWithEveryReplicaDrainedAreRejectedWithAReason) {
  const FleetPlan plan = BindText(TwoReplicas(kChat));
  Outcomes outcomes;
  auto sim = Simulation::Create(plan.Setup(), &outcomes);
  ASSERT_TRUE(sim.ok());
  auto source = MakeRequestSource(plan.workload, plan.seed);
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE((*sim)->Start(source->get()).ok());
  ASSERT_TRUE((*sim)->DrainReplica(0, SimTime() + Sec(10)).ok());
  ASSERT_TRUE((*sim)->DrainReplica(1, SimTime() + Sec(10)).ok());
  ASSERT_TRUE((*sim)->Finish().ok());
  int64_t rejected = 0;
  for (const auto& [id, o] : outcomes.by_id) {
    if (o.arrival >= SimTime() + Sec(10)) {
      EXPECT_EQ(o.status, RequestStatus::kRejected);
      EXPECT_EQ(o.reason, "no ready replica to serve it");
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 400);
}

Request Chat(RequestId id, SimTime arrival, int64_t prompt, int64_t output) {
  Request r;
  r.id = id;
  r.arrival = arrival;
  r.prompt = {PromptSegment{static_cast<ContentId>(500 + id), prompt}};
  r.output_tokens = output;
  return r;
}

// The emulator's way: requests submitted as they come, one cancelled mid-answer, time
// advanced in slices, every token reported with its index and time.
TEST(PushApi, SubmitCancelRunUntilAndTokenEvents) {
  FleetPlan plan = BindText(TwoReplicas(kChat));
  plan.pools[0].replicas = 1;
  Outcomes outcomes;
  auto sim = Simulation::Create(plan.Setup(), &outcomes);
  ASSERT_TRUE(sim.ok());
  Simulation& s = **sim;
  std::map<RequestId, std::vector<TokenEvent>> tokens;
  s.SetTokenCallback([&](const TokenEvent& t) { tokens[t.id].push_back(t); });
  s.SetEventHook([&] { ASSERT_TRUE(s.CheckInvariants().ok()); });
  ASSERT_TRUE(s.Start(nullptr).ok());
  ASSERT_TRUE(s.Submit(Chat(1, SimTime(), 300, 40)).ok());
  ASSERT_TRUE(s.Submit(Chat(2, SimTime() + Ms(5), 200, 200)).ok());
  ASSERT_TRUE(s.RunUntil(SimTime() + Ms(100)).ok());
  EXPECT_EQ(s.now(), SimTime() + Ms(100));
  EXPECT_GT(tokens[1].size(), 0u);
  EXPECT_LT(tokens[1].size(), 40u);
  // Submitted later, from where the clock stands.
  EXPECT_FALSE(s.Submit(Chat(3, SimTime() + Ms(50), 100, 10)).ok());  // in the past
  ASSERT_TRUE(s.Submit(Chat(3, SimTime() + Ms(150), 100, 10)).ok());
  EXPECT_FALSE(s.Submit(Chat(3, SimTime() + Ms(160), 100, 10)).ok());  // same id twice
  s.Cancel(2, SimTime() + Ms(600));
  ASSERT_TRUE(s.Finish().ok());
  ASSERT_EQ(outcomes.by_id.size(), 3u);
  EXPECT_EQ(outcomes.by_id[1].status, RequestStatus::kOk);
  EXPECT_EQ(outcomes.by_id[3].status, RequestStatus::kOk);
  EXPECT_EQ(outcomes.by_id[2].status, RequestStatus::kCancelled);
  for (RequestId id : {RequestId{1}, RequestId{3}}) {
    const auto& t = tokens[id];
    ASSERT_EQ(static_cast<int64_t>(t.size()), outcomes.by_id[id].output_tokens) << id;
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t[i].index, static_cast<int64_t>(i));
      if (i > 0) {
        EXPECT_GT(t[i].at, t[i - 1].at);
      }
    }
    EXPECT_EQ(t.front().at, *outcomes.by_id[id].first_token);
    EXPECT_EQ(t.back().at, *outcomes.by_id[id].finish);
  }
  EXPECT_GT(tokens[2].size(), 0u);
  EXPECT_LT(tokens[2].size(), 200u);
  EXPECT_LE(tokens[2].back().at, SimTime() + Ms(600));
}

// Records every step's shape.
class Steps final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override { EXPECT_EQ(o.status, RequestStatus::kOk) << o.id; }
  void OnStep(const StepRecord& step) override { shapes.push_back(step.shape); }
  std::vector<StepShape> shapes;
};

std::vector<StepShape> StepsOf(FleetPlan plan, const std::vector<Request>& submitted) {
  plan.pools[0].replicas = 1;
  Steps steps;
  auto sim = Simulation::Create(plan.Setup(), &steps);
  EXPECT_TRUE(sim.ok());
  Simulation& s = **sim;
  EXPECT_TRUE(s.Start(nullptr).ok());
  for (const Request& r : submitted) EXPECT_TRUE(s.Submit(r).ok());
  EXPECT_TRUE(s.Finish().ok());
  return steps.shapes;
}

// The scheduler exercise: a token budget of 16 in chunks of 8. A (16 prompt tokens) and B
// (4) arrive at the same instant: both are waiting when the first step is planned, so it
// holds A's first 8 tokens and all of B's, as vLLM's scheduler plans it.
TEST(SameInstantAdmission, ArrivalsAtOneInstantShareTheFirstStepInEitherOrder) {
  std::string text = TwoReplicas(kChat);
  const std::string scheduler = "policy: decode-first, max_batched_tokens: 4096";
  text.replace(text.find(scheduler), scheduler.size(), "policy: bounded-chunk, chunk_tokens: 8, max_batched_tokens: 16");
  const FleetPlan plan = BindText(text);
  const Request a = Chat(1, SimTime() + Ms(3), 16, 2), b = Chat(2, SimTime() + Ms(3), 4, 2);
  for (const std::vector<Request>& order : {std::vector<Request>{a, b}, std::vector<Request>{b, a}}) {
    const std::vector<StepShape> steps = StepsOf(plan, order);
    ASSERT_GE(steps.size(), 2u);
    EXPECT_EQ(steps[0].prefill_seqs, 2);
    EXPECT_EQ(steps[0].prefill_tokens, 12);  // A 8 + B 4
    EXPECT_EQ(steps[1].prefill_tokens, 8);   // A's last 8
  }
}

// Property: any number of arrivals at one instant, submitted in any order, give the same
// steps (seeded shuffles).
TEST(SameInstantAdmission, RandomOrdersOfOneInstantGiveTheSameSteps) {
  const FleetPlan plan = BindText(TwoReplicas(kChat));
  RngStream rng(11, "same-instant");
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 2 + static_cast<int>(rng.NextBelow(12));
    const SimTime at = SimTime() + Ms(static_cast<int64_t>(rng.NextBelow(50)));
    std::vector<Request> requests;
    for (int i = 0; i < n; ++i) {
      requests.push_back(Chat(i + 1, at, 10 + static_cast<int64_t>(rng.NextBelow(200)), 1 + static_cast<int64_t>(rng.NextBelow(8))));
    }
    const std::vector<StepShape> in_order = StepsOf(plan, requests);
    ASSERT_FALSE(in_order.empty());
    EXPECT_EQ(in_order[0].prefill_seqs, n) << "trial " << trial;
    for (size_t i = requests.size() - 1; i > 0; --i) std::swap(requests[i], requests[rng.NextBelow(i + 1)]);
    const std::vector<StepShape> shuffled = StepsOf(plan, requests);
    ASSERT_EQ(shuffled.size(), in_order.size()) << "trial " << trial;
    for (size_t k = 0; k < in_order.size(); ++k) {
      EXPECT_EQ(shuffled[k].prefill_tokens, in_order[k].prefill_tokens) << "trial " << trial << " step " << k;
      EXPECT_EQ(shuffled[k].decode_seqs, in_order[k].decode_seqs) << "trial " << trial << " step " << k;
    }
  }
}

TEST(PushApi, CancelBeforeArrivalEndsTheRequestAtItsArrival) {
  FleetPlan plan = BindText(TwoReplicas(kChat));
  Outcomes outcomes;
  auto sim = Simulation::Create(plan.Setup(), &outcomes);
  ASSERT_TRUE(sim.ok());
  ASSERT_TRUE((*sim)->Start(nullptr).ok());
  ASSERT_TRUE((*sim)->Submit(Chat(7, SimTime() + Sec(1), 100, 10)).ok());
  (*sim)->Cancel(7, SimTime() + Ms(10));
  ASSERT_TRUE((*sim)->Finish().ok());
  ASSERT_EQ(outcomes.by_id.size(), 1u);
  EXPECT_EQ(outcomes.by_id[7].status, RequestStatus::kCancelled);
  EXPECT_EQ(outcomes.by_id[7].reason, "cancelled before it arrived");
  EXPECT_EQ(*outcomes.by_id[7].finish, SimTime() + Sec(1));
  EXPECT_EQ(outcomes.by_id[7].output_tokens, 0);
}

// A pinned request (Request::pinned_replica, the emulator's port) stays on its replica
// whatever the router would choose; with prefill/decode pools it is that decode
// replica's to decode, and its prompt still goes to the prefill pool.
TEST(PushApi, PinnedRequestsStayOnTheirReplica) {
  FleetPlan plan = BindText(TwoReplicas(kChat));
  plan.pools[0].replicas = 3;
  Outcomes outcomes;
  auto sim = Simulation::Create(plan.Setup(), &outcomes);
  ASSERT_TRUE(sim.ok());
  Simulation& s = **sim;
  s.SetEventHook([&] { ASSERT_TRUE(s.CheckInvariants().ok()); });
  ASSERT_TRUE(s.Start(nullptr).ok());
  for (RequestId id = 0; id < 12; ++id) {
    Request r = Chat(id, SimTime() + Ms(id), 300, 20);
    r.pinned_replica = 2;  // least-outstanding would spread these over the three
    ASSERT_TRUE(s.Submit(r).ok());
  }
  ASSERT_TRUE(s.Finish().ok());
  ASSERT_EQ(outcomes.by_id.size(), 12u);
  for (const auto& [id, o] : outcomes.by_id) {
    EXPECT_EQ(o.status, RequestStatus::kOk) << id;
    EXPECT_EQ(o.replica, 2) << id;
  }
  EXPECT_EQ(s.figures(0).routed, 0);
  EXPECT_EQ(s.figures(1).routed, 0);
}

TEST(PushApi, PinnedRequestsWithPoolsDecodeOnTheirReplicaAndPrefillOnThePool) {
  const std::string pools =
      "version: 1\nname: pinned-pools\nseed: 3\n"
      "model: {name: llama-3.1-8b, max_context: 16384}\n"
      "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8, inter_node_link: ib-ndr-400}\n"
      "deployment:\n  pools:\n    - {role: prefill, replicas: 2, tp: 1}\n    - {role: decode, replicas: 2, tp: 1}\n"
      "  disaggregation: {setup: 2ms}\n"
      "engine:\n  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}\n"
      "workload:\n" + std::string(kChat);
  FleetPlan plan = BindText(pools);
  Outcomes outcomes;
  auto sim = Simulation::Create(plan.Setup(), &outcomes);
  ASSERT_TRUE(sim.ok());
  Simulation& s = **sim;
  s.SetEventHook([&] { ASSERT_TRUE(s.CheckInvariants().ok()); });
  ASSERT_TRUE(s.Start(nullptr).ok());
  for (RequestId id = 0; id < 10; ++id) {
    Request r = Chat(id, SimTime() + Ms(2 * id), 2000, 10);
    r.pinned_replica = id < 8 ? 3 : 0;  // the second decode replica; the last two: a prefill replica
    ASSERT_TRUE(s.Submit(r).ok());
  }
  ASSERT_TRUE(s.Finish().ok());
  ASSERT_EQ(outcomes.by_id.size(), 10u);
  for (const auto& [id, o] : outcomes.by_id) {
    EXPECT_EQ(o.status, RequestStatus::kOk) << id;
    EXPECT_EQ(o.replica, id < 8 ? 3 : 0) << id;
  }
  EXPECT_EQ(s.figures(2).routed, 0);  // the other decode replica
  EXPECT_EQ(s.figures(3).routed, 8);
  EXPECT_EQ(s.figures(0).handed_off + s.figures(1).handed_off, 8);  // every decode-port prompt prefilled on the pool
}

// Random fleets with pools, faults, replication, adapters, speculative rounds,
// invalidations, deadlines and cancellations (small KV pools, so the recount after every
// event stays cheap under the sanitizers): the fleet's invariants (blocks, requests and in-flight handoffs recounted
// across replicas and stages) hold after every event.
// Four shards of four random fleets each (separate test cases, so each stays well inside
// the test timeout under the sanitizers).
class FleetInvariants : public ::testing::TestWithParam<int> {};

TEST_P(FleetInvariants, HoldAfterEveryEventOnRandomScenarios) {
  RngStream rng(77 + static_cast<uint64_t>(GetParam()), "fleet-invariants");
  auto pick = [&](std::initializer_list<const char*> options) {
    return std::string(*(options.begin() + static_cast<std::ptrdiff_t>(rng.NextBelow(options.size()))));
  };
  for (int k = 0; k < 4; ++k) {
    const int run = 4 * GetParam() + k;
    const bool pools = run % 2 == 0;
    std::string text =
        "version: 1\nname: inv\nseed: " + std::to_string(run) +
        "\nmodel: {name: llama-3.1-8b, max_context: 16384}\n"
        "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n";
    if (pools) {
      text += "deployment:\n  pools:\n    - {role: prefill, replicas: " + pick({"1", "2"}) +
              ", tp: 1, gpu_memory_utilization: 0.25}\n    - {role: decode, replicas: " + pick({"1", "2"}) +
              ", tp: 1, gpu_memory_utilization: " + pick({"0.22", "0.25"}) +
              "}\n  disaggregation: {colocate_below_tokens: " + pick({"0", "800"}) + ", timeout: " +
              pick({"80ms", "1s"}) + ", retries: " + pick({"0", "2"}) + "}\n";
    } else {
      text += "deployment: {replicas: " + pick({"2", "3"}) + ", tp: 1, gpu_memory_utilization: " +
              pick({"0.22", "0.25"}) + "}\n";
    }
    text += "engine:\n  scheduler: {policy: " + pick({"decode-first", "bounded-chunk", "prefill-first"}) +
            ", max_batched_tokens: 2048, max_running: 32}\n"
            "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: "
            "0.1ms}}\n"
            "  prefix_cache: {enabled: true}\n";
    const bool adapters = !pools && rng.NextBelow(2) == 0;
    if (adapters) text += "  adapters: {size: 200MiB, memory_budget: 600MiB, load_time: 40ms}\n";
    const bool replication = !pools && !adapters && rng.NextBelow(2) == 0;
    text += "router:\n  policy: " + std::string(replication ? "cache-aware" : pick({"cache-aware", "least-outstanding"})) +
            "\n  telemetry_delay: " + pick({"0s", "30ms"}) + "\n";
    if (replication) text += "  replication: {replica_rate: 2/s, prefix_tokens: 256, window: 2s, min_hold: 1s}\n";
    // Speculative rounds (larger decode chunks, several tokens per step) on the fleets
    // without pools: drawn after the router so the earlier choices stay as they were.
    if (!pools && rng.NextBelow(2) == 0) {
      const std::string speculation = "  speculation: {method: ngram, tokens_per_round: 3, acceptance: [0.7, 0.6, 0.5]}\n";
      text.insert(text.find("router:\n"), speculation);
    }
    text += "workload:\n  requests: 60\n  arrival: {process: poisson, rate: " + pick({"5/s", "20/s"}) +
            "}\n  tenants: {count: 3, popularity: {zipf: 1.5}}\n";
    if (adapters) text += "  adapters: {count: 6, popularity: {zipf: 1.2}}\n";
    text += "  classes:\n    chat:\n      share: 1\n      prompt:\n"
            "        - {segment: tenant-instructions, tokens: 600}\n"
            "        - {segment: unique, tokens: {uniform: [50, 3000]}}\n"
            "      output_tokens: {uniform: [1, 200]}\n" +
            pick({"", "      deadline: {uniform: [300ms, 8s]}\n"}) +
            pick({"", "      cancel: {probability: 0.3, after: {exponential: {mean: 1s}}}\n"}) +
            "  events:\n    - {at: 2s, invalidate: " + pick({"model-revision", "tokenizer"}) + "}\n";
    if (pools) {
      text += "faults:\n  kv_transfer: {delay: 100ms, delay_probability: " + pick({"0", "0.4"}) +
              ", failure_probability: " + pick({"0", "0.3"}) + "}\n";
    }
    SCOPED_TRACE(text);
    auto s = LoadScenarioText(text, "inv.yaml", "");
    ASSERT_TRUE(s.ok()) << s.status().message();
    RunOptions opt;
    opt.write_files = false;
    opt.check_invariants_every_event = true;
    auto r = RunScenario(*s, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->requests, 60);
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, FleetInvariants, ::testing::Range(0, 4));

// Regression: a scenario name with ESC, BEL and CR printed a forged summary line.
TEST(ScenarioName, AControlCharacterIsALocatedError) {
  std::string text(testing::kSmallInteractive);
  text.replace(text.find("name: small"), 11, "name: \"atlas\\e[31m\\a\\rFAKE LINE\"");
  auto s = LoadScenarioText(text, "s.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  const std::string& m = s.status().message();
  EXPECT_EQ(m.substr(0, m.find('\n')),
            "s.yaml:2:7: name: contains the control character U+001B at byte 5: names are printed, so control and "
            "bidirectional-formatting characters are refused");
}

}  // namespace
}  // namespace fleetplan
