// Prefill/decode pools: reading deployment.pools, deployment.disaggregation and
// faults.kv_transfer; when disaggregation wins and loses; the conditional threshold;
// transfer fault drills; every request ending with no block left behind.
#include <algorithm>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

struct Shape {
  std::string deployment;  // the deployment section's body (indented two spaces)
  std::string prompt = "{uniform: [6000, 10000]}";
  std::string output = "{uniform: [100, 300]}";
  std::string rate = "8/s";
  int requests = 1500;
  std::string slo = "{ttft: 2s, tpot: 15ms}";
  std::string router = "router: {policy: least-outstanding}\n";
  std::string klass_extra;  // more keys of the class (deadline, cancel), indented six
  std::string tail;         // appended at the end (faults)
  std::string prompt_yaml;  // replaces the one unique segment when set
  std::string engine_extra; // more engine keys, indented two
};

// Four H100s running llama-3.1-8b with an affine step model: a prefill chunk costs 8 ms
// + 0.02 ms per token, a decode step 10 ms + 0.1 ms per sequence. Line 6 opens the
// deployment section, so the first line of its body is line 7.
std::string PoolScenario(const Shape& s) {
  return "version: 1\n"                                                    // 1
         "name: pools\n"                                                   // 2
         "seed: 3\n"                                                       // 3
         "model: {name: llama-3.1-8b, max_context: 32768}\n"              // 4
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 4}\n"    // 5
         "deployment:\n" +                                                 // 6
         s.deployment +
         "engine:\n"
         "  scheduler: {max_batched_tokens: 8192, max_running: 256}\n"
         "  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, per_seq: 0.1ms}}\n" +
         s.engine_extra + s.router +
         "workload:\n"
         "  requests: " + std::to_string(s.requests) + "\n"
         "  arrival: {process: poisson, rate: " + s.rate + "}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 1\n"
         "      prompt: " + (s.prompt_yaml.empty() ? "[{segment: unique, tokens: " + s.prompt + "}]" : s.prompt_yaml) +
         "\n"
         "      output_tokens: " + s.output + "\n" +
         s.klass_extra +
         "slo:\n"
         "  chat: " + s.slo + "\n" +
         s.tail;
}

const std::string kColocated = "  replicas: 4\n  tp: 1\n";
std::string Pools(const std::string& disaggregation) {
  return "  pools:\n"
         "    - {role: prefill, replicas: 2, tp: 1}\n"
         "    - {role: decode, replicas: 2, tp: 1}\n"
         "  disaggregation: " + disaggregation + "\n";
}

Expected<Scenario> Load(const Shape& s) { return LoadScenarioText(PoolScenario(s), "pools.yaml", ""); }

Expected<RunResult> RunShape(const Shape& s) {
  FP_ASSIGN_OR_RETURN(Scenario scenario, Load(s));
  RunOptions opt;
  opt.write_files = false;
  return RunScenario(scenario, opt);
}

double Goodput(const RunResult& r) { return r.report["classes"]["chat"]["goodput_rps"].get<double>(); }
int64_t Transfer(const RunResult& r, const char* key) {
  return r.report["disaggregation"]["transfer"][key].get<int64_t>();
}
int64_t StatusCount(const RunResult& r, const char* status) {
  return r.report["classes"]["chat"]["status"][status].get<int64_t>();
}

std::string ErrorOf(const Shape& s) {
  auto loaded = Load(s);
  if (loaded.ok()) return "(loaded)";
  const std::string& m = loaded.status().message();
  return m.substr(0, m.find('\n'));  // the located message, without the quoted line
}

// ---------------------------------------------------------------------------------------
// Reading

TEST(PoolsScenario, ReadsEachPoolsLayoutAndTheHandOffDefaults) {
  Shape s;
  s.deployment = "  pools:\n"
                 "    - {role: prefill, replicas: 1, tp: 2}\n"
                 "    - {role: decode, replicas: 2, tp: 1}\n";
  auto loaded = Load(s);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->pools.size(), 2u);
  EXPECT_EQ(loaded->pools[0].role, PoolRole::kPrefill);
  EXPECT_EQ(loaded->pools[0].fit.memory.layout.tp, 2);
  EXPECT_EQ(loaded->pools[1].role, PoolRole::kDecode);
  EXPECT_EQ(loaded->pools[1].fit.memory.layout.tp, 1);
  EXPECT_EQ(loaded->replicas, 3);
  EXPECT_EQ(loaded->fit.memory.layout.tp, 1);  // the headline layout is the serving pool's
  const DisaggregationConfig& d = loaded->disaggregation;
  EXPECT_EQ(d.colocate_below_tokens, 0);
  EXPECT_EQ(loaded->transfer_link.name, "ib-ndr-400");
  EXPECT_EQ(d.setup, loaded->transfer_link.latency);
  EXPECT_EQ(d.timeout, Duration::Nanos(10'000'000'000));
  EXPECT_EQ(d.retries, 1);
  EXPECT_FALSE(d.reject_on_failure);
  EXPECT_FALSE(d.faults.any());
}

TEST(PoolsScenario, ReadsFaults) {
  Shape s;
  s.deployment = Pools("{timeout: 200ms, retries: 2, on_failure: reject}");
  s.tail = "faults:\n  kv_transfer: {delay: 500ms, failure_probability: 0.25}\n";
  auto loaded = Load(s);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const DisaggregationConfig& d = loaded->disaggregation;
  EXPECT_EQ(d.timeout, Duration::Nanos(200'000'000));
  EXPECT_EQ(d.retries, 2);
  EXPECT_TRUE(d.reject_on_failure);
  EXPECT_EQ(d.faults.delay, Duration::Nanos(500'000'000));
  EXPECT_EQ(d.faults.delay_probability, 1.0);  // a stated delay applies to every transfer
  EXPECT_EQ(d.faults.failure_probability, 0.25);
}

TEST(PoolsScenario, BadPoolsAreLocatedErrors) {
  Shape s;
  s.deployment = "  pools:\n    - {role: prefil, replicas: 1}\n    - {role: decode, replicas: 1}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:8:14: deployment.pools[0].role: unknown pool role 'prefil'; did you mean "
                        "'prefill'? (valid: mixed, prefill, decode)");
  s.deployment = "  pools:\n    - {role: decode, replicas: 1}\n    - {role: decode, replicas: 1}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:9:14: deployment.pools[1].role: a second 'decode' pool; give each role once");
  s.deployment = "  pools:\n    - {role: prefill, replicas: 2}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:8:5: deployment.pools: expected a `mixed` or `decode` pool: a prefill pool "
                        "cannot answer alone");
  s.deployment = "  replicas: 2\n  pools:\n    - {role: decode, replicas: 1}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:7:13: deployment.replicas: with deployment.pools, give `replicas` in each pool");
  s.deployment = "  pools:\n    - {role: prefill, replicas: 2, tp: 2}\n    - {role: decode, replicas: 1}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:8:5: deployment.pools: the pools need 5 GPUs; hardware has 4 (1 nodes x 4)");
  s.deployment = "  pools:\n    - {role: decode, replicas: 0}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:8:32: deployment.pools[0].replicas: expected an integer >= 1, got 0");
  s.deployment = "  pools:\n    - {role: decode, replicas: 1, colour: red}\n";
  EXPECT_NE(ErrorOf(s).find("deployment.pools[0]: unknown field 'colour'"), std::string::npos) << ErrorOf(s);
}

TEST(PoolsScenario, HandOffSettingsNeedAPrefillPoolAndSaneValues) {
  Shape s;
  s.deployment = kColocated + "  disaggregation: {colocate_below_tokens: 10}\n";
  EXPECT_EQ(ErrorOf(s), "pools.yaml:9:19: deployment.disaggregation: needs a `prefill` pool in deployment.pools");
  s.deployment = kColocated;
  s.tail = "faults:\n  kv_transfer: {delay: 500ms}\n";
  EXPECT_NE(ErrorOf(s).find("faults.kv_transfer: KV transfer faults need a `prefill` pool"), std::string::npos)
      << ErrorOf(s);
  s.tail.clear();
  s.deployment = Pools("{colocate_below_tokens: -1}");
  EXPECT_NE(ErrorOf(s).find("colocate_below_tokens: expected an integer >= 0, got -1"), std::string::npos);
  s.deployment = Pools("{timeout: 0s}");
  EXPECT_NE(ErrorOf(s).find("deployment.disaggregation.timeout: expected a duration > 0"), std::string::npos);
  s.deployment = Pools("{on_failure: retry}");
  EXPECT_NE(ErrorOf(s).find("unknown failure handling 'retry'"), std::string::npos) << ErrorOf(s);
  s.deployment = Pools("{link: infiniband}");
  EXPECT_NE(ErrorOf(s).find("deployment.disaggregation.link"), std::string::npos) << ErrorOf(s);
  s.deployment = Pools("{retries: 1000}");
  EXPECT_NE(ErrorOf(s).find("retries: expected an integer in [0, 100], got 1000"), std::string::npos);
  s.deployment = Pools("{}");
  s.tail = "faults:\n  kv_transfer: {failure_probability: 1.5}\n";
  EXPECT_NE(ErrorOf(s).find("faults.kv_transfer.failure_probability"), std::string::npos) << ErrorOf(s);
  s.tail = "faults:\n  kv_transfer: {delay: 500ms, jitter: 1ms}\n";
  EXPECT_NE(ErrorOf(s).find("unknown field 'jitter'"), std::string::npos) << ErrorOf(s);
  s.tail.clear();
  s.engine_extra = "  prefix_cache: {enabled: true}\n";
  s.router = "router: {policy: cache-aware, replication: {replica_rate: 10/s}}\n";
  EXPECT_NE(ErrorOf(s).find("router.replication: hot-prefix replication is not simulated together with a prefill pool"),
            std::string::npos)
      << ErrorOf(s);
}

// ---------------------------------------------------------------------------------------
// When disaggregation pays

// Long prompts (6-10k tokens) with a tight TPOT objective: colocated, every decode step
// that shares the GPU with a prefill chunk is slow; with pools the decode replicas only
// decode. Short prompts (100-300) at a high rate: the decode work dominates, and two
// decode replicas carry what four colocated replicas share, so their batches and steps
// grow past the objective. The conditional threshold (2,000 uncached tokens, between
// the two prompt ranges) disaggregates the long prompts and keeps the short ones whole.
TEST(Disaggregation, WinsOnLongPromptsLosesOnShortAndTheThresholdPicksTheBetterSide) {
  Shape long_prompts;
  Shape short_prompts;
  short_prompts.prompt = "{uniform: [100, 300]}";
  short_prompts.output = "{uniform: [200, 400]}";
  short_prompts.rate = "30/s";

  for (Shape* shape : {&long_prompts, &short_prompts}) {
    Shape colocated = *shape;
    colocated.deployment = kColocated;
    Shape always = *shape;
    always.deployment = Pools("{colocate_below_tokens: 0}");
    Shape conditional = *shape;
    conditional.deployment = Pools("{colocate_below_tokens: 2000}");
    auto c = RunShape(colocated);
    auto a = RunShape(always);
    auto t = RunShape(conditional);
    ASSERT_TRUE(c.ok() && a.ok() && t.ok());
    const bool long_case = shape == &long_prompts;
    SCOPED_TRACE(long_case ? "long prompts" : "short prompts");
    std::printf("%-13s goodput/s: colocated %.2f, disaggregated %.2f, threshold 2000 %.2f\n",
                long_case ? "long prompts" : "short prompts", Goodput(*c), Goodput(*a), Goodput(*t));
    if (long_case) {
      // Measured: colocated 3.07/s of goodput (TPOT p99 ~22 ms), disaggregated 7.79/s.
      EXPECT_GT(Goodput(*a), 2.0 * Goodput(*c));
      EXPECT_EQ(t->report["disaggregation"]["requests"]["disaggregated"].get<int64_t>(), 1500);
      EXPECT_EQ(Goodput(*t), Goodput(*a));
    } else {
      // Measured: colocated 27.42/s, disaggregated 1.26/s (TPOT p99 ~20 ms).
      EXPECT_GT(Goodput(*c), 2.0 * Goodput(*a));
      EXPECT_EQ(t->report["disaggregation"]["requests"]["colocated"].get<int64_t>(), 1500);
      EXPECT_EQ(Transfer(*t, "count"), 0);
      EXPECT_GE(Goodput(*t), 0.97 * Goodput(*c));
    }
    EXPECT_GE(Goodput(*t), 0.97 * std::max(Goodput(*a), Goodput(*c)));
  }
}

TEST(Disaggregation, MovesEachPromptsKvOnceAndAccountsEveryStage) {
  Shape s;
  s.deployment = Pools("{setup: 2ms}");
  s.requests = 400;
  auto r = RunShape(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json& d = r->report["disaggregation"];
  EXPECT_EQ(d["requests"]["disaggregated"].get<int64_t>(), 400);
  EXPECT_EQ(Transfer(*r, "count"), 400);
  EXPECT_EQ(Transfer(*r, "completed"), 400);
  // Bytes are the fit arithmetic's KV per token (all ranks) times the prompt tokens.
  const int64_t per_token = r->report["deployment"]["pools"][0]["kv_bytes_per_token"].get<int64_t>();
  EXPECT_EQ(per_token, 131072);  // llama-3.1-8b, bf16: 32 layers x 8 KV heads x 128 x 2 x 2 bytes
  EXPECT_EQ(Transfer(*r, "bytes"), per_token * r->report["fleet"]["input_tokens"].get<int64_t>());
  // Setup 2 ms plus ~1 GB over a 50 GB/s link: at least 2 ms each.
  EXPECT_GE(d["transfer"]["duration"]["p50_ms"].get<double>(), 2.0);
  EXPECT_EQ(d["prefill"]["stage_time"]["count"].get<int64_t>(), 400);
  EXPECT_GT(d["prefill"]["busy_fraction"].get<double>(), 0.0);
  EXPECT_GT(d["decode"]["busy_fraction"].get<double>(), 0.0);
  // Engine totals count requests, not the prompts the prefill pool handed off.
  EXPECT_EQ(r->report["engine"]["completed"].get<int64_t>(), 400);
  int64_t handed_off = 0;
  for (const Json& e : r->report["engine"]["replicas"]) handed_off += e["prompts_handed_off"].get<int64_t>();
  EXPECT_EQ(handed_off, 400);
  // Requests finished on the decode replicas (2 and 3).
  for (const Json& e : r->report["engine"]["replicas"]) {
    if (e["role"] == "decode") {
      EXPECT_GT(e["completed"].get<int64_t>(), 100);
    }
  }
}

// Tenant instructions the decode replica already holds do not move again: the import
// takes them from its prefix cache, and the cache-aware router prices what a serving
// replica lacks at the transfer cost.
TEST(Disaggregation, KvTheDecodeReplicaCachesDoesNotMove) {
  Shape s;
  s.deployment = Pools("{}");
  s.requests = 400;
  s.rate = "4/s";
  s.prompt_yaml = "[{segment: tenant-instructions, tokens: 4000}, {segment: unique, tokens: 500}]";
  s.tail = "";
  s.engine_extra = "  prefix_cache: {enabled: true}\n";
  s.router = "router: {policy: cache-aware}\n";
  std::string text = PoolScenario(s);
  text.replace(text.find("  classes:"), 10, "  tenants: {count: 2}\n  classes:");
  auto loaded = LoadScenarioText(text, "pools.yaml", "");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  RunOptions opt;
  opt.write_files = false;
  auto r = RunScenario(*loaded, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t per_token = r->report["deployment"]["pools"][0]["kv_bytes_per_token"].get<int64_t>();
  const int64_t cached = Transfer(*r, "cached_tokens");
  // Two tenants' 4,000-token instructions: after each decode replica has seen a tenant
  // once, only the unique tail moves (250 of 256 full blocks of a tenant are shared).
  EXPECT_GT(cached, 400 * 3000);
  EXPECT_EQ(Transfer(*r, "bytes"), per_token * (r->report["fleet"]["input_tokens"].get<int64_t>() - cached));
  EXPECT_GT(r->report["fleet"]["prefix_cache"]["hit_tokens"].get<int64_t>(), 0);
}

// Requests waiting in the fleet for a decode slot, prefilling or queued for a transfer
// are load on their serving replica: the router sees them (as waiting requests and
// outstanding answer tokens) and spreads the next ones instead of piling onto one.
TEST(Disaggregation, TheRouterSeesRequestsStillOnTheirWayToADecodeReplica) {
  // Prompts up to ~20k tokens and answers of 50-1,500 tokens on decode replicas with room
  // for a few of them: requests queue in the fleet for a decode slot. Measured before the
  // router saw them: 1,303 vs 1,697 requests, one replica 75.9% busy; after: 1,491 vs
  // 1,509, both at least 98.9% busy.
  Shape s;
  s.deployment = Pools("{}");
  s.deployment.replace(s.deployment.find("{role: decode, replicas: 2, tp: 1}"), 34,
                       "{role: decode, replicas: 2, tp: 1, gpu_memory_utilization: 0.3}");
  s.requests = 3000;
  s.prompt = "{lognormal: {median: 3000, p99: 20000}}";
  s.output = "{uniform: [50, 1500]}";
  s.slo = "{ttft: 5s}";
  s.router = "router: {policy: cache-aware, telemetry_delay: 50ms}\n";
  auto r = RunShape(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->report["disaggregation"]["admission"]["waited"].get<int64_t>(), 100);
  const Json& replicas = r->report["replicas"];
  const auto a = replicas[2]["routed"].get<int64_t>();
  const auto b = replicas[3]["routed"].get<int64_t>();
  std::printf("decode replicas routed %lld and %lld\n", static_cast<long long>(a), static_cast<long long>(b));
  EXPECT_LT(static_cast<double>(std::max(a, b)), 1.1 * static_cast<double>(std::min(a, b)));
  for (size_t i : {2u, 3u}) {
    EXPECT_GT(r->report["engine"]["replicas"][i]["busy_fraction"].get<double>(), 0.9);
  }
}

TEST(Disaggregation, SameInputsGiveByteIdenticalReports) {
  Shape s;
  s.deployment = Pools("{colocate_below_tokens: 7000, timeout: 300ms}");
  s.requests = 300;
  s.tail = "faults:\n  kv_transfer: {delay: 400ms, delay_probability: 0.3, failure_probability: 0.2}\n";
  auto a = RunShape(s);
  auto b = RunShape(s);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*CanonicalJson(a->report), *CanonicalJson(b->report));
}

// ---------------------------------------------------------------------------------------
// Fault drills

Shape DrillShape() {
  Shape s;
  s.requests = 300;
  s.rate = "4/s";
  s.slo = "{ttft: 5s}";
  s.tail = "faults:\n  kv_transfer: {delay: 500ms}\n";
  return s;
}

TEST(TransferFaults, A500msDelayWithinTheTimeoutIsWaitedOut) {
  Shape base = DrillShape();
  base.tail.clear();
  base.deployment = Pools("{timeout: 1s}");
  Shape drill = DrillShape();
  drill.deployment = base.deployment;
  auto b = RunShape(base);
  auto d = RunShape(drill);
  ASSERT_TRUE(b.ok() && d.ok());
  EXPECT_EQ(StatusCount(*d, "ok"), 300);
  EXPECT_EQ(Transfer(*d, "timeouts"), 0);
  EXPECT_EQ(Transfer(*d, "completed"), 300);
  // Every transfer waits the 500 ms; the first token (delivered with the KV) follows it.
  EXPECT_GE(d->report["disaggregation"]["transfer"]["duration"]["p50_ms"].get<double>(), 500.0);
  const double ttft_base = b->report["classes"]["chat"]["ttft_ms"]["p50"].get<double>();
  const double ttft_drill = d->report["classes"]["chat"]["ttft_ms"]["p50"].get<double>();
  EXPECT_GE(ttft_drill - ttft_base, 450.0);
  EXPECT_LE(ttft_drill - ttft_base, 700.0);
}

TEST(TransferFaults, A500msDelayPastTheTimeoutIsRetriedThenRecomputedWithBoundedWaiting) {
  Shape s = DrillShape();
  s.deployment = Pools("{timeout: 200ms, retries: 1}");
  auto r = RunShape(s);  // a run that ends is also checked for leaked blocks and requests
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(StatusCount(*r, "ok"), 300);
  EXPECT_EQ(Transfer(*r, "count"), 600);  // first attempt and one retry each
  EXPECT_EQ(Transfer(*r, "timeouts"), 600);
  EXPECT_EQ(Transfer(*r, "retries"), 300);
  EXPECT_EQ(Transfer(*r, "recomputations"), 300);
  EXPECT_EQ(Transfer(*r, "completed"), 0);
  EXPECT_EQ(Transfer(*r, "bytes"), 0);
  // Waiting on the link is bounded by two timeouts: the worst first token is the
  // prefill stage + 400 ms + a recompute on the decode replica, far below 2 x 500 ms
  // of delay per request piling up.
  const double prefill_max = r->report["disaggregation"]["prefill"]["stage_time"]["p99_ms"].get<double>();
  EXPECT_LE(r->report["classes"]["chat"]["ttft_ms"]["p50"].get<double>(), prefill_max + 400.0 + 1000.0);
}

TEST(TransferFaults, OnFailureRejectEndsRequestsEarlyWithAReason) {
  Shape s = DrillShape();
  s.deployment = Pools("{timeout: 200ms, retries: 0, on_failure: reject}");
  auto r = RunShape(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(StatusCount(*r, "rejected"), 300);
  EXPECT_EQ(Transfer(*r, "rejections"), 300);
  EXPECT_EQ(Transfer(*r, "timeouts"), 300);
}

TEST(TransferFaults, FailuresAreRetriedDeterministically) {
  Shape s = DrillShape();
  s.deployment = Pools("{retries: 2}");
  s.tail = "faults:\n  kv_transfer: {failure_probability: 0.3}\n";
  auto r = RunShape(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(StatusCount(*r, "ok"), 300);
  const int64_t failures = Transfer(*r, "failures");
  // 300 first attempts fail with probability 0.3: ~90, then ~27, then ~8.
  EXPECT_GT(failures, 90);
  EXPECT_LT(failures, 160);
  EXPECT_EQ(Transfer(*r, "count"), 300 + Transfer(*r, "retries"));
  EXPECT_EQ(Transfer(*r, "completed") + Transfer(*r, "recomputations"), 300);
  EXPECT_GT(Transfer(*r, "recomputations"), 0);
}

// Cancellations and deadlines land in every stage (admission queue, prefill, transfer
// queue, transfer, decode); whatever the mix, every request ends exactly once and no
// replica keeps a block (the run checks that when it ends).
TEST(TransferFaults, CancellationsDeadlinesAndFaultsNeverLoseARequestOrABlock) {
  int64_t tight_preemptions = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    Shape s = DrillShape();
    s.requests = 250;
    s.rate = "12/s";
    s.deployment = Pools("{colocate_below_tokens: 7000, timeout: 300ms, retries: 1}");
    if (seed > 3) {
      // Decode replicas with room for about three prompts: requests wait for a decode
      // slot, prefilled ones for destination blocks, and decodes preempt each other.
      s.deployment.replace(s.deployment.find("{role: decode, replicas: 2, tp: 1}"), 34,
                           "{role: decode, replicas: 2, tp: 1, gpu_memory_utilization: 0.25}");
    }
    s.klass_extra = "      deadline: {uniform: [1s, 6s]}\n"
                    "      cancel: {probability: 0.3, after: {exponential: {mean: 400ms}}}\n";
    s.tail = "faults:\n  kv_transfer: {delay: 400ms, delay_probability: 0.4, failure_probability: 0.2}\n";
    std::string text = PoolScenario(s);
    text.replace(text.find("seed: 3"), 7, "seed: " + std::to_string(seed));
    auto loaded = LoadScenarioText(text, "pools.yaml", "");
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    RunOptions opt;
    opt.write_files = false;
    auto r = RunScenario(*loaded, opt);
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.status().message();
    EXPECT_EQ(r->requests, 250);
    const Json& st = r->report["classes"]["chat"]["status"];
    EXPECT_EQ(st["ok"].get<int64_t>() + st["rejected"].get<int64_t>() + st["cancelled"].get<int64_t>() +
                  st["timeout"].get<int64_t>(),
              250);
    EXPECT_GT(st["cancelled"].get<int64_t>(), 0);
    if (seed > 3) {
      EXPECT_GT(r->report["disaggregation"]["admission"]["waited"].get<int64_t>(), 0);
      tight_preemptions += r->report["engine"]["preemptions"].get<int64_t>();
    }
  }
  EXPECT_GT(tight_preemptions, 0);  // imported requests were preempted and recomputed too
}

// Random pool shapes, thresholds, timeouts, faults, memory, deadlines and cancellations
// (drawn from our own RNG stream, so the sweep is the same every run): every run ends
// without an internal error (no request left in the fleet, no block reference left on a
// replica), and every request ends exactly once.
TEST(TransferFaults, RandomConfigurationsEndEveryRequestWithNoBlockLeft) {
  RngStream rng(2024, "pool-sweep");
  auto pick = [&](std::initializer_list<const char*> options) {
    const auto i = rng.NextBelow(options.size());
    return std::string(*(options.begin() + static_cast<std::ptrdiff_t>(i)));
  };
  for (int run = 0; run < 150; ++run) {
    Shape s;
    s.requests = 120;
    s.rate = pick({"2/s", "6/s", "15/s"});
    s.prompt = pick({"{uniform: [100, 3000]}", "{uniform: [2000, 12000]}", "{lognormal: {median: 2000, p99: 20000}}"});
    s.output = pick({"1", "{uniform: [1, 50]}", "{uniform: [50, 800]}"});
    const std::string prefill = pick({"1", "2"});
    const std::string decode = pick({"1", "2"});
    const std::string util = pick({"0.25", "0.4", "0.9"});
    s.deployment = "  pools:\n"
                   "    - {role: prefill, replicas: " + prefill + ", tp: 1}\n"
                   "    - {role: decode, replicas: " + decode + ", tp: 1, gpu_memory_utilization: " + util + "}\n"
                   "  disaggregation: {colocate_below_tokens: " + pick({"0", "1000", "5000"}) +
                   ", timeout: " + pick({"50ms", "300ms", "2s"}) + ", retries: " + pick({"0", "1", "3"}) +
                   ", on_failure: " + pick({"recompute", "reject"}) + "}\n";
    s.klass_extra = pick({"", "      deadline: {uniform: [500ms, 10s]}\n"}) +
                    pick({"", "      cancel: {probability: 0.3, after: {exponential: {mean: 1s}}}\n"});
    s.engine_extra = pick({"", "  prefix_cache: {enabled: true}\n"});
    s.router = "router: {policy: " + pick({"round-robin", "least-outstanding", "cache-aware"}) + ", telemetry_delay: " +
               pick({"0s", "50ms"}) + "}\n";
    s.slo = "{ttft: 5s}";
    s.tail = "faults:\n  kv_transfer: {delay: " + pick({"100ms", "500ms"}) + ", delay_probability: " +
             pick({"0", "0.3", "1"}) + ", failure_probability: " + pick({"0", "0.2", "0.6"}) + "}\n";
    SCOPED_TRACE(PoolScenario(s));
    auto r = RunShape(s);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->requests, 120);
    const Json& st = r->report["classes"]["chat"]["status"];
    EXPECT_EQ(st["ok"].get<int64_t>() + st["rejected"].get<int64_t>() + st["cancelled"].get<int64_t>() +
                  st["timeout"].get<int64_t>(),
              120);
    const Json& d = r->report["disaggregation"];
    EXPECT_EQ(d["requests"]["colocated"].get<int64_t>() + d["requests"]["disaggregated"].get<int64_t>(), 120);
    // Attempts end completed, timed out or failed, or are cancelled in flight.
    EXPECT_LE(Transfer(*r, "completed") + Transfer(*r, "timeouts") + Transfer(*r, "failures"), Transfer(*r, "count"));
  }
}

}  // namespace
}  // namespace fleetplan
