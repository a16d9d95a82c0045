// The sweep layer: specs, points, search, summaries, threads and shards.
#include "fleetplan/sweep/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/sweep/point.h"
#include "fleetplan/sweep/search.h"
#include "fleetplan/sweep/spec.h"
#include "fleetplan/sweep/spool.h"
#include "fleetplan/sweep/summary.h"
#include "support/in_scratch.h"

namespace fleetplan {
namespace {

// A small fleet that simulates in milliseconds: 8B model, affine steps, 15 s of traffic.
constexpr std::string_view kBase = R"(version: 1
name: small
seed: 5
model: {name: llama-3.1-8b, max_context: 8192}
hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}
deployment: {replicas: 2, tp: 1, gpu_memory_utilization: 0.5}
engine:
  scheduler: {policy: bounded-chunk, max_batched_tokens: 4096, max_running: 32}
  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.02ms}, decode: {base: 8ms, per_seq: 0.2ms}}
router: {policy: round-robin}
workload:
  duration: 15s
  arrival: {process: poisson, rate: 6/s}
  classes:
    interactive:
      share: 0.8
      prompt: [{segment: unique, tokens: {uniform: [200, 800]}}]
      output_tokens: {uniform: [20, 60]}
    batch:
      share: 0.2
      prompt: [{segment: unique, tokens: 2000}]
      output_tokens: {uniform: [50, 100]}
slo:
  interactive: {ttft: 300ms}
  batch: {e2e: 10s}
)";

using testing::InScratch;
class SweepSpecFile : public InScratch {};
class SweepPoints : public InScratch {};
class SweepShards : public InScratch {};
class MaxRateSearching : public InScratch {};
class SweepSummary : public InScratch {};

void Write(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary) << text;
}

Expected<SweepSpec> Spec(std::string_view text) {
  Write("small.yaml", kBase);
  Write("spec.yaml", text);
  return LoadSweepSpec("spec.yaml");
}

std::string Canonical(const Json& j) {
  auto text = CanonicalJson(j);
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

// The points of `shard` run on `jobs` threads, their rows in a spool.
std::unique_ptr<JsonSpool> RunShard(const SweepSpec& spec, const Shard& shard, int jobs) {
  auto rows = JsonSpool::Create(spec.points());
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok()) return nullptr;
  const Status ran = RunSweepPoints(spec, ShardIndices(spec, shard), jobs, **rows);
  EXPECT_TRUE(ran.ok()) << ran.message();
  return std::move(*rows);
}

Expected<SweepResult> RunSweep(const SweepSpec& spec, int jobs) {
  return SummarizeSweep(spec.Describe(), RunShard(spec, Shard{}, jobs));
}

Json DocumentOf(const Expected<SweepResult>& sweep) {
  EXPECT_TRUE(sweep.ok()) << sweep.status().message();
  if (!sweep.ok()) return Json();
  auto doc = sweep->ToJson();
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  return doc.ok() ? *doc : Json();
}

Json RunAll(const SweepSpec& spec, int jobs) {
  return DocumentOf(RunSweep(spec, jobs));
}

// What a writer sends to its sink, as one string.
std::string Written(const std::function<Status(const TextSink&)>& write) {
  std::string text;
  const Status s = write([&text](std::string_view piece) {
    text += piece;
    return Status::Ok();
  });
  EXPECT_TRUE(s.ok()) << s.message();
  return text;
}

// The summary of rows held in memory (each at its "index").
Expected<SweepResult> Summarize(const Json& spec, const std::vector<Json>& rows) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<JsonSpool> spool, SpoolRows(spec["points"].get<int64_t>(), rows));
  return SummarizeSweep(spec, std::move(spool));
}

TEST_F(SweepSpecFile, ReadsAxesRangesSeedsAndIndexesPointsFirstAxisSlowest) {
  auto spec = Spec(R"(version: 1
base: small.yaml
overrides: {workload.duration: 5s}
axes:
  deployment.replicas: [1, 2]
  workload.arrival.rate: {from: 2/s, to: 6/s, step: 2/s}
seeds: [1, 2]
)");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->configurations(), 6);
  EXPECT_EQ(spec->points(), 12);
  ASSERT_EQ(spec->axes[1].values.size(), 3u);
  EXPECT_EQ(spec->axes[1].values[2].Text(), "6/s");
  const PointTask p = PointAt(*spec, 7);  // configuration 3 = (replicas 2, rate 2/s), seed 2
  EXPECT_EQ(p.configuration, 3);
  EXPECT_EQ(p.seed, 2u);
  EXPECT_EQ(p.axis_values, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(spec->targets_source, "not given: 0.99 for every SLO class");
}

TEST_F(SweepSpecFile, AnUnknownKeyPathIsLocatedWithDidYouMean) {
  auto spec = Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replica: [1, 2]\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(spec.status().message().find("spec.yaml:4:"), std::string::npos) << spec.status().message();
  EXPECT_NE(spec.status().message().find("did you mean 'deployment.replicas'?"), std::string::npos)
      << spec.status().message();
  auto over = Spec("version: 1\nbase: small.yaml\noverrides: {engine.schedular.policy: decode-first}\n");
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("did you mean 'engine.scheduler.policy'?"), std::string::npos)
      << over.status().message();
}

TEST_F(SweepSpecFile, SpeculationKeysAreFormatKeysEvenWhenTheBaseHasNone) {
  // The base declares no engine.speculation; the overrides add it and the axis varies its
  // batch limit: every path is a key of the format.
  auto spec = Spec(
      "version: 1\nbase: small.yaml\n"
      "overrides: {engine.speculation.method: ngram, engine.speculation.tokens_per_round: 1, "
      "engine.speculation.acceptance: [0.5]}\n"
      "axes:\n  engine.speculation.disable_above_batch: [4, 8]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto typo = Spec("version: 1\nbase: small.yaml\naxes:\n  engine.speculation.tokens_per_rnd: [1, 2]\n");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'engine.speculation.tokens_per_round'?"), std::string::npos)
      << typo.status().message();
}

// W2: an axis inside another (deployment.replicas under deployment) labelled points with
// values that were not applied; overlapping axes are refused where the second is written.
TEST_F(SweepSpecFile, OverlappingAxesAreALocatedError) {
  auto spec = Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replicas: [2, 4]\n"
                   "  deployment: [{replicas: 2, tp: 1}]\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("spec.yaml:5:15: axes.deployment: axis 'deployment' overlaps axis "
                                         "'deployment.replicas'"),
            std::string::npos)
      << spec.status().message();
  // Siblings do not overlap, nor do paths that only share a prefix of a name.
  EXPECT_TRUE(Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replicas: [2]\n  deployment.tp: [1]\n").ok());
}

TEST_F(SweepSpecFile, RejectsWhatCannotBeASweep) {
  for (const char* text : {
           "base: small.yaml\n",                                               // no version
           "version: 2\nbase: small.yaml\n",                                   // future version
           "version: 1\nbase: missing.yaml\n",                                 // no base file
           "version: 1\nbase: small.yaml\naxes: {deployment.replicas: []}\n",  // empty axis
           "version: 1\nbase: small.yaml\naxes: {deployment.replicas: {from: 4, to: 1, step: 1}}\n",
           "version: 1\nbase: small.yaml\nseeds: [1, 1]\n",               // repeated seed
           "version: 1\nbase: small.yaml\ntargets: {interactiv: 0.9}\n",  // unknown class
           "version: 1\nbase: small.yaml\naxes: {workload.arrival.rate: [1/s]}\n"
           "search: {max_rate: {axis: workload.arrival.rate, low: 1/s, high: 8/s, attainment: {batch: 0.9}}}\n",
           "version: 1\nbase: small.yaml\nsearch: {max_rate: {axis: workload.arrival.rate, low: 8/s, high: 1/s, "
           "attainment: {batch: 0.9}}}\n",
           "version: 1\nbase: small.yaml\nprice: {gpu_hour: -1}\n",
           "version: 1\nbase: small.yaml\nbogus: 1\n",
       }) {
    auto spec = Spec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput) << text;
    EXPECT_NE(spec.status().message().find("spec.yaml:"), std::string::npos) << spec.status().message();
  }
}

TEST_F(SweepPoints, AnInvalidPointIsARowWithItsLocatedReasonAndTheOthersRun) {
  auto spec = Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replicas: [2, 0]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Json sweep = RunAll(*spec, 2);
  ASSERT_EQ(sweep["points"].size(), 2u);
  EXPECT_EQ(sweep["points"][0]["status"], "ok");
  EXPECT_EQ(sweep["points"][1]["status"], "invalid");
  const std::string reason = sweep["points"][1]["reason"];
  EXPECT_NE(reason.find("spec.yaml:4:"), std::string::npos) << reason;  // where the 0 is written
  EXPECT_NE(reason.find("deployment.replicas"), std::string::npos) << reason;
  EXPECT_EQ(sweep["counts"]["invalid"], 1);
  EXPECT_EQ(sweep["configurations"][1]["status"], "invalid");
}

TEST_F(SweepPoints, APointThatFailsWhileSimulatingIsAFailedRowAndTheSweepGoesOn) {
  const std::string header =
      R"({"classes":["chat"],"format":"fleetplan-trace","source":{"written_by":"hand"},"version":1})"
      "\n";
  const std::string row1 = R"({"arrival_ns":0,"class":"chat","id":0,"output_tokens":5,"prompt":[[11,100]]})"
                           "\n";
  const std::string row2 = R"({"arrival_ns":1000000,"class":"chat","id":1,"output_tokens":5,"prompt":[[12,100]]})"
                           "\n";
  const std::string bad = R"({"arrival_ns":2000000,"class":"chat","id":2,"output_tokens":"x","prompt":[[13,100]]})"
                          "\n";
  Write("good.jsonl", header + row1 + row2);
  Write("bad.jsonl", header + row1 + row2 + bad);
  std::string base(kBase);
  base = base.substr(0, base.find("workload:")) +
         "workload:\n  trace: {file: good.jsonl, format: fleetplan}\nslo:\n  chat: {ttft: 1s}\n";
  Write("small.yaml", base);
  Write("spec.yaml", "version: 1\nbase: small.yaml\naxes: {workload.trace.file: [good.jsonl, bad.jsonl]}\n");
  auto spec = LoadSweepSpec("spec.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Json sweep = RunAll(*spec, 1);
  EXPECT_EQ(sweep["points"][0]["status"], "ok") << sweep["points"][0]["reason"];
  EXPECT_EQ(sweep["points"][1]["status"], "failed");
  EXPECT_NE(sweep["points"][1]["reason"].get<std::string>().find("bad.jsonl:4"), std::string::npos)
      << sweep["points"][1]["reason"];
  EXPECT_EQ(sweep["counts"]["failed"], 1);
}

TEST_F(SweepPoints, OutputBytesAreTheSameForAnyNumberOfThreads) {
  auto spec = Spec(R"(version: 1
base: small.yaml
axes:
  deployment.replicas: [1, 2, 3]
  router.policy: [round-robin, least-outstanding]
seeds: [1, 2]
price: {gpu_hour: 2.5}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const std::string one = Canonical(RunAll(*spec, 1));
  EXPECT_EQ(Canonical(RunAll(*spec, 3)), one);
  EXPECT_EQ(Canonical(RunAll(*spec, 8)), one);
  const Json sweep = Json::parse(one);
  ASSERT_EQ(sweep["points"].size(), 12u);
  for (const Json& p : sweep["points"]) {
    ASSERT_EQ(p["status"], "ok") << p["reason"];
    EXPECT_DOUBLE_EQ(p["fleet"]["cost_per_hour"].get<double>(), 2.5 * p["gpus"].get<double>());
    EXPECT_GT(p["classes"]["interactive"]["ttft_p99_ms"].get<double>(), 0);
  }
  // Two seeds: every figure has a mean and an interval.
  EXPECT_EQ(sweep["configurations"][0]["figures"]["fleet.goodput_rps"]["n"], 2);
  EXPECT_TRUE(sweep["configurations"][0]["figures"]["fleet.goodput_rps"]["ci95"].is_array());
}

TEST_F(SweepShards, MergedShardsAreByteIdenticalToOneRun) {
  auto spec = Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replicas: [1, 2, 3, 4]\nseeds: [3]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto whole = RunSweep(*spec, 2);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  const std::string whole_json = Written([&](const TextSink& sink) { return whole->WriteJson(sink); });
  std::vector<std::string> names;
  for (int64_t i = 0; i < 3; ++i) {
    const Shard shard{i, 3};
    names.push_back("s" + std::to_string(i) + ".json");
    auto file = OutputFile::Open(names.back());
    ASSERT_TRUE(file.ok()) << file.status().message();
    ASSERT_TRUE(WritePartial(*spec, shard, *RunShard(*spec, shard, 1), (*file)->Sink()).ok());
    ASSERT_TRUE((*file)->Commit().ok());
  }
  // In any order.
  auto merged = MergePartials({names[2], names[0], names[1]});
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(Written([&](const TextSink& sink) { return merged->WriteJson(sink); }), whole_json);
  EXPECT_EQ(Written([&](const TextSink& sink) { return merged->WriteCsv(sink); }),
            Written([&](const TextSink& sink) { return whole->WriteCsv(sink); }));

  auto missing = MergePartials({names[0], names[2]});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing shard 1/3"), std::string::npos) << missing.status().message();
  auto twice = MergePartials({names[0], names[0], names[1]});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "shard 0/3 is given twice: s0.json and s0.json");
  Json other = Json::parse(*ReadFile(names[1]));
  other["spec"]["digest"] = "sha256:other";
  Write("other.json", other.dump());
  auto mixed = MergePartials({names[0], "other.json", names[2]});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("other.json is a shard of another sweep spec (sha256:other)"),
            std::string::npos)
      << mixed.status().message();
}

TEST_F(SweepShards, DamagedPartialsAreRefusedNamingTheFile) {
  auto spec = Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replicas: [1, 2, 3, 4]\nseeds: [3]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  std::string text;
  ASSERT_TRUE(WritePartial(*spec, Shard{0, 1}, *RunShard(*spec, Shard{0, 1}, 2), [&](std::string_view piece) {
                text += piece;
                return Status::Ok();
              }).ok());
  const Json partial = Json::parse(text);
  ASSERT_EQ(partial["points"].size(), 4u);
  auto refusal = [&](const std::string& name, const std::string& content) {
    Write(name, content);
    auto merged = MergePartials({name});
    EXPECT_FALSE(merged.ok()) << name;
    EXPECT_EQ(merged.status().code(), StatusCode::kInvalidInput) << name;
    return merged.ok() ? std::string() : merged.status().message();
  };
  Write("whole.json", text);
  EXPECT_TRUE(MergePartials({"whole.json"}).ok());
  EXPECT_EQ(refusal("cut.json", text.substr(0, text.size() / 2)).rfind("cut.json: not valid JSON", 0), 0u);
  EXPECT_EQ(refusal("deep.json", std::string(100, '[') + std::string(100, ']')), "deep.json: " + JsonNestingMessage());
  EXPECT_EQ(refusal("plan.json", R"({"kind": "fleetplan-plan"})"),
            "plan.json: not a partial sweep result (written by `fleetplan sweep --shard I/N`)");
  Json short_of_one = partial;
  short_of_one["points"].erase(2);
  EXPECT_EQ(refusal("short.json", short_of_one.dump()),
            "short.json: point 2 of its shard is missing (the file is incomplete?)");
  Json repeated = partial;
  repeated["points"][2] = repeated["points"][1];
  EXPECT_EQ(refusal("repeated.json", repeated.dump()), "repeated.json: point 1 is given twice");
  Json unindexed = partial;
  unindexed["points"][3].erase("index");
  EXPECT_EQ(refusal("unindexed.json", unindexed.dump()),
            "unindexed.json: points[3] has no index in [0, 4) (the file is damaged?)");
  EXPECT_EQ(MergePartials({"absent.json"}).status().message(), "cannot read 'absent.json': No such file or directory");
}

// Forged partials merged: a spec body other than the one the digest names crashed the
// merge (a type error, exit 70), ±1e308 figures overflowed an interval to infinity, a
// forged `points: 200000000` sized a 2.35 GB spool, and rows with `gpus: "lots"`, an
// attainment of 5, `status: "bogus"` or `configuration: 999` merged with exit 0.
TEST_F(SweepShards, ForgedPartialsAreRefusedNamingThePointAndTheField) {
  auto spec = Spec("version: 1\nbase: small.yaml\naxes:\n  deployment.replicas: [1, 2]\nseeds: [3]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto partial_text = [&](const Shard& shard) {
    std::string text;
    EXPECT_TRUE(WritePartial(*spec, shard, *RunShard(*spec, shard, 2), [&](std::string_view piece) {
                  text += piece;
                  return Status::Ok();
                }).ok());
    return text;
  };
  const Json whole = Json::parse(partial_text(Shard{0, 1}));
  ASSERT_EQ(whole["points"][0]["status"], "ok") << whole["points"][0]["reason"];
  Write("whole.json", whole.dump());
  ASSERT_TRUE(MergePartials({"whole.json"}).ok());
  auto refusal = [&](const std::string& name, const Json& content) {
    Write(name, content.dump());
    auto merged = MergePartials({name});
    EXPECT_FALSE(merged.ok()) << name;
    if (merged.ok()) return std::string();
    EXPECT_EQ(merged.status().code(), StatusCode::kInvalidInput) << name;
    return merged.status().message();
  };
  auto forged = [&](const std::function<void(Json&)>& edit) {
    Json j = whole;
    edit(j);
    return j;
  };
  EXPECT_EQ(refusal("axes.json", forged([](Json& j) { j["spec"]["axes"] = {{"x", {"y"}}}; })),
            "axes.json: spec.axes: expected an array of {path, values} (the partial's spec was edited?)");
  EXPECT_EQ(refusal("axis.json", forged([](Json& j) { j["spec"]["axes"][0]["values"] = "y"; })),
            "axis.json: spec.axes[0]: expected {path: string, values: [at least one]} (the partial's spec was edited?)");
  EXPECT_EQ(refusal("count.json", forged([](Json& j) { j["spec"]["axes"][0]["values"].push_back(3); })),
            "count.json: spec.configurations: expected 3 (the product of the axes' value counts), got 2 (the partial's "
            "spec was edited?)");
  EXPECT_EQ(refusal("big.json", forged([](Json& j) { j["spec"]["points"] = 200000000; })),
            "big.json: spec.points: expected 2 (configurations x seeds), got 200000000 (the partial's spec was edited?)");
  EXPECT_EQ(refusal("seeds.json", forged([](Json& j) {
              j["spec"]["seeds"] = Json::array();
              for (int i = 0; i < 1000; ++i) j["spec"]["seeds"].push_back(i);
              j["spec"]["axes"][0]["values"] = Json::array();
              for (int i = 0; i < 2000; ++i) j["spec"]["axes"][0]["values"].push_back(i + 1);
              j["spec"]["configurations"] = 2000;
              j["spec"]["points"] = 2000000;
            })),
            "seeds.json: spec.points: the sweep has 2000000 points; at most 1000000 are allowed (the partial's spec was "
            "edited?)");
  EXPECT_EQ(refusal("huge.json", forged([](Json& j) { j["points"][0]["fleet"]["goodput_rps"] = 1e308; })),
            "huge.json: point 0: fleet.goodput_rps: expected a number in [0, 1e+12], got 1e+308");
  EXPECT_EQ(refusal("negative.json", forged([](Json& j) { j["points"][1]["fleet"]["goodput_rps"] = -1e308; })),
            "negative.json: point 1: fleet.goodput_rps: expected a number in [0, 1e+12], got -1e+308");
  EXPECT_EQ(refusal("gpus.json", forged([](Json& j) { j["points"][0]["gpus"] = -8; })),
            "gpus.json: point 0: gpus: expected a positive integer, got -8");
  EXPECT_EQ(refusal("lots.json", forged([](Json& j) { j["points"][0]["gpus"] = "lots"; })),
            "lots.json: point 0: gpus: expected a positive integer, got \"lots\"");
  EXPECT_EQ(refusal("attainment.json", forged([](Json& j) { j["points"][0]["fleet"]["attainment"] = 5.0; })),
            "attainment.json: point 0: fleet.attainment: expected a number in [0, 1], got 5.0");
  EXPECT_EQ(refusal("status.json", forged([](Json& j) { j["points"][0]["status"] = "bogus"; })),
            "status.json: point 0: status: expected ok, invalid or failed, got \"bogus\"");
  EXPECT_EQ(refusal("config.json", forged([](Json& j) { j["points"][0]["configuration"] = 999; })),
            "config.json: point 0: configuration: expected 0 (point 0 of 1 seeds per configuration), got 999");
  EXPECT_EQ(refusal("values.json", forged([](Json& j) { j["points"][1]["values"]["deployment.replicas"] = 4; })),
            "values.json: point 1: values: expected the axis values of configuration 1 in the spec");
  // Shards of one spec must carry one spec body: an edit to one is refused.
  Write("s0.json", partial_text(Shard{0, 2}));
  Json s1 = Json::parse(partial_text(Shard{1, 2}));
  s1["spec"]["axes"] = {{"x", {"y"}}};
  Write("s1.json", s1.dump());
  auto mixed = MergePartials({"s0.json", "s1.json"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().message(), "s1.json: its spec differs from the one in s0.json though both name " +
                                          whole["spec"]["digest"].get<std::string>() + "; a partial was edited");
}

TEST_F(SweepShards, ParseShardAcceptsOnlyIOfN) {
  EXPECT_TRUE(ParseShard("0/1").ok());
  EXPECT_EQ(ParseShard("2/3")->index, 2);
  for (const char* bad : {"3/3", "-1/2", "1", "a/b", "1/0", "1/2x", ""}) {
    EXPECT_EQ(ParseShard(bad).status().code(), StatusCode::kUsage) << bad;
  }
}

// A synthetic attainment curve: attainment(rate) for one class.
ProbeFn Curve(std::function<double(double)> attainment, double target, int* probes) {
  return [=](double rate) -> Expected<RateProbe> {
    ++*probes;
    RateProbe p;
    p.rate = rate;
    p.attainment = {{"interactive", attainment(rate)}};
    p.passed = attainment(rate) >= target;
    return p;
  };
}

MaxRateSearch SearchOf(double low, double high, double resolution) {
  MaxRateSearch s;
  s.axis = "workload.arrival.rate";
  s.low = Rate{low};
  s.high = Rate{high};
  s.resolution = resolution;
  s.attainment = {{"interactive", 0.99}};
  return s;
}

TEST_F(MaxRateSearching, BisectsToTheResolutionInAboutLog2Probes) {
  int probes = 0;
  auto r = SearchMaxRate(SearchOf(0.5, 64, 0.02), Curve([](double x) { return x <= 11.3 ? 1.0 : 0.5; }, 0.99, &probes));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, "found");
  ASSERT_TRUE(r->max_rate && r->lowest_failing);
  EXPECT_LE(*r->max_rate, 11.3);
  EXPECT_GT(*r->lowest_failing, 11.3);
  EXPECT_LE(*r->lowest_failing / *r->max_rate, 1.02 + 1e-9);
  EXPECT_EQ(probes, 8);  // ceil(log2(ln 128 / ln 1.02))
  EXPECT_TRUE(r->monotone);
}

TEST_F(MaxRateSearching, AProbeAlreadyRunNarrowsTheBracketFirst) {
  int probes = 0;
  RateProbe known;
  known.rate = 8;
  known.passed = true;
  known.attainment = {{"interactive", 1.0}};
  auto r = SearchMaxRate(SearchOf(0.5, 64, 0.02), Curve([](double x) { return x <= 11.3 ? 1.0 : 0.5; }, 0.99, &probes),
                         known);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->probes.front().rate, 8.0);  // the curve starts with it
  EXPECT_LE(*r->max_rate, 11.3);
  EXPECT_GT(*r->lowest_failing, 11.3);
  EXPECT_EQ(probes, 7);  // ceil(log2(ln 8 / ln 1.02)) new probes, all above 8/s
  for (size_t i = 1; i < r->probes.size(); ++i) EXPECT_GT(r->probes[i].rate, 8.0);
}

TEST_F(MaxRateSearching, ReportsBelowLowAndAboveHigh) {
  int probes = 0;
  auto low = SearchMaxRate(SearchOf(1, 8, 0.05), Curve([](double) { return 0.0; }, 0.99, &probes));
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(low->status, "below-low");
  EXPECT_FALSE(low->max_rate);
  EXPECT_DOUBLE_EQ(*low->lowest_failing, 1.0);
  auto high = SearchMaxRate(SearchOf(1, 8, 0.05), Curve([](double) { return 1.0; }, 0.99, &probes));
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(high->status, "above-high");
  EXPECT_DOUBLE_EQ(*high->max_rate, 8.0);
}

TEST_F(MaxRateSearching, SaysWhenTheAttainmentCurveIsNotMonotone) {
  int probes = 0;
  // Attainment dips between 1.5/s and 3/s and is higher again above: the bisection probes
  // 4/s (0.95) before 2/s (0.90), and the curve says so.
  auto r = SearchMaxRate(SearchOf(1, 16, 0.05), Curve(
                                                    [](double x) {
                                                      if (x < 1.5) return 1.0;
                                                      if (x < 3) return 0.90;
                                                      return 0.95;
                                                    },
                                                    0.99, &probes));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->monotone);
  const Json j = MaxRateJson(*r);
  EXPECT_EQ(j["monotone"], false);
  EXPECT_EQ(j["probes"].size(), r->probes.size());
}

TEST_F(MaxRateSearching, FindsTheRateOfARealFleetAndStopsHopelessProbesEarly) {
  auto spec = Spec(R"(version: 1
base: small.yaml
axes: {deployment.replicas: [1]}
search:
  max_rate: {axis: workload.arrival.rate, low: 1/s, high: 64/s, attainment: {interactive: 0.95}, resolution: 5%}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Json row = RunPoint(*spec, PointAt(*spec, 0));
  ASSERT_EQ(row["status"], "ok") << row["reason"];
  const Json& m = row["max_rate"];
  EXPECT_EQ(m["status"], "found") << m.dump();
  const double found = m["rate_per_s"].get<double>();
  EXPECT_GT(found, 1.0);
  EXPECT_LT(found, 64.0);
  EXPECT_LE(m["bracket"][1].get<double>() / found, 1.05 + 1e-6);
  bool some_stopped = false;
  for (const Json& p : m["probes"]) {
    if (!p["complete"].get<bool>()) {
      some_stopped = true;
      EXPECT_FALSE(p["passed"].get<bool>());
      EXPECT_LT(p["attainment"]["interactive"].get<double>(), 0.95);  // the bound that stopped it
    }
  }
  EXPECT_TRUE(some_stopped) << m.dump();
  // The reported rate is a probe that passed; the bracket's top is one that failed.
  int passed_at_rate = 0, failed_at_top = 0;
  for (const Json& p : m["probes"]) {
    if (p["rate_per_s"] == m["rate_per_s"] && p["passed"].get<bool>()) ++passed_at_rate;
    if (p["rate_per_s"] == m["bracket"][1] && !p["passed"].get<bool>()) ++failed_at_top;
  }
  EXPECT_EQ(passed_at_rate, 1);
  EXPECT_EQ(failed_at_top, 1);
}

Json Row(int64_t index, double goodput_per_gpu, double attainment, int64_t gpus) {
  return {
      {"index", index},
      {"configuration", index / 2},
      {"values", {{"deployment.replicas", index / 2}}},
      {"seed", index % 2},
      {"status", "ok"},
      {"reason", ""},
      {"gpus", gpus},
      {"classes",
       {{"interactive", {{"attainment", attainment}, {"ttft_p99_ms", 100.0 * static_cast<double>(10 - index / 2)}}}}},
      {"fleet", {{"goodput_per_gpu", goodput_per_gpu}, {"goodput_rps", goodput_per_gpu * static_cast<double>(gpus)}}}};
}

Json DescribeTwoSeeds(int64_t configurations) {
  return {{"name", "t"},
          {"seeds", {1, 2}},
          {"points", configurations * 2},
          {"configurations", configurations},
          {"axes", Json::array({{{"path", "deployment.replicas"}, {"values", {0, 1, 2}}}})},
          {"targets", {{"interactive", 0.9}}},
          {"target_order", {"interactive"}},
          {"targets_source", "targets"}};
}

TEST_F(SweepSummary, ACallCloserThanTheIntervalIsATie) {
  // Configuration 0: 1.0 and 1.2 per GPU; configuration 1: 1.1 and 1.3 — intervals overlap.
  const Json tie = DocumentOf(Summarize(
      DescribeTwoSeeds(2), {Row(0, 1.0, 0.99, 2), Row(1, 1.2, 0.99, 2), Row(2, 1.1, 0.99, 2), Row(3, 1.3, 0.99, 2)}));
  EXPECT_EQ(tie["best"]["goodput_per_gpu"]["verdict"], "tie");
  EXPECT_EQ(tie["best"]["goodput_per_gpu"]["tied_with"], Json::array({0}));
  // Tight intervals far apart: a winner, chosen on the lower bound.
  const Json win = DocumentOf(Summarize(
      DescribeTwoSeeds(2), {Row(0, 1.0, 0.99, 2), Row(1, 1.01, 0.99, 2), Row(2, 2.0, 0.99, 2), Row(3, 2.01, 0.99, 2)}));
  EXPECT_EQ(win["best"]["goodput_per_gpu"]["verdict"], "winner");
  EXPECT_EQ(win["best"]["goodput_per_gpu"]["configuration"], 1);
}

TEST_F(SweepSummary, MeetingTheTargetIsJudgedOnTheLowerBound) {
  // Mean attainment 0.91 over two seeds (0.85, 0.97): its interval reaches below 0.9.
  const Json s = DocumentOf(Summarize(
      DescribeTwoSeeds(2), {Row(0, 5.0, 0.85, 2), Row(1, 5.0, 0.97, 2), Row(2, 1.0, 0.95, 4), Row(3, 1.0, 0.95, 4)}));
  EXPECT_EQ(s["configurations"][0]["meets_slo"], false);
  EXPECT_EQ(s["configurations"][1]["meets_slo"], true);
  EXPECT_EQ(s["best"]["goodput_per_gpu"]["configuration"], 1);
  EXPECT_EQ(s["best"]["fewest_gpus"]["configuration"], 1);
  // Pareto: configuration 0 has more goodput per GPU, 1 a lower TTFT: both on the front.
  EXPECT_EQ(s["pareto"]["front"].size(), 2u);
}

TEST_F(SweepSummary, StudentTAndIntervals) {
  EXPECT_DOUBLE_EQ(StudentT95(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT95(2), 4.303);
  EXPECT_DOUBLE_EQ(StudentT95(1000), 1.980);
  const Json m = MeanInterval({1.0, 2.0, 3.0});
  EXPECT_DOUBLE_EQ(m["mean"].get<double>(), 2.0);
  EXPECT_NEAR(m["ci95"][0].get<double>(), 2.0 - 4.303 / std::sqrt(3.0), 1e-9);
  EXPECT_TRUE(MeanInterval({4.0})["ci95"].is_null());
}

TEST_F(SweepSummary, MissingOrRepeatedRowsAreRefused) {
  auto repeated = Summarize(DescribeTwoSeeds(1), {Row(0, 1.0, 0.99, 2), Row(0, 1.0, 0.99, 2)});
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().message(), "slot 0 is written twice");
  auto missing = Summarize(DescribeTwoSeeds(1), {Row(0, 1.0, 0.99, 2)});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "point 1 has no result");
  EXPECT_EQ(missing.status().code(), StatusCode::kInternal);
}

// Fewest GPUs: the lowest GPU count that meets the targets, then the highest goodput per
// GPU among those; configurations of more GPUs never tie with it.
TEST_F(SweepSummary, FewestGpusPicksTheLowestCountThenGoodput) {
  const Json s = DocumentOf(
      Summarize(DescribeTwoSeeds(4), {Row(0, 9.0, 0.99, 8), Row(1, 9.0, 0.99, 8),  // most goodput
                                      Row(2, 1.0, 0.99, 2), Row(3, 1.0, 0.99, 2), Row(4, 3.0, 0.99, 2),
                                      Row(5, 3.0, 0.99, 2), Row(6, 5.0, 0.50, 1), Row(7, 5.0, 0.50, 1)}));  // misses
  EXPECT_EQ(s["best"]["goodput_per_gpu"]["configuration"], 0);
  EXPECT_EQ(s["best"]["fewest_gpus"]["configuration"], 2);
  EXPECT_EQ(s["best"]["fewest_gpus"]["verdict"], "winner");
  EXPECT_EQ(s["best"]["fewest_gpus"]["gpus"], 2);
}

// The configurations nobody beats on both axes, sorted by TTFT: configuration c has TTFT
// 100 x (10 - c) ms in Row, so a later configuration is faster.
TEST_F(SweepSummary, TheParetoFrontKeepsExactlyTheUndominated) {
  // (goodput/GPU, TTFT): 0 (5, 1000), 1 (4, 900), 2 (1, 800), 3 (3, 700), 4 (3, 600). Three
  // beats two and four beats three, each as it arrives; 0, 1 and 4 remain.
  const Json s = DocumentOf(Summarize(
      DescribeTwoSeeds(5),
      {Row(0, 5.0, 0.99, 2), Row(1, 5.0, 0.99, 2), Row(2, 4.0, 0.99, 2), Row(3, 4.0, 0.99, 2), Row(4, 1.0, 0.99, 2),
       Row(5, 1.0, 0.99, 2), Row(6, 3.0, 0.99, 2), Row(7, 3.0, 0.99, 2), Row(8, 3.0, 0.99, 2), Row(9, 3.0, 0.99, 2)}));
  std::vector<int64_t> front;
  for (const Json& p : s["pareto"]["front"]) front.push_back(p["configuration"].get<int64_t>());
  EXPECT_EQ(front, (std::vector<int64_t>{4, 1, 0}));
}

TEST_F(SweepSummary, StreamedWritersGiveTheDocumentsBytes) {
  auto sweep = Summarize(DescribeTwoSeeds(3), {Row(0, 1.0, 0.99, 2), Row(1, 1.2, 0.99, 2), Row(2, 1.1, 0.95, 2),
                                               Row(3, 1.3, 0.97, 2), Row(4, 0.2, 0.5, 4), Row(5, 0.3, 0.6, 4)});
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  const Json doc = DocumentOf(sweep);
  EXPECT_EQ(Written([&](const TextSink& sink) { return sweep->WriteJson(sink); }), *PrettyJson(doc));
  const std::string csv = Written([&](const TextSink& sink) { return sweep->WriteCsv(sink); });
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);  // the header and one line per point
  EXPECT_EQ(csv.rfind("index,configuration,deployment.replicas,seed,status,gpus,", 0), 0u) << csv;
  // A sink's error ends the writing and is returned.
  int pieces = 0;
  const Status stopped =
      sweep->WriteJson([&](std::string_view) { return ++pieces == 3 ? InvalidInput("disk full") : Status::Ok(); });
  EXPECT_EQ(stopped.message(), "disk full");
  EXPECT_EQ(pieces, 3);
}

TEST_F(SweepSummary, ThePageViewShowsTheFirstConfigurationsAndSaysOfHowMany) {
  auto sweep = Summarize(DescribeTwoSeeds(3), {Row(0, 1.0, 0.99, 2), Row(1, 1.2, 0.99, 2), Row(2, 1.1, 0.95, 2),
                                               Row(3, 1.3, 0.97, 2), Row(4, 0.2, 0.5, 4), Row(5, 0.3, 0.6, 4)});
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  const Json doc = DocumentOf(sweep);
  auto page = sweep->PageView(2, 16);
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ((*page)["shown"], Json({{"configurations", 2}, {"of", 3}}));
  ASSERT_EQ((*page)["configurations"].size(), 2u);
  EXPECT_EQ((*page)["configurations"][1], doc["configurations"][1]);
  EXPECT_TRUE((*page)["points"].empty());  // no search: no curves to draw
  for (const char* part : {"best", "pareto", "counts", "notes", "spec"}) EXPECT_EQ((*page)[part], doc[part]) << part;
}

TEST_F(SweepSummary, ASpoolReturnsWhatWasPutAndRefusesMisuse) {
  auto spool = JsonSpool::Create(3);
  ASSERT_TRUE(spool.ok()) << spool.status().message();
  JsonSpool& s = **spool;
  const Json value = {{"a", 1.5}, {"b", "x\ny"}, {"c", Json::array({-1, true, nullptr})}};
  ASSERT_TRUE(s.Put(2, value).ok());
  ASSERT_TRUE(s.PutText(0, "[1,2]").ok());
  EXPECT_EQ(s.size(), 2);
  EXPECT_TRUE(s.Has(0) && s.Has(2) && !s.Has(1) && !s.Has(3) && !s.Has(-1));
  EXPECT_EQ(*s.Get(2), value);
  EXPECT_EQ(*s.Get(0), Json::array({1, 2}));
  EXPECT_EQ(s.Put(2, value).message(), "slot 2 is written twice");
  EXPECT_EQ(s.Put(3, value).message(), "slot 3 is outside the spool's 3");
  EXPECT_EQ(s.Put(1, Json(std::nan(""))).code(), StatusCode::kInternal);  // no JSON form
  EXPECT_FALSE(s.Has(1));
}

}  // namespace
}  // namespace fleetplan
