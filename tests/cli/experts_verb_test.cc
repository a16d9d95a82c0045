// `fleetplan experts`: JSON keys, pricing, and located errors.
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

TEST(ExpertsVerb, TotalsFormAsJson) {
  const CliResult r = Fleetplan({"experts", "--counts", "100,10,10,10,50,5,5,10", "--ranks", "4", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["contiguous"]["loads"], Json({110, 20, 55, 15}));
  EXPECT_EQ(j["contiguous"]["max_load"], 110);
  EXPECT_EQ(j["balanced"]["loads"], Json({105, 55, 20, 20}));
  EXPECT_EQ(j["balanced"]["max_load"], 105);
  EXPECT_EQ(j["balanced"]["placement"], Json({{0, 6}, {4, 5}, {1, 3}, {2, 7}}));
  EXPECT_EQ(j["dispatch_bytes"]["contiguous"], 1'228'800);
  EXPECT_EQ(j["dispatch_bytes"]["bytes_per_assignment"], 8192);
  EXPECT_EQ(j["derived"][0], "hidden 4096: default (neither --model nor --hidden given)");
}

TEST(ExpertsVerb, ReplicasAndPricingWithAModel) {
  const CliResult r = Fleetplan({"experts", "--counts", "100,10,10,10,50,5,5,10", "--ranks", "4", "--redundant-experts",
                                 "4", "--model", "mixtral-8x7b", "--gpu", "h100-sxm-80g", "--steps", "10"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("balanced    loads [55, 55, 45, 45]  max 55"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Update: the balanced map is generation 2; new batches use it once all 4 ranks acknowledge"),
            std::string::npos);
  EXPECT_NE(r.out.find("copy link nvlink4: the default_intra_link of h100-sxm-80g"), std::string::npos);
  EXPECT_NE(r.out.find("break-even after"), std::string::npos) << r.out;
  // One more expert per rank on each of Mixtral's 32 MoE layers: 32 × 336 MiB.
  EXPECT_NE(r.out.find("4 redundant expert copies: 3 slots per rank instead of 2; 10.50 GiB more per rank (1 × 32 MoE "
                       "layers × 336 MiB)"),
            std::string::npos)
      << r.out;
}

TEST(ExpertsVerb, ErrorsNameTheFlag) {
  CliResult r = Fleetplan({"experts", "--counts", "1,2,3", "--ranks", "2"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "--ranks: 2 ranks do not divide the 3 experts (each rank holds the same number of experts)\n");
  r = Fleetplan({"experts", "--counts", "1,2,3,4", "--ranks", "2", "--model", "mixtral-8x7b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--counts: expected 8 counts (one per routed expert of 'mixtral-8x7b'), got 4\n");
  r = Fleetplan({"experts", "--counts", "1,2,3,4", "--ranks", "2", "--model", "atlas-70b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--model: 'atlas-70b' is dense; expert placement needs a mixture-of-experts model\n");
  r = Fleetplan({"experts", "--counts", "1,two", "--ranks", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "--counts: count 2: expected a non-negative integer, got 'two'\n");
  r = Fleetplan({"experts", "--ranks", "2"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace fleetplan::cli
