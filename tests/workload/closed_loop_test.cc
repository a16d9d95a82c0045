// Closed-loop generation driven by a fake completion model: a minimal event loop that
// follows the RequestSource protocol, with service time = f(prompt, output).
#include <algorithm>
#include <map>
#include <queue>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/workload/generator.h"
#include "workload/test_util.h"

namespace fleetplan {
namespace {

using testing::SpecFromYaml;

constexpr const char* kClosed = R"(workload:
  requests: 400
  arrival: {process: closed-loop, users: 8, think_time: 2s}
  classes:
    chat:
      share: 0.5
      prompt:
        - {segment: history}
        - {segment: unique, tokens: {uniform: [10, 100]}}
      output_tokens: {uniform: [10, 100]}
      session: {turns: 3, think_time: 500ms}
    batch:
      share: 0.5
      prompt: [{segment: unique, tokens: 1000}]
      output_tokens: 200
)";

// The fake service: 1 ms per prompt token plus 10 ms per output token.
Duration ServiceTime(const Request& r) { return Ms(r.prompt_tokens()) + Ms(10 * r.output_tokens); }

// One event of the fake simulator: an arrival being admitted or a completion.
struct Event {
  SimTime at;
  int64_t seq;
  bool arrival;
  Request request;  // arrivals only
  RequestId id;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct Trace {
  std::vector<Request> requests;
  std::map<RequestId, SimTime> finish;
  int max_outstanding = 0;
};

// The protocol from source.h: before processing the next event, admit every arrival due
// no later than it; an arrival event schedules its completion; a completion feeds the
// source.
Trace Simulate(RequestSource& source) {
  Trace out;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  int64_t seq = 0;
  int outstanding = 0;
  while (true) {
    const SimTime next_event = events.empty() ? SimTime::Max() : events.top().at;
    auto peek = source.PeekArrival();
    EXPECT_TRUE(peek.ok());
    if (peek.ok() && peek->has_value() && **peek <= next_event) {
      auto next = source.Next();
      EXPECT_TRUE(next.ok() && next->has_value());
      const Request& r = **next;
      if (!out.requests.empty()) {
        EXPECT_GE(r.arrival, out.requests.back().arrival);
      }
      EXPECT_EQ(r.id, static_cast<RequestId>(out.requests.size()));
      out.requests.push_back(r);
      events.push(Event{r.arrival, seq++, true, r, r.id});
      continue;
    }
    if (events.empty()) break;
    const Event e = events.top();
    events.pop();
    if (e.arrival) {
      out.max_outstanding = std::max(out.max_outstanding, ++outstanding);
      events.push(Event{e.at + ServiceTime(e.request), seq++, false, Request(), e.id});
    } else {
      --outstanding;
      out.finish[e.id] = e.at;
      source.OnRequestFinished(e.id, e.at);
    }
  }
  return out;
}

TEST(ClosedLoopTest, UsersWaitForCompletionPlusThinkTime) {
  auto spec = SpecFromYaml(kClosed);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto gen = MakeGenerator(*spec, 1);
  ASSERT_TRUE(gen.ok());
  const Trace t = Simulate(**gen);
  ASSERT_EQ(t.requests.size(), 400u);
  EXPECT_EQ(t.max_outstanding, 8);
  EXPECT_TRUE((*gen)->exhausted());
  // The first 8 arrive after one think time; every later arrival is exactly a completion
  // plus a think time (2 s between requests, 500 ms between turns of a session).
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(t.requests[i].arrival, SimTime::Zero() + Sec(2));
  std::map<SimTime, int> completions_at;
  for (const auto& [id, at] : t.finish) ++completions_at[at];
  int turns = 0;
  for (size_t i = 8; i < t.requests.size(); ++i) {
    const Request& r = t.requests[i];
    const Duration think = r.turn > 0 ? Ms(500) : Sec(2);
    turns += r.turn > 0 ? 1 : 0;
    EXPECT_EQ(completions_at.count(r.arrival - think), 1u) << "request " << r.id;
  }
  EXPECT_GT(turns, 50);
}

TEST(ClosedLoopTest, BlocksWhileEveryUserWaits) {
  auto spec = SpecFromYaml(kClosed);
  ASSERT_TRUE(spec.ok());
  auto gen = MakeGenerator(*spec, 1);
  ASSERT_TRUE(gen.ok());
  std::vector<Request> first;
  for (int i = 0; i < 8; ++i) first.push_back(**(*gen)->Next());
  auto blocked = (*gen)->Next();
  ASSERT_TRUE(blocked.ok());
  EXPECT_FALSE(blocked->has_value());
  EXPECT_FALSE((*gen)->exhausted());
  (*gen)->OnRequestFinished(first[3].id, SimTime::Zero() + Sec(10));
  auto peek = (*gen)->PeekArrival();
  ASSERT_TRUE(peek.ok() && peek->has_value());
  const Duration think = first[3].session >= 0 ? Ms(500) : Sec(2);
  EXPECT_EQ(**peek, SimTime::Zero() + Sec(10) + think);
  auto next = (*gen)->Next();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->id, 8);
  if (first[3].session >= 0) {
    EXPECT_EQ((*next)->session, first[3].session);
    EXPECT_EQ((*next)->turn, 1);
  }
  const Json d = (*gen)->Describe();
  EXPECT_EQ(d["loop"], "closed");
  EXPECT_EQ(d["arrival"]["users"], 8);
}

TEST(ClosedLoopTest, DeterministicUnderTheSameCompletions) {
  auto spec = SpecFromYaml(kClosed);
  ASSERT_TRUE(spec.ok());
  auto a = MakeGenerator(*spec, 9);
  auto b = MakeGenerator(*spec, 9);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Simulate(**a).requests, Simulate(**b).requests);
}

TEST(ClosedLoopTest, DurationRetiresUsers) {
  auto spec = SpecFromYaml(kClosed);
  ASSERT_TRUE(spec.ok());
  auto gen = MakeGenerator(*spec, 1, testing::Limits(Sec(30), 1000000));
  ASSERT_TRUE(gen.ok());
  const Trace t = Simulate(**gen);
  ASSERT_FALSE(t.requests.empty());
  for (const Request& r : t.requests) EXPECT_LT(r.arrival, SimTime::Zero() + Sec(30));
  EXPECT_TRUE((*gen)->exhausted());
}

}  // namespace
}  // namespace fleetplan
