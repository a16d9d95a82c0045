// The KV cache manager seam (src/engine/kv_cache_manager.h): the factory picks the
// manager from the config once; the plain manager answers every call with "no cache";
// the prefix manager seals at the next full block, publishes, and finds what it sealed.
#include "engine/kv_cache_manager.h"

#include <memory>

#include <gtest/gtest.h>

#include "engine/engine_driver.h"

namespace fleetplan {
namespace {

using testing::TestCostModel;

constexpr int64_t kB = 16;

EngineConfig Config(bool prefix_cache) {
  EngineConfig c;
  c.block_tokens = kB;
  c.kv_blocks = 8;
  c.prefix_cache.enabled = prefix_cache;
  c.prefix_cache.scope = {"atlas-70b", "atlas-70b", "rope", "bf16/16"};
  return c;
}

// A request as Submit leaves it: live, nothing computed, no blocks.
void Admit(LiveRequest& l, RequestId id, int64_t prompt, int64_t output) {
  l.ResetKeepingCapacity();
  l.req.id = id;
  l.req.prompt = {PromptSegment{42, prompt}};
  l.req.output_tokens = output;
  l.num_tokens = prompt;
  l.output_tokens = output;
  l.in_use = true;
  l.running = true;
}

TEST(KvCacheManager, TheFactoryPicksTheManagerFromTheConfigOnce) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineStats stats;
  const auto plain = MakeKvCacheManager(Config(false), &cost, &stats);
  const auto cached = MakeKvCacheManager(Config(true), &cost, &stats);
  EXPECT_NE(dynamic_cast<const PlainKvCacheManager*>(plain.get()), nullptr);
  EXPECT_NE(dynamic_cast<const PrefixKvCacheManager*>(cached.get()), nullptr);
  EXPECT_EQ(plain->pool().total(), 8);
  EXPECT_EQ(cached->pool().total(), 8);
}

TEST(KvCacheManager, ThePlainManagerNeverFindsSealsOrCountsAnything) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineStats stats;
  const auto kv = MakeKvCacheManager(Config(false), &cost, &stats);
  std::vector<LiveRequest> slots(2);
  for (int i = 0; i < 2; ++i) {  // the same 40-token prompt twice
    LiveRequest& l = slots[static_cast<size_t>(i)];
    Admit(l, i + 1, 40, 4);
    const CacheMatch m = kv->FindCached(l);
    EXPECT_EQ(m.hit_blocks, 0);
    EXPECT_EQ(m.used_blocks, 0);
    EXPECT_TRUE(m.blocks.empty());
    EXPECT_EQ(kv->FreeAfter(m), kv->pool().free_count());
    EXPECT_EQ(kv->TakeCached(l, m), 0);
    EXPECT_EQ(l.seal_at, kNeverSeal);  // the engine never calls Seal
    ASSERT_TRUE(kv->pool().Allocate(3, l.blocks));
    l.num_computed = 40;
    EXPECT_EQ(kv->CachedPrefixTokens(l.req), 0);
  }
  EXPECT_EQ(kv->pool().published_total(), 0);
  EXPECT_EQ(stats.prefix_cache.lookups, 0);
  EXPECT_TRUE(stats.prefix_cache_by_class.empty());
  const Status st = kv->CheckSharing(slots);
  EXPECT_TRUE(st.ok()) << st.message();
  kv->Release(slots[0]);
  EXPECT_TRUE(slots[0].blocks.empty());
  EXPECT_EQ(kv->pool().free_count(), 5);
  EXPECT_EQ(kv->pool().cached_count(), 0);
}

TEST(KvCacheManager, ThePrefixManagerSealsAtTheNextFullBlockAndFindsWhatItSealed) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineStats stats;
  const auto kv = MakeKvCacheManager(Config(true), &cost, &stats);
  std::vector<LiveRequest> slots(2);
  LiveRequest& writer = slots[0];
  Admit(writer, 1, 40, 4);
  CacheMatch m = kv->FindCached(writer);
  EXPECT_EQ(m.hit_blocks, 0);
  EXPECT_EQ(kv->TakeCached(writer, m), 0);
  EXPECT_EQ(writer.seal_at, kB);  // the first block fills at 16 tokens
  ASSERT_TRUE(kv->pool().Allocate(3, writer.blocks));
  writer.num_computed = 40;  // a step computed the prompt: two full blocks
  kv->Seal(writer);
  EXPECT_EQ(writer.sealed, 2);
  EXPECT_EQ(writer.seal_at, 3 * kB);
  EXPECT_EQ(kv->pool().published_total(), 2);
  EXPECT_EQ(kv->CachedPrefixTokens(writer.req), 2 * kB);

  LiveRequest& reader = slots[1];
  Admit(reader, 2, 40, 4);
  m = kv->FindCached(reader);
  EXPECT_EQ(m.hit_blocks, 2);
  EXPECT_EQ(m.used_blocks, 2);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.blocks[0], writer.blocks[0]);
  EXPECT_EQ(m.blocks[1], writer.blocks[1]);
  EXPECT_EQ(kv->FreeAfter(m), 5);  // the hits are referenced, not on the free list
  EXPECT_EQ(kv->TakeCached(reader, m), 2 * kB);
  EXPECT_EQ(reader.num_computed, 2 * kB);
  EXPECT_EQ(reader.sealed, 2);
  EXPECT_EQ(reader.seal_at, 3 * kB);
  EXPECT_EQ(kv->pool().refcount(writer.blocks[0]), 2);
  EXPECT_EQ(stats.prefix_cache.lookups, 2);
  EXPECT_EQ(stats.prefix_cache.hit_blocks, 2);
  EXPECT_EQ(stats.prefix_cache.saved_prefill_tokens, 2 * kB);
  ASSERT_TRUE(kv->pool().Allocate(1, reader.blocks));
  const Status st = kv->CheckSharing(slots);
  EXPECT_TRUE(st.ok()) << st.message();

  // Preemption: everything released, sealing starts over; the published blocks stay
  // findable from the free list.
  kv->Release(writer);
  kv->Release(reader);
  EXPECT_TRUE(reader.blocks.empty());
  EXPECT_EQ(reader.sealed, 0);
  EXPECT_EQ(reader.seal_at, kNeverSeal);
  EXPECT_EQ(kv->pool().free_count(), 8);
  EXPECT_EQ(kv->pool().cached_count(), 2);
  EXPECT_EQ(kv->CachedPrefixTokens(reader.req), 2 * kB);
}

TEST(KvCacheManager, AnInvalidationHidesThePrefixManagersBlocksAndThePlainOneIgnoresIt) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  for (const bool prefix_cache : {false, true}) {
    EngineStats stats;
    const auto kv = MakeKvCacheManager(Config(prefix_cache), &cost, &stats);
    LiveRequest l;
    Admit(l, 1, 40, 4);
    (void)kv->TakeCached(l, kv->FindCached(l));
    ASSERT_TRUE(kv->pool().Allocate(3, l.blocks));
    l.num_computed = 40;
    if (l.num_computed >= l.seal_at) kv->Seal(l);  // as the engine applies a chunk
    kv->Release(l);
    EXPECT_EQ(kv->pool().cached_count(), prefix_cache ? 2 : 0);
    kv->Invalidate({InvalidationKind::kModelRevision, kAllTargets});
    kv->SyncCounters();
    EXPECT_EQ(kv->pool().cached_count(), 0);
    EXPECT_EQ(stats.prefix_cache.invalidations, prefix_cache ? 2 : 0);
    EXPECT_EQ(kv->CachedPrefixTokens(l.req), 0);
  }
}

}  // namespace
}  // namespace fleetplan
