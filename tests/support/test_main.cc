// Test entry point shared by every test binary.
//
// ctest runs each test case in its own process, two at a time. Tests write scratch files under
// ::testing::TempDir() or std::filesystem::temp_directory_path(); without isolation two processes
// writing "records.jsonl" at once read each other's bytes. This main gives every process a fresh
// private directory (mkdtemp), points TEST_TMPDIR and TMPDIR at it (both helpers read them), and
// removes it when the tests end.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  std::string pattern = (ec ? std::string("/tmp") : base.string()) + "/fleetplan-test-XXXXXX";
  const char* dir = mkdtemp(pattern.data());
  if (dir != nullptr) {
    setenv("TEST_TMPDIR", dir, 1);
    setenv("TMPDIR", dir, 1);
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (dir != nullptr) std::filesystem::remove_all(dir, ec);
  return result;
}
