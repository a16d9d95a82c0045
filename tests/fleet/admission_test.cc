// Fleet admission (fleet/admission.h): classes with priorities, bounded queues, aging,
// tenant quotas, retry_after and replayed ids — each driven by a simulated run and
// checked against what the run did, event by event.
#include "support/build_paths.h"
#include "fleetplan/fleet/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {
namespace {

// One replica of llama-3.1-8b with affine steps: a request of 200 prompt and 50 output
// tokens takes about 0.5 s with 4 in flight, so 4 in flight per replica serve about 8/s.
// `chat` (90%) is the interactive class, `bulk` (10%) the batch class.
struct Knobs {
  int replicas = 1;
  double rate = 20;  // arrivals per second, both classes together
  std::string duration = "60s";
  int64_t max_in_flight = 4;
  int64_t interactive_queue = 10;
  int64_t batch_queue = 50;
  std::string batch_wait = "10s";
  std::string batch_margin;  // empty: the default (max_wait / 4)
  std::string tenants;       // workload.tenants
  std::string quota;         // admission.tenant_quota
  std::string overrides;     // admission.tenants
};

std::string ScenarioText(const Knobs& k) {
  std::string text = fmt::format(R"(version: 1
name: admission
seed: 11
model: {{name: llama-3.1-8b, max_context: 8192}}
hardware: {{gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}}
deployment: {{replicas: {}, tp: 1}}
engine:
  scheduler: {{policy: bounded-chunk, max_batched_tokens: 2048, max_running: 64}}
  step_model: {{kind: affine, prefill: {{base: 5ms, per_token: 0.02ms}}, decode: {{base: 8ms, per_seq: 0.1ms}}}}
router: {{policy: least-outstanding}}
workload:
  duration: {}
  arrival: {{process: poisson, rate: {}/s}}
{}  classes:
    chat: {{share: 0.9, prompt: [{{segment: unique, tokens: 200}}], output_tokens: 50}}
    bulk: {{share: 0.1, prompt: [{{segment: unique, tokens: 200}}], output_tokens: 50}}
admission:
  classes:
    interactive: {{priority: 10, max_queue: {}, max_wait: 2s}}
    batch: {{priority: 0, max_queue: {}, max_wait: {}{}}}
  assign:
    - {{workload_class: chat, class: interactive}}
  default_class: batch
  max_in_flight_per_replica: {}
)",
                                 k.replicas, k.duration, k.rate, k.tenants.empty() ? "" : "  tenants: " + k.tenants + "\n",
                                 k.interactive_queue, k.batch_queue, k.batch_wait,
                                 k.batch_margin.empty() ? "" : ", aging_margin: " + k.batch_margin, k.max_in_flight);
  if (!k.quota.empty()) text += "  tenant_quota: " + k.quota + "\n";
  if (!k.overrides.empty()) text += "  tenants: " + k.overrides + "\n";
  return text;
}

// What the run did, as the sink and the fleet observer saw it.
struct Observed : EngineObserver, FleetObserver {
  std::vector<RequestOutcome> outcomes;
  std::vector<RouteEvent> routes;
  void OnRequestDone(const RequestOutcome& o) override { outcomes.push_back(o); }
  void OnRoute(const RouteEvent& e) override { routes.push_back(e); }
  void OnTransfer(const TransferEvent& e) override { (void)e; }
};

// A source that remembers every request it hands out (their tenants and prompts).
class Recording final : public RequestSource {
 public:
  explicit Recording(std::unique_ptr<RequestSource> inner) : inner_(std::move(inner)) {}
  Expected<std::optional<Request>> Next() override {
    FP_ASSIGN_OR_RETURN(std::optional<Request> r, inner_->Next());
    if (r) requests.emplace(r->id, *r);
    return r;
  }
  Expected<std::optional<SimTime>> PeekArrival() override { return inner_->PeekArrival(); }
  bool exhausted() const override { return inner_->exhausted(); }
  const WorkloadNames& names() const override { return inner_->names(); }
  Json Describe() const override { return inner_->Describe(); }
  std::map<RequestId, Request> requests;

 private:
  std::unique_ptr<RequestSource> inner_;
};

// A run through the kernel itself, with `hook` called (and the invariants recounted)
// after every event.
struct KernelRun {
  std::unique_ptr<Simulation> sim;
  std::unique_ptr<Recording> source;
  Observed observed;
  Status invariants = Status::Ok();
  const Admission* admission() const { return sim->component<Admission>(); }
};

std::unique_ptr<KernelRun> RunKernel(const std::string& text, const std::function<void(KernelRun&)>& hook = {}) {
  auto run = std::make_unique<KernelRun>();
  Expected<Scenario> s = LoadScenarioText(text, "admission.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  Expected<FleetPlan> plan = Bind(*s);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return nullptr;
  Expected<std::unique_ptr<RequestSource>> source = MakeRequestSource(plan->workload, plan->seed);
  EXPECT_TRUE(source.ok());
  run->source = std::make_unique<Recording>(std::move(*source));
  Expected<std::unique_ptr<Simulation>> sim = Simulation::Create(plan->Setup(), &run->observed);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  if (!sim.ok()) return nullptr;
  run->sim = std::move(*sim);
  run->sim->SetFleetObserver(&run->observed);
  KernelRun* r = run.get();
  run->sim->SetEventHook([r, hook] {
    if (r->invariants.ok()) r->invariants = r->sim->CheckInvariants();
    if (hook) hook(*r);
  });
  const Status done = run->sim->Run(*run->source);
  EXPECT_TRUE(done.ok()) << done.message();
  EXPECT_TRUE(run->invariants.ok()) << run->invariants.message();
  return run;
}

int32_t ClassIndex(const Admission& a, std::string_view name) {
  for (size_t i = 0; i < a.config().classes.size(); ++i) {
    if (a.config().classes[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

// The first time each request was routed (released by admission), by id.
std::map<RequestId, SimTime> ReleaseTimes(const Observed& o) {
  std::map<RequestId, SimTime> out;
  for (const RouteEvent& e : o.routes) out.emplace(e.id, e.at);
  return out;
}

std::vector<int64_t> WaitsOf(const KernelRun& run, ClassId workload_class) {
  std::vector<int64_t> waits;
  for (const auto& [id, at] : ReleaseTimes(run.observed)) {
    const Request& r = run.source->requests.at(id);
    if (r.class_id == workload_class) waits.push_back((at - r.arrival).ns());
  }
  std::sort(waits.begin(), waits.end());
  return waits;
}

ClassId WorkloadClass(const KernelRun& run, std::string_view name) {
  const auto& names = run.source->names().classes;
  return static_cast<ClassId>(std::find(names.begin(), names.end(), name) - names.begin());
}

// Sustained interactive arrivals at 2.5x capacity with a 10% batch trickle: aging
// releases every batch request within its max_wait (10 s; aged from 7.5 s on), while
// interactive requests keep priority (they wait about a second).
TEST(Admission, AgingBoundsEveryBatchWaitUnderSustainedInteractiveOverload) {
  const auto run = RunKernel(ScenarioText(Knobs{}));
  ASSERT_NE(run, nullptr);
  const Admission& a = *run->admission();
  const auto& batch = a.figures(ClassIndex(a, "batch"));
  const auto& interactive = a.figures(ClassIndex(a, "interactive"));
  ASSERT_GT(batch.arrived, 100);
  EXPECT_EQ(batch.admitted, batch.arrived);
  EXPECT_EQ(batch.expired, 0);
  EXPECT_GT(batch.aged, batch.admitted / 2);  // most of them went ahead of interactive by aging
  // The interactive stream is above capacity the whole time: its queue fills and overflows.
  EXPECT_EQ(interactive.max_queue_length, 10);
  EXPECT_GT(interactive.rejected.at("queue_full"), interactive.arrived / 3);

  // Per request, from the routing events: every batch request was released within its
  // class's max_wait (the bound is max_wait itself: one still queued then expires).
  const std::vector<int64_t> batch_waits = WaitsOf(*run, WorkloadClass(*run, "bulk"));
  ASSERT_EQ(static_cast<int64_t>(batch_waits.size()), batch.arrived);
  EXPECT_LE(batch_waits.back(), Ms(10000).ns());
  const std::vector<int64_t> interactive_waits = WaitsOf(*run, WorkloadClass(*run, "chat"));
  ASSERT_EQ(static_cast<int64_t>(interactive_waits.size()), interactive.admitted);
  EXPECT_LE(interactive_waits.back(), Ms(2000).ns());
  const int64_t batch_p50 = batch_waits[batch_waits.size() / 2];
  const int64_t interactive_p50 = interactive_waits[interactive_waits.size() / 2];
  EXPECT_LT(interactive_p50 * 4, batch_p50) << interactive_p50 << " vs " << batch_p50;
  // The admission wait is part of TTFT: a request's first token comes after its release,
  // and TTFT is measured from its arrival.
  const std::map<RequestId, SimTime> released = ReleaseTimes(run->observed);
  int64_t answered = 0;
  for (const RequestOutcome& o : run->observed.outcomes) {
    if (o.status != RequestStatus::kOk) continue;
    ++answered;
    ASSERT_TRUE(o.first_token.has_value());
    EXPECT_EQ(o.arrival, run->source->requests.at(o.id).arrival);
    EXPECT_GT(*o.first_token, released.at(o.id));
  }
  EXPECT_EQ(answered, batch.admitted + interactive.admitted);
}

// The same run with aging off: the interactive queue is never empty while arrivals last,
// so batch requests wait out their max_wait and expire — aging is what bounds them.
TEST(Admission, WithoutAgingBatchStarvesBehindInteractive) {
  Knobs k;
  k.batch_margin = "off";
  const auto run = RunKernel(ScenarioText(k));
  ASSERT_NE(run, nullptr);
  const Admission& a = *run->admission();
  const auto& batch = a.figures(ClassIndex(a, "batch"));
  EXPECT_EQ(batch.aged, 0);
  EXPECT_GT(batch.expired * 4, batch.arrived * 3) << batch.expired << " of " << batch.arrived;
  // Expired requests end rejected with reason "expired" exactly at their max_wait.
  int64_t expired = 0;
  for (const RequestOutcome& o : run->observed.outcomes) {
    if (o.reason != "expired") continue;
    ++expired;
    EXPECT_EQ(o.status, RequestStatus::kRejected);
    EXPECT_EQ(*o.finish - o.arrival, Ms(10000));
    ASSERT_TRUE(o.retry_after.has_value());
  }
  EXPECT_EQ(expired, batch.expired);
}

// Over capacity with max_queue 5: the queue never holds more than 5 (checked after
// every event); the overflow is rejected "queue_full" with a finite retry_after that
// follows the measured release rate, so twice the replicas halve it.
TEST(Admission, QueueBoundHoldsAndRetryAfterTracksTheDrainRate) {
  std::map<int, double> median_retry_s;
  std::map<int, double> measured_s;
  for (int replicas : {1, 2}) {
    SCOPED_TRACE(replicas);
    Knobs k;
    k.replicas = replicas;
    k.rate = 40;
    k.duration = "40s";
    k.interactive_queue = 5;  // 6 / the release rate stays under the 2 s cap
    k.batch_margin = "off";   // interactive gets every slot: its release rate is the fleet's
    int64_t longest = 0;
    const auto run = RunKernel(ScenarioText(k), [&](KernelRun& r) {
      const Admission& a = *r.admission();
      longest = std::max(longest, a.queue_length(ClassIndex(a, "interactive")));
      EXPECT_LE(a.queue_length(ClassIndex(a, "interactive")), 5);
      EXPECT_LE(a.queue_length(ClassIndex(a, "batch")), 50);
    });
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(longest, 5);
    // Interactive releases per second over the arrivals' steady part (after the first
    // retry window), measured from the routing events.
    const ClassId chat = WorkloadClass(*run, "chat");
    int64_t released = 0;
    for (const auto& [id, at] : ReleaseTimes(run->observed)) {
      if (run->source->requests.at(id).class_id == chat && at >= SimTime() + Ms(10000) && at < SimTime() + Ms(40000)) {
        ++released;
      }
    }
    const double rate = static_cast<double>(released) / 30.0;
    std::vector<double> retry;
    for (const RequestOutcome& o : run->observed.outcomes) {
      if (o.reason != "queue_full") continue;
      EXPECT_EQ(o.status, RequestStatus::kRejected);
      ASSERT_TRUE(o.retry_after.has_value());
      EXPECT_GT(*o.retry_after, Duration());
      EXPECT_LE(*o.retry_after, o.class_id == chat ? Ms(2000) : Ms(10000));  // at most the class's max_wait
      if (o.arrival >= SimTime() + Ms(10000) && o.class_id == chat) retry.push_back(o.retry_after->seconds());
    }
    ASSERT_GT(retry.size(), 100u);
    std::sort(retry.begin(), retry.end());
    median_retry_s[replicas] = retry[retry.size() / 2];
    measured_s[replicas] = 6.0 / rate;  // the 5 queued and the retry, at the measured rate
    EXPECT_NEAR(median_retry_s[replicas], measured_s[replicas], 0.05 * measured_s[replicas]);
  }
  const double ratio = median_retry_s[2] / median_retry_s[1];
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.55);
}

// Tenant quotas, checked after every event against the live requests themselves:
// tenant-0 may have 1 request in flight, the others 3 and 500 tokens (so 2 of these
// 200- and 250-token charges), and each tenant's admitted tokens respect its bucket (800 tokens
// burst, 1000 tokens/s) over every window.
TEST(Admission, TenantQuotasHoldAtEveryEvent) {
  Knobs k;
  k.rate = 12;
  k.duration = "30s";
  k.tenants = "{count: 3}";
  k.quota = "{max_concurrent: 3, max_tokens_in_flight: 500, token_rate: 1000/s, burst: 800}";
  k.overrides = "{tenant-0: {max_concurrent: 1}}";
  std::string text = ScenarioText(k);
  // Worst-case charges for the batch class: 200 prompt + 50 output.
  text.replace(text.find("max_wait: 10s"), 13, "max_wait: 10s, reserve_kv: worst-case");
  std::map<TenantId, int64_t> peak;
  const auto run = RunKernel(text, [&](KernelRun& r) {
    std::map<TenantId, int64_t> live;
    std::map<TenantId, int64_t> tokens;
    r.sim->ForEachRoute([&](RequestId id, const RouteInfo&) {
      const Request& q = r.source->requests.at(id);
      ++live[q.tenant];
      tokens[q.tenant] += q.prompt_tokens() + (q.class_id == 1 ? q.output_tokens : 0);
    });
    for (const auto& [tenant, n] : live) {
      EXPECT_LE(n, tenant == 0 ? 1 : 3) << "tenant " << tenant << " at " << r.sim->now().ns();
      EXPECT_LE(tokens[tenant], 500);
      EXPECT_EQ(r.admission()->tenant_concurrent(tenant), n);
      EXPECT_EQ(r.admission()->tenant_tokens_in_flight(tenant), tokens[tenant]);
      peak[tenant] = std::max(peak[tenant], n);
    }
  });
  ASSERT_NE(run, nullptr);
  // The quotas bound: tenant-0 at 1, the others at the token limit (2 requests).
  EXPECT_EQ(peak[0], 1);
  EXPECT_EQ(peak[1], 2);
  EXPECT_EQ(peak[2], 2);
  // Token rate: over every window [a, b] of releases, a tenant's charged tokens are at
  // most burst + rate x (b - a).
  std::map<TenantId, std::vector<std::pair<SimTime, int64_t>>> released;
  for (const auto& [id, at] : ReleaseTimes(run->observed)) {
    const Request& q = run->source->requests.at(id);
    released[q.tenant].push_back({at, q.prompt_tokens() + (q.class_id == 1 ? q.output_tokens : 0)});
  }
  for (auto& [tenant, list] : released) {
    std::sort(list.begin(), list.end());
    ASSERT_GT(list.size(), 20u);
    for (size_t i = 0; i < list.size(); ++i) {
      int64_t sum = 0;
      for (size_t j = i; j < list.size(); ++j) {
        sum += list[j].second;
        const double allowed = 800.0 + 1000.0 * (list[j].first - list[i].first).seconds();
        ASSERT_LE(static_cast<double>(sum), allowed + 1e-6) << "tenant " << tenant << " window " << i << ".." << j;
      }
    }
  }
  // Quota waits overflow into the class queues: rejections name the binding limit.
  std::map<std::string, int64_t> reasons;
  for (const RequestOutcome& o : run->observed.outcomes) {
    if (o.replica < 0) ++reasons[o.reason];
  }
  EXPECT_GT(reasons["tenant_concurrency"] + reasons["tenant_tokens"] + reasons["tenant_token_rate"], 0)
      << fmt::format("{}", reasons.size());
}

// Rejections and expiries change no counter: an event that only ends queued or arriving
// requests in admission leaves in-flight, tenant and routed counts as they were, and the
// queues shorter by the requests it expired.
TEST(Admission, RejectedAndExpiredWorkLeavesEveryCounterAsBefore) {
  Knobs k;
  k.batch_margin = "off";
  k.tenants = "{count: 2}";
  struct Counters {
    int64_t in_flight = 0;
    int64_t queued = 0;
    int64_t t0 = 0, t1 = 0, tok0 = 0, tok1 = 0;
    size_t outcomes = 0, routes = 0;
  };
  Counters before;
  int64_t checked_expiries = 0;
  int64_t checked_rejections = 0;
  const auto snapshot = [](KernelRun& r) {
    const Admission& a = *r.admission();
    Counters c;
    c.in_flight = a.in_flight();
    c.queued = a.queue_length(0) + a.queue_length(1);
    c.t0 = a.tenant_concurrent(0);
    c.t1 = a.tenant_concurrent(1);
    c.tok0 = a.tenant_tokens_in_flight(0);
    c.tok1 = a.tenant_tokens_in_flight(1);
    c.outcomes = r.observed.outcomes.size();
    c.routes = r.observed.routes.size();
    return c;
  };
  const auto run = RunKernel(ScenarioText(k), [&](KernelRun& r) {
    const Counters now = snapshot(r);
    if (now.routes == before.routes && now.outcomes > before.outcomes) {
      bool only_admission = true;
      int64_t expired = 0;
      for (size_t i = before.outcomes; i < now.outcomes; ++i) {
        const RequestOutcome& o = r.observed.outcomes[i];
        only_admission = only_admission && o.replica < 0;
        expired += o.reason == "expired" ? 1 : 0;
      }
      if (only_admission) {
        EXPECT_EQ(now.in_flight, before.in_flight);
        EXPECT_EQ(now.t0, before.t0);
        EXPECT_EQ(now.t1, before.t1);
        EXPECT_EQ(now.tok0, before.tok0);
        EXPECT_EQ(now.tok1, before.tok1);
        EXPECT_EQ(now.queued, before.queued - expired);
        checked_expiries += expired;
        checked_rejections += static_cast<int64_t>(now.outcomes - before.outcomes) - expired;
      }
    }
    before = now;
  });
  ASSERT_NE(run, nullptr);
  EXPECT_GT(checked_expiries, 50);
  EXPECT_GT(checked_rejections, 100);
}

// A one-tenant fleet that admits one request at a time, driven through the push API; the
// fleet's invariants are recounted after every event and `check` adds the test's own.
struct PushedFleet {
  Observed seen;
  std::unique_ptr<Simulation> sim;
  const Admission* admission = nullptr;
  Status invariants = Status::Ok();
};

std::unique_ptr<PushedFleet> OneAtATime(std::function<void(const Admission&)> check) {
  Knobs k;
  k.max_in_flight = 1;
  k.tenants = "{count: 1}";
  Expected<Scenario> s = LoadScenarioText(ScenarioText(k), "admission.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  Expected<FleetPlan> plan = Bind(*s);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return nullptr;
  auto f = std::make_unique<PushedFleet>();
  auto created = Simulation::Create(plan->Setup(), &f->seen);
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return nullptr;
  f->sim = std::move(*created);
  f->admission = f->sim->component<Admission>();
  EXPECT_NE(f->admission, nullptr);
  if (f->admission == nullptr) return nullptr;
  PushedFleet* raw = f.get();
  f->sim->SetEventHook([raw, check = std::move(check)] {
    if (raw->invariants.ok()) raw->invariants = raw->sim->CheckInvariants();
    check(*raw->admission);
  });
  EXPECT_TRUE(f->sim->Start(nullptr).ok());
  return f;
}

// A request of the chat class (interactive) from tenant 0 with its own prompt content.
Request ChatRequest(RequestId id, int64_t arrival_ms, int64_t output_tokens) {
  Request r;
  r.id = id;
  r.class_id = 0;
  r.tenant = 0;
  r.arrival = SimTime() + Ms(arrival_ms);
  r.prompt = {{static_cast<ContentId>(1000 + id), 200}};
  r.output_tokens = output_tokens;
  return r;
}

// A request submitted again under its id (a client replay) through the push API is
// rejected "duplicate" and reserves nothing: before the first has arrived, while it is
// queued, and while it is admitted and running.
TEST(Admission, ReplayedIdReservesOnce) {
  int64_t most_tokens = 0;
  const auto fleet = OneAtATime([&](const Admission& a) {
    EXPECT_LE(a.tenant_concurrent(0), 1);
    most_tokens = std::max(most_tokens, a.tenant_tokens_in_flight(0));
  });
  ASSERT_NE(fleet, nullptr);
  Simulation& sim = *fleet->sim;
  const Admission* a = fleet->admission;
  const Status& invariants = fleet->invariants;
  const Observed& seen = fleet->seen;
  const auto request = [](RequestId id, int64_t arrival_ms) { return ChatRequest(id, arrival_ms, 200); };
  ASSERT_TRUE(sim.Submit(request(1, 0)).ok());
  ASSERT_TRUE(sim.Submit(request(1, 5)).ok());  // before the first arrived
  ASSERT_TRUE(sim.Submit(request(2, 10)).ok());  // queued behind 1 (one in flight at most)
  ASSERT_TRUE(sim.RunUntil(SimTime() + Ms(100)).ok());
  EXPECT_EQ(a->in_flight(), 1);
  EXPECT_EQ(a->queue_length(0), 1);
  EXPECT_EQ(a->tenant_tokens_in_flight(0), 200);
  ASSERT_TRUE(sim.Submit(request(1, 150)).ok());  // while 1 runs
  ASSERT_TRUE(sim.Submit(request(2, 160)).ok());  // while 2 waits
  ASSERT_TRUE(sim.RunUntil(SimTime() + Ms(200)).ok());
  EXPECT_EQ(a->in_flight(), 1);
  EXPECT_EQ(a->queue_length(0), 1);
  EXPECT_EQ(a->tenant_concurrent(0), 1);
  EXPECT_EQ(a->tenant_tokens_in_flight(0), 200);
  ASSERT_TRUE(sim.Finish().ok());
  EXPECT_TRUE(invariants.ok()) << invariants.message();
  EXPECT_EQ(most_tokens, 200);
  std::map<std::pair<RequestId, std::string>, int> ends;
  for (const RequestOutcome& o : seen.outcomes) {
    ++ends[{o.id, o.status == RequestStatus::kOk ? "ok" : o.reason}];
    if (o.reason == "duplicate") {
      EXPECT_EQ(o.status, RequestStatus::kRejected);
      EXPECT_EQ(o.replica, -1);
      EXPECT_FALSE(o.retry_after.has_value());
    }
  }
  const std::map<std::pair<RequestId, std::string>, int> want = {
      {{1, "ok"}, 1}, {{1, "duplicate"}, 2}, {{2, "ok"}, 1}, {{2, "duplicate"}, 1}};
  EXPECT_EQ(ends, want);
  EXPECT_EQ(a->figures(0).rejected.at("duplicate"), 3);
  EXPECT_EQ(a->figures(0).admitted, 2);
  EXPECT_EQ(a->tenant_concurrent(0), 0);
  EXPECT_EQ(a->tenant_tokens_in_flight(0), 0);
}

// A queued request whose client gives up (its cancel_at, or Simulation::Cancel) ends
// "cancelled", and one whose deadline passes while queued ends "timeout", both without
// reaching a replica or a counter; the requests behind them move up.
TEST(Admission, CancelAndDeadlineWhileQueuedEndWithoutACharge) {
  const auto fleet = OneAtATime([](const Admission& a) { EXPECT_LE(a.tenant_concurrent(0), 1); });
  ASSERT_NE(fleet, nullptr);
  Simulation& sim = *fleet->sim;
  const Admission* a = fleet->admission;
  const Status& invariants = fleet->invariants;
  const Observed& seen = fleet->seen;
  const auto request = [](RequestId id, int64_t arrival_ms) { return ChatRequest(id, arrival_ms, 100); };
  ASSERT_TRUE(sim.Submit(request(1, 0)).ok());  // runs about a second
  Request cancels = request(2, 10);
  cancels.cancel_at = SimTime() + Ms(50);
  ASSERT_TRUE(sim.Submit(cancels).ok());
  Request late = request(3, 20);
  late.deadline = SimTime() + Ms(80);
  ASSERT_TRUE(sim.Submit(late).ok());
  ASSERT_TRUE(sim.Submit(request(4, 30)).ok());
  ASSERT_TRUE(sim.Submit(request(5, 40)).ok());
  sim.Cancel(5, SimTime() + Ms(60));
  ASSERT_TRUE(sim.RunUntil(SimTime() + Ms(100)).ok());
  EXPECT_EQ(a->queue_length(0), 1);  // request 4
  EXPECT_EQ(a->in_flight(), 1);
  EXPECT_EQ(a->tenant_tokens_in_flight(0), 200);
  ASSERT_TRUE(sim.Finish().ok());
  EXPECT_TRUE(invariants.ok()) << invariants.message();
  std::map<RequestId, const RequestOutcome*> by_id;
  for (const RequestOutcome& o : seen.outcomes) by_id[o.id] = &o;
  ASSERT_EQ(by_id.size(), 5u);
  EXPECT_EQ(by_id[1]->status, RequestStatus::kOk);
  EXPECT_EQ(by_id[2]->status, RequestStatus::kCancelled);
  EXPECT_EQ(*by_id[2]->finish, SimTime() + Ms(50));
  EXPECT_EQ(by_id[3]->status, RequestStatus::kTimeout);
  EXPECT_EQ(*by_id[3]->finish, SimTime() + Ms(80));
  EXPECT_EQ(by_id[4]->status, RequestStatus::kOk);
  EXPECT_EQ(by_id[5]->status, RequestStatus::kCancelled);
  EXPECT_EQ(*by_id[5]->finish, SimTime() + Ms(60));
  for (RequestId id : {2, 3, 5}) EXPECT_EQ(by_id[id]->replica, -1) << id;
  // Request 4 started when 1 ended: its first token came after 1's finish.
  EXPECT_GT(*by_id[4]->first_token, *by_id[1]->finish);
  EXPECT_EQ(a->figures(0).ended_waiting, 3);
  EXPECT_EQ(a->figures(0).admitted, 2);
  EXPECT_EQ(a->tenant_concurrent(0), 0);
}

// Capacity is counted over ready serving replicas: a replica that joins mid-run raises
// it from 4 to 8 in flight when it is ready (after its 2 s load), and admission fills it;
// when the first replica drains it falls back to 4, and nothing is released while the
// requests in flight are at or above it.
TEST(Admission, CapacityFollowsReplicasThatJoinAndLeave) {
  Knobs k;
  k.duration = "40s";
  bool added = false;
  bool drained = false;
  int64_t most_before = 0;
  int64_t most_two = 0;
  int64_t last_in_flight = 0;
  int64_t over_capacity_events = 0;
  const auto run = RunKernel(ScenarioText(k), [&](KernelRun& r) {
    const Admission& a = *r.admission();
    int64_t ready = 0;
    for (int32_t i = 0; i < r.sim->replica_count(); ++i) ready += r.sim->state(i) == ReplicaState::kReady ? 1 : 0;
    EXPECT_EQ(a.capacity(), 4 * ready);
    if (a.in_flight() > a.capacity()) {
      ++over_capacity_events;  // the drained replica's requests finish; none is added
      EXPECT_LE(a.in_flight(), last_in_flight);
    }
    last_in_flight = a.in_flight();
    if (!added) most_before = std::max(most_before, a.in_flight());
    if (ready == 2) most_two = std::max(most_two, a.in_flight());
    if (!added && r.sim->now() >= SimTime() + Ms(10000)) {
      added = true;
      const ReplicaSetup same = r.sim->setup_of(0);  // a copy: the table grows
      EXPECT_TRUE(r.sim->AddReplica(same, r.sim->now(), Ms(2000)).ok());
    }
    if (!drained && r.sim->now() >= SimTime() + Ms(25000)) {
      drained = true;
      EXPECT_TRUE(r.sim->DrainReplica(0, r.sim->now()).ok());
    }
  });
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(added && drained);
  EXPECT_EQ(most_before, 4);
  EXPECT_EQ(most_two, 8);
  EXPECT_GT(over_capacity_events, 0);
  EXPECT_EQ(run->sim->state(0), ReplicaState::kGone);
}

// report.json `admission` and the records: what the run counted, per class and reason,
// with retry_after_s on the rejected records.
TEST(Admission, ReportSectionAndRecordsSayWhatHappened) {
  Knobs k;
  k.duration = "20s";
  Expected<Scenario> s = LoadScenarioText(ScenarioText(k), "admission.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.write_files = false;
  opt.check_invariants_every_event = true;
  std::map<std::string, int64_t> rejected;
  int64_t ok = 0;
  opt.on_record = [&](const RequestRecord& r) {
    if (r.status == RecordStatus::kOk) ++ok;
    if (r.status != RecordStatus::kRejected) return;
    ++rejected[r.reason];
    EXPECT_TRUE(r.retry_after.has_value()) << r.reason;
    EXPECT_FALSE(r.replica.has_value());
  };
  const Expected<RunResult> run = RunScenario(*s, opt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const Json& j = run->report["admission"];
  const Json& interactive = j["classes"]["interactive"];
  const Json& batch = j["classes"]["batch"];
  EXPECT_GT(rejected["queue_full"], 100);
  EXPECT_EQ(interactive["rejected"]["queue_full"].get<int64_t>(), rejected["queue_full"]);
  EXPECT_EQ(interactive["admitted"].get<int64_t>() + batch["admitted"].get<int64_t>(), ok);
  EXPECT_EQ(interactive["arrived"].get<int64_t>(),
            interactive["admitted"].get<int64_t>() + interactive["rejected_total"].get<int64_t>() +
                interactive["expired"].get<int64_t>());
  EXPECT_LE(batch["queue_wait"]["max_ms"].get<double>(), 10000.0);
  EXPECT_EQ(j["max_in_flight_seen"].get<int64_t>(), 4);
  EXPECT_NE(run->summary.find("admission: 4 in flight per ready replica, at most 4 in flight at once\n"),
            std::string::npos);
  EXPECT_NE(run->summary.find("  class interactive (priority 10): "), std::string::npos) << run->summary;
}

// examples/admission.yaml (docs/admission.md): Atlas under a 240 s burst. With aging
// every batch request is admitted within its 120 s max_wait; with the batch class's
// aging off, a quarter or more of them expire behind the interactive stream.
TEST(Admission, TheAtlasExampleProtectsItsBatchClassByAging) {
  Expected<Scenario> s = LoadScenario(std::string(FLEETPLAN_SOURCE_DIR) + "/examples/admission.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.write_files = false;
  // Invariants once at the end (Simulate does): per event, the engines' KV recount of
  // four Atlas replicas would take minutes.
  const Expected<RunResult> aging = RunScenario(*s, opt);
  ASSERT_TRUE(aging.ok()) << aging.status().message();
  const Json& with = aging->report["admission"]["classes"]["batch"];
  EXPECT_GT(with["arrived"].get<int64_t>(), 100);
  EXPECT_EQ(with["admitted"].get<int64_t>(), with["arrived"].get<int64_t>());
  EXPECT_EQ(with["expired"].get<int64_t>(), 0);
  EXPECT_GT(with["admitted_by_aging"].get<int64_t>(), 0);
  EXPECT_LE(with["queue_wait"]["max_ms"].get<double>(), 120000.0);
  ASSERT_EQ(s->admission.classes.at(1).name, "batch");
  s->admission.classes.at(1).aging_margin.reset();
  const Expected<RunResult> strict = RunScenario(*s, opt);
  ASSERT_TRUE(strict.ok()) << strict.status().message();
  const Json& without = strict->report["admission"]["classes"]["batch"];
  EXPECT_EQ(without["arrived"], with["arrived"]);
  EXPECT_GE(without["expired"].get<int64_t>() * 4, without["arrived"].get<int64_t>());
  EXPECT_EQ(without["admitted_by_aging"].get<int64_t>(), 0);
}

// ---- the scenario reader ------------------------------------------------------------

std::string ReadError(const std::string& text) {
  Expected<Scenario> s = LoadScenarioText(text, "admission.yaml", "");
  if (!s.ok()) return s.status().message();
  Expected<FleetPlan> plan = Bind(*s);
  return plan.ok() ? std::string("no error") : plan.status().message();
}

std::string With(std::string text, std::string_view part, std::string_view with) {
  const size_t at = text.find(part);
  EXPECT_NE(at, std::string::npos) << part;
  if (at != std::string::npos) text.replace(at, part.size(), with);
  return text;
}

TEST(AdmissionScenario, ErrorsAreLocated) {
  const std::string base = ScenarioText(Knobs{});
  EXPECT_EQ(ReadError(With(base, "  default_class: batch", "  default_clas: batch")),
            "admission.yaml:23:3: admission: unknown field 'default_clas'; did you mean 'default_class'? (valid: classes, "
            "assign, default_class, max_in_flight_per_replica, tenant_quota, tenants)\n"
            "   23 |   default_clas: batch\n"
            "      |   ^\n");
  EXPECT_EQ(ReadError(With(base, "{workload_class: chat, class: interactive}", "{workload_class: chat, class: interactiv}")),
            "admission.yaml:22:37: admission.assign[0].class: unknown admission class 'interactiv'; did you mean "
            "'interactive'? (valid: interactive, batch)\n"
            "   22 |     - {workload_class: chat, class: interactiv}\n"
            "      |                                     ^\n");
  EXPECT_EQ(ReadError(With(base, "{workload_class: chat, class: interactive}", "{workload_class: chta, class: interactive}")),
            "admission.yaml:22:24: admission.assign[0].workload_class: unknown workload class 'chta'; did you mean "
            "'chat'? (valid: chat, bulk)\n"
            "   22 |     - {workload_class: chta, class: interactive}\n"
            "      |                        ^\n");
  EXPECT_EQ(ReadError(With(base, "{workload_class: chat, class: interactive}", "{tenant: acme, class: interactive}")),
            "admission.yaml:22:16: admission.assign[0].tenant: the workload has no tenants; 'acme' names none\n"
            "   22 |     - {tenant: acme, class: interactive}\n"
            "      |                ^\n");
  EXPECT_EQ(ReadError(With(base, "max_wait: 2s", "max_wait: 2")),
            "admission.yaml:19:58: admission.classes.interactive.max_wait: expected a duration with a unit (ns, us, "
            "ms, s, m, min, h), got '2'\n"
            "   19 |     interactive: {priority: 10, max_queue: 10, max_wait: 2}\n"
            "      |                                                          ^\n");
  EXPECT_EQ(ReadError(base + "  tenant_quota: {token_rate: 20000}\n"),
            "admission.yaml:25:30: admission.tenant_quota.token_rate: expected a rate with a unit (/s, /m, /min, /h), "
            "got '20000'\n"
            "   25 |   tenant_quota: {token_rate: 20000}\n"
            "      |                              ^\n");
  EXPECT_EQ(ReadError(base + "  tenant_quota: {burst: 100}\n"),
            "admission.yaml:25:25: admission.tenant_quota.burst: `burst` needs a token_rate\n"
            "   25 |   tenant_quota: {burst: 100}\n"
            "      |                         ^\n");
  // A tenant override names a tenant of the workload.
  Knobs k;
  k.tenants = "{count: 2}";
  k.overrides = "{tenant-7: {max_concurrent: 1}}";
  EXPECT_EQ(ReadError(ScenarioText(k)),
            "admission.yaml:26:23: admission.tenants.tenant-7: unknown tenant 'tenant-7'; did you mean 'tenant-0'? "
            "(valid: tenant-0, tenant-1)\n"
            "   26 |   tenants: {tenant-7: {max_concurrent: 1}}\n"
            "      |                       ^\n");
  // Among numbered tenants by the hundred thousand (found by scenario_fuzz: 248,880
  // tenants took 6 s under ASan and the message listed them all), the message lists 50
  // and still finds the near name.
  k.tenants = "{count: 248880}";
  k.overrides = "{tenant_7x: {max_concurrent: 1}}";
  const std::string many = ReadError(ScenarioText(k));
  const std::string first_line = many.substr(0, many.find('\n'));
  EXPECT_EQ(first_line.substr(0, first_line.find(", tenant-2,")),
            "admission.yaml:26:24: admission.tenants.tenant_7x: unknown tenant 'tenant_7x'; did you mean 'tenant-7'? "
            "(valid: tenant-0, tenant-1");
  const std::string tail = "tenant-48, tenant-49, and 248830 more)";
  EXPECT_EQ(first_line.substr(first_line.size() - tail.size()), tail);
  // An admission class's unknown key.
  EXPECT_EQ(ReadError(With(base, "priority: 0,", "priorty: 0,")),
            "admission.yaml:20:13: admission.classes.batch: unknown field 'priorty'; did you mean 'priority'? (valid: "
            "priority, max_queue, max_wait, reserve_kv, aging_margin)\n"
            "   20 |     batch: {priorty: 0, max_queue: 50, max_wait: 10s}\n"
            "      |             ^\n");
}

}  // namespace
}  // namespace fleetplan
