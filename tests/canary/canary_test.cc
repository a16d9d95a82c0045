// The canary layer: the split's assignment is a binomial draw of the stated share; a
// simulated canary writes the share of each run's records the split assigns, the same
// bytes on every rerun, and refuses two scenarios that are not the same window; a rollback
// exercise leaves no request on the candidate after the rollback, every later request on
// the baseline, and the candidate's replicas drained and still listed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "fleetplan/canary/rollback_exercise.h"
#include "fleetplan/canary/simulated_canary.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/traffic_split.h"
#include "support/in_scratch.h"
#include "support/small_scenarios.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::InScratch;

// Two-sided binomial tolerance: |k - n p| <= kZ sqrt(n p (1 - p)). kZ = 4.4 leaves a
// false alarm of about 1e-5 for an unbiased split (normal approximation), so a count
// outside it says the assignment is biased, not unlucky.
constexpr double kZ = 4.4;
double Tolerance(int64_t n, double p) {
  return kZ * std::sqrt(static_cast<double>(n) * p * (1 - p));
}

std::vector<Json> Lines(const std::string& path) {
  std::vector<Json> out;
  std::istringstream in(testing::FileText(path));
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

Scenario Load(const std::string& name, const std::string& text) {
  std::ofstream(name) << text;
  auto s = LoadScenario(name);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(SplitAssignment, IsABinomialDrawOfTheShareOverAMillionIds) {
  constexpr int64_t kIds = 1'000'000;
  for (double share : {0.01, 0.10, 0.5}) {
    const SplitAssignment a(11, share);
    int64_t k = 0;
    for (RequestId id = 0; id < kIds; ++id) k += a.ToCandidate(id) ? 1 : 0;
    EXPECT_NEAR(static_cast<double>(k), static_cast<double>(kIds) * share, Tolerance(kIds, share)) << share;
  }
  // A pure function of (seed, id): another seed is another draw, the same seed the same.
  EXPECT_EQ(SplitAssignment(11, 0.1).Unit(42), SplitAssignment(11, 0.9).Unit(42));
  EXPECT_NE(SplitAssignment(11, 0.1).Unit(42), SplitAssignment(12, 0.1).Unit(42));
  // Nested: a request in the 1% is in the 10% (u below 0.01 is below 0.1).
  for (RequestId id = 0; id < 10'000; ++id) {
    if (SplitAssignment(11, 0.01).ToCandidate(id)) {
      EXPECT_TRUE(SplitAssignment(11, 0.1).ToCandidate(id)) << id;
    }
  }
}

class SimulatedCanaryTest : public InScratch {
 protected:
  SimulatedCanaryOptions Options(double split, const std::string& out) {
    SimulatedCanaryOptions o;
    o.split = split;
    o.observed_at = *ParseUtcTime("2026-11-30T12:00:00Z");
    o.out_dir = out;
    return o;
  }
};

TEST_F(SimulatedCanaryTest, OneAndTenPercentSplitsReportTheirShareOfEachRunsRecords) {
  const Scenario base = Load("base.yaml", testing::LongCanaryScenario("0.2ms"));
  const Scenario cand = Load("cand.yaml", testing::LongCanaryScenario("0.6ms"));
  for (const auto& [split, dir] : {std::pair{0.01, "one"}, {0.10, "ten"}}) {
    auto c = SimulateCanary(base, cand, Options(split, dir));
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->candidate.records + c->baseline.records, c->requests);
    EXPECT_NEAR(static_cast<double>(c->candidate.records), static_cast<double>(c->requests) * split,
                Tolerance(c->requests, split))
        << dir << ": " << c->candidate.records << " of " << c->requests;
    // Each file holds exactly its side's requests, and from its own run.
    const SplitAssignment assign(11, split);
    std::set<int64_t> ids;
    for (const Json& r : Lines(c->candidate.file)) {
      EXPECT_TRUE(assign.ToCandidate(r["id"].get<RequestId>())) << r.dump();
      ids.insert(r["id"].get<int64_t>());
    }
    for (const Json& r : Lines(c->baseline.file)) {
      EXPECT_FALSE(assign.ToCandidate(r["id"].get<RequestId>())) << r.dump();
      ids.insert(r["id"].get<int64_t>());
    }
    EXPECT_EQ(static_cast<int64_t>(ids.size()), c->requests);
    EXPECT_EQ(DigestOf(testing::FileText(c->candidate.file)), c->candidate.digest);
    // The evidence the ladder reads: its header and both pins.
    auto h = ReadEvidenceFile(c->evidence_file);
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(h->kind, "canary-metrics");
    EXPECT_EQ(FormatUtcTime(h->observed_at), "2026-11-30T12:00:00Z");
    EXPECT_NE(h->source.find("fleetplan rollout simulate: baseline base.yaml (" + base.digest +
                             "), candidate cand.yaml (" + cand.digest + ")"),
              std::string::npos)
        << h->source;
    const std::string text = testing::FileText(c->evidence_file);
    EXPECT_NE(text.find("  simulated: true\n"), std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("  split: {}\n", FormatShare(split))), std::string::npos) << text;
    EXPECT_NE(text.find("  candidate: {file: \"candidate.jsonl\", digest: '" + c->candidate.digest + "'}"),
              std::string::npos)
        << text;
  }
  // Byte-identical on a rerun.
  auto again = SimulateCanary(base, cand, Options(0.10, "ten-again"));
  ASSERT_TRUE(again.ok());
  for (const char* f : {"candidate.jsonl", "baseline.jsonl", "canary.yaml"}) {
    EXPECT_EQ(testing::FileText(std::string("ten/") + f), testing::FileText(std::string("ten-again/") + f)) << f;
  }
}

// Regression: a 99.9999999% split printed and recorded "100%" (a split --split refuses)
// and wrote an empty baseline; 1e-9% wrote an empty candidate.
TEST(FormatShare, RecordsExactlyTheShareThatRan) {
  EXPECT_EQ(FormatShare(0.01), "1%");
  EXPECT_EQ(FormatShare(0.1), "10%");
  EXPECT_EQ(FormatShare(0.999999999), "99.9999999%");
  // What --split read is what is recorded, and it reads back to the same share.
  for (const char* text : {"99.9999999%", "1.23456789012%", "1e-9%", "50%", "0.5%"}) {
    auto share = ParseSplitShare("--split", text);
    ASSERT_TRUE(share.ok()) << text;
    auto back = ParseSplitShare("--split", FormatShare(*share));
    ASSERT_TRUE(back.ok()) << FormatShare(*share);
    EXPECT_EQ(*back, *share) << text << " -> " << FormatShare(*share);
  }
  EXPECT_EQ(FormatShare(*ParseSplitShare("--split", "1e-9%")), "1e-09%");
}

TEST_F(SimulatedCanaryTest, ASplitThatLeavesASideWithoutRecordsIsRefused) {
  const Scenario base = Load("base.yaml", testing::LongCanaryScenario("0.2ms"));
  const Scenario cand = Load("cand.yaml", testing::LongCanaryScenario("0.6ms"));
  auto all = SimulateCanary(base, cand, Options(0.999999999, "all"));
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kUsage);
  EXPECT_NE(all.status().message().find("--split: a 99.9999999% split of these "), std::string::npos)
      << all.status().message();
  EXPECT_NE(all.status().message().find("leaves the baseline no records"), std::string::npos) << all.status().message();
  EXPECT_FALSE(std::filesystem::exists("all/canary.yaml"));
  auto none = SimulateCanary(base, cand, Options(*ParseSplitShare("--split", "1e-9%"), "none"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("leaves the candidate no records"), std::string::npos)
      << none.status().message();
}

TEST_F(SimulatedCanaryTest, ScenariosThatAreNotTheSameWindowAreRefused) {
  const Scenario base = Load("base.yaml", testing::CanaryScenario("0.2ms"));
  std::string faster = testing::CanaryScenario("0.2ms");
  faster.replace(faster.find("rate: 6/s"), 9, "rate: 8/s");
  const Scenario other = Load("other.yaml", faster);
  const Status s = CheckSameWindow(base, other, std::nullopt);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(
      s.message().substr(0, s.message().find('\n')),
      "other.yaml:13:37: workload.arrival.rate: '8/s' here, '6/s' in the baseline (base.yaml): a canary compares "
      "the candidate with the baseline on one window of traffic, so both scenarios need the same workload section");
  EXPECT_FALSE(SimulateCanary(base, other, Options(0.1, "o")).ok());

  std::string seeded = testing::CanaryScenario("0.2ms");
  seeded.replace(seeded.find("seed: 11"), 8, "seed: 12");
  const Scenario reseeded = Load("seeded.yaml", seeded);
  const Status seed = CheckSameWindow(base, reseeded, std::nullopt);
  EXPECT_NE(seed.message().find("seeded.yaml:3:7: seed: 12 here, 11 in the baseline (base.yaml)"), std::string::npos)
      << seed.message();
  EXPECT_TRUE(CheckSameWindow(base, reseeded, 7).ok());  // one --seed for both
}

class RollbackExerciseTest : public InScratch {
 protected:
  void SetUp() override {
    InScratch::SetUp();
    base_ = Load("base.yaml", testing::LongCanaryScenario("0.2ms"));
    cand_ = Load("cand.yaml", testing::LongCanaryScenario("0.6ms"));
  }
  RollbackExerciseOptions Options(const std::string& dir, std::optional<Duration> at, Duration grace = Duration()) {
    RollbackExerciseOptions o;
    o.out_dir = dir;
    o.share = 0.10;
    o.rollback_at = at;
    o.grace = grace;
    o.observed_at = *ParseUtcTime("2026-12-01T00:00:00Z");
    return o;
  }
  // A moment after 300 s when the candidate holds a request: 50 ms after the arrival of
  // the first one of at least 200 ms it served in a run without a rollback before it.
  Duration WhileTheCandidateHolds() {
    EXPECT_TRUE(ExerciseRollback(base_, cand_, Options("probe", Sec(599))).ok());
    for (const Json& r : Lines("probe/requests.jsonl")) {
      const double arrival = r["arrival_s"].get<double>();
      if (r["replica"].get<int>() >= 2 && arrival > 300 && r["finish_s"].get<double>() - arrival > 0.2) {
        return Duration::Nanos(static_cast<int64_t>(std::llround(arrival * 1e9)) + Ms(50).ns());
      }
    }
    ADD_FAILURE() << "no candidate request of 200 ms after 300 s";
    return Sec(300);
  }
  Scenario base_;
  Scenario cand_;
};

TEST_F(RollbackExerciseTest, AfterTheRollbackTheBaselineServesEveryRequestAndTheCandidateIsDrainedButListed) {
  const Duration at = WhileTheCandidateHolds();
  auto e = ExerciseRollback(base_, cand_, Options("x", at));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->before + e->after, e->requests);
  EXPECT_NEAR(static_cast<double>(e->before_ended_candidate), static_cast<double>(e->before) * 0.10,
              Tolerance(e->before, 0.10));
  EXPECT_GT(e->after, 2500);
  EXPECT_EQ(e->after_served_candidate, 0);
  EXPECT_EQ(e->after_served_baseline, e->after);
  EXPECT_EQ(e->after_ok, e->after);
  EXPECT_GT(e->after_assigned_candidate, 0);  // the split still picked them; the baseline served them
  // With no grace, what the candidate held went back to the baseline (the step in flight
  // ends first); nothing ended there later than that step.
  EXPECT_GE(e->requeued_to_baseline, 1);
  EXPECT_EQ(e->drain_cancelled, 0);
  EXPECT_EQ(e->candidate_ended_after_rollback, 0);
  ASSERT_EQ(e->replicas.size(), 4u);
  for (const ExercisedReplica& r : e->replicas) {
    EXPECT_EQ(r.candidate, r.id >= 2);
    EXPECT_EQ(r.state, r.candidate ? ReplicaState::kGone : ReplicaState::kReady) << r.id;
    EXPECT_GT(r.routed, 0) << r.id;
  }
  // The simulator's own files, pinned by the evidence, the same bytes on a rerun.
  const Json evidence = Json::parse(testing::FileText("x/rollback.json"));
  EXPECT_EQ(evidence["evidence"]["kind"], "rollback-exercise");
  EXPECT_EQ(evidence["data"]["records"]["digest"], DigestOf(testing::FileText("x/requests.jsonl")));
  const Json report = Json::parse(testing::FileText("x/report.json"));
  EXPECT_EQ(report["traffic_split"]["routed"]["candidate_after"], 0);
  EXPECT_EQ(report["replicas"][2]["revision"], "candidate");
  ASSERT_TRUE(ExerciseRollback(base_, cand_, Options("y", at)).ok());
  for (const char* f : {"requests.jsonl", "report.json", "rollback.json"}) {
    EXPECT_EQ(testing::FileText(std::string("x/") + f), testing::FileText(std::string("y/") + f)) << f;
  }
}

TEST_F(RollbackExerciseTest, AGraceLetsTheCandidateFinishWhatItHeld) {
  const Duration at = WhileTheCandidateHolds();
  auto e = ExerciseRollback(base_, cand_, Options("g", at, Sec(30)));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->requeued_to_baseline, 0);
  EXPECT_GE(e->candidate_ended_after_rollback, 1);
  EXPECT_LT(e->last_candidate_end->ns(), (e->rollback_at + Sec(30)).ns());
  EXPECT_EQ(e->after_served_candidate, 0);
  // Without a rollback time: half the workload's arrivals.
  auto half = ExerciseRollback(base_, cand_, Options("h", std::nullopt));
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->rollback_at.ns(), Sec(300).ns());
}

// The fleet's invariants, the split's bookings among them, after every event of a short
// run (20 s at 6/s on small KV pools: the recount is O(fleet state) per event).
std::string Short(std::string_view decode_per_seq) {
  std::string s = testing::CanaryScenario(decode_per_seq);
  s.replace(s.find("duration: 60s"), 13, "duration: 20s");
  s.replace(s.find("gpu_memory_utilization: 0.5"), 27, "gpu_memory_utilization: 0.3");
  return s;
}

TEST_F(RollbackExerciseTest, TheFleetsInvariantsHoldAfterEveryEvent) {
  const Scenario base = Load("short-base.yaml", Short("0.2ms"));
  const Scenario cand = Load("short-cand.yaml", Short("0.6ms"));
  for (const Duration grace : {Duration(), Sec(1)}) {
    RollbackExerciseOptions o = Options("inv", std::nullopt, grace);
    o.share = 0.5;
    o.check_invariants_every_event = true;
    auto e = ExerciseRollback(base, cand, o);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->after_served_candidate, 0);
  }
}

TEST_F(RollbackExerciseTest, FeaturesOneFleetCannotCarryAreRefusedWhereTheyAreWritten) {
  const Scenario base = Load("base.yaml", testing::CanaryScenario("0.2ms"));
  std::string blocks = testing::CanaryScenario("0.2ms");
  blocks.replace(blocks.find("engine:\n"), 8, "engine:\n  kv: {block_tokens: 32}\n");
  const Scenario cand = Load("cand.yaml", blocks);
  RollbackExerciseOptions o;
  o.out_dir = "r";
  o.share = 0.1;
  auto e = ExerciseRollback(base, cand, o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message().substr(0, e.status().message().find('\n')),
            "cand.yaml:8:22: engine.kv.block_tokens: 32 here, 16 in the baseline (base.yaml): both revisions share one "
            "fleet, so they need the same KV block size");
  o.rollback_at = Sec(60);
  auto late = ExerciseRollback(base, base, o);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(
      late.status().message(),
      "a rollback at 60 s is not before the end of base.yaml's arrivals (60 s): no request would arrive after it");
}

}  // namespace
}  // namespace fleetplan
