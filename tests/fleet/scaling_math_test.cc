// The autoscaler's recommendation math as pure values (scaling_math.h): HPA's replica
// calculation (tolerance, not-ready replicas), its behaviour (stabilization windows,
// scaling policies, bounds) and KPA's panic mode, tick by tick with exact counts.
#include "fleetplan/fleet/scaling_math.h"

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

SimTime At(int64_t seconds) { return SimTime() + Sec(seconds); }

TEST(HpaDesired, NoChangeWithinTheTolerance) {
  // 4 ready replicas at 1.09x, 1.05x and 0.91x of the target: inside ±10%, no change.
  for (double ratio : {1.09, 1.05, 0.91}) {
    const HpaRecommendation r = HpaDesired({ratio, 4, 0, 0.1});
    EXPECT_TRUE(r.held) << ratio;
    EXPECT_EQ(r.desired, 4) << ratio;
  }
  // Just outside: 1.11 x 4 = 4.44 -> 5; 0.7 x 4 = 2.8 -> 3.
  EXPECT_EQ(HpaDesired({1.11, 4, 0, 0.1}).desired, 5);
  EXPECT_FALSE(HpaDesired({1.11, 4, 0, 0.1}).held);
  EXPECT_EQ(HpaDesired({0.7, 4, 0, 0.1}).desired, 3);  // ceil(2.8)
  EXPECT_EQ(HpaDesired({3.0, 2, 0, 0.1}).desired, 6);
  // A tolerance of 0.5 holds 1.4x.
  EXPECT_TRUE(HpaDesired({1.4, 4, 0, 0.5}).held);
}

TEST(HpaDesired, NotReadyReplicasCountAsZeroOnAScaleUp) {
  // 2 ready at 3x the target, 2 loading: the demand is 6 replicas' worth, so 6, not
  // ceil(4 x 3) = 12 as if the loading ones were as busy as the ready ones.
  const HpaRecommendation r = HpaDesired({3.0, 2, 2, 0.1});
  EXPECT_EQ(r.desired, 6);
  EXPECT_DOUBLE_EQ(r.ratio, 1.5);
  // 2 ready at 1.5x with 1 loading: diluted to exactly 1.0 -> within tolerance, hold 3.
  const HpaRecommendation held = HpaDesired({1.5, 2, 1, 0.1});
  EXPECT_TRUE(held.held);
  EXPECT_EQ(held.desired, 3);
  // 2 ready at 1.2x with 2 loading: the dilution (0.6) would scale down: hold 4.
  const HpaRecommendation flipped = HpaDesired({1.2, 2, 2, 0.1});
  EXPECT_TRUE(flipped.held);
  EXPECT_EQ(flipped.desired, 4);
  // A scale-down ignores the not-ready ones: 4 ready at 0.5x, 2 loading -> ceil(2) = 2.
  EXPECT_EQ(HpaDesired({0.5, 4, 2, 0.1}).desired, 2);
  // No ready replica: no metric, hold.
  EXPECT_EQ(HpaDesired({0.0, 0, 3, 0.1}).desired, 3);
}

ScalingRules Rules(Duration stabilization, std::vector<ScalingPolicy> policies = {}) {
  return ScalingRules{stabilization, std::move(policies)};
}

TEST(HpaBehavior, ScaleDownUsesTheHighestRecommendationOfTheWindow) {
  HpaBehavior b(Rules(Duration()), Rules(Sec(300)), 1, 100);
  // A burst recommends 8 at t = 0; then the dip recommends 2 every 15 s.
  HpaBehavior::Decision d = b.Next(At(0), 8, 2);
  EXPECT_EQ(d.replicas, 8);
  int64_t current = d.replicas;
  for (int64_t t = 15; t < 300; t += 15) {
    d = b.Next(At(t), 2, current);
    EXPECT_EQ(d.replicas, 8) << "t = " << t;  // the 8 is still inside (t - 300, t]
    EXPECT_EQ(d.limited_by, "scale-down stabilization") << t;
  }
  d = b.Next(At(300), 2, current);  // the window is (0, 300]: the 8 of t = 0 has left it
  EXPECT_EQ(d.replicas, 2);
  // A recommendation in between bounds it: 5 at 330, then 1 until 630.
  current = d.replicas;
  d = b.Next(At(330), 5, current);
  EXPECT_EQ(d.replicas, 5);
  current = 5;
  d = b.Next(At(345), 1, current);
  EXPECT_EQ(d.replicas, 5);
  d = b.Next(At(645), 1, current);
  EXPECT_EQ(d.replicas, 1);
}

TEST(HpaBehavior, ScaleUpStabilizationUsesTheLowest) {
  HpaBehavior b(Rules(Sec(60)), Rules(Duration()), 1, 100);
  EXPECT_EQ(b.Next(At(0), 2, 2).replicas, 2);
  EXPECT_EQ(b.Next(At(15), 9, 2).replicas, 2);  // 2 at t = 0 is the lowest of the window
  EXPECT_EQ(b.Next(At(30), 9, 2).replicas, 2);
  EXPECT_EQ(b.Next(At(61), 9, 2).replicas, 9);  // the window (1, 61] holds 9s only
}

TEST(HpaBehavior, PoliciesTakeTheMostPermissiveAndCountThePeriodsChanges) {
  // Kubernetes' scale-up defaults: 4 pods or 100% per 15 s, whichever allows more.
  HpaBehavior b(Rules(Duration(), {{ScalingPolicyKind::kPods, 4, Sec(15)}, {ScalingPolicyKind::kPercent, 100, Sec(15)}}),
                Rules(Duration()), 1, 20);
  // 2 -> 30: at most max(2 + 4, 2 x 2) = 6.
  HpaBehavior::Decision d = b.Next(At(0), 30, 2);
  EXPECT_EQ(d.replicas, 6);
  EXPECT_EQ(d.limited_by, "scale-up policy");
  // 5 s later the period started at 2: still at most 6.
  d = b.Next(At(5), 30, 6);
  EXPECT_EQ(d.replicas, 6);
  // 15 s after the first change it left the period: from 6, max(10, 12) = 12.
  d = b.Next(At(15), 30, 6);
  EXPECT_EQ(d.replicas, 12);
  d = b.Next(At(30), 30, 12);
  EXPECT_EQ(d.replicas, 20);  // max(16, 24), then max_replicas
  EXPECT_EQ(d.limited_by, "max_replicas");
  // Down: one replica per minute; the period starts at the count a minute ago.
  HpaBehavior down(Rules(Duration()), Rules(Duration(), {{ScalingPolicyKind::kPods, 1, Sec(60)}}), 1, 20);
  d = down.Next(At(0), 3, 20);
  EXPECT_EQ(d.replicas, 19);
  EXPECT_EQ(d.limited_by, "scale-down policy");
  d = down.Next(At(15), 3, 19);
  EXPECT_EQ(d.replicas, 19);
  d = down.Next(At(61), 3, 19);
  EXPECT_EQ(d.replicas, 18);
  // min_replicas bounds a scale-down.
  HpaBehavior floor(Rules(Duration()), Rules(Duration()), 3, 10);
  d = floor.Next(At(0), 1, 5);
  EXPECT_EQ(d.replicas, 3);
  EXPECT_EQ(d.limited_by, "min_replicas");
}

TEST(KpaPanic, PanicsOnTheShortWindowAndNeverScalesDownWhilePanicking) {
  KpaPanic p(KpaConfig{});
  // 2 ready at 1.5x: below the 200% threshold, no panic.
  KpaPanic::Decision d = p.Next(At(0), 1.5, 2, 2);
  EXPECT_FALSE(d.panicking);
  // The panic window sees 3x: 6 replicas' worth on 2 ready -> panic, desired 6.
  d = p.Next(At(2), 3.0, 2, 2);
  EXPECT_TRUE(d.panicking);
  EXPECT_TRUE(d.started);
  EXPECT_EQ(d.desired, 6);
  // The short window dips (the new replicas are loading): still panicking, and the
  // decision keeps the highest panic desired: no scale-down.
  d = p.Next(At(4), 1.0, 2, 6);
  EXPECT_TRUE(d.panicking);
  EXPECT_EQ(d.desired, 6);
  // Over the threshold again with more: 2 ready at 5x -> 10.
  d = p.Next(At(10), 5.0, 2, 6);
  EXPECT_EQ(d.desired, 10);
  EXPECT_FALSE(d.started);
  // Not over it for a whole stable window (60 s after t = 10): the panic ends at the
  // first tick after t = 70.
  d = p.Next(At(70), 0.5, 10, 10);
  EXPECT_TRUE(d.panicking);
  EXPECT_EQ(d.desired, 10);
  d = p.Next(At(72), 0.5, 10, 10);
  EXPECT_FALSE(d.panicking);
  EXPECT_TRUE(d.ended);
}

}  // namespace
}  // namespace fleetplan
