// `fleetplan plan` as a user types it: the built-in bundle, --print-bundle, the files it
// writes, exit codes, and the errors for bad input.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/in_scratch.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::RunFleetplan;

class PlanVerb : public testing::InScratch {};

TEST_F(PlanVerb, TheBuiltInBundleHoldsAtTheCanaryAndWritesItsInputsBesideTheDecision) {
  const auto r = RunFleetplan({"plan", "--as-of", "2026-12-01T00:00:00Z", "--out", "o", "--quiet", "--no-sensitivity"});
  EXPECT_EQ(r.code, 1) << r.err;  // a hold is a decision, not an error
  EXPECT_NE(r.out.find("release hold: tp8 on h100-sxm-80g"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hold  rollout: hold at canary-1 (1% traffic)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("release hold"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists("o/bundle/plan.yaml"));
  EXPECT_TRUE(std::filesystem::exists("o/bundle/rollout/records/baseline.jsonl"));
  const Json plan = Json::parse(testing::FileText("o/plan.json"));
  EXPECT_EQ(plan["decision"]["release"], "hold");
  EXPECT_EQ(testing::FileText("o/plan.txt"), r.out.substr(0, testing::FileText("o/plan.txt").size()));
  // --json prints plan.json itself; the run is the same bytes again.
  const auto j = RunFleetplan({"plan", "--as-of", "2026-12-01T00:00:00Z", "--out", "o2", "--quiet", "--no-sensitivity",
                               "--json"});
  EXPECT_EQ(j.out, testing::FileText("o/plan.json"));
}

TEST_F(PlanVerb, PrintBundleWritesTheExampleFilesThatPlanTheSame) {
  const auto p = RunFleetplan({"plan", "--print-bundle", "atlas"});
  ASSERT_EQ(p.code, 0) << p.err;
  for (const char* f : {"plan.yaml", "policy.yaml", "deployment.yaml", "inventory.yaml", "prices.yaml", "benchmark.yaml",
                        "workload.yaml", "quality.yaml", "rollout/ladder.yaml"}) {
    EXPECT_EQ(testing::FileText(std::string("atlas/") + f), testing::FileText(std::string(FLEETPLAN_SOURCE_DIR) + "/examples/atlas/" + f)) << f;
  }
  const auto r = RunFleetplan({"plan", "atlas/plan.yaml", "--as-of", "2026-12-01T00:00:00Z", "--out", "o", "--quiet",
                               "--no-sensitivity"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(std::filesystem::exists("o/plan.json"));
}

// Regression: --print-bundle into an edited bundle overwrote the edits.
TEST_F(PlanVerb, PrintBundleNeverOverwritesAnEditedBundle) {
  ASSERT_EQ(RunFleetplan({"plan", "--print-bundle", "v"}).code, 0);
  { std::ofstream("v/plan.yaml", std::ios::app) << "# edited\n"; }
  const std::string edited = testing::FileText("v/plan.yaml");
  const auto r = RunFleetplan({"plan", "--print-bundle", "v"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--print-bundle: 'v' already exists and is not an empty folder; the bundle is written only to a "
                   "new or empty folder, so edited files are never overwritten (pick another folder, or remove this "
                   "one)\n");
  EXPECT_EQ(testing::FileText("v/plan.yaml"), edited);
  // An empty folder is a new bundle's place.
  std::filesystem::create_directories("empty");
  EXPECT_EQ(RunFleetplan({"plan", "--print-bundle", "empty"}).code, 0);
  EXPECT_TRUE(std::filesystem::exists("empty/plan.yaml"));
}

TEST_F(PlanVerb, AsOfIsRequiredAndMustBeATime) {
  auto r = RunFleetplan({"plan", "--out", "o"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--as-of TIME is required"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("o/plan.json"));
  r = RunFleetplan({"plan", "--as-of", "yesterday", "--out", "o"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--as-of: expected a UTC time"), std::string::npos) << r.err;
}

TEST_F(PlanVerb, BadBundlesAreLocatedErrors) {
  ASSERT_EQ(RunFleetplan({"plan", "--print-bundle", "b"}).code, 0);
  {
    std::ofstream("b/plan.yaml", std::ios::app) << "polcy: x\n";
  }
  auto r = RunFleetplan({"plan", "b/plan.yaml", "--as-of", "2026-12-01T00:00:00Z", "--quiet"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("unknown field 'polcy'; did you mean 'policy'?"), std::string::npos) << r.err;
  ASSERT_EQ(RunFleetplan({"plan", "--print-bundle", "c"}).code, 0);
  std::filesystem::remove("c/prices.yaml");
  r = RunFleetplan({"plan", "c/plan.yaml", "--as-of", "2026-12-01T00:00:00Z", "--quiet"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("c/plan.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("prices.yaml"), std::string::npos) << r.err;
  r = RunFleetplan({"plan", "missing.yaml", "--as-of", "2026-12-01T00:00:00Z", "--quiet"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
}

TEST_F(PlanVerb, HelpTeachesTheShapeAndTheExitCodes) {
  const auto r = RunFleetplan({"plan", "--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"--as-of", "--print-bundle", "--policy-key", "Exit codes", "docs/plan.md", "review_triggers"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace fleetplan
