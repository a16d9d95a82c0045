// report.json `timeseries` (fleet/timeseries.h): the windows add up to the report's own
// totals, levels are the engines' state, long runs coarsen within the window bound, pools
// add their queues, the series are deterministic and reach timeline.json as counters.
#include "fleetplan/fleet/timeseries.h"

#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "fleet/fleet_scenarios.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

std::string Scenario(const std::string& output, const std::string& deployment = "  replicas: 2\n  tp: 1\n",
                     int requests = 120) {
  return "version: 1\n"
         "name: series\n"
         "seed: 3\n"
         "model: {name: llama-3.1-8b, max_context: 32768}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 4}\n"
         "deployment:\n" +
         deployment +
         "engine:\n"
         "  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, per_seq: 0.1ms}}\n"
         "  prefix_cache: {enabled: true}\n"
         "router: {policy: least-outstanding}\n"
         "workload:\n"
         "  requests: " +
         std::to_string(requests) +
         "\n"
         "  arrival: {process: poisson, rate: 20/s}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 0.7\n"
         "      prompt: [{segment: unique, tokens: {uniform: [500, 3000]}}]\n"
         "      output_tokens: {uniform: [10, 200]}\n"
         "    doc:\n"
         "      share: 0.3\n"
         "      prompt: [{segment: unique, tokens: {uniform: [3000, 8000]}}]\n"
         "      output_tokens: 50\n"
         "slo:\n"
         "  chat: {ttft: 300ms}\n"
         "  doc: {ttft: 1s, tpot: 20ms}\n" +
         output;
}

const std::string kPools =
    "  pools:\n"
    "    - {role: prefill, replicas: 1, tp: 1}\n"
    "    - {role: decode, replicas: 2, tp: 1}\n"
    "  disaggregation: {colocate_below_tokens: 2000, setup: 1ms}\n";

RunResult RunSeries(const std::string& text, RunOptions opt = {}) {
  auto s = LoadScenarioText(text, "series.yaml", "");
  EXPECT_TRUE(s.ok()) << s.status().message();
  opt.write_files = false;
  auto r = RunScenario(*s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(*r);
}

int64_t Sum(const Json& values) {
  int64_t sum = 0;
  for (const Json& v : values) sum += v.get<int64_t>();
  return sum;
}

TEST(TimeSeries, WindowsAddUpToTheReportsTotals) {
  const RunResult r = RunSeries(Scenario(""));
  const Json& j = r.report;
  const Json& ts = j["timeseries"];
  ASSERT_TRUE(ts.is_object());
  EXPECT_EQ(ts["interval_s"], 1.0);
  EXPECT_EQ(ts["coarsened"], 1);
  const int64_t windows = ts["windows"].get<int64_t>();
  // The clock starts at 0: ceil(end / interval) windows, the last one partial.
  const double end = j["simulation"]["end_s"].get<double>();
  EXPECT_EQ(ts["end_s"].get<double>(), end);
  EXPECT_EQ(windows, static_cast<int64_t>(std::ceil(end)));
  ASSERT_EQ(ts["window_start_s"].size(), static_cast<size_t>(windows));
  EXPECT_EQ(ts["window_start_s"][1], 1.0);

  const Json& fleet = ts["fleet"];
  EXPECT_EQ(Sum(fleet["arrivals"]), j["fleet"]["requests"].get<int64_t>());
  EXPECT_EQ(Sum(fleet["completions"]), j["fleet"]["status"]["ok"].get<int64_t>());
  EXPECT_EQ(Sum(fleet["good"]), j["fleet"]["qualified"].get<int64_t>());
  EXPECT_EQ(Sum(fleet["prefill_tokens"]), j["engine"]["prefill_tokens"].get<int64_t>());
  EXPECT_EQ(Sum(fleet["decode_tokens"]), j["engine"]["decode_tokens"].get<int64_t>());
  EXPECT_EQ(Sum(fleet["preemptions"]), j["engine"]["preemptions"].get<int64_t>());
  for (const std::string cls : {"chat", "doc"}) {
    const Json& c = ts["classes"][cls];
    EXPECT_EQ(Sum(c["arrivals"]), j["classes"][cls]["requests"].get<int64_t>()) << cls;
    EXPECT_EQ(Sum(c["good"]), j["classes"][cls]["qualified"].get<int64_t>()) << cls;
    ASSERT_EQ(c["goodput_rps"].size(), static_cast<size_t>(windows));
    // Every request ended: nothing is in flight at the end; something was in between.
    EXPECT_EQ(c["in_flight"].back(), 0) << cls;
    int64_t most = 0;
    for (const Json& v : c["in_flight"]) most = std::max(most, v.get<int64_t>());
    EXPECT_GT(most, 0) << cls;
  }
  ASSERT_EQ(ts["replicas"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Json& rep = ts["replicas"][i];
    EXPECT_EQ(rep["replica"], i);
    EXPECT_FALSE(rep.contains("role"));  // no pools
    EXPECT_EQ(Sum(rep["arrivals"]), j["replicas"][i]["routed"].get<int64_t>());
    EXPECT_EQ(Sum(rep["completions"]), j["engine"]["replicas"][i]["completed"].get<int64_t>());
    // Levels at the end: the fleet is empty, the cache keeps what it published.
    EXPECT_EQ(rep["running"].back(), 0);
    EXPECT_EQ(rep["waiting"].back(), 0);
    EXPECT_EQ(rep["kv_used_blocks"].back(), 0);
    EXPECT_GT(rep["kv_cached_blocks"].back().get<int64_t>(), 0);
    for (const char* key : {"arrivals", "running", "waiting", "kv_used_blocks", "kv_cached_blocks", "prefill_tokens",
                            "decode_tokens", "preemptions", "completions"}) {
      EXPECT_EQ(rep[key].size(), static_cast<size_t>(windows)) << key;
    }
  }
  // Goodput = good / window length; the last window is partial.
  const double last = end - static_cast<double>(windows - 1);
  EXPECT_NEAR(fleet["goodput_rps"].back().get<double>(), fleet["good"].back().get<double>() / last, 1e-6);
  EXPECT_EQ(fleet["goodput_rps"][0].get<double>(), fleet["good"][0].get<double>());
}

TEST(TimeSeries, LevelsMatchTheEnginesAtEachBoundary) {
  // The same run, stopped at boundaries through the push API, against the engines' own
  // counts there.
  auto s = LoadScenarioText(Scenario(""), "series.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto plan = Bind(*s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  FleetSetup setup = plan->Setup();
  auto source = MakeRequestSource(plan->workload, plan->seed);
  ASSERT_TRUE(source.ok());
  auto sim = Simulation::Create(setup, nullptr);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  ASSERT_TRUE((*sim)->Start(source->get()).ok());
  std::vector<int64_t> running;
  std::vector<int64_t> kv_used;
  for (int k = 1; k <= 4; ++k) {
    // Every event up to just before the boundary; at the boundary the component samples
    // after the events pushed before it (their state is the window's end).
    ASSERT_TRUE((*sim)->RunUntil(SimTime::FromNanos(int64_t{1'000'000'000} * k - 1)).ok());
    running.push_back((*sim)->replica(0).running_count());
    kv_used.push_back((*sim)->replica(0).pool().used_count());
  }
  ASSERT_TRUE((*sim)->Finish().ok());
  const TimeSeriesRecorder* ts = (*sim)->component<TimeSeriesRecorder>();
  ASSERT_NE(ts, nullptr);
  const TimeSeriesData d = ts->Snapshot((*sim)->end_time());
  const Series* r = d.replicas[0].Find("running");
  const Series* kv = d.replicas[0].Find("kv_used_blocks");
  ASSERT_NE(r, nullptr);
  ASSERT_NE(kv, nullptr);
  for (size_t k = 0; k < 4; ++k) {
    // Nothing happens in the last nanosecond before a boundary unless an event is due
    // exactly then; the affine model's step ends are not whole seconds here.
    EXPECT_EQ(r->values[k], running[k]) << "window " << k;
    EXPECT_EQ(kv->values[k], kv_used[k]) << "window " << k;
  }
  EXPECT_TRUE((*sim)->CheckInvariants().ok());
}

TEST(TimeSeries, ALongRunCoarsensWithinTheWindowBound) {
  // 1 ms windows over a run of several seconds: more than 4096 windows, so pairs merge.
  const RunResult fine = RunSeries(Scenario("output: {timeseries_interval: 1ms}\n"));
  const RunResult coarse = RunSeries(Scenario(""));
  const Json& ts = fine.report["timeseries"];
  const int64_t factor = ts["coarsened"].get<int64_t>();
  EXPECT_GT(factor, 1);
  EXPECT_EQ(factor & (factor - 1), 0) << "a power of two";
  EXPECT_LE(ts["windows"].get<int64_t>(), kMaxTimeSeriesWindows);
  EXPECT_GT(ts["windows"].get<int64_t>(), kMaxTimeSeriesWindows / 4);
  EXPECT_DOUBLE_EQ(ts["interval_s"].get<double>(), 0.001 * static_cast<double>(factor));
  // Counts are conserved by merging; the simulation itself is unchanged.
  for (const char* key : {"arrivals", "completions", "good", "decode_tokens", "prefill_tokens"}) {
    EXPECT_EQ(Sum(ts["fleet"][key]), Sum(coarse.report["timeseries"]["fleet"][key])) << key;
  }
  EXPECT_EQ(fine.report["classes"], coarse.report["classes"]);
  bool noted = false;
  for (const Json& n : fine.report["notes"]) noted = noted || n.get<std::string>().rfind("timeseries: interval", 0) == 0;
  EXPECT_TRUE(noted) << "the coarsening is listed in notes";
}

TEST(TimeSeries, SameInputsSameSeries) {
  const RunResult a = RunSeries(Scenario("", kPools));
  const RunResult b = RunSeries(Scenario("", kPools));
  auto ja = CanonicalJson(a.report["timeseries"]);
  auto jb = CanonicalJson(b.report["timeseries"]);
  ASSERT_TRUE(ja.ok());
  EXPECT_EQ(*ja, *jb);
}

TEST(TimeSeries, PoolsAddTheirQueuesAndRoles) {
  RunOptions opt;
  opt.check_invariants_every_event = true;  // the component's invariants too
  const RunResult r = RunSeries(Scenario("", kPools, 40), opt);
  const Json& ts = r.report["timeseries"];
  ASSERT_EQ(ts["replicas"].size(), 3u);
  EXPECT_EQ(ts["replicas"][0]["role"], "prefill");
  EXPECT_EQ(ts["replicas"][1]["role"], "decode");
  int64_t admission_or_transfer = 0;
  for (const Json& rep : ts["replicas"]) {
    ASSERT_TRUE(rep.contains("transfer_queue"));
    ASSERT_TRUE(rep.contains("admission_queue"));
    admission_or_transfer += Sum(rep["transfer_queue"]) + Sum(rep["admission_queue"]);
  }
  EXPECT_GE(admission_or_transfer, 0);
  EXPECT_TRUE(ts["fleet"].contains("transfer_queue"));
  // The fleet's arrivals count every request once, though a disaggregated one is routed
  // to two replicas.
  EXPECT_EQ(Sum(ts["fleet"]["arrivals"]), r.report["fleet"]["requests"].get<int64_t>());
  int64_t routed = 0;
  for (const Json& rep : ts["replicas"]) routed += Sum(rep["arrivals"]);
  EXPECT_GT(routed, Sum(ts["fleet"]["arrivals"]));
}

TEST(TimeSeries, RejectsANonPositiveInterval) {
  auto s = LoadScenarioText(Scenario("output: {timeseries_interval: 0s}\n"), "series.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("output.timeseries_interval"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("expected a duration > 0"), std::string::npos) << s.status().message();
}

TEST(TimeSeries, ReachTheTimelineAsCounterTracks) {
  auto s = LoadScenarioText(Scenario("output: {timeline: true}\n", "  replicas: 2\n  tp: 1\n", 40), "series.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  const std::string dir = ::testing::TempDir() + "/series-out";
  opt.out_dir = dir;
  auto r = RunScenario(*s, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::ifstream in(dir + "/timeline.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json tl = Json::parse(text.str());
  const int64_t windows = r->report["timeseries"]["windows"].get<int64_t>();
  int64_t running_points = 0;
  int64_t goodput_points = 0;
  bool fleet_named = false;
  for (const Json& e : tl["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "fleet") fleet_named = e["pid"] == 3;
    if (e["ph"] != "C") continue;
    if (e["name"] == "ts" && e["pid"] == 1 && e["args"].contains("running")) ++running_points;
    if (e["name"] == "ts chat" && e["pid"] == 3 && e["args"].contains("goodput_rps")) ++goodput_points;
  }
  EXPECT_TRUE(fleet_named);
  EXPECT_EQ(running_points, windows);
  EXPECT_EQ(goodput_points, windows);
}

}  // namespace
}  // namespace fleetplan
