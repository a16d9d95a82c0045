// A replica whose KV runs out: 64 closed-loop users of 8192 + 1024 tokens on Llama-3.1-70B
// FP8 at TP2 on H100, where about 22 sequences fit. vLLM queues the rest: V1 readmits a
// preempted request from its own cached blocks and admits nothing in a step that preempts;
// V0 admits a prompt only when all its blocks fit above a 1 % watermark. Either way the
// server recomputes little and the waiting requests' TTFT is the queue, not a thrash of
// admissions and preemptions (docs/FIDELITY.md section 8).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

std::string SaturatedScenario(const std::string& version) {
  return fmt::format(R"(version: 1
name: kv-saturated
seed: 1
model: {{name: llama-3.1-70b, weight_dtype: fp8, kv_dtype: bf16, max_context: 10240}}
hardware: {{gpu: h100-sxm-80g}}
deployment: {{replicas: 1, tp: 2}}
engine:
  version: "{}"
  scheduler: {{max_batched_tokens: 8192, chunk_tokens: 8192}}
workload:
  duration: 5m
  arrival: {{process: closed-loop, users: 64, think_time: 0s}}
  classes:
    bench: {{share: 1, prompt: [{{segment: unique, tokens: 8192}}], output_tokens: 1024}}
)",
                     version);
}

struct Saturated {
  int64_t completed = 0;
  int64_t preemptions = 0;
  int64_t prefill_tokens = 0;
  int64_t cache_lookups = 0;
  int64_t rehit_tokens = 0;
  double ttft_p50_ms = 0;
  double kv_peak = 0;
};

Saturated RunSaturated(const std::string& version) {
  Expected<Scenario> s = LoadScenarioText(SaturatedScenario(version), "kv-saturated.yaml", ".");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  RunOptions opt;
  opt.write_files = false;
  Expected<RunResult> r = RunScenario(*s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  const EngineStats& engine = r->result.engine;
  Saturated out;
  out.completed = engine.completed;
  out.preemptions = engine.preemptions;
  out.prefill_tokens = engine.prefill_tokens;
  out.cache_lookups = engine.prefix_cache.lookups;
  out.rehit_tokens = engine.prefix_cache.rehit_tokens;
  out.kv_peak = static_cast<double>(engine.kv_peak_blocks) / static_cast<double>(r->result.kv_blocks);
  out.ttft_p50_ms = r->report["classes"]["bench"]["ttft_ms"]["p50"].get<double>();
  std::printf("vLLM %s: %lld completed, %lld preemptions, %lld prefill tokens, TTFT p50 %.1f s\n", version.c_str(),
              static_cast<long long>(out.completed), static_cast<long long>(out.preemptions),
              static_cast<long long>(out.prefill_tokens), out.ttft_p50_ms / 1000.0);
  return out;
}

// What both generations share: the pool is full, requests queue for it, and the prompt
// work done is the completed prompts plus the ones in flight at the end (at most the ~24
// that fit), not several recomputations of each.
void ExpectQueuedNotThrashed(const Saturated& r) {
  EXPECT_GE(r.kv_peak, 0.99);
  ASSERT_GT(r.completed, 100);
  EXPECT_LT(r.preemptions, r.completed);
  EXPECT_LE(r.prefill_tokens, (r.completed + 24) * 8192);
  EXPECT_GT(r.ttft_p50_ms, 20'000.0);  // 64 users, about 22 in the pool: the rest wait
}

TEST(KvSaturation, V1ReadmitsPreemptedRequestsFromTheirCachedBlocks) {
  const Saturated v1 = RunSaturated("0.10");
  ExpectQueuedNotThrashed(v1);
  EXPECT_GT(v1.cache_lookups, 0);  // the cache is on: vLLM V1's default
  EXPECT_GT(v1.preemptions, 0);
  EXPECT_GT(v1.rehit_tokens, 0);
}

TEST(KvSaturation, V0AdmitsWholePromptsAboveTheWatermark) {
  const Saturated v0 = RunSaturated("0.6.3");
  ExpectQueuedNotThrashed(v0);
  EXPECT_EQ(v0.cache_lookups, 0);  // V0 caches no prefix unless told to
}

}  // namespace
}  // namespace fleetplan
