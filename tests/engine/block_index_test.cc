// BlockIndex against std::map on random insert / erase / find sequences, with keys
// crowded onto few home slots so that probe clusters wrap around and erase has to shift,
// and keys that agree in their low 32 bits (the part the table's slots hold).
#include "fleetplan/engine/block_index.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

TEST(BlockIndex, EmptyIndexFindsNothing) {
  BlockIndex index(0);
  EXPECT_EQ(index.Find(BlockHash{1, 2}), -1);
  EXPECT_FALSE(index.Erase(BlockHash{1, 2}));
  EXPECT_EQ(index.size(), 0);
}

TEST(BlockIndex, InsertFindEraseAndDuplicates) {
  BlockIndex index(4);
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

TEST(BlockIndex, EraseBlockRemovesTheKeyItWasStoredUnder) {
  BlockIndex index(8);
  EXPECT_TRUE(index.Insert(BlockHash{7, 3}, 2));
  EXPECT_TRUE(index.Insert(BlockHash{8, 3}, 5));  // same low bits: the next slot
  EXPECT_TRUE(index.Insert(BlockHash{9, 4}, 6));  // home taken by the shifted entry
  EXPECT_EQ(index.key(5), (BlockHash{8, 3}));
  index.EraseBlock(2);
  EXPECT_EQ(index.Find(BlockHash{7, 3}), -1);
  EXPECT_EQ(index.Find(BlockHash{8, 3}), 5);
  EXPECT_EQ(index.Find(BlockHash{9, 4}), 6);
  EXPECT_EQ(index.size(), 2);
  EXPECT_TRUE(index.Insert(BlockHash{7, 3}, 2));  // the block can be stored again
  EXPECT_EQ(index.Find(BlockHash{7, 3}), 2);
}

TEST(BlockIndex, MatchesAReferenceMapUnderRandomOperations) {
  constexpr int64_t kMax = 200;
  BlockIndex index(kMax);
  std::map<std::pair<uint64_t, uint64_t>, int32_t> ref;
  std::set<int32_t> stored;  // a block is stored under at most one key
  RngStream rng(11, "block-index-test");
  for (int step = 0; step < 200'000; ++step) {
    // 24 distinct low values over a 512-slot table: long clusters, wrap-around at the
    // end; half of them differ only above bit 32, so slots alone cannot tell them apart.
    const uint64_t low = rng.NextBelow(24);
    const uint64_t lo = 500 + low % 12 + (low / 12) * (uint64_t{1} << 40);
    const uint64_t hi = rng.NextBelow(40);
    const BlockHash key{hi, lo};
    const auto ref_key = std::make_pair(hi, lo);
    const uint64_t op = rng.NextBelow(4);
    if (op == 0 && static_cast<int64_t>(ref.size()) < kMax) {
      const auto block = static_cast<int32_t>(rng.NextBelow(kMax));
      if (stored.contains(block)) continue;
      const bool inserted = ref.emplace(ref_key, block).second;
      ASSERT_EQ(index.Insert(key, block), inserted) << step;
      if (inserted) stored.insert(block);
    } else if (op == 1) {
      const auto it = ref.find(ref_key);
      if (it != ref.end()) stored.erase(it->second);
      ASSERT_EQ(index.Erase(key), ref.erase(ref_key) == 1) << step;
    } else if (op == 2 && !ref.empty()) {
      // Erase by block: the entry of a stored block picked at random.
      auto it = ref.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(rng.NextBelow(ref.size())));
      ASSERT_EQ(index.key(it->second), (BlockHash{it->first.first, it->first.second})) << step;
      index.EraseBlock(it->second);
      stored.erase(it->second);
      ref.erase(it);
    } else {
      const auto it = ref.find(ref_key);
      ASSERT_EQ(index.Find(key), it == ref.end() ? -1 : it->second) << step;
    }
    ASSERT_EQ(index.size(), static_cast<int64_t>(ref.size()));
  }
  for (const auto& [k, block] : ref) EXPECT_EQ(index.Find(BlockHash{k.first, k.second}), block);
}

}  // namespace
}  // namespace fleetplan
