// Workload benchmarks: generating, writing, importing and summarising a million
// requests. Figures are recorded in docs/PERFORMANCE.md ("Workload"); run with
//   build/release/workload_bench --benchmark_filter=Workload
// Import benchmarks read from memory (a million-row file is built once from the shared
// public traces, timestamps shifted so rows stay in order), so they time parsing, not
// the disk.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <sstream>
#include <streambuf>
#include <string>

#include <fmt/format.h>

#include "fleetplan/core/yaml.h"
#include "fleetplan/workload/generator.h"
#include "fleetplan/workload/trace.h"
#include "fleetplan/workload/trace_stats.h"
#include "fleetplan/workload/workload_spec.h"

namespace fleetplan {
namespace {

constexpr int64_t kMillion = 1'000'000;

// The Atlas reference workload (spec/scenario-v1.yaml) plus a conversational class.
constexpr const char* kAtlas = R"(workload:
  arrival: {process: poisson, rate: 8/s}
  tenants: {count: 20, popularity: {zipf: 1.1}}
  classes:
    interactive:
      share: 0.60
      prompt:
        - {segment: tenant-instructions, tokens: 1500}
        - {segment: unique, tokens: {lognormal: {median: 300, p99: 2000}}}
      output_tokens: {lognormal: {median: 150, p99: 800}}
    chat:
      share: 0.10
      prompt:
        - {segment: tenant-instructions, tokens: 800}
        - {segment: history}
        - {segment: unique, tokens: {lognormal: {median: 100, p99: 600}}}
      output_tokens: {lognormal: {median: 200, p99: 900}}
      session: {turns: {uniform: [1, 6]}, think_time: {exponential: {mean: 20s}}}
    document:
      share: 0.20
      prompt:
        - {segment: tenant-instructions, tokens: 1500}
        - {segment: document, tokens: 4000, pool: 200}
        - {segment: unique, tokens: 500}
      output_tokens: {lognormal: {median: 200, p99: 300}, max: 300}
    research:
      share: 0.10
      prompt:
        - {segment: unique, tokens: {uniform: [8000, 30000]}}
      output_tokens: {uniform: [1000, 4000]}
)";

WorkloadSpec AtlasSpec() {
  auto doc = YamlDocument::LoadString(kAtlas, "atlas.yaml");
  auto spec = ParseWorkloadSpec(doc->root()["workload"]);
  if (!spec.ok()) {
    fmt::print(stderr, "{}\n", spec.status().message());
    std::abort();
  }
  return *spec;
}

SourceLimits Requests(int64_t n) {
  SourceLimits l;
  l.requests = n;
  return l;
}

// A read-only istream over a string, without copying it.
class StringViewBuf : public std::streambuf {
 public:
  explicit StringViewBuf(const std::string& s) {
    char* p = const_cast<char*>(s.data());  // NOLINT: get area only, never written
    setg(p, p, p + s.size());
  }
};

class ViewStream : public std::istream {
 public:
  explicit ViewStream(const std::string& s) : std::istream(nullptr), buf_(s) { rdbuf(&buf_); }
 private:
  StringViewBuf buf_;
};

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "cannot read {}\n", path);
    std::abort();
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One million Mooncake rows: the shared conversation trace repeated, each copy shifted
// by the trace's span so timestamps stay sorted (hash ids repeat, as a replayed hour would).
const std::string& MillionMooncakeRows() {
  static const std::string text = [] {
    const std::string base = ReadFileOrDie(std::string(FLEETPLAN_SHARED_DATA) + "/traces/mooncake/conversation_trace.jsonl");
    constexpr int64_t kSpanMs = 3'600'000;
    std::string out;
    out.reserve(260u << 20);
    int64_t rows = 0;
    for (int64_t copy = 0; rows < kMillion; ++copy) {
      size_t pos = 0;
      while (pos < base.size() && rows < kMillion) {
        const size_t nl = base.find('\n', pos);
        const std::string_view line(base.data() + pos, nl - pos);
        const size_t colon = line.find(':');
        const size_t comma = line.find(',');
        const int64_t ts = std::stoll(std::string(line.substr(colon + 1, comma - colon - 1)));
        out += fmt::format("{{\"timestamp\": {}{}\n", ts + copy * kSpanMs, line.substr(comma));
        pos = nl + 1;
        ++rows;
      }
    }
    return out;
  }();
  return text;
}

// One million Azure rows: the shared code trace's lengths with arrivals every 3.4 ms.
const std::string& MillionAzureRows() {
  static const std::string text = [] {
    const std::string base = ReadFileOrDie(std::string(FLEETPLAN_SHARED_DATA) + "/traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv");
    std::vector<std::string> lengths;
    size_t pos = base.find('\n') + 1;
    while (pos < base.size()) {
      size_t nl = base.find('\n', pos);
      if (nl == std::string::npos) nl = base.size();
      const std::string_view line(base.data() + pos, nl - pos);
      lengths.emplace_back(line.substr(line.find(',')));
      pos = nl + 1;
    }
    std::string out = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
    out.reserve(40u << 20);
    for (int64_t i = 0; i < kMillion; ++i) {
      const int64_t us = i * 3400;  // 3.4 ms apart
      const int64_t s = us / 1'000'000;
      out += fmt::format("2023-11-16 {:02d}:{:02d}:{:02d}.{:06d}0{}\n", 10 + s / 3600, s / 60 % 60, s % 60,
                         us % 1'000'000, lengths[static_cast<size_t>(i) % lengths.size()]);
    }
    return out;
  }();
  return text;
}

void BM_WorkloadGenerate(benchmark::State& state) {
  const WorkloadSpec spec = AtlasSpec();
  for (auto _ : state) {
    auto gen = MakeGenerator(spec, 42, Requests(state.range(0)));
    int64_t tokens = 0;
    while (true) {
      auto next = (*gen)->Next();
      if (!next->has_value()) break;
      tokens += (**next).prompt_tokens();
    }
    benchmark::DoNotOptimize(tokens);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_WorkloadGenerate)->Arg(kMillion)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_WorkloadGenerateAndWriteJsonl(benchmark::State& state) {
  const WorkloadSpec spec = AtlasSpec();
  const std::string path = (std::filesystem::temp_directory_path() / "fleetplan-bench-gen.jsonl").string();
  for (auto _ : state) {
    auto gen = MakeGenerator(spec, 42, Requests(state.range(0)));
    auto writer = TraceWriter::Create(path);
    while (true) {
      auto next = (*gen)->Next();
      if (!next->has_value()) break;
      (void)(*writer)->Write(**next, (*gen)->names());
    }
    benchmark::DoNotOptimize((*writer)->Finish((*gen)->names(), (*gen)->Describe()));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(std::filesystem::file_size(path)));
  std::filesystem::remove(path);
}
BENCHMARK(BM_WorkloadGenerateAndWriteJsonl)->Arg(kMillion)->Unit(benchmark::kMillisecond)->Iterations(3);

template <typename Fn>
void ImportBench(benchmark::State& state, const std::string& text, TraceFormat format, Fn per_request) {
  TraceReadOptions options;
  options.format = format;
  int64_t n = 0;
  for (auto _ : state) {
    auto source = OpenTraceStream(std::make_unique<ViewStream>(text), "bench", options);
    n = 0;
    while (true) {
      auto next = (*source)->Next();
      if (!next.ok()) {
        fmt::print(stderr, "{}\n", next.status().message());
        std::abort();
      }
      if (!next->has_value()) break;
      per_request(**next);
      ++n;
    }
    benchmark::DoNotOptimize((*source)->FinishDigest());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void BM_WorkloadImportMooncake(benchmark::State& state) {
  int64_t tokens = 0;
  ImportBench(state, MillionMooncakeRows(), TraceFormat::kMooncake, [&](const Request& r) { tokens += r.output_tokens; });
  benchmark::DoNotOptimize(tokens);
}
BENCHMARK(BM_WorkloadImportMooncake)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_WorkloadImportAzure(benchmark::State& state) {
  int64_t tokens = 0;
  ImportBench(state, MillionAzureRows(), TraceFormat::kAzure, [&](const Request& r) { tokens += r.output_tokens; });
  benchmark::DoNotOptimize(tokens);
}
BENCHMARK(BM_WorkloadImportAzure)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_WorkloadStatsMooncake(benchmark::State& state) {
  for (auto _ : state) {
    TraceStatsAccumulator acc;
    TraceReadOptions options;
    options.format = TraceFormat::kMooncake;
    auto source = OpenTraceStream(std::make_unique<ViewStream>(MillionMooncakeRows()), "bench", options);
    while (true) {
      auto next = (*source)->Next();
      if (!next->has_value()) break;
      acc.Add(**next);
    }
    benchmark::DoNotOptimize(acc.Finish((*source)->names()));
  }
  state.SetItemsProcessed(state.iterations() * kMillion);
}
BENCHMARK(BM_WorkloadStatsMooncake)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace fleetplan

BENCHMARK_MAIN();
