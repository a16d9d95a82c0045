// Layout search on growing clusters: every composition enumerated, placed, fitted and
// timed (plan/layout.h). Targets: a 64-GPU search under 1 s, a 1,024-GPU one under 10 s
// (docs/PERFORMANCE.md, "Layout").
#include <benchmark/benchmark.h>

#include <string>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/layout.h"

namespace fleetplan {
namespace {

void SearchOn(benchmark::State& state, const std::string& model, const std::string& cluster_form) {
  const Catalog& catalog = Catalog::Builtin();
  Expected<Cluster> cluster = ParseClusterShortForm(cluster_form, catalog);
  if (!cluster.ok()) {
    state.SkipWithError(cluster.status().message().c_str());
    return;
  }
  LayoutRequest request;
  request.model = *catalog.Model(model);
  int64_t feasible = 0;
  int64_t rejected = 0;
  for (auto _ : state) {
    Expected<LayoutResult> result = SearchLayouts(request, *cluster);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    feasible = static_cast<int64_t>(result->feasible.size());
    rejected = static_cast<int64_t>(result->rejected.size());
    benchmark::DoNotOptimize(result->feasible.data());
  }
  state.counters["gpus"] = static_cast<double>(cluster->gpus());
  state.counters["feasible"] = static_cast<double>(feasible);
  state.counters["rejected"] = static_cast<double>(rejected);
}

void BM_Layout64GpusDense(benchmark::State& state) {
  SearchOn(state, "atlas-70b", "8x8xh100-sxm-80g");
}
void BM_Layout64GpusMoe(benchmark::State& state) {
  SearchOn(state, "deepseek-v3", "8x8xh200-141g");
}
void BM_Layout1024GpusDense(benchmark::State& state) {
  SearchOn(state, "atlas-70b", "16x8x8xh100-sxm-80g");
}
void BM_Layout1024GpusMoe(benchmark::State& state) {
  SearchOn(state, "deepseek-v3", "16x8x8xh200-141g");
}

BENCHMARK(BM_Layout64GpusDense)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Layout64GpusMoe)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Layout1024GpusDense)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Layout1024GpusMoe)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
