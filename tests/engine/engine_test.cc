// Engine behaviour on scenarios designed to separate the scheduling policies. Outcomes
// are read from what the simulation did (token times, step records), never from labels.
#include "fleetplan/engine/engine.h"

#include <gtest/gtest.h>

#include "engine/engine_driver.h"

namespace fleetplan {
namespace {

using testing::ExpectPoolAtBaseline;
using testing::MakeEngine;
using testing::MakeRequest;
using testing::RecordingObserver;
using testing::RunEngine;
using testing::TestCostModel;

EngineConfig BaseConfig(std::string policy) {
  EngineConfig c;
  c.scheduler.policy = std::move(policy);
  c.scheduler.max_batched_tokens = 64;
  c.scheduler.max_running = 16;
  c.scheduler.chunk_tokens = 64;
  c.block_tokens = 16;
  c.kv_blocks = 1000;
  return c;
}

TEST(Engine, ChunkedPrefillThenDecodeArithmetic) {
  // 100-token prompt, budget 64: chunks 64 then 36; the step that completes the prompt
  // samples the first token; 4 more decode steps give 5 output tokens.
  const TestCostModel cost(Ms(1), Us(100), Us(500));
  RecordingObserver obs;
  auto e = MakeEngine(BaseConfig("decode-first"), cost, &obs);
  RunEngine(*e, {MakeRequest(7, SimTime(), 100, 5)});
  ASSERT_EQ(obs.steps.size(), 6u);
  EXPECT_EQ(obs.steps[0].shape.prefill_tokens, 64);
  EXPECT_EQ(obs.steps[1].shape.prefill_tokens, 36);
  EXPECT_EQ(obs.steps[2].shape.decode_seqs, 1);
  const RequestOutcome& o = obs.outcomes.at(7);
  EXPECT_EQ(o.status, RequestStatus::kOk);
  // step 1: 1 + 6.4 = 7.4 ms; step 2: 1 + 3.6 = 4.6 ms -> first token at 12.0 ms.
  EXPECT_EQ(o.first_token->ns(), Us(12'000).ns());
  // four decode steps of 1.5 ms each.
  EXPECT_EQ(o.finish->ns(), Us(18'000).ns());
  EXPECT_EQ(o.itl_max, Us(1'500));
  EXPECT_EQ(o.output_tokens, 5);
  EXPECT_EQ(o.input_tokens, 100);
  EXPECT_EQ(e->stats().steps, 6);
  EXPECT_EQ(e->stats().prefill_tokens, 100);
  EXPECT_EQ(e->stats().decode_tokens, 4);
  ExpectPoolAtBaseline(*e);
}

TEST(Engine, HostOverheadIsAddedToEveryStep) {
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = BaseConfig("decode-first");
  c.host_overhead = Us(400);
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 10, 3)});
  EXPECT_EQ(obs.outcomes.at(1).finish->ns(), Us(3 * 1'400).ns());
  ExpectPoolAtBaseline(*e);
}

TEST(Engine, HostOverheadFollowsTheStepsBatch) {
  // host = 200 us + 30 us per sequence + 2 us per prompt token; GPU = 1 ms + 100 us per
  // prompt token + 500 us per decode. A: 100-token prompt, 3 tokens; B: 20 tokens, 2.
  const TestCostModel cost(Ms(1), Us(100), Us(500));
  EngineConfig c = BaseConfig("decode-first");
  c.host_overhead = Us(200);
  c.host_per_sequence = Us(30);
  c.host_per_prefill_token = Us(2);
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 100, 3), MakeRequest(2, SimTime(), 20, 2)});
  ASSERT_EQ(obs.steps.size(), 4u);
  // 1: A's first 64 prompt tokens alone: host 200 + 30 + 128 = 358 us, GPU 7.4 ms.
  EXPECT_EQ(obs.steps[0].host, Us(358));
  EXPECT_EQ(obs.steps[0].end, SimTime() + Us(7'758));
  // 2: A's last 36 and B's 20 prompt tokens: host 200 + 60 + 112 = 372 us, GPU 6.6 ms.
  EXPECT_EQ(obs.steps[1].host, Us(372));
  EXPECT_EQ(obs.steps[1].end, SimTime() + Us(14'730));
  // 3: two decodes: host 200 + 60 = 260 us, GPU 2 ms; B ends.
  EXPECT_EQ(obs.steps[2].host, Us(260));
  // 4: A decodes alone: host 230 us, GPU 1.5 ms.
  EXPECT_EQ(obs.steps[3].host, Us(230));
  EXPECT_EQ(obs.outcomes.at(1).first_token->ns(), Us(14'730).ns());
  EXPECT_EQ(obs.outcomes.at(2).finish->ns(), Us(16'990).ns());
  EXPECT_EQ(obs.outcomes.at(1).finish->ns(), Us(18'720).ns());
  ExpectPoolAtBaseline(*e);
}

// A decoding stream meets a burst of long prompts.
struct StreamAndBurst {
  RequestOutcome stream;
  RequestOutcome first_burst;
  SimTime last_finish;
};

StreamAndBurst RunStreamAndBurst(const std::string& policy) {
  const TestCostModel cost(Ms(2), Us(50), Us(100));
  EngineConfig c = BaseConfig(policy);
  c.scheduler.max_batched_tokens = 512;
  c.scheduler.chunk_tokens = 512;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  std::vector<Request> reqs = {MakeRequest(0, SimTime(), 32, 200)};
  for (int i = 1; i <= 4; ++i) reqs.push_back(MakeRequest(i, SimTime() + Ms(50), 2048, 20));
  RunEngine(*e, reqs);
  ExpectPoolAtBaseline(*e);
  SimTime last;
  for (const auto& [id, o] : obs.outcomes) last = std::max(last, *o.finish);
  return {obs.outcomes.at(0), obs.outcomes.at(1), last};
}

TEST(Engine, PrefillFirstStallsTheActiveStreamDecodeFirstProtectsIt) {
  const auto pf = RunStreamAndBurst("prefill-first");
  const auto df = RunStreamAndBurst("decode-first");
  std::printf("stream itl_max: prefill-first %.1f ms, decode-first %.1f ms\n", pf.stream.itl_max.millis(),
              df.stream.itl_max.millis());
  // decode-first: a step holds at most 5 decoders (the stream and the burst) and fills
  // the rest of the 512-token budget with prefill: <= 2 ms + 507 * 50 us + 5 * 100 us.
  EXPECT_LE(df.stream.itl_max, Us(27'850));
  // prefill-first: 4 x 2048 prompt tokens = 16 full-budget steps of 27.6 ms in a row.
  EXPECT_GE(pf.stream.itl_max, Ms(16 * 27));
  const double pf_tpot = (*pf.stream.finish - *pf.stream.first_token).millis() / 199.0;
  const double df_tpot = (*df.stream.finish - *df.stream.first_token).millis() / 199.0;
  std::printf("stream TPOT: prefill-first %.2f ms, decode-first %.2f ms\n", pf_tpot, df_tpot);
  EXPECT_GT(pf_tpot, df_tpot);
}

TEST(Engine, DecodeFirstDelaysTheNewRequestsFirstToken) {
  const auto pf = RunStreamAndBurst("prefill-first");
  const auto df = RunStreamAndBurst("decode-first");
  const Duration pf_ttft = *pf.first_burst.first_token - pf.first_burst.arrival;
  const Duration df_ttft = *df.first_burst.first_token - df.first_burst.arrival;
  std::printf("burst TTFT: prefill-first %.1f ms, decode-first %.1f ms\n", pf_ttft.millis(), df_ttft.millis());
  EXPECT_LT(pf_ttft, df_ttft);
}

TEST(Engine, PrefillFirstFinishesAThroughputBatchSooner) {
  // Eight requests at once: prefill-first builds one large decode batch early and pays
  // the per-step base cost fewer times.
  auto run = [](const std::string& policy) {
    const TestCostModel cost(Ms(5), Us(50), Us(100));
    EngineConfig c = BaseConfig(policy);
    c.scheduler.max_batched_tokens = 512;
    RecordingObserver obs;
    auto e = MakeEngine(c, cost, &obs);
    std::vector<Request> reqs;
    for (int i = 0; i < 8; ++i) reqs.push_back(MakeRequest(i, SimTime(), 512, 64));
    RunEngine(*e, reqs);
    ExpectPoolAtBaseline(*e);
    SimTime last;
    for (const auto& [id, o] : obs.outcomes) last = std::max(last, *o.finish);
    return std::make_pair(last, e->stats().steps);
  };
  const auto [pf_last, pf_steps] = run("prefill-first");
  const auto [df_last, df_steps] = run("decode-first");
  std::printf("makespan: prefill-first %.1f ms in %lld steps, decode-first %.1f ms in %lld steps\n",
              pf_last.millis(), static_cast<long long>(pf_steps), df_last.millis(), static_cast<long long>(df_steps));
  EXPECT_LT(pf_last, df_last);
}

TEST(Engine, BoundedChunkNeverExceedsItsDeclaredDecodeStall) {
  const TestCostModel cost(Ms(2), Us(50), Us(100));
  EngineConfig c = BaseConfig("bounded-chunk");
  c.scheduler.max_batched_tokens = 4096;
  c.scheduler.chunk_tokens = 1024;
  c.scheduler.max_decode_stall = Ms(20);
  c.host_overhead = Us(500);
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  std::vector<Request> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back(MakeRequest(i, SimTime() + Ms(i), 64, 300));
  for (int i = 8; i < 20; ++i) reqs.push_back(MakeRequest(i, SimTime() + Ms(30 + 7 * i), 3000, 10));
  RunEngine(*e, reqs);
  ExpectPoolAtBaseline(*e);
  Duration longest_decode_step;
  for (const auto& s : obs.steps) {
    if (s.shape.decode_seqs > 0) longest_decode_step = std::max(longest_decode_step, s.end - s.start);
  }
  std::printf("longest step with decoders: %.3f ms (bound 20 ms); max decode gap %.3f ms\n",
              longest_decode_step.millis(), e->stats().max_decode_gap.millis());
  EXPECT_LE(longest_decode_step, Ms(20));
  EXPECT_LE(e->stats().max_decode_gap, Ms(20));
  EXPECT_EQ(e->stats().steps_over_time_cap, 0);
  for (const auto& [id, o] : obs.outcomes) EXPECT_LE(o.itl_max, Ms(20)) << "request " << id;
  // The bound is binding, not vacuous: prefill chunks were cut to fit it.
  EXPECT_GT(longest_decode_step, Ms(18));
}

TEST(Engine, PriorityAgingPreventsStarvationUnderSustainedArrivals) {
  // One low-priority batch request competes with a sustained stream of high-priority
  // interactive requests for two running slots.
  auto run = [](double aging) {
    const TestCostModel cost(Ms(2), Us(10), Us(100));
    EngineConfig c = BaseConfig("priority-aging");
    c.scheduler.max_running = 2;
    c.scheduler.max_batched_tokens = 256;
    c.scheduler.aging_per_step = aging;
    RecordingObserver obs;
    auto e = MakeEngine(c, cost, &obs);
    std::vector<Request> reqs;
    for (int i = 0; i < 400; ++i) reqs.push_back(MakeRequest(i, SimTime() + Ms(5 * i), 64, 8, /*priority=*/10));
    // Arrives once the interactive queue is already longer than the two slots.
    reqs.push_back(MakeRequest(1000, SimTime() + Ms(101), 64, 8, /*priority=*/0));
    RunEngine(*e, reqs);
    ExpectPoolAtBaseline(*e);
    const auto& batch = obs.outcomes.at(1000);
    SimTime last_interactive;
    for (int i = 0; i < 400; ++i) last_interactive = std::max(last_interactive, *obs.outcomes.at(i).first_token);
    return std::make_pair(*batch.first_token - batch.arrival, last_interactive);
  };
  const auto [starved_wait, last_without] = run(0.0);
  const auto [aged_wait, last_with] = run(0.5);
  std::printf("batch request TTFT: no aging %.1f ms (last interactive first token %.1f ms), aging 0.5/step %.1f ms\n",
              starved_wait.millis(), last_without.millis(), aged_wait.millis());
  // Without aging it waits until the interactive stream has been served: its first
  // token comes within one request's service (~20 ms) of the last interactive one.
  EXPECT_GE(SimTime() + Ms(101) + starved_wait, last_without - Ms(50));
  EXPECT_GE(starved_wait, Ms(2000));
  // With aging its key (0.5 per step waited) passes that of every interactive request
  // that arrived more than 10 / 0.5 = 20 steps after it. 20 steps of at most 3 ms admit
  // at most 12 such arrivals (one per 5 ms), served two at a time in about 20 ms each:
  // about 120 ms, so 300 ms is a bound with margin, and far below the starved wait.
  EXPECT_LE(aged_wait, Ms(300));
}

TEST(Engine, CancelledRequestReleasesBlocksOnlyWhenTheStepInFlightEnds) {
  const TestCostModel cost(Ms(10), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(BaseConfig("decode-first"), cost, &obs);
  e->Submit(MakeRequest(1, SimTime(), 40, 10), SimTime());
  const auto end = e->StartStep(SimTime());
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(e->pool().used_count(), 3);  // 40 tokens in 16-token blocks
  e->Cancel(1, SimTime() + Ms(4));
  EXPECT_EQ(e->pool().used_count(), 3) << "blocks freed while the step still uses them";
  EXPECT_EQ(obs.outcomes.count(1), 0u);
  e->FinishStep(*end);
  EXPECT_EQ(e->pool().used_count(), 0);
  ASSERT_EQ(obs.outcomes.count(1), 1u);
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kCancelled);
  EXPECT_EQ(obs.outcomes.at(1).finish->ns(), Ms(10).ns());
  EXPECT_FALSE(e->HasWork());
  EXPECT_FALSE(e->StartStep(*end).has_value());
  ExpectPoolAtBaseline(*e);
}

TEST(Engine, CancelWhileQueuedAndDuringDecode) {
  const TestCostModel cost(Ms(1), Duration(), Duration());
  RecordingObserver obs;
  EngineConfig c = BaseConfig("decode-first");
  c.scheduler.max_running = 1;
  auto e = MakeEngine(c, cost, &obs);
  Request decoding = MakeRequest(1, SimTime(), 16, 100);
  decoding.cancel_at = SimTime() + Us(5'500);  // mid-decode
  Request queued = MakeRequest(2, SimTime(), 16, 5);
  queued.cancel_at = SimTime() + Us(2'500);  // still waiting behind request 1
  RunEngine(*e, {decoding, queued});
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kCancelled);
  EXPECT_EQ(obs.outcomes.at(1).finish->ns(), Ms(6).ns());  // released when its step ended
  EXPECT_EQ(obs.outcomes.at(2).status, RequestStatus::kCancelled);
  EXPECT_EQ(obs.outcomes.at(2).finish->ns(), Us(2'500).ns());  // left the queue at once
  EXPECT_FALSE(obs.outcomes.at(2).first_token.has_value());
  EXPECT_EQ(e->stats().cancellations, 2);
  ExpectPoolAtBaseline(*e);
}

TEST(Engine, OutOfBlocksPreemptsLowestPriorityLatestArrival) {
  // 10 blocks of 16 tokens. Three 48-token prompts (3 blocks each) decode until the pool
  // runs out at the first block boundary; the victim is the lowest-priority request
  // (2), although it arrived before request 3. Requests 1 and 3 then fit exactly
  // (48 + 20 tokens = 5 blocks each) and are never preempted.
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = BaseConfig("decode-first");
  c.kv_blocks = 10;
  c.scheduler.max_batched_tokens = 256;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 48, 20, 5), MakeRequest(2, SimTime() + Us(1), 48, 20, 0),
                 MakeRequest(3, SimTime() + Us(2), 48, 20, 5)});
  EXPECT_EQ(obs.outcomes.at(1).preemptions, 0);
  EXPECT_EQ(obs.outcomes.at(3).preemptions, 0);
  EXPECT_GE(obs.outcomes.at(2).preemptions, 1);
  for (RequestId id : {1, 2, 3}) EXPECT_EQ(obs.outcomes.at(id).status, RequestStatus::kOk);
  EXPECT_GE(e->stats().preemptions, 1);
  ExpectPoolAtBaseline(*e);
}

// Steps run back to back over `requests` (all submitted at 0); counts the steps that
// preempted a running request and still admitted a waiting one.
int64_t StepsThatPreemptAndAdmit(bool admit_in_preempting_step, int64_t* preemptions) {
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = BaseConfig("bounded-chunk");
  c.kv_blocks = 24;
  c.scheduler.max_batched_tokens = 256;
  c.scheduler.chunk_tokens = 16;  // a readmission needs one free block for its first chunk
  c.admit_in_preempting_step = admit_in_preempting_step;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  for (RequestId id = 1; id <= 8; ++id) e->Submit(MakeRequest(id, SimTime(), 48 + 8 * id, 40), SimTime());
  int64_t both = 0;
  SimTime now;
  while (e->HasWork()) {
    const int64_t running = e->running_count();
    const int64_t preempted_before = e->stats().preemptions;
    const auto end = e->StartStep(now);
    if (!end) break;
    const int64_t preempted = e->stats().preemptions - preempted_before;
    // Without admissions, scheduling only removes the preempted from the running set.
    if (preempted > 0 && e->running_count() > running - preempted) ++both;
    now = *end;
    e->FinishStep(now);
    const Status st = e->CheckInvariants();
    EXPECT_TRUE(st.ok()) << st.message();
  }
  for (RequestId id = 1; id <= 8; ++id) EXPECT_EQ(obs.outcomes.at(id).status, RequestStatus::kOk) << id;
  *preemptions = e->stats().preemptions;
  ExpectPoolAtBaseline(*e);
  return both;
}

TEST(Engine, AStepThatPreemptsAdmitsNoWaitingRequestAsInVllmV1) {
  // 8 requests of 56..112 prompt tokens and 40 output in 24 blocks of 16: decodes outgrow
  // the pool again and again. vLLM's V1 scheduler admits no waiting request in a step that
  // preempted (the preempted one would be readmitted at once, only to be preempted by the
  // next block boundary); V0 admitted regardless.
  int64_t v1_preemptions = 0;
  int64_t v0_preemptions = 0;
  EXPECT_EQ(StepsThatPreemptAndAdmit(/*admit_in_preempting_step=*/false, &v1_preemptions), 0);
  EXPECT_GT(v1_preemptions, 0);
  EXPECT_GT(StepsThatPreemptAndAdmit(/*admit_in_preempting_step=*/true, &v0_preemptions), 0);
  EXPECT_GT(v0_preemptions, 0);
}

// Request 1 (16-token prompt, 20 tokens out) runs alone from 0 in 1 ms steps; request 2
// arrives at 2.5 ms. Returns request 2's first token.
SimTime SecondRequestsFirstToken(int64_t num_scheduler_steps) {
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = BaseConfig("decode-first");
  c.scheduler.num_scheduler_steps = num_scheduler_steps;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 16, 20), MakeRequest(2, SimTime() + Us(2'500), 16, 5)});
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kOk);
  EXPECT_EQ(obs.outcomes.at(2).status, RequestStatus::kOk);
  ExpectPoolAtBaseline(*e);
  return *obs.outcomes.at(2).first_token;
}

TEST(Engine, AMultiStepDecodeRunAdmitsNothingUntilItEnds) {
  // Step 1 (0-1 ms) is request 1's prompt. Single steps: request 2 joins the first step
  // after it arrives (3-4 ms). Runs of 4: step 2 (1-2 ms) decodes only and starts a run
  // through 5 ms, so request 2 waits for the step at 5-6 ms, as vLLM V0 with
  // --num-scheduler-steps 4 makes it wait.
  EXPECT_EQ(SecondRequestsFirstToken(1).ns(), Ms(4).ns());
  EXPECT_EQ(SecondRequestsFirstToken(4).ns(), Ms(6).ns());
}

TEST(Engine, ReserveAdmissionNeverPreempts) {
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = BaseConfig("decode-first");
  c.kv_blocks = 10;
  c.scheduler.max_batched_tokens = 256;
  c.admission = AdmissionMode::kReserve;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 48, 40, 5), MakeRequest(2, SimTime() + Us(1), 48, 40, 0),
                 MakeRequest(3, SimTime() + Us(2), 48, 40, 5)});
  EXPECT_EQ(e->stats().preemptions, 0);
  for (RequestId id : {1, 2, 3}) EXPECT_EQ(obs.outcomes.at(id).status, RequestStatus::kOk);
  // 88 tokens reserve 6 blocks: only one request fits at a time in 10 blocks.
  EXPECT_LE(e->stats().kv_peak_blocks, 10);
  EXPECT_GE(*obs.outcomes.at(2).first_token, *obs.outcomes.at(1).finish);
  ExpectPoolAtBaseline(*e);
}

TEST(Engine, RejectionsTouchNoCounter) {
  const TestCostModel cost(Ms(1), Us(10), Us(10));
  EngineConfig c = BaseConfig("decode-first");
  c.kv_blocks = 8;
  c.scheduler.max_waiting = 1;
  c.scheduler.max_running = 1;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  Request too_big = MakeRequest(1, SimTime(), 200, 10);  // 210 tokens > 128 in the pool
  Request late = MakeRequest(2, SimTime(), 16, 100);
  late.deadline = SimTime() + Ms(5);  // 100 tokens need > 100 ms
  e->Submit(too_big, SimTime());
  e->Submit(late, SimTime());
  EXPECT_EQ(e->live_requests(), 0);
  EXPECT_EQ(e->outstanding_tokens(), 0);
  EXPECT_EQ(e->pool().free_count(), 8);
  e->Submit(MakeRequest(3, SimTime(), 16, 4), SimTime());
  e->Submit(MakeRequest(4, SimTime(), 16, 4), SimTime());  // queue bound 1: rejected
  EXPECT_EQ(e->waiting_count(), 1);
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kRejected);
  EXPECT_EQ(obs.outcomes.at(1).reason, "needs 14 KV blocks for 210 tokens; the pool has 8");
  EXPECT_EQ(obs.outcomes.at(2).reason, "predicted completion is past the deadline");
  EXPECT_EQ(obs.outcomes.at(4).reason, "waiting queue full (1 requests)");
  EXPECT_EQ(e->stats().rejections, 3);
  EXPECT_TRUE(e->CheckInvariants().ok());
}

TEST(Engine, WaitingRequestPastItsDeadlineTimesOut) {
  const TestCostModel cost(Ms(10), Duration(), Duration());
  EngineConfig c = BaseConfig("decode-first");
  c.scheduler.max_running = 1;
  c.reject_unreachable_deadline = false;
  RecordingObserver obs;
  auto e = MakeEngine(c, cost, &obs);
  Request blocked = MakeRequest(2, SimTime(), 16, 2);
  blocked.deadline = SimTime() + Ms(15);
  RunEngine(*e, {MakeRequest(1, SimTime(), 16, 5), blocked});
  EXPECT_EQ(obs.outcomes.at(2).status, RequestStatus::kTimeout);
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kOk);
  EXPECT_EQ(e->stats().timeouts, 1);
  ExpectPoolAtBaseline(*e);
}

TEST(Engine, UnknownPolicyListsValidNames) {
  const TestCostModel cost(Ms(1), Duration(), Duration());
  EngineConfig c = BaseConfig("decode_frist");
  auto e = Engine::Create(0, c, &cost, nullptr);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(e.status().message(),
            "unknown scheduling policy 'decode_frist'; did you mean 'decode-first'? (valid: prefill-first, "
            "decode-first, bounded-chunk, priority-aging)");
}

TEST(Engine, SameInputsSameSteps) {
  auto run = [] {
    const TestCostModel cost(Ms(1), Us(20), Us(50));
    RecordingObserver obs;
    EngineConfig c = BaseConfig("bounded-chunk");
    c.kv_blocks = 40;
    auto e = MakeEngine(c, cost, &obs);
    std::vector<Request> reqs;
    for (int i = 0; i < 30; ++i) reqs.push_back(MakeRequest(i, SimTime() + Ms(3 * i), 40 + 13 * i, 5 + i % 7, i % 3));
    RunEngine(*e, reqs);
    std::vector<int64_t> trace;
    for (const auto& s : obs.steps) trace.insert(trace.end(), {s.start.ns(), s.end.ns(), s.kv_used_blocks});
    return trace;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

EngineConfig GraphConfig() {
  EngineConfig c = BaseConfig("decode-first");
  auto policy = CudaGraphPolicy::Create({1, 2, 4}, /*eager_fallback=*/true, std::nullopt);
  EXPECT_TRUE(policy.ok()) << policy.status().message();
  c.cuda_graphs = *policy;
  return c;
}

TEST(EngineCudaGraphs, DecodeOnlyStepsPadToTheSmallestBucket) {
  // Request 1 arrives first and prefills alone; requests 2 and 3 prefill beside its first
  // decode (mixed steps run eager, not counted). Then decode-only steps of 3, 2, 1
  // sequences as the requests finish: buckets 4, 2, 1 -> 7 padded slots for 6 real ones.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(GraphConfig(), cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 10, 5), MakeRequest(2, SimTime(), 10, 3), MakeRequest(3, SimTime(), 10, 2)});
  const GraphCounters& g = e->stats().cuda_graphs;
  EXPECT_EQ(g.decode_only_steps, 3);
  EXPECT_EQ(g.graphed_steps, 3);
  EXPECT_EQ(g.real_slots, 6);
  EXPECT_EQ(g.padded_slots, 7);
  EXPECT_EQ(g.fallback_steps, 0);
  const Json j = g.ToJson(true);
  EXPECT_EQ(j["bucket_hit_rate"], 1.0);
  EXPECT_EQ(j["padding_ratio"], RoundForReport(1.0 / 7.0));
  EXPECT_EQ(j["fallback_rate"], 0.0);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineCudaGraphs, BatchAboveTheLargestBucketFallsBackToEager) {
  // Request 0 prefills alone and finishes in the next (mixed) step, where the other five
  // prefill; their one decode-only step of 5 sequences is above the largest bucket (4)
  // and runs eager.
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(GraphConfig(), cost, &obs);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 6; ++i) requests.push_back(MakeRequest(i, SimTime(), 10, 2));
  RunEngine(*e, requests);
  const GraphCounters& g = e->stats().cuda_graphs;
  EXPECT_EQ(g.decode_only_steps, 1);
  EXPECT_EQ(g.graphed_steps, 0);
  EXPECT_EQ(g.fallback_steps, 1);
  EXPECT_EQ(g.unexpected_fallbacks, 0);
  EXPECT_EQ(g.ToJson(true)["fallback_rate"], 1.0);
}

TEST(EngineCudaGraphs, NothingIsCountedWhenGraphsAreOff) {
  const TestCostModel cost(Ms(1), Us(10), Us(100));
  RecordingObserver obs;
  auto e = MakeEngine(BaseConfig("decode-first"), cost, &obs);
  RunEngine(*e, {MakeRequest(1, SimTime(), 10, 5)});
  EXPECT_EQ(e->stats().cuda_graphs.decode_only_steps, 0);
  EXPECT_EQ(e->stats().ToJson(e->pool().total(), Ms(100), false)["cuda_graphs"]["enabled"], false);
}

}  // namespace
}  // namespace fleetplan
