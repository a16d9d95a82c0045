// Docs that promise what the code does: every YAML example in docs/ runs (D12), every
// `--json` output has one canonical indented form (D6), the workload reference page
// lists every key the reader accepts (D5), docs name no file outside the repository
// (D9), and `validate`'s text shows the queue its help promises (D7).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/capacity/spec.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/rollout/ladder.h"
#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/decision/policy.h"
#include "fleetplan/sweep/spec.h"
#include "support/shared_data.h"

namespace fleetplan::cli {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

std::vector<fs::path> DocFiles() {
  std::vector<fs::path> files = {fs::path(FLEETPLAN_SOURCE_DIR) / "README.md"};
  for (const auto& entry : fs::directory_iterator(fs::path(FLEETPLAN_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct Block {
  std::string lang;  // the fence's info string ("yaml", "" ...)
  std::string text;
  int line = 0;      // of the opening fence
};

std::vector<Block> Blocks(const std::string& doc) {
  std::vector<Block> blocks;
  std::istringstream in(doc);
  std::string line;
  int number = 0;
  std::optional<Block> open;
  while (std::getline(in, line)) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      if (open) {
        blocks.push_back(*open);
        open.reset();
      } else {
        open = Block{line.substr(3), "", number};
      }
    } else if (open) {
      open->text += line + "\n";
    }
  }
  return blocks;
}

// "# lab-links.yaml (a user catalog file)" -> "lab-links.yaml": a block that names itself
// is a file other examples may refer to.
std::string SelfName(const std::string& text) {
  static const std::regex named(R"(^# ([A-Za-z0-9_./-]+\.(yaml|csv))\b)");
  std::smatch m;
  const std::string first = text.substr(0, text.find('\n'));
  return std::regex_search(first, m, named) ? m[1].str() : "";
}

// The scenario a fragment is merged into: small, fast, with classes the SLO examples of
// the docs name.
YAML::Node BaseScenario() {
  return YAML::Load(R"(version: 1
name: docs-example
seed: 3
model: {name: llama-3.1-8b, max_context: 16384}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment: {replicas: 2, tp: 1}
engine:
  scheduler: {max_batched_tokens: 8192, max_running: 64}
  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, per_seq: 0.1ms}}
workload:
  requests: 40
  arrival: {process: poisson, rate: 10/s}
  classes:
    chat: {share: 1, prompt: [{segment: unique, tokens: 3000}], output_tokens: 30}
)");
}

// Root sections replace the base's; `engine` merges key by key (examples show one knob).
// An `slo` without a workload gets a workload whose classes are the SLO's.
YAML::Node Merge(const YAML::Node& fragment) {
  YAML::Node base = BaseScenario();
  for (const auto& kv : fragment) {
    const std::string key = kv.first.as<std::string>();
    if (key == "engine") {
      for (const auto& e : kv.second) base["engine"][e.first.as<std::string>()] = e.second;
    } else if (key == "step_model") {
      base["engine"]["step_model"] = kv.second;
    } else {
      base[key] = kv.second;
    }
  }
  if (fragment["slo"] && !fragment["workload"]) {
    YAML::Node classes;
    const double share = 1.0 / static_cast<double>(fragment["slo"].size());
    for (const auto& c : fragment["slo"]) {
      classes[c.first.as<std::string>()] = YAML::Load(
          fmt::format("{{share: {}, prompt: [{{segment: unique, tokens: 500}}], output_tokens: 20}}", share));
    }
    base["workload"]["classes"] = classes;
  }
  if (base["workload"]["duration"] && base["workload"]["requests"]) base["workload"].remove("duration");
  return base;
}

std::string Emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

bool KeysWithin(const YAML::Node& node, const std::set<std::string>& allowed) {
  if (!node.IsMap()) return false;
  for (const auto& kv : node) {
    if (allowed.count(kv.first.as<std::string>()) == 0) return false;
  }
  return true;
}

// Runs one YAML example the way its kind is used; returns what failed, or "".
std::string RunExample(const Block& block, const fs::path& dir, const std::string& where) {
  YAML::Node node;
  try {
    node = YAML::Load(block.text);
  } catch (const YAML::Exception& e) {
    return fmt::format("{}: not YAML: {}", where, e.what());
  }
  const std::string self = SelfName(block.text);
  const std::string path = (dir / (self.empty() ? fmt::format("example-{}.yaml", block.line) : self)).string();
  std::vector<std::string> args;
  if (node["base"] && node["axes"]) {
    // A sweep spec: read by the sweep reader, which also loads and overrides its base
    // (running every point is minutes; the sweep's own tests run small ones).
    std::ofstream(path) << block.text;
    std::ofstream(dir / "atlas.yaml") << AtlasScenarioYaml();
    const Expected<SweepSpec> spec = LoadSweepSpec(path);
    return spec.ok() ? "" : fmt::format("{}: the sweep reader rejects it: {}", where, spec.status().message());
  }
  if (node["scenario"] && node["demand"]) {
    // A capacity spec: read by its reader, which also loads its scenario (sizing searches
    // and simulates for seconds; the capacity tests run small ones).
    std::ofstream(path) << block.text;
    std::ofstream(dir / "atlas.yaml") << AtlasScenarioYaml();
    const Expected<CapacitySpec> spec = LoadCapacitySpec(path);
    return spec.ok() ? "" : fmt::format("{}: the capacity reader rejects it: {}", where, spec.status().message());
  }
  if (node["stages"] && node["candidate"]) {
    // A rollout ladder: read by its reader (its evidence files are the user's).
    std::ofstream(path) << block.text;
    const Expected<Ladder> ladder = LoadLadder(path);
    return ladder.ok() ? "" : fmt::format("{}: the ladder reader rejects it: {}", where, ladder.status().message());
  }
  if (node["policy"] && node["deployment"] && node["evidence"]) {
    // A plan bundle: read over the Atlas bundle's files, which it names (planning runs for
    // seconds; the plan tests run every variant).
    if (const Status w = WriteAtlasBundle(dir.string()); !w.ok()) return fmt::format("{}: {}", where, w.message());
    std::ofstream(path) << block.text;
    const Expected<PlanBundle> bundle = LoadPlanBundle(path);
    return bundle.ok() ? "" : fmt::format("{}: the plan bundle reader rejects it: {}", where, bundle.status().message());
  }
  if (node["coverage"] && node["attainment"]) {
    // A plan policy.
    std::ofstream(path) << block.text;
    auto doc = YamlDocument::LoadFile(path);
    if (!doc.ok()) return fmt::format("{}: {}", where, doc.status().message());
    const Expected<Policy> policy = ReadPolicy(std::make_shared<const YamlDocument>(std::move(*doc)), dir.string());
    return policy.ok() ? "" : fmt::format("{}: the policy reader rejects it: {}", where, policy.status().message());
  }
  if (node["evidence"]) {
    std::ofstream(path) << block.text;
    const Expected<EvidenceHeader> header = ReadEvidenceFile(path);
    return header.ok() ? "" : fmt::format("{}: the evidence reader rejects it: {}", where, header.status().message());
  }
  if (KeysWithin(node, {"models", "gpus", "links"}) && !node["racks"]) {
    std::ofstream(path) << block.text;
    args = {"catalog", "links", "--catalog", path};
  } else if (node["racks"]) {
    std::ofstream(path) << block.text;
    args = {"place", "--cluster", path, "--sizes", "1"};
  } else if (node["allocations"] || (node["requests"] && node["requests"].IsSequence())) {
    std::ofstream(path) << block.text;
    args = {"place", "--cluster", "2x4xh100-sxm-80g", "--requests", path};
  } else {
    std::ofstream(path) << (node["version"] ? block.text : Emit(Merge(node)));
    args = {"simulate", path, "--quiet", "--requests", "40", "--no-requests", "--no-timeline",
            "--out", (dir / "out").string()};
  }
  const CliRun r = testing::RunFleetplan(args);
  if (r.code == 0) return "";
  return fmt::format("{}: `fleetplan {}` exited {}:\n{}\n(the example as run:\n{})", where, fmt::join(args, " "),
                     r.code, r.err, Slurp(path));
}

TEST(HardeningDocs, D12_EveryYamlExampleInTheDocsRuns) {
  int ran = 0;
  for (const fs::path& doc : DocFiles()) {
    const std::vector<Block> blocks = Blocks(Slurp(doc));
    // A folder per page: side files (a block that names itself) first, so the page's other
    // examples can refer to them.
    const fs::path dir = fs::path(::testing::TempDir()) / ("docs-" + doc.stem().string());
    fs::create_directories(dir);
    for (const Block& b : blocks) {
      const std::string self = SelfName(b.text);
      if (self.empty()) continue;
      fs::create_directories((dir / self).parent_path());
      std::ofstream(dir / self) << b.text;
    }
    // A kernel-table or aiconfigurator example names the user's profile folders (kernels,
    // collectives); the test lends it the public ones when the public data is there.
    if (fleetplan::testing::HaveSharedData()) {
      fs::create_directories(dir / "profiles");
      for (const char* lent : {"llmservingsim/perf/RTX4090", "llmservingsim/perf/RTXPRO6000", "aiconfigurator"}) {
        std::error_code ec;
        fs::create_directory_symlink(fleetplan::testing::SharedPath(std::string("profiles/") + lent),
                                     dir / "profiles" / fs::path(lent).filename(), ec);
      }
    }
    for (const Block& b : blocks) {
      if (b.lang != "yaml") continue;
      const std::string where = fmt::format("{}:{}", doc.filename().string(), b.line);
      if (b.text.find("\napiVersion: ") != std::string::npos || b.text.rfind("apiVersion: ", 0) == 0) {
        std::cout << where << ": skipped (a Kubernetes manifest, not a fleetplan input)\n";
        continue;
      }
      const bool measured = b.text.find("kind: kernel-table") != std::string::npos ||
                            b.text.find("kind: aiconfigurator") != std::string::npos;
      if (measured && !fleetplan::testing::HaveSharedData()) {
        std::cout << where << ": skipped (its kernel tables are public data, not present)\n";
        continue;
      }
      SCOPED_TRACE(where);
      EXPECT_EQ(RunExample(b, dir, where), "");
      ++ran;
    }
  }
  EXPECT_GE(ran, 12);  // the docs have at least this many YAML examples
}

// Every `--json` prints the one canonical form: sorted keys, 2-space indent, a newline.
TEST(HardeningDocs, D6_EveryJsonOutputIsCanonicalAndIndented) {
  const std::string dir = ::testing::TempDir();
  const std::string scenario = Temp("d6-scenario.yaml", Emit(BaseScenario()));
  const std::string trace = dir + "d6-trace.jsonl";
  const std::string records = Temp(
      "d6-records.jsonl",
      R"({"id":"a","class":"chat","arrival_s":0,"first_token_s":0.2,"finish_s":1,"status":"ok","input_tokens":10,"output_tokens":5})"
      "\n");
  const std::string requests = Temp("d6-requests.yaml", "requests:\n  - {name: one, gpus: 1}\n");
  const std::vector<std::vector<std::string>> runs = {
      {"fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-80g", "--context", "4096", "--json"},
      {"simulate", scenario, "--quiet", "--json", "--out", dir + "d6-out"},
      {"trace", "gen", scenario, "-o", trace, "--quiet", "--json"},
      {"trace", "stats", trace, "--quiet", "--json"},
      {"trace", "convert", trace, "-o", dir + "d6-copy.jsonl", "--quiet", "--json"},
      {"report", "--records", records, "--json"},
      {"layout", "--model", "llama-3.1-8b", "--cluster", "1x8xh100-sxm-80g", "--json"},
      {"place", "--cluster", "1x8xh100-sxm-80g", "--requests", requests, "--json"},
      {"experts", "--counts", "100,10,10,10,50,5,5,10", "--ranks", "4", "--json"},
      {"catalog", "gpus", "h100-sxm-80g", "--json"},
  };
  for (const std::vector<std::string>& args : runs) {
    SCOPED_TRACE(fmt::format("fleetplan {}", fmt::join(args, " ")));
    const CliRun r = testing::RunFleetplan(args);
    ASSERT_EQ(r.code, 0) << r.err;
    const Json j = Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(*PrettyJson(j), r.out);
  }
}

// The reader's own list of valid keys at each level of `workload:` (from its
// unknown-key error), each of which docs/workload.md must name.
std::vector<std::string> ValidKeys(const std::string& workload_yaml) {
  const std::string path = Temp("d5-probe.yaml", "version: 1\nmodel: {name: llama-3.1-8b}\nhardware: {gpu: h100-sxm-80g}\n" +
                                                     workload_yaml);
  const CliRun r = testing::RunFleetplan({"trace", "gen", path, "-o", ::testing::TempDir() + "d5.jsonl", "--quiet"});
  static const std::regex valid(R"(\(valid: ([^)]*)\))");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.err, m, valid)) << workload_yaml << "\n" << r.err;
  std::vector<std::string> keys;
  std::istringstream list(m[1].str());
  std::string key;
  while (std::getline(list, key, ',')) keys.push_back(key.substr(key.find_first_not_of(' ')));
  return keys;
}

TEST(HardeningDocs, D5_WorkloadPageNamesEveryKeyTheReaderAccepts) {
  const std::string page = Slurp(fs::path(FLEETPLAN_SOURCE_DIR) / "docs" / "workload.md");
  const std::string cls = "{share: 1, prompt: [{segment: unique, tokens: 10}], output_tokens: 5";
  const std::vector<std::string> probes = {
      "workload: {bogus: 1}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s}, classes: {c: " + cls + ", bogus: 1}}}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s}, classes: {c: {share: 1, output_tokens: 5, "
      "prompt: [{segment: unique, tokens: 10, bogus: 1}]}}}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s}, classes: {c: " + cls +
          ", cancel: {probability: 0.1, bogus: 1}}}}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s}, classes: {c: " + cls +
          ", session: {turns: 2, bogus: 1}}}}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s}, tenants: {count: 2, bogus: 1}, classes: {c: " +
          cls + "}}}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s}, adapters: {count: 2, bogus: 1}, classes: {c: " +
          cls + "}}}\n",
      "workload: {requests: 5, arrival: {process: closed-loop, users: 2, bogus: 1}, classes: {c: " + cls + "}}}\n",
      "workload: {requests: 5, arrival: {process: poisson, rate: 1/s, bogus: 1}, classes: {c: " + cls + "}}}\n",
      "workload: {requests: 5, arrival: {process: gamma, rate: 1/s, cv: 2, bogus: 1}, classes: {c: " + cls + "}}}\n",
      "workload: {requests: 5, arrival: {process: on-off, rate: 1/s, on: 1s, off: 1s, bogus: 1}, classes: {c: " + cls +
          "}}}\n",
      "workload: {arrival: {process: trace}, trace: {file: t.jsonl, bogus: 1}}\n",
  };
  for (const std::string& probe : probes) {
    for (const std::string& key : ValidKeys(probe)) {
      EXPECT_NE(page.find("`" + key + "`"), std::string::npos) << "docs/workload.md does not name `" << key
                                                               << "` (valid in: " << probe << ")";
    }
  }
  // Every segment kind and arrival process the reader knows is in the page's tables.
  for (const char* name : {"system", "tenant-instructions", "document", "unique", "history", "poisson", "gamma",
                           "constant", "on-off", "closed-loop", "trace"}) {
    EXPECT_NE(page.find(fmt::format("| `{}` |", name)), std::string::npos) << name;
  }
}

TEST(HardeningDocs, D9_DocsNameNoFileOutsideTheRepository) {
  // The public data sets are documented as living at $FLEETPLAN_SHARED_DATA (by default
  // ../shared/data beside the checkout, README.md); nothing else outside the repository
  // may be named, nor a user's home folder (scratch output folders under /tmp are the
  // user's own).
  static const std::regex outside(R"((\.\./shared/(?!data\b)|\bshared/spec\b|/home/|/root/))");
  for (const fs::path& doc : DocFiles()) {
    std::istringstream in(Slurp(doc));
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      EXPECT_FALSE(std::regex_search(line, outside)) << doc.filename().string() << ":" << number << ": " << line;
    }
  }
}

TEST(HardeningDocs, D7_ValidateTextShowsTheQueueItsHelpPromises) {
  FP_REQUIRE_SHARED_DATA();
  const std::string run = fleetplan::testing::SharedPath("profiles/llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B");
  const CliRun r = testing::RunFleetplan({"validate", run});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("queue running "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queue waiting "), std::string::npos) << r.out;
  const CliRun help = testing::RunFleetplan({"validate", "--help"});
  EXPECT_NE(help.out.find("queue time series"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace fleetplan::cli
