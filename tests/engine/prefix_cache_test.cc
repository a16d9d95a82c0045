// The prefix cache: block identity, the pool's cached/evictable states, and the engine's
// lifecycle (lookup at admission, sealing at step completion, cancellation, scope,
// invalidation, eviction order, branches) with exact ids and token counts.
#include <memory>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/engine_driver.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/engine/block_hash.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/engine/kv_pool.h"
#include "fleetplan/workload/content.h"
#include "fleetplan/workload/trace.h"

// The reference below hashes the documented serialisation with the system xxhash itself.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using testing::DrainEngine;
using testing::ExpectPoolAtBaseline;
using testing::MakeEngine;
using testing::RecordingObserver;
using testing::RunEngine;
using testing::TestCostModel;

constexpr int64_t kB = 16;  // block tokens in the engine tests

std::vector<BlockHash> Hashes(const std::vector<PromptSegment>& layout, int64_t block,
                              const BlockHash& scope = kBlockHashRoot, int64_t max_blocks = 1 << 20) {
  std::vector<BlockHash> out;
  AppendBlockHashes(layout, block, scope, max_blocks, &out);
  return out;
}

int64_t CommonPrefix(const std::vector<BlockHash>& a, const std::vector<BlockHash>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return static_cast<int64_t>(n);
}

// ---------------------------------------------------------------------------------------
// Identity

TEST(BlockHash, OnlyFullBlocksHaveAnIdentity) {
  EXPECT_EQ(Hashes({{1, 15}}, 16).size(), 0u);
  EXPECT_EQ(Hashes({{1, 16}}, 16).size(), 1u);
  EXPECT_EQ(Hashes({{1, 17}}, 16).size(), 1u);
  EXPECT_EQ(Hashes({{1, 5}, {2, 5}, {3, 6}}, 16).size(), 1u);
  EXPECT_EQ(Hashes({{1, 100}}, 16, kBlockHashRoot, 3).size(), 3u);  // capped
}

TEST(BlockHash, ABlockInsideASegmentIsItsContentAndOffset) {
  // (A, 48) and (A, 32) + (X, 16): blocks 0 and 1 lie inside A at offsets 0 and 16 in both.
  const auto whole = Hashes({{7, 48}}, 16);
  const auto split = Hashes({{7, 32}, {9, 16}}, 16);
  EXPECT_EQ(CommonPrefix(whole, split), 2);
  // A longer tail after the same 48 tokens does not change the first three identities.
  EXPECT_EQ(CommonPrefix(whole, Hashes({{7, 48}, {5, 40}}, 16)), 3);
  // Chaining: equal content after a different first block is a different block.
  EXPECT_NE(Hashes({{1, 16}, {2, 16}}, 16)[1], Hashes({{3, 16}, {2, 16}}, 16)[1]);
}

TEST(BlockHash, ScopeChangesEveryIdentity) {
  CacheScopeBase base{"atlas-70b@1", "atlas-tok", "rope", "bf16/16"};
  const BlockHash s1 = HashScopeBase(base);
  base.model_revision = "atlas-70b@2";
  const BlockHash s2 = HashScopeBase(base);
  EXPECT_NE(s1, s2);
  EXPECT_NE(Hashes({{1, 32}}, 16, s1)[0], Hashes({{1, 32}}, 16, s2)[0]);
  EXPECT_EQ(Hashes({{1, 32}}, 16, s1), Hashes({{1, 32}}, 16, s1));
  const int64_t tenant0[] = {0};
  const int64_t tenant1[] = {1};
  EXPECT_NE(HashScopeParts(s1, tenant0), HashScopeParts(s1, tenant1));
  // Length-prefixed strings: moving a character between fields changes the scope.
  EXPECT_NE(HashScopeBase({"ab", "c", "rope", "x"}), HashScopeBase({"a", "bc", "rope", "x"}));
}

// The scheme of block_hash.h written out plainly: per block, the bytes parent . scope .
// (content, offset, tokens) per piece, each integer 8 bytes little-endian, then XXH3_128.
std::vector<BlockHash> ReferenceHashes(const std::vector<PromptSegment>& layout, int64_t block,
                                       const BlockHash& scope) {
  std::vector<BlockHash> out;
  std::vector<unsigned char> bytes;
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  BlockHash parent = kBlockHashRoot;
  int64_t filled = 0;
  for (const PromptSegment& s : layout) {
    for (int64_t offset = 0; offset < s.tokens;) {
      if (filled == 0) {
        bytes.clear();
        put(parent.hi);
        put(parent.lo);
        put(scope.hi);
        put(scope.lo);
      }
      const int64_t take = std::min(s.tokens - offset, block - filled);
      put(s.content);
      put(static_cast<uint64_t>(offset));
      put(static_cast<uint64_t>(take));
      offset += take;
      filled += take;
      if (filled < block) continue;
      const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
      parent = BlockHash{h.high64, h.low64};
      out.push_back(parent);
      filled = 0;
    }
  }
  return out;
}

TEST(BlockHash, IdentitiesArePinned) {
  // Values of the scheme as first released: a change here changes every cache key (and
  // every saved trace analysis that compared them). Blocks 0, 1 and 3 lie inside one
  // segment; block 2 spans three.
  const int64_t parts[] = {3, -1};
  const BlockHash scope = HashScopeParts(kBlockHashRoot, parts);
  EXPECT_EQ(scope, (BlockHash{0xceaf25f2c15fd4c7ULL, 0x8d3db783e653f214ULL}));
  EXPECT_THAT(Hashes({{0x1234, 40}, {0xabcd, 5}, {0x77, 30}}, 16, scope),
              ElementsAre(BlockHash{0xdd4ad9c04f19f54dULL, 0xd5594c7cea881e66ULL},
                          BlockHash{0x1895c36a2d85186bULL, 0xa419f0554fa2f2c8ULL},
                          BlockHash{0x471656fbdf821502ULL, 0x63242d752c65b41bULL},
                          BlockHash{0x960e1184450a37bfULL, 0x8033723f3bd08d30ULL}));
}

TEST(BlockHash, EveryBlockShapeMatchesTheDocumentedSerialisation) {
  // Random layouts and block sizes: one-piece blocks (the fixed-size fast path), blocks
  // of many pieces, segments ending on and off block boundaries.
  RngStream rng(5, "block-hash-test");
  for (int trial = 0; trial < 300; ++trial) {
    const auto block = static_cast<int64_t>(1 + rng.NextBelow(40));
    std::vector<PromptSegment> layout;
    const uint64_t segments = 1 + rng.NextBelow(6);
    for (uint64_t i = 0; i < segments; ++i) {
      const int64_t tokens = rng.NextBelow(2) == 0 ? block * static_cast<int64_t>(1 + rng.NextBelow(3))
                                                   : static_cast<int64_t>(1 + rng.NextBelow(100));
      layout.push_back({rng.NextU64(), tokens});
    }
    const BlockHash scope{rng.NextU64(), rng.NextU64()};
    const auto expected = ReferenceHashes(layout, block, scope);
    ASSERT_EQ(Hashes(layout, block, scope), expected) << "trial " << trial;
    // A cap stops the chain early with the same values.
    const auto cap = static_cast<std::ptrdiff_t>(expected.size() / 2);
    if (cap > 0) {
      ASSERT_EQ(Hashes(layout, block, scope, cap), std::vector<BlockHash>(expected.begin(), expected.begin() + cap));
    }
  }
}

// Mooncake rows through the real importer: each hash id is a 512-token trace block.
std::vector<Request> ImportMooncake(const std::string& text) {
  TraceReadOptions options;
  options.format = TraceFormat::kMooncake;
  auto source = OpenTraceStream(std::make_unique<std::istringstream>(text), "t.jsonl", options);
  EXPECT_TRUE(source.ok()) << source.status().message();
  std::vector<Request> out;
  while (true) {
    auto next = (*source)->Next();
    EXPECT_TRUE(next.ok()) << next.status().message();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  return out;
}

TEST(BlockHash, MooncakeBlocksMapOntoAnyBlockSize) {
  // Two requests share their first two 512-token trace blocks (1024 tokens) and differ
  // after. At block size B exactly floor(1024 / B) leading blocks are shared, whether B
  // divides 512 or not (a block straddling ids 2|3 vs 2|7 differs).
  const auto reqs = ImportMooncake(
      "{\"timestamp\": 0, \"input_length\": 2048, \"output_length\": 4, \"hash_ids\": [1, 2, 3, 4]}\n"
      "{\"timestamp\": 5, \"input_length\": 2000, \"output_length\": 4, \"hash_ids\": [1, 2, 7, 8]}\n");
  ASSERT_EQ(reqs.size(), 2u);
  for (int64_t block : {16, 64, 128, 256, 512, 48, 100, 384, 1000}) {
    const auto a = Hashes(reqs[0].prompt, block);
    const auto b = Hashes(reqs[1].prompt, block);
    EXPECT_EQ(CommonPrefix(a, b), 1024 / block) << "block " << block;
    EXPECT_EQ(static_cast<int64_t>(a.size()), 2048 / block) << "block " << block;
    EXPECT_EQ(static_cast<int64_t>(b.size()), 2000 / block) << "block " << block;
    // The independent chain of the workload module agrees on which blocks are shared.
    std::vector<BlockKey> ka;
    std::vector<BlockKey> kb;
    AppendBlockKeys(reqs[0].prompt, block, 0, &ka);
    AppendBlockKeys(reqs[1].prompt, block, 0, &kb);
    int64_t shared = 0;
    while (shared < static_cast<int64_t>(std::min(ka.size(), kb.size())) &&
           ka[static_cast<size_t>(shared)] == kb[static_cast<size_t>(shared)]) {
      ++shared;
    }
    EXPECT_EQ(shared, 1024 / block) << "block " << block;
  }
  // B = 256 divides 512: block 3 lies inside hash id 2 at offset 256, exactly as a
  // hand-made layout with that content says.
  const ContentId id2 = MakeContentId(SegmentKind::kTraceBlock, 2);
  const ContentId id1 = MakeContentId(SegmentKind::kTraceBlock, 1);
  EXPECT_EQ(Hashes(reqs[0].prompt, 256)[3], Hashes({{id1, 512}, {id2, 512}}, 256)[3]);
}

// ---------------------------------------------------------------------------------------
// Pool: cached and evictable blocks

BlockHash H(uint64_t i) { return BlockHash{i, i * 7 + 1}; }

TEST(KvPoolCache, ReleasedPublishedBlocksStayFindableUntilAllocationEvictsThem) {
  KvBlockPool pool(5);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(3, a));  // 0 1 2; free: 3 4
  ASSERT_TRUE(pool.Publish(0, H(10), {}));
  ASSERT_TRUE(pool.Publish(1, H(11), {}));
  EXPECT_EQ(pool.cached_count(), 2);
  EXPECT_EQ(pool.evictable_count(), 0);
  pool.Release(a);  // tail first: 2 (private), 1, 0
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(3, 4, 2, 1, 0));
  EXPECT_EQ(pool.evictable_count(), 2);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(10)), 0);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(11)), 1);
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(4, b));  // 3 4 2 1: evicts block 1 (H(11)), keeps 0
  EXPECT_THAT(b, ElementsAre(3, 4, 2, 1));
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(11)), kNoBlock);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(10)), 0);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

TEST(KvPoolCache, AcquireTakesACachedBlockOffTheFreeList) {
  KvBlockPool pool(3);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(1, a));
  ASSERT_TRUE(pool.Publish(a[0], H(1), {}));
  pool.Release(a);
  EXPECT_EQ(pool.free_count(), 3);
  pool.Acquire(pool.FindNext(kNoBlock, H(1)));
  EXPECT_EQ(pool.refcount(0), 1);
  EXPECT_EQ(pool.free_count(), 2);
  EXPECT_EQ(pool.evictable_count(), 0);
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(1, 2));
  pool.Acquire(0);  // a second holder
  EXPECT_EQ(pool.refcount(0), 2);
  EXPECT_EQ(pool.total_refs(), 2);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

TEST(KvPoolCache, SecondWriterOfTheSameContentStaysPrivate) {
  KvBlockPool pool(2);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(2, a));
  EXPECT_TRUE(pool.Publish(0, H(5), {}));
  EXPECT_FALSE(pool.Publish(1, H(5), {}));
  EXPECT_FALSE(pool.published(1));
  EXPECT_EQ(pool.FindNext(kNoBlock, H(5)), 0);
  EXPECT_EQ(pool.published_total(), 1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvPoolCache, InvalidationHidesAtOnceAndFreesReferencedBlocksOnLastRelease) {
  KvBlockPool pool(4);
  std::vector<BlockId> a;
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(2, a));  // 0 1: tenant 0
  ASSERT_TRUE(pool.Allocate(1, b));  // 2: tenant 1
  ASSERT_TRUE(pool.Publish(0, H(1), {0, -1, 0}));
  ASSERT_TRUE(pool.Publish(1, H(2), {0, -1, 1}));
  ASSERT_TRUE(pool.Publish(2, H(3), {1, -1, 0}));
  pool.Release(std::span<const BlockId>(a).subspan(1));  // block 1 cached, block 0 still held
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(3, 1));
  const int64_t removed = pool.Invalidate([](const CacheTag& t) { return t.ns == 0; });
  EXPECT_EQ(removed, 2);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(1)), kNoBlock);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(2)), kNoBlock);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(3)), 2);  // the other tenant's entry is untouched
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(1, 3));  // garbage is reused first
  EXPECT_THAT(pool.invalidations_by_class(), ElementsAre(1, 1));
  EXPECT_EQ(pool.refcount(0), 1);  // still referenced: freed only when released
  pool.Release(std::span<const BlockId>(a).first(1));
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(1, 3, 0));
  EXPECT_EQ(pool.evictable_count(), 0);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

TEST(KvPoolCache, PublishAllChainsARunAndLeavesDuplicatesPrivate) {
  // Identities 1 -> 2 -> 3 form one chain; 4 is another child of 2.
  KvBlockPool pool(6);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(2, a));  // 0 1
  const std::vector<BlockHash> first = {H(1), H(2)};
  EXPECT_EQ(pool.PublishAll(a, first, CacheTag{}), 2);
  EXPECT_EQ(pool.chain_parent(1), 0);
  EXPECT_EQ(pool.chain_heads(), 1);
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(3, b));  // 2 3 4: a second writer of 1 and 2, then 3
  const std::vector<BlockHash> second = {H(1), H(2), H(3)};
  EXPECT_EQ(pool.PublishAll(b, second, CacheTag{0, -1, 2}), 1);
  EXPECT_FALSE(pool.published(2));  // the earlier writer keeps 1 and 2
  EXPECT_FALSE(pool.published(3));
  EXPECT_EQ(pool.chain_parent(4), 1);  // 3 hangs off the holder of 2, not the private copy
  EXPECT_EQ(pool.tag(4), (CacheTag{0, -1, 2}));
  EXPECT_EQ(pool.FindNext(pool.FindNext(pool.FindNext(kNoBlock, H(1)), H(2)), H(3)), 4);
  // Block 1 has a child already: another child of it becomes a head of its own.
  std::vector<BlockId> c;
  ASSERT_TRUE(pool.Allocate(1, c));  // 5
  const BlockHash two = H(2);
  ASSERT_TRUE(pool.Publish(5, H(4), CacheTag{}, 1, &two));
  EXPECT_EQ(pool.chain_parent(5), kNoBlock);
  EXPECT_EQ(pool.chain_heads(), 2);
  EXPECT_EQ(pool.FindNext(1, H(4)), 5);
  EXPECT_EQ(pool.FindNext(1, H(3)), 4);
  EXPECT_FALSE(pool.Publish(2, H(4), CacheTag{}, 1, &two));  // found as a head: a duplicate
  EXPECT_EQ(pool.published_total(), 4);
  EXPECT_EQ(pool.PublishAll({}, {}, CacheTag{}), 0);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

TEST(KvPoolCache, UnpublishingAParentLeavesItsChildFindableAfterTheParentIdentity) {
  KvBlockPool pool(4);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(3, a));  // 0 1 2
  const std::vector<BlockHash> chain = {H(1), H(2), H(3)};
  ASSERT_EQ(pool.PublishAll(a, chain, CacheTag{0, -1, 0}), 3);
  // Free the head first, so that evicting it leaves the rest of the chain cached.
  pool.Release(std::span<const BlockId>(a).first(1));
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(2, b));  // 3, then 0: evicts identity 1
  EXPECT_THAT(b, ElementsAre(3, 0));
  EXPECT_EQ(pool.FindNext(kNoBlock, H(1)), kNoBlock);
  // A walk that missed identity 1 goes on with no parent and still finds 2 and 3.
  EXPECT_EQ(pool.FindNext(kNoBlock, H(2)), 1);
  EXPECT_EQ(pool.FindNext(1, H(3)), 2);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
  // Identity 1 published again, on another block: its old child is found after it.
  ASSERT_TRUE(pool.Publish(3, H(1), CacheTag{}));
  EXPECT_EQ(pool.FindNext(pool.FindNext(kNoBlock, H(1)), H(2)), 1);
  const BlockHash one = H(1);
  EXPECT_FALSE(pool.Publish(0, H(2), CacheTag{}, 3, &one));  // 2 is held: no second copy
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
  pool.Release(std::span<const BlockId>(a).subspan(1));
  EXPECT_EQ(pool.Invalidate([](const CacheTag& t) { return t.ns == 0; }), 2);
  EXPECT_EQ(pool.FindNext(3, H(2)), kNoBlock);
  EXPECT_EQ(pool.chain_heads(), 1);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

TEST(KvPoolCache, AReusedBlockIsCountedAndInvalidatedUnderItsNewTag) {
  KvBlockPool pool(1);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(1, a));
  ASSERT_TRUE(pool.Publish(0, H(1), {0, -1, 3}));
  pool.Release(a);
  a.clear();
  ASSERT_TRUE(pool.Allocate(1, a));  // evicts H(1), counted for class 3
  EXPECT_THAT(pool.evictions_by_class(), ElementsAre(0, 0, 0, 1));
  ASSERT_TRUE(pool.Publish(0, H(2), {1, -1, 0}));
  EXPECT_EQ(pool.tag(0), (CacheTag{1, -1, 0}));
  EXPECT_EQ(pool.Invalidate([](const CacheTag& t) { return t.ns == 0; }), 0);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(2)), 0);
  EXPECT_EQ(pool.Invalidate([](const CacheTag& t) { return t.ns == 1; }), 1);
  EXPECT_EQ(pool.FindNext(kNoBlock, H(2)), kNoBlock);
  EXPECT_THAT(pool.invalidations_by_class(), ElementsAre(1));
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

// ---------------------------------------------------------------------------------------
// Engine

EngineConfig CacheConfig(int64_t kv_blocks = 1000) {
  EngineConfig c;
  c.scheduler.policy = "decode-first";
  c.scheduler.max_batched_tokens = 4096;
  c.scheduler.max_running = 16;
  c.scheduler.chunk_tokens = 4096;
  c.block_tokens = kB;
  c.kv_blocks = kv_blocks;
  c.prefix_cache.enabled = true;
  c.prefix_cache.scope = {"atlas-70b", "atlas-70b", "rope", "bf16/16"};
  return c;
}

Request Req(RequestId id, SimTime arrival, std::vector<PromptSegment> prompt, int64_t output, TenantId tenant = 0) {
  Request r;
  r.id = id;
  r.arrival = arrival;
  r.prompt = std::move(prompt);
  r.output_tokens = output;
  r.tenant = tenant;
  return r;
}

// Runs one request to completion on its own (the engine is idle before and after).
void RunAlone(Engine& e, const Request& r) {
  SimTime now = r.arrival;
  e.Submit(r, now);
  while (e.HasWork()) {
    const auto end = e.StartStep(now);
    ASSERT_TRUE(end.has_value());
    now = *end;
    e.FinishStep(now);
    const Status st = e.CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.message();
  }
}

TEST(EnginePrefixCache, OnlyCompleteBlocksEnterTheCache) {
  // For prompt lengths around block boundaries: request 1 computes the prompt (output 1:
  // nothing beyond it), request 2 repeats it. Hits = full blocks of the prompt; the
  // engine takes all but the last one when the prompt is an exact multiple of B.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  struct Case {
    int64_t prompt, hit_blocks, saved;
  };
  for (const Case& c : {Case{15, 0, 0}, Case{16, 1, 0}, Case{17, 1, 16}, Case{31, 1, 16}, Case{32, 2, 16},
                        Case{33, 2, 32}, Case{48, 3, 32}}) {
    RecordingObserver obs;
    auto e = MakeEngine(CacheConfig(), cost, &obs);
    RunAlone(*e, Req(1, SimTime(), {{42, c.prompt}}, 1));
    EXPECT_EQ(e->pool().cached_count(), c.prompt / kB) << "prompt " << c.prompt;
    RunAlone(*e, Req(2, SimTime() + Ms(100), {{42, c.prompt}}, 1));
    EXPECT_EQ(e->stats().prefix_cache.hit_blocks, c.hit_blocks) << "prompt " << c.prompt;
    EXPECT_EQ(e->stats().prefix_cache.hit_tokens, c.hit_blocks * kB) << "prompt " << c.prompt;
    EXPECT_EQ(e->stats().prefix_cache.saved_prefill_tokens, c.saved) << "prompt " << c.prompt;
    EXPECT_EQ(obs.outcomes.at(2).cached_tokens, c.saved);
    EXPECT_EQ(e->stats().prefix_cache.lookups, 2);
    EXPECT_EQ(e->stats().prefill_tokens, c.prompt + (c.prompt - c.saved));
    ExpectPoolAtBaseline(*e);
  }
}

TEST(EnginePrefixCache, HitSkipsPrefillAndImprovesTtft) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  RunAlone(*e, Req(1, SimTime(), {{42, 1000}, {1, 10}}, 3));
  RunAlone(*e, Req(2, SimTime() + Ms(100), {{42, 1000}, {2, 10}}, 3));
  // 1000 shared tokens = 62 full blocks (992 tokens); the rest is computed.
  EXPECT_EQ(obs.outcomes.at(2).cached_tokens, 992);
  EXPECT_EQ(obs.steps[3].shape.prefill_tokens, 1010 - 992);
  const Duration ttft1 = *obs.outcomes.at(1).first_token - obs.outcomes.at(1).arrival;
  const Duration ttft2 = *obs.outcomes.at(2).first_token - obs.outcomes.at(2).arrival;
  EXPECT_EQ(ttft1, Ms(1) + Us(10) * 1010);
  EXPECT_EQ(ttft2, Ms(1) + Us(10) * 18);
  // The cost model's saving: 992 tokens at 10 us (this model has no attention term).
  EXPECT_EQ(e->stats().prefix_cache.saved_prefill, Us(10) * 992);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, WritersBlocksArePrivateUntilTheirStepCompletes) {
  // Request 1 prefills 200 tokens in chunks of 64. Request 2 (same prompt) arrives in the
  // same instant and is admitted in the same step: nothing is published yet, no hit.
  // Request 3 arrives after the first chunk's step ended: it finds exactly those 4 blocks.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = CacheConfig();
  c.scheduler.max_batched_tokens = 192;  // room for two partial prefills and one admission
  c.scheduler.chunk_tokens = 64;
  c.scheduler.policy = "bounded-chunk";
  c.scheduler.max_decode_stall = Ms(1000);
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  e->Submit(Req(1, SimTime(), {{42, 200}}, 2), SimTime());
  e->Submit(Req(2, SimTime(), {{42, 200}}, 2), SimTime());
  const SimTime end1 = *e->StartStep(SimTime());
  EXPECT_EQ(e->request(2)->cached_tokens, 0);
  EXPECT_EQ(e->pool().cached_count(), 0) << "published at allocation";
  e->FinishStep(end1);
  EXPECT_EQ(e->pool().cached_count(), 4);  // both wrote 64 tokens; request 2's copies are duplicates
  EXPECT_EQ(e->pool().published_total(), 4);
  e->Submit(Req(3, end1, {{42, 200}}, 2), end1);
  const SimTime end2 = *e->StartStep(end1);
  EXPECT_EQ(e->request(3)->cached_tokens, 64);
  EXPECT_EQ(e->request(3)->num_computed, 64);
  e->FinishStep(end2);
  ASSERT_TRUE(e->CheckInvariants().ok()) << e->CheckInvariants().message();
  DrainEngine(*e, end2);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, CancelledWriterPublishesNothingFromTheStepInFlight) {
  const TestCostModel cost(Ms(10), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  e->Submit(Req(1, SimTime(), {{42, 64}}, 5), SimTime());
  const SimTime end = *e->StartStep(SimTime());
  e->Cancel(1, SimTime() + Ms(3));
  e->FinishStep(end);
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kCancelled);
  EXPECT_EQ(e->pool().cached_count(), 0);
  EXPECT_EQ(e->pool().published_total(), 0);
  RunAlone(*e, Req(2, end, {{42, 64}}, 1));
  EXPECT_EQ(obs.outcomes.at(2).cached_tokens, 0);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, NextTurnReusesThePreviousAnswer) {
  // Turn 0: prompt 40 tokens, answer 30 tokens; KV exists for 40 + 29 = 69 tokens, so 4
  // full blocks (64 tokens) are published, the last two holding answer tokens.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  const Request t0 = Req(10, SimTime(), {{42, 40}}, 30);
  RunAlone(*e, t0);
  EXPECT_EQ(e->pool().cached_count(), 4);
  // Turn 1: the previous prompt, the whole answer (as the generator writes it), a question.
  const ContentId answer = MakeContentId(SegmentKind::kAnswer, 10);
  RunAlone(*e, Req(11, SimTime() + Ms(500), {{42, 40}, {answer, 30}, {7, 20}}, 2));
  EXPECT_EQ(obs.outcomes.at(11).cached_tokens, 64);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, TenantsAreIsolatedUnlessSharingIsOptedIn) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  for (bool share : {false, true}) {
    EngineConfig c = CacheConfig();
    c.prefix_cache.share_across_tenants = share;
    RecordingObserver obs;
    auto e = MakeEngine(c, cost, &obs);
    RunAlone(*e, Req(1, SimTime(), {{42, 100}}, 1, /*tenant=*/0));
    RunAlone(*e, Req(2, SimTime() + Ms(10), {{42, 100}}, 1, /*tenant=*/1));
    RunAlone(*e, Req(3, SimTime() + Ms(20), {{42, 100}}, 1, /*tenant=*/0));
    EXPECT_EQ(obs.outcomes.at(2).cached_tokens, share ? 96 : 0) << "share " << share;
    EXPECT_EQ(obs.outcomes.at(3).cached_tokens, 96);
    ExpectPoolAtBaseline(*e);
  }
}

TEST(EnginePrefixCache, AdapterAndEngineScopeNeverHitAcross) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  Request base = Req(1, SimTime(), {{42, 100}}, 1);
  Request lora = Req(2, SimTime() + Ms(10), {{42, 100}}, 1);
  lora.adapter = 3;
  RunAlone(*e, base);
  RunAlone(*e, lora);
  EXPECT_EQ(obs.outcomes.at(2).cached_tokens, 0);
  // The same adapter again hits its own blocks.
  lora.id = 3;
  lora.arrival = SimTime() + Ms(20);
  RunAlone(*e, lora);
  EXPECT_EQ(obs.outcomes.at(3).cached_tokens, 96);
  // A tokenizer update invalidates everything: the same prompt is cold again.
  e->Invalidate({InvalidationKind::kTokenizer, kAllTargets});
  EXPECT_EQ(e->pool().cached_count(), 0);
  base.id = 4;
  base.arrival = SimTime() + Ms(30);
  RunAlone(*e, base);
  EXPECT_EQ(obs.outcomes.at(4).cached_tokens, 0);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, InvalidatingATenantLeavesOtherTenantsAvailable) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  RunAlone(*e, Req(1, SimTime(), {{42, 100}}, 1, 0));
  RunAlone(*e, Req(2, SimTime() + Ms(10), {{42, 100}}, 1, 1));
  EXPECT_EQ(e->pool().cached_count(), 12);
  e->Invalidate({InvalidationKind::kTenant, 0});
  EXPECT_EQ(e->pool().cached_count(), 6);
  EXPECT_EQ(e->stats().prefix_cache.invalidations, 6);
  RunAlone(*e, Req(3, SimTime() + Ms(20), {{42, 100}}, 1, 0));
  RunAlone(*e, Req(4, SimTime() + Ms(30), {{42, 100}}, 1, 1));
  EXPECT_EQ(obs.outcomes.at(3).cached_tokens, 0);   // cold start after the invalidation
  EXPECT_EQ(obs.outcomes.at(4).cached_tokens, 96);  // untouched
  // Tenant 0 republished under its new generation and hits again.
  RunAlone(*e, Req(5, SimTime() + Ms(40), {{42, 100}}, 1, 0));
  EXPECT_EQ(obs.outcomes.at(5).cached_tokens, 96);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, InvalidationWhileReferencedFreesOnLastReleaseAndStopsPublishing) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  e->Submit(Req(1, SimTime(), {{42, 64}}, 40), SimTime());
  SimTime now = *e->StartStep(SimTime());
  e->FinishStep(now);  // prompt computed: 4 blocks published, all held by request 1
  EXPECT_EQ(e->pool().cached_count(), 4);
  e->Invalidate({InvalidationKind::kModelRevision, kAllTargets});
  EXPECT_EQ(e->pool().cached_count(), 0);  // visibility goes first
  EXPECT_EQ(e->pool().used_count(), 4);    // still referenced: freed when request 1 ends
  ASSERT_TRUE(e->CheckInvariants().ok()) << e->CheckInvariants().message();
  DrainEngine(*e, now);
  // Its answer blocks were computed under the old revision: never published.
  EXPECT_EQ(e->pool().published_total(), 4);
  EXPECT_EQ(e->pool().cached_count(), 0);
  EXPECT_EQ(obs.outcomes.at(1).output_tokens, 40);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, EvictionFollowsTheFreeListFromTheLeastRecentlyReleased) {
  // 10 blocks. Request 1 (prompt A, 48 tokens) then request 2 (prompt B, 48 tokens),
  // each output 1: 3 blocks published each; released tail first. Free list after both:
  // never-used 6..9, then 2 1 0 (A), then 5 4 3 (B).
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(10), cost, &obs);
  RunAlone(*e, Req(1, SimTime(), {{100, 48}}, 1));
  RunAlone(*e, Req(2, SimTime() + Ms(10), {{200, 48}}, 1));
  EXPECT_THAT(e->pool().FreeListOrder(), ElementsAre(6, 7, 8, 9, 2, 1, 0, 5, 4, 3));
  // Request 3 needs 6 blocks (96 unique tokens): takes 6..9 then evicts A's tail (2, 1).
  e->Submit(Req(3, SimTime() + Ms(20), {{300, 96}}, 1), SimTime() + Ms(20));
  SimTime now = *e->StartStep(SimTime() + Ms(20));
  EXPECT_THAT(e->request(3)->blocks, ElementsAre(6, 7, 8, 9, 2, 1));
  EXPECT_EQ(e->stats().prefix_cache.evictions, 2);
  e->FinishStep(now);  // request 3 done: its blocks go back tail first
  EXPECT_THAT(e->pool().FreeListOrder(), ElementsAre(0, 5, 4, 3, 1, 2, 9, 8, 7, 6));
  // Prompt A again: only its head block (0) survived. The two blocks it computes come
  // from the head of the free list: B's tail (5) and middle (4) blocks are evicted.
  e->Submit(Req(4, now, {{100, 48}}, 1), now);
  const SimTime end4 = *e->StartStep(now);
  EXPECT_EQ(e->request(4)->cached_tokens, 16);
  EXPECT_THAT(e->request(4)->blocks, ElementsAre(0, 5, 4));
  EXPECT_EQ(e->stats().prefix_cache.evictions, 4);
  e->FinishStep(end4);
  // B kept only its head block.
  RunAlone(*e, Req(5, end4, {{200, 48}}, 1));
  EXPECT_EQ(obs.outcomes.at(5).cached_tokens, 16);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, HitBlocksOnTheFreeListAreNotCountedAsFreeForTheRest) {
  // 5 blocks. Prompt A (48 tokens) leaves 3 cached blocks on the free list. Request X
  // then holds the other 2 while it decodes. Request 2 = A + 31 tokens needs 5 blocks:
  // 3 hits + 2 new. The free list has 3 blocks, but they are its own hits: taking them
  // leaves none, so it must wait for X (counting the hits as free would admit it and
  // then find no block to allocate).
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(5), cost, &obs);
  RunEngine(*e, {Req(1, SimTime(), {{100, 48}}, 1), Req(2, SimTime() + Ms(10), {{7, 20}}, 10),
                 Req(3, SimTime() + Ms(10) + Us(1), {{100, 48}, {5, 31}}, 1)});
  EXPECT_EQ(obs.outcomes.at(3).cached_tokens, 48);
  EXPECT_GE(*obs.outcomes.at(3).first_token, *obs.outcomes.at(2).finish);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, PreemptedRequestFindsItsOwnPublishedBlocks) {
  // 8 blocks; two requests of 48 + 40 tokens (6 blocks each) cannot both finish: the
  // low-priority one is preempted. It released its blocks tail first, so the survivor
  // takes its tail and its head blocks are still cached when it is readmitted.
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = CacheConfig(8);
  c.scheduler.max_batched_tokens = 256;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  Request r1 = Req(1, SimTime(), {{1, 48}}, 40);
  Request r2 = Req(2, SimTime() + Us(1), {{2, 48}}, 40);
  r1.priority = 5;
  RunEngine(*e, {r1, r2});
  EXPECT_EQ(obs.outcomes.at(1).preemptions, 0);
  EXPECT_GE(obs.outcomes.at(2).preemptions, 1);
  EXPECT_GE(obs.outcomes.at(2).cached_tokens, 16);
  for (RequestId id : {1, 2}) EXPECT_EQ(obs.outcomes.at(id).output_tokens, 40);
  ExpectPoolAtBaseline(*e);
}

TEST(PrefixCache, SavingsCountOncePerRequestAfterPreemption) {
  // Regression (issue defect 3): a request re-admitted after a preemption looked up the
  // cache again and counted its hit as a lookup, hit and saved prefill each time, so a
  // policy that preempts more appeared to save more. C (priority 2) computes a 64-token
  // shared prefix; B (priority 0) hits it at its first admission and is preempted when
  // the pool runs out (A, priority 1, keeps growing); when B is re-admitted it takes C's
  // prefix blocks again. Its savings count once; the re-hit goes to rehit_tokens.
  const TestCostModel cost(Ms(10), Duration(), Duration());
  EngineConfig c = CacheConfig(18);
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  constexpr ContentId kShared = 7;
  Request rc = Req(3, SimTime(), {{kShared, 64}, {300, 16}}, 100);
  Request rb = Req(2, SimTime() + Ms(15), {{kShared, 64}, {200, 16}}, 100);
  Request ra = Req(1, SimTime() + Ms(30), {{100, 16}}, 60);
  rc.priority = 2;
  ra.priority = 1;
  RunEngine(*e, {rc, rb, ra});
  for (RequestId id : {1, 2, 3}) ASSERT_EQ(obs.outcomes.at(id).status, RequestStatus::kOk) << "request " << id;
  const RequestOutcome& b = obs.outcomes.at(2);
  ASSERT_GE(b.preemptions, 1) << "the scenario must preempt B to test anything";
  EXPECT_EQ(obs.outcomes.at(3).preemptions, 0);
  const PrefixCacheCounters& pc = e->stats().prefix_cache;
  EXPECT_EQ(pc.lookups, 3);                       // one per request
  EXPECT_EQ(pc.lookup_tokens, 80 + 80 + 16);      // their prompts at first admission
  EXPECT_EQ(pc.hit_blocks, 4);                    // B's first admission only
  EXPECT_EQ(pc.hit_tokens, 64);
  EXPECT_EQ(pc.saved_prefill_tokens, 64);
  // B's re-admissions took at least the shared prefix again (C was still running).
  EXPECT_GE(pc.rehit_tokens, 64);
  EXPECT_EQ(pc.rehit_tokens, pc.rehit_blocks * kB);
  EXPECT_GT(b.cached_tokens, 64);                 // per request: every admission's hits
  EXPECT_LE(b.cached_tokens - 64, pc.rehit_tokens);
  const PrefixCacheCounters by_class = e->prefix_cache_for_class(0);
  EXPECT_EQ(by_class.saved_prefill_tokens, 64);
  EXPECT_EQ(by_class.rehit_tokens, pc.rehit_tokens);
  const Json j = e->stats().ToJson(e->pool().total(), Ms(1000), false);
  EXPECT_EQ(j["prefix_cache"]["rehit_tokens"], pc.rehit_tokens);
  EXPECT_EQ(j["prefix_cache"]["hit_rate"], RoundForReport(64.0 / 176.0));
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, ReserveAdmissionAllocatesOnlyWhatTheHitDoesNotCover) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = CacheConfig();
  c.admission = AdmissionMode::kReserve;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunAlone(*e, Req(1, SimTime(), {{42, 100}}, 4));
  e->Submit(Req(2, SimTime() + Ms(10), {{42, 100}}, 60), SimTime() + Ms(10));
  const SimTime end = *e->StartStep(SimTime() + Ms(10));
  // 160 tokens reserve 10 blocks: 6 shared hits + 4 new.
  EXPECT_EQ(e->request(2)->blocks.size(), 10u);
  EXPECT_EQ(e->pool().used_count(), 10);
  e->FinishStep(end);
  DrainEngine(*e, end);
  EXPECT_EQ(obs.outcomes.at(2).cached_tokens, 96);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, ForkSharesSealedBlocksAndCopiesThePartialTail) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  e->Submit(Req(1, SimTime(), {{42, 40}}, 10), SimTime());
  SimTime now = *e->StartStep(SimTime());
  e->FinishStep(now);  // 40 computed: blocks 0 1 full, block 2 holds 8 tokens
  ASSERT_EQ(e->request(1)->generated, 1);
  ASSERT_TRUE(e->Fork(1, 100, 6, now));
  ASSERT_TRUE(e->Fork(1, 101, 3, now));
  const auto parent = e->request(1)->blocks;
  const auto child = e->request(100)->blocks;
  ASSERT_EQ(parent.size(), 3u);
  ASSERT_EQ(child.size(), 3u);
  EXPECT_EQ(child[0], parent[0]);
  EXPECT_EQ(child[1], parent[1]);
  EXPECT_NE(child[2], parent[2]);  // copied on write
  EXPECT_EQ(e->pool().refcount(parent[0]), 3);
  EXPECT_EQ(e->pool().refcount(parent[2]), 1);
  EXPECT_EQ(e->request(100)->num_computed, 40);
  // A one-token branch is complete at the fork: it ends at once and holds nothing.
  ASSERT_TRUE(e->Fork(1, 102, 1, now));
  EXPECT_FALSE(e->request(102).has_value());
  EXPECT_EQ(obs.outcomes.at(102).output_tokens, 1);
  EXPECT_EQ(obs.outcomes.at(102).first_token, now);
  EXPECT_EQ(e->pool().refcount(parent[0]), 3);
  ASSERT_TRUE(e->CheckInvariants().ok()) << e->CheckInvariants().message();
  DrainEngine(*e, now);
  EXPECT_EQ(obs.outcomes.at(1).output_tokens, 10);
  EXPECT_EQ(obs.outcomes.at(100).output_tokens, 6);
  EXPECT_EQ(obs.outcomes.at(101).output_tokens, 3);
  EXPECT_EQ(obs.outcomes.at(100).input_tokens, 40);
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, ForkWithoutAFreeBlockForTheTailChangesNothing) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(3), cost, &obs);
  e->Submit(Req(1, SimTime(), {{42, 40}}, 5), SimTime());
  const SimTime now = *e->StartStep(SimTime());
  e->FinishStep(now);
  ASSERT_EQ(e->pool().free_count(), 0);
  EXPECT_FALSE(e->Fork(1, 100, 4, now));
  EXPECT_FALSE(e->request(100).has_value());
  EXPECT_EQ(e->pool().total_refs(), 3);
  EXPECT_TRUE(e->CheckInvariants().ok());
}

TEST(EnginePrefixCache, CountersPerClassAddUpAndReachJson) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  Request a = Req(1, SimTime(), {{42, 100}}, 1);
  Request b = Req(2, SimTime() + Ms(10), {{42, 100}}, 1);
  b.class_id = 1;
  RunAlone(*e, a);
  RunAlone(*e, b);
  const PrefixCacheCounters c0 = e->prefix_cache_for_class(0);
  const PrefixCacheCounters c1 = e->prefix_cache_for_class(1);
  EXPECT_EQ(c0.lookups, 1);
  EXPECT_EQ(c0.hit_tokens, 0);
  EXPECT_EQ(c1.lookups, 1);
  EXPECT_EQ(c1.hit_blocks, 6);
  EXPECT_EQ(c1.saved_prefill_tokens, 96);
  EXPECT_EQ(e->prefix_cache_for_class(7).lookups, 0);
  const Json j = c1.ToJson();
  EXPECT_EQ(j.dump(),
            "{\"evictions\":0,\"hit_blocks\":6,\"hit_rate\":0.96,\"hit_tokens\":96,\"invalidations\":0,"
            "\"lookup_tokens\":100,\"lookups\":1,\"rehit_tokens\":0,\"saved_prefill_ms\":0.96,"
            "\"saved_prefill_tokens\":96}");
  const Json engine = e->stats().ToJson(e->pool().total(), Ms(1000), false);
  EXPECT_EQ(engine["prefix_cache"]["lookups"], 2);
  EXPECT_TRUE(engine["prefix_cache"].contains("mean_pool_share"));
}

TEST(EnginePrefixCache, DisabledCacheTakesNoHitsAndPublishesNothing) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = CacheConfig();
  c.prefix_cache.enabled = false;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunAlone(*e, Req(1, SimTime(), {{42, 100}}, 3));
  RunAlone(*e, Req(2, SimTime() + Ms(10), {{42, 100}}, 3));
  EXPECT_EQ(obs.outcomes.at(2).cached_tokens, 0);
  EXPECT_EQ(e->pool().published_total(), 0);
  EXPECT_EQ(e->stats().prefix_cache.lookups, 0);
  e->Invalidate({InvalidationKind::kModelRevision, kAllTargets});  // no-op
  ExpectPoolAtBaseline(*e);
}

TEST(EnginePrefixCache, DeadlinePredictionCountsTheCachedPrefix) {
  // 2000-token prompt at 100 us/token = 200 ms of prefill; deadline 100 ms. Cold it is
  // unreachable; with the prompt cached (1984 tokens) the prediction fits.
  const TestCostModel cost(Ms(1), Us(100), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(CacheConfig(), cost, &obs);
  Request cold = Req(1, SimTime(), {{42, 2000}}, 2);
  cold.deadline = SimTime() + Ms(100);
  e->Submit(cold, SimTime());
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kRejected);
  RunAlone(*e, Req(2, SimTime() + Ms(1), {{42, 2000}}, 1));
  Request warm = Req(3, SimTime() + Ms(500), {{42, 2000}}, 2);
  warm.deadline = SimTime() + Ms(600);
  RunAlone(*e, warm);
  EXPECT_EQ(obs.outcomes.at(3).status, RequestStatus::kOk);
  EXPECT_EQ(obs.outcomes.at(3).cached_tokens, 1984);
  ExpectPoolAtBaseline(*e);
}

}  // namespace
}  // namespace fleetplan
