// Step cost models on the simulator's hot path: Cost() of one step of N chunks (a mix of
// decodes and prefill chunks, as a continuous-batching engine builds them). The contract
// is O(batch) with no allocation; docs/step-models.md quotes the figures.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/status.h"
#include "fleetplan/perf/affine.h"
#include "fleetplan/perf/aiconfigurator.h"
#include "fleetplan/perf/cuda_graphs.h"
#include "fleetplan/perf/roofline.h"
#include "fleetplan/perf/table.h"

namespace fleetplan {
namespace {

// Every 16th chunk a prefill chunk of 512 tokens, the rest decodes at varied contexts.
std::vector<StepChunk> Step(int64_t n, bool decode_only = false) {
  std::vector<StepChunk> chunks;
  for (int64_t i = 0; i < n; ++i) {
    if (!decode_only && i % 16 == 15) {
      chunks.push_back(StepChunk{1000 + 37 * i, 512, false});
    } else {
      chunks.push_back(StepChunk{200 + 131 * i, 1, true});
    }
  }
  return chunks;
}

void Run(benchmark::State& state, const StepCostModel& model, bool decode_only = false) {
  const std::vector<StepChunk> chunks = Step(state.range(0), decode_only);
  for (auto _ : state) {
    StepCost c = model.Cost(chunks);
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_Affine(benchmark::State& state) {
  const AffineStepModel model(AffineParams{Ms(20), Us(35), Ms(45), Us(100)});
  Run(state, model);
}

// A 17 × 17 grid: decode_batch 0..256 step 16, prefill_tokens 0..8192 step 512.
StepTable Grid() {
  std::string csv = std::string(kStepTableHeader) + "\n";
  for (int d = 0; d <= 256; d += 16) {
    for (int p = 0; p <= 8192; p += 512) csv += fmt::format("{},{},{}\n", d, p, 10 + 0.1 * d + 0.02 * p);
  }
  return StepTable::Parse(csv, "bench.csv").value();
}

void BM_Table(benchmark::State& state) {
  const TableStepModel model(Grid(), false);
  Run(state, model);
}

RooflineInputs Atlas(const char* model_name) {
  const Catalog& c = Catalog::Builtin();
  RooflineInputs in;
  in.memory.model = c.Model(model_name).value();
  in.memory.gpu = c.Gpu("h100-sxm-80g").value();
  in.memory.layout = Parallelism{4, 1, 1};
  in.tp_link = c.Link("nvlink4").value();
  in.pp_link = c.Link("ib-ndr-400").value();
  return in;
}

void BM_Roofline(benchmark::State& state) {
  const auto model = RooflineStepModel::Create(Atlas("atlas-70b")).value();
  Run(state, *model);
}

void BM_RooflineSlidingWindow(benchmark::State& state) {
  const auto model = RooflineStepModel::Create(Atlas("gemma-2-27b")).value();
  Run(state, *model);
}

void BM_GraphedAffineDecode(benchmark::State& state) {
  auto policy = CudaGraphPolicy::Create({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}, true, std::nullopt).value();
  const GraphedStepModel model(
      std::make_unique<AffineStepModel>(AffineParams{Ms(20), Us(35), Ms(45), Us(100)}), policy, 80,
      Us(34));
  Run(state, model, /*decode_only=*/true);
}

// The aiconfigurator tables of H100 SXM (vLLM 0.24.0, the shared public data) for Atlas at
// TP 4: AicShapeOf + AicKernels::Load, every table decompressed and filtered to the shapes
// of one rank. Skipped when the data is not there.
AicSource H100Tables() {
  return AicSource{std::string(FLEETPLAN_SHARED_DATA) + "/profiles/aiconfigurator/h100_sxm"};
}

AicModelShape AtlasTp4() {
  return AicShapeOf(Catalog::Builtin().Model("atlas-70b").value(), Parallelism{4, 1, 1}, DType::kBf16, DType::kBf16)
      .value();
}

void BM_AiconfiguratorLoad(benchmark::State& state) {
  const AicModelShape shape = AtlasTp4();
  for (auto _ : state) {
    auto k = AicKernels::Load(H100Tables(), shape);
    if (!k.ok()) {
      state.SkipWithError(k.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(k);
  }
}

void BM_Aiconfigurator(benchmark::State& state) {
  const AicModelShape shape = AtlasTp4();
  auto k = AicKernels::Load(H100Tables(), shape);
  if (!k.ok()) {
    state.SkipWithError(k.status().message().c_str());
    return;
  }
  const AicStepModel model(std::move(k).value(), shape, ParallelComm());
  Run(state, model);
}

BENCHMARK(BM_Affine)->Arg(1)->Arg(32)->Arg(256);
BENCHMARK(BM_Table)->Arg(1)->Arg(32)->Arg(256);
BENCHMARK(BM_Roofline)->Arg(1)->Arg(32)->Arg(256);
BENCHMARK(BM_RooflineSlidingWindow)->Arg(256);
BENCHMARK(BM_GraphedAffineDecode)->Arg(200);
BENCHMARK(BM_Aiconfigurator)->Arg(1)->Arg(32)->Arg(256);
BENCHMARK(BM_AiconfiguratorLoad)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
