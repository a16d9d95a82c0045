// `fleetplan plan` on the Atlas bundle (docs/PERFORMANCE.md "Plan"; target: `make run`'s
// plan under 30 s).
//   BM_PlanAtlas              the whole decision: inputs, coverage and controls, layout
//                             ranking, capacity of TP4 and TP8 with the verification
//                             through the largest domain's loss, the chosen fleet at
//                             peak, the quantization gate, the ladder, and the four
//                             perturbations with their threshold searches
//   BM_PlanAtlasNoSensitivity the same without the perturbations
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/decision/plan.h"

namespace fleetplan {
namespace {

PlanBundle Atlas() {
  const std::string dir = (std::filesystem::temp_directory_path() / "fleetplan_plan_bench").string();
  if (!WriteAtlasBundle(dir).ok()) std::abort();
  auto b = LoadPlanBundle(dir + "/plan.yaml");
  if (!b.ok()) std::abort();
  return *b;
}

void Run(benchmark::State& state, bool sensitivity) {
  const PlanBundle bundle = Atlas();
  PlanOptions o;
  o.as_of = *ParseUtcTime("2026-12-01T00:00:00Z");
  o.sensitivity = sensitivity;
  for (auto _ : state) {
    auto r = RunPlan(bundle, o);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
}

void BM_PlanAtlas(benchmark::State& state) { Run(state, true); }
BENCHMARK(BM_PlanAtlas)->Unit(benchmark::kSecond)->Iterations(3)->UseRealTime();

void BM_PlanAtlasNoSensitivity(benchmark::State& state) { Run(state, false); }
BENCHMARK(BM_PlanAtlasNoSensitivity)->Unit(benchmark::kSecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
