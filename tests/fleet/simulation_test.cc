// The fleet event loop and scenario runs: determinism, conservation, routing spread.
#include "fleetplan/fleet/simulation.h"

#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

// A small scenario: 2 replicas of llama-3.1-8b on H100, affine steps, 200 requests.
std::string SmallScenario(const std::string& router = "least-outstanding", const std::string& extra_engine = "") {
  return R"(version: 1
name: small
seed: 7
model: {name: llama-3.1-8b, max_context: 8192}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment: {replicas: 2, tp: 1}
engine:
  scheduler: {policy: bounded-chunk, max_batched_tokens: 2048, max_running: 64, chunk_tokens: 512,
              max_decode_stall: 100ms}
  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.1ms}}
  host_overhead: 0.3ms
)" + extra_engine + R"(router: {policy: )" + router + R"(, telemetry_delay: 20ms}
workload:
  requests: 200
  arrival: {process: poisson, rate: 20/s}
  classes:
    chat:
      share: 0.8
      prompt: [{segment: unique, tokens: {lognormal: {median: 400, p99: 3000}}}]
      output_tokens: {lognormal: {median: 80, p99: 400}}
    batch:
      share: 0.2
      prompt: [{segment: unique, tokens: 2000}]
      output_tokens: 300
slo:
  chat: {ttft: 500ms, tpot: 50ms}
  batch: {e2e: 60s}
)";
}

Expected<RunResult> RunText(const std::string& text) {
  FP_ASSIGN_OR_RETURN(Scenario s, LoadScenarioText(text, "small.yaml", ""));
  RunOptions opt;
  opt.write_files = false;
  return RunScenario(s, opt);
}

TEST(Simulation, SameScenarioAndSeedGiveByteIdenticalReports) {
  auto a = RunText(SmallScenario());
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = RunText(SmallScenario());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*CanonicalJson(a->report), *CanonicalJson(b->report));
  EXPECT_EQ(a->requests, 200);
}

TEST(Simulation, EveryRequestEndsAndCountsAddUp) {
  auto r = RunText(SmallScenario());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json& j = r->report;
  EXPECT_EQ(j["fleet"]["requests"].get<int64_t>(), 200);
  EXPECT_EQ(j["engine"]["completed"].get<int64_t>() + j["engine"]["rejections"].get<int64_t>() +
                j["engine"]["cancellations"].get<int64_t>() + j["engine"]["timeouts"].get<int64_t>(),
            200);
  int64_t per_replica = 0;
  for (const auto& rep : j["engine"]["replicas"]) per_replica += rep["completed"].get<int64_t>();
  EXPECT_EQ(per_replica, j["engine"]["completed"].get<int64_t>());
  // Both replicas served traffic.
  for (const auto& rep : j["engine"]["replicas"]) EXPECT_GT(rep["completed"].get<int64_t>(), 50);
}

TEST(Simulation, DifferentSeedsGiveDifferentRuns) {
  auto a = RunText(SmallScenario());
  ASSERT_TRUE(a.ok());
  std::string other = SmallScenario();
  other.replace(other.find("seed: 7"), 7, "seed: 8");
  auto b = RunText(other);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->report["classes"].dump(), b->report["classes"].dump());
}

TEST(Simulation, RoundRobinAlternatesReplicas) {
  auto r = RunText(SmallScenario("round-robin"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& reps = r->report["engine"]["replicas"];
  ASSERT_EQ(reps.size(), 2u);
  const int64_t a = reps[0]["completed"].get<int64_t>();
  const int64_t b = reps[1]["completed"].get<int64_t>();
  EXPECT_LE(std::abs(a - b), 1);
}

TEST(Scenario, AtlasLoadsAndNamesItsDerivedValues) {
  auto s = LoadAtlasScenario();
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "atlas-baseline");
  EXPECT_EQ(s->seed, 42u);
  EXPECT_EQ(s->replicas, 6);
  EXPECT_EQ(s->fit.memory.layout.tp, 4);
  EXPECT_EQ(s->engine.scheduler.policy, "bounded-chunk");
  EXPECT_EQ(s->engine.scheduler.max_decode_stall, Ms(150));
  EXPECT_EQ(s->engine.host_overhead, Us(1322));  // vLLM 0.10 on the default (kernel) step model
  EXPECT_EQ(s->router.telemetry_delay, Ms(50));
  EXPECT_EQ(s->workload.classes.size(), 3u);
}

TEST(Scenario, MisspelledKeyIsALocatedErrorWithASuggestion) {
  std::string text = SmallScenario();
  text.replace(text.find("policy: bounded-chunk"), 7, "polcy:");
  auto s = LoadScenarioText(text, "small.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.status().message().find("small.yaml:8:"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("did you mean 'policy'"), std::string::npos) << s.status().message();
}

TEST(Scenario, UnknownPolicyAndRouterAreLocated) {
  std::string text = SmallScenario("least_outstandin");
  auto s = LoadScenarioText(text, "small.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("router.policy: unknown router policy 'least_outstandin'; did you mean "
                                      "'least-outstanding'?"),
            std::string::npos)
      << s.status().message();
}

// engine.host_overhead as a mapping states the batch-dependent terms a calibration file
// states (perf/host_overhead.h); a bare duration is the per-step term alone.
TEST(Scenario, HostOverheadMappingStatesEveryTermAndTheyLengthenSteps) {
  std::string text = SmallScenario();
  text.replace(text.find("host_overhead: 0.3ms"), 20,
               "host_overhead: {per_step: 0.3ms, per_sequence: 40us, per_prefill_token: 200ns}");
  Expected<Scenario> s = LoadScenarioText(text, "small.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->engine.host_overhead, Us(300));
  EXPECT_EQ(s->engine.host_per_sequence, Us(40));
  EXPECT_EQ(s->engine.host_per_prefill_token, Duration::Nanos(200));
  // Only some terms: the others are 0 and say so.
  std::string partial = SmallScenario();
  partial.replace(partial.find("host_overhead: 0.3ms"), 20, "host_overhead: {per_sequence: 40us}");
  Expected<Scenario> p = LoadScenarioText(partial, "small.yaml", "");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->engine.host_overhead, Duration());
  EXPECT_EQ(p->engine.host_per_sequence, Us(40));
  int notes = 0;
  for (const std::string& d : p->derived) {
    notes += d == "engine.host_overhead.per_step: 0 (not given)" || d == "engine.host_overhead.per_prefill_token: 0 (not given)";
  }
  EXPECT_EQ(notes, 2);
  // Per-sequence CPU time stretches every step: the same requests finish later.
  Expected<RunResult> base = RunText(SmallScenario());
  Expected<RunResult> heavy = RunText(text);
  ASSERT_TRUE(base.ok() && heavy.ok());
  EXPECT_GT(heavy->result.report.fleet.requests, 0);
  const auto mean_e2e = [](const RunResult& r) {
    for (const ClassReport& c : r.result.report.classes) {
      if (c.name == "chat") return c.of(LatencyMetric::kE2e).mean_ns.value_or(0.0);
    }
    return 0.0;
  };
  EXPECT_GT(mean_e2e(*heavy), mean_e2e(*base));
}

TEST(Scenario, HostOverheadMappingErrorsAreLocated) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"host_overhead: {per_sequenc: 40us}",
       "engine.host_overhead: unknown field 'per_sequenc'; did you mean 'per_sequence'? (valid: per_step, per_sequence, "
       "per_prefill_token)"},
      {"host_overhead: {per_sequence: 11s}", "engine.host_overhead.per_sequence: expected a duration of at most 10 s"},
      {"host_overhead: {per_step: fast}", "engine.host_overhead.per_step: "},
  };
  for (const auto& [yaml, message] : cases) {
    std::string text = SmallScenario();
    text.replace(text.find("host_overhead: 0.3ms"), 20, yaml);
    Expected<Scenario> s = LoadScenarioText(text, "small.yaml", "");
    ASSERT_FALSE(s.ok()) << yaml;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(s.status().message().find("small.yaml:"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status().message();
  }
}

TEST(Scenario, TooManyReplicasForTheHardware) {
  std::string text = SmallScenario();
  text.replace(text.find("replicas: 2"), 11, "replicas: 9");
  auto s = LoadScenarioText(text, "small.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("9 replicas of tp 1 x pp 1 need 9 GPUs; hardware has 8 (1 nodes x 8); at "
                                      "most 8 replicas fit"),
            std::string::npos)
      << s.status().message();
}

}  // namespace
namespace {

// Found by scenario_fuzz: an empty scenario got the fit verb's usage message ("pass
// --model NAME") with exit code 2 instead of a located error about the file.
TEST(ScenarioReader, MissingRequiredSectionsAreLocatedErrors) {
  auto empty = LoadScenarioText("", "s.yaml", ".");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(empty.status().message().find("missing required field 'model'"), std::string::npos)
      << empty.status().message();
  auto no_gpu = LoadScenarioText("version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {nodes: 1}\n", "s.yaml", ".");
  ASSERT_FALSE(no_gpu.ok());
  EXPECT_EQ(no_gpu.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(no_gpu.status().message().find("missing required field 'gpu'"), std::string::npos)
      << no_gpu.status().message();
}

}  // namespace
}  // namespace fleetplan
