// The benchmark client as a request source (workload/bench_client.h): the order, the gaps,
// all-at-once sending, and the concurrency cap driven by a fake engine.
#include "fleetplan/workload/bench_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <vector>

#include "fleetplan/workload/content.h"

namespace fleetplan {
namespace {

BenchClientSpec Spec(int n) {
  BenchClientSpec s;
  for (int i = 0; i < n; ++i) s.requests.push_back(BenchClientRequest{100 + i, 10 + i});
  return s;
}

std::vector<Request> DrainOpen(RequestSource& source) {
  std::vector<Request> out;
  while (true) {
    Expected<std::optional<Request>> r = source.Next();
    EXPECT_TRUE(r.ok());
    if (!r.ok() || !r->has_value()) break;
    out.push_back(**r);
  }
  return out;
}

TEST(BenchClient, AllAtOnceKeepsTheListOrderAndLengths) {
  auto source = MakeBenchClientSource(Spec(5), 7);
  ASSERT_TRUE(source.ok()) << source.status().message();
  const std::vector<Request> rs = DrainOpen(**source);
  ASSERT_EQ(rs.size(), 5u);
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i].id, static_cast<RequestId>(i));
    EXPECT_EQ(rs[i].arrival, SimTime());
    EXPECT_EQ(rs[i].prompt_tokens(), 100 + static_cast<int64_t>(i));
    EXPECT_EQ(rs[i].output_tokens, 10 + static_cast<int64_t>(i));
    ASSERT_EQ(rs[i].prompt.size(), 1u);
    EXPECT_EQ(rs[i].prompt[0].content, MakeContentId(SegmentKind::kUnique, i, 0));
  }
  EXPECT_TRUE((*source)->exhausted());
  EXPECT_EQ((*source)->Describe()["arrival"]["process"], "all-at-once");
}

TEST(BenchClient, PoissonGapsStartAtZeroAndAreSeeded) {
  BenchClientSpec spec = Spec(400);
  auto arrivals = VllmClientArrivals(4.0, 1.0);
  ASSERT_TRUE(arrivals.ok());
  spec.arrivals = *arrivals;
  auto a = MakeBenchClientSource(spec, 1);
  auto b = MakeBenchClientSource(spec, 1);
  auto c = MakeBenchClientSource(spec, 2);
  const std::vector<Request> ra = DrainOpen(**a), rb = DrainOpen(**b), rc = DrainOpen(**c);
  ASSERT_EQ(ra.size(), 400u);
  EXPECT_EQ(ra[0].arrival, SimTime());  // the client sends its first request at once
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  for (size_t i = 1; i < ra.size(); ++i) EXPECT_LE(ra[i - 1].arrival, ra[i].arrival);
  // 399 gaps of mean 0.25 s.
  EXPECT_NEAR(ra.back().arrival.seconds() / 399.0, 0.25, 0.04);
  EXPECT_EQ((*a)->Describe()["arrival"]["process"], "poisson");
}

TEST(BenchClient, BurstinessIsAGammaShape) {
  auto a = VllmClientArrivals(2.0, 4.0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->Describe()["process"], "gamma");
  EXPECT_DOUBLE_EQ((*a)->Describe()["cv"].get<double>(), 0.5);  // 1 / sqrt(4)
  EXPECT_FALSE(VllmClientArrivals(0.0, 1.0).ok());
  EXPECT_FALSE(VllmClientArrivals(1.0, 0.0).ok());
}

// A fake engine serving each request in 1 s, any number at once: with a cap of 2 and every
// request due at 0, requests go out two at a time, each when an earlier one ends.
TEST(BenchClient, TheCapSendsARequestWhenASlotFrees) {
  BenchClientSpec spec = Spec(5);
  spec.max_concurrency = 2;
  auto made = MakeBenchClientSource(spec, 0);
  ASSERT_TRUE(made.ok());
  RequestSource& source = **made;
  using Done = std::pair<SimTime, RequestId>;
  std::priority_queue<Done, std::vector<Done>, std::greater<>> done;
  std::vector<Request> sent;
  int in_flight = 0, most = 0;
  while (true) {
    const std::optional<SimTime> next_done = done.empty() ? std::nullopt : std::optional(done.top().first);
    Expected<std::optional<SimTime>> peek = source.PeekArrival();
    ASSERT_TRUE(peek.ok());
    if (peek->has_value() && (!next_done || **peek <= *next_done)) {
      Expected<std::optional<Request>> r = source.Next();
      ASSERT_TRUE(r.ok() && r->has_value());
      sent.push_back(**r);
      done.push({(*r)->arrival + Ms(1000), (*r)->id});
      most = std::max(most, ++in_flight);
      continue;
    }
    if (!next_done) break;
    const Done d = done.top();
    done.pop();
    --in_flight;
    source.OnRequestFinished(d.second, d.first);
  }
  ASSERT_EQ(sent.size(), 5u);
  EXPECT_EQ(most, 2);
  const std::vector<int64_t> expected_ms = {0, 0, 1000, 1000, 2000};
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(sent[i].arrival, SimTime() + Ms(expected_ms[i])) << i;
  EXPECT_EQ(source.Describe()["loop"], "closed");
}

// With a warm-up round, every prompt goes out once at 0 for one token (ids 0..n-1), then
// the list proper (ids n..2n-1, the same contents) from when the last of those ended.
TEST(BenchClient, AWarmUpRoundSendsEveryPromptFirst) {
  BenchClientSpec spec = Spec(3);
  spec.warm_up = true;
  auto made = MakeBenchClientSource(spec, 0);
  ASSERT_TRUE(made.ok());
  RequestSource& source = **made;
  std::vector<Request> warm;
  for (int i = 0; i < 3; ++i) {
    Expected<std::optional<Request>> r = source.Next();
    ASSERT_TRUE(r.ok() && r->has_value());
    warm.push_back(**r);
  }
  for (size_t i = 0; i < warm.size(); ++i) {
    EXPECT_EQ(warm[i].id, static_cast<RequestId>(i));
    EXPECT_EQ(warm[i].arrival, SimTime());
    EXPECT_EQ(warm[i].output_tokens, 1);
  }
  // Nothing more until the round has ended.
  Expected<std::optional<SimTime>> blocked = source.PeekArrival();
  ASSERT_TRUE(blocked.ok());
  EXPECT_FALSE(blocked->has_value());
  EXPECT_FALSE(source.exhausted());
  source.OnRequestFinished(1, SimTime() + Ms(40));
  source.OnRequestFinished(0, SimTime() + Ms(50));
  EXPECT_FALSE(source.PeekArrival()->has_value());
  source.OnRequestFinished(2, SimTime() + Ms(70));
  const std::vector<Request> rest = DrainOpen(source);
  ASSERT_EQ(rest.size(), 3u);
  for (size_t i = 0; i < rest.size(); ++i) {
    EXPECT_EQ(rest[i].id, static_cast<RequestId>(3 + i));
    EXPECT_EQ(rest[i].arrival, SimTime() + Ms(70));
    EXPECT_EQ(rest[i].prompt, warm[i].prompt);  // the same content: a prefix-cache hit
    EXPECT_EQ(rest[i].output_tokens, 10 + static_cast<int64_t>(i));
  }
  EXPECT_TRUE(source.exhausted());
  EXPECT_EQ(source.Describe()["warm_up"], true);
}

TEST(BenchClient, BadSpecsAreErrors) {
  EXPECT_FALSE(MakeBenchClientSource(BenchClientSpec{}, 0).ok());
  BenchClientSpec zero = Spec(1);
  zero.requests[0].output_tokens = 0;
  EXPECT_FALSE(MakeBenchClientSource(zero, 0).ok());
  BenchClientSpec cap = Spec(1);
  cap.max_concurrency = 0;
  EXPECT_FALSE(MakeBenchClientSource(cap, 0).ok());
}

}  // namespace
}  // namespace fleetplan
