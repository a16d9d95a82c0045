// ReportBuilder / ComputeReport: per-class objectives, attainment, rates and the fleet.
#include "fleetplan/metrics/report.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "fleetplan/core/yaml.h"
#include "metrics/test_util.h"

namespace fleetplan {
namespace {

using testing_util::OkRecord;

SloSpec Slo(const std::string& yaml) {
  auto doc = YamlDocument::LoadString(yaml, "slo.yaml");
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  auto slo = ParseSlo(doc->root());
  EXPECT_TRUE(slo.ok()) << slo.status().message();
  return *slo;
}

Report MustReport(const std::vector<std::string>& classes, const std::vector<RequestRecord>& records,
                  const SloSpec& slo, const ReportOptions& options = {}) {
  Expected<Report> report = ComputeReport(classes, records, slo, options);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return *report;
}

const ObjectiveResult& ObjectiveOf(const ClassReport& c, Objective o) {
  auto it = std::find_if(c.objectives.begin(), c.objectives.end(),
                         [&](const ObjectiveResult& r) { return r.objective == o; });
  EXPECT_NE(it, c.objectives.end());
  return *it;
}

// Two classes with opposite objectives: interactive bounds TTFT, batch bounds E2E only.
const char* kTwoClasses = "interactive: {ttft: 500ms, tpot: 50ms}\nbatch: {e2e: 60s}\n";
enum : ClassId { kInteractive = 0, kBatch = 1 };

TEST(Report, SlowBatchRequestDoesNotFailInteractive) {
  std::vector<RequestRecord> records = {
      OkRecord(0, kInteractive, 0, 200, 10, 20),
      OkRecord(1, kInteractive, 10, 300, 10, 30),
      OkRecord(2, kBatch, 20, 30'000, 100, 250),  // TTFT 30 s: fine for batch, E2E 54.75 s
  };
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses));
  const ClassReport& interactive = *r.FindClass("interactive");
  const ClassReport& batch = *r.FindClass("batch");
  EXPECT_EQ(interactive.qualified, 2);
  EXPECT_EQ(interactive.slo_attainment, 1.0);
  EXPECT_EQ(interactive.of(LatencyMetric::kTtft).max, Ms(300));  // the 30 s TTFT is not here
  EXPECT_EQ(batch.qualified, 1);
  EXPECT_EQ(batch.slo_attainment, 1.0);
  EXPECT_EQ(r.fleet.qualified, 3);
}

TEST(Report, SlowInteractiveRequestDoesNotFailBatch) {
  std::vector<RequestRecord> records = {
      OkRecord(0, kInteractive, 0, 900, 10, 20),  // TTFT 900 ms > 500 ms
      OkRecord(1, kBatch, 0, 900, 100, 20),       // the same TTFT is fine for batch
  };
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses));
  EXPECT_EQ(r.FindClass("interactive")->qualified, 0);
  EXPECT_EQ(r.FindClass("batch")->qualified, 1);
  EXPECT_EQ(r.fleet.worst_class, "interactive");
  EXPECT_EQ(r.fleet.worst_class_attainment, 0.0);
}

TEST(Report, FleetFiguresDoNotAverageAwayOneClassTail) {
  // 99 fast batch requests and one interactive class whose every request misses TTFT.
  std::vector<RequestRecord> records;
  for (int i = 0; i < 99; ++i) records.push_back(OkRecord(i, kBatch, i * 10, 100, 10, 10));
  for (int i = 0; i < 10; ++i) records.push_back(OkRecord(100 + i, kInteractive, i * 10, 2'000, 10, 10));
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses));
  // Fleet attainment is 99/109, but the failing class is named with its own figure.
  EXPECT_DOUBLE_EQ(*r.fleet.slo_attainment, RoundForReport(99.0 / 109.0));
  EXPECT_EQ(r.fleet.worst_class, "interactive");
  EXPECT_EQ(r.fleet.worst_class_attainment, 0.0);
  // The interactive tail stays in its class: p50 TTFT 2 s, not diluted by batch's 100 ms.
  EXPECT_EQ(r.FindClass("interactive")->of(LatencyMetric::kTtft).p50, Ms(2'000));
  EXPECT_EQ(r.FindClass("batch")->of(LatencyMetric::kTtft).p99, Ms(100));
  // Goodput counts only qualified requests.
  EXPECT_EQ(r.fleet.qualified_in_window, 99);
  EXPECT_EQ(r.FindClass("interactive")->goodput_rps, 0.0);
}

TEST(Report, SlowFirstTokenBreaksTtftButUnchangedDecodePassesTpot) {
  // Same decode sequence (19 gaps of 40 ms), first token 100 ms vs 1500 ms.
  std::vector<RequestRecord> records = {
      OkRecord(0, kInteractive, 0, 100, 20, 40),
      OkRecord(1, kInteractive, 0, 1'500, 20, 40),
  };
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses));
  const ClassReport& c = *r.FindClass("interactive");
  EXPECT_EQ(ObjectiveOf(c, Objective::kTtft).met, 1);
  EXPECT_EQ(ObjectiveOf(c, Objective::kTpot).met, 2);  // TPOT 40 ms <= 50 ms for both
  EXPECT_EQ(c.of(LatencyMetric::kTpot).max, Ms(40));
  EXPECT_EQ(c.qualified, 1);
  EXPECT_EQ(c.slo_attainment, 0.5);
}

TEST(Report, TpotAtExactlyTheTargetMeetsIt) {
  // 2 tokens, gap exactly 50 ms: TPOT = 50 ms meets "tpot: 50ms"; 50 ms + 1 ns does not.
  RequestRecord at = OkRecord(0, kInteractive, 0, 100, 2, 50);
  RequestRecord over = at;
  over.id = 1;
  *over.finish += Ns(1);
  const Report r = MustReport({"interactive", "batch"}, {at, over}, Slo(kTwoClasses));
  const ClassReport& c = *r.FindClass("interactive");
  EXPECT_EQ(ObjectiveOf(c, Objective::kTpot).met, 1);
  EXPECT_EQ(c.of(LatencyMetric::kTpot).max, Ms(50) + Ns(1));  // rounded up, never down
}

TEST(Report, FailedAndInvalidRequestsDoNotQualifyButAreCounted) {
  RequestRecord ok = OkRecord(0, kInteractive, 0, 100, 10, 10);
  RequestRecord invalid = OkRecord(1, kInteractive, 0, 100, 10, 10);
  invalid.valid = false;
  RequestRecord timeout;
  timeout.id = 2;
  timeout.class_id = kInteractive;
  timeout.status = RecordStatus::kTimeout;
  timeout.input_tokens = 50;
  RequestRecord rejected = timeout;
  rejected.id = 3;
  rejected.status = RecordStatus::kRejected;
  const Report r = MustReport({"interactive", "batch"}, {ok, invalid, timeout, rejected}, Slo(kTwoClasses));
  const ClassReport& c = *r.FindClass("interactive");
  EXPECT_EQ(c.requests, 4);
  EXPECT_EQ(c.status.of(RecordStatus::kOk), 2);
  EXPECT_EQ(c.status.of(RecordStatus::kTimeout), 1);
  EXPECT_EQ(c.status.of(RecordStatus::kRejected), 1);
  EXPECT_EQ(c.invalid_outputs, 1);
  EXPECT_EQ(c.qualified, 1);
  EXPECT_EQ(c.slo_attainment, 0.25);
  EXPECT_EQ(ObjectiveOf(c, Objective::kTtft).met, 2);  // the invalid one is fast, just wrong
  EXPECT_EQ(c.of(LatencyMetric::kTtft).count, 2);     // distributions: ok requests only
  EXPECT_EQ(c.input_tokens, 300);
}

TEST(Report, DefaultWindowIsFirstArrivalToLastFinish) {
  std::vector<RequestRecord> records = {
      OkRecord(0, kBatch, 1'000, 100, 2, 900),  // finishes at 2 s
      OkRecord(1, kBatch, 3'000, 500, 2, 500),  // finishes at 4 s
  };
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses));
  EXPECT_EQ(r.window.start, SimTime::FromNanos(Sec(1).ns()));
  EXPECT_EQ(r.window.end, SimTime::FromNanos(Sec(4).ns()));
  EXPECT_EQ(r.window.source, "first arrival to last finish");
  EXPECT_EQ(r.fleet.throughput_rps, RoundForReport(2.0 / 3.0));
}

TEST(Report, GivenWindowByFinishCountsOnlyRequestsFinishingInsideIt) {
  std::vector<RequestRecord> records = {
      OkRecord(0, kBatch, 0, 100, 2, 900),     // finishes at 1 s
      OkRecord(1, kBatch, 500, 500, 2, 500),   // finishes at 1.5 s
      OkRecord(2, kBatch, 1'000, 4'000, 2, 0),  // finishes at 5 s: outside a 2 s window
  };
  ReportOptions options;
  options.window = Sec(2);
  options.window_by = WindowBy::kFinish;
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses), options);
  EXPECT_EQ(r.window.length(), Sec(2));
  EXPECT_EQ(r.window.source, "--window");
  EXPECT_EQ(r.window.by, WindowBy::kFinish);
  EXPECT_EQ(r.fleet.ok_in_window, 2);
  EXPECT_EQ(r.fleet.throughput_rps, 1.0);
  EXPECT_EQ(r.fleet.requests, 3);  // counts and distributions still cover every record
  EXPECT_EQ(r.FindClass("batch")->of(LatencyMetric::kE2e).count, 3);
}

TEST(Report, GivenWindowByArrivalCountsTheCohortWheneverItFinishes) {
  std::vector<RequestRecord> records = {
      OkRecord(0, kBatch, 0, 100, 2, 900),      // finishes at 1 s
      OkRecord(1, kBatch, 1'000, 4'000, 2, 0),  // arrives inside a 2 s window, finishes at 5 s
      OkRecord(2, kBatch, 2'500, 100, 2, 0),    // arrives after it
  };
  ReportOptions options;
  options.window = Sec(2);
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses), options);
  EXPECT_EQ(r.window.by, WindowBy::kArrival);
  EXPECT_EQ(r.fleet.ok_in_window, 2);
  EXPECT_EQ(r.fleet.throughput_rps, 1.0);
}

TEST(Report, EmptyWindowIsAnError) {
  RequestRecord rejected;
  rejected.status = RecordStatus::kRejected;
  rejected.class_id = kBatch;
  Expected<Report> r = ComputeReport({"interactive", "batch"}, std::vector<RequestRecord>{rejected},
                                     Slo(kTwoClasses));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "no record has a finish time, so the measurement window (first arrival to last "
            "finish) is empty; give its length with --window");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
}

TEST(Report, NoRecordsIsAnError) {
  Expected<Report> r = ComputeReport({"interactive", "batch"}, {}, Slo(kTwoClasses));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no records to report on");
}

TEST(Report, BadInMemoryRecordIsAnErrorNotACrash) {
  RequestRecord r = OkRecord(7, kBatch, 1'000, 100, 2, 10);
  r.finish = SimTime::FromNanos(Ms(500).ns());
  Expected<Report> report = ComputeReport({"interactive", "batch"}, std::vector<RequestRecord>{r},
                                          Slo(kTwoClasses));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "record 0 (id 7): finish_s: finish_s 0.5 is before arrival_s 1; a request cannot "
            "finish before it arrives");
}

TEST(Report, SloClassMissingFromClassTableIsLocated) {
  Expected<Report> r = ComputeReport({"interactive"}, {}, Slo(kTwoClasses));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "slo.yaml:2:8: batch: unknown class 'batch' (valid: interactive)\n"
            "    2 | batch: {e2e: 60s}\n"
            "      |        ^\n");
}

TEST(Report, PercentilesAreExactNearestRank) {
  // TTFTs 1..100 ms: p50 = 50, p90 = 90, p95 = 95, p99 = 99, max = 100, mean = 50.5.
  std::vector<RequestRecord> records;
  for (int i = 1; i <= 100; ++i) records.push_back(OkRecord(i, kBatch, 0, i, 1, 0));
  std::reverse(records.begin(), records.end());
  const LatencySummary s = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses))
                               .FindClass("batch")
                               ->of(LatencyMetric::kTtft);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.p50, Ms(50));
  EXPECT_EQ(s.p90, Ms(90));
  EXPECT_EQ(s.p95, Ms(95));
  EXPECT_EQ(s.p99, Ms(99));
  EXPECT_EQ(s.max, Ms(100));
  EXPECT_DOUBLE_EQ(*s.mean_ns, 50.5e6);
}

TEST(Report, HistogramAtTargetEdgeAgreesWithAttainment) {
  // TTFTs straddle the 500 ms target by one nanosecond each way.
  std::vector<RequestRecord> records;
  for (int i = 0; i < 5; ++i) records.push_back(OkRecord(i, kInteractive, 0, 500, 1, 0));
  RequestRecord over = OkRecord(9, kInteractive, 0, 500, 1, 0);
  *over.first_token += Ns(1);
  *over.finish += Ns(1);
  records.push_back(over);
  const Report r = MustReport({"interactive", "batch"}, records, Slo(kTwoClasses));
  const auto& edges = r.edges[static_cast<size_t>(LatencyMetric::kTtft)].edges_ns();
  const auto edge = std::find(edges.begin(), edges.end(), Ms(500).ns());
  ASSERT_NE(edge, edges.end()) << "every SLO target is an edge";
  const ClassReport& c = *r.FindClass("interactive");
  const auto& counts = c.histograms[static_cast<size_t>(LatencyMetric::kTtft)];
  int64_t at_or_below = 0;
  for (size_t b = 0; b <= static_cast<size_t>(edge - edges.begin()); ++b) at_or_below += counts[b];
  EXPECT_EQ(at_or_below, ObjectiveOf(c, Objective::kTtft).met);
  EXPECT_EQ(at_or_below, 5);
}

TEST(Report, SameRecordsInAnyOrderGiveTheSameJson) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < 200; ++i) {
    records.push_back(OkRecord(i, i % 3 == 0 ? kBatch : kInteractive, i * 7, 50 + (i * 37) % 900,
                               1 + (i * 13) % 300, (i * 11) % 60));
  }
  const Json a = ReportToJson(MustReport({"interactive", "batch"}, records, Slo(kTwoClasses)));
  std::reverse(records.begin(), records.end());
  std::rotate(records.begin(), records.begin() + 77, records.end());
  const Json b = ReportToJson(MustReport({"interactive", "batch"}, records, Slo(kTwoClasses)));
  EXPECT_EQ(*CanonicalJson(a), *CanonicalJson(b));
}

TEST(Report, E2eByOutputBucketsUseTheClassTargets) {
  const SloSpec slo = Slo(
      "research:\n"
      "  e2e_by_output:\n"
      "    - {max_output: 100, e2e: 10s}\n"
      "    - {max_output: 1000, e2e: 60s}\n");
  std::vector<RequestRecord> records = {
      OkRecord(0, 0, 0, 1'000, 100, 50),    // 100 tokens, E2E 5.95 s: bucket 1, met
      OkRecord(1, 0, 0, 1'000, 101, 100),   // 101 tokens, E2E 11 s: bucket 2 (60 s), met
      OkRecord(2, 0, 0, 1'000, 900, 100),   // 900 tokens, E2E 90.9 s: bucket 2, missed
      OkRecord(3, 0, 0, 1'000, 5'000, 10),  // 5000 tokens: open bucket, no target
  };
  const Report r = MustReport({"research"}, records, slo);
  const ClassReport& c = *r.FindClass("research");
  ASSERT_EQ(c.e2e_by_output.size(), 3u);
  EXPECT_EQ(c.e2e_by_output[0].max_output, 100);
  EXPECT_EQ(c.e2e_by_output[0].e2e.count, 1);
  EXPECT_EQ(c.e2e_by_output[0].met, 1);
  EXPECT_EQ(c.e2e_by_output[1].e2e.count, 2);
  EXPECT_EQ(c.e2e_by_output[1].met, 1);
  EXPECT_EQ(c.e2e_by_output[2].max_output, std::nullopt);
  EXPECT_EQ(c.e2e_by_output[2].target, std::nullopt);
  EXPECT_EQ(c.e2e_by_output[2].e2e.count, 1);
  EXPECT_EQ(c.qualified, 3);  // no target applies to the 5000-token answer
  EXPECT_EQ(ObjectiveOf(c, Objective::kE2eByOutput).met, 3);
}

TEST(Report, ClassWithoutBucketsGetsTheDefaultOutputBuckets) {
  const Report r = MustReport({"interactive", "batch"}, {OkRecord(0, kBatch, 0, 10, 300, 1)},
                              Slo(kTwoClasses));
  const ClassReport& c = *r.FindClass("batch");
  ASSERT_EQ(c.e2e_by_output.size(), kDefaultOutputBuckets.size() + 1);
  EXPECT_EQ(c.e2e_by_output[2].max_output, 512);
  EXPECT_EQ(c.e2e_by_output[2].e2e.count, 1);  // 300 tokens: 256 < 300 <= 512
}

TEST(Report, JsonHasTheDocumentedKeys) {
  const Report r = MustReport({"interactive", "batch"},
                              {OkRecord(0, kInteractive, 0, 100, 10, 10), OkRecord(1, kBatch, 0, 100, 10, 10)},
                              Slo(kTwoClasses));
  const Json j = ReportToJson(r);
  for (const char* key : {"requests", "ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms", "slo_attainment",
                          "throughput_rps", "goodput_rps", "status", "objectives", "e2e_by_output",
                          "histograms"}) {
    EXPECT_TRUE(j["classes"]["interactive"].contains(key)) << key;
  }
  for (const char* key : {"p50", "p90", "p95", "p99", "max", "mean", "count"}) {
    EXPECT_TRUE(j["classes"]["interactive"]["ttft_ms"].contains(key)) << key;
  }
  for (const char* key : {"requests", "input_tokens", "output_tokens", "throughput_rps", "goodput_rps"}) {
    EXPECT_TRUE(j["fleet"].contains(key)) << key;
  }
  EXPECT_EQ(j["classes"]["interactive"]["ttft_ms"]["p50"], 100.0);
  EXPECT_EQ(j["classes"]["interactive"]["objectives"]["ttft"]["target_ms"], 500.0);
  EXPECT_EQ(j["window"]["duration_s"], 0.19);
  EXPECT_TRUE(CanonicalJson(j).ok());
}

TEST(Report, TextIsAnAlignedTable) {
  const Report r = MustReport({"interactive", "batch"},
                              {OkRecord(0, kInteractive, 0, 100, 10, 10), OkRecord(1, kBatch, 0, 2'000, 10, 10)},
                              Slo(kTwoClasses));
  const std::string text = FormatReportText(r);
  EXPECT_EQ(text,
            "measurement window: 0 s .. 2.09 s (2.09 s; first arrival to last finish; rates count the "
            "requests that arrived in it)\n"
            "\n"
            "class        requests  ok  not ok      slo  goodput/s  thru/s  ttft p50  ttft p99  tpot p50  "
            "tpot p99  itl-max p99  e2e p50  e2e p99\n"
            "interactive         1   1       0  100.00%      0.478   0.478     100.0     100.0      10.0      "
            "10.0         10.0    190.0    190.0\n"
            "batch               1   1       0  100.00%      0.478   0.478    2000.0    2000.0      10.0      "
            "10.0         10.0   2090.0   2090.0\n"
            "(fleet)             2   2       0  100.00%      0.957   0.957\n"
            "(latencies in ms over ok requests; slo = qualified / requests; rates per second of the window)\n"
            "\n"
            "objectives met (share of requests):\n"
            "interactive  ttft <= 500.0 ms: 100.00%   tpot <= 50.0 ms: 100.00%\n"
            "batch        e2e <= 60000.0 ms: 100.00%\n"
            "\n"
            "worst class: batch (100.00%)\n");
}

}  // namespace
}  // namespace fleetplan
