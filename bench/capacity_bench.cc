// `fleetplan capacity` on examples/capacity.yaml (docs/PERFORMANCE.md "Capacity"; target:
// a fresh search for two layouts in under 60 s).
//   BM_CapacityExample   the whole sizing: one-replica max-rate search of TP4 and TP8 on
//                        the Atlas workload, requirements, placement across four failure
//                        domains, price, and the simulation of the chosen fleet through
//                        the loss of its largest domain; `jobs` threads for the layouts
//   BM_CapacityArithmetic the same spec with a declared per-replica rate and no
//                        simulation: the arithmetic alone
#include <benchmark/benchmark.h>

#include <string>

#include "fleetplan/capacity/capacity.h"
#include "fleetplan/capacity/spec.h"

namespace fleetplan {
namespace {

CapacitySpec Example() {
  auto s = LoadCapacitySpec(std::string(FLEETPLAN_SOURCE_DIR) + "/examples/capacity.yaml");
  if (!s.ok()) std::abort();
  return *s;
}

void BM_CapacityExample(benchmark::State& state) {
  const CapacitySpec spec = Example();
  CapacityOptions opt;
  opt.jobs = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto r = SizeCapacity(spec, opt);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_CapacityExample)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_CapacityArithmetic(benchmark::State& state) {
  CapacitySpec spec = Example();
  spec.replica_capacity.kind = ReplicaCapacitySource::Kind::kRate;
  spec.replica_capacity.rate = Rate{2.4};
  CapacityOptions opt;
  opt.verify = false;
  for (auto _ : state) {
    auto r = SizeCapacity(spec, opt);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_CapacityArithmetic)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetplan
BENCHMARK_MAIN();
