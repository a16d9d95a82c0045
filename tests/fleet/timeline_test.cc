// timeline.json: a Chrome trace event file that parses, is byte-identical across runs,
// and carries steps, counters, request spans, routing decisions and KV transfer flows.
#include "fleetplan/fleet/timeline.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

std::string Scenario(const std::string& deployment) {
  return "version: 1\n"
         "name: timeline\n"
         "seed: 5\n"
         "model: {name: llama-3.1-8b, max_context: 32768}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 4}\n"
         "deployment:\n" +
         deployment +
         "engine:\n"
         "  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, per_seq: 0.1ms}}\n"
         "  prefix_cache: {enabled: true}\n"
         "router: {policy: cache-aware}\n"
         "workload:\n"
         "  requests: 60\n"
         "  arrival: {process: poisson, rate: 4/s}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 1\n"
         "      prompt: [{segment: unique, tokens: {uniform: [1000, 4000]}}]\n"
         "      output_tokens: 20\n";
}

const std::string kPools =
    "  pools:\n"
    "    - {role: prefill, replicas: 1, tp: 1}\n"
    "    - {role: decode, replicas: 2, tp: 1}\n"
    "  disaggregation: {colocate_below_tokens: 2000, setup: 1ms}\n";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the scenario writing its timeline under a private folder; returns the file's text.
std::string RunTimeline(const std::string& text, const std::string& name) {
  auto s = LoadScenarioText(text, "timeline.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return "";
  RunOptions opt;
  const char* tmp = std::getenv("TMPDIR");
  opt.out_dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  opt.write_timeline = true;
  opt.write_requests = false;
  auto r = RunScenario(*s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return ReadAll(*opt.out_dir + "/timeline.json");
}

TEST(Timeline, PooledRunShowsRoutesRolesAndTransferFlows) {
  const std::string text = RunTimeline(Scenario(kPools), "pools-a");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text, RunTimeline(Scenario(kPools), "pools-b"));  // byte-identical
  const Json j = Json::parse(text);
  std::map<std::string, int> names;
  std::map<int64_t, int> flow_starts;
  std::map<int64_t, int> flow_ends;
  std::set<std::string> labels;
  std::set<std::string> route_stages;
  for (const Json& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    const std::string name = e["name"];
    ++names[ph + ":" + name];
    if (ph == "M" && name == "process_labels") labels.insert(e["args"]["labels"].get<std::string>());
    if (ph == "i" && name == "route") {
      EXPECT_EQ(e["pid"], 0);
      EXPECT_TRUE(e["args"].contains("matched_prefix_tokens"));
      EXPECT_TRUE(e["args"].contains("queue_age_us"));
      route_stages.insert(e["args"]["stage"].get<std::string>());
    }
    if (ph == "s") ++flow_starts[e["id"].get<int64_t>()];
    if (ph == "f") ++flow_ends[e["id"].get<int64_t>()];
    if (ph == "X" && name == "kv send") {
      EXPECT_EQ(e["pid"], 1);  // replica 0 is the prefill pool
    }
    if (ph == "X" && name == "kv receive") {
      EXPECT_NE(e["pid"], 1);
    }
  }
  EXPECT_EQ(labels, (std::set<std::string>{"prefill", "decode"}));
  // Short prompts run whole ("serve"); long ones are routed twice ("decode", "prefill").
  EXPECT_EQ(route_stages, (std::set<std::string>{"serve", "decode", "prefill"}));
  EXPECT_GT(names["X:kv send"], 0);
  EXPECT_EQ(names["X:kv send"], names["X:kv receive"]);
  EXPECT_EQ(flow_starts, flow_ends);  // every flow arrow has both ends, once
  EXPECT_EQ(static_cast<int>(flow_starts.size()), names["X:kv send"]);
  EXPECT_GT(names["X:step"], 0);
  EXPECT_EQ(names["X:step"], names["C:queue"]);
  EXPECT_EQ(names["X:step"], names["C:kv_blocks"]);
  EXPECT_EQ(names["b:queued+prefill"], 60);  // every request, none sampled away
  EXPECT_EQ(j["metadata"]["sampling_period"], 1);
}

TEST(Timeline, OnePoolRunHasRoutesButNoTransfers) {
  const std::string text = RunTimeline(Scenario("  replicas: 2\n  tp: 1\n"), "one-pool");
  const Json j = Json::parse(text);
  int routes = 0;
  for (const Json& e : j["traceEvents"]) {
    EXPECT_NE(e["name"], "kv send");
    EXPECT_NE(e["name"], "process_labels");
    if (e["name"] == "route") {
      ++routes;
      EXPECT_EQ(e["args"]["stage"], "serve");
    }
  }
  EXPECT_EQ(routes, 60);
}

// A replica added during the run (Simulation::AddReplica) gets its process and step
// track when it first steps, and the file stays valid JSON.
TEST(Timeline, AReplicaAddedDuringTheRunGetsItsTracks) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/added-replica-timeline.json";
  WorkloadNames names;
  names.classes = {"chat"};
  auto w = TimelineWriter::Open(path, 1, &names);
  ASSERT_TRUE(w.ok()) << w.status().message();
  StepRecord step;
  step.replica = 2;
  step.start = SimTime() + Ms(1);
  step.end = SimTime() + Ms(3);
  (*w)->OnStep(step);
  ASSERT_TRUE((*w)->Close().ok());
  const Json j = Json::parse(ReadAll(path));
  std::set<std::string> processes;
  int64_t steps_on_2 = 0;
  for (const Json& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X" && e["pid"] == 3) ++steps_on_2;
  }
  EXPECT_TRUE(processes.contains("replica 0"));
  EXPECT_TRUE(processes.contains("replica 1"));
  EXPECT_TRUE(processes.contains("replica 2"));
  EXPECT_EQ(steps_on_2, 1);
}

}  // namespace
}  // namespace fleetplan
