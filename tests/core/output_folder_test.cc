// OutputFolder: a run's files as one set in a locked folder (docs/limits.md "Output
// files"). Regression tests for an interrupted `simulate --out` that destroyed the
// earlier run's files, and for two runs on one folder that mixed their files.
#include "fleetplan/core/output_folder.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/files.h"

namespace fleetplan {
namespace {

using testing::FileText;

class OutputFolderTest : public testing::TempFolderTest {
 protected:
  // The folder's file names, sorted.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

TEST_F(OutputFolderTest, SecondRunOnALockedFolderIsBusy) {
  auto first = OutputFolder::Lock(dir_.string());
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = OutputFolder::Lock(dir_.string());
  ASSERT_FALSE(second.ok());
  // Not an input error: the same command succeeds once the first run ends.
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_EQ(second.status().exit_code(), 75);
  EXPECT_EQ(second.status().message(),
            "cannot write to '" + dir_.string() + "': another fleetplan run is writing there (it holds " +
                dir_.string() + "/.fleetplan.lock); wait for it to finish or pick another --out");
  first->reset();  // the lock goes with the first run
  EXPECT_TRUE(OutputFolder::Lock(dir_.string()).ok());
}

TEST_F(OutputFolderTest, InterruptedRunLeavesTheEarlierRunsFilesAsTheyWere) {
  Write("report.json", "old report\n");
  Write("requests.jsonl", "old records\n");
  {
    auto folder = OutputFolder::Lock(dir_.string());
    ASSERT_TRUE(folder.ok());
    auto records = (*folder)->Add("requests.jsonl");
    ASSERT_TRUE(records.ok());
    ASSERT_TRUE((*records)->Write("new records\n").ok());
    auto report = (*folder)->Add("report.json");
    ASSERT_TRUE(report.ok());
    ASSERT_TRUE((*report)->Write("new report\n").ok());
    // Destroyed before Commit: a failed or interrupted run.
  }
  EXPECT_EQ(FileText(Path("report.json")), "old report\n");
  EXPECT_EQ(FileText(Path("requests.jsonl")), "old records\n");
  EXPECT_EQ(Names(), (std::vector<std::string>{".fleetplan.lock", "report.json", "requests.jsonl"}));
}

TEST_F(OutputFolderTest, CommitReplacesTheSetAndRemovesWhatThisRunDoesNotWrite) {
  Write("report.json", "old report\n");
  Write("timeline.json", "old timeline\n");
  Write("notes.txt", "not a run file\n");
  auto folder = OutputFolder::Lock(dir_.string());
  ASSERT_TRUE(folder.ok());
  auto report = (*folder)->Add("report.json");
  ASSERT_TRUE(report.ok());
  ASSERT_TRUE((*report)->Write("new report\n").ok());
  // Nothing visible before Commit.
  EXPECT_EQ(FileText(Path("report.json")), "old report\n");
  std::vector<std::string> removed;
  ASSERT_TRUE((*folder)->Commit({"report.json", "timeline.json", "report.html"}, &removed).ok());
  EXPECT_EQ(FileText(Path("report.json")), "new report\n");
  EXPECT_EQ(removed, std::vector<std::string>{Path("timeline.json")});
  EXPECT_EQ(Names(), (std::vector<std::string>{".fleetplan.lock", "notes.txt", "report.json"}));
}

TEST_F(OutputFolderTest, TempFilesOfAKilledRunAreRemovedByTheNextRun) {
  Write("requests.jsonl.tmp.999999.0", "partial records of a killed run");
  Write("timeline.json.tmp.999999.1", "partial timeline of a killed run");
  Write("other.tmp.1.2", "someone else's");
  auto folder = OutputFolder::Lock(dir_.string());
  ASSERT_TRUE(folder.ok());
  auto records = (*folder)->Add("requests.jsonl");
  ASSERT_TRUE(records.ok());
  ASSERT_TRUE((*records)->Write("r\n").ok());
  std::vector<std::string> removed;
  ASSERT_TRUE((*folder)->Commit({"requests.jsonl", "timeline.json"}, &removed).ok());
  EXPECT_TRUE(removed.empty());
  EXPECT_EQ(Names(), (std::vector<std::string>{".fleetplan.lock", "other.tmp.1.2", "requests.jsonl"}));
}

}  // namespace
}  // namespace fleetplan
