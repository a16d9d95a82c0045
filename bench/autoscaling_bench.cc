// An autoscaled 10-minute Atlas burst (docs/PERFORMANCE.md "Autoscaling"; the scenario is
// examples/autoscaling.yaml: the built-in Atlas fleet and traffic at 4/s with a burst to
// 12/s, the pod loop every 15 s, the node loop provisioning up to 2 more nodes), run
// through RunScenario exactly as `fleetplan simulate` runs it, without writing files.
// Target: under 2 s of wall time per run.
//   BM_AutoscaledAtlasBurst/short     the example: a 2-minute burst, reactive only
//   BM_AutoscaledAtlasBurst/long      a 6-minute burst with a forecast schedule
// Counters: engine steps, scale events, replicas created and simulated seconds per run.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

std::string ExampleText(bool long_burst) {
  std::ifstream in(std::string(FLEETPLAN_SOURCE_DIR) + "/examples/autoscaling.yaml");
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (long_burst) {
    const std::string burst = "schedule: [{at: 6m, rate: 12/s}, {at: 8m, rate: 4/s}]";
    const std::string forecast = "  # forecast: {schedule: [{at: 6m, replicas: 8}, {at: 8m, replicas: 3}]}";
    if (text.find(burst) == std::string::npos || text.find(forecast) == std::string::npos) return "";
    text.replace(text.find(burst), burst.size(), "schedule: [{at: 4m, rate: 12/s}, {at: 10m, rate: 4/s}]");
    text.replace(text.find(forecast), forecast.size(),
                 "  forecast: {schedule: [{at: 4m, replicas: 8}, {at: 10m, replicas: 3}]}");
  }
  return text;
}

void RunBurst(benchmark::State& state, bool long_burst) {
  Expected<Scenario> scenario = LoadScenarioText(ExampleText(long_burst), "autoscaling.yaml", "");
  if (!scenario.ok()) {
    state.SkipWithError(scenario.status().message().c_str());
    return;
  }
  RunOptions opt;
  opt.write_files = false;
  double steps = 0, scale_events = 0, replicas = 0, simulated_s = 0;
  for (auto _ : state) {
    Expected<RunResult> r = RunScenario(*scenario, opt);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    steps += r->report["engine"]["steps"].get<double>();
    scale_events += r->report["autoscaling"]["summary"]["scale_events"].get<double>();
    replicas += r->report["autoscaling"]["summary"]["replicas_created"].get<double>();
    simulated_s += r->simulated_end.seconds();
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["steps"] = steps / n;
  state.counters["scale_events"] = scale_events / n;
  state.counters["replicas"] = replicas / n;
  state.counters["simulated_s"] = simulated_s / n;
}

void BM_AutoscaledAtlasBurst_short(benchmark::State& state) { RunBurst(state, false); }
void BM_AutoscaledAtlasBurst_long(benchmark::State& state) { RunBurst(state, true); }

BENCHMARK(BM_AutoscaledAtlasBurst_short)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AutoscaledAtlasBurst_long)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
