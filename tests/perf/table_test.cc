// The table step model: CSV parsing and its located errors, bilinear interpolation at and
// between grid points, linear extrapolation outside (flagged), and the load-time checks
// that keep Cost from failing or going negative.
#include "support/build_paths.h"
#include "fleetplan/perf/table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "perf/perf_test_util.h"

namespace fleetplan {
namespace {

using perf_test::Decodes;
using perf_test::Prefill;
using ::testing::HasSubstr;

// step_ms = 10 + 0.5 d + 0.02 p + 0.001 d p on d in {0, 8, 16}, p in {0, 512, 1024}: a
// bilinear function, so interpolation inside the grid reproduces it exactly. Rows are
// deliberately out of order; a comment and a blank line are skipped.
constexpr const char* kGrid =
    "# measured on nothing: a hand-made grid\n"
    "decode_batch,prefill_tokens,step_ms\n"
    "0,0,10\n"
    "0,512,20.24\n"
    "0,1024,30.48\n"
    "\n"
    "16,0,18\n"
    "8,0,14\n"
    "8,512,28.336\n"
    "8,1024,42.672\n"
    "16,512,36.432\n"
    "16,1024,54.864\n";

StepTable Grid() {
  auto t = StepTable::Parse(kGrid, "t.csv");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

double At(const StepTable& t, int64_t d, int64_t p, bool* outside) { return t.ValueNs(d, p, outside); }

std::string ParseError(std::string_view text) {
  auto t = StepTable::Parse(text, "t.csv");
  EXPECT_FALSE(t.ok());
  return t.ok() ? std::string() : t.status().message();
}

TEST(StepTable, ParsesAFullGrid) {
  const StepTable t = Grid();
  EXPECT_THAT(t.decode_batches(), ::testing::ElementsAre(0, 8, 16));
  EXPECT_THAT(t.prefill_tokens(), ::testing::ElementsAre(0, 512, 1024));
  EXPECT_DOUBLE_EQ(t.AtNs(1, 1), 28.336e6);
}

TEST(StepTable, GridPointsComeBackExactly) {
  const StepTable t = Grid();
  bool outside = true;
  EXPECT_EQ(std::llround(At(t, 8, 512, &outside)), 28'336'000);
  EXPECT_FALSE(outside);
  EXPECT_EQ(std::llround(At(t, 0, 0, &outside)), 10'000'000);
  EXPECT_EQ(std::llround(At(t, 16, 1024, &outside)), 54'864'000);
  EXPECT_EQ(std::llround(At(t, 0, 1024, &outside)), 30'480'000);
  EXPECT_FALSE(outside);
}

TEST(StepTable, BetweenGridPointsIsBilinear) {
  const StepTable t = Grid();
  bool outside = true;
  // (4, 256): 10 + 2 + 5.12 + 1.024 = 18.144 ms.
  EXPECT_EQ(std::llround(At(t, 4, 256, &outside)), 18'144'000);
  EXPECT_FALSE(outside);
  // (12, 768): 10 + 6 + 15.36 + 9.216 = 40.576 ms; on an edge line: (16, 100) = 18 + 2 + 1.6.
  EXPECT_EQ(std::llround(At(t, 12, 768, &outside)), 40'576'000);
  EXPECT_EQ(std::llround(At(t, 16, 100, &outside)), 21'600'000);
}

TEST(StepTable, OutsideIsLinearFromTheEdgeCellAndFlagged) {
  const StepTable t = Grid();
  bool outside = false;
  // One axis out: (24, 512) = 36.432 + 8 × (36.432 - 28.336) / 8 = 44.528 ms.
  EXPECT_EQ(std::llround(At(t, 24, 512, &outside)), 44'528'000);
  EXPECT_TRUE(outside);
  // Both out: (24, 2048) = 54.864 + 8 × 1.524 + 1024 × 0.036 = 103.92 ms — the edge value
  // plus each axis's edge slope, no cross term (the bilinear surface would say 112.112).
  EXPECT_EQ(std::llround(At(t, 24, 2048, &outside)), 103'920'000);
  EXPECT_TRUE(outside);
}

TEST(TableStepModel, CostsTheStepShape) {
  const TableStepModel model(Grid(), /*extrapolate=*/false);
  // 8 decodes, no prefill: (8, 0) = 14 ms.
  EXPECT_EQ(model.Cost(Decodes(8, 4000)).gpu, Ms(14));
  // 4 decodes + 256 prefill tokens in two chunks: (4, 256) = 18.144 ms.
  std::vector<StepChunk> mixed = Decodes(4, 10);
  mixed.push_back(Prefill(200));
  mixed.push_back(Prefill(56, 300));
  const StepCost cost = model.Cost(mixed);
  EXPECT_EQ(cost.gpu, Ns(18'144'000));
  EXPECT_FALSE(cost.extrapolated);
  // Padding 5 decodes to 8 looks up (8, 0).
  EXPECT_EQ(model.CostPadded(Decodes(5, 10), StepPadding{3, 10}).gpu, Ms(14));
}

TEST(TableStepModel, ExtrapolatingModelFlagsTheStep) {
  const TableStepModel model(Grid(), /*extrapolate=*/true);
  const StepCost cost = model.Cost(Decodes(24, 10));
  // (24, 0) = 18 + 8 × (18 - 14) / 8 = 22 ms.
  EXPECT_EQ(cost.gpu, Ms(22));
  EXPECT_TRUE(cost.extrapolated);
  EXPECT_FALSE(model.Cost(Decodes(16, 10)).extrapolated);
}

TEST(TableStepModel, DefaultPrefillCostPerTokenUsesA512TokenChunk) {
  const TableStepModel model(Grid(), false);
  // (0, 512) = 20.24 ms over 512 tokens = 39,531.25 -> 39,531 ns.
  EXPECT_EQ(model.PrefillCostPerToken(), Ns(39'531));
}

TEST(TableStepModel, DescribeListsTheGrid) {
  const TableStepModel model(Grid(), true);
  const Json j = model.Describe();
  EXPECT_EQ(j["kind"], "table");
  EXPECT_EQ(j["file"], "t.csv");
  EXPECT_EQ(j["extrapolate"], true);
  EXPECT_EQ(j["decode_batch"], Json({0, 8, 16}));
  EXPECT_EQ(j["prefill_tokens"], Json({0, 512, 1024}));
}

TEST(StepTableErrors, HeaderTypoGetsDidYouMean) {
  EXPECT_EQ(ParseError("decode_bach,prefill_tokens,step_ms\n0,0,1\n"),
            "t.csv:1:1: header: unknown column 'decode_bach'; did you mean 'decode_batch'? "
            "(valid: decode_batch, prefill_tokens, step_ms) (header: "
            "decode_batch,prefill_tokens,step_ms)\n"
            "    1 | decode_bach,prefill_tokens,step_ms\n"
            "      | ^\n");
}

TEST(StepTableErrors, HeaderColumnsOutOfOrder) {
  EXPECT_EQ(ParseError("prefill_tokens,decode_batch,step_ms\n"),
            "t.csv:1:1: header: column 1 must be 'decode_batch', got 'prefill_tokens' (header: "
            "decode_batch,prefill_tokens,step_ms)\n"
            "    1 | prefill_tokens,decode_batch,step_ms\n"
            "      | ^\n");
  EXPECT_THAT(ParseError("decode_batch,prefill_tokens,step_ms,notes\n"),
              ::testing::StartsWith("t.csv:1:37: header: expected 3 columns "
                                    "'decode_batch,prefill_tokens,step_ms', got 4"));
}

TEST(StepTableErrors, BadCellsAreLocatedAtTheirColumn) {
  EXPECT_EQ(ParseError("decode_batch,prefill_tokens,step_ms\n0,0,1\n8, 512,abc\n"),
            "t.csv:3:8: step_ms: expected milliseconds, a number in [0, 3600000], got 'abc'\n"
            "    3 | 8, 512,abc\n"
            "      |        ^\n");
  EXPECT_EQ(ParseError("decode_batch,prefill_tokens,step_ms\n1.5,0,1\n"),
            "t.csv:2:1: decode_batch: expected an integer in [0, 16777216], got '1.5'\n"
            "    2 | 1.5,0,1\n"
            "      | ^\n");
  EXPECT_THAT(ParseError("decode_batch,prefill_tokens,step_ms\n0,-5,1\n"),
              ::testing::StartsWith("t.csv:2:3: prefill_tokens: expected an integer in [0, "
                                    "1073741824], got '-5'"));
  EXPECT_THAT(ParseError("decode_batch,prefill_tokens,step_ms\n0,0,-1\n"),
              ::testing::StartsWith("t.csv:2:5: step_ms: expected milliseconds"));
  EXPECT_THAT(ParseError("decode_batch,prefill_tokens,step_ms\n0,0,nan\n"),
              ::testing::StartsWith("t.csv:2:5: step_ms: expected milliseconds"));
  EXPECT_EQ(ParseError("decode_batch,prefill_tokens,step_ms\n0,0\n"),
            "t.csv:2:4: step_ms: expected 3 fields (decode_batch,prefill_tokens,step_ms), got 2\n"
            "    2 | 0,0\n"
            "      |    ^\n");
}

TEST(StepTableErrors, DuplicateAndMissingCells) {
  EXPECT_EQ(ParseError("decode_batch,prefill_tokens,step_ms\n0,0,1\n0,8,2\n1,0,3\n1,8,4\n0,8,5\n"),
            "t.csv:6:1: decode_batch: duplicate cell (decode_batch 0, prefill_tokens 8); first at "
            "line 3\n"
            "    6 | 0,8,5\n"
            "      | ^\n");
  EXPECT_EQ(ParseError("decode_batch,prefill_tokens,step_ms\n0,0,1\n0,8,2\n1,0,3\n"),
            "t.csv:4:1: step_ms: missing cell (decode_batch 1, prefill_tokens 8): the rows must "
            "form a full grid, every decode_batch (0, 1) with every prefill_tokens (0, 8)");
  EXPECT_THAT(ParseError("decode_batch,prefill_tokens,step_ms\n0,0,1\n0,8,2\n"),
              ::testing::StartsWith("t.csv:2:1: decode_batch: needs at least 2 distinct values to "
                                    "interpolate, got 1 (0)"));
  EXPECT_THAT(ParseError("# only a comment\n"),
              ::testing::StartsWith("t.csv:1:1: header: empty table"));
  EXPECT_THAT(ParseError("decode_batch,prefill_tokens,step_ms\n"),
              HasSubstr("no data rows after the header"));
}

TEST(StepTableChecks, CoverageGapNamesBothRanges) {
  const StepTable t = Grid();
  EXPECT_EQ(t.CoverageGap(16, 1024), "");
  EXPECT_EQ(t.CoverageGap(256, 8192),
            "step table 't.csv' covers decode_batch 0..16 and prefill_tokens 0..1024, but steps "
            "reach decode_batch 0..256 and prefill_tokens 0..8192; extend the table or set "
            "extrapolate: true");
}

TEST(StepTableChecks, ExtrapolationNeedsNonDecreasingEdges) {
  auto t = StepTable::Parse(
      "decode_batch,prefill_tokens,step_ms\n0,0,10\n0,512,20\n8,0,14\n8,512,19.5\n", "t.csv");
  ASSERT_TRUE(t.ok());
  const Status s = t->CheckExtrapolationSafe(64, 8192);
  EXPECT_EQ(s.message(),
            "t.csv:5:1: step_ms: with extrapolate: true the last decode_batch interval must not "
            "decrease: at prefill_tokens 512 it goes 20 ms (decode_batch 0) -> 19.5 ms "
            "(decode_batch 8), so larger batches would extrapolate shorter\n"
            "    5 | 8,512,19.5\n"
            "      | ^\n");
  EXPECT_TRUE(Grid().CheckExtrapolationSafe(256, 8192).ok());
}

TEST(StepTableChecks, ExtrapolationMustNotGoNegativeTowardsZero) {
  // Starts at decode_batch 8 with a steep slope: extrapolating down to 0 gives 10 - 8 × 2.
  auto t = StepTable::Parse(
      "decode_batch,prefill_tokens,step_ms\n8,0,10\n8,512,20\n16,0,26\n16,512,36\n", "t.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->CheckExtrapolationSafe(16, 512).message(),
              ::testing::StartsWith("t.csv:2:1: step_ms: with extrapolate: true, extrapolating to "
                                    "decode_batch 0, prefill_tokens 0 gives -6 ms; add rows at "
                                    "decode_batch 0 and prefill_tokens 0"));
}

TEST(StepTableChecks, ExtrapolationBeyondAnHourIsRejected) {
  const StepTable t = Grid();
  // Edge slope 1.524 ms per sequence: 2^24 sequences would take hours.
  EXPECT_THAT(t.CheckExtrapolationSafe(int64_t{1} << 24, 1024).message(),
              HasSubstr("could extrapolate to"));
}

TEST(StepTableLoad, MissingFileIsAnError) {
  auto t = StepTable::Load(std::string(FLEETPLAN_SOURCE_DIR) + "/tests/perf/no-such-table.csv", "x.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), 3);
  EXPECT_THAT(t.status().message(), HasSubstr("no-such-table.csv"));
}

}  // namespace
}  // namespace fleetplan
