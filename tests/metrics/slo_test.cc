// SLO parsing (located errors pinned) and the per-request verdict.
#include "fleetplan/metrics/slo.h"

#include <gtest/gtest.h>

#include "fleetplan/core/digest.h"
#include "metrics/test_util.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

using testing_util::OkRecord;

Expected<SloSpec> Parse(const std::string& yaml) {
  auto doc = YamlDocument::LoadString(yaml, "slo.yaml");
  if (!doc.ok()) return doc.status();
  return ParseSlo(doc->root());
}

std::string ErrorOf(const std::string& yaml) {
  Expected<SloSpec> slo = Parse(yaml);
  EXPECT_FALSE(slo.ok());
  return slo.ok() ? "" : slo.status().message();
}

TEST(Slo, ParsesTheScenarioExample) {
  Expected<SloSpec> slo = Parse(
      "interactive: {ttft: 600ms, itl_max: 150ms}\n"
      "document:    {ttft: 2s, tpot: 80ms}\n"
      "research:    {e2e: 10m}\n");
  ASSERT_TRUE(slo.ok()) << slo.status().message();
  ASSERT_EQ(slo->names(), (std::vector<std::string>{"interactive", "document", "research"}));
  const ClassObjectives& i = slo->Find("interactive")->objectives;
  EXPECT_EQ(i.ttft, Ms(600));
  EXPECT_EQ(i.itl_max, Ms(150));
  EXPECT_EQ(i.tpot, std::nullopt);
  EXPECT_EQ(slo->Find("document")->objectives.tpot, Ms(80));
  EXPECT_EQ(slo->Find("research")->objectives.e2e, Minutes(10));
  EXPECT_EQ(slo->Find("research")->path, "research");
  EXPECT_EQ(slo->Find("document")->where.line, 2);
}

TEST(Slo, ParsesOutputBucketsWithCatchAll) {
  Expected<SloSpec> slo = Parse(
      "research:\n"
      "  e2e_by_output:\n"
      "    - {max_output: 256, e2e: 5s}\n"
      "    - {max_output: 2048, e2e: 40s}\n"
      "    - {e2e: 10m}\n"
      "batch: {}\n");
  ASSERT_TRUE(slo.ok()) << slo.status().message();
  const ClassObjectives& o = slo->Find("research")->objectives;
  ASSERT_EQ(o.e2e_by_output.size(), 3u);
  EXPECT_EQ(o.BucketFor(1)->e2e, Sec(5));
  EXPECT_EQ(o.BucketFor(256)->e2e, Sec(5));
  EXPECT_EQ(o.BucketFor(257)->e2e, Sec(40));
  EXPECT_EQ(o.BucketFor(100'000)->e2e, Minutes(10));
  EXPECT_TRUE(slo->Find("batch")->objectives == ClassObjectives{});
}

TEST(Slo, UnknownObjectiveSuggestsTheNearest) {
  EXPECT_EQ(ErrorOf("interactive: {ttft: 600ms, itl_mx: 150ms}\n"),
            "slo.yaml:1:28: interactive: unknown field 'itl_mx'; did you mean 'itl_max'? "
            "(valid: ttft, tpot, itl_max, e2e, e2e_by_output)\n"
            "    1 | interactive: {ttft: 600ms, itl_mx: 150ms}\n"
            "      |                            ^\n");
}

TEST(Slo, DurationWithoutUnitIsAnError) {
  EXPECT_EQ(ErrorOf("document: {ttft: 2}\n"),
            "slo.yaml:1:18: document.ttft: expected a duration with a unit (ns, us, ms, s, m, "
            "min, h), got '2'\n"
            "    1 | document: {ttft: 2}\n"
            "      |                  ^\n");
}

TEST(Slo, ZeroTargetIsAnError) {
  EXPECT_EQ(ErrorOf("document: {tpot: 0ms}\n"),
            "slo.yaml:1:18: document.tpot: expected a duration > 0, got '0ms'\n"
            "    1 | document: {tpot: 0ms}\n"
            "      |                  ^\n");
}

TEST(Slo, EmptyClassNameIsAnError) {
  EXPECT_EQ(ErrorOf("\"\": {ttft: 1s}\n"),
            "slo.yaml:1:5: \"\": expected a non-empty class name\n"
            "    1 | \"\": {ttft: 1s}\n"
            "      |     ^\n");
}

TEST(Slo, NullClassAsksForBraces) {
  EXPECT_EQ(ErrorOf("batch:\n"),
            "slo.yaml:1:1: batch: expected a map of objectives (ttft, tpot, itl_max, e2e, "
            "e2e_by_output), got 'null'; write {} for a class without objectives\n"
            "    1 | batch:\n"
            "      | ^\n");
}

TEST(Slo, BucketsOutOfOrderAreAnError) {
  EXPECT_EQ(ErrorOf("r:\n  e2e_by_output:\n    - {max_output: 512, e2e: 5s}\n"
                    "    - {max_output: 256, e2e: 9s}\n"),
            "slo.yaml:4:20: r.e2e_by_output[1].max_output: max_output 256 must be greater than the "
            "previous bucket's 512 (buckets are listed in ascending order)\n"
            "    4 |     - {max_output: 256, e2e: 9s}\n"
            "      |                    ^\n");
}

TEST(Slo, CatchAllMustBeLast) {
  EXPECT_EQ(ErrorOf("r:\n  e2e_by_output:\n    - {e2e: 5s}\n    - {max_output: 256, e2e: 9s}\n"),
            "slo.yaml:4:7: r.e2e_by_output[1]: the catch-all bucket (no max_output) must be the "
            "last one; move it to the end\n"
            "    4 |     - {max_output: 256, e2e: 9s}\n"
            "      |       ^\n");
}

TEST(Slo, EmptyMappingIsAnError) {
  EXPECT_EQ(ErrorOf("{}\n"),
            "slo.yaml:1:1: expected at least one class\n"
            "    1 | {}\n"
            "      | ^\n");
}

TEST(SloFile, BareFileAndScenarioAreBothAccepted) {
  Expected<SloFile> bare = LoadSloString("interactive: {ttft: 600ms}\n", "slo.yaml");
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_FALSE(bare->is_scenario);
  EXPECT_EQ(bare->declared_classes, std::vector<std::string>{"interactive"});
  EXPECT_EQ(bare->digest, DigestOf("interactive: {ttft: 600ms}\n"));

  Expected<SloFile> scenario = LoadSloString(
      "version: 1\nname: x\nworkload:\n  classes:\n    chat: {share: 0.5}\n    batch: {share: 0.5}\n"
      "slo:\n  chat: {ttft: 1s}\n",
      "scenario.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  EXPECT_TRUE(scenario->is_scenario);
  EXPECT_TRUE(scenario->classes_from_workload);
  EXPECT_EQ(scenario->declared_classes, (std::vector<std::string>{"chat", "batch"}));
  EXPECT_EQ(scenario->slo.names(), std::vector<std::string>{"chat"});
  EXPECT_EQ(scenario->slo.Find("chat")->path, "slo.chat");
}

TEST(SloFile, SloForAClassTheScenarioDoesNotDeclareIsLocated) {
  Expected<SloFile> f = LoadSloString(
      "workload:\n  classes:\n    interactive: {share: 1}\nslo:\n  interactve: {ttft: 1s}\n", "s.yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "s.yaml:5:15: slo.interactve: unknown class 'interactve'; did you mean 'interactive'? "
            "(valid: interactive); SLO classes must be declared under workload.classes\n"
            "    5 |   interactve: {ttft: 1s}\n"
            "      |               ^\n");
}

TEST(SloFile, EmptyWorkloadClassNameIsLocated) {
  Expected<SloFile> f = LoadSloString("workload:\n  classes:\n    \"\": {share: 1}\nslo:\n  a: {ttft: 1s}\n", "s.yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "s.yaml:3:9: workload.classes.\"\": expected a non-empty class name\n"
            "    3 |     \"\": {share: 1}\n"
            "      |         ^\n");
}

TEST(SloFile, ReadsTheReferenceScenario) {
  FP_REQUIRE_SHARED_DATA();
  Expected<SloFile> f = LoadSloFile(::fleetplan::testing::SharedPath("../spec/scenario-v1.yaml"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->is_scenario);
  EXPECT_EQ(f->declared_classes, (std::vector<std::string>{"interactive", "document", "research"}));
  EXPECT_EQ(f->slo.Find("document")->objectives.tpot, Ms(80));
}

TEST(Verdict, EachObjectiveIsJudgedOnItsOwn) {
  ClassObjectives o;
  o.ttft = Ms(600);
  o.itl_max = Ms(150);
  RequestRecord fast = OkRecord(0, 0, 0, 100, 50, 100);
  EXPECT_TRUE(Evaluate(fast, o).qualified);
  RequestRecord slow_first = OkRecord(0, 0, 0, 700, 50, 100);
  Verdict v = Evaluate(slow_first, o);
  EXPECT_FALSE(v.qualified);
  EXPECT_TRUE(v.Missed(Objective::kTtft));
  EXPECT_FALSE(v.Missed(Objective::kItlMax));
  RequestRecord stall = OkRecord(0, 0, 0, 100, 50, 100);
  stall.itl_max = Ms(151);
  v = Evaluate(stall, o);
  EXPECT_TRUE(v.Missed(Objective::kItlMax));
  EXPECT_FALSE(v.Missed(Objective::kTtft));
}

TEST(Verdict, NotOkMissesEveryDeclaredObjective) {
  ClassObjectives o;
  o.ttft = Ms(600);
  o.e2e = Sec(10);
  RequestRecord cancelled;
  cancelled.status = RecordStatus::kCancelled;
  const Verdict v = Evaluate(cancelled, o);
  EXPECT_FALSE(v.qualified);
  EXPECT_TRUE(v.Missed(Objective::kTtft));
  EXPECT_TRUE(v.Missed(Objective::kE2e));
  EXPECT_FALSE(v.Missed(Objective::kTpot));  // not declared
}

TEST(Verdict, SingleTokenAnswerHasNoGapToBound) {
  ClassObjectives o;
  o.tpot = Ms(1);
  o.itl_max = Ms(1);
  RequestRecord one = OkRecord(0, 0, 0, 100, 1, 0);
  EXPECT_TRUE(Evaluate(one, o).qualified);
}

}  // namespace
}  // namespace fleetplan
