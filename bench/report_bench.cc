// Reports over a million records (docs/PERFORMANCE.md "Reports").
//
//   report_bench                          run the benchmarks
//   report_bench --write-records FILE N   write N generated records (fleetplan JSONL) to
//                                          FILE and exit, to time `fleetplan report` itself
//
// The records are generated from a fixed seed: three classes shaped like the Atlas
// scenario (70% interactive, 20% document, 10% research), ~1000 arrivals per second,
// 2% failed, with ITL-max on every answer of two tokens or more.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fleetplan/core/rng.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/metrics/report.h"
#include "fleetplan/metrics/report_files.h"

namespace fleetplan {
namespace {

constexpr const char* kSlo =
    "interactive: {ttft: 600ms, itl_max: 150ms}\n"
    "document: {ttft: 2s, tpot: 80ms}\n"
    "research:\n"
    "  e2e: 10m\n"
    "  e2e_by_output: [{max_output: 1024, e2e: 2m}, {e2e: 8m}]\n";

const std::vector<std::string> kClasses = {"interactive", "document", "research"};

int64_t Between(RngStream& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng.NextBelow(static_cast<uint64_t>(hi - lo + 1)));
}

std::vector<RequestRecord> Generate(int64_t n) {
  RngStream rng(2024, "report-bench");
  std::vector<RequestRecord> records;
  records.reserve(static_cast<size_t>(n));
  SimTime t;
  for (int64_t i = 0; i < n; ++i) {
    RequestRecord r;
    r.id = i;
    const uint64_t pick = rng.NextBelow(10);
    r.class_id = pick < 7 ? 0 : (pick < 9 ? 1 : 2);
    t += Us(Between(rng, 1, 1'999));
    r.arrival = t;
    r.input_tokens = Between(rng, 100, r.class_id == 2 ? 30'000 : 6'000);
    if (rng.NextBelow(50) == 0) {
      r.status = rng.NextBelow(2) == 0 ? RecordStatus::kTimeout : RecordStatus::kRejected;
    } else {
      r.output_tokens = Between(rng, 1, r.class_id == 2 ? 4'000 : 800);
      const Duration gap = Ms(Between(rng, 10, 90));
      r.first_token = r.arrival + Ms(Between(rng, 40, 2'500));
      r.finish = *r.first_token + gap * (r.output_tokens - 1);
      if (r.output_tokens >= 2) r.itl_max = gap + Ms(Between(rng, 0, 120));
      r.valid = rng.NextBelow(100) != 0;
    }
    records.push_back(r);
  }
  return records;
}

SloSpec ParsedSlo() {
  auto doc = YamlDocument::LoadString(kSlo, "bench-slo.yaml");
  return *ParseSlo(doc->root());
}

void BM_ReportBuilder(benchmark::State& state) {
  const std::vector<RequestRecord> records = Generate(state.range(0));
  const SloSpec slo = ParsedSlo();
  for (auto _ : state) {
    auto builder = ReportBuilder::Create(kClasses, slo, false);
    for (const RequestRecord& r : records) builder->Add(r);
    Expected<Report> report = std::move(*builder).Finish();
    benchmark::DoNotOptimize(report.ok());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ReportBuilder)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

std::string WriteRecords(const std::string& path, int64_t n) {
  WorkloadNames names;
  names.classes = kClasses;
  std::string text;
  std::ofstream out(path, std::ios::binary);
  for (const RequestRecord& r : Generate(n)) {
    AppendRecordJsonl(r, names, &text);
    if (text.size() > (1 << 20)) {
      out << text;
      text.clear();
    }
  }
  out << text;
  return path;
}

// Reading the JSONL file and building the report: what `fleetplan report` does.
void BM_ReportFromFile(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string records = WriteRecords((dir / "fleetplan_report_bench.jsonl").string(), state.range(0));
  const std::string slo = (dir / "fleetplan_report_bench_slo.yaml").string();
  std::ofstream(slo) << kSlo;
  ReportFilesRequest request;
  request.records_path = records;
  request.slo_path = slo;
  for (auto _ : state) {
    Expected<Report> report = BuildReportFromFiles(request);
    if (!report.ok()) state.SkipWithError(report.status().message().c_str());
    benchmark::DoNotOptimize(report.ok());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(std::filesystem::file_size(records)));
  std::filesystem::remove(records);
  std::filesystem::remove(slo);
}
BENCHMARK(BM_ReportFromFile)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetplan

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--write-records") {
    fleetplan::WriteRecords(argv[2], std::strtoll(argv[3], nullptr, 10));
    std::ofstream(std::string(argv[2]) + ".slo.yaml") << fleetplan::kSlo;
    std::printf("wrote %s and %s.slo.yaml\n", argv[2], argv[2]);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
