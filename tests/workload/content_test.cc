// Content ids and chained block keys: equal prefixes give equal keys, anything else
// differs, partial blocks are blocks of their own length.
#include "fleetplan/workload/content.h"

#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

std::vector<BlockKey> Keys(const std::vector<PromptSegment>& prompt, int64_t block, uint64_t scope = 0) {
  std::vector<BlockKey> out;
  AppendBlockKeys(prompt, block, scope, &out);
  return out;
}

TEST(ContentIdTest, KindAndArgumentsAllMatter) {
  std::set<ContentId> ids;
  for (SegmentKind kind : {SegmentKind::kSystem, SegmentKind::kTenantInstructions, SegmentKind::kDocument,
                           SegmentKind::kUnique, SegmentKind::kAnswer, SegmentKind::kTraceBlock}) {
    for (uint64_t a = 0; a < 20; ++a) {
      for (uint64_t b = 0; b < 5; ++b) ids.insert(MakeContentId(kind, a, b));
    }
  }
  EXPECT_EQ(ids.size(), 6u * 20u * 5u);
  EXPECT_NE(MakeContentId(SegmentKind::kDocument, 1, 2), MakeContentId(SegmentKind::kDocument, 2, 1));
  EXPECT_EQ(MakeContentId(SegmentKind::kUnique, 7, 1), MakeContentId(SegmentKind::kUnique, 7, 1));
}

TEST(ContentIdTest, GoldenValuesNeverChange) {
  // Content ids are written into trace files: changing the hash breaks every trace.
  // (Values computed independently from the documented scheme.)
  EXPECT_EQ(MakeContentId(SegmentKind::kTraceBlock, 0), 1512155518025169082ULL);
  EXPECT_EQ(MakeContentId(SegmentKind::kTenantInstructions, 3), 15133845549656650646ULL);
  EXPECT_EQ(HashCombine(0, 0), 5197578548964807871ULL);
  EXPECT_NE(HashCombine(1, 2), HashCombine(2, 1));
}

TEST(BlockKeysTest, CountIsCeilOfPromptOverBlock) {
  EXPECT_EQ(Keys({{1, 16}}, 16).size(), 1u);
  EXPECT_EQ(Keys({{1, 17}}, 16).size(), 2u);
  EXPECT_EQ(Keys({{1, 20}, {2, 5}}, 16).size(), 2u);
  EXPECT_EQ(Keys({{1, 5}, {2, 5}, {3, 6}}, 16).size(), 1u);
  EXPECT_EQ(Keys({{1, 1000}}, 1).size(), 1000u);
}

TEST(BlockKeysTest, SharedPrefixSharesLeadingKeysOnly) {
  const auto a = Keys({{100, 40}, {200, 30}}, 16);  // blocks: 16 | 16 | 8+8 | 16 | 6
  const auto b = Keys({{100, 40}, {300, 30}}, 16);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);  // the block where the second segment starts differs
  EXPECT_NE(a[3], b[3]);
  EXPECT_NE(a[4], b[4]);
}

TEST(BlockKeysTest, ChainingMakesPositionMatter) {
  // The same content at a different position (after different blocks) is a different block.
  const auto a = Keys({{1, 16}, {2, 16}}, 16);
  const auto b = Keys({{3, 16}, {2, 16}}, 16);
  EXPECT_NE(a[1], b[1]);
}

TEST(BlockKeysTest, SegmentSplitIsInvisibleWhenContentAndOffsetsMatch) {
  // One segment of 32 tokens vs the same content described as two pieces: the pieces
  // carry offsets, so a block cut the same way hashes the same.
  const auto whole = Keys({{9, 32}}, 16);
  const auto also_whole = Keys({{9, 32}}, 16);
  EXPECT_EQ(whole, also_whole);
  // A shorter segment of the same content is a prefix of the longer one.
  const auto shorter = Keys({{9, 16}}, 16);
  EXPECT_EQ(shorter[0], whole[0]);
}

TEST(BlockKeysTest, PartialLastBlockDependsOnItsLength) {
  const auto a = Keys({{5, 20}}, 16);
  const auto b = Keys({{5, 21}}, 16);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
}

TEST(BlockKeysTest, ScopeSeparatesCaches) {
  EXPECT_NE(Keys({{5, 16}}, 16, 0)[0], Keys({{5, 16}}, 16, 1)[0]);
}

TEST(BlockKeysTest, BlockKeysAreNotContentIds) {
  // A one-segment block must not collide with the segment's own id.
  const ContentId id = MakeContentId(SegmentKind::kUnique, 1);
  EXPECT_NE(Keys({{id, 16}}, 16)[0], id);
}

}  // namespace
}  // namespace fleetplan
