// DeadlineQueue (engine/deadline_queue.h): every stay due by `now` comes out exactly once,
// nothing later does, and each entry stays in the bucket its key names.
#include "fleetplan/engine/deadline_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

SimTime At(int64_t ns) {
  return SimTime::FromNanos(ns);
}

// The positions of the stays taken by PopUpTo(now), in position order.
std::vector<int64_t> Due(DeadlineQueue& q, int64_t now) {
  std::vector<DeadlineStay> out;
  q.PopUpTo(At(now), out);
  std::vector<int64_t> pos;
  for (const DeadlineStay& s : out) pos.push_back(s.pos);
  std::sort(pos.begin(), pos.end());
  return pos;
}

TEST(DeadlineQueue, TakesExactlyTheStaysDueByNow) {
  DeadlineQueue q;
  q.Push({At(500), 1, 10});
  q.Push({At(100), 2, 11});
  q.Push({At(300), 3, 12});
  q.Push({At(300), 4, 13});
  q.Push({At(1'000'000), 5, 14});
  EXPECT_TRUE(q.CheckInvariants().ok());
  EXPECT_THAT(Due(q, 99), IsEmpty());
  EXPECT_THAT(Due(q, 100), ElementsAre(2));  // a deadline equal to now is due
  EXPECT_THAT(Due(q, 300), ElementsAre(3, 4));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.CheckInvariants().ok());
  EXPECT_THAT(Due(q, 999'999), ElementsAre(1));
  EXPECT_THAT(Due(q, 1'000'000), ElementsAre(5));
  EXPECT_TRUE(q.empty());
}

TEST(DeadlineQueue, AStayPushedAtOrBeforeTheFloorIsDueAtTheNextCallEvenAtTheSameNow) {
  DeadlineQueue q;
  EXPECT_THAT(Due(q, 1000), IsEmpty());
  q.Push({At(400), 7, 0});   // already passed
  q.Push({At(1000), 8, 1});  // exactly the floor
  q.Push({At(1001), 9, 2});
  EXPECT_TRUE(q.CheckInvariants().ok());
  EXPECT_THAT(Due(q, 1000), ElementsAre(7, 8));
  EXPECT_THAT(Due(q, 1001), ElementsAre(9));
}

TEST(DeadlineQueue, OrdersNegativeAndExtremeTimes) {
  DeadlineQueue q;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  q.Push({At(kMax), 1, 0});
  q.Push({At(-5), 2, 0});
  q.Push({At(kMin), 3, 0});
  q.Push({At(0), 4, 0});
  EXPECT_THAT(Due(q, kMin), ElementsAre(3));
  EXPECT_THAT(Due(q, -1), ElementsAre(2));
  EXPECT_THAT(Due(q, kMax - 1), ElementsAre(4));
  EXPECT_THAT(Due(q, kMax), ElementsAre(1));
  EXPECT_TRUE(q.CheckInvariants().ok());
}

TEST(DeadlineQueue, EraseIfDropsOnlyWhatThePredicateNames) {
  DeadlineQueue q;
  for (int64_t i = 0; i < 10; ++i) q.Push({At(1000 * (i + 1)), i, static_cast<int32_t>(i)});
  q.EraseIf([](const DeadlineStay& s) { return s.pos % 2 == 0; });
  EXPECT_EQ(q.size(), 5u);
  EXPECT_TRUE(q.CheckInvariants().ok());
  EXPECT_THAT(Due(q, 10'000), ElementsAre(1, 3, 5, 7, 9));
}

// Random pushes and pops against a reference multimap (deadline -> position), with the
// invariants checked after every operation; the same seed gives the same output order.
std::vector<int64_t> RandomRun(uint64_t seed) {
  RngStream rng(seed, "deadline-queue-test");
  DeadlineQueue q;
  std::multimap<int64_t, int64_t> reference;
  std::vector<int64_t> taken_in_order;
  int64_t now = 0;
  int64_t next_pos = 0;
  for (int op = 0; op < 20'000; ++op) {
    if (rng.NextBelow(3) != 0) {
      // Mostly ahead of now over many scales, sometimes already past.
      const int64_t span = int64_t{1} << rng.NextBelow(40);
      const int64_t deadline = now - 1000 + static_cast<int64_t>(rng.NextBelow(static_cast<uint64_t>(span) + 1000));
      q.Push({At(deadline), next_pos, 0});
      reference.emplace(deadline, next_pos++);
    } else {
      now += static_cast<int64_t>(rng.NextBelow(uint64_t{1} << rng.NextBelow(36)));
      std::vector<DeadlineStay> out;
      q.PopUpTo(At(now), out);
      std::vector<int64_t> got;
      for (const DeadlineStay& s : out) {
        got.push_back(s.pos);
        taken_in_order.push_back(s.pos);
        EXPECT_LE(s.deadline.ns(), now);
      }
      std::vector<int64_t> want;
      for (auto it = reference.begin(); it != reference.end() && it->first <= now;) {
        want.push_back(it->second);
        it = reference.erase(it);
      }
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(got, want) << "at now " << now;
    }
    EXPECT_EQ(q.size(), reference.size());
    const Status s = q.CheckInvariants();
    EXPECT_TRUE(s.ok()) << s.message();
    if (testing::Test::HasFailure()) break;
  }
  return taken_in_order;
}

TEST(DeadlineQueue, RandomOperationsAgreeWithAReferenceAndRepeatExactly) {
  const std::vector<int64_t> first = RandomRun(17);
  EXPECT_GT(first.size(), 1000u);
  EXPECT_EQ(RandomRun(17), first);
}

}  // namespace
}  // namespace fleetplan
