// examples/atlas-aiconfigurator.yaml (docs/step-models.md "aiconfigurator"): Atlas with the
// measured-kernel step model over the shared H100 tables. The example stays Atlas apart
// from its name, output folder and step model, binds, and runs.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/build_paths.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

std::string ExamplePath() {
  return std::string(FLEETPLAN_SOURCE_DIR) + "/examples/atlas-aiconfigurator.yaml";
}

// The lines that carry YAML (comments and blank lines dropped, trailing comments cut),
// leaving out the keys the example changes.
std::vector<std::string> Keys(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  bool in_step_model = false;
  while (std::getline(in, line)) {
    const size_t hash = line.find(" #");
    if (hash != std::string::npos) line.resize(hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line.empty() || line.front() == '#' || line.find_first_not_of(' ') == line.find('#')) continue;
    if (line == "  step_model:") {
      in_step_model = true;
      continue;
    }
    if (in_step_model && line.rfind("    ", 0) == 0) continue;
    in_step_model = false;
    if (line.rfind("name: ", 0) == 0 || line.rfind("  dir: out/", 0) == 0) continue;
    out.push_back(line);
  }
  return out;
}

TEST(AiconfiguratorExample, IsAtlasWithMeasuredKernels) {
  std::ifstream in(ExamplePath());
  ASSERT_TRUE(in) << ExamplePath();
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(Keys(text.str()), Keys(AtlasScenarioYaml()));
}

TEST(AiconfiguratorExample, RunsOnTheSharedH100Tables) {
  FP_REQUIRE_SHARED_DATA();
  const Expected<Scenario> s = LoadScenario(ExamplePath());
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.write_files = false;
  opt.requests = 30;
  const Expected<RunResult> run = RunScenario(*s, opt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_NE(run->report["step_model"].dump().find("\"kind\":\"aiconfigurator\""), std::string::npos)
      << run->report["step_model"].dump();
  EXPECT_NE(run->report["step_model"].dump().find("NVIDIA H100 80GB HBM3"), std::string::npos);
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

// examples/atlas-roofline.yaml: Atlas with only the roofline step model named, the
// comparison docs/step-models.md draws against the built-in default.
TEST(RooflineExample, IsAtlasWithTheRooflineNamed) {
  std::ifstream in(std::string(FLEETPLAN_SOURCE_DIR) + "/examples/atlas-roofline.yaml");
  ASSERT_TRUE(in);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(Keys(text.str()), Keys(AtlasScenarioYaml()));
  EXPECT_NE(text.str().find("  step_model:\n    kind: roofline"), std::string::npos);
  const Expected<Scenario> s = LoadScenario(std::string(FLEETPLAN_SOURCE_DIR) + "/examples/atlas-roofline.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
}

}  // namespace
}  // namespace fleetplan
