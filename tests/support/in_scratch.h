// A test that works in a folder of its own under the test process's scratch directory
// (tests/support/test_main.cc), so the relative paths a user would type (`base:
// small.yaml`, `--out o1`) stay inside it. Restores the working directory after the test.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace fleetplan::testing {

class InScratch : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::current_path();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::filesystem::path dir =
        std::filesystem::path(::testing::TempDir()) / (std::string(info->test_suite_name()) + "." + info->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::current_path(dir);
  }
  void TearDown() override { std::filesystem::current_path(home_); }

 private:
  std::filesystem::path home_;
};

}  // namespace fleetplan::testing
