// StepPlan, the engine's contract between scheduling and applying a step (engine.h):
// StartStep's plan lists the chunks FinishStep then applies, its totals are the step's
// tokens, and preemptions made while planning are listed.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "engine/engine_driver.h"
#include "fleetplan/engine/engine.h"

namespace fleetplan {
namespace {

using testing::ExpectPoolAtBaseline;
using testing::MakeEngine;
using testing::MakeRequest;
using testing::RecordingObserver;
using testing::TestCostModel;

EngineConfig BaseConfig() {
  EngineConfig c;
  c.scheduler.policy = "decode-first";
  c.scheduler.max_batched_tokens = 64;
  c.scheduler.max_running = 16;
  c.scheduler.chunk_tokens = 64;
  c.block_tokens = 16;
  c.kv_blocks = 1000;
  return c;
}

struct PlannedWork {
  RequestId id;
  int64_t context;
  int64_t new_tokens;
};

// The plan of the step in flight as (id, context, new tokens), checking the plan's
// invariants on the way.
std::vector<PlannedWork> ReadPlan(const Engine& e) {
  const StepPlan& plan = e.planned_step();
  EXPECT_EQ(plan.entries.size(), plan.chunks.size());
  EXPECT_LE(plan.total_tokens(), e.config().scheduler.max_batched_tokens);
  std::vector<PlannedWork> work;
  std::set<RequestId> seen;
  int64_t verify = 0;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const StepPlan::Entry& entry = plan.entries[i];
    EXPECT_EQ(entry.new_tokens, plan.chunks[i].new_tokens);
    EXPECT_GE(entry.new_tokens, 1);
    if (entry.drafted > 0) verify += entry.new_tokens;
    const RequestId id = e.planned_request(entry.slot);
    EXPECT_TRUE(seen.insert(id).second) << "request " << id << " planned twice";
    EXPECT_EQ(plan.chunks[i].context_tokens, e.request(id)->num_computed);
    work.push_back({id, plan.chunks[i].context_tokens, entry.new_tokens});
  }
  EXPECT_EQ(plan.verify_tokens, verify);
  return work;
}

TEST(StepPlan, ListsTheChunksTheEngineThenApplies) {
  // 100-token and 20-token prompts, budget 64: step 1 is request 1's first 64 tokens;
  // step 2 its last 36 and request 2's whole prompt (20 of the 28 left).
  const TestCostModel cost(Ms(1), Us(100), Us(500));
  RecordingObserver obs;
  auto e = MakeEngine(BaseConfig(), cost, &obs);
  e->Submit(MakeRequest(1, SimTime(), 100, 3), SimTime());
  e->Submit(MakeRequest(2, SimTime(), 20, 2), SimTime());

  SimTime now = *e->StartStep(SimTime());
  std::vector<PlannedWork> plan = ReadPlan(*e);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].id, 1);
  EXPECT_EQ(plan[0].new_tokens, 64);
  e->FinishStep(now);
  EXPECT_TRUE(e->planned_step().empty());
  EXPECT_EQ(e->request(1)->num_computed, 64);

  now = *e->StartStep(now);
  plan = ReadPlan(*e);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].id, 1);
  EXPECT_EQ(plan[0].context, 64);
  EXPECT_EQ(plan[0].new_tokens, 36);
  EXPECT_EQ(plan[1].id, 2);
  EXPECT_EQ(plan[1].context, 0);
  EXPECT_EQ(plan[1].new_tokens, 20);
  EXPECT_EQ(e->planned_step().total_tokens(), 56);
  e->FinishStep(now);
  EXPECT_EQ(e->request(1)->num_computed, 100);
  EXPECT_EQ(e->request(1)->generated, 1);  // the chunk that completes a prompt samples
  EXPECT_EQ(e->request(2)->num_computed, 20);
}

TEST(StepPlan, EveryStepAppliesItsPlanAndItsTotalsAreTheStepsTokens) {
  // A mixed load under a tight budget: whatever the schedule, each planned request's
  // num_computed advances by exactly its entry's tokens, and the step's counted tokens
  // are the plan's total.
  const TestCostModel cost(Ms(1), Us(100), Us(500));
  RecordingObserver obs;
  EngineConfig c = BaseConfig();
  c.scheduler.max_batched_tokens = 48;
  auto e = MakeEngine(c, cost, &obs);
  for (RequestId id = 1; id <= 6; ++id) e->Submit(MakeRequest(id, SimTime(), 10 + 17 * id, 2 + id), SimTime());
  SimTime now;
  int steps = 0;
  while (e->HasWork()) {
    const auto end = e->StartStep(now);
    ASSERT_TRUE(end.has_value());
    now = *end;
    const std::vector<PlannedWork> plan = ReadPlan(*e);
    const int64_t total = e->planned_step().total_tokens();
    const int64_t counted = e->stats().prefill_tokens + e->stats().decode_tokens;
    e->FinishStep(now);
    ++steps;
    EXPECT_EQ(e->stats().prefill_tokens + e->stats().decode_tokens - counted, total) << "step " << steps;
    for (const PlannedWork& w : plan) {
      const auto view = e->request(w.id);
      if (view) {
        EXPECT_EQ(view->num_computed, w.context + w.new_tokens) << "request " << w.id;
      } else {  // its last token was sampled: it ended
        EXPECT_EQ(obs.outcomes.at(w.id).status, RequestStatus::kOk) << "request " << w.id;
      }
    }
    const Status st = e->CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  EXPECT_EQ(obs.outcomes.size(), 6u);
  EXPECT_EQ(e->stats().steps, steps);
  ExpectPoolAtBaseline(*e);
}

TEST(StepPlan, ListsThePreemptionsMadeWhilePlanning) {
  // Three blocks of 16 tokens, two 16-token prompts: both are admitted (a block each);
  // their first decodes each need a second block, and only one is free. Request 1 gets
  // it; request 2, the latest arrival, is preempted and is not in the plan.
  const TestCostModel cost(Ms(1), Us(100), Us(500));
  RecordingObserver obs;
  EngineConfig c = BaseConfig();
  c.kv_blocks = 3;
  auto e = MakeEngine(c, cost, &obs);
  e->Submit(MakeRequest(1, SimTime(), 16, 8), SimTime());
  e->Submit(MakeRequest(2, SimTime() + Us(1), 16, 8), SimTime() + Us(1));
  SimTime now = *e->StartStep(SimTime() + Us(1));
  EXPECT_EQ(ReadPlan(*e).size(), 2u);
  EXPECT_TRUE(e->planned_step().preempted.empty());
  e->FinishStep(now);

  now = *e->StartStep(now);
  const std::vector<PlannedWork> plan = ReadPlan(*e);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].id, 1);
  EXPECT_EQ(plan[0].new_tokens, 1);
  EXPECT_EQ(e->planned_step().preempted, std::vector<RequestId>{2});
  EXPECT_EQ(e->request(2)->preemptions, 1);
  EXPECT_FALSE(e->request(2)->running);
  e->FinishStep(now);
  EXPECT_TRUE(e->planned_step().preempted.empty());
}

}  // namespace
}  // namespace fleetplan
