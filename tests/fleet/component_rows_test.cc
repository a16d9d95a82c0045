// The component contract: every row of the fleet component registry (component.h) has a
// case here that turns it on, and each case runs on random small fleets with the fleet's
// invariants — the request ledger against the engines included — checked after every
// event, every request ending, and the component's report section rendered. A new row
// without a case fails the first test: a component lands with its contract exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

struct RowCase {
  std::string_view row;
  std::string_view report_key;  // its section of report.json ("" when it writes none)
  // What turns the row on: prefill/decode pools instead of the one pool, YAML added at
  // the top level, under `engine:` and under `workload:` — or an edit of the bound plan
  // (rows only callers set).
  bool pools = false;
  std::string yaml;
  std::string engine_yaml;
  std::string workload_yaml;
  std::function<void(FleetPlan&, RngStream&)> edit;
};

std::string Pick(RngStream& rng, std::initializer_list<const char*> options) {
  return *(options.begin() + static_cast<std::ptrdiff_t>(rng.NextBelow(options.size())));
}

std::vector<RowCase> Cases(RngStream& rng) {
  std::vector<RowCase> cases;
  cases.push_back({"telemetry", "", false, "", "", "", {}});
  cases.push_back({"prefix-beliefs", "", false, "router: {policy: cache-aware, telemetry_delay: 20ms}\n", "", "", {}});
  cases.push_back({"adapters", "adapters", false, "router: {policy: adapter-aware}\n",
                   "  adapters: {size: 200MiB, memory_budget: 600MiB, load_time: 40ms}\n",
                   "  adapters: {count: 6, popularity: {zipf: 1.2}}\n", {}});
  cases.push_back({"replication", "prefix_replication", false,
                   "router: {policy: cache-aware, replication: {replica_rate: 2/s, prefix_tokens: 256, window: 2s, "
                   "min_hold: 1s}}\n",
                   "", "", {}});
  cases.push_back({"invalidations", "", false, "", "",
                   "  events: [{at: 2s, invalidate: " + Pick(rng, {"model-revision", "tokenizer"}) + "}]\n", {}});
  cases.push_back({"admission", "admission", false,
                   "admission:\n  classes:\n    interactive: {priority: 10, max_queue: " + Pick(rng, {"2", "10"}) +
                       ", max_wait: 1s}\n    batch: {priority: 0, max_queue: 50, max_wait: 4s, aging_margin: 1s}\n"
                       "  default_class: batch\n  max_in_flight_per_replica: " +
                       Pick(rng, {"2", "6"}) + "\n",
                   "", "", {}});
  cases.push_back({"disaggregation", "disaggregation", true,
                   "faults:\n  kv_transfer: {delay: 100ms, delay_probability: " + Pick(rng, {"0", "0.4"}) +
                       ", failure_probability: " + Pick(rng, {"0", "0.3"}) + "}\n",
                   "", "", {}});
  cases.push_back({"timeseries", "timeseries", false, "output: {timeseries_interval: " + Pick(rng, {"500ms", "2s"}) + "}\n",
                   "", "", {}});
  cases.push_back({"replica-losses", "replica_losses", false, "", "", "",
                   [](FleetPlan& plan, RngStream& r) {
                     plan.replica_losses.push_back(ReplicaLoss{SimTime::FromNanos(static_cast<int64_t>(1 + r.NextBelow(3)) * 1'000'000'000),
                                                               {1},
                                                               r.NextBelow(2) == 0 ? DrainExpiry::kRequeue : DrainExpiry::kCancel});
                   }});
  cases.push_back({"autoscaler", "autoscaling", false,
                   "autoscaling:\n  interval: 1s\n  metric: waiting_requests\n  target: 1\n  min_replicas: 2\n"
                   "  max_replicas: 4\n  scale_up: {stabilization: 0s, policies: [{pods: 2, period: 1s}]}\n"
                   "  scale_down: {stabilization: 2s, policies: [{percent: 100, period: 1s}]}\n"
                   "  nodes: {gpus_per_node: 8, initial: 1, max_nodes: 1, provisioning_delay: 5s}\n"
                   "  load_bandwidth: 20GB/s\n  engine_start: 1s\n  drain: {grace: " +
                       Pick(rng, {"0s", "2s"}) + ", expiry: requeue}\n",
                   "", "", {}});
  cases.push_back({"traffic-split", "traffic_split", false, "", "", "",
                   [](FleetPlan& plan, RngStream& r) {
                     TrafficSplitConfig split;
                     split.seed = 7;
                     split.share = 0.5;
                     split.first_candidate = 1;
                     split.baseline_router = plan.router;
                     split.candidate_router = plan.router;
                     if (r.NextBelow(2) == 0) split.rollback_at = SimTime::FromNanos(2'000'000'000);
                     plan.traffic_split = split;
                   }});
  return cases;
}

std::string Scenario(const RowCase& c, int run, RngStream& rng) {
  std::string text = "version: 1\nname: contract\nseed: " + std::to_string(run) +
                     "\nmodel: {name: llama-3.1-8b, max_context: 16384}\n"
                     "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n";
  if (c.pools) {
    text += "deployment:\n  pools:\n    - {role: prefill, replicas: " + Pick(rng, {"1", "2"}) +
            ", tp: 1, gpu_memory_utilization: 0.25}\n    - {role: decode, replicas: 2, tp: 1, "
            "gpu_memory_utilization: 0.25}\n  disaggregation: {colocate_below_tokens: " +
            Pick(rng, {"0", "800"}) + ", timeout: " + Pick(rng, {"80ms", "1s"}) + ", retries: 1}\n";
  } else {
    text += "deployment: {replicas: 3, tp: 1, gpu_memory_utilization: 0.25}\n";
  }
  text += "engine:\n  scheduler: {policy: " + Pick(rng, {"decode-first", "bounded-chunk"}) +
          ", max_batched_tokens: 2048, max_running: 32}\n"
          "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: "
          "0.1ms}}\n"
          "  prefix_cache: {enabled: true}\n" +
          c.engine_yaml;
  text += c.yaml;
  text += "workload:\n  requests: 50\n  arrival: {process: poisson, rate: " + Pick(rng, {"6/s", "20/s"}) +
          "}\n  tenants: {count: 3, popularity: {zipf: 1.5}}\n";
  text += "  classes:\n    chat:\n      share: 1\n      prompt:\n"
          "        - {segment: tenant-instructions, tokens: 600}\n"
          "        - {segment: unique, tokens: {uniform: [50, 2000]}}\n"
          "      output_tokens: {uniform: [1, 120]}\n" +
          Pick(rng, {"", "      deadline: {uniform: [300ms, 8s]}\n"}) +
          Pick(rng, {"", "      cancel: {probability: 0.3, after: {exponential: {mean: 1s}}}\n"}) + c.workload_yaml;
  text += "slo: {chat: {ttft: 2s}}\n";
  return text;
}

TEST(ComponentRows, EveryRowHasAContractCase) {
  RngStream rng(1, "component-rows");
  std::set<std::string_view> cased;
  for (const RowCase& c : Cases(rng)) cased.insert(c.row);
  std::set<std::string_view> rows;
  for (const FleetComponentRow& row : FleetComponents()) {
    rows.insert(row.name);
    EXPECT_TRUE(cased.count(row.name) != 0) << "registry row '" << row.name << "' has no contract case here";
  }
  for (std::string_view c : cased) EXPECT_TRUE(rows.count(c) != 0) << "case '" << c << "' names no registry row";
}

class ComponentContract : public ::testing::TestWithParam<int> {};

// Each case on three random fleets: invariants after every event (the request ledger
// against the engines, every component's own), every request ended, the section rendered.
TEST_P(ComponentContract, HoldsOnRandomFleetsWithTheRowOn) {
  RngStream pick(500 + static_cast<uint64_t>(GetParam()), "component-rows");
  const std::vector<RowCase> cases = Cases(pick);
  const RowCase& c = cases[static_cast<size_t>(GetParam())];
  SCOPED_TRACE(std::string(c.row));
  for (int run = 0; run < 3; ++run) {
    RngStream rng(static_cast<uint64_t>(1000 * GetParam() + run), "component-contract");
    const std::string text = Scenario(Cases(rng)[static_cast<size_t>(GetParam())], run, rng);
    SCOPED_TRACE(text);
    Expected<fleetplan::Scenario> s = LoadScenarioText(text, "contract.yaml", "");
    ASSERT_TRUE(s.ok()) << s.status().message();
    Expected<FleetPlan> plan = Bind(*s);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    if (c.edit) c.edit(*plan, rng);
    RunOptions opt;
    opt.write_files = false;
    opt.check_invariants_every_event = true;
    Expected<RunResult> r = Simulate(*plan, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->result.report.fleet.requests, 50);
    if (!c.report_key.empty()) {
      ASSERT_TRUE(r->report.contains(std::string(c.report_key))) << "no report.json `" << c.report_key << "`";
      EXPECT_FALSE(r->report[std::string(c.report_key)].is_null());
    }
    EXPECT_FALSE(r->summary.empty());
  }
}

int CaseCount() {
  RngStream rng(1, "component-rows");
  return static_cast<int>(Cases(rng).size());
}

INSTANTIATE_TEST_SUITE_P(Rows, ComponentContract, ::testing::Range(0, CaseCount()),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           RngStream rng(1, "component-rows");
                           std::string name(Cases(rng)[static_cast<size_t>(param_info.param)].row);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace fleetplan
