// Trace statistics: exact nearest-rank percentiles, block counts against a reference
// set, and compaction that never changes the answer.
#include "fleetplan/workload/trace_stats.h"

#include <set>

#include <gtest/gtest.h>

#include "fleetplan/workload/content.h"

namespace fleetplan {
namespace {

Request Make(RequestId id, int64_t t_ms, ClassId c, std::vector<PromptSegment> prompt, int64_t out) {
  Request r;
  r.id = id;
  r.arrival = SimTime::Zero() + Ms(t_ms);
  r.class_id = c;
  r.prompt = std::move(prompt);
  r.output_tokens = out;
  return r;
}

TEST(CountHistogramTest, NearestRankPercentiles) {
  CountHistogram h;
  for (int64_t v = 1; v <= 100; ++v) h.Add(v);
  EXPECT_EQ(h.Percentile(0.5), 50);
  EXPECT_EQ(h.Percentile(0.9), 90);
  EXPECT_EQ(h.Percentile(0.99), 99);
  EXPECT_EQ(h.Percentile(1.0), 100);
  EXPECT_EQ(h.min(), 1);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  CountHistogram skew;
  for (int i = 0; i < 9; ++i) skew.Add(1);
  skew.Add(1000);
  EXPECT_EQ(skew.Percentile(0.9), 1);
  EXPECT_EQ(skew.Percentile(0.91), 1000);
}

TEST(TraceStatsTest, CountsSpanRateAndClasses) {
  WorkloadNames names{{"a", "b"}, {}, {}};
  TraceStatsAccumulator acc(16);
  acc.Add(Make(0, 0, 0, {{1, 32}}, 5));
  acc.Add(Make(1, 500, 1, {{1, 32}, {2, 8}}, 7));
  acc.Add(Make(2, 2000, 0, {{3, 16}}, 9));
  const TraceStats s = acc.Finish(names);
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.span(), Sec(2));
  EXPECT_DOUBLE_EQ(*s.rate_per_s, 1.0);  // (3 - 1) / 2 s
  ASSERT_EQ(s.classes.size(), 2u);
  EXPECT_EQ(s.classes[0].requests, 2);
  EXPECT_EQ(s.classes[0].output_tokens.max, 9);
  EXPECT_EQ(s.classes[1].prompt_tokens.p50, 40);
  // Blocks: 2 + 3 + 1 = 6; request 1 repeats request 0's two blocks.
  EXPECT_EQ(s.blocks_total, 6);
  EXPECT_EQ(s.blocks_distinct, 4);
  EXPECT_DOUBLE_EQ(s.reuse_ratio, 1.0 - 4.0 / 6.0);
  const Json j = s.ToJson();
  EXPECT_EQ(j["prefix_blocks"]["distinct"], 4);
  EXPECT_EQ(j["classes"]["b"]["requests"], 1);
  EXPECT_NE(s.ToText().find("6 blocks of 16 tokens, 4 distinct, reuse ratio 0.3333"), std::string::npos);
}

TEST(TraceStatsTest, SingleInstantHasNoRate) {
  WorkloadNames names{{"a"}, {}, {}};
  TraceStatsAccumulator acc;
  acc.Add(Make(0, 7, 0, {{1, 1}}, 1));
  const TraceStats s = acc.Finish(names);
  EXPECT_FALSE(s.rate_per_s.has_value());
  EXPECT_TRUE(s.ToJson()["rate_per_s"].is_null());
}

TEST(TraceStatsTest, CompactionMatchesAReferenceSet) {
  // Enough blocks to trigger several compactions, with heavy repetition.
  WorkloadNames names{{"a"}, {}, {}};
  TraceStatsAccumulator acc(4);
  std::set<BlockKey> reference;
  int64_t total = 0;
  for (int i = 0; i < 60000; ++i) {
    const std::vector<PromptSegment> prompt = {{static_cast<ContentId>(i % 7), 8},
                                               {static_cast<ContentId>(i % 5000), 4 + i % 3}};
    std::vector<BlockKey> keys;
    AppendBlockKeys(prompt, 4, 0, &keys);
    reference.insert(keys.begin(), keys.end());
    total += static_cast<int64_t>(keys.size());
    acc.Add(Make(i, i, 0, prompt, 1));
  }
  const TraceStats s = acc.Finish(names);
  EXPECT_EQ(s.blocks_total, total);
  EXPECT_EQ(s.blocks_distinct, static_cast<int64_t>(reference.size()));
}

}  // namespace
}  // namespace fleetplan
