// `fleetplan rollout simulate` and `fleetplan rollout LADDER --exercise-rollback`: simulated
// canary evidence that a ladder's canary stage reads — held unless the ladder accepts
// simulated evidence, then judged (a regressing candidate rolls back) and labelled; the
// same bytes on every rerun; bad flags and scenarios that are not one window refused with
// located messages and the rollout verbs' exit codes; and the rollback exercised on one
// simulated fleet, its observed figures in rollout.json.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli_run.h"
#include "fleetplan/core/json.h"
#include "support/in_scratch.h"
#include "support/small_scenarios.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::InScratch;
using testing::RunFleetplan;

constexpr const char* kObserved = "2026-11-30T12:00:00Z";
constexpr const char* kAsOf = "2026-12-01T00:00:00Z";

class RolloutSimulate : public InScratch {
 protected:
  void SetUp() override {
    InScratch::SetUp();
    std::ofstream("base.yaml") << testing::LongCanaryScenario("0.2ms");
    std::ofstream("slow.yaml") << testing::LongCanaryScenario("0.6ms");
    std::ofstream("warmup.yaml") << "evidence: {kind: warmup, observed_at: 2026-11-30T00:00:00Z, source: warm-up job}\n"
                                 << "data: {warmed: true}\n";
  }
  static testing::CliRun Simulate(const std::string& candidate, const std::string& split, const std::string& out,
                                  std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"rollout", "simulate", "--baseline",    "base.yaml", "--candidate", candidate,
                                     "--split", split,      "--observed-at", kObserved,   "--out",       out};
    args.insert(args.end(), more.begin(), more.end());
    return RunFleetplan(args);
  }
  // warm-up, then a 10% canary on DIR/canary.yaml, then promotion.
  static void Ladder(const std::string& path, const std::string& evidence, const std::string& extra = "") {
    std::ofstream(path) << "version: 1\n"
                        << "candidate: {revision: slow-decode, namespace: atlas-slow" << extra << "}\n"
                        << "baseline: {revision: bf16" << (extra.empty() ? "" : ", scenario: base.yaml") << "}\n"
                        << "max_age: {canary-metrics: 24h}\n"
                        << "stages:\n"
                        << "  - {name: warm-up, traffic: 0%, evidence: warmup.yaml}\n"
                        << "  - {name: canary-10, traffic: 10%, evidence: " << evidence
                        << ", metrics: {ttft_ms: {min_samples: 30}, e2e_ms: {min_samples: 30}}}\n"
                        << "  - {name: promote, traffic: 100%}\n";
  }
};

TEST_F(RolloutSimulate, WritesPinnedRecordsAndEvidenceTheSameBytesOnEveryRun) {
  auto r = Simulate("slow.yaml", "10%", "c10");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("simulated canary: a 10% split of 6045 requests (seed 11); both fleets received every request "
                       "(their records say which were served)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("wrote c10/canary.yaml (canary-metrics evidence, simulated: true)"), std::string::npos) << r.out;
  const std::string canary = testing::FileText("c10/canary.yaml");
  EXPECT_NE(canary.find("  kind: canary-metrics\n  observed_at: 2026-11-30T12:00:00Z\n"), std::string::npos) << canary;
  EXPECT_NE(canary.find("  source: \"fleetplan rollout simulate: baseline base.yaml (sha256:"), std::string::npos);
  EXPECT_NE(canary.find("data:\n  simulated: true\n  split: 10%\n  seed: 11\n"), std::string::npos) << canary;
  EXPECT_EQ(RunFleetplan({"evidence", "check", "c10/canary.yaml", "--as-of", kAsOf}).code, 0);

  auto again = Simulate("slow.yaml", "10%", "again", {"--json"});
  ASSERT_EQ(again.code, 0) << again.err;
  const Json j = Json::parse(again.out);
  EXPECT_EQ(j["requests"], 6045);
  EXPECT_EQ(j["candidate"]["records"].get<int64_t>() + j["baseline"]["records"].get<int64_t>(), 6045);
  for (const char* f : {"candidate.jsonl", "baseline.jsonl", "canary.yaml"}) {
    EXPECT_EQ(testing::FileText(std::string("c10/") + f), testing::FileText(std::string("again/") + f)) << f;
  }
  // --expires-at lands in the header; --seed changes the window (and the split) for both.
  ASSERT_EQ(Simulate("slow.yaml", "1%", "c1", {"--expires-at", "2026-12-30T00:00:00Z", "--seed", "3"}).code, 0);
  const std::string c1 = testing::FileText("c1/canary.yaml");
  EXPECT_NE(c1.find("  expires_at: 2026-12-30T00:00:00Z\n"), std::string::npos) << c1;
  EXPECT_NE(c1.find("  split: 1%\n  seed: 3\n"), std::string::npos) << c1;
}

TEST_F(RolloutSimulate, ARegressingCandidateHoldsUnlessThePolicyAcceptsSimulatedEvidenceThenRollsBack) {
  ASSERT_EQ(Simulate("slow.yaml", "10%", "c10").code, 0);
  Ladder("ladder.yaml", "c10/canary.yaml");
  auto held = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(held.code, 1);
  const Json h = Json::parse(held.out);
  EXPECT_EQ(h["decision"], "hold");
  EXPECT_EQ(h["stage"], "canary-10");
  EXPECT_EQ(h["traffic"], 0.1);
  EXPECT_EQ(h["stages"][1]["simulated"], true);
  EXPECT_EQ(h["reasons"][0],
            "canary-10: c10/canary.yaml is simulated evidence, a 10% split, and the policy does not accept simulated "
            "evidence (accept_simulated: false): measure the canary, or set accept_simulated: true");

  std::string text = testing::FileText("ladder.yaml");
  text.replace(text.find("max_age:"), 8, "accept_simulated: true\nmax_age:");
  std::ofstream("accepting.yaml") << text;
  auto rolled = RunFleetplan({"rollout", "accepting.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(rolled.code, 1);
  const Json r = Json::parse(rolled.out);
  EXPECT_EQ(r["decision"], "rollback");
  EXPECT_EQ(r["traffic"], 0);
  EXPECT_EQ(r["stages"][1]["verdict"], "fail");
  EXPECT_EQ(r["stages"][1]["simulated"], true);
  EXPECT_EQ(r["ladder"]["accept_simulated"], true);
  const std::string reason = r["reasons"][0].get<std::string>();
  EXPECT_NE(reason.find("canary-10: ttft_ms: median "), std::string::npos) << reason;
  EXPECT_NE(reason.find(": regressed"), std::string::npos) << reason;
  EXPECT_NE(reason.find("[simulated evidence, a 10% split, accepted: accept_simulated: true]"), std::string::npos)
      << reason;
  auto shown = RunFleetplan({"rollout", "accepting.yaml", "--as-of", kAsOf});
  EXPECT_NE(shown.out.find("  canary-10       10%  fail (simulated) canary-10: "), std::string::npos) << shown.out;

  // The same candidate as the baseline passes, labelled too.
  std::ofstream("same.yaml") << testing::LongCanaryScenario("0.2ms");
  ASSERT_EQ(Simulate("same.yaml", "10%", "s10").code, 0);
  text.replace(text.find("c10/canary.yaml"), 15, "s10/canary.yaml");
  std::ofstream("same-ladder.yaml") << text;
  auto promoted = RunFleetplan({"rollout", "same-ladder.yaml", "--as-of", kAsOf});
  EXPECT_EQ(promoted.code, 0) << promoted.out << promoted.err;
  EXPECT_NE(promoted.out.find("pass (simulated) canary-10: every metric passes per class and pooled [simulated"),
            std::string::npos)
      << promoted.out;
}

// Regression: a 1% stage decided (rollback) on simulated evidence of a 10% split.
TEST_F(RolloutSimulate, SimulatedEvidenceOfAnotherSplitHoldsTheStage) {
  ASSERT_EQ(Simulate("slow.yaml", "10%", "c10").code, 0);
  Ladder("ladder.yaml", "c10/canary.yaml");
  std::string text = testing::FileText("ladder.yaml");
  text.replace(text.find("max_age:"), 8, "accept_simulated: true\nmax_age:");
  text.replace(text.find("traffic: 10%"), 12, "traffic: 1%");
  std::ofstream("ladder.yaml") << text;
  auto r = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["decision"], "hold");
  EXPECT_EQ(j["stages"][1]["verdict"], "hold");
  EXPECT_EQ(j["reasons"][0],
            "canary-10: c10/canary.yaml is simulated evidence, a 10% split, but the stage sends 1% of the traffic: "
            "simulate the stage's own split (fleetplan rollout simulate --split 1%)");
}

TEST_F(RolloutSimulate, BadFlagsAndScenariosThatAreNotOneWindowAreRefused) {
  const auto err = [](const testing::CliRun& r) { return r.err.substr(0, r.err.find('\n')); };
  auto missing = RunFleetplan({"rollout", "simulate", "--baseline", "base.yaml", "--candidate", "slow.yaml"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(err(missing), "rollout simulate: --split SHARE (e.g. 1%) is required");
  for (const char* split : {"0%", "100%", "10", "ten%", "-1%"}) {
    auto r = Simulate("slow.yaml", split, "o");
    EXPECT_EQ(r.code, 2) << split;
    EXPECT_EQ(err(r), fmt::format("--split: expected the candidate's share as a percentage above 0% and below 100% "
                                  "(e.g. 1% or 10%), got '{}'",
                                  split));
  }
  auto when = RunFleetplan({"rollout", "simulate", "--baseline", "base.yaml", "--candidate", "slow.yaml", "--split",
                            "1%", "--observed-at", "yesterday", "--out", "o"});
  EXPECT_EQ(when.code, 2);
  EXPECT_EQ(err(when).rfind("--observed-at: expected a UTC time", 0), 0u) << when.err;
  auto expires = Simulate("slow.yaml", "1%", "o", {"--expires-at", "2026-11-01T00:00:00Z"});
  EXPECT_EQ(expires.code, 2);
  EXPECT_EQ(err(expires), "--expires-at: 2026-11-01T00:00:00Z is not after --observed-at 2026-11-30T12:00:00Z");
  EXPECT_EQ(err(Simulate("slow.yaml", "1%", "o", {"--seed", "-3"})), "--seed: expected an integer >= 0, got '-3'");
  EXPECT_EQ(Simulate("slow.yaml", "1%", "o", {"--duration", "soon"}).code, 2);
  EXPECT_FALSE(std::filesystem::exists("o"));  // nothing written on a usage error

  std::string faster = testing::LongCanaryScenario("0.2ms");
  faster.replace(faster.find("rate: 10/s"), 10, "rate: 12/s");
  std::ofstream("faster.yaml") << faster;
  auto window = Simulate("faster.yaml", "1%", "o");
  EXPECT_EQ(window.code, 3);
  EXPECT_EQ(err(window),
            "faster.yaml:13:37: workload.arrival.rate: '12/s' here, '10/s' in the baseline (base.yaml): a canary "
            "compares the candidate with the baseline on one window of traffic, so both scenarios need the same "
            "workload section");
  EXPECT_EQ(Simulate("absent.yaml", "1%", "o").code, 3);
}

TEST_F(RolloutSimulate, TheRollbackIsExercisedOnOneFleetAndItsFiguresReachRolloutJson) {
  ASSERT_EQ(Simulate("slow.yaml", "10%", "c10").code, 0);
  std::string extra = ", scenario: slow.yaml";
  Ladder("ladder.yaml", "c10/canary.yaml", extra);
  std::string text = testing::FileText("ladder.yaml");
  text.replace(text.find("max_age:"), 8, "accept_simulated: true\nmax_age:");
  std::ofstream("ladder.yaml") << text;
  auto r = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--exercise-rollback", "rb", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["decision"], "rollback");
  const Json& x = j["rollback"]["exercised"];
  EXPECT_EQ(x["split"], 0.1);
  EXPECT_EQ(x["rollback_at_s"], 300);
  EXPECT_EQ(x["candidate"], "slow-decode");
  EXPECT_EQ(x["serving"], "bf16");
  EXPECT_EQ(x["retained_namespace"], "atlas-slow");
  EXPECT_EQ(x["after_rollback"]["served_by_candidate"], 0);
  EXPECT_EQ(x["after_rollback"]["served_by_baseline"], x["after_rollback"]["arrived"]);
  EXPECT_EQ(x["candidate_replicas_listed"], 2);
  for (const Json& rep : x["replicas"]) {
    EXPECT_EQ(rep["state"], rep["revision"] == "slow-decode" ? "gone" : "ready") << rep.dump();
  }
  const Json evidence = Json::parse(testing::FileText("rb/rollback.json"));
  EXPECT_EQ(evidence["evidence"]["observed_at"], kAsOf);
  EXPECT_NE(evidence["evidence"]["source"].get<std::string>().find("stage canary-10 at 10%"), std::string::npos);
  EXPECT_EQ(RunFleetplan({"evidence", "check", "rb/rollback.json", "--as-of", kAsOf}).code, 0);

  auto shown = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--exercise-rollback", "rb2"});
  EXPECT_NE(shown.out.find("rollback exercised (simulated, 10% to slow-decode until 300 s, grace 0 s): after it"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("slow-decode's replicas listed, drained: 2 gone, 3 gone; namespace atlas-slow retained"),
            std::string::npos)
      << shown.out;
  EXPECT_EQ(testing::FileText("rb/requests.jsonl"), testing::FileText("rb2/requests.jsonl"));

  // Without the two scenarios there is nothing to exercise on; other flags need the exercise.
  Ladder("bare.yaml", "c10/canary.yaml");
  std::string bare = testing::FileText("bare.yaml");
  bare.replace(bare.find("max_age:"), 8, "accept_simulated: true\nmax_age:");
  std::ofstream("bare.yaml") << bare;
  auto none = RunFleetplan({"rollout", "bare.yaml", "--as-of", kAsOf, "--exercise-rollback", "rb3"});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err.substr(0, none.err.find('\n')),
            "bare.yaml:2:12: candidate: exercising the rollback needs the two fleets: candidate.scenario and "
            "baseline.scenario (scenario files, relative to the ladder)");
  EXPECT_EQ(RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--rollback-at", "10s"}).code, 2);
  // A decision that is not a rollback exercises nothing.
  std::ofstream("same.yaml") << testing::LongCanaryScenario("0.2ms");
  ASSERT_EQ(Simulate("same.yaml", "10%", "s10").code, 0);
  text.replace(text.find("c10/canary.yaml"), 15, "s10/canary.yaml");
  std::ofstream("promoting.yaml") << text;
  auto promoted = RunFleetplan({"rollout", "promoting.yaml", "--as-of", kAsOf, "--exercise-rollback", "rb4"});
  EXPECT_EQ(promoted.code, 0) << promoted.err;
  EXPECT_NE(promoted.out.find("rollback exercise: not run (the decision is promote, not rollback)"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("rb4"));
}

}  // namespace
}  // namespace fleetplan
