// Expert placement: loads, replicas, dispatch bytes, update pricing and generations
// (plan/experts.h, experts_report.h).
#include "fleetplan/plan/experts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/plan/experts_report.h"

namespace fleetplan {
namespace {

// 8 experts of one layer, one hot (e0) and one warm (e4).
ExpertCounts Skewed() {
  Expected<ExpertCounts> c = ParseExpertCounts("100,10,10,10,50,5,5,10");
  EXPECT_TRUE(c.ok());
  return std::move(c).value();
}

const Bytes kAssignment = Bytes(4096 * 2);

TEST(Experts, ContiguousPlacementAndItsLoads) {
  const ExpertPlacement p = ContiguousPlacement(8, 4);
  EXPECT_EQ(p.rank_experts, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  const ExpertLoad l = LoadOf(p, Skewed(), kAssignment);
  EXPECT_EQ(l.loads, (std::vector<int64_t>{110, 20, 55, 15}));
  EXPECT_EQ(l.max_load, 110);
  EXPECT_DOUBLE_EQ(l.mean_load, 50);
  EXPECT_DOUBLE_EQ(l.imbalance, 2.2);
  // Every assignment starts on a random rank; 3 of 4 leave it: 200 × 3/4 × 8192 B.
  EXPECT_EQ(l.dispatch_bytes, Bytes(1'228'800));
  EXPECT_EQ(l.combine_bytes, l.dispatch_bytes);
}

TEST(Experts, BalancedPlacementIsGreedyLongestFirst) {
  const ExpertPlacement p = BalancedPlacement(Skewed().totals, 4, 0);
  EXPECT_EQ(p.rank_experts, (std::vector<std::vector<int64_t>>{{0, 6}, {4, 5}, {1, 3}, {2, 7}}));
  const ExpertLoad l = LoadOf(p, Skewed(), kAssignment);
  EXPECT_EQ(l.loads, (std::vector<int64_t>{105, 55, 20, 20}));
  EXPECT_EQ(l.max_load, 105);  // the hot expert alone bounds it without replicas
}

TEST(Experts, RedundantCopiesOfHotExpertsSplitTheirLoad) {
  const ExpertPlacement p = BalancedPlacement(Skewed().totals, 4, 4);
  EXPECT_EQ(p.slots_per_rank, 3);
  EXPECT_EQ(p.expert_ranks[0], (std::vector<int64_t>{0, 1, 2, 3}));  // e0: 4 copies of 25
  EXPECT_EQ(p.expert_ranks[4], (std::vector<int64_t>{0, 1}));        // e4: 2 copies of 25
  const ExpertLoad l = LoadOf(p, Skewed(), kAssignment);
  EXPECT_EQ(l.loads, (std::vector<int64_t>{55, 55, 45, 45}));
  EXPECT_EQ(l.max_load, 55);
  // A copy on the token's own rank needs no dispatch: (0×100 + 2×50 + 3×50) / 4 × 8192 B.
  EXPECT_EQ(l.dispatch_bytes, Bytes(512'000));
}

TEST(Experts, DispatchBytesArePerRoutedAssignment) {
  // The same tokens routed to twice as many experts (top-2 instead of top-1) double the
  // assignments, and the bytes with them.
  Expected<ExpertCounts> top1 = ParseExpertCounts("6,2,4,4");
  Expected<ExpertCounts> top2 = ParseExpertCounts("12,4,8,8");
  const ExpertPlacement p = ContiguousPlacement(4, 2);
  EXPECT_EQ(LoadOf(p, *top2, kAssignment).dispatch_bytes.count(),
            2 * LoadOf(p, *top1, kAssignment).dispatch_bytes.count());
  EXPECT_EQ(LoadOf(p, *top1, kAssignment).dispatch_bytes, Bytes(16 / 2 * 8192));
}

TEST(Experts, PerStepCountsGiveTheMeanBusiestRank) {
  Expected<ExpertCounts> c = ParseExpertCountsCsv("# step counts\n4,0,0,0\n0,0,0,4\n", "counts.csv");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->step_count, 2);
  EXPECT_EQ(c->totals, (std::vector<int64_t>{4, 0, 0, 4}));
  const ExpertLoad l = LoadOf(ContiguousPlacement(4, 2), *c, kAssignment);
  EXPECT_EQ(l.loads, (std::vector<int64_t>{4, 4}));  // balanced in total...
  EXPECT_DOUBLE_EQ(l.mean_step_max_load, 4);         // ...but each step one rank does all
  EXPECT_EQ(ParseExpertCountsCsv("1,2\n3\n", "c.csv").status().message(),
            "c.csv:2:1: step 2: expected 2 counts (one per expert, as in the first step), got 1\n"
            "    2 | 3\n"
            "      | ^\n");
  EXPECT_EQ(ParseExpertCountsCsv("1,x\n", "c.csv").status().message(),
            "c.csv:1:3: step 1 count 2: expected a non-negative integer, got 'x'\n"
            "    1 | 1,x\n"
            "      |   ^\n");
  EXPECT_EQ(ParseExpertCounts("3,-1").status().message(), "count 2: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ParseExpertCounts("1099511627776,1").status().message(),
            "the counts sum to more than 1099511627776 routed assignments");
}

TEST(Experts, ShapesThatCannotBePlacedAreErrors) {
  EXPECT_EQ(ValidateExpertShape(8, 3, 0).message(),
            "--ranks: 3 ranks do not divide the 8 experts (each rank holds the same number of experts)");
  EXPECT_EQ(ValidateExpertShape(8, 4, 2).message(),
            "--redundant-experts: 2 redundant copies do not spread evenly over 4 ranks (use a multiple of 4)");
  EXPECT_EQ(ValidateExpertShape(8, 2, 12).message(),
            "--redundant-experts: expected between 0 and 8 (one copy of an expert per rank at most), got 12");
  EXPECT_TRUE(ValidateExpertShape(8, 4, 4).ok());
}

TEST(Experts, AnUpdateIsWorthItWhenTheSavingRepaysTheCopyWithinTheHorizon) {
  const ExpertCounts counts = Skewed();
  const ExpertPlacement from = ContiguousPlacement(8, 4);
  const ExpertPlacement to = BalancedPlacement(counts.totals, 4, 0);
  ExpertCostInputs costs;
  costs.expert_bytes = Bytes(1'000'000);
  costs.assignment_time = Us(1);
  costs.copy_link.bandwidth = 1e9;  // 1 GB/s, no latency
  const UpdatePrice price =
      PriceUpdate(from, to, LoadOf(from, counts, kAssignment), LoadOf(to, counts, kAssignment), costs);
  EXPECT_EQ(price.copies_loaded, 6);
  EXPECT_EQ(price.copy_bytes, Bytes(6'000'000));
  EXPECT_EQ(price.copy_time, Ms(2));       // the busiest rank loads 2 experts
  EXPECT_EQ(price.saved_per_step, Us(5));  // max load 110 -> 105
  EXPECT_EQ(price.break_even_steps, 400);
  EXPECT_TRUE(price.worth);  // within the default 1000 steps
  costs.horizon_steps = 399;
  EXPECT_FALSE(PriceUpdate(from, to, LoadOf(from, counts, kAssignment), LoadOf(to, counts, kAssignment), costs).worth);
  // Nothing saved: never worth it.
  const UpdatePrice same =
      PriceUpdate(from, from, LoadOf(from, counts, kAssignment), LoadOf(from, counts, kAssignment), costs);
  EXPECT_FALSE(same.break_even_steps.has_value());
  EXPECT_FALSE(same.worth);
}

TEST(Experts, CostsOfARealModel) {
  const ModelSpec m = *Catalog::Builtin().Model("mixtral-8x7b");
  const GpuSpec g = *Catalog::Builtin().Gpu("h100-sxm-80g");
  const LinkSpec l = *Catalog::Builtin().Link("nvlink4");
  const ExpertCostInputs c = ExpertCostsOf(m, g, DType::kBf16, l, 0.8);
  // 3 × 4096 × 14336 params × 2 B.
  EXPECT_EQ(c.expert_bytes, Bytes(3LL * 4096 * 14336 * 2));
  // 2 × 176,160,768 FLOPs / (989.5 TFLOP/s × 0.8) = 445.1 ns.
  EXPECT_EQ(c.assignment_time, Ns(445));
}

TEST(ExpertMapRegistry, NewBatchesSwitchOnlyAfterEveryRankAcknowledges) {
  ExpertMapRegistry reg(ContiguousPlacement(4, 2));
  const ExpertMapRegistry::Batch old_batch = reg.BeginBatch();
  EXPECT_EQ(old_batch.generation, 1);
  Expected<int64_t> g = reg.Propose(BalancedPlacement({9, 1, 1, 1}, 2, 0));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, 2);
  EXPECT_EQ(reg.pending(), 2);
  EXPECT_EQ(reg.Propose(ContiguousPlacement(4, 2)).status().message(),
            "generation 2 is still waiting for 2 rank(s); propose after it is active");
  ASSERT_TRUE(reg.Acknowledge(1, 2).ok());
  EXPECT_EQ(reg.Waiting(), (std::vector<int64_t>{0}));
  // One rank has not loaded it: a new batch still runs under generation 1.
  const ExpertMapRegistry::Batch mid = reg.BeginBatch();
  EXPECT_EQ(mid.generation, 1);
  EXPECT_EQ(reg.Acknowledge(0, 3).message(), "generation 3 is not pending");
  EXPECT_EQ(reg.Acknowledge(5, 2).message(), "rank 5 is not in the group of 2");
  ASSERT_TRUE(reg.Acknowledge(0, 2).ok());
  EXPECT_EQ(reg.active(), 2);
  EXPECT_FALSE(reg.pending().has_value());
  const ExpertMapRegistry::Batch fresh = reg.BeginBatch();
  EXPECT_EQ(fresh.generation, 2);
  // Old batches finish under the old map, which is kept until the last of them ends.
  EXPECT_EQ(reg.Retained(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(reg.Map(old_batch.generation).rank_experts, ContiguousPlacement(4, 2).rank_experts);
  reg.EndBatch(old_batch);
  EXPECT_EQ(reg.Retained(), (std::vector<int64_t>{1, 2}));
  reg.EndBatch(mid);
  EXPECT_EQ(reg.Retained(), (std::vector<int64_t>{2}));
  reg.EndBatch(fresh);
  EXPECT_EQ(reg.Retained(), (std::vector<int64_t>{2}));
}

TEST(ExpertsReport, TotalsFormWithoutAModel) {
  ExpertsRequest r;
  r.counts = Skewed();
  r.ranks = 4;
  r.bytes_per_assignment = kAssignment;
  Expected<ExpertsResult> res = AnalyzeExperts(r);
  ASSERT_TRUE(res.ok()) << res.status().message();
  const Json j = ExpertsReportJson(*res);
  EXPECT_EQ(j["contiguous"]["loads"], Json({110, 20, 55, 15}));
  EXPECT_EQ(j["contiguous"]["max_load"], 110);
  EXPECT_EQ(j["balanced"]["max_load"], 105);
  EXPECT_EQ(j["balanced"]["placement"], Json({{0, 6}, {4, 5}, {1, 3}, {2, 7}}));
  EXPECT_EQ(j["dispatch_bytes"]["contiguous"], 1'228'800);
  EXPECT_EQ(j["update"]["generation"], 2);
  EXPECT_EQ(j["update"]["worth"], nullptr);
  r.ranks = 3;
  EXPECT_EQ(AnalyzeExperts(r).status().message(),
            "--ranks: 3 ranks do not divide the 8 experts (each rank holds the same number of experts)");
}

// One expert on one rank reads as English, and a count beyond 64 bits names that rule.
TEST(ExpertsReport, OneOfEachIsSingularAndAnOversizedCountSaysSo) {
  ExpertsRequest r;
  r.counts = *ParseExpertCounts("5");
  r.ranks = 1;
  r.bytes_per_assignment = kAssignment;
  Expected<ExpertsResult> res = AnalyzeExperts(r);
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_EQ(ExpertsReportText(*res).substr(0, 69), "fleetplan experts: 1 expert over 1 rank, 5 assignments in 1 step\nload");
  Expected<ExpertCounts> big = ParseExpertCounts("18446744073709551615,1,1,1");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("'18446744073709551615' is beyond the largest count this reads, "
                                        "9223372036854775807"),
            std::string::npos)
      << big.status().message();
}

}  // namespace
}  // namespace fleetplan
