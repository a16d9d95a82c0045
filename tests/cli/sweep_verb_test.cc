// `fleetplan sweep` as a user runs it: files, exit codes, shards and merge, MPI ranks.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "support/in_scratch.h"

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::RunFleetplan;

constexpr std::string_view kBase = R"(version: 1
name: small
seed: 5
model: {name: llama-3.1-8b, max_context: 8192}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.5}
engine:
  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 32}
  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.2ms}}
workload:
  duration: 10s
  arrival: {process: poisson, rate: 6/s}
  classes:
    interactive:
      share: 1.0
      prompt: [{segment: unique, tokens: {uniform: [200, 800]}}]
      output_tokens: {uniform: [20, 60]}
slo:
  interactive: {ttft: 300ms}
)";

constexpr std::string_view kSpec = R"(version: 1
base: base.yaml
axes:
  deployment.replicas: [1, 2, 3]
  router.policy: [round-robin, least-outstanding]
seeds: [1, 2]
)";

using testing::InScratch;
class SweepVerb : public InScratch {};

void Write(const std::string& path, std::string_view text) { std::ofstream(path, std::ios::binary) << text; }

void WriteInputs() {
  Write("base.yaml", kBase);
  Write("spec.yaml", kSpec);
}

TEST_F(SweepVerb, WritesSweepJsonAndCsvAndPrintsTheTable) {
  WriteInputs();
  auto r = RunFleetplan({"sweep", "spec.yaml", "--out", "o1", "--jobs", "2", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sweep spec: 12 points (6 configurations x 2 seeds): 12 ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pareto front"), std::string::npos) << r.out;
  const Json sweep = Json::parse(testing::FileText("o1/sweep.json"));
  EXPECT_EQ(sweep["kind"], "fleetplan-sweep");
  EXPECT_EQ(sweep["points"].size(), 12u);
  const std::string csv = testing::FileText("o1/sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);  // header + 12 points
  EXPECT_EQ(csv.rfind("index,configuration,deployment.replicas,router.policy,seed,status,gpus,", 0), 0u) << csv;
  const std::string html = testing::FileText("o1/sweep.html");
  for (const char* id : {"summary", "configurations", "pareto", "max-rate", "inputs"}) {
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(r.out.find("o1/sweep.html"), std::string::npos) << r.out;
  // --json prints the same document the file holds.
  auto j = RunFleetplan({"sweep", "spec.yaml", "--out", "o2", "--json", "--quiet", "--jobs", "1"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(j.out, testing::FileText("o1/sweep.json"));
}

TEST_F(SweepVerb, ShardsMergeIntoTheSameBytesAndMergeRefusesAMissingShard) {
  WriteInputs();
  ASSERT_EQ(RunFleetplan({"sweep", "spec.yaml", "--out", "whole", "--quiet", "--jobs", "1"}).code, 0);
  for (const char* s : {"0/3", "1/3", "2/3"}) {
    auto r = RunFleetplan({"sweep", "spec.yaml", "--shard", s, "--out", std::string("shard") + s[0], "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("sweep-partial.json"), std::string::npos) << r.out;
  }
  auto m = RunFleetplan({"sweep", "merge", "shard2", "shard0", "shard1", "--out", "merged"});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(testing::FileText("merged/sweep.json"), testing::FileText("whole/sweep.json"));
  EXPECT_EQ(testing::FileText("merged/sweep.csv"), testing::FileText("whole/sweep.csv"));
  auto missing = RunFleetplan({"sweep", "merge", "shard0", "shard2", "--out", "m2"});
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("missing shard 1/3"), std::string::npos) << missing.err;
  // A shard of another spec is refused by digest.
  Write("spec2.yaml", std::string(kSpec) + "overrides: {workload.duration: 5s}\n");
  ASSERT_EQ(RunFleetplan({"sweep", "spec2.yaml", "--shard", "1/3", "--out", "other1", "--quiet"}).code, 0);
  auto mixed = RunFleetplan({"sweep", "merge", "shard0", "other1", "shard2", "--out", "m3"});
  EXPECT_EQ(mixed.code, 3);
  EXPECT_NE(mixed.err.find("another sweep spec"), std::string::npos) << mixed.err;
}

TEST_F(SweepVerb, ExitCodes) {
  WriteInputs();
  auto usage = RunFleetplan({"sweep"});
  EXPECT_EQ(usage.code, 2) << usage.err;
  auto shard = RunFleetplan({"sweep", "spec.yaml", "--shard", "3/3"});
  EXPECT_EQ(shard.code, 2) << shard.err;
  Write("bad.yaml", "version: 1\nbase: base.yaml\naxes: {deployment.replica: [1]}\n");
  auto bad = RunFleetplan({"sweep", "bad.yaml", "--quiet"});
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("bad.yaml:3:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("did you mean 'deployment.replicas'?"), std::string::npos) << bad.err;
  // A failed point: the sweep writes its result and exits 1.
  Write("t.jsonl", std::string(R"({"classes":["chat"],"format":"fleetplan-trace","source":{},"version":1})") + "\n" +
                       R"({"arrival_ns":0,"class":"chat","id":0,"output_tokens":5,"prompt":[[11,100]]})" + "\n" +
                       R"({"arrival_ns":1000000,"class":"chat","id":1,"output_tokens":"x","prompt":[[12,100]]})" + "\n");
  std::string base(kBase);
  Write("tbase.yaml", base.substr(0, base.find("workload:")) + "workload:\n  trace: {file: t.jsonl, format: fleetplan}\n");
  Write("fail.yaml", "version: 1\nbase: tbase.yaml\n");
  auto failed = RunFleetplan({"sweep", "fail.yaml", "--out", "of", "--quiet"});
  EXPECT_EQ(failed.code, 1) << failed.err;
  EXPECT_NE(failed.err.find("1 point failed"), std::string::npos) << failed.err;
  EXPECT_TRUE(std::filesystem::exists("of/sweep.json"));
}

// S15: --jobs 0 is a usage error, as -1 is; S16: a sweep none of whose points could run
// exits 3 (its result is still written) and its summary names no empty class (B15).
TEST_F(SweepVerb, JobsZeroIsRefusedAndASweepOfOnlyInvalidPointsExits3) {
  WriteInputs();
  for (const char* jobs : {"0", "-1"}) {
    auto r = RunFleetplan({"sweep", "spec.yaml", "--jobs", jobs, "--quiet"});
    EXPECT_EQ(r.code, 2) << jobs << ": " << r.err;
    EXPECT_NE(r.err.find("--jobs: expected a number of threads >= 1, got " + std::string(jobs)), std::string::npos)
        << r.err;
  }
  Write("invalid.yaml", "version: 1\nbase: base.yaml\naxes:\n  deployment.tp: [3, 5]\n");
  auto invalid = RunFleetplan({"sweep", "invalid.yaml", "--out", "oi", "--quiet"});
  EXPECT_EQ(invalid.code, 3) << invalid.out << invalid.err;
  EXPECT_NE(invalid.err.find("every point of the sweep is invalid (2 points): no point ran"), std::string::npos)
      << invalid.err;
  EXPECT_NE(invalid.out.find("pareto front: none (no point ran)"), std::string::npos) << invalid.out;
  EXPECT_EQ(invalid.out.find("vs  TTFT"), std::string::npos) << invalid.out;
  EXPECT_TRUE(std::filesystem::exists("oi/sweep.json"));
}

// Runs the real binary under mpirun and compares bytes with --jobs 1.
TEST_F(SweepVerb, MpiRanksWriteTheSameBytesAsOneThread) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not installed (openmpi-bin)";
  WriteInputs();
  const std::string bin = FLEETPLAN_BINARY;
  ASSERT_EQ(RunFleetplan({"sweep", "spec.yaml", "--out", "single", "--quiet", "--jobs", "1"}).code, 0);
  const int probe = std::system((bin + " sweep spec.yaml --mpi --out probe --quiet > probe.log 2>&1 < /dev/null").c_str());
  if (probe != 0 && testing::FileText("probe.log").find("built without Open MPI") != std::string::npos) {
    GTEST_SKIP() << "this build has no Open MPI (FLEETPLAN_MPI=OFF)";
  }
  for (int ranks : {2, 3}) {
    const std::string dir = "mpi" + std::to_string(ranks);
    const std::string cmd = "mpirun --oversubscribe --allow-run-as-root -n " + std::to_string(ranks) + " " + bin +
                            " sweep spec.yaml --mpi --out " + dir + " --quiet > " + dir + ".log 2>&1 < /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::FileText(dir + ".log");
    EXPECT_EQ(testing::FileText(dir + "/sweep.json"), testing::FileText("single/sweep.json")) << ranks << " ranks";
  }
}

}  // namespace
}  // namespace fleetplan
