// Replaying the shared Mooncake conversation trace (FLEETPLAN_SHARED_DATA/traces/mooncake/
// conversation_trace.jsonl, imported by the workload module: one 512-token trace-block
// segment per hash id) through one engine with the prefix cache.
//
//  - Serial replay with an unbounded pool: each request runs alone, so every block an
//    earlier request computed is published and nothing is evicted. The engine's hits
//    must equal an independent count: for each request in order, the longest prefix of
//    its full blocks (the workload module's AppendBlockKeys, a different hash) seen in
//    earlier prompts. Checked at a block size that divides 512 and one that does not.
//  - Timed replay (real arrival times) with a bounded pool, cache on vs off: the same
//    requests end with the same statuses and output token counts, hits are bounded by
//    the unbounded count, and TTFT is lower with the cache.
// Runtime: a prefix of the trace (kRequests rows) keeps these well under the suite's
// budget under ASan; answers are capped at kSerialOutput tokens in the serial replay
// (answer blocks are unique to their request in this trace, so they cannot change hits).
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "engine/engine_driver.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/workload/content.h"
#include "fleetplan/workload/trace.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using testing::RecordingObserver;
using testing::RunEngine;
using testing::TestCostModel;

constexpr int64_t kRequests = 300;
constexpr int64_t kSerialOutput = 2;

std::vector<Request> ReadTracePrefix(int64_t n) {
  TraceReadOptions options;
  options.format = TraceFormat::kMooncake;
  options.max_requests = n;
  auto source = OpenTrace(::fleetplan::testing::SharedDataRoot() + "/traces/mooncake/conversation_trace.jsonl", options);
  EXPECT_TRUE(source.ok()) << source.status().message();
  std::vector<Request> out;
  if (!source.ok()) return out;
  while (true) {
    auto next = (*source)->Next();
    EXPECT_TRUE(next.ok()) << next.status().message();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  return out;
}

struct Counted {
  int64_t hit_blocks = 0;
  int64_t saved_tokens = 0;
};

// The independent count: hits of each request against the full prompt blocks of all
// earlier requests, in trace order, with nothing ever evicted.
Counted IndependentCount(const std::vector<Request>& reqs, int64_t block) {
  Counted c;
  std::set<BlockKey> seen;
  for (const Request& r : reqs) {
    std::vector<BlockKey> keys;
    AppendBlockKeys(r.prompt, block, 0, &keys);
    const int64_t prompt = r.prompt_tokens();
    const auto full = static_cast<size_t>(prompt / block);
    int64_t matched = 0;
    while (static_cast<size_t>(matched) < full && seen.count(keys[static_cast<size_t>(matched)]) != 0) ++matched;
    c.hit_blocks += matched;
    c.saved_tokens += std::min(matched, (prompt - 1) / block) * block;
    seen.insert(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(full));
  }
  return c;
}

EngineConfig ReplayConfig(int64_t block, int64_t kv_blocks, bool cache) {
  EngineConfig c;
  c.scheduler.policy = "decode-first";
  c.scheduler.max_batched_tokens = 8192;
  c.scheduler.chunk_tokens = 8192;
  c.scheduler.max_running = 64;
  c.block_tokens = block;
  c.kv_blocks = kv_blocks;
  c.prefix_cache.enabled = cache;
  c.prefix_cache.scope = {"kimi", "kimi", "rope", "bf16"};
  return c;
}

TEST(MooncakeReplay, UnboundedPoolHitsEqualAnIndependentCount) {
  FP_REQUIRE_SHARED_DATA();
  std::vector<Request> reqs = ReadTracePrefix(kRequests);
  ASSERT_EQ(static_cast<int64_t>(reqs.size()), kRequests);
  for (Request& r : reqs) r.output_tokens = std::min(r.output_tokens, kSerialOutput);
  for (int64_t block : {16, 100}) {
    int64_t pool = 0;  // every block of every request: nothing can ever be evicted
    for (const Request& r : reqs) pool += BlocksForTokens(r.prompt_tokens() + r.output_tokens, block);
    const TestCostModel cost(Ms(5), Us(10), Us(100));
    RecordingObserver obs;
    auto made = Engine::Create(0, ReplayConfig(block, pool, true), &cost, &obs);
    ASSERT_TRUE(made.ok()) << made.status().message();
    Engine& e = **made;
    SimTime now;
    for (const Request& r : reqs) {
      now = std::max(now, r.arrival);
      e.Submit(r, now);
      while (e.HasWork()) {
        now = *e.StartStep(now);
        e.FinishStep(now);
      }
    }
    const Status st = e.CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.message();
    const Counted expected = IndependentCount(reqs, block);
    const PrefixCacheCounters& got = e.stats().prefix_cache;
    std::printf("block %lld: %lld lookups, %lld hit blocks (independent count %lld), %lld saved tokens (%lld), "
                "hit rate %.3f\n",
                static_cast<long long>(block), static_cast<long long>(got.lookups),
                static_cast<long long>(got.hit_blocks), static_cast<long long>(expected.hit_blocks),
                static_cast<long long>(got.saved_prefill_tokens), static_cast<long long>(expected.saved_tokens),
                got.lookup_tokens > 0 ? static_cast<double>(got.hit_tokens) / static_cast<double>(got.lookup_tokens)
                                      : 0.0);
    EXPECT_EQ(got.lookups, kRequests);
    EXPECT_EQ(got.evictions, 0);
    EXPECT_EQ(got.hit_blocks, expected.hit_blocks) << "block " << block;
    EXPECT_EQ(got.hit_tokens, expected.hit_blocks * block);
    EXPECT_EQ(got.saved_prefill_tokens, expected.saved_tokens) << "block " << block;
    EXPECT_GT(expected.hit_blocks, 0) << "the trace prefix shares no block: the test would be vacuous";
    int64_t cached = 0;
    for (const auto& [id, o] : obs.outcomes) cached += o.cached_tokens;
    EXPECT_EQ(cached, expected.saved_tokens);
    EXPECT_EQ(e.pool().total_refs(), 0);
  }
}

TEST(MooncakeReplay, CacheLowersTtftAndChangesOnlyTimings) {
  FP_REQUIRE_SHARED_DATA();
  const std::vector<Request> reqs = ReadTracePrefix(kRequests);
  ASSERT_EQ(static_cast<int64_t>(reqs.size()), kRequests);
  constexpr int64_t kBlock = 16;
  // A bounded pool the size of one Atlas replica's (tests/memory: 30,544 blocks).
  constexpr int64_t kPool = 30'544;
  const TestCostModel cost(Ms(5), Us(10), Us(100));
  struct Result {
    std::map<RequestId, RequestOutcome> outcomes;
    PrefixCacheCounters cache;
    int64_t preemptions = 0;
  };
  auto run = [&](bool on) {
    RecordingObserver obs;
    auto made = Engine::Create(0, ReplayConfig(kBlock, kPool, on), &cost, &obs);
    EXPECT_TRUE(made.ok());
    testing::DriverOptions opt;
    opt.check_invariants_every_step = false;
    RunEngine(**made, reqs, opt);
    const Status st = (*made)->CheckInvariants();
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ((*made)->pool().total_refs(), 0);
    return Result{obs.outcomes, (*made)->stats().prefix_cache, (*made)->stats().preemptions};
  };
  const Result off = run(false);
  const Result on = run(true);
  ASSERT_EQ(off.outcomes.size(), reqs.size());
  ASSERT_EQ(on.outcomes.size(), reqs.size());
  double ttft_off = 0;
  double ttft_on = 0;
  for (const Request& r : reqs) {
    const RequestOutcome& a = off.outcomes.at(r.id);
    const RequestOutcome& b = on.outcomes.at(r.id);
    EXPECT_EQ(a.status, b.status) << "request " << r.id;
    EXPECT_EQ(a.output_tokens, b.output_tokens) << "request " << r.id;
    EXPECT_EQ(a.output_tokens, r.output_tokens);
    EXPECT_EQ(a.cached_tokens, 0);
    ttft_off += (*a.first_token - a.arrival).millis();
    ttft_on += (*b.first_token - b.arrival).millis();
  }
  ttft_off /= static_cast<double>(reqs.size());
  ttft_on /= static_cast<double>(reqs.size());
  const Counted unbounded = IndependentCount(reqs, kBlock);
  std::printf("mean TTFT: cache off %.1f ms, cache on %.1f ms; hit blocks %lld (unbounded serial count %lld), "
              "evictions %lld, preemptions %lld, saved prefill %.1f s\n",
              ttft_off, ttft_on, static_cast<long long>(on.cache.hit_blocks),
              static_cast<long long>(unbounded.hit_blocks), static_cast<long long>(on.cache.evictions),
              static_cast<long long>(on.preemptions), on.cache.saved_prefill.seconds());
  EXPECT_LT(ttft_on, ttft_off);
  EXPECT_GT(on.cache.hit_blocks, 0);
  // With one lookup per request (no preemption), a bounded pool and concurrent writers
  // can only find less than the serial, unbounded count.
  if (on.preemptions == 0) {
    EXPECT_EQ(on.cache.lookups, kRequests);
    EXPECT_LE(on.cache.hit_blocks, unbounded.hit_blocks);
  }
}

}  // namespace
}  // namespace fleetplan
