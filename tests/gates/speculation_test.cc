// The speculation gate: the seed-style arithmetic per round and over rounds, holds on
// missing evidence, the evaluation failing on a verification error, the policy's reasons,
// the paired comparison of two drafts, and located input errors.
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/gates/speculation.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kIdentity =
    R"({"identity": {"artifact": "sha256:d1", "runtime": "vllm", "runtime_version": "0.6.3", "hardware": "h100-sxm-80g", "engine_config": "sha256:e1"}})";

SpecRounds Parse(const std::string& text) {
  Expected<SpecRounds> r = ParseSpecRounds(text, "rounds.jsonl");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message());
  return r.ok() ? *r : SpecRounds{};
}

std::string ParseError(const std::string& text) {
  Expected<SpecRounds> r = ParseSpecRounds(text, "rounds.jsonl");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

// The worked example: three rounds of three drafted tokens.
//   [1,2,3] vs [1,2,9]  3 + 9 ms   accepted 2, emitted 3
//   [4,5,6] vs [4,5,6]  3 + 9 ms   accepted 3, emitted 4 (fully accepted: one more than drafted)
//   [7,8,9] vs [0,8,9]  4 + 12 ms  accepted 0, emitted 1
const std::string kSeedRounds = std::string(kIdentity) + "\n" +
    R"({"draft": [1, 2, 3], "target": [1, 2, 9], "draft_ms": 3.0, "verify_ms": 9.0})" "\n"
    R"({"draft": [4, 5, 6], "target": [4, 5, 6], "draft_ms": 3.0, "verify_ms": 9.0})" "\n"
    R"({"draft": [7, 8, 9], "target": [0, 8, 9], "draft_ms": 4.0, "verify_ms": 12.0})" "\n";

SpecPolicy OneRoundPolicy() {
  SpecPolicy p;
  p.min_rounds = 1;
  return p;
}

TEST(SpeculationGate, AcceptedIsTheLongestAgreeingPrefix) {
  const SpecRounds r = Parse(kSeedRounds);
  ASSERT_EQ(r.rounds.size(), 3u);
  EXPECT_EQ(AcceptedTokens(r.rounds[0]), 2);
  EXPECT_EQ(AcceptedTokens(r.rounds[1]), 3);
  EXPECT_EQ(AcceptedTokens(r.rounds[2]), 0);  // later agreement after a miss does not count
}

TEST(SpeculationGate, SeedArithmeticIsPinned) {
  const SpecAnalysis a = AnalyzeRounds(Parse(kSeedRounds), 8.0);
  EXPECT_EQ(a.accepted, 5);
  EXPECT_EQ(a.emitted, 8);  // 3 + 4 + 1: the fully accepted round emits 4 of 3 drafted
  EXPECT_EQ(a.drafted, 9);
  EXPECT_DOUBLE_EQ(a.total_ms, 40.0);
  ASSERT_TRUE(a.cost_per_accepted_ms.has_value());
  EXPECT_DOUBLE_EQ(*a.cost_per_accepted_ms, 8.0);  // (draft + verify) / accepted = 40 / 5
  EXPECT_DOUBLE_EQ(a.cost_per_emitted_ms, 5.0);    // 40 / 8
  EXPECT_DOUBLE_EQ(a.mean_accepted, 5.0 / 3);
  EXPECT_DOUBLE_EQ(a.mean_emitted, 8.0 / 3);
  EXPECT_DOUBLE_EQ(a.round_p50_ms, 12.0);  // nearest rank 2 of [12, 12, 16]
  EXPECT_DOUBLE_EQ(a.round_p95_ms, 16.0);  // nearest rank 3
  EXPECT_DOUBLE_EQ(a.break_even_accepted, (40.0 / 3) / 8.0 - 1);
  EXPECT_THAT(a.conditional, ElementsAre(2.0 / 3, 1.0, 0.5));
  EXPECT_THAT(a.cumulative, ElementsAre(2.0 / 3, 2.0 / 3, 1.0 / 3));
}

TEST(SpeculationGate, CheaperThanOrdinaryIsSpeculateAndPasses) {
  const SpecGateResult r = RunSpeculationGate({Parse(kSeedRounds)}, 8.0, OneRoundPolicy(), 1);
  EXPECT_EQ(r.drafts[0].verdict, "speculate");
  EXPECT_EQ(r.drafts[0].decision, GateDecision::kPass);
  EXPECT_EQ(ExitCode(r), 0);
  const Json j = ToJson(r);
  EXPECT_EQ(j["verdict"], "speculate");
  EXPECT_EQ(j["advance_to"], "staging");
  EXPECT_EQ(j["cost_per_accepted_ms"], 8.0);
  EXPECT_EQ(j["cost_per_emitted_ms"], 5.0);
  EXPECT_EQ(j["round_p95_ms"], 16.0);
  EXPECT_EQ(j["acceptance_by_position"]["conditional"], Json::parse("[0.666666667, 1.0, 0.5]"));
}

TEST(SpeculationGate, NotCheaperIsAReasonedOrdinaryWithTheNearestPassingValue) {
  // 5 ms per emitted token against a 4 ms ordinary step.
  const SpecGateResult r = RunSpeculationGate({Parse(kSeedRounds)}, 4.0, OneRoundPolicy(), 1);
  const SpecDraftResult& d = r.drafts[0];
  EXPECT_EQ(d.verdict, "ordinary");
  EXPECT_EQ(d.decision, GateDecision::kFail);
  EXPECT_EQ(ExitCode(r), 0);  // a decision was made
  ASSERT_FALSE(d.reasons.empty());
  EXPECT_THAT(d.reasons[0], HasSubstr("5 ms per emitted token >= 4 ms ordinary"));
  // break-even = 13.333 / 4 - 1 = 2.333 accepted; at 8/3 emitted the round must cost < 10.67 ms.
  EXPECT_EQ(d.checks.back().nearest_passing,
            "mean_accepted > 2.333 at the same round cost, or a mean round below 10.67 ms at the same acceptance");
}

// The book's example: 4 drafted, 1.3 accepted on average, 3 + 9 ms a round, 8 ms an
// ordinary decode step. Ten rounds accepting 1, 1, 1, 2, 1, 2, 1, 1, 2, 1.
std::string BookRounds(double draft_ms = 3, double verify_ms = 9) {
  std::string text = std::string(kIdentity) + "\n";
  for (int accepted : {1, 1, 1, 2, 1, 2, 1, 1, 2, 1}) {
    std::vector<int> target = {1, 2, 3, 4};
    target[static_cast<size_t>(accepted)] = 9;  // the first disagreement
    text += fmt::format(R"({{"draft": [1, 2, 3, 4], "target": [{}], "draft_ms": {}, "verify_ms": {}}})", fmt::join(target, ", "),
                        draft_ms, verify_ms) +
            "\n";
  }
  return text;
}

TEST(SpeculationGate, TheBasisDecidesTheBooksExampleBothWays) {
  SpecPolicy emitted = OneRoundPolicy();
  const SpecGateResult e = RunSpeculationGate({Parse(BookRounds())}, 8.0, emitted, 1);
  EXPECT_EQ(e.drafts[0].verdict, "speculate");  // 12 / 2.3 = 5.217 ms per emitted token
  EXPECT_NEAR(e.drafts[0].economics.per_emitted_ms, 12.0 / 2.3, 1e-9);
  ASSERT_TRUE(e.drafts[0].economics.per_accepted_ms.has_value());
  EXPECT_NEAR(*e.drafts[0].economics.per_accepted_ms, 12.0 / 1.3, 1e-9);
  SpecPolicy accepted = OneRoundPolicy();
  accepted.basis = SpeculationBasis::kAccepted;
  const SpecGateResult a = RunSpeculationGate({Parse(BookRounds())}, 8.0, accepted, 1);
  const SpecDraftResult& d = a.drafts[0];
  EXPECT_EQ(d.verdict, "ordinary");  // the book's conclusion: 9.23 ms per accepted token
  EXPECT_EQ(d.decision, GateDecision::kFail);
  ASSERT_FALSE(d.reasons.empty());
  EXPECT_THAT(d.reasons[0], HasSubstr("9.231 ms per accepted token >= 8 ms ordinary (5.217 ms per emitted token"));
  EXPECT_THAT(d.reasons[0], HasSubstr("not cheaper on the accepted basis: "));
  EXPECT_DOUBLE_EQ(d.economics.break_even_accepted, 12.0 / 8.0);
  const Json j = ToJson(a);
  EXPECT_EQ(j["cost"]["basis"], "accepted");
  EXPECT_EQ(j["cost"]["pays"], false);
  // The policy file names it; another word is a located error.
  Expected<YamlDocument> doc = YamlDocument::LoadString("basis: accepted\n", "policy.yaml");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(ReadSpecPolicy(doc->root())->basis, SpeculationBasis::kAccepted);
  Expected<YamlDocument> bad = YamlDocument::LoadString("basis: tokens\n", "policy.yaml");
  const auto refused = ReadSpecPolicy(bad->root());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("policy.yaml:1:8: basis: expected basis: emitted"));
}

TEST(SpeculationGate, RoundsThatCostNothingHoldInsteadOfPassing) {
  const SpecGateResult r = RunSpeculationGate({Parse(BookRounds(0, 0))}, 8.0, OneRoundPolicy(), 1);
  EXPECT_EQ(r.drafts[0].decision, GateDecision::kHold);
  EXPECT_EQ(r.drafts[0].verdict, "ordinary");
  ASSERT_FALSE(r.drafts[0].reasons.empty());
  EXPECT_THAT(r.drafts[0].reasons[0], HasSubstr("the 10 rounds cost 0 ms"));
}

TEST(SpeculationGate, UnidentifiedRoundsHold) {
  std::string text = kSeedRounds.substr(kSeedRounds.find('\n') + 1);
  const SpecGateResult r = RunSpeculationGate({Parse(text)}, 8.0, OneRoundPolicy(), 1);
  EXPECT_EQ(r.drafts[0].verdict, "speculate");  // the arithmetic still says so...
  EXPECT_EQ(r.drafts[0].decision, GateDecision::kHold);  // ...but unidentified evidence never passes
  EXPECT_EQ(ExitCode(r), 1);
  EXPECT_EQ(r.drafts[0].checks[0].reason,
            "rounds.jsonl is unidentified: missing artifact, runtime, runtime_version, hardware, engine_config");
}

TEST(SpeculationGate, TooFewRoundsHold) {
  const SpecGateResult r = RunSpeculationGate({Parse(kSeedRounds)}, 8.0, SpecPolicy{}, 1);
  EXPECT_EQ(r.drafts[0].decision, GateDecision::kHold);
  EXPECT_EQ(r.drafts[0].checks[1].reason, "3 rounds, the policy needs at least 20");
}

TEST(SpeculationGate, AVerificationErrorFailsTheEvaluationAndIsNotDropped) {
  const std::string text = kSeedRounds +
      R"({"draft": [1], "target": [1], "draft_ms": 1.0, "verify_ms": 1.0, "error": "verifier timeout"})" "\n";
  const SpecGateResult r = RunSpeculationGate({Parse(text)}, 8.0, OneRoundPolicy(), 1);
  const SpecDraftResult& d = r.drafts[0];
  EXPECT_EQ(d.analysis.rounds, 4);  // counted
  EXPECT_EQ(d.analysis.error_rounds, 1);
  EXPECT_TRUE(d.evaluation_failed);
  EXPECT_EQ(d.verdict, "ordinary");
  EXPECT_EQ(d.decision, GateDecision::kFail);
  EXPECT_EQ(ExitCode(r), 1);
  EXPECT_EQ(d.reasons[0], "1 round(s) report a verification error (first at line 5): the evaluation failed");
}

TEST(SpeculationGate, LowAcceptanceTurnsSpeculationOffWithItsReason) {
  SpecPolicy p = OneRoundPolicy();
  p.min_acceptance_rate = 0.6;  // 5 of 9 accepted = 0.556
  const SpecGateResult r = RunSpeculationGate({Parse(kSeedRounds)}, 8.0, p, 1);
  EXPECT_EQ(r.drafts[0].verdict, "ordinary");
  EXPECT_THAT(r.drafts[0].reasons,
              ElementsAre("low acceptance: 0.5556 of drafted tokens accepted, policy minimum 0.6"));
}

TEST(SpeculationGate, ShapesOutsideTheGraphBucketsAndShortOutputsAreConditions) {
  SpecPolicy p = OneRoundPolicy();
  p.graph_buckets = {1, 2, 4, 8, 16};  // verify shape per sequence = 3 + 1 tokens
  p.min_remaining_output = 16;
  const SpecGateResult r = RunSpeculationGate({Parse(kSeedRounds)}, 8.0, p, 1);
  EXPECT_EQ(r.drafts[0].verdict, "speculate");
  EXPECT_THAT(r.drafts[0].conditions,
              ElementsAre("off for requests with fewer than 16 remaining output tokens (short remaining outputs)",
                          "off above batch 4: a verify step computes batch x 4 tokens and the largest graph bucket "
                          "is 16"));
  p.graph_buckets = {1, 2};
  const SpecGateResult off = RunSpeculationGate({Parse(kSeedRounds)}, 8.0, p, 1);
  EXPECT_EQ(off.drafts[0].verdict, "ordinary");
  EXPECT_THAT(off.drafts[0].reasons.back(), HasSubstr("shapes outside the graph buckets"));
}

TEST(SpeculationGate, MemoryPressureComesFromFit) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(
      "min_rounds: 1\n"
      "memory:\n"
      "  fit: {model: atlas-70b, gpu: h100-sxm-80g, tp: 4, context: 8192, concurrency: 8}\n"
      "  draft_weights: 4GiB\n"
      "  draft_kv: 4GiB\n"
      "  max_kv_share: 0.1\n",
      "policy.yaml");
  ASSERT_TRUE(doc.ok());
  Expected<SpecPolicy> p = ReadSpecPolicy(doc->root());
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->memory.has_value());
  // atlas-70b on 4 x H100 at 8192 tokens: fit leaves 39,722,858,906 B of KV per rank and
  // a sequence reserves 640 MiB per rank, so 59 sequences fit; the 8 GiB draft takes
  // 21.6% of that KV, above the 10% the policy allows, and leaves room for 46 sequences.
  EXPECT_EQ(p->memory->target_kv.count(), 39'722'858'906);
  EXPECT_EQ(p->memory->sequence_kv.count(), 640ll << 20);
  EXPECT_EQ(p->memory->target_sequences, 59);
  const SpecGateResult r = RunSpeculationGate({Parse(kSeedRounds)}, 8.0, *p, 1);
  EXPECT_EQ(r.drafts[0].verdict, "ordinary");
  EXPECT_THAT(r.drafts[0].reasons,
              ElementsAre("memory pressure: the draft takes 8 GiB of the target's 36.99 GiB KV per rank (21.6%, "
                          "policy maximum 10%); sequences at the fit's context 59 -> 46"));
  p->memory->max_kv_share = 0.25;
  EXPECT_EQ(RunSpeculationGate({Parse(kSeedRounds)}, 8.0, *p, 1).drafts[0].verdict, "speculate");
  // The same draft against a tiny share limit always turns it off.
  p->memory->max_kv_share = 0.0001;
  EXPECT_EQ(RunSpeculationGate({Parse(kSeedRounds)}, 8.0, *p, 1).drafts[0].verdict, "ordinary");
}

// Rounds of one sequence: each drafts k tokens and accepts `accepted`; the target's token
// at position p of sequence s is s * 1000 + p, so two files agree on the target.
std::string SeqRounds(int seq, int rounds, int k, int accepted, double draft_ms, double verify_ms) {
  std::string out;
  int pos = 0;
  for (int i = 0; i < rounds; ++i) {
    std::vector<int> draft, target;
    for (int j = 0; j < k; ++j) {
      target.push_back(seq * 1000 + pos + j);
      draft.push_back(j < accepted ? target.back() : 999999);
    }
    out += fmt::format(R"({{"seq": {}, "draft": [{}], "target": [{}], "draft_ms": {}, "verify_ms": {}}})" "\n", seq,
                       fmt::join(draft, ","), fmt::join(target, ","), draft_ms, verify_ms);
    pos += accepted + 1;
  }
  return out;
}

TEST(SpeculationGate, PairedComparisonNamesTheCheaperDraft) {
  std::string a = kIdentity, b = kIdentity;
  a += "\n";
  b += "\n";
  for (int s = 0; s < 10; ++s) {
    a += SeqRounds(s, 5, 4, 3, 3.0, 9.0);  // 12 ms per 4 emitted = 3 ms per token
    b += SeqRounds(s, 5, 4, 1, 2.0, 8.0);  // 10 ms per 2 emitted = 5 ms per token
  }
  const PairedComparison c = ComparePaired(Parse(a), Parse(b), 1);
  EXPECT_EQ(c.decision, GateDecision::kPass);
  EXPECT_EQ(c.winner, "first");
  EXPECT_EQ(c.sequences, 10);
  EXPECT_EQ(c.pairs, 100);  // b covers positions 0..9 of each sequence, a 0..19
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_DOUBLE_EQ(c.mean_diff_ms, -2.0);
  EXPECT_DOUBLE_EQ(c.low_ms, -2.0);
  EXPECT_DOUBLE_EQ(c.high_ms, -2.0);
  EXPECT_EQ(ComparePaired(Parse(b), Parse(a), 1).winner, "second");
}

TEST(SpeculationGate, PairedComparisonCallsATieWithItsInterval) {
  std::string a, b;
  for (int s = 0; s < 12; ++s) {
    a += SeqRounds(s, 4, 2, 1, 2.0, 4.0);                        // 3 ms per token
    b += SeqRounds(s, 4, 2, 1, s % 2 == 0 ? 1.0 : 3.0, 4.0);     // 2.5 or 3.5 ms per token
  }
  const PairedComparison c = ComparePaired(Parse(a), Parse(b), 7);
  EXPECT_EQ(c.decision, GateDecision::kPass);
  EXPECT_EQ(c.winner, "tie");
  EXPECT_DOUBLE_EQ(c.mean_diff_ms, 0.0);
  EXPECT_LT(c.low_ms, 0.0);
  EXPECT_GT(c.high_ms, 0.0);
  // Seeded: the same seed gives the same interval; the statistic does not depend on it.
  const PairedComparison again = ComparePaired(Parse(a), Parse(b), 7);
  EXPECT_EQ(again.low_ms, c.low_ms);
  EXPECT_EQ(again.high_ms, c.high_ms);
}

TEST(SpeculationGate, PairingSkipsTokensTheTargetsDisagreeOn) {
  const std::string a = SeqRounds(1, 2, 2, 1, 1.0, 1.0) + SeqRounds(2, 2, 2, 1, 1.0, 1.0);
  // Sequence 1, first round: the target's token after the accepted one (position 1, the
  // emitted bonus token) is 7 in the second file and 1001 in the first.
  std::string b = a;
  const std::string from = "\"target\": [1000,1001]";
  b.replace(b.find(from), from.size(), "\"target\": [1000,7]");
  const PairedComparison c = ComparePaired(Parse(a), Parse(b), 1);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.pairs, 7);  // 2 sequences x 4 emitted positions, less the mismatch
}

TEST(SpeculationGate, OneSequenceCannotBePairedAndHolds) {
  const std::string a = SeqRounds(1, 5, 2, 1, 1.0, 1.0);
  const PairedComparison c = ComparePaired(Parse(a), Parse(a), 1);
  EXPECT_EQ(c.decision, GateDecision::kHold);
  EXPECT_EQ(c.reason, "1 paired sequence(s); the paired bootstrap resamples sequences and needs at least 2");
  SpecPolicy p = OneRoundPolicy();
  const SpecGateResult r = RunSpeculationGate({Parse(a), Parse(a)}, 8.0, p, 1);
  EXPECT_EQ(ExitCode(r), 1);
}

TEST(SpeculationRounds, ANumberBeyondADoubleIsALocatedSyntaxError) {
  // gates_fuzz: nlohmann reports it as out_of_range, which escaped the reader.
  EXPECT_THAT(ParseError(R"({"draft": [1], "target": [1], "draft_ms": 7e888888, "verify_ms": 2})"),
              ::testing::AllOf(::testing::StartsWith("rounds.jsonl:1:"), HasSubstr("number overflow parsing '7e888888'")));
}

TEST(SpeculationRounds, ErrorsAreLocated) {
  EXPECT_EQ(ParseError(R"({"draft": [1, 2], "target": [1], "draft_ms": 1, "verify_ms": 2})"),
            "rounds.jsonl:1:19: target: expected the target's token at each of the 2 drafted positions, got 1\n"
            "    1 | {\"draft\": [1, 2], \"target\": [1], \"draft_ms\": 1, \"verify_ms\": 2}\n"
            "      |                   ^\n");
  EXPECT_THAT(ParseError("\n" R"({"draft": [1], "target": [1], "draft_ms": 1})"),
              HasSubstr("rounds.jsonl:2:1: verify_ms: missing required field (a time in ms)"));
  EXPECT_THAT(ParseError(R"({"draft": [1], "target": [1], "draft_ms": 1, "verify_ms": 2, "acepted": 1})"),
              HasSubstr("rounds.jsonl:1:62: acepted: unknown field 'acepted'"));
  EXPECT_THAT(ParseError(R"({"draft": [1], "target": [1], "draft_ms": -1, "verify_ms": 2})"),
              HasSubstr("draft_ms: expected milliseconds between 0 and 3600000, got -1"));
  EXPECT_THAT(ParseError(R"({"draft": [1], "target": [1], "draft_ms": 1, "verify_ms": 2)"),
              HasSubstr("rounds.jsonl:1:"));
  EXPECT_THAT(ParseError(R"({"draft": [], "target": [], "draft_ms": 1, "verify_ms": 2})"),
              HasSubstr("draft: expected at least one drafted token, got []"));
  EXPECT_THAT(ParseError(""), HasSubstr("rounds.jsonl: no speculative rounds"));
  EXPECT_THAT(ParseError(std::string(R"({"draft": [1], "target": [1], "draft_ms": 1, "verify_ms": 2})") + "\n" +
                         kIdentity),
              HasSubstr("identity: the identity line must be the first line"));
}

}  // namespace
}  // namespace fleetplan
