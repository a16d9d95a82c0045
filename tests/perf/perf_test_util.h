// Helpers shared by the perf tests: YAML from text, chunk builders, printing the arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fleetplan/core/yaml.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan::perf_test {

// Parses `text` as a document named scenario.yaml; fails the test on a syntax error.
inline YamlDocument Yaml(std::string_view text) {
  auto doc = YamlDocument::LoadString(text, "scenario.yaml");
  EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.status().message());
  return std::move(doc).value();
}

inline StepChunk Decode(int64_t context) { return StepChunk{context, 1, true}; }
inline StepChunk Prefill(int64_t new_tokens, int64_t context = 0) {
  return StepChunk{context, new_tokens, false};
}
inline std::vector<StepChunk> Decodes(int64_t count, int64_t context) {
  return std::vector<StepChunk>(static_cast<size_t>(count), Decode(context));
}

// Prints a line of worked arithmetic next to the test output (visible with --gtest output).
template <typename... Args>
void Show(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print("    {}\n", fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fleetplan::perf_test
