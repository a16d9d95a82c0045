// Lock-step replicas (ReplicaSetup::lockstep_group, vLLM's data-parallel ranks of an MoE
// model): a step starts on every member at once and ends on every member at the slowest
// member's end; a member without work sits the step out.
#include <map>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {
namespace {

// GPU time = 1 ms + 10 us per prompt token + 100 us per decode.
class LinearCost final : public StepCostModel {
 public:
  StepCost Cost(std::span<const StepChunk> chunks) const override {
    const StepShape s = Summarize(chunks);
    return {Ms(1) + Us(10) * s.prefill_tokens + Us(100) * s.decode_seqs, Duration(), false};
  }
  std::string kind() const override { return "linear"; }
  Json Describe() const override { return Json::object(); }
};

class Seen final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override { outcomes[o.id] = o; }
  void OnStep(const StepRecord& s) override { steps.push_back(s); }
  std::map<RequestId, RequestOutcome> outcomes;
  std::vector<StepRecord> steps;
};

Request MakeRequest(RequestId id, int64_t prompt, int64_t output) {
  Request r;
  r.id = id;
  r.prompt = {PromptSegment{static_cast<ContentId>(100 + id), prompt}};
  r.output_tokens = output;
  return r;
}

// A (1000-token prompt, 2 tokens) goes to replica 0, B (100 tokens, 3 tokens) to replica 1,
// both at time 0, A submitted first.
std::map<RequestId, RequestOutcome> RunTwo(int32_t group, std::vector<StepRecord>* steps) {
  FleetSetup setup;
  EngineConfig e;
  e.scheduler.policy = "decode-first";
  e.scheduler.max_batched_tokens = 2048;
  e.scheduler.max_running = 8;
  e.scheduler.chunk_tokens = 2048;
  e.kv_blocks = 1000;
  const auto cost = std::make_shared<LinearCost>();
  for (int i = 0; i < 2; ++i) {
    ReplicaSetup r{e, cost};
    r.lockstep_group = group;
    setup.replicas.push_back(r);
  }
  setup.router.policy = "round-robin";
  Seen seen;
  auto sim = Simulation::Create(setup, &seen);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  Simulation& s = **sim;
  s.SetEventHook([&] {
    const Status st = s.CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.message();
  });
  EXPECT_TRUE(s.Start(nullptr).ok());
  EXPECT_TRUE(s.Submit(MakeRequest(1, 1000, 2)).ok());
  EXPECT_TRUE(s.Submit(MakeRequest(2, 100, 3)).ok());
  EXPECT_TRUE(s.Finish().ok());
  *steps = seen.steps;
  return seen.outcomes;
}

TEST(LockStep, EveryMemberEndsItsStepWhenTheSlowestDoes) {
  std::vector<StepRecord> steps;
  const auto o = RunTwo(0, &steps);
  ASSERT_EQ(o.at(1).replica, 0);
  ASSERT_EQ(o.at(2).replica, 1);
  // Both arrive at time 0, so both are waiting when the group's first step is planned
  // (same-instant admission): A's prefill (11 ms) and B's (2 ms) run in one group step
  // that ends when the slowest member does, at 11 ms.
  EXPECT_EQ(o.at(1).first_token->ns(), Us(11'000).ns());
  EXPECT_EQ(o.at(2).first_token->ns(), Us(11'000).ns());
  // Step 2: both decode (1.1 ms each), ending at 12.1 ms: A's second and last token.
  EXPECT_EQ(o.at(1).finish->ns(), Us(12'100).ns());
  // Step 3: B alone (replica 0 has no work and sits it out), 1.1 ms.
  EXPECT_EQ(o.at(2).finish->ns(), Us(13'200).ns());
  ASSERT_EQ(steps.size(), 5u);
  // B's prefill step kept its own GPU time; its record spans the wait for A's prefill.
  int64_t stretched = 0;
  for (const StepRecord& s : steps) {
    if (s.replica == 1 && s.start == SimTime()) {
      EXPECT_EQ(s.gpu, Us(2'000));
      EXPECT_EQ(s.end, SimTime() + Ms(11));
      ++stretched;
    }
  }
  EXPECT_EQ(stretched, 1);
}

TEST(LockStep, WithoutAGroupEachReplicaStepsOnItsOwn) {
  std::vector<StepRecord> steps;
  const auto o = RunTwo(-1, &steps);
  EXPECT_EQ(o.at(2).first_token->ns(), Us(2'000).ns());
  EXPECT_EQ(o.at(2).finish->ns(), Us(4'200).ns());
  EXPECT_EQ(o.at(1).finish->ns(), Us(12'100).ns());
}

}  // namespace
}  // namespace fleetplan
