// `fleetplan rollout compare` on records two simulated fleets wrote: a slower candidate
// fails, an identical one passes, a candidate that lost a class holds.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/in_scratch.h"
#include "support/small_scenarios.h"

namespace fleetplan {
namespace {

using testing::InScratch;
using testing::RunFleetplan;

class RolloutVerb : public InScratch {
 protected:
  void Simulate(const std::string& name, const std::string& text) {
    std::ofstream(name + ".yaml") << text;
    auto r = RunFleetplan({"simulate", name + ".yaml", "--quiet", "--out", name});
    ASSERT_EQ(r.code, 0) << r.err;
  }
};

TEST_F(RolloutVerb, ASlowerCandidateFailsAnIdenticalOnePassesAMissingClassHolds) {
  Simulate("base", testing::CanaryScenario("0.2ms"));
  Simulate("same", testing::CanaryScenario("0.2ms"));
  Simulate("slow", testing::CanaryScenario("0.6ms"));
  Simulate("chat", testing::CanaryScenario("0.2ms", testing::kChatOnly));

  auto same = RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline", "base/requests.jsonl"});
  EXPECT_EQ(same.code, 0) << same.err << same.out;
  EXPECT_NE(same.out.find("verdict: pass"), std::string::npos) << same.out;

  auto slow = RunFleetplan({"rollout", "compare", "--candidate", "slow/requests.jsonl", "--baseline",
                            "base/requests.jsonl", "--metric", "e2e_ms", "--json"});
  EXPECT_EQ(slow.code, 1);
  const Json j = Json::parse(slow.out);
  EXPECT_EQ(j["verdict"], "fail");
  const Json& median = j["metrics"]["e2e_ms"]["statistics"]["median"];
  EXPECT_EQ(median["strata"]["chat"]["verdict"], "fail");
  EXPECT_EQ(median["strata"]["docs"]["verdict"], "fail");
  EXPECT_GT(median["aggregate"]["effect"].get<double>(), 0.05);
  // Judged on the median and p95 by default; both name their statistic.
  EXPECT_EQ(j["policy"]["statistics"], Json::array({"median", "p95"}));
  EXPECT_EQ(j["metrics"]["e2e_ms"]["statistics"]["p95"]["statistic"], "p95");

  auto missing = RunFleetplan({"rollout", "compare", "--candidate", "chat/requests.jsonl", "--baseline",
                               "base/requests.jsonl", "--metric", "ttft_ms"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("verdict: hold"), std::string::npos) << missing.out;
  EXPECT_NE(missing.err.find("no data for docs"), std::string::npos) << missing.err;

  EXPECT_EQ(RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline",
                          "base/requests.jsonl", "--tolerance", "5"})
                .code,
            2);
  EXPECT_EQ(RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline",
                          "base/requests.jsonl", "--metric", "ttfb_ms"})
                .code,
            3);
  // S20: a minimum beyond any sample count is refused, not clamped.
  for (const char* n : {"99999999999999999999", "0", "1e3"}) {
    auto r = RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline",
                           "base/requests.jsonl", "--min-samples", n});
    EXPECT_EQ(r.code, 2) << n;
    EXPECT_NE(r.err.find("--min-samples: expected a whole number of samples between 1 and 100000000, got '" +
                         std::string(n) + "'"),
              std::string::npos)
        << r.err;
  }
  auto statistic = RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline",
                                 "base/requests.jsonl", "--statistic", "p50"});
  EXPECT_EQ(statistic.code, 2);
  EXPECT_NE(statistic.err.find("--statistic: "), std::string::npos) << statistic.err;
}

}  // namespace
}  // namespace fleetplan
