// The prefix cache on the simulator's hot path (docs/PERFORMANCE.md "Prefix cache"):
//   BM_HashChain       identities of a prompt's blocks (XXH3_128 chain), per block
//   BM_Lookup          the chain of one prompt looked up in an index holding 10^3 or 10^6
//                      cached blocks: cost per lookup must follow the prompt's block
//                      count, not the cache size
//   BM_EngineReplay    a whole engine run (2000 requests sharing tenant instructions),
//                      cache off vs on: the cache must cost at most 20% per step
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/engine/block_hash.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/engine/kv_pool.h"

namespace fleetplan {
namespace {

// One prompt of `blocks` 16-token blocks: a shared 1024-token head, then unique content.
std::vector<PromptSegment> Prompt(uint64_t id, int64_t blocks) {
  return {{7, 1024}, {1000 + id, blocks * 16 - 1024}};
}

void BM_HashChain(benchmark::State& state) {
  const int64_t blocks = state.range(0);
  const auto prompt = Prompt(1, blocks);
  const BlockHash scope = HashScopeBase({"m", "t", "rope", "bf16/16"});
  std::vector<BlockHash> out;
  for (auto _ : state) {
    out.clear();
    AppendBlockHashes(prompt, 16, scope, blocks, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * blocks);
  state.SetLabel("items = blocks hashed");
}

// A pool whose index holds `cached` published blocks, all evictable: first the chain of
// the probe prompt (`probe_blocks` blocks), then prompts of 64 blocks each.
struct CachedPool {
  CachedPool(int64_t cached, int64_t probe_blocks) : pool(cached) {
    const BlockHash scope = HashScopeBase({"m", "t", "rope", "bf16/16"});
    AppendBlockHashes(std::vector<PromptSegment>{{1, probe_blocks * 16}}, 16, scope, probe_blocks, &probe);
    std::vector<BlockHash> hashes = probe;
    for (uint64_t p = 2; static_cast<int64_t>(hashes.size()) < cached; ++p) {
      const int64_t left = cached - static_cast<int64_t>(hashes.size());
      AppendBlockHashes(std::vector<PromptSegment>{{p, 64 * 16}}, 16, scope, left, &hashes);
    }
    std::vector<BlockId> blocks;
    pool.Allocate(cached, blocks);
    // One chain per prompt: the probe's, then 64 blocks each.
    for (size_t start = 0; start < blocks.size();) {
      const size_t n = std::min(blocks.size() - start, start == 0 ? probe.size() : size_t{64});
      pool.PublishAll(std::span(blocks).subspan(start, n), std::span(hashes).subspan(start, n), CacheTag{});
      start += n;
    }
    pool.Release(blocks);
  }
  KvBlockPool pool;
  std::vector<BlockHash> probe;  // every block cached
};

// Args: cached blocks, prompt blocks (all of which hit).
void BM_Lookup(benchmark::State& state) {
  const int64_t prompt_blocks = state.range(1);
  CachedPool cp(state.range(0), prompt_blocks);
  for (auto _ : state) {
    int64_t hits = 0;
    BlockId parent = kNoBlock;  // the walk the engine does at admission
    for (const BlockHash& h : cp.probe) {
      parent = cp.pool.FindNext(parent, h);
      if (parent == kNoBlock) break;
      ++hits;
    }
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("items = lookups of a " + std::to_string(prompt_blocks) + "-block chain");
}

class FixedCost final : public StepCostModel {
 public:
  StepCost Cost(std::span<const StepChunk> chunks) const override {
    const StepShape s = Summarize(chunks);
    return {Ms(5) + Us(20) * s.prefill_tokens + Us(50) * s.decode_seqs, Duration(), false};
  }
  std::string kind() const override { return "bench"; }
  Json Describe() const override { return Json::object(); }
};

// 2000 requests, 4/s: 1500 tenant-instruction tokens (one of 20 tenants) + 50..550
// unique tokens, 20..120 output tokens. Arg 0: cache off/on.
void BM_EngineReplay(benchmark::State& state) {
  const bool cache = state.range(0) != 0;
  RngStream rng(42, "bench");
  std::vector<Request> reqs;
  for (int64_t i = 0; i < 2000; ++i) {
    Request r;
    r.id = i;
    r.arrival = SimTime() + Ms(250) * i;
    r.tenant = static_cast<TenantId>(rng.NextBelow(20));
    r.prompt = {{static_cast<ContentId>(100 + r.tenant), 1500},
                {static_cast<ContentId>(10'000 + i), 50 + static_cast<int64_t>(rng.NextBelow(500))}};
    r.output_tokens = 20 + static_cast<int64_t>(rng.NextBelow(100));
    reqs.push_back(std::move(r));
  }
  EngineConfig c;
  c.scheduler.policy = "bounded-chunk";
  c.block_tokens = 16;
  c.kv_blocks = 30'544;
  c.prefix_cache.enabled = cache;
  c.prefix_cache.scope = {"m", "t", "rope", "bf16/16"};
  const FixedCost cost;
  int64_t steps = 0;
  for (auto _ : state) {
    auto engine = Engine::Create(0, c, &cost, nullptr).value();
    size_t next = 0;
    SimTime now;
    while (next < reqs.size() || engine->HasWork()) {
      if (!engine->HasWork()) now = std::max(now, reqs[next].arrival);
      while (next < reqs.size() && reqs[next].arrival <= now) engine->Submit(reqs[next++], now);
      const auto end = engine->StartStep(now);
      if (!end) {
        if (next == reqs.size()) break;
        now = std::max(now, reqs[next].arrival);
        continue;
      }
      now = *end;
      engine->FinishStep(now);
    }
    steps += engine->stats().steps;
    state.counters["hit_rate"] = engine->stats().prefix_cache.lookup_tokens > 0
                                     ? static_cast<double>(engine->stats().prefix_cache.hit_tokens) /
                                           static_cast<double>(engine->stats().prefix_cache.lookup_tokens)
                                     : 0.0;
    state.counters["steps"] = static_cast<double>(engine->stats().steps);
  }
  state.SetItemsProcessed(steps);
  state.SetLabel(cache ? "cache on; items = steps" : "cache off; items = steps");
}

BENCHMARK(BM_HashChain)->Arg(64)->Arg(1024);
BENCHMARK(BM_Lookup)->Args({1'000, 64})->Args({1'000'000, 64})->Args({1'000, 1'000})->Args({1'000'000, 1'000});
BENCHMARK(BM_EngineReplay)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
