// ParseWorkloadSpec: the reference scenario parses; each kind of mistake gives a
// located error (exact text pinned for representative ones).
#include "fleetplan/workload/workload_spec.h"

#include <gtest/gtest.h>

#include <fstream>

#include "workload/test_util.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using testing::SpecFromYaml;

std::string Error(const std::string& yaml) {
  auto spec = SpecFromYaml(yaml);
  EXPECT_FALSE(spec.ok());
  return spec.ok() ? "" : spec.status().message();
}

constexpr const char* kMinimal = R"(workload:
  duration: 1m
  arrival: {process: poisson, rate: 8/s}
  classes:
    chat:
      share: 1
      prompt:
        - {segment: unique, tokens: 100}
      output_tokens: 10
)";

TEST(WorkloadSpecTest, ReferenceScenarioParses) {
  FP_REQUIRE_SHARED_DATA();
  auto doc = YamlDocument::LoadFile(::fleetplan::testing::SharedDataRoot() + "/../spec/scenario-v1.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto spec = ParseWorkloadSpec(doc->root()["workload"]);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->mode, ArrivalMode::kOpenLoop);
  EXPECT_EQ(spec->duration, Minutes(10));
  ASSERT_EQ(spec->classes.size(), 3u);
  EXPECT_EQ(spec->classes[0].name, "interactive");
  EXPECT_DOUBLE_EQ(spec->classes[0].share, 0.70);
  EXPECT_EQ(spec->classes[1].prompt[1].source, SegmentSource::kDocument);
  EXPECT_EQ(spec->classes[1].prompt[1].pool, 200);
  EXPECT_EQ(spec->classes[1].output_tokens.cap(), 300);
  ASSERT_TRUE(spec->tenants.has_value());
  EXPECT_EQ(spec->tenants->count, 20);
  EXPECT_DOUBLE_EQ(spec->tenants->popularity.s(), 1.1);
  EXPECT_DOUBLE_EQ(spec->open_loop->MeanRate(), 8.0);
}

TEST(WorkloadSpecTest, SessionsAdaptersCancellationsAndClosedLoop) {
  auto spec = SpecFromYaml(R"(workload:
  requests: 100
  arrival: {process: closed-loop, users: 4, think_time: {exponential: {mean: 2s}}}
  tenants: {count: 3}
  adapters: {count: 5, popularity: {zipf: 1.0}, fraction: 0.5}
  classes:
    chat:
      share: 1
      priority: 2
      prompt:
        - {segment: tenant-instructions, tokens: 50}
        - {segment: history}
        - {segment: unique, tokens: {uniform: [10, 20]}}
      output_tokens: 30
      deadline: 10s
      cancel: {probability: 0.1, after: 5s}
      session: {turns: {uniform: [2, 4]}, think_time: 1s}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->mode, ArrivalMode::kClosedLoop);
  EXPECT_EQ(spec->closed_loop->users, 4);
  EXPECT_DOUBLE_EQ(spec->tenants->popularity.s(), 0.0);  // no popularity: uniform
  EXPECT_DOUBLE_EQ(spec->adapters->fraction, 0.5);
  EXPECT_EQ(spec->classes[0].priority, 2);
  EXPECT_TRUE(spec->classes[0].session.has_value());
  EXPECT_DOUBLE_EQ(spec->classes[0].cancel->probability, 0.1);
}

TEST(WorkloadSpecTest, TraceReplay) {
  // The file must exist when the spec is read (its error points at this line); an absolute
  // path, since LoadString has no directory to resolve a relative one against.
  const std::string file = ::testing::TempDir() + "/workload_spec_trace.jsonl";
  std::ofstream(file) << "";
  auto spec = SpecFromYaml("workload:\n  arrival: {process: trace}\n  trace: {file: " + file +
                           ", format: mooncake, class: chat, speed: 2}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->mode, ArrivalMode::kTrace);
  EXPECT_EQ(spec->trace->options.format, TraceFormat::kMooncake);
  EXPECT_EQ(spec->trace->options.class_name, "chat");
  EXPECT_DOUBLE_EQ(spec->trace->options.speed, 2.0);
  EXPECT_EQ(spec->trace->file, file);
}

TEST(WorkloadSpecTest, SharesMustSumToOne) {
  EXPECT_EQ(Error(R"(workload:
  duration: 1m
  arrival: {process: poisson, rate: 8/s}
  classes:
    a: {share: 0.7, prompt: [{segment: unique, tokens: 1}], output_tokens: 1}
    b: {share: 0.2, prompt: [{segment: unique, tokens: 1}], output_tokens: 1}
)"),
            "scenario.yaml:5:5: workload.classes: class shares must sum to 1, got 0.9 (a 0.7 + b 0.2)\n"
            "    5 |     a: {share: 0.7, prompt: [{segment: unique, tokens: 1}], output_tokens: 1}\n"
            "      |     ^\n");
}

TEST(WorkloadSpecTest, UnknownSegmentKindSuggestsTheNearest) {
  EXPECT_EQ(Error(R"(workload:
  duration: 1m
  arrival: {process: poisson, rate: 8/s}
  classes:
    a: {share: 1, prompt: [{segment: documnet, tokens: 1, pool: 3}], output_tokens: 1}
)"),
            "scenario.yaml:5:38: workload.classes.a.prompt[0].segment: unknown segment kind 'documnet'; did you "
            "mean 'document'? (valid: system, tenant-instructions, document, unique, history)\n"
            "    5 |     a: {share: 1, prompt: [{segment: documnet, tokens: 1, pool: 3}], output_tokens: 1}\n"
            "      |                                      ^\n");
}

TEST(WorkloadSpecTest, UnknownKeysAreErrors) {
  std::string yaml = kMinimal;
  yaml.replace(yaml.find("  duration"), 0, "  duratoin: 1m\n");
  const std::string e = Error(yaml);
  EXPECT_NE(e.find("scenario.yaml:2:3: "), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'duration'?"), std::string::npos) << e;
}

TEST(WorkloadSpecTest, ConsistencyRules) {
  const auto base = [](const std::string& prompt, const std::string& extra = "") {
    return "workload:\n  duration: 1m\n  arrival: {process: poisson, rate: 8/s}\n" + extra +
           "  classes:\n    a:\n      share: 1\n      prompt: " + prompt + "\n      output_tokens: 1\n";
  };
  EXPECT_NE(Error(base("[{segment: tenant-instructions, tokens: 5}]"))
                .find("tenant-instructions needs tenants: add `workload.tenants: {count: N}`"),
            std::string::npos);
  EXPECT_NE(Error(base("[{segment: history}, {segment: unique, tokens: 5}]"))
                .find("a history segment needs `session: {turns: ..., think_time: ...}` in its class"),
            std::string::npos);
  EXPECT_NE(Error(base("[{segment: unique, tokens: 5, pool: 3}]")).find("`pool` applies to document segments only"),
            std::string::npos);
  EXPECT_NE(Error(base("[{segment: document, tokens: 5}]")).find("missing required field 'pool'"), std::string::npos);
  EXPECT_NE(Error(base("[]")).find("expected at least one segment"), std::string::npos);
  EXPECT_NE(Error(base("[{segment: unique, tokens: -5}]")).find("expected an integer >= 1, got -5"),
            std::string::npos);
  EXPECT_NE(Error("workload:\n  trace: {file: t.jsonl}\n  classes: {}\n")
                .find("`classes` describes a synthetic workload; a trace replay takes it from the trace"),
            std::string::npos);
  EXPECT_NE(Error("workload:\n  arrival: {process: trace}\n").find("process 'trace' replays `workload.trace`"),
            std::string::npos);
  EXPECT_NE(Error("workload:\n  trace: {file: t.jsonl, format: mooncak}\n")
                .find("unknown trace format 'mooncak'; did you mean 'mooncake'?"),
            std::string::npos);
  EXPECT_NE(Error("workload:\n  trace: {file: t.jsonl, speed: 0}\n").find("expected a replay speed > 0, got 0"),
            std::string::npos);
  EXPECT_NE(Error("workload:\n  duration: 1m\n").find("missing required field 'arrival'"), std::string::npos);
}

}  // namespace
}  // namespace fleetplan
