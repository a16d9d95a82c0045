// Helpers shared by the workload tests: YAML from text, draining sources, temp files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/core/yaml.h"
#include "fleetplan/workload/request.h"
#include "fleetplan/workload/source.h"
#include "fleetplan/workload/trace.h"
#include "fleetplan/workload/workload_spec.h"
#include "support/shared_data.h"

namespace fleetplan::testing {

inline YamlNode ParseYaml(const std::string& text, const std::string& name = "test.yaml") {
  auto doc = YamlDocument::LoadString(text, name);
  EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.status().message());
  return doc->root();
}

// The spec at `workload:` of `text` (a full document with a top-level `workload:` key).
inline Expected<WorkloadSpec> SpecFromYaml(const std::string& text) {
  auto doc = YamlDocument::LoadString(text, "scenario.yaml");
  if (!doc.ok()) return doc.status();
  return ParseWorkloadSpec(doc->root()["workload"]);
}

// Every request of an open-loop source (fails the test on an error).
inline std::vector<Request> Drain(RequestSource& source) {
  std::vector<Request> out;
  while (true) {
    auto next = source.Next();
    EXPECT_TRUE(next.ok()) << (next.ok() ? "" : next.status().message());
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  return out;
}

// The error a source reports while draining (empty when it drains cleanly).
inline std::string DrainError(RequestSource& source) {
  while (true) {
    auto next = source.Next();
    if (!next.ok()) return next.status().message();
    if (!next->has_value()) return "";
  }
}

// A fresh directory under the system temp dir, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("fleetplan-workload-") + info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream out(File(name), std::ios::binary);
    out << text;
    return File(name);
  }

 private:
  std::filesystem::path path_;
};

// Limits and read options without designated initializers (which -Wextra flags when
// fields are left out).
inline SourceLimits Limits(std::optional<Duration> duration, std::optional<int64_t> requests) {
  SourceLimits l;
  l.duration = duration;
  l.requests = requests;
  return l;
}
inline SourceLimits Until(Duration d) { return Limits(d, std::nullopt); }
inline SourceLimits Requests(int64_t n) { return Limits(std::nullopt, n); }

inline TraceReadOptions ClassOpt(std::string name) {
  TraceReadOptions o;
  o.class_name = std::move(name);
  return o;
}
inline TraceReadOptions DropFailedOpt() {
  TraceReadOptions o;
  o.drop_failed = true;
  return o;
}
inline TraceReadOptions SpeedOpt(double speed) {
  TraceReadOptions o;
  o.speed = speed;
  return o;
}
inline TraceReadOptions FormatOpt(TraceFormat format) {
  TraceReadOptions o;
  o.format = format;
  return o;
}
inline TraceReadOptions LimitOpt(std::optional<Duration> until, std::optional<int64_t> max_requests) {
  TraceReadOptions o;
  o.until = until;
  o.max_requests = max_requests;
  return o;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string SharedData(const std::string& relative) {
  return ::fleetplan::testing::SharedPath(relative);
}

}  // namespace fleetplan::testing
