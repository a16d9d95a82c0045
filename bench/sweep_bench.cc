// What the sweep layer adds to each point (docs/PERFORMANCE.md "Sweeps"; target: under
// 5 ms per point for bind + setup + report, excluding simulated events).
//   BM_BindPoint       base + overrides + axis values -> scenario -> Bind (Atlas)
//   BM_PointOverhead   a whole point row (bind twice — once to validate, once to run —,
//                      fleet setup, one simulated request, report, figures) on Atlas
//   BM_SweepOverhead   RunSweepPoints over 64 one-request Atlas points on one thread:
//                      wall time per point, validation included
#include <benchmark/benchmark.h>

#include <string>

#include "fleetplan/sweep/point.h"
#include "fleetplan/sweep/spec.h"
#include "fleetplan/sweep/sweep.h"

namespace fleetplan {
namespace {

// Atlas with 64 configurations and a workload of (about) one request per point.
constexpr std::string_view kSpec = R"(version: 1
base: {builtin: atlas}
overrides:
  workload.duration: 100ms
  hardware.nodes: 8
axes:
  deployment.replicas: {from: 2, to: 16, step: 2}
  router.policy: [round-robin, cache-aware]
  engine.scheduler.policy: [decode-first, bounded-chunk]
  model.kv_dtype: [bf16, fp8]
)";

const SweepSpec& Spec() {
  static const SweepSpec spec = [] {
    auto s = LoadSweepSpecText(kSpec, "bench.yaml", "");
    if (!s.ok()) std::abort();
    return *s;
  }();
  return spec;
}

void BM_BindPoint(benchmark::State& state) {
  const SweepSpec& spec = Spec();
  int64_t i = 0;
  for (auto _ : state) {
    auto plan = BindPoint(spec, PointAt(spec, i++ % spec.points()));
    if (!plan.ok()) state.SkipWithError(plan.status().message().c_str());
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_BindPoint)->Unit(benchmark::kMillisecond);

void BM_PointOverhead(benchmark::State& state) {
  const SweepSpec& spec = Spec();
  int64_t i = 0;
  for (auto _ : state) {
    const PointTask p = PointAt(spec, i++ % spec.points());
    auto invalid = CheckPoint(spec, p);
    Json row = RunPoint(spec, p);
    if (invalid || row["status"] != "ok") {
      state.SkipWithError(("point did not run: " + (invalid ? invalid->dump() : row.value("reason", ""))).c_str());
    }
    benchmark::DoNotOptimize(row);
  }
}
BENCHMARK(BM_PointOverhead)->Unit(benchmark::kMillisecond);

void BM_SweepOverhead(benchmark::State& state) {
  const SweepSpec& spec = Spec();
  const std::vector<int64_t> all = ShardIndices(spec, Shard{});
  for (auto _ : state) {
    auto rows = JsonSpool::Create(spec.points());
    if (!rows.ok() || !RunSweepPoints(spec, all, 1, **rows).ok()) state.SkipWithError("the spool cannot be written");
    benchmark::DoNotOptimize(rows);
  }
  // Seconds of wall time per point: time / (points x iterations).
  state.counters["s_per_point"] = benchmark::Counter(
      static_cast<double>(all.size()), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SweepOverhead)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
