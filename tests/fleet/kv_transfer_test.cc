// KvTransferLink: setup latency, then processor sharing of the bandwidth, exact to the
// nanosecond. Bandwidth 10 GB/s throughout: 1 GB takes 100 ms alone.
#include "fleetplan/fleet/kv_transfer.h"

#include <gtest/gtest.h>

#include <vector>

namespace fleetplan {
namespace {

constexpr int64_t kTenGBps = 10'000'000'000;
constexpr Bytes kGB = Bytes(1'000'000'000);

SimTime At(Duration d) { return SimTime() + d; }

TEST(KvTransferLink, OneTransferPaysSetupThenBytesOverBandwidth) {
  KvTransferLink link(Ms(1), kTenGBps);
  EXPECT_EQ(link.Start(SimTime(), kGB), 0);
  EXPECT_EQ(link.NextChange(), At(Ms(1)));  // setup ends
  EXPECT_TRUE(link.AdvanceTo(At(Ms(1))).empty());
  EXPECT_EQ(link.NextChange(), At(Ms(101)));  // 1 GB / 10 GB/s = 100 ms
  EXPECT_TRUE(link.AdvanceTo(At(Ms(101)) - Duration::Nanos(1)).empty());
  EXPECT_EQ(link.AdvanceTo(At(Ms(101))), std::vector<int64_t>{0});
  EXPECT_EQ(link.NextChange(), std::nullopt);
  EXPECT_EQ(link.completed(), 1);
  EXPECT_EQ(link.bytes_completed(), kGB);
  EXPECT_EQ(link.busy(), Ms(100));
}

TEST(KvTransferLink, ConcurrentTransfersShareTheBandwidth) {
  // Two 1 GB transfers together: each at 5 GB/s, both done at 200 ms.
  KvTransferLink link(Duration(), kTenGBps);
  link.Start(SimTime(), kGB);
  link.Start(SimTime(), kGB);
  EXPECT_EQ(link.AdvanceTo(At(Ms(200))), (std::vector<int64_t>{0, 1}));
}

TEST(KvTransferLink, StaggeredStartsAreWorkConserving) {
  // A alone for 50 ms moves 0.5 GB; then A and B share: A's last 0.5 GB at 5 GB/s ends at
  // 150 ms, when B has moved 0.5 GB; B's last 0.5 GB alone ends at 200 ms = 2 GB / 10 GB/s.
  KvTransferLink link(Duration(), kTenGBps);
  link.Start(SimTime(), kGB);
  EXPECT_TRUE(link.AdvanceTo(At(Ms(50))).empty());
  link.Start(At(Ms(50)), kGB);
  EXPECT_EQ(link.NextChange(), At(Ms(50)));  // its (empty) setup ends at once
  EXPECT_TRUE(link.AdvanceTo(At(Ms(50))).empty());
  EXPECT_EQ(link.NextChange(), At(Ms(150)));
  EXPECT_EQ(link.AdvanceTo(At(Ms(150))), std::vector<int64_t>{0});
  EXPECT_EQ(link.NextChange(), At(Ms(200)));
  EXPECT_EQ(link.AdvanceTo(At(Ms(300))), std::vector<int64_t>{1});
  EXPECT_EQ(link.busy(), Ms(200));
}

TEST(KvTransferLink, AbortFreesTheShareAndNeverCompletes) {
  KvTransferLink link(Duration(), kTenGBps);
  link.Start(SimTime(), kGB);
  link.Start(SimTime(), kGB);
  link.AdvanceTo(At(Ms(100)));  // each has moved 0.5 GB
  EXPECT_TRUE(link.Abort(1, At(Ms(100))));
  EXPECT_FALSE(link.Abort(1, At(Ms(100))));
  EXPECT_EQ(link.NextChange(), At(Ms(150)));  // A's last 0.5 GB alone
  EXPECT_EQ(link.AdvanceTo(At(Ms(500))), std::vector<int64_t>{0});
  EXPECT_EQ(link.completed(), 1);
}

TEST(KvTransferLink, AbortDuringSetup) {
  KvTransferLink link(Ms(5), kTenGBps);
  link.Start(SimTime(), kGB);
  EXPECT_TRUE(link.Abort(0, At(Ms(2))));
  EXPECT_EQ(link.NextChange(), std::nullopt);
  EXPECT_EQ(link.active(), 0);
}

TEST(KvTransferLink, UnevenSharesRoundUpToTheNextNanosecond) {
  // Completion times are ceilings of the exact share, never early.
  KvTransferLink link(Duration(), 2'000'000'000);  // 2 bytes per ns
  link.Start(SimTime(), Bytes(3));
  link.Start(SimTime(), Bytes(1));
  // Each moves 1 byte per ns: the 1-byte transfer ends at 1 ns; the other then has 2 bytes
  // left alone at 2 per ns: 1 ns more.
  EXPECT_EQ(link.AdvanceTo(At(Duration::Nanos(1))), std::vector<int64_t>{1});
  EXPECT_EQ(link.AdvanceTo(At(Duration::Nanos(2))), std::vector<int64_t>{0});
}

TEST(KvTransferLink, ZeroBytesCompleteWhenSetupEnds) {
  KvTransferLink link(Ms(3), kTenGBps);
  link.Start(SimTime(), Bytes(0));
  EXPECT_EQ(link.AdvanceTo(At(Ms(3))), std::vector<int64_t>{0});
}

}  // namespace
}  // namespace fleetplan
