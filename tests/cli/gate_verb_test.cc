// `fleetplan gate`: the verb built from the gate registry, end to end in process: the
// contract keys, exit codes and help of each gate.
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"

namespace fleetplan {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSeedRounds =
    R"({"identity": {"artifact": "sha256:d1", "runtime": "vllm", "runtime_version": "0.6.3", "hardware": "h100-sxm-80g", "engine_config": "sha256:e1"}})" "\n"
    R"({"draft": [1, 2, 3], "target": [1, 2, 9], "draft_ms": 3.0, "verify_ms": 9.0})" "\n"
    R"({"draft": [4, 5, 6], "target": [4, 5, 6], "draft_ms": 3.0, "verify_ms": 9.0})" "\n"
    R"({"draft": [7, 8, 9], "target": [0, 8, 9], "draft_ms": 4.0, "verify_ms": 12.0})" "\n";

class SpeculationVerb : public ::testing::Test {
 protected:
  // In the test process's private scratch folder.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(SpeculationVerb, PrintsTheContractKeys) {
  const std::string file = Write("rounds.jsonl", kSeedRounds);
  const testing::CliRun r = testing::RunFleetplan({"gate", "speculation", file, "--ordinary", "8ms", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;  // three rounds: fewer than the default 20 -> hold
  const Json j = Json::parse(r.out);
  for (const char* key : {"mean_accepted", "mean_emitted", "cost_per_accepted_ms", "cost_per_emitted_ms",
                          "round_p95_ms", "acceptance_by_position", "break_even_accepted", "verdict"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["verdict"], "speculate");
  EXPECT_EQ(j["decision"], "hold");
  EXPECT_TRUE(j["acceptance_by_position"].contains("cumulative"));
}

TEST_F(SpeculationVerb, UsageAndInputErrorsHaveTheirExitCodes) {
  const std::string file = Write("rounds.jsonl", kSeedRounds);
  EXPECT_EQ(testing::RunFleetplan({"gate", "speculation", file}).code, 2);  // --ordinary is required
  EXPECT_EQ(testing::RunFleetplan({"gate", "speculation", file, "--ordinary", "8"}).code, 2);
  EXPECT_EQ(testing::RunFleetplan({"gate", "speculation", "absent.jsonl", "--ordinary", "8ms"}).code, 3);
  EXPECT_EQ(testing::RunFleetplan({"gate", "speculation", file, file, file, "--ordinary", "8ms"}).code, 2);
}

TEST(GateVerb, HelpListsEveryGate) {
  const testing::CliRun r = testing::RunFleetplan({"gate", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("speculation"));
}

}  // namespace
}  // namespace fleetplan
