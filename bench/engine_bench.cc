// The engine simulator end to end (docs/PERFORMANCE.md "Engine"): one replica, Poisson
// arrivals, prompt ~1,000 and output ~200 tokens, affine step model
// (bench/scenarios/engine-1replica.yaml), run through RunScenario exactly as
// `fleetplan simulate` runs it, without writing files.
//   BM_EngineScenario/N         N requests, prefix cache off
//   BM_EngineScenarioCached/N   the same with the prefix cache on (unique prompts: every
//                               admission looks up and publishes, nothing hits)
//   BM_FleetScenario/N          16 replicas behind a least-outstanding router with a 50 ms
//                               telemetry delay, 160 requests/s
//                               (bench/scenarios/fleet-16replica.yaml)
//   BM_SpeculationScenario/N    one llama-3.1-70b replica with a draft model, 4 tokens per
//                               round (bench/scenarios/speculation-1replica.yaml)
//   BM_PoolScenario/N           6 prefill + 10 decode replicas, prompts ~4,000 tokens,
//                               every request's KV moves, 5% of transfers delayed past
//                               their timeout and retried (bench/scenarios/pools-16replica.yaml)
// Counters: events/s of wall time, wall ns per engine step and per simulated token, and
// the simulated-to-wall time ratio.
#include <benchmark/benchmark.h>

#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

const std::string kScenarioDir = std::string(FLEETPLAN_SOURCE_DIR) + "/bench/scenarios";

Scenario LoadBenchScenario(const std::string& file, bool prefix_cache, benchmark::State& state) {
  const std::string path = kScenarioDir + "/" + file;
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) {
    state.SkipWithError(text.status().message().c_str());
    return {};
  }
  std::string yaml = *text;
  if (prefix_cache) {
    const std::string anchor = "engine:\n";
    yaml.insert(yaml.find(anchor) + anchor.size(), "  prefix_cache: {enabled: true}\n");
  }
  Expected<Scenario> s = LoadScenarioText(yaml, path, kScenarioDir);
  if (!s.ok()) {
    state.SkipWithError(s.status().message().c_str());
    return {};
  }
  return std::move(s).value();
}

void RunBenchScenario(benchmark::State& state, const std::string& file, bool prefix_cache) {
  const Scenario scenario = LoadBenchScenario(file, prefix_cache, state);
  if (state.error_occurred()) return;
  RunOptions opt;
  opt.write_files = false;
  opt.requests = state.range(0);
  int64_t steps = 0;
  int64_t tokens = 0;
  uint64_t events = 0;
  double simulated_s = 0;
  for (auto _ : state) {
    Expected<RunResult> r = RunScenario(scenario, opt);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    const Json& engine = r->report["engine"];
    steps += engine["steps"].get<int64_t>();
    tokens += engine["prefill_tokens"].get<int64_t>() + engine["decode_tokens"].get<int64_t>();
    events += r->events;
    simulated_s += r->simulated_end.seconds();
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["ns_per_step"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate |
                                                                                     benchmark::Counter::kInvert);
  state.counters["ns_per_token"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate |
                                                                                       benchmark::Counter::kInvert);
  state.counters["x_real_time"] = benchmark::Counter(simulated_s, benchmark::Counter::kIsRate);
}

void BM_EngineScenario(benchmark::State& state) { RunBenchScenario(state, "engine-1replica.yaml", false); }
void BM_EngineScenarioCached(benchmark::State& state) { RunBenchScenario(state, "engine-1replica.yaml", true); }
void BM_FleetScenario(benchmark::State& state) { RunBenchScenario(state, "fleet-16replica.yaml", false); }
void BM_PoolScenario(benchmark::State& state) { RunBenchScenario(state, "pools-16replica.yaml", false); }
void BM_SpeculationScenario(benchmark::State& state) {
  RunBenchScenario(state, "speculation-1replica.yaml", false);
}

BENCHMARK(BM_EngineScenario)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EngineScenarioCached)->Arg(100'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FleetScenario)->Arg(1'000'000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PoolScenario)->Arg(100'000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SpeculationScenario)->Arg(100'000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
