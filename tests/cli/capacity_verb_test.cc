// `fleetplan capacity` as a user runs it: files, exit codes, --json.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/in_scratch.h"
#include "support/small_scenarios.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::InScratch;
using testing::RunFleetplan;


constexpr std::string_view kSpec = R"(version: 1
scenario: small.yaml
demand: {east: 20/s, west: 10/s}
domains:
  east-a: {region: east, gpus: 64}
  east-b: {region: east, gpus: 64}
  west-a: {region: west, gpus: 48}
survive: largest-domain
headroom: 10%
replica_capacity: {rate: 2/s}
price: {on_demand: 4/gpu-h, committed: {rate: 2.5/gpu-h, gpus: 8, term: 1y}}
)";

class CapacityVerb : public InScratch {
 protected:
  void SetUp() override {
    InScratch::SetUp();
    std::ofstream("small.yaml") << testing::kSmallInteractive;
  }
};

TEST_F(CapacityVerb, WritesCapacityJsonWithTheContractKeys) {
  std::ofstream("cap.yaml") << kSpec;
  auto r = RunFleetplan({"capacity", "cap.yaml", "--out", "o", "--no-verify", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(sets the size)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote o/capacity.json, o/capacity.html"), std::string::npos) << r.out;
  const std::string html = testing::FileText("o/capacity.html");
  for (const char* id : {"decision", "requirements", "losses", "placement", "simulated", "inputs"}) {
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  const Json j = Json::parse(testing::FileText("o/capacity.json"));
  EXPECT_EQ(j["kind"], "fleetplan-capacity");
  for (const char* dim : {"prompt", "decode", "concurrency"}) EXPECT_TRUE(j["requirements"][dim].contains("replicas")) << dim;
  EXPECT_TRUE(j.contains("binding"));
  EXPECT_TRUE(j["loss_scenarios"][1].contains("lost"));
  EXPECT_TRUE(j["loss_scenarios"][1].contains("replicas_needed"));
  EXPECT_TRUE(j.contains("set_by"));
  EXPECT_GT(j["fleet"]["replicas"].get<int64_t>(), 0);
  EXPECT_EQ(j["fleet"]["gpus"], j["fleet"]["replicas"]);
  EXPECT_TRUE(j["fleet"]["per_domain"].contains("east-b"));
  EXPECT_TRUE(j["cost"]["per_hour"].is_number());
  EXPECT_TRUE(j["within_budget"].get<bool>());
  EXPECT_TRUE(j["simulated_after_loss"].is_null());  // --no-verify
  auto json = RunFleetplan({"capacity", "cap.yaml", "--out", "o2", "--no-verify", "--quiet", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.out, testing::FileText("o/capacity.json"));
  // The same inputs give the same page; --no-html removes an earlier one.
  EXPECT_EQ(testing::FileText("o2/capacity.html"), html);
  ASSERT_EQ(RunFleetplan({"capacity", "cap.yaml", "--out", "o2", "--no-verify", "--quiet", "--no-html"}).code, 0);
  EXPECT_FALSE(std::filesystem::exists("o2/capacity.html"));
}

TEST_F(CapacityVerb, ExitCodes) {
  EXPECT_EQ(RunFleetplan({"capacity"}).code, 2);
  std::ofstream("over.yaml") << kSpec << "budget: 100/month\n";
  auto over = RunFleetplan({"capacity", "over.yaml", "--out", "o", "--no-verify", "--quiet"});
  EXPECT_EQ(over.code, 1);
  EXPECT_NE(over.err.find("over the budget of $100.00/month; capacity was not reduced to fit"), std::string::npos)
      << over.err;
  EXPECT_NE(over.out.find("OVER BUDGET"), std::string::npos) << over.out;
  std::ofstream("small-domains.yaml") << std::string(kSpec).replace(std::string(kSpec).find("gpus: 48"), 8, "gpus: 2");
  auto full = RunFleetplan({"capacity", "small-domains.yaml", "--out", "o3", "--no-verify", "--quiet"});
  EXPECT_EQ(full.code, 1);
  EXPECT_NE(full.out.find("no fleet: domain 'west-a' must hold"), std::string::npos) << full.out;
  std::ofstream("bad.yaml") << std::string(kSpec).replace(std::string(kSpec).find("largest-domain"), 14, "largest");
  auto bad = RunFleetplan({"capacity", "bad.yaml", "--quiet"});
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("bad.yaml:8:10: survive: unknown loss to survive 'largest'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fleetplan
