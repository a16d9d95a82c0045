// `fleetplan report`: the verb end to end, in process (cli::Main).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "cli/verbs.h"
#include "fleetplan/core/json.h"

#include "support/shared_data.h"

namespace fleetplan::cli {
namespace {

using VerbRun = testing::CliRun;

VerbRun Report(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  return testing::RunFleetplan(std::move(args));
}

std::string Temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::string kVllmRun =
    ::fleetplan::testing::SharedDataRoot() + "/profiles/llmservingsim/vllm-runs/RTXPRO6000/Llama-3.1-8B/requests.jsonl";

constexpr const char* kRecords =
    R"({"id":0,"class":"interactive","arrival_s":0,"first_token_s":0.2,"finish_s":1.2,"status":"ok","input_tokens":100,"output_tokens":11,"itl_max_ms":120})"
    "\n"
    R"({"id":1,"class":"document","arrival_s":0.5,"first_token_s":3,"finish_s":5,"status":"ok","input_tokens":4000,"output_tokens":21})"
    "\n";

TEST(ReportVerb, PrintsATextTable) {
  FP_REQUIRE_SHARED_DATA();
  const VerbRun r = Report({"--records", kVllmRun, "--slo", Temp("slo.yaml", "default: {ttft: 10s, tpot: 35ms}\n")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("class    requests   ok  not ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ndefault       300  300       0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: llmservingsim: arrival = queued_ts"), std::string::npos) << r.out;
}

TEST(ReportVerb, JsonIsCanonicalIndentedAndCarriesDigests) {
  FP_REQUIRE_SHARED_DATA();
  const std::string slo = Temp("slo.yaml", "default: {ttft: 10s, tpot: 35ms}\n");
  const VerbRun r = Report({"--records", kVllmRun, "--slo", slo, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(*PrettyJson(j), r.out);
  EXPECT_EQ(j["classes"]["default"]["requests"], 300);
  EXPECT_EQ(j["fleet"]["requests"], 300);
  EXPECT_EQ(j["inputs"]["records"]["format"], "llmservingsim");
  EXPECT_EQ(j["inputs"]["records"]["digest"].get<std::string>().substr(0, 7), "sha256:");
  EXPECT_EQ(j["inputs"]["slo"]["path"], slo);
  EXPECT_EQ(j["window"]["source"], "first arrival to last finish");
  // Twice, byte for byte the same.
  EXPECT_EQ(Report({"--records", kVllmRun, "--slo", slo, "--json"}).out, r.out);
}

TEST(ReportVerb, WindowFlagSetsTheWindow) {
  FP_REQUIRE_SHARED_DATA();
  const VerbRun r = Report({"--records", kVllmRun, "--window", "30s", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["window"]["duration_s"], 30.0);
  EXPECT_EQ(j["window"]["source"], "--window");
}

TEST(ReportVerb, BadWindowIsAUsageError) {
  FP_REQUIRE_SHARED_DATA();
  const VerbRun r = Report({"--records", kVllmRun, "--window", "30"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--window: expected a duration with a unit (ns, us, ms, s, m, min, h), got '30'\n");
}

TEST(ReportVerb, BadRecordIsLocatedWithExitCode3) {
  const std::string records = Temp("bad.jsonl", std::string(kRecords) +
                                                    R"({"id":2,"class":"interactive","arrival_s":4,"first_token_s":3.5)" "\n");
  const VerbRun r = Report({"--records", records, "--format", "fleetplan"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, records + ":3:64: truncated: the line ends before the object's '}'\n"
                   "    3 | {\"id\":2,\"class\":\"interactive\",\"arrival_s\":4,\"first_token_s\":3.5\n"
                   "      |                                                                ^\n");
}

TEST(ReportVerb, MissingRecordsFlagIsAUsageError) {
  const VerbRun r = Report({});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--records is required"), std::string::npos) << r.err;
}

TEST(ReportVerb, ScenarioAsSloFile) {
  FP_REQUIRE_SHARED_DATA();
  const VerbRun r = Report({"--records", Temp("records.jsonl", kRecords), "--slo",
                            ::fleetplan::testing::SharedPath("../spec/scenario-v1.yaml"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["classes"]["interactive"]["slo_attainment"], 1.0);
  EXPECT_EQ(j["classes"]["document"]["slo_attainment"], 0.0);
  EXPECT_EQ(j["classes"]["research"]["requests"], 0);
  EXPECT_EQ(j["fleet"]["worst_class"]["name"], "document");
  EXPECT_EQ(j["inputs"]["slo"]["format"], "scenario");
}

}  // namespace
}  // namespace fleetplan::cli
