// Alpha-beta collectives: hand-computed values for every operation, and the ring
// all-reduce against measured NCCL times on H100 (the figures docs/step-models.md quotes).
#include "fleetplan/perf/collectives.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/catalog/catalog.h"
#include "perf/perf_test_util.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using perf_test::Show;

// 100 GB/s, 1 us per hop; an 8 MB message moves in 80 us over one link.
constexpr LinkCost kLink{100e9, Us(1)};
constexpr Bytes kEightMb{8'000'000};

TEST(Collectives, RingAllReduceByHand) {
  // n = 4: 2·3·1 us + 2·(3/4)·80 us = 6 + 120 = 126 us.
  EXPECT_EQ(AllReduceRingTime(4, kEightMb, kLink), Us(126));
  // n = 8: 14 us + 2·(7/8)·80 us = 14 + 140 = 154 us.
  EXPECT_EQ(AllReduceRingTime(8, kEightMb, kLink), Us(154));
  EXPECT_EQ(AllReduceTime(AllReduceAlgorithm::kRing, 8, kEightMb, kLink), Us(154));
}

TEST(Collectives, TreeAllReduceByHand) {
  // n = 4: 2·⌈log2 4⌉·1 us + 2·80 us = 4 + 160 = 164 us; n = 5: depth 3 -> 6 + 160.
  EXPECT_EQ(AllReduceTreeTime(4, kEightMb, kLink), Us(164));
  EXPECT_EQ(AllReduceTreeTime(5, kEightMb, kLink), Us(166));
  EXPECT_EQ(AllReduceTime(AllReduceAlgorithm::kTree, 4, kEightMb, kLink), Us(164));
  // Small messages favour the tree (latency log n), large ones the ring (bandwidth).
  const Bytes small{1024};
  EXPECT_LT(AllReduceTreeTime(64, small, kLink), AllReduceRingTime(64, small, kLink));
  EXPECT_GT(AllReduceTreeTime(8, kEightMb, kLink), AllReduceRingTime(8, kEightMb, kLink));
}

TEST(Collectives, GatherScatterAllToAllSendRecvByHand) {
  // n = 8: 7 us + (7/8)·80 us = 77 us each.
  EXPECT_EQ(AllGatherTime(8, kEightMb, kLink), Us(77));
  EXPECT_EQ(ReduceScatterTime(8, kEightMb, kLink), Us(77));
  EXPECT_EQ(AllToAllTime(8, kEightMb, kLink), Us(77));
  // One hop: 1 + 80 us.
  EXPECT_EQ(SendRecvTime(kEightMb, kLink), Us(81));
  // Reduce-scatter then all-gather is the ring all-reduce.
  EXPECT_EQ(ReduceScatterTime(8, kEightMb, kLink) + AllGatherTime(8, kEightMb, kLink),
            AllReduceRingTime(8, kEightMb, kLink));
}

TEST(Collectives, OneRankCostsNothingAndRoundingIsToTheNanosecond) {
  EXPECT_EQ(AllReduceRingTime(1, kEightMb, kLink), Duration());
  EXPECT_EQ(AllReduceTreeTime(1, kEightMb, kLink), Duration());
  EXPECT_EQ(AllGatherTime(1, kEightMb, kLink), Duration());
  EXPECT_EQ(AllToAllTime(1, kEightMb, kLink), Duration());
  // 3 bytes at 2 GB/s = 1.5 ns -> 2 ns, plus 0 latency.
  EXPECT_EQ(SendRecvTime(Bytes(3), LinkCost{2e9, Duration()}), Ns(2));
  EXPECT_EQ(AllReduceAlgorithmName(AllReduceAlgorithm::kRing), "ring");
  EXPECT_EQ(AllReduceAlgorithmName(AllReduceAlgorithm::kTree), "tree");
}

// ---- Against measured NCCL all-reduce times (APEX+ profile, H100 SXM, 1 node) ---------

struct Measured {
  int64_t ranks;
  Bytes bytes;
  double us;
};

// profiles/apex-plus/comm/H100-SXM-80GB/all_reduce.csv: gpu, num_nodes, num_gpus_per_node,
// dtype, size(kb), time(us). Sizes are powers of two: read as KiB.
std::vector<Measured> LoadApexAllReduce() {
  std::ifstream in(::fleetplan::testing::SharedDataRoot() +
                   "/profiles/apex-plus/comm/H100-SXM-80GB/all_reduce.csv");
  EXPECT_TRUE(in.good());
  std::vector<Measured> rows;
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "gpu,num_nodes,num_gpus_per_node,dtype,size(kb),time(us)");
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string gpu, nodes, per_node, dtype, kb, us;
    std::getline(ss, gpu, ',');
    std::getline(ss, nodes, ',');
    std::getline(ss, per_node, ',');
    std::getline(ss, dtype, ',');
    std::getline(ss, kb, ',');
    std::getline(ss, us, ',');
    rows.push_back({std::stoll(nodes) * std::stoll(per_node), KiB(std::stoll(kb)), std::stod(us)});
  }
  return rows;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct ErrorSummary {
  double median_abs = 0;  // median |model - measured| / measured
  double max_abs = 0;
  double median_signed = 0;
};

ErrorSummary Errors(const std::vector<Measured>& rows, LinkCost link, int64_t min_bytes,
                    int64_t max_bytes) {
  std::vector<double> abs_err, signed_err;
  for (const Measured& m : rows) {
    if (m.bytes.count() < min_bytes || m.bytes.count() >= max_bytes) continue;
    const double model_us = AllReduceRingTime(m.ranks, m.bytes, link).micros();
    signed_err.push_back((model_us - m.us) / m.us);
    abs_err.push_back(std::abs(signed_err.back()));
  }
  return {Median(abs_err), *std::max_element(abs_err.begin(), abs_err.end()), Median(signed_err)};
}

// One (α, 1/B) pair for all rows, least squares on relative error: minimise
// Σ ((2(n-1)·α + 2(n-1)/n·M·β) / t - 1)², linear in (α, β), solved in closed form.
LinkCost FitRing(const std::vector<Measured>& rows) {
  double s11 = 0, s12 = 0, s22 = 0, s1 = 0, s2 = 0;
  for (const Measured& m : rows) {
    const double n = static_cast<double>(m.ranks);
    const double t = m.us * 1e-6;
    const double x1 = 2 * (n - 1) / t;
    const double x2 = 2 * (n - 1) / n * static_cast<double>(m.bytes.count()) / t;
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    s1 += x1;
    s2 += x2;
  }
  const double det = s11 * s22 - s12 * s12;
  const double alpha = (s1 * s22 - s2 * s12) / det;
  const double beta = (s11 * s2 - s12 * s1) / det;
  return LinkCost{1 / beta, Duration::FromSecondsRounded(alpha)};
}

void ShowRanges(const std::vector<Measured>& rows, LinkCost link, const char* label) {
  struct Range {
    const char* name;
    int64_t lo, hi;
  };
  const Range ranges[] = {{"< 64 KiB", 0, KiB(64).count()},
                          {"64 KiB - 1 MiB", KiB(64).count(), MiB(1).count()},
                          {"1 - 16 MiB", MiB(1).count(), MiB(16).count()},
                          {">= 16 MiB", MiB(16).count(), GiB(1024).count()}};
  Show("{}: bandwidth {:.1f} GB/s, latency {} ns", label, link.bandwidth / 1e9, link.latency.ns());
  for (const Range& r : ranges) {
    const ErrorSummary e = Errors(rows, link, r.lo, r.hi);
    Show("  {:>15}: median |err| {:5.1f}%  max |err| {:5.1f}%  median signed {:+6.1f}%", r.name,
         100 * e.median_abs, 100 * e.max_abs, 100 * e.median_signed);
  }
  const ErrorSummary all = Errors(rows, link, 0, GiB(1024).count());
  Show("  {:>15}: median |err| {:5.1f}%  max |err| {:5.1f}%  median signed {:+6.1f}%", "all",
       100 * all.median_abs, 100 * all.max_abs, 100 * all.median_signed);
}

TEST(CollectivesVsNccl, RingAllReduceAgainstMeasuredH100) {
  FP_REQUIRE_SHARED_DATA();
  const std::vector<Measured> rows = LoadApexAllReduce();
  ASSERT_EQ(rows.size(), 114u);

  // The catalog's nvlink4 (450 GB/s per direction, 0.6 us per hop) predicts lower times
  // than NCCL measures at every size: NCCL's per-call latency (8-14 us at 0 bytes) and its
  // achieved bus bandwidth (~390 GB/s at 128 MiB on 8 GPUs) are both worse than nominal.
  const auto nvlink4 = Catalog::Builtin().Link("nvlink4");
  ASSERT_TRUE(nvlink4.ok());
  const LinkCost nominal = LinkCost::Of(*nvlink4);
  ShowRanges(rows, nominal, "catalog nvlink4");
  const ErrorSummary nominal_all = Errors(rows, nominal, 0, GiB(1024).count());
  EXPECT_NEAR(nominal_all.median_abs, 0.630, 0.005);
  EXPECT_NEAR(nominal_all.median_signed, -0.630, 0.005);  // model below measurement
  EXPECT_LT(Errors(rows, nominal, MiB(16).count(), GiB(1024).count()).median_abs, 0.35);

  // One pair fitted to all 114 rows (not per row): α ≈ 1.69 us, B ≈ 291 GB/s.
  const LinkCost fitted = FitRing(rows);
  ShowRanges(rows, fitted, "fitted pair");
  EXPECT_NEAR(fitted.latency.micros(), 1.69, 0.01);
  EXPECT_NEAR(fitted.bandwidth / 1e9, 290.7, 0.5);
  const ErrorSummary fitted_all = Errors(rows, fitted, 0, GiB(1024).count());
  EXPECT_NEAR(fitted_all.median_abs, 0.204, 0.005);
  EXPECT_LT(Errors(rows, fitted, MiB(16).count(), GiB(1024).count()).median_abs, 0.14);
}

}  // namespace
}  // namespace fleetplan
