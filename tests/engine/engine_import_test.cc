// Admitting a request whose prompt KV arrives from another replica (disaggregated
// serving): BeginImport / FinishImport / AbortImport and cancellation while importing.
#include <gtest/gtest.h>

#include "engine/engine_driver.h"
#include "fleetplan/engine/engine.h"

namespace fleetplan {
namespace {

using testing::DrainEngine;
using testing::ExpectPoolAtBaseline;
using testing::MakeEngine;
using testing::MakeRequest;
using testing::RecordingObserver;
using testing::TestCostModel;

EngineConfig Config(int64_t kv_blocks, bool cache = false) {
  EngineConfig c;
  c.scheduler.policy = "decode-first";
  c.scheduler.max_batched_tokens = 256;
  c.scheduler.max_running = 16;
  c.scheduler.chunk_tokens = 256;
  c.block_tokens = 16;
  c.kv_blocks = kv_blocks;
  c.prefix_cache.enabled = cache;
  return c;
}

TEST(EngineImport, ImportedRequestDecodesWithoutRecomputingItsPrompt) {
  const TestCostModel cost(Duration::Nanos(1'000'000), Duration::Nanos(100'000), Duration::Nanos(500'000));
  RecordingObserver obs;
  auto e = MakeEngine(Config(100), cost, &obs);
  const Request r = MakeRequest(1, SimTime(), 100, 4);
  ASSERT_TRUE(e->BeginImport(r, SimTime()).has_value());
  // 100 prompt tokens: 7 blocks held while the KV moves; nothing to schedule yet.
  EXPECT_EQ(e->pool().used_count(), 7);
  EXPECT_EQ(e->importing_count(), 1);
  EXPECT_FALSE(e->HasWork());
  EXPECT_EQ(e->outstanding_tokens(), 3);  // only the answer is left to compute here
  ASSERT_TRUE(e->CheckInvariants().ok());

  const SimTime arrived = SimTime::FromNanos(5'000'000);
  e->FinishImport(1, arrived);
  EXPECT_EQ(e->importing_count(), 0);
  const SimTime end = DrainEngine(*e, arrived);
  const RequestOutcome& o = obs.outcomes.at(1);
  EXPECT_EQ(o.status, RequestStatus::kOk);
  EXPECT_EQ(o.first_token, arrived);  // the first token travels with the KV
  EXPECT_EQ(o.output_tokens, 4);
  // Three decode steps of 1.5 ms, no prefill here.
  EXPECT_EQ(e->stats().prefill_tokens, 0);
  EXPECT_EQ(e->stats().decode_tokens, 3);
  EXPECT_EQ(end.ns() - arrived.ns(), 4'500'000);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineImport, ImportNeedsFreeBlocksAndNeverPreempts) {
  const TestCostModel cost(Duration::Nanos(1'000'000), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(Config(10), cost, &obs);
  e->Submit(MakeRequest(1, SimTime(), 100, 50), SimTime());  // 7 blocks once admitted
  const auto end = e->StartStep(SimTime());
  ASSERT_TRUE(end);
  e->FinishStep(*end);
  EXPECT_EQ(e->pool().used_count(), 7);
  EXPECT_FALSE(e->BeginImport(MakeRequest(2, SimTime(), 64, 5), *end).has_value());  // needs 4 of 3 free
  EXPECT_EQ(e->pool().used_count(), 7);
  EXPECT_EQ(e->live_requests(), 1);
  EXPECT_EQ(e->stats().preemptions, 0);
  EXPECT_TRUE(e->BeginImport(MakeRequest(3, SimTime(), 48, 5), *end).has_value());  // 3 blocks fit
  e->AbortImport(3);
  DrainEngine(*e, *end);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineImport, AbortAndCancelReleaseTheDestinationBlocksUnpublished) {
  const TestCostModel cost(Duration::Nanos(1'000'000), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(Config(100, /*cache=*/true), cost, &obs);
  ASSERT_TRUE(e->BeginImport(MakeRequest(1, SimTime(), 160, 5), SimTime()).has_value());
  ASSERT_TRUE(e->BeginImport(MakeRequest(2, SimTime(), 160, 5), SimTime()).has_value());
  EXPECT_EQ(e->pool().used_count(), 20);
  e->AbortImport(1);  // no outcome: the fleet decides what follows
  EXPECT_EQ(obs.outcomes.count(1), 0u);
  e->Cancel(2, SimTime::FromNanos(1));
  EXPECT_EQ(obs.outcomes.at(2).status, RequestStatus::kCancelled);
  EXPECT_EQ(e->pool().cached_count(), 0);  // nothing that never arrived is published
  ExpectPoolAtBaseline(*e);
}

TEST(EngineImport, ImportedFullBlocksArePublishedAfterTheFirstDecodeStep) {
  const TestCostModel cost(Duration::Nanos(1'000'000), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(Config(100, /*cache=*/true), cost, &obs);
  ASSERT_TRUE(e->BeginImport(MakeRequest(1, SimTime(), 160, 3), SimTime()).has_value());
  e->FinishImport(1, SimTime());
  DrainEngine(*e, SimTime());
  EXPECT_EQ(e->pool().cached_count(), 10);  // 160 prompt tokens = 10 full blocks
  // The same prompt submitted normally now hits all but its last block.
  e->Submit(MakeRequest(1, SimTime::FromNanos(10'000'000), 160, 2), SimTime::FromNanos(10'000'000));
  DrainEngine(*e, SimTime::FromNanos(10'000'000));
  EXPECT_EQ(obs.outcomes.at(1).cached_tokens, 144);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineImport, BlocksThisReplicaAlreadyCachesDoNotMove) {
  const TestCostModel cost(Duration::Nanos(1'000'000), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(Config(100, /*cache=*/true), cost, &obs);
  ASSERT_EQ(e->BeginImport(MakeRequest(1, SimTime(), 160, 3), SimTime()), 160);  // a cold cache: all of it
  e->FinishImport(1, SimTime());
  DrainEngine(*e, SimTime());
  // The same content again: 9 of its 10 full blocks are here (the last token's block is
  // always recomputed or moved), so 16 tokens' KV moves.
  const SimTime later = SimTime::FromNanos(10'000'000);
  ASSERT_EQ(e->BeginImport(MakeRequest(1, later, 160, 3), later), 16);
  EXPECT_EQ(e->pool().used_count(), 10);
  EXPECT_EQ(e->stats().prefix_cache.hit_blocks, 10);
  EXPECT_EQ(e->stats().prefix_cache.saved_prefill_tokens, 0);  // the prefill replica computed it
  e->AbortImport(1);
  ExpectPoolAtBaseline(*e);
}

TEST(EngineImport, OneTokenAnswerEndsWhenTheKvArrives) {
  const TestCostModel cost(Duration::Nanos(1'000'000), Duration(), Duration());
  RecordingObserver obs;
  auto e = MakeEngine(Config(100), cost, &obs);
  ASSERT_TRUE(e->BeginImport(MakeRequest(1, SimTime(), 40, 1), SimTime()).has_value());
  e->FinishImport(1, SimTime::FromNanos(7));
  EXPECT_EQ(obs.outcomes.at(1).status, RequestStatus::kOk);
  EXPECT_EQ(obs.outcomes.at(1).finish, SimTime::FromNanos(7));
  ExpectPoolAtBaseline(*e);
}

}  // namespace
}  // namespace fleetplan
