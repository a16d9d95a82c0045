// Speculative decoding in the engine (engine/speculation.h): the round arithmetic, the
// verification shape the cost model sees, the draft's cost, the policy that turns it off,
// and draws that depend only on (seed, request, position in its answer).
#include "fleetplan/engine/speculation.h"

#include <gtest/gtest.h>

#include "engine/engine_driver.h"
#include "fleetplan/engine/engine.h"

namespace fleetplan {
namespace {

using testing::ExpectPoolAtBaseline;
using testing::MakeEngine;
using testing::MakeRequest;
using testing::RecordingObserver;
using testing::RunEngine;
using testing::TestCostModel;

// Records every token's time, so rounds can be read off the token stream.
class TokenObserver final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override { outcomes[o.id] = o; }
  void OnStep(const StepRecord& s) override { steps.push_back(s); }
  void OnToken(int32_t, RequestId id, int64_t index, SimTime t) override {
    EXPECT_EQ(index, static_cast<int64_t>(tokens[id].size()));
    tokens[id].push_back(t);
  }
  std::map<RequestId, RequestOutcome> outcomes;
  std::vector<StepRecord> steps;
  std::map<RequestId, std::vector<SimTime>> tokens;
};

EngineConfig SpecConfig(int64_t k, double acceptance) {
  EngineConfig c;
  c.scheduler.policy = "decode-first";
  c.scheduler.max_batched_tokens = 256;
  c.scheduler.max_running = 16;
  c.scheduler.chunk_tokens = 256;
  c.block_tokens = 16;
  c.kv_blocks = 1000;
  c.speculation.method = "ngram";
  c.speculation.tokens_per_round = k;
  c.speculation.acceptance.assign(static_cast<size_t>(k), acceptance);
  c.speculation.acceptance_source = "declared";
  c.speculation.stream = 12345;
  return c;
}

TEST(EngineSpeculation, FullyAcceptedRoundsEmitDraftedPlusOneTokens) {
  // Output 11: the prefill samples token 1; round 1 drafts min(4, 10 - 1) = 4 and emits 5
  // (tokens 2..6), round 2 drafts min(4, 5 - 1) = 4 and emits 5 (7..11): three steps.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  TokenObserver obs;
  auto e = MakeEngine(SpecConfig(4, 1.0), cost, &obs);
  e->set_token_events(true);
  RunEngine(*e, {MakeRequest(1, SimTime(), 32, 11)});
  ASSERT_EQ(obs.steps.size(), 3u);
  // A verification is a chunk of 1 + 4 new tokens over the context: prefill-shaped.
  EXPECT_EQ(obs.steps[1].shape.prefill_tokens, 5);
  EXPECT_EQ(obs.steps[1].shape.decode_seqs, 0);
  const std::vector<SimTime>& t = obs.tokens.at(1);
  ASSERT_EQ(t.size(), 11u);
  for (size_t i = 1; i <= 5; ++i) EXPECT_EQ(t[i], obs.steps[1].end) << i;
  for (size_t i = 6; i <= 10; ++i) EXPECT_EQ(t[i], obs.steps[2].end) << i;
  const SpeculationCounters& sc = e->stats().speculation;
  EXPECT_EQ(sc.rounds, 2);
  EXPECT_EQ(sc.drafted_tokens, 8);
  EXPECT_EQ(sc.accepted_tokens, 8);
  EXPECT_EQ(sc.emitted_tokens, 10);
  EXPECT_EQ(sc.verify_steps, 2);
  EXPECT_EQ(e->stats().prefill_tokens, 32);   // verification tokens are not prefill
  EXPECT_EQ(e->stats().decode_tokens, 10);
  EXPECT_EQ(obs.outcomes.at(1).output_tokens, 11);
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kOk);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineSpeculation, RejectedRoundsEmitOneTokenAtTheCostOfTheWholeVerification) {
  // Acceptance 0: every round emits only the target's token, but pays for 1 + k tokens.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  TokenObserver spec_obs;
  auto spec = MakeEngine(SpecConfig(4, 0.0), cost, &spec_obs);
  RunEngine(*spec, {MakeRequest(1, SimTime(), 32, 11)});
  EngineConfig plain_config = SpecConfig(4, 0.0);
  plain_config.speculation = SpeculationConfig();
  TokenObserver plain_obs;
  auto plain = MakeEngine(plain_config, cost, &plain_obs);
  RunEngine(*plain, {MakeRequest(1, SimTime(), 32, 11)});
  EXPECT_EQ(spec_obs.steps.size(), plain_obs.steps.size());  // one token per step either way
  EXPECT_EQ(spec->stats().speculation.accepted_tokens, 0);
  EXPECT_EQ(spec->stats().speculation.emitted_tokens, spec->stats().speculation.rounds);
  // The prefill (1 ms + 32 x 10 us) ends at 1.32 ms either way. Plain: 10 decodes of
  // 1.1 ms. Speculative: a verification of 1 + k' tokens costs 1 ms + (1 + k') x 10 us;
  // with 10..5 tokens left k' = 4 (6 steps of 1.05 ms), then k' = 3, 2, 1 (1.04, 1.03,
  // 1.02 ms), and the last token is an ordinary decode (1.1 ms).
  EXPECT_EQ(*plain_obs.outcomes.at(1).finish, SimTime() + Us(1320 + 10 * 1100));
  EXPECT_EQ(*spec_obs.outcomes.at(1).finish, SimTime() + Us(1320 + 6 * 1050 + 1040 + 1030 + 1020 + 1100));
  EXPECT_EQ(spec_obs.outcomes.at(1).output_tokens, 11);
  ExpectPoolAtBaseline(*spec);
}

TEST(EngineSpeculation, DraftsNothingPastTheAnswerAndNothingBelowMinRemaining) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = SpecConfig(8, 1.0);
  c.speculation.min_remaining = 4;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  // Output 6: after the first token 5 remain: one round drafts min(8, 5 - 1) = 4 and
  // ends the answer (emits 5).
  RunEngine(*e, {MakeRequest(1, SimTime(), 16, 6)});
  EXPECT_EQ(e->stats().speculation.rounds, 1);
  EXPECT_EQ(e->stats().speculation.drafted_tokens, 4);
  ASSERT_EQ(obs.steps.size(), 2u);
  // Output 3: 2 remain, below min_remaining 4: ordinary decodes only.
  RecordingObserver obs2;
  auto e2 = MakeEngine(c, cost, &obs2);
  RunEngine(*e2, {MakeRequest(2, SimTime(), 16, 3)});
  EXPECT_EQ(e2->stats().speculation.rounds, 0);
  EXPECT_EQ(e2->stats().speculation.ordinary_decodes, 2);
  ExpectPoolAtBaseline(*e2);
}

TEST(EngineSpeculation, NoRoundIsDraftedWhileMoreRequestsRunThanTheBatchLimit) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = SpecConfig(2, 1.0);
  c.speculation.disable_above_batch = 2;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  std::vector<Request> requests;
  for (RequestId id = 1; id <= 3; ++id) requests.push_back(MakeRequest(id, SimTime(), 16, 40));
  RunEngine(*e, requests);
  // The three arrive together but are prefilled one step apart (the first step starts at
  // the first arrival), so they end apart too. No step with three running verifies a
  // round; later steps with two or one running do.
  int64_t verified_with_three = 0;
  int64_t verified_with_fewer = 0;
  for (size_t i = 3; i < obs.steps.size(); ++i) {  // steps 0..2 prefill the prompts
    const StepRecord& s = obs.steps[i];
    if (s.shape.prefill_seqs == 0) continue;
    (s.running == 3 ? verified_with_three : verified_with_fewer) += 1;
  }
  EXPECT_EQ(verified_with_three, 0);
  EXPECT_GT(verified_with_fewer, 0);
  // (Step 2 may verify too: the policy counts the requests running when it schedules
  // decodes, before the third prompt is admitted into the same step.)
  EXPECT_GE(e->stats().speculation.verify_steps, verified_with_fewer);
  EXPECT_GT(e->stats().speculation.ordinary_decodes, 0);
  c.speculation.disable_above_batch = 3;
  RecordingObserver obs3;
  auto e3 = MakeEngine(c, cost, &obs3);
  RunEngine(*e3, requests);
  EXPECT_GT(e3->stats().speculation.verify_steps, e->stats().speculation.verify_steps);
}

TEST(EngineSpeculation, VerificationTokensShareTheStepBudget) {
  // Budget 8 tokens, k = 4: one verification takes 5, so a second decoding request gets
  // only the 3 left (it drafts 2).
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = SpecConfig(4, 1.0);
  c.scheduler.max_batched_tokens = 8;
  c.scheduler.chunk_tokens = 8;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 4, 30), MakeRequest(2, SimTime(), 4, 30)});
  bool saw_full_step = false;
  for (const StepRecord& s : obs.steps) {
    EXPECT_LE(s.shape.total_tokens(), 8);
    if (s.shape.prefill_seqs == 2 && s.shape.prefill_tokens == 8) saw_full_step = true;
  }
  EXPECT_TRUE(saw_full_step);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineSpeculation, DraftModelTimeIsAddedPerDraftedPosition) {
  // Draft cost: 200 us per draft decode step (the test model's base) plus 1 us per
  // sequence. One request, output 6: one round of 4 drafted tokens = 4 draft steps.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  const auto draft = std::make_shared<TestCostModel>(Us(200), Duration(), Us(1));
  EngineConfig c = SpecConfig(4, 1.0);
  c.speculation.method = "draft";
  c.speculation.draft_cost = draft;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 16, 6)});
  ASSERT_EQ(obs.steps.size(), 2u);
  EXPECT_EQ(e->stats().speculation.draft_time, Us(4 * 201));
  // The verification step: 1 ms + 5 tokens x 10 us, plus the draft's 804 us.
  EXPECT_EQ(obs.steps[1].gpu, Ms(1) + Us(50) + Us(804));
  ExpectPoolAtBaseline(*e);
}

TEST(EngineSpeculation, DrawsDependOnlyOnSeedRequestAndPosition) {
  SpeculationConfig c;
  c.tokens_per_round = 6;
  c.acceptance.assign(6, 0.7);
  c.stream = 99;
  // Same (request, generated): same answer, however often asked.
  EXPECT_EQ(c.Accepted(5, 10, 6), c.Accepted(5, 10, 6));
  // Over many rounds the first position is accepted about 70% of the time, and the mean
  // accepted length matches sum_j 0.7^j (j = 1..6) = 2.0588.
  int64_t first = 0;
  int64_t total = 0;
  const int64_t n = 200'000;
  for (int64_t id = 0; id < n; ++id) {
    const int64_t a = c.Accepted(static_cast<uint64_t>(id), 3, 6);
    if (a >= 1) ++first;
    total += a;
  }
  EXPECT_NEAR(static_cast<double>(first) / n, 0.7, 0.005);
  EXPECT_NEAR(static_cast<double>(total) / n, 2.0588, 0.01);
  // Another stream draws differently.
  SpeculationConfig other = c;
  other.stream = 100;
  int64_t differ = 0;
  for (uint64_t id = 0; id < 1000; ++id) differ += c.Accepted(id, 3, 6) != other.Accepted(id, 3, 6);
  EXPECT_GT(differ, 100);
}

TEST(EngineSpeculation, AcceptanceOfTheWrongLengthIsRefused) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = SpecConfig(4, 1.0);
  c.speculation.acceptance.pop_back();
  auto e = Engine::Create(0, c, &cost, nullptr);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("3 acceptance probabilities for 4 tokens"), std::string::npos);
}

TEST(EngineSpeculation, DecodeOnlyStepsAreCountedByBatchSize) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = SpecConfig(1, 0.0);
  c.speculation = SpeculationConfig();
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 16, 5), MakeRequest(2, SimTime(), 16, 3)});
  // Step 1 prefills request 1 (the first arrival starts it); step 2 decodes 1 and
  // prefills 2 (mixed, not counted); steps 3 and 4 decode both (2 ends); step 5 decodes 1.
  const std::vector<int64_t>& h = e->stats().decode_batch_steps;
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], 0);
  EXPECT_EQ(h[1], 1);
  EXPECT_EQ(h[2], 2);
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

TEST(EngineSpeculation, ABoundedChunkStallCapHoldsWhileRoundsRun) {
  // bounded-chunk caps a step at max_decode_stall while anything decodes; a request in a
  // speculative round is decoding, though its chunk is prefill-shaped. Cap 3 ms: with
  // 1 ms base, a 5-token verification (50 us) leaves room for 195 prompt tokens.
  const testing::TestCostModel cost(Ms(1), Us(10), Us(100));
  EngineConfig c = SpecConfig(4, 1.0);
  c.scheduler.policy = "bounded-chunk";
  c.scheduler.chunk_tokens = 2048;
  c.scheduler.max_batched_tokens = 4096;
  c.scheduler.max_decode_stall = Ms(3);
  testing::RecordingObserver obs;
  auto e = testing::MakeEngine(c, cost, &obs);
  testing::RunEngine(*e, {testing::MakeRequest(1, SimTime(), 16, 200), testing::MakeRequest(2, SimTime() + Ms(5), 2000, 5)});
  int64_t shared_steps = 0;
  for (const StepRecord& s : obs.steps) {
    if (s.shape.prefill_seqs < 2) continue;  // a round beside a prompt chunk
    ++shared_steps;
    EXPECT_LE(s.end - s.start, Ms(3)) << "prefill tokens " << s.shape.prefill_tokens;
  }
  EXPECT_GT(shared_steps, 5);
  EXPECT_EQ(e->stats().steps_over_time_cap, 0);
  testing::ExpectPoolAtBaseline(*e);
}

}  // namespace
}  // namespace fleetplan
