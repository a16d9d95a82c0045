#include "fleetplan/engine/kv_pool.h"

#include <algorithm>
#include <deque>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fleetplan {
namespace {

using ::testing::ElementsAre;

TEST(KvBlockPool, AllocatesFromHeadInIdOrder) {
  KvBlockPool pool(6);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(3, a));
  EXPECT_THAT(a, ElementsAre(0, 1, 2));
  EXPECT_EQ(pool.free_count(), 3);
  EXPECT_EQ(pool.used_count(), 3);
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(3, 4, 5));
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvBlockPool, FailedAllocationChangesNothing) {
  KvBlockPool pool(4);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(3, a));
  std::vector<BlockId> b;
  EXPECT_FALSE(pool.Allocate(2, b));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.free_count(), 1);
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(3));
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvBlockPool, ReleaseAppendsTailFirstSoTheTailIsReusedFirst) {
  KvBlockPool pool(5);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(3, a));  // 0 1 2; free: 3 4
  pool.Release(a);
  // A request's blocks go back last-to-first: its tail (2) is reused before its head (0).
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(3, 4, 2, 1, 0));
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvBlockPool, SharedBlockReturnsOnlyWhenLastReferenceDrops) {
  KvBlockPool pool(3);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(1, a));
  pool.AddRef(a[0]);
  EXPECT_EQ(pool.refcount(a[0]), 2);
  pool.Release(a);
  EXPECT_EQ(pool.free_count(), 2);
  EXPECT_TRUE(pool.CheckInvariants().ok());
  pool.Release(a);
  EXPECT_EQ(pool.free_count(), 3);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvBlockPool, EmptyPool) {
  KvBlockPool pool(0);
  std::vector<BlockId> a;
  EXPECT_TRUE(pool.Allocate(0, a));
  EXPECT_FALSE(pool.Allocate(1, a));
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvBlockPool, HitAndInvalidationKeepTheOrderOfTheRest) {
  KvBlockPool pool(6);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(6, a));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(pool.Publish(a[i], BlockHash{1, i + 1}, CacheTag{0, -1, 0}));
  pool.Release(a);  // free: 5 4 3 2 1 0, all cached
  pool.Acquire(3);  // a hit takes 3 out of the middle
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(5, 4, 2, 1, 0));
  EXPECT_TRUE(pool.CheckInvariants().ok());
  pool.Acquire(5);  // ... and out of the head
  pool.Acquire(0);  // ... and out of the tail
  EXPECT_THAT(pool.FreeListOrder(), ElementsAre(4, 2, 1));
  EXPECT_TRUE(pool.CheckInvariants().ok());
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(1, b));  // evicts 4
  EXPECT_THAT(b, ElementsAre(4));
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

// The free list against a plain deque of block ids, over random allocations, releases,
// hits on free blocks and invalidations. "This order is the eviction order." The
// reference is the list a pool built eagerly would hold (every block queued at
// construction); the pool keeps the blocks it never handed out as one untouched run.
void CheckFreeListAgainstAReferenceQueue(int64_t kBlocks, uint64_t seed) {
  KvBlockPool pool(kBlocks);
  std::deque<BlockId> ref;
  for (BlockId b = 0; b < kBlocks; ++b) ref.push_back(b);
  std::vector<std::vector<BlockId>> held;
  std::mt19937_64 rng(seed);
  uint64_t next_hash = 1;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 5);
    if (op == 0) {  // allocate, and publish some of the blocks
      const auto n = static_cast<int64_t>(rng() % 4);
      std::vector<BlockId> got;
      const bool ok = pool.Allocate(n, got);
      ASSERT_EQ(ok, n <= static_cast<int64_t>(ref.size()));
      if (!ok) continue;
      for (BlockId b : got) {
        ASSERT_EQ(b, ref.front());
        ref.pop_front();
        if (rng() % 2 == 0) {
          ASSERT_TRUE(pool.Publish(b, BlockHash{7, next_hash++}, CacheTag{0, -1, 0}));
        }
      }
      held.push_back(got);
    } else if (op == 1 && !held.empty()) {  // release a request's blocks, last to first
      const size_t i = rng() % held.size();
      pool.Release(held[i]);
      for (auto it = held[i].rbegin(); it != held[i].rend(); ++it) ref.push_back(*it);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op >= 2 && op <= 3 && !ref.empty()) {  // a hit on a cached block anywhere in the list
      const BlockId b = ref[rng() % ref.size()];
      if (!pool.published(b)) continue;
      pool.Acquire(b);
      ref.erase(std::find(ref.begin(), ref.end(), b));
      if (rng() % 4 != 0) {  // a short request: back to the tail at once, leaving a hole
        const BlockId one[] = {b};
        pool.Release(one);
        ref.push_back(b);
      } else {
        held.push_back({b});
      }
    } else if (op == 4 && rng() % 8 == 0) {  // invalidate all: free published blocks to the head
      std::vector<BlockId> moved;
      for (BlockId b = 0; b < kBlocks; ++b) {
        if (pool.published(b) && pool.refcount(b) == 0) moved.push_back(b);
      }
      pool.Invalidate([](const CacheTag&) { return true; });
      for (BlockId b : moved) {  // in id order, each to the head
        ref.erase(std::find(ref.begin(), ref.end(), b));
        ref.push_front(b);
      }
    }
    ASSERT_THAT(pool.FreeListOrder(), ::testing::ElementsAreArray(ref.begin(), ref.end())) << "step " << step;
    ASSERT_TRUE(pool.CheckInvariants().ok()) << "step " << step << ": " << pool.CheckInvariants().message();
  }
}

// A pool small enough that the ring fills with holes and is compacted many times (and
// its positions wrap below zero at the first invalidation).
TEST(KvBlockPool, FreeListOrderMatchesAReferenceQueue) { CheckFreeListAgainstAReferenceQueue(12, 11); }

// Pools large enough that the untouched run outlives many releases to the tail,
// invalidations to the head and hits beside its position, before it runs out.
TEST(KvBlockPool, TheUntouchedRunKeepsItsPlaceInTheOrder) {
  for (const auto& [blocks, seed] : {std::pair<int64_t, uint64_t>{64, 5}, {300, 3}, {1000, 17}}) {
    SCOPED_TRACE(::testing::Message() << blocks << " blocks, seed " << seed);
    CheckFreeListAgainstAReferenceQueue(blocks, seed);
  }
}

// Building a pool writes nothing per block, and only blocks handed out count as touched.
TEST(KvBlockPool, OnlyBlocksHandedOutAreTouched) {
  KvBlockPool pool(1 << 20);
  EXPECT_EQ(pool.untouched(), 0);
  EXPECT_EQ(pool.free_count(), 1 << 20);
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.Allocate(3, got));
  EXPECT_THAT(got, ElementsAre(0, 1, 2));
  EXPECT_EQ(pool.untouched(), 3);
  pool.Release(got);  // to the tail, behind the untouched run
  got.clear();
  ASSERT_TRUE(pool.Allocate(2, got));
  EXPECT_THAT(got, ElementsAre(3, 4));
  EXPECT_EQ(pool.untouched(), 5);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().message();
}

// Hits on free blocks behind the head leave holes the head never reaches; the ring
// fills with them and is compacted (several times over 500 rounds: the ring starts at
// 64 entries and holds 4 blocks), and the order survives.
TEST(KvBlockPool, HolesFillTheRingAndCompactionKeepsTheOrder) {
  KvBlockPool pool(4);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(4, a));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(pool.Publish(a[i], BlockHash{2, i + 1}, CacheTag{0, -1, 0}));
  pool.Release(a);  // free: 3 2 1 0
  std::deque<BlockId> ref = {3, 2, 1, 0};
  for (int round = 0; round < 500; ++round) {
    const BlockId b = ref[1 + static_cast<size_t>(round) % 3];  // never the head
    pool.Acquire(b);
    const BlockId one[] = {b};
    pool.Release(one);
    ref.erase(std::find(ref.begin(), ref.end(), b));
    ref.push_back(b);
    ASSERT_THAT(pool.FreeListOrder(), ::testing::ElementsAreArray(ref.begin(), ref.end())) << "round " << round;
    ASSERT_TRUE(pool.CheckInvariants().ok()) << "round " << round << ": " << pool.CheckInvariants().message();
  }
  std::vector<BlockId> all;
  ASSERT_TRUE(pool.Allocate(4, all));
  EXPECT_THAT(all, ::testing::ElementsAreArray(ref.begin(), ref.end()));
  EXPECT_EQ(pool.evictions(), 4);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(KvBlockPool, BlocksForTokensRoundsUp) {
  EXPECT_EQ(BlocksForTokens(0, 16), 0);
  EXPECT_EQ(BlocksForTokens(1, 16), 1);
  EXPECT_EQ(BlocksForTokens(16, 16), 1);
  EXPECT_EQ(BlocksForTokens(17, 16), 2);
}

}  // namespace
}  // namespace fleetplan
