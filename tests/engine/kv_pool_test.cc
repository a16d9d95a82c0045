#include "fleetplan/engine/kv_pool.h"

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

TEST(KvBlockPool, BlocksForTokensRoundsUp) {
  EXPECT_EQ(BlocksForTokens(0, 16), 0);
  EXPECT_EQ(BlocksForTokens(1, 16), 1);
  EXPECT_EQ(BlocksForTokens(16, 16), 1);
  EXPECT_EQ(BlocksForTokens(17, 16), 2);
}

}  // namespace
}  // namespace fleetplan
