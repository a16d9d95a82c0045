// core/units.h: exact integer arithmetic on the strong unit types, and the double edge.
#include "fleetplan/core/units.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(DurationTest, FactoriesAreExactNanoseconds) {
  EXPECT_EQ(Ns(7).ns(), 7);
  EXPECT_EQ(Us(3).ns(), 3'000);
  EXPECT_EQ(Ms(600).ns(), 600'000'000);
  EXPECT_EQ(Sec(2).ns(), 2'000'000'000);
  EXPECT_EQ(Minutes(5).ns(), 300'000'000'000);
  EXPECT_EQ(Duration().ns(), 0);
  EXPECT_EQ(Duration::Max().ns(), std::numeric_limits<int64_t>::max());
}

TEST(DurationTest, ArithmeticAndOrder) {
  Duration d = Ms(10);
  d += Ms(5);
  EXPECT_EQ(d, Ms(15));
  d -= Us(500);
  EXPECT_EQ(d.ns(), 14'500'000);
  EXPECT_EQ((Ms(10) - Ms(15)).ns(), -5'000'000);  // negative spans are legal
  EXPECT_EQ(-Ms(3), Ms(0) - Ms(3));
  EXPECT_EQ(Ms(3) * 4, Ms(12));
  EXPECT_EQ(Ms(10) / 4, Us(2'500));
  EXPECT_EQ(Ns(7) / 2, Ns(3));  // integer division truncates
  EXPECT_LT(Us(999), Ms(1));
  EXPECT_GT(Sec(1), Ms(999));
}

TEST(DurationTest, DoubleViewsAndRoundedFactories) {
  EXPECT_DOUBLE_EQ(Ms(1500).seconds(), 1.5);
  EXPECT_DOUBLE_EQ(Us(2500).millis(), 2.5);
  EXPECT_DOUBLE_EQ(Ns(1500).micros(), 1.5);
  EXPECT_EQ(Duration::FromSecondsRounded(1.5).ns(), 1'500'000'000);
  EXPECT_EQ(Duration::FromSecondsRounded(1.4e-9).ns(), 1);
  EXPECT_EQ(Duration::FromSecondsRounded(1.6e-9).ns(), 2);
  EXPECT_EQ(Duration::FromMillisRounded(0.25).ns(), 250'000);
  EXPECT_EQ(Duration::FromMillisRounded(-2.0).ns(), -2'000'000);
}

TEST(SimTimeTest, PointsAndSpans) {
  const SimTime t0 = SimTime::Zero();
  const SimTime t1 = t0 + Ms(5);
  EXPECT_EQ(t1.ns(), 5'000'000);
  EXPECT_EQ(t1 - t0, Ms(5));
  EXPECT_EQ(t1 - Ms(2), SimTime::FromNanos(3'000'000));
  SimTime t = t1;
  t += Sec(1);
  EXPECT_EQ(t.since_start(), Ms(1'005));
  EXPECT_DOUBLE_EQ(t.seconds(), 1.005);
  EXPECT_DOUBLE_EQ(t.millis(), 1005.0);
  EXPECT_LT(t1, t);
  EXPECT_EQ(SimTime::Max().ns(), std::numeric_limits<int64_t>::max());
}

TEST(BytesTest, BinaryFactoriesAndViews) {
  EXPECT_EQ(KiB(16).count(), 16 * 1024);
  EXPECT_EQ(MiB(3).count(), 3 * 1024 * 1024);
  EXPECT_EQ(GiB(80).count(), int64_t{80} * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(GiB(80).gib(), 80.0);
  EXPECT_DOUBLE_EQ(MiB(3).mib(), 3.0);
  EXPECT_DOUBLE_EQ(Bytes(4'000'000'000).gb(), 4.0);
}

TEST(BytesTest, NegativeIntermediatesAreNotClamped) {
  Bytes usable = GiB(1) - GiB(2);
  EXPECT_EQ(usable.count(), -int64_t{1024} * 1024 * 1024);
  usable += GiB(3);
  EXPECT_EQ(usable, GiB(2));
  usable -= KiB(1);
  EXPECT_EQ(usable * 2, GiB(4) - KiB(2));
  EXPECT_EQ(GiB(1) / 1024, MiB(1));
}

TEST(TokensTest, CountsAreExact) {
  Tokens t(100);
  t += Tokens(28);
  EXPECT_EQ(t.count(), 128);
  t -= Tokens(64);
  EXPECT_EQ(t, Tokens(64));
  EXPECT_EQ(Tokens(3) * 5, Tokens(15));
  EXPECT_EQ((Tokens(1) - Tokens(2)).count(), -1);
  EXPECT_LT(Tokens(1), Tokens(2));
}

TEST(RateTest, ComparesByValue) {
  EXPECT_EQ(Rate{8.0}, Rate{8.0});
  EXPECT_LT(Rate{0.5}, Rate{8.0});
  EXPECT_EQ(Rate{}.per_second, 0.0);
}

}  // namespace
}  // namespace fleetplan
