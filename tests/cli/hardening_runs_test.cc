// What long runs say while and after they run: the progress line (M2), the fit verdict
// and over-capacity hint in simulate's summary (D10, D11), and what fit's `derived` lists
// (D2, D3). One test per defect, named after it.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"

namespace fleetplan::cli {
namespace {

using testing::CliRun;

std::string Temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// One replica of a small model with a fixed step cost; `rate` and `duration` set the load.
std::string Scenario(const std::string& rate, const std::string& duration, int64_t max_running = 32) {
  return fmt::format(R"(version: 1
name: runs
seed: 5
model: {{name: llama-3.1-8b, max_context: 8192}}
hardware: {{gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}}
deployment: {{replicas: 1, tp: 1}}
engine:
  scheduler: {{max_batched_tokens: 8192, max_running: {}}}
  step_model: {{kind: affine, prefill: {{base: 8ms, per_token: 0.02ms}}, decode: {{base: 20ms, per_seq: 0.2ms}}}}
workload:
  duration: {}
  arrival: {{process: poisson, rate: {}}}
  classes:
    chat: {{share: 1, prompt: [{{segment: unique, tokens: 1000}}], output_tokens: 100}}
slo:
  chat: {{ttft: 1s}}
)",
                     max_running, duration, rate);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

TEST(HardeningRuns, M2_SimulateProgressCountsSimulatedTimeAndEndsWithTheFinalState) {
  const std::string path = Temp("m2.yaml", Scenario("4/s", "20s"));
  const CliRun r = testing::RunFleetplan({"simulate", path, "--json", "--out", ::testing::TempDir() + "m2-out"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  // Not a terminal: plain lines, the last one the final state — the whole duration, the
  // run's own request count and where it ended, not the last sample.
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_FALSE(lines.empty());
  const std::string& last = lines.back();
  EXPECT_EQ(last.rfind("simulate [########################] 20/20 simulated s 100% in ", 0), 0u) << r.err;
  EXPECT_NE(last.find(fmt::format(", {} requests done, simulated to {:.1f} s", j["simulation"]["requests"].get<int64_t>(),
                                  j["simulation"]["end_s"].get<double>())),
            std::string::npos)
      << last;
  const CliRun quiet =
      testing::RunFleetplan({"simulate", path, "--quiet", "--json", "--out", ::testing::TempDir() + "m2-out"});
  EXPECT_EQ(quiet.err, "");
  EXPECT_EQ(quiet.out, r.out);  // progress never reaches the results
}

TEST(HardeningRuns, M2_TraceVerbsDrawProgressAndQuietSilencesIt) {
  const std::string path = Temp("m2-trace.yaml", Scenario("4/s", "20s"));
  const std::string trace = ::testing::TempDir() + "m2.jsonl";
  const CliRun gen = testing::RunFleetplan({"trace", "gen", path, "-o", trace});
  ASSERT_EQ(gen.code, 0) << gen.err;
  EXPECT_EQ(Lines(gen.err).back().rfind("trace gen [########################] 20/20 s of arrivals 100% in ", 0), 0u)
      << gen.err;
  const CliRun stats = testing::RunFleetplan({"trace", "stats", trace, "--requests", "10"});
  ASSERT_EQ(stats.code, 0) << stats.err;
  EXPECT_EQ(Lines(stats.err).back().rfind("trace stats [########################] 10/10 requests 100% in ", 0), 0u)
      << stats.err;
  const CliRun convert = testing::RunFleetplan({"trace", "convert", trace, "-o", ::testing::TempDir() + "m2c.jsonl"});
  ASSERT_EQ(convert.code, 0) << convert.err;
  EXPECT_EQ(Lines(convert.err).back().rfind("trace convert ", 0), 0u) << convert.err;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"trace", "gen", path, "-o", trace, "--quiet"},
        std::vector<std::string>{"trace", "stats", trace, "--quiet"},
        std::vector<std::string>{"trace", "convert", trace, "-o", ::testing::TempDir() + "m2c.jsonl", "--quiet"}}) {
    const CliRun r = testing::RunFleetplan(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "") << args[1];
  }
}

TEST(HardeningRuns, M2_LayoutDrawsProgressOverItsCandidates) {
  const CliRun r = testing::RunFleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "2x8xh100-sxm-80g"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string last = Lines(r.err).back();
  EXPECT_EQ(last.rfind("layout [########################] ", 0), 0u) << r.err;
  EXPECT_NE(last.find(" layouts 100% in "), std::string::npos) << r.err;
  const CliRun quiet =
      testing::RunFleetplan({"layout", "--model", "llama-3.1-8b", "--cluster", "2x8xh100-sxm-80g", "--quiet"});
  EXPECT_EQ(quiet.err, "");
  EXPECT_EQ(quiet.out, r.out);
}

TEST(HardeningRuns, M2_AFailedRunPrintsItsErrorNotAProgressLine) {
  const std::string bad = Temp("m2-bad.jsonl", "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": \"x\", \"hash_ids\": [1]}\n");
  const CliRun r = testing::RunFleetplan({"trace", "stats", bad, "--format", "mooncake"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind(bad + ":1:", 0), 0u) << r.err;
}

TEST(HardeningRuns, D11_SimulateSaysWhenTheFleetIsOverCapacity) {
  // One replica at 40 requests/s of 1,000-token prompts cannot keep up: in flight grows.
  const CliRun over = testing::RunFleetplan({"simulate", Temp("d11-over.yaml", Scenario("40/s", "30s")), "--quiet",
                                             "--out", ::testing::TempDir() + "d11-a"});
  ASSERT_EQ(over.code, 0) << over.err;
  EXPECT_NE(over.out.find("OVER CAPACITY: requests arrived at "), std::string::npos) << over.out;
  EXPECT_NE(over.out.find("size the fleet for its SLOs with `fleetplan capacity`"), std::string::npos) << over.out;
  // At 2 requests/s it keeps up: no hint.
  const CliRun fine = testing::RunFleetplan({"simulate", Temp("d11-fine.yaml", Scenario("2/s", "30s")), "--quiet",
                                             "--out", ::testing::TempDir() + "d11-b"});
  ASSERT_EQ(fine.code, 0) << fine.err;
  EXPECT_EQ(fine.out.find("OVER CAPACITY"), std::string::npos) << fine.out;
}

TEST(HardeningRuns, D10_SimulateAndFitGiveTheSameVerdictOnAScenario) {
  // max_running 512 sequences of 8,192 tokens do not fit one H100's KV; fit says so (exit
  // 1) and so does simulate's summary, while it still runs.
  const std::string path = Temp("d10.yaml", Scenario("2/s", "10s", 512));
  const CliRun fit = testing::RunFleetplan({"fit", "--scenario", path});
  EXPECT_EQ(fit.code, 1) << fit.out << fit.err;
  const CliRun sim = testing::RunFleetplan({"simulate", path, "--quiet", "--out", ::testing::TempDir() + "d10"});
  ASSERT_EQ(sim.code, 0) << sim.err;
  EXPECT_NE(sim.out.find("does not fit as configured: engine.scheduler.max_running 512 sequences of max_context 8192"),
            std::string::npos)
      << sim.out;
  const CliRun fits = testing::RunFleetplan({"simulate", Temp("d10-ok.yaml", Scenario("2/s", "10s", 8)), "--quiet",
                                             "--out", ::testing::TempDir() + "d10"});
  ASSERT_EQ(fits.code, 0) << fits.err;
  EXPECT_EQ(fits.out.find("does not fit"), std::string::npos) << fits.out;
}

TEST(HardeningRuns, D2_FitDerivedListsFlagOverrides) {
  const std::string path = Temp("d2.yaml", Scenario("2/s", "10s", 8));
  const CliRun r = testing::RunFleetplan({"fit", "--scenario", path, "--tp", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_TRUE(j.contains("derived")) << r.out;
  EXPECT_NE(j["derived"].dump().find("--tp 2 (flag, overrides the scenario's deployment.tp)"), std::string::npos)
      << j["derived"].dump();
}

TEST(HardeningRuns, D3_FitListsAUserCatalogOverridingABuiltInModel) {
  const std::string catalog = Temp("d3-long-llama.yaml",
                                   "models:\n  llama-3.1-8b: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, "
                                   "head_dim: 128, intermediate: 14336, vocab: 128256, max_context: 262144}\n");
  const CliRun r = testing::RunFleetplan(
      {"fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-80g", "--catalog", catalog, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_NE(j["derived"].dump().find("catalog: models.llama-3.1-8b (" + catalog + ") overrides the built-in entry"),
            std::string::npos)
      << j["derived"].dump();
  EXPECT_NE(r.out.find("262144"), std::string::npos);  // the override's context is the one checked
}

// The small scenario with `section` (one engine key) in its engine, replacing its own.
std::string WithEngine(const std::string& section) {
  std::string text = Scenario("2/s", "5s", 8);
  const std::string key = section.substr(0, section.find(':'));
  if (const size_t at = text.find(key + ":"); at != std::string::npos) text.erase(at, text.find('\n', at) - at + 1);
  text.replace(text.find("engine:\n"), 8, "engine:\n" + section);
  return text;
}

// The keys the reader accepts in a section (from its unknown-key error).
std::vector<std::string> ValidKeysOf(const std::string& engine_yaml) {
  const std::string text = WithEngine(engine_yaml);
  const CliRun r = testing::RunFleetplan({"simulate", Temp("d1-probe.yaml", text), "--quiet", "--out",
                                          ::testing::TempDir() + "d1"});
  const size_t at = r.err.find("(valid: ");
  EXPECT_NE(at, std::string::npos) << r.err;
  std::vector<std::string> keys;
  std::string list = r.err.substr(at + 8, r.err.find(')', at) - at - 8);
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(", ", start), list.size());
    keys.push_back(list.substr(start, comma - start));
    start = comma + 2;
  }
  return keys;
}

Json NotesOf(const std::string& engine_yaml) {
  const std::string text = WithEngine(engine_yaml);
  const CliRun r = testing::RunFleetplan({"simulate", Temp("d1.yaml", text), "--quiet", "--json", "--out",
                                          ::testing::TempDir() + "d1"});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? Json::parse(r.out)["notes"] : Json::array();
}

TEST(HardeningRuns, D1_EveryAbsentStepModelAndCudaGraphsKeyHasANote) {
  // Each section written with only what it requires; every other key the reader accepts
  // must then be listed in notes with the value filled in.
  struct Case {
    std::string probe;    // the section with an unknown key, to learn the valid ones
    std::string minimal;  // the section with only its required keys
    std::string path;     // the section's key path
    std::vector<std::string> required;
  };
  const std::vector<Case> cases = {
      {"  step_model: {kind: roofline, bogus: 1}\n", "  step_model: {kind: roofline}\n", "engine.step_model", {"kind"}},
      {"  cuda_graphs: {buckets: [1, 8], bogus: 1}\n", "  cuda_graphs: {buckets: [1, 8]}\n", "engine.cuda_graphs",
       {"buckets"}},
      {"  step_model: {kind: aiconfigurator, bogus: 1}\n", "  step_model: {kind: aiconfigurator}\n",
       "engine.step_model", {"kind"}},
  };
  for (const Case& c : cases) {
    const std::string notes = NotesOf(c.minimal).dump();
    for (const std::string& key : ValidKeysOf(c.probe)) {
      if (std::find(c.required.begin(), c.required.end(), key) != c.required.end()) continue;
      EXPECT_NE(notes.find(c.path + "." + key + ": "), std::string::npos) << c.path << "." << key << " not in " << notes;
    }
  }
  // With no step_model at all, the GPU's default (the measured kernels that ship for the
  // H100) and each of its defaults are listed; on a GPU with no tables, the roofline's.
  std::string text = Scenario("2/s", "5s", 8);
  const size_t at = text.find("  step_model:");
  text.erase(at, text.find('\n', at) - at + 1);
  const CliRun r = testing::RunFleetplan({"simulate", Temp("d1-none.yaml", text), "--quiet", "--json", "--out",
                                          ::testing::TempDir() + "d1"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string notes = Json::parse(r.out)["notes"].dump();
  for (const char* note : {"engine.step_model: aiconfigurator on the measured kernel tables that ship for h100-sxm-80g",
                           "engine.step_model.dir: ", "engine.step_model.version: ",
                           "engine.step_model.moe_distribution: ", "engine.step_model.collectives: ",
                           "engine.step_model.other_kernels: ", "engine.version: 0.10 (not given)",
                           "engine.host_overhead: 1.322 ms per step"}) {
    EXPECT_NE(notes.find(note), std::string::npos) << note << " not in " << notes;
  }
  ASSERT_NE(text.find("h100-sxm-80g"), std::string::npos);
  text.replace(text.find("h100-sxm-80g"), std::string("h100-sxm-80g").size(), "a100-80g");
  const CliRun a100 = testing::RunFleetplan({"simulate", Temp("d1-a100.yaml", text), "--quiet", "--json", "--out",
                                             ::testing::TempDir() + "d1a"});
  ASSERT_EQ(a100.code, 0) << a100.err;
  const std::string roofline_notes = Json::parse(a100.out)["notes"].dump();
  for (const char* note : {"engine.step_model: roofline: no measured kernel tables ship for a100-80g (not given)",
                           "engine.step_model.compute_efficiency: ", "engine.step_model.attention_efficiency: ",
                           "engine.step_model.memory_efficiency: "}) {
    EXPECT_NE(roofline_notes.find(note), std::string::npos) << note << " not in " << roofline_notes;
  }
}

TEST(HardeningRuns, D4_LayoutUsesTheCheckpointsFormatsAndListsItsDefaults) {
  const CliRun r = testing::RunFleetplan({"layout", "--model", "deepseek-v3", "--cluster", "2x8xh200-141g", "--json"});
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["inputs"]["weight_dtype"], "fp8");  // deepseek-v3 ships fp8 weights
  EXPECT_EQ(j["inputs"]["kv_dtype"], "bf16");     // narrower than 16 bits: KV in bf16
  const std::string derived = j["derived"].dump();
  for (const char* note : {"weight_dtype fp8: the checkpoint's (--weight-dtype not given)",
                           "kv_dtype bf16: the activation format, as fit (--kv-dtype not given)",
                           "gpu_memory_utilization 0.9: default, as fit", "runtime vllm: default",
                           "all-reduce ring: default", "microbatches 1: default", "batch 64: default"}) {
    EXPECT_NE(derived.find(note), std::string::npos) << note << " not in " << derived;
  }
  // fit's defaults are the same formats.
  const CliRun fit = testing::RunFleetplan({"fit", "--model", "deepseek-v3", "--gpu", "h200-141g", "--tp", "8",
                                            "--pp", "2", "--context", "8192", "--json"});
  ASSERT_TRUE(fit.code == 0 || fit.code == 1) << fit.err;
  const std::string fit_derived = Json::parse(fit.out)["derived"].dump();
  EXPECT_NE(fit_derived.find("weight_dtype fp8 (the checkpoint's)"), std::string::npos) << fit_derived;
  EXPECT_NE(fit_derived.find("kv_dtype bf16"), std::string::npos) << fit_derived;
}

}  // namespace
}  // namespace fleetplan::cli
