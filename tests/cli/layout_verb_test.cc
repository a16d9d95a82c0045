// `fleetplan layout`: exit codes, JSON keys, and located errors for bad cluster files.
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

TEST(LayoutVerb, RanksLayoutsAsJson) {
  const CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_FALSE(j["feasible"].empty());
  const Json& best = j["feasible"][0];
  EXPECT_EQ(best["tp"], 8);
  EXPECT_EQ(best["pp"], 1);
  EXPECT_EQ(best["decode_rank"], 1);
  for (const char* key :
       {"dp", "replicas", "bytes_per_rank", "prefill_ms", "decode_ms", "comm_ms", "tokens_per_s_per_gpu"}) {
    EXPECT_TRUE(best.contains(key)) << key;
  }
  // Rejected in enumeration order: tp 1 × pp 1 first (weights), tp 3 among them (heads).
  EXPECT_EQ(j["rejected"][0]["tp"], 1);
  EXPECT_EQ(j["rejected"][0]["pp"], 1);
  EXPECT_EQ(j["rejected"][0]["reason"].get<std::string>().rfind("one replica does not fit: weights 131.42 GiB", 0), 0u);
  bool saw_tp3 = false;
  for (const Json& x : j["rejected"]) {
    if (x["tp"] != 3) continue;
    saw_tp3 = true;
    EXPECT_EQ(x["reason"],
              "tp 3 does not divide the 64 attention heads of 'atlas-70b' (valid tp: 1, 2, 4, 8, 16, 32, 64)");
  }
  EXPECT_TRUE(saw_tp3);
  EXPECT_EQ(j["ranking"]["decode"]["threshold"], 0.05);
}

TEST(LayoutVerb, TextStatesDefaultsAndWhatIfRemovals) {
  const CliResult r =
      Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--without", "nvlink:n0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("removed nvlink:n0 (what-if)"), std::string::npos);
  EXPECT_NE(r.out.find("inter-node link ib-ndr-400: default (short form)"), std::string::npos);
  EXPECT_NE(r.out.find("batch 64: default (--batch not given)"), std::string::npos);
  EXPECT_NE(r.out.find("islands with slow TP links: n0: pcie5 (64 GB/s, NVLink down)"), std::string::npos);
}

TEST(LayoutVerb, NothingFeasibleIsACheckFailure) {
  const CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x1xl4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("fleetplan layout: no feasible layout (1 rejected; each with its reason above)"),
            std::string::npos)
      << r.err;
}

TEST(LayoutVerb, BadValuesAreLocatedAtTheirFlag) {
  CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--batch", "x"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "--batch: expected an integer, got 'x'\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "2x8xh100-sxm-80"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind(
                "--cluster: short form '2x8xh100-sxm-80': unknown gpu 'h100-sxm-80'; did you mean 'h100-sxm-80g'?", 0),
            0u)
      << r.err;
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--without", "gpu:n0/9"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "--without: gpu:n0/9: node 'n0' has GPUs 0..7, got '9'\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", "1x8xh100-sxm-80g", "--all-reduce", "rnig"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "--all-reduce: unknown all-reduce algorithm 'rnig'; did you mean 'ring'? (valid: ring, tree)\n");
  r = Fleetplan({"layout", "--model", "atlas-70b"});
  EXPECT_EQ(r.code, 2);
}

TEST(LayoutVerb, BadClusterFilesAreLocatedErrorsWithExitCode3) {
  const std::string unknown_gpu = WriteFile("unknown_gpu.yaml",
                                            "racks:\n"
                                            "  - name: r0\n"
                                            "    nodes:\n"
                                            "      - {name: n0, gpu: h100-sxm-80, gpus: 8}\n");
  CliResult r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", unknown_gpu});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.substr(0, r.err.find(" (valid:")),
            unknown_gpu + ":4:25: racks[0].nodes[0].gpu: unknown gpu 'h100-sxm-80'; did you mean 'h100-sxm-80g'?");

  const std::string missing_node = WriteFile("missing_node.yaml",
                                             "racks:\n"
                                             "  - name: r0\n"
                                             "    nodes:\n"
                                             "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
                                             "      - {name: n1, gpu: h100-sxm-80g, gpus: 8}\n"
                                             "connections:\n"
                                             "  - {between: [n0, n9], link: nvlink4}\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", missing_node});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, missing_node +
                       ":7:20: connections[0].between[1]: unknown node 'n9'; did you mean 'n0'? (valid: n0, n1)\n"
                       "    7 |   - {between: [n0, n9], link: nvlink4}\n"
                       "      |                    ^\n");

  const std::string zero = WriteFile("zero_bandwidth.yaml",
                                     "links:\n"
                                     "  fabric: {kind: roce, bandwidth: 0GB/s, latency: 3us}\n"
                                     "racks:\n"
                                     "  - name: r0\n"
                                     "    nodes: [{name: n0, gpu: h100-sxm-80g, gpus: 8}]\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", zero});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, zero +
                       ":2:35: links.fabric.bandwidth: expected a bandwidth above 0 and at most 100TB/s, got '0GB/s'\n"
                       "    2 |   fabric: {kind: roce, bandwidth: 0GB/s, latency: 3us}\n"
                       "      |                                   ^\n");

  const std::string duplicate = WriteFile("duplicate.yaml",
                                          "racks:\n"
                                          "  - name: r0\n"
                                          "    nodes:\n"
                                          "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
                                          "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n");
  r = Fleetplan({"layout", "--model", "atlas-70b", "--cluster", duplicate});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, duplicate +
                       ":5:16: racks[0].nodes[1].name: duplicate name 'n0': already names a node at line 4\n"
                       "    5 |       - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
                       "      |                ^\n");
}

}  // namespace
}  // namespace fleetplan::cli
