// BuildReportFromFiles: records + SLO files in, report out; real vLLM runs; class checks.
#include "fleetplan/metrics/report_files.h"

#include <cctype>
#include <gtest/gtest.h>

#include "metrics/test_util.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using testing_util::Fixture;
using testing_util::WriteTemp;

Report MustBuild(const ReportFilesRequest& request) {
  Expected<Report> r = BuildReportFromFiles(request);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Report{};
}

// A bad file is an input error; a bad flag value (`--format`) a usage error.
std::string ErrorOf(const ReportFilesRequest& request, StatusCode code = StatusCode::kInvalidInput) {
  Expected<Report> r = BuildReportFromFiles(request);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), code);
  return r.status().message();
}

std::string VllmRun(const std::string& run) {
  return ::fleetplan::testing::SharedDataRoot() + "/profiles/llmservingsim/vllm-runs/" + run + "/requests.jsonl";
}

TEST(ReportFiles, VllmBenchResultAgainstHandComputedFigures) {
  // See tests/metrics/data/vllm_bench_result.json: 6 requests, one failed.
  ReportFilesRequest req;
  req.records_path = Fixture("vllm_bench_result.json");
  req.slo_path = WriteTemp("slo.yaml", "default: {ttft: 200ms, itl_max: 100ms}\n");
  const Report r = MustBuild(req);
  const ClassReport& c = *r.FindClass("default");
  EXPECT_EQ(c.requests, 6);
  EXPECT_EQ(c.status.of(RecordStatus::kError), 1);
  EXPECT_EQ(c.input_tokens, 4052);
  EXPECT_EQ(c.output_tokens, 15);
  // Qualified: #0 (TTFT 100 ms, ITL 30 ms) and #4 (80 ms, one token). #1 and #5 miss TTFT,
  // #3 misses ITL (200 ms), #2 failed.
  EXPECT_EQ(c.qualified, 2);
  EXPECT_EQ(c.slo_attainment, RoundForReport(2.0 / 6.0));
  EXPECT_EQ(r.window.length(), Ms(2'740));  // first start to the last finish (2.4 s + 0.34 s)
  EXPECT_EQ(c.throughput_rps, RoundForReport(5 / 2.74));
  EXPECT_EQ(c.goodput_rps, RoundForReport(2 / 2.74));
  const LatencySummary& ttft = c.of(LatencyMetric::kTtft);  // 80, 100, 120, 250, 300 ms
  EXPECT_EQ(ttft.p50, Ms(120));
  EXPECT_EQ(ttft.p90, Ms(300));
  EXPECT_DOUBLE_EQ(*ttft.mean_ns, 170e6);
  const LatencySummary& tpot = c.of(LatencyMetric::kTpot);  // 10, 25, 45, 200 ms
  EXPECT_EQ(tpot.count, 4);
  EXPECT_EQ(tpot.p50, Ms(25));
  EXPECT_EQ(tpot.max, Ms(200));
  EXPECT_EQ(c.of(LatencyMetric::kItlMax).p50, Ms(30));  // 10, 30, 50, 200 ms
  const LatencySummary& e2e = c.of(LatencyMetric::kE2e);  // 80, 175, 320, 340, 340 ms
  EXPECT_EQ(e2e.p50, Ms(320));
  EXPECT_EQ(e2e.max, Ms(340));
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].format, "vllm-bench");
  EXPECT_EQ(r.inputs[1].format, "slo");
  EXPECT_EQ(r.notes[0], "records format 'vllm-bench' detected from the file's keys");
}

TEST(ReportFiles, OlderVllmBenchResultUsesItsDuration) {
  ReportFilesRequest req;
  req.records_path = Fixture("vllm_bench_result_old.json");
  req.format = "vllm-bench";
  const Report r = MustBuild(req);
  EXPECT_EQ(r.window.length(), Sec(3));
  EXPECT_EQ(r.window.source, "vllm-bench: duration");
  EXPECT_EQ(r.fleet.throughput_rps, RoundForReport(5.0 / 3.0));
  EXPECT_FALSE(r.has_slo);
  EXPECT_EQ(r.fleet.qualified, 5);  // no objectives: every ok, valid request qualifies
}

struct RunFigures {
  const char* run;
  int64_t ttft_p50_ns, ttft_p99_ns, e2e_p50_ns, e2e_p99_ns, tpot_p50_ns, window_ns, output_tokens;
};

// Independently computed from the requests.jsonl files (Python, nearest rank, TTFT and
// E2E from queued_ts, TPOT rounded up to the ns).
class LlmServingSimRuns : public ::testing::TestWithParam<RunFigures> {};

TEST_P(LlmServingSimRuns, MatchIndependentFigures) {
  FP_REQUIRE_SHARED_DATA();
  const RunFigures& f = GetParam();
  ReportFilesRequest req;
  req.records_path = VllmRun(f.run);
  const Report r = MustBuild(req);
  const ClassReport& c = *r.FindClass("default");
  EXPECT_EQ(c.requests, 300);
  EXPECT_EQ(c.of(LatencyMetric::kTtft).p50, Ns(f.ttft_p50_ns));
  EXPECT_EQ(c.of(LatencyMetric::kTtft).p99, Ns(f.ttft_p99_ns));
  EXPECT_EQ(c.of(LatencyMetric::kE2e).p50, Ns(f.e2e_p50_ns));
  EXPECT_EQ(c.of(LatencyMetric::kE2e).p99, Ns(f.e2e_p99_ns));
  EXPECT_EQ(c.of(LatencyMetric::kTpot).p50, Ns(f.tpot_p50_ns));
  EXPECT_EQ(r.window.length(), Ns(f.window_ns));
  EXPECT_EQ(c.output_tokens, f.output_tokens);
  EXPECT_EQ(r.inputs[0].format, "llmservingsim");
}

INSTANTIATE_TEST_SUITE_P(
    VllmRuns, LlmServingSimRuns,
    ::testing::Values(RunFigures{"RTX4090/Llama-3.1-8B", 60062706689, 137352043614, 83275370124,
                                 153625428175, 30758326, 183567455512, 195753},
                      RunFigures{"RTXPRO6000/Llama-3.1-8B", 9387609420, 19754146034, 29612160521,
                                 37638603141, 33400679, 65926441144, 195753},
                      RunFigures{"RTXPRO6000/Qwen3-30B-A3B-Instruct-2507", 138363039, 9587590993,
                                 31447318181, 43848447899, 48855526, 64017055871, 199486}),
    [](const ::testing::TestParamInfo<RunFigures>& param_info) {
      // "RTX4090/Llama-3.1-8B" -> "RTX4090_Llama_3_1_8B": test names allow only [A-Za-z0-9_].
      std::string name = param_info.param.run;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

constexpr const char* kRecords =
    R"({"id":0,"class":"interactive","arrival_s":0,"first_token_s":0.2,"finish_s":1.2,"status":"ok","input_tokens":100,"output_tokens":11,"itl_max_ms":120})"
    "\n"
    R"({"id":1,"class":"document","arrival_s":0.5,"first_token_s":3,"finish_s":5,"status":"ok","input_tokens":4000,"output_tokens":21})"
    "\n";

TEST(ReportFiles, ScenarioFileDeclaresClassesThatMayHaveNoRecords) {
  FP_REQUIRE_SHARED_DATA();
  ReportFilesRequest req;
  req.records_path = WriteTemp("records.jsonl", kRecords);
  req.slo_path = ::fleetplan::testing::SharedPath("../spec/scenario-v1.yaml");
  const Report r = MustBuild(req);
  ASSERT_EQ(r.classes.size(), 3u);
  EXPECT_EQ(r.classes[0].name, "interactive");
  EXPECT_EQ(r.FindClass("research")->requests, 0);
  EXPECT_EQ(r.FindClass("research")->slo_attainment, std::nullopt);
  EXPECT_EQ(r.FindClass("interactive")->qualified, 1);  // 200 ms TTFT, 120 ms ITL
  EXPECT_EQ(r.FindClass("document")->qualified, 0);     // TTFT 2.5 s > 2 s
  EXPECT_EQ(r.inputs[1].format, "scenario");
}

TEST(ReportFiles, SloForAClassWithNoRecordsIsLocated) {
  ReportFilesRequest req;
  req.records_path = WriteTemp("records.jsonl", kRecords);
  req.slo_path = WriteTemp("slo.yaml",
                           "interactive: {ttft: 600ms, itl_max: 150ms}\ndocument: {ttft: 2s}\n"
                           "reserch: {e2e: 10m}\n");
  EXPECT_EQ(ErrorOf(req),
            req.slo_path.value() + ":3:10: reserch: no record in '" + req.records_path +
                "' has class 'reserch' (classes in the records: interactive, document)\n"
                "    3 | reserch: {e2e: 10m}\n"
                "      |          ^\n");
}

TEST(ReportFiles, RecordClassWithoutSloIsLocatedInTheRecords) {
  ReportFilesRequest req;
  req.records_path = WriteTemp("records.jsonl", kRecords);
  req.slo_path = WriteTemp("slo.yaml", "interactive: {ttft: 600ms}\n");
  EXPECT_EQ(ErrorOf(req),
            req.records_path + ":2:17: class: unknown class 'document' (valid: interactive); the "
            "classes are those " + *req.slo_path + " declares\n"
            "    2 | " + std::string(kRecords).substr(std::string(kRecords).find('\n') + 1,
                                                    std::string(kRecords).size() - std::string(kRecords).find('\n') - 2) +
                "\n"
                "      |                 ^\n");
}

TEST(ReportFiles, ItlObjectiveOnAFormatWithoutGapsIsAnError) {
  FP_REQUIRE_SHARED_DATA();
  ReportFilesRequest req;
  req.records_path = VllmRun("RTXPRO6000/Llama-3.1-8B");
  req.slo_path = WriteTemp("slo.yaml", "default: {itl_max: 100ms}\n");
  EXPECT_EQ(ErrorOf(req),
            "--class: class 'default' has an itl_max objective, but the llmservingsim format "
            "records no inter-token gaps");
}

TEST(ReportFiles, DefaultClassMustBeDeclared) {
  FP_REQUIRE_SHARED_DATA();
  ReportFilesRequest req;
  req.records_path = VllmRun("RTXPRO6000/Llama-3.1-8B");
  req.slo_path = WriteTemp("slo.yaml", "chat: {ttft: 1s}\n");
  EXPECT_EQ(ErrorOf(req),
            "--class: unknown class 'default' (valid: chat); the classes are those " + *req.slo_path +
                " declares");
}

TEST(ReportFiles, BadFormatFlagListsTheFormats) {
  ReportFilesRequest req;
  req.records_path = WriteTemp("records.jsonl", kRecords);
  req.format = "fleetpan";
  EXPECT_EQ(ErrorOf(req, StatusCode::kUsage),
            "--format: unknown records format 'fleetpan'; did you mean 'fleetplan'? (valid: "
            "fleetplan, llmservingsim, vllm-bench)");
}

}  // namespace
}  // namespace fleetplan
