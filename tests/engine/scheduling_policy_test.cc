// The shared contract every scheduling policy passes, run for each row of the registry
// (engine/scheduling_policy.h): a new policy is tested by adding its row.
#include "fleetplan/engine/scheduling_policy.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "engine_driver.h"
#include "fleetplan/engine/engine.h"

namespace fleetplan {
namespace {

using testing::MakeEngine;
using testing::MakeRequest;
using testing::RecordingObserver;
using testing::RunEngine;
using testing::TestCostModel;

TEST(SchedulingPolicyRegistry, NamesAreUniqueAndEachRowBuildsItsPolicy) {
  std::set<std::string> seen;
  for (const SchedulingPolicyRow& row : SchedulingPolicies()) {
    EXPECT_TRUE(seen.insert(std::string(row.name)).second) << row.name;
    EXPECT_FALSE(row.summary.empty()) << row.name;
    SchedulerConfig c;
    c.policy = std::string(row.name);
    auto p = MakeSchedulingPolicy(c);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ((*p)->name(), row.name);
    EXPECT_GE((*p)->ChunkCap(), 1) << row.name;
  }
  EXPECT_EQ(SchedulingPolicyNames().size(), SchedulingPolicies().size());
}

TEST(SchedulingPolicyRegistry, UnknownNameListsTheRegistry) {
  SchedulerConfig c;
  c.policy = "decode-frist";
  auto p = MakeSchedulingPolicy(c);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("did you mean 'decode-first'"), std::string::npos) << p.status().message();
  for (const SchedulingPolicyRow& row : SchedulingPolicies()) {
    EXPECT_NE(p.status().message().find(std::string(row.name)), std::string::npos) << row.name;
  }
}

// Every policy, under memory pressure with mixed priorities: every request completes
// with its whole answer, no token is computed twice except after a preemption, the
// engine's invariants hold after every event, and two runs are identical.
TEST(SchedulingPolicyContract, EveryPolicyCompletesEveryRequestAndKeepsInvariants) {
  for (const SchedulingPolicyRow& row : SchedulingPolicies()) {
    SCOPED_TRACE(std::string(row.name));
    EngineConfig c;
    c.scheduler.policy = std::string(row.name);
    c.scheduler.max_batched_tokens = 512;
    c.scheduler.max_running = 16;
    c.scheduler.chunk_tokens = 128;
    c.kv_blocks = 120;  // 1,920 tokens: fewer than the work in flight, so it preempts
    TestCostModel cost(Ms(2), Us(10), Us(50));
    std::vector<Request> requests;
    for (int i = 0; i < 60; ++i) {
      requests.push_back(MakeRequest(i, SimTime() + Ms(5) * i, 100 + (i * 37) % 400, 20 + (i * 13) % 60, i % 3));
    }
    const auto run = [&](RecordingObserver& obs) {
      auto engine = MakeEngine(c, cost, &obs);
      RunEngine(*engine, requests);
      EXPECT_FALSE(engine->HasWork());
      EXPECT_EQ(engine->live_requests(), 0);
      EXPECT_EQ(engine->pool().total_refs(), 0);
      return engine->stats();
    };
    RecordingObserver a;
    RecordingObserver b;
    const EngineStats sa = run(a);
    const EngineStats sb = run(b);
    ASSERT_EQ(a.outcomes.size(), requests.size());
    int64_t output = 0;
    for (const Request& r : requests) {
      const RequestOutcome& o = a.outcomes.at(r.id);
      EXPECT_EQ(o.status, RequestStatus::kOk) << r.id;
      EXPECT_EQ(o.output_tokens, r.output_tokens) << r.id;
      output += r.output_tokens;
      EXPECT_EQ(b.outcomes.at(r.id).finish, o.finish) << r.id;
    }
    // One decode per output token after the first (the first comes from the prefill),
    // less one per preemption whose recompute sampled the next token.
    const int64_t decodes = output - static_cast<int64_t>(requests.size());
    EXPECT_LE(sa.decode_tokens, decodes);
    EXPECT_GE(sa.decode_tokens, decodes - sa.preemptions);
    EXPECT_GT(sa.preemptions, 0) << "the pool is meant to be too small for the load";
    EXPECT_EQ(sa.steps, sb.steps);
    EXPECT_EQ(sa.preemptions, sb.preemptions);
  }
}

}  // namespace
}  // namespace fleetplan
