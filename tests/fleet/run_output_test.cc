// A run's output folder: its files are one set, written when the run completes, and a
// locked folder refuses a second run. Regression tests for `simulate --out` destroying
// the earlier run's files when interrupted or on a full disk, and for two runs on one
// --out mixing their records.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "fleetplan/core/output_folder.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "support/files.h"
#include "support/small_scenarios.h"

namespace fleetplan {
namespace {

using testing::FileText;

class RunOutputTest : public testing::TempFolderTest {
 protected:
  Expected<RunResult> Run(uint64_t seed, std::vector<RunPage> pages = {}) {
    FP_ASSIGN_OR_RETURN(Scenario s, LoadScenarioText(std::string(testing::kSmallInteractive), "s.yaml", ""));
    RunOptions opt;
    opt.out_dir = Path("out");
    opt.seed = seed;
    opt.requests = 40;
    opt.write_requests = true;
    opt.write_timeline = true;
    opt.pages = std::move(pages);
    return RunScenario(s, opt);
  }
};

TEST_F(RunOutputTest, FailedRunLeavesTheEarlierRunsFilesIntact) {
  auto good = Run(42, {{"report.html", [](const Json&) -> Expected<std::string> { return std::string("page 42"); }}});
  ASSERT_TRUE(good.ok()) << good.status().message();
  const std::string report = FileText(Path("out/report.json"));
  const std::string records = FileText(Path("out/requests.jsonl"));
  const std::string timeline = FileText(Path("out/timeline.json"));
  ASSERT_FALSE(records.empty());
  // A second run that fails after simulating (as a full disk or Ctrl-C would end it).
  auto failed = Run(9, {{"report.html", [](const Json&) -> Expected<std::string> {
                           return InvalidInput("cannot write 'report.html': No space left on device");
                         }}});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(FileText(Path("out/report.json")), report);
  EXPECT_EQ(FileText(Path("out/requests.jsonl")), records);
  EXPECT_EQ(FileText(Path("out/timeline.json")), timeline);
  EXPECT_EQ(FileText(Path("out/report.html")), "page 42");
  for (const auto& e : std::filesystem::directory_iterator(Path("out"))) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(RunOutputTest, CompletedRunReplacesEveryFileAndRemovesAnUnwrittenPage) {
  ASSERT_TRUE(Run(42, {{"report.html", [](const Json&) -> Expected<std::string> { return std::string("p"); }}}).ok());
  const std::string records = FileText(Path("out/requests.jsonl"));
  auto second = Run(9, {{"report.html", nullptr}});
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_NE(FileText(Path("out/requests.jsonl")), records);
  EXPECT_FALSE(std::filesystem::exists(Path("out/report.html")));
  EXPECT_NE(second->summary.find("removed " + Path("out/report.html")), std::string::npos) << second->summary;
}

TEST_F(RunOutputTest, SecondRunOnTheSameOutIsRefusedWhileTheFirstHoldsIt) {
  auto held = OutputFolder::Lock(Path("out"));  // another run, still writing
  ASSERT_TRUE(held.ok());
  auto second = Run(2);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find("another fleetplan run is writing there"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(Path("out/requests.jsonl")));
}

}  // namespace
}  // namespace fleetplan
