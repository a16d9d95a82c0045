// The overload diagnosis: a backlog that grows through the arrivals is over capacity, a
// steady one is not; each class is judged alone; small runs are not judged.
#include "fleetplan/fleet/overload.h"

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

RequestRecord Rec(ClassId cls, double arrival_s, double finish_s) {
  RequestRecord r;
  r.class_id = cls;
  r.arrival = SimTime::FromNanos(static_cast<int64_t>(arrival_s * 1e9));
  r.first_token = r.arrival;
  r.finish = SimTime::FromNanos(static_cast<int64_t>(finish_s * 1e9));
  r.output_tokens = 1;
  return r;
}

TEST(Overload, AGrowingBacklogIsOverCapacityAndEachClassIsJudgedAlone) {
  LoadTracker t;
  // Class 0 ("fast"): 2/s, each served in 1 s. Class 1 ("slow"): 2/s arriving, served one
  // at a time every 0.8 s: 1.25/s, so its backlog grows through the whole 300 s.
  double slow_free = 0;
  for (int i = 0; i < 600; ++i) {
    const double at = i * 0.5;
    t.Add(Rec(0, at, at + 1));
    slow_free = std::max(slow_free, at) + 0.8;
    t.Add(Rec(1, at, slow_free));
  }
  const OverloadDiagnosis d = t.Diagnose(2, true, {"fast", "slow"});
  EXPECT_TRUE(d.fleet.over_capacity);
  EXPECT_FALSE(d.classes[0].second.over_capacity);
  EXPECT_TRUE(d.classes[1].second.over_capacity);
  EXPECT_NEAR(d.classes[1].second.arrival_rate, 2.0, 0.01);
  EXPECT_NEAR(d.classes[1].second.ended_rate, 1.25, 0.01);
  // In flight grows linearly: halfway about 0.75/s x 150 s, at the end about twice that.
  EXPECT_NEAR(static_cast<double>(d.classes[1].second.in_flight_at_last_arrival), 0.75 * 300, 3);
  EXPECT_NEAR(static_cast<double>(d.classes[1].second.in_flight_halfway), 0.75 * 150, 3);
  // Fleet: 4/s against 3.25/s ended -> 2 x 4 / 3.25 = 2.46 -> 3 replicas just to keep up.
  EXPECT_EQ(d.replicas_to_keep_up, 3);
  const std::string text = OverloadText(d);
  EXPECT_NE(text.find("Classes falling behind (arrivals per completion): slow 1.60x."), std::string::npos) << text;
  EXPECT_EQ(OverloadJson(d)["classes"]["fast"]["over_capacity"], false);
  // A fleet that changed size (autoscaled, or lost replicas) gets no replica count.
  const OverloadDiagnosis scaled = t.Diagnose(2, false, {"fast", "slow"});
  EXPECT_TRUE(scaled.fleet.over_capacity);
  EXPECT_EQ(scaled.replicas_to_keep_up, 0);
  EXPECT_FALSE(OverloadJson(scaled).contains("replicas_to_keep_up"));
  EXPECT_NE(OverloadText(scaled).find("The fleet changed size during the run (it started with 2 replicas)"),
            std::string::npos);
}

TEST(Overload, ASteadyFleetAndASmallRunAreNotOverCapacity) {
  LoadTracker steady;
  for (int i = 0; i < 400; ++i) steady.Add(Rec(0, i * 0.25, i * 0.25 + 2));
  const OverloadDiagnosis d = steady.Diagnose(1, true, {"c"});
  EXPECT_TRUE(d.fleet.judged);
  EXPECT_FALSE(d.fleet.over_capacity);
  EXPECT_EQ(OverloadText(d), "");
  EXPECT_FALSE(OverloadJson(d).contains("replicas_to_keep_up"));
  LoadTracker small;
  for (int i = 0; i < 50; ++i) small.Add(Rec(0, i, i * 10.0));
  EXPECT_FALSE(small.Diagnose(1, true, {"c"}).fleet.judged);
  EXPECT_FALSE(small.Diagnose(1, true, {"c"}).fleet.over_capacity);
}

}  // namespace
}  // namespace fleetplan
