// core/read_log.h: the files a computation read, recorded by ReadFile on the thread the
// log is attached to and on the threads that attach it in turn.
#include "fleetplan/core/read_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"

namespace fleetplan {
namespace {

void Spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ReadLogTest, RecordsEachFileOnceInPathOrderWithTheDigestOfTheBytesRead) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "read-log";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "sub");
  const std::string a = (dir / "a.yaml").string();
  const std::string b = (dir / "sub" / "b.yaml").string();
  Spit(a, "a: 1\n");
  Spit(b, "b: 2\n");
  ASSERT_TRUE(ReadFile(a).ok());  // no log attached: nothing recorded anywhere
  ReadLog log;
  {
    const ReadLogScope scope(&log);
    ASSERT_TRUE(ReadFile(b).ok());
    ASSERT_TRUE(ReadFile((dir / "sub" / ".." / "a.yaml").string()).ok());  // one file, two spellings
    ASSERT_TRUE(ReadFile(a).ok());
    EXPECT_FALSE(ReadFile((dir / "absent.yaml").string()).ok());  // not read: not recorded
    // A worker attaches the caller's log.
    std::thread worker([parent = ReadLog::Current(), &b] {
      const ReadLogScope inner(parent);
      EXPECT_TRUE(ReadFile(b).ok());
    });
    worker.join();
    NoteFileOpened((dir / "trace.jsonl").string());
  }
  EXPECT_EQ(ReadLog::Current(), nullptr);
  ASSERT_TRUE(ReadFile(b).ok());  // after the scope: not recorded
  const auto entries = log.Entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].path, (dir / "a.yaml").lexically_normal().generic_string());
  EXPECT_EQ(entries[0].digest, DigestOf("a: 1\n"));
  EXPECT_EQ(entries[1].path, (dir / "sub" / "b.yaml").lexically_normal().generic_string());
  EXPECT_EQ(entries[1].digest, DigestOf("b: 2\n"));
  EXPECT_EQ(entries[2].path, (dir / "trace.jsonl").lexically_normal().generic_string());
  EXPECT_FALSE(entries[2].digest.has_value());  // streamed: its digest is the caller's to take
  EXPECT_TRUE(log.Conflicts().empty());
}

TEST(ReadLogTest, AFileReadTwiceWithDifferentBytesIsAConflict) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "read-log-changed.yaml").string();
  Spit(path, "x: 1\n");
  ReadLog log;
  const ReadLogScope scope(&log);
  ASSERT_TRUE(ReadFile(path).ok());
  Spit(path, "x: 2\n");
  ASSERT_TRUE(ReadFile(path).ok());
  EXPECT_EQ(log.Conflicts(), std::vector<std::string>{std::filesystem::path(path).lexically_normal().generic_string()});
  EXPECT_EQ(log.Entries().front().digest, DigestOf("x: 1\n"));  // the first read is kept
}

}  // namespace
}  // namespace fleetplan
