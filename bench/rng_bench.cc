// Draws per second of RngStream and of each distribution (items/s in the output).
//
//   rng_bench --benchmark_filter=Gamma
//
// Every benchmark draws from one stream in a loop and keeps the result alive with
// DoNotOptimize; the distribution is built once outside the timed loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "fleetplan/core/distributions.h"
#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

template <typename Draw>
void RunDraws(benchmark::State& state, Draw draw) {
  RngStream rng(42, "bench");
  for (auto _ : state) benchmark::DoNotOptimize(draw(rng));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_NextU64(benchmark::State& state) {
  RunDraws(state, [](RngStream& r) { return r.NextU64(); });
}
BENCHMARK(BM_NextU64);

void BM_NextDouble(benchmark::State& state) {
  RunDraws(state, [](RngStream& r) { return r.NextDouble(); });
}
BENCHMARK(BM_NextDouble);

void BM_NextBelow(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  RunDraws(state, [n](RngStream& r) { return r.NextBelow(n); });
}
BENCHMARK(BM_NextBelow)->Arg(6)->Arg(1000003);

void BM_StandardNormal(benchmark::State& state) {
  RunDraws(state, [](RngStream& r) { return SampleStandardNormal(r); });
}
BENCHMARK(BM_StandardNormal);

void BM_Exponential(benchmark::State& state) {
  const Exponential dist = *Exponential::Make(1.0);
  RunDraws(state, [&](RngStream& r) { return dist.Sample(r); });
}
BENCHMARK(BM_Exponential);

// Arg: cv in percent (shape 1/cv^2: 25% -> 16, 100% -> 1, 200% -> 0.25 with the boost).
void BM_Gamma(benchmark::State& state) {
  const double cv = static_cast<double>(state.range(0)) / 100.0;
  const Gamma dist = *Gamma::Make(1.0, cv);
  RunDraws(state, [&](RngStream& r) { return dist.Sample(r); });
}
BENCHMARK(BM_Gamma)->Arg(25)->Arg(100)->Arg(200);

void BM_Lognormal(benchmark::State& state) {
  const Lognormal dist = *Lognormal::FromMedianP99(100, 1000);
  RunDraws(state, [&](RngStream& r) { return dist.Sample(r); });
}
BENCHMARK(BM_Lognormal);

void BM_Uniform(benchmark::State& state) {
  const Uniform dist = *Uniform::Make(-1, 1);
  RunDraws(state, [&](RngStream& r) { return dist.Sample(r); });
}
BENCHMARK(BM_Uniform);

// Arg: number of ranks (the table is binary-searched: O(log n) per draw).
void BM_Zipf(benchmark::State& state) {
  const Zipf dist = *Zipf::Make(state.range(0), 1.1);
  RunDraws(state, [&](RngStream& r) { return dist.Sample(r); });
}
BENCHMARK(BM_Zipf)->Arg(100)->Arg(1'000'000);

// Arg: number of values.
void BM_Empirical(benchmark::State& state) {
  std::vector<double> values;
  for (int64_t i = 0; i < state.range(0); ++i) values.push_back(static_cast<double>(i % 977));
  const Empirical dist = *Empirical::Make(std::move(values));
  RunDraws(state, [&](RngStream& r) { return dist.Sample(r); });
}
BENCHMARK(BM_Empirical)->Arg(1000);

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
