// `fleetplan place`: policies side by side, exit codes, located errors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "cli/verbs.h"
#include "fleetplan/core/json.h"

namespace fleetplan::cli {
namespace {

using CliResult = testing::CliRun;

CliResult Fleetplan(std::vector<std::string> args) {
  return testing::RunFleetplan(std::move(args));
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const char* const kRequests =
    "allocations:\n"
    "  - {name: svc, gpus: [n0/0, n0/1]}\n"
    "requests:\n"
    "  - {name: one-a, gpus: 1}\n"
    "  - {name: one-b, gpus: 1}\n"
    "  - {name: four, gpus: 4}\n";

TEST(PlaceVerb, ComparesPoliciesAndReportsFragmentation) {
  const std::string file = WriteFile("requests.yaml", kRequests);
  const CliResult r = Fleetplan({"place", "--cluster", "2x4xh100-sxm-80g", "--requests", file, "--compare", "--json"});
  // most-free leaves `four` unplaced: a compared policy's answer is part of the outcome.
  ASSERT_EQ(r.code, 1) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["plans"].size(), 2u);
  EXPECT_EQ(j["plans"][0]["policy"], "tight");
  EXPECT_EQ(j["plans"][0]["placed"][2]["gpus"], Json({"n1/0", "n1/1", "n1/2", "n1/3"}));
  EXPECT_TRUE(j["plans"][0]["unplaced"].empty());
  EXPECT_EQ(j["plans"][1]["policy"], "most-free");
  EXPECT_EQ(j["plans"][1]["unplaced"][0]["name"], "four");
  const Json& after = j["plans"][1]["fragmentation"]["after"];
  EXPECT_EQ(after["free_gpus"], 4);
  EXPECT_EQ(after["sizes"][2], Json({{"size", 4}, {"groups", 0}, {"stranded", 4}}));
}

TEST(PlaceVerb, UnplacedGroupsAreACheckFailure) {
  const std::string file = WriteFile("requests2.yaml", kRequests);
  const CliResult r =
      Fleetplan({"place", "--cluster", "2x4xh100-sxm-80g", "--requests", file, "--policy", "most-free"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("four         4 GPU(s) node   -> UNPLACED: needs 4 eligible free GPU(s) in one node"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "fleetplan place: policy most-free left 1 of 3 group(s) unplaced\n");
}

TEST(PlaceVerb, SizesShorthandAndUsage) {
  CliResult r = Fleetplan({"place", "--cluster", "1x8xh100-sxm-80g", "--sizes", "4,2,2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("g3           2 GPU(s) node   -> n0/6 n0/7"), std::string::npos) << r.out;
  r = Fleetplan({"place", "--cluster", "1x8xh100-sxm-80g"});
  EXPECT_EQ(r.code, 2);
  r = Fleetplan({"place", "--cluster", "1x8xh100-sxm-80g", "--sizes", "4", "--policy", "tigth"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--policy: unknown placement policy 'tigth'; did you mean 'tight'? (valid: most-free, tight)\n");
  const std::string bad = WriteFile("bad_requests.yaml", "requests:\n  - {name: a, gpus: 2, localty: node}\n");
  r = Fleetplan({"place", "--cluster", "1x8xh100-sxm-80g", "--requests", bad});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            bad +
                ":2:24: requests[0]: unknown field 'localty'; did you mean 'locality'? (valid: name, gpus, locality, "
                "memory, dtypes, gpu)");
}

}  // namespace
}  // namespace fleetplan::cli
