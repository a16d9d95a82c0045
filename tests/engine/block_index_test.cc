// BlockIndex against std::map on random insert / erase / find sequences, with keys
// crowded onto few home slots so that probe clusters wrap around and erase has to shift,
// keys that agree in their low bits, and sizes that make the table grow and shrink.
#include "fleetplan/engine/block_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>

#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

TEST(BlockIndex, EmptyIndexFindsNothing) {
  BlockIndex index;
  EXPECT_EQ(index.Find(BlockHash{1, 2}), -1);
  EXPECT_FALSE(index.Erase(BlockHash{1, 2}));
  EXPECT_EQ(index.size(), 0);
  EXPECT_EQ(index.capacity(), 0U);  // nothing allocated before the first insert
}

TEST(BlockIndex, InsertFindEraseAndDuplicates) {
  BlockIndex index;
  EXPECT_TRUE(index.Insert(BlockHash{1, 5}, 0));
  EXPECT_FALSE(index.Insert(BlockHash{1, 5}, 3));  // present: unchanged
  EXPECT_TRUE(index.Insert(BlockHash{2, 5}, 1));   // same low bits, other key
  EXPECT_EQ(index.Find(BlockHash{1, 5}), 0);
  EXPECT_EQ(index.Find(BlockHash{2, 5}), 1);
  EXPECT_TRUE(index.Erase(BlockHash{1, 5}));
  EXPECT_EQ(index.Find(BlockHash{1, 5}), -1);
  EXPECT_EQ(index.Find(BlockHash{2, 5}), 1);  // shifted back, still found
  EXPECT_EQ(index.size(), 1);
}

TEST(BlockIndex, GrowsAboveAQuarterAndShrinksBelowASixteenth) {
  BlockIndex index;
  for (int32_t i = 0; i < 16; ++i) ASSERT_TRUE(index.Insert(BlockHash{1, static_cast<uint64_t>(i)}, i));
  EXPECT_EQ(index.capacity(), BlockIndex::kMinSlots);  // 16 of 64: a quarter
  ASSERT_TRUE(index.Insert(BlockHash{1, 16}, 16));
  EXPECT_EQ(index.capacity(), 2 * BlockIndex::kMinSlots);
  for (int32_t i = 0; i <= 16; ++i) EXPECT_EQ(index.Find(BlockHash{1, static_cast<uint64_t>(i)}), i);
  for (int32_t i = 16; i >= 8; --i) ASSERT_TRUE(index.Erase(BlockHash{1, static_cast<uint64_t>(i)}));
  EXPECT_EQ(index.capacity(), 2 * BlockIndex::kMinSlots);  // 8 of 128: a sixteenth
  ASSERT_TRUE(index.Erase(BlockHash{1, 7}));
  EXPECT_EQ(index.capacity(), BlockIndex::kMinSlots);
  for (int32_t i = 0; i < 7; ++i) EXPECT_EQ(index.Find(BlockHash{1, static_cast<uint64_t>(i)}), i);
  for (int32_t i = 0; i < 7; ++i) ASSERT_TRUE(index.Erase(BlockHash{1, static_cast<uint64_t>(i)}));
  EXPECT_EQ(index.capacity(), BlockIndex::kMinSlots);  // never below the minimum
  EXPECT_EQ(index.size(), 0);
}

TEST(BlockIndex, MatchesAReferenceMapUnderRandomOperations) {
  BlockIndex index;
  std::map<std::pair<uint64_t, uint64_t>, int32_t> ref;
  RngStream rng(11, "block-index-test");
  size_t largest = 0;
  for (int step = 0; step < 200'000; ++step) {
    // Phases of mostly inserts and mostly erases, so the table grows and shrinks. Keys
    // come from 24 low values (long clusters, wrap-around at the end of the table), half
    // of them differing only above bit 40, so low bits alone cannot tell them apart.
    const bool growing = (step / 20'000) % 2 == 0;
    const uint64_t low = rng.NextBelow(24);
    const uint64_t lo = 500 + low % 12 + (low / 12) * (uint64_t{1} << 40);
    const uint64_t hi = rng.NextBelow(100);
    const BlockHash key{hi, lo};
    const auto ref_key = std::make_pair(hi, lo);
    const uint64_t op = rng.NextBelow(10);
    if (op < (growing ? 6U : 1U)) {
      const auto value = static_cast<int32_t>(rng.NextBelow(1000));
      const bool inserted = ref.emplace(ref_key, value).second;
      ASSERT_EQ(index.Insert(key, value), inserted) << step;
    } else if (op < 8) {
      ASSERT_EQ(index.Erase(key), ref.erase(ref_key) == 1) << step;
    } else {
      const auto it = ref.find(ref_key);
      ASSERT_EQ(index.Find(key), it == ref.end() ? -1 : it->second) << step;
    }
    ASSERT_EQ(index.size(), static_cast<int64_t>(ref.size()));
    ASSERT_LE(4 * ref.size(), index.capacity()) << step;
    largest = std::max(largest, index.capacity());
  }
  for (const auto& [k, value] : ref) EXPECT_EQ(index.Find(BlockHash{k.first, k.second}), value);
  EXPECT_GE(largest, 16 * BlockIndex::kMinSlots);  // it did grow, and shrink back below:
  EXPECT_LT(index.capacity(), largest);
}

}  // namespace
}  // namespace fleetplan
