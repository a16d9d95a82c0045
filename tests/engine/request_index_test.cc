// RequestIndex (flat_index.h): live request ids -> slots against std::map, with the id
// patterns the engine sees: sequential, strided (one replica of 16 sees every 16th id),
// and sparse, through sizes that make the table grow and shrink.
#include <gtest/gtest.h>

#include <map>

#include "fleetplan/core/rng.h"
#include "fleetplan/engine/flat_index.h"

namespace fleetplan {
namespace {

TEST(RequestIndex, FindsInsertedIdsAndForgetsErasedOnes) {
  RequestIndex index;
  EXPECT_EQ(index.Find(7), -1);
  EXPECT_EQ(index.capacity(), 0U);  // nothing allocated before the first insert
  EXPECT_TRUE(index.Insert(7, 3));
  EXPECT_FALSE(index.Insert(7, 4));  // present: unchanged
  EXPECT_TRUE(index.Contains(7));
  EXPECT_EQ(index.Find(7), 3);
  EXPECT_TRUE(index.Erase(7));
  EXPECT_FALSE(index.Erase(7));
  EXPECT_FALSE(index.Contains(7));
  EXPECT_EQ(index.size(), 0);
}

// Ids that share their low bits (a stride of 2^k) are all found, in a table sized by
// the count alone (load between 1/16 and 1/4).
TEST(RequestIndex, StridedIdsAreFoundInATableSizedByTheirCount) {
  for (const int64_t stride : {int64_t{1}, int64_t{16}, int64_t{1024}, int64_t{1} << 20}) {
    RequestIndex index;
    for (int32_t i = 0; i < 4096; ++i) ASSERT_TRUE(index.Insert(stride * i, i));
    for (int32_t i = 0; i < 4096; ++i) ASSERT_EQ(index.Find(stride * i), i) << "stride " << stride;
    EXPECT_EQ(index.capacity(), 16384U) << "stride " << stride;  // 4096 entries: load exactly 1/4
    EXPECT_EQ(index.Find(stride * 4096), -1);
  }
}

TEST(RequestIndex, RandomOperationsAgreeWithAMap) {
  RngStream rng(5, "request-index-test");
  RequestIndex index;
  std::map<int64_t, int32_t> reference;
  int64_t next_id = 0;
  for (int op = 0; op < 200'000; ++op) {
    // Phases of growth and of shrinking, so the table resizes both ways.
    const bool growing = (op / 20'000) % 2 == 0;
    if (rng.NextBelow(4) < (growing ? 3u : 1u)) {
      const int64_t id = next_id;
      next_id += 1 + static_cast<int64_t>(rng.NextBelow(40));
      const auto slot = static_cast<int32_t>(rng.NextBelow(1'000'000));
      ASSERT_TRUE(index.Insert(id, slot));
      reference.emplace(id, slot);
    } else if (!reference.empty()) {
      auto it = reference.lower_bound(static_cast<int64_t>(rng.NextBelow(static_cast<uint64_t>(next_id))));
      if (it == reference.end()) it = reference.begin();
      ASSERT_TRUE(index.Erase(it->first));
      reference.erase(it);
    }
    ASSERT_EQ(index.size(), static_cast<int64_t>(reference.size()));
    if (op % 1000 == 0) {
      for (const auto& [id, slot] : reference) ASSERT_EQ(index.Find(id), slot);
      ASSERT_LE(index.capacity(), std::max<size_t>(RequestIndex::kMinSlots, 32 * reference.size()));
    }
  }
}

}  // namespace
}  // namespace fleetplan
