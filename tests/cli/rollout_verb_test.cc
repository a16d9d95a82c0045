// `fleetplan rollout compare` on records two simulated fleets wrote: a slower candidate
// fails, an identical one passes, a candidate that lost a class holds.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/in_scratch.h"

namespace fleetplan {
namespace {

using testing::InScratch;
using testing::RunFleetplan;

std::string Scenario(const std::string& decode_per_seq, const std::string& classes) {
  return "version: 1\nname: canary\nseed: 11\nmodel: {name: llama-3.1-8b, max_context: 8192}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"
         "deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.5}\n"
         "engine:\n  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 32}\n"
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: " +
         decode_per_seq + "}}\nrouter: {policy: least-outstanding}\n"
         "workload:\n  duration: 60s\n  arrival: {process: poisson, rate: 6/s}\n  classes:\n" + classes +
         "slo:\n  chat: {ttft: 1s}\noutput: {requests: true}\n";
}

const std::string kTwoClasses =
    "    chat: {share: 0.7, prompt: [{segment: unique, tokens: 400}], output_tokens: {uniform: [20, 60]}}\n"
    "    docs: {share: 0.3, prompt: [{segment: unique, tokens: 2000}], output_tokens: {uniform: [50, 100]}}\n";
const std::string kChatOnly =
    "    chat: {share: 1.0, prompt: [{segment: unique, tokens: 400}], output_tokens: {uniform: [20, 60]}}\n";

class RolloutVerb : public InScratch {
 protected:
  void Simulate(const std::string& name, const std::string& text) {
    std::ofstream(name + ".yaml") << text;
    auto r = RunFleetplan({"simulate", name + ".yaml", "--quiet", "--out", name});
    ASSERT_EQ(r.code, 0) << r.err;
  }
};

TEST_F(RolloutVerb, ASlowerCandidateFailsAnIdenticalOnePassesAMissingClassHolds) {
  Simulate("base", Scenario("0.2ms", kTwoClasses));
  Simulate("same", Scenario("0.2ms", kTwoClasses));
  Simulate("slow", Scenario("0.6ms", kTwoClasses));
  Simulate("chat", Scenario("0.2ms", kChatOnly));

  auto same = RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline", "base/requests.jsonl"});
  EXPECT_EQ(same.code, 0) << same.err << same.out;
  EXPECT_NE(same.out.find("verdict: pass"), std::string::npos) << same.out;

  auto slow = RunFleetplan({"rollout", "compare", "--candidate", "slow/requests.jsonl", "--baseline",
                            "base/requests.jsonl", "--metric", "e2e_ms", "--json"});
  EXPECT_EQ(slow.code, 1);
  const Json j = Json::parse(slow.out);
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["metrics"]["e2e_ms"]["strata"]["chat"]["verdict"], "fail");
  EXPECT_EQ(j["metrics"]["e2e_ms"]["strata"]["docs"]["verdict"], "fail");
  EXPECT_GT(j["metrics"]["e2e_ms"]["aggregate"]["effect"].get<double>(), 0.05);

  auto missing = RunFleetplan({"rollout", "compare", "--candidate", "chat/requests.jsonl", "--baseline",
                               "base/requests.jsonl", "--metric", "ttft_ms"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("verdict: hold"), std::string::npos) << missing.out;
  EXPECT_NE(missing.err.find("no data for docs"), std::string::npos) << missing.err;

  EXPECT_EQ(RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline",
                          "base/requests.jsonl", "--tolerance", "5"})
                .code,
            2);
  EXPECT_EQ(RunFleetplan({"rollout", "compare", "--candidate", "same/requests.jsonl", "--baseline",
                          "base/requests.jsonl", "--metric", "ttfb_ms"})
                .code,
            3);
}

}  // namespace
}  // namespace fleetplan
