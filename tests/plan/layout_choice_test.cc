// The choice among simulated layouts (plan/layout_choice.h): goodput, failure domains in
// the close band, staging where the model cannot tell the candidates apart.
#include "fleetplan/plan/layout_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace fleetplan {
namespace {

ChoiceCandidate C(double goodput, std::optional<double> after_loss = std::nullopt,
                  std::optional<double> staged = std::nullopt) {
  return ChoiceCandidate{goodput, after_loss, staged};
}

TEST(StagingSpec, ReadsTheLayoutAndThePath) {
  Expected<StagingInput> a = ParseStagingSpec("tp4=runs/tp4.jsonl");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->layout.tp, 4);
  EXPECT_EQ(a->layout.pp, 1);
  EXPECT_EQ(a->layout.ep, 1);
  EXPECT_FALSE(a->dp.has_value());
  EXPECT_EQ(a->spec, "tp4");
  EXPECT_EQ(a->path, "runs/tp4.jsonl");
  Expected<StagingInput> b = ParseStagingSpec("dp1xep2xtp8xpp2=x=y.json");  // any order; the first '=' splits
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->layout.tp, 8);
  EXPECT_EQ(b->layout.pp, 2);
  EXPECT_EQ(b->layout.ep, 2);
  EXPECT_EQ(b->dp, 1);
  EXPECT_EQ(b->path, "x=y.json");
}

TEST(StagingSpec, BadSpecsNameTheFlagAndWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tp4", "--staging: 'tp4': expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1"},
      {"=a.jsonl", "--staging: '=a.jsonl': expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1"},
      {"tp4=", "--staging: 'tp4=': expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1"},
      {"dp2=a", "--staging: 'dp2=a': the spec needs tp (e.g. tp4)"},
      {"tp0=a", "--staging: 'tp0=a': 'tp0': expected tp followed by an integer between 1 and 4096"},
      {"tpx=a", "--staging: 'tpx=a': 'tp': expected tp followed by an integer between 1 and 4096"},
      {"tp4xtp8=a", "--staging: 'tp4xtp8=a': tp is given twice"},
      {"tp4x=a", "--staging: 'tp4x=a': expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1"},
      {"tp4xsp2=a",
       "--staging: 'tp4xsp2=a': unknown part 'sp2'; expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1"},
  };
  for (const auto& [text, message] : cases) {
    Expected<StagingInput> r = ParseStagingSpec(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kUsage) << text;  // a flag's value: exit 2
    EXPECT_EQ(r.status().message(), message) << text;
  }
}

TEST(LossDomainName, RoundTripsAndRejectsUnknownNames) {
  for (const LossDomain d : {LossDomain::kNode, LossDomain::kRack, LossDomain::kZone}) {
    Expected<LossDomain> back = ParseLossDomain(LossDomainName(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
  Expected<LossDomain> bad = ParseLossDomain("rak");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--failure-domain: unknown failure domain 'rak'; did you mean 'rack'? (valid: node, rack, zone)");
}

TEST(WithinShare, IsAShareOfTheLargerAndSymmetric) {
  EXPECT_TRUE(WithinShare(1.0, 0.95, 0.05));
  EXPECT_TRUE(WithinShare(0.95, 1.0, 0.05));
  EXPECT_FALSE(WithinShare(1.0, 0.949, 0.05));
  EXPECT_TRUE(WithinShare(0, 0, 0.05));  // two layouts that both serve nothing are alike
  EXPECT_FALSE(WithinShare(0, 0.1, 0.05));
}

TEST(CandidateChoice, AfterLossIsSimulatedForEveryCandidateWithinTheWiderOfTheTwoShares) {
  const std::vector<ChoiceCandidate> c = {C(1.0), C(0.97), C(0.93), C(0.5)};
  EXPECT_EQ(NeedsAfterLoss(c, {0.05, 0.05}), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(NeedsAfterLoss(c, {0.02, 0.08}), (std::vector<size_t>{0, 1, 2}));  // the model error is wider
  EXPECT_TRUE(NeedsAfterLoss({}, {0.05, 0.05}).empty());
}

TEST(CandidateChoice, AClearGoodputLeaderIsChosenOnGoodput) {
  const std::vector<ChoiceCandidate> c = {C(1.0, 0.9), C(0.6), C(0.2)};
  const ChoiceRules rules{0.05, 0.05};
  EXPECT_EQ(RankWithResilience(c, rules), (std::vector<size_t>{0, 1, 2}));
  const CandidateChoice choice = ChooseCandidate(c, rules);
  EXPECT_EQ(choice.chosen, 0u);
  EXPECT_EQ(choice.basis, ChoiceBasis::kGoodput);
  EXPECT_EQ(choice.band, (std::vector<size_t>{0}));
  EXPECT_TRUE(choice.indistinguishable.empty());
  EXPECT_TRUE(choice.needs_staging.empty());
}

// Within the close band the fleet that keeps more after the loss ranks first; a candidate
// outside the band stays where goodput put it even when it would survive better.
TEST(CandidateChoice, WithinTheBandTheFleetThatSurvivesTheLossBetterRanksFirst) {
  const std::vector<ChoiceCandidate> goodput_order = {C(1.0, 0.30), C(0.97, 0.60), C(0.90, 0.90)};
  const ChoiceRules rules{0.05, 0.05};
  const std::vector<size_t> order = RankWithResilience(goodput_order, rules);
  EXPECT_EQ(order, (std::vector<size_t>{1, 0, 2}));
  std::vector<ChoiceCandidate> ranked;
  for (const size_t i : order) ranked.push_back(goodput_order[i]);
  const CandidateChoice choice = ChooseCandidate(ranked, rules);
  EXPECT_EQ(choice.chosen, 0u);  // the 0.97 one
  EXPECT_EQ(choice.basis, ChoiceBasis::kResilience);
  EXPECT_EQ(choice.band, (std::vector<size_t>{1, 0}));  // the goodput leader first
  EXPECT_TRUE(choice.indistinguishable.empty());        // 0.30 is far from 0.60 after the loss
}

TEST(CandidateChoice, ABandMemberWhoseLossCouldNotBeSimulatedGoesToTheBandsEnd) {
  const std::vector<ChoiceCandidate> c = {C(1.0), C(0.98, 0.1), C(0.5, 0.9)};
  EXPECT_EQ(RankWithResilience(c, {0.05, 0.05}), (std::vector<size_t>{1, 0, 2}));
}

TEST(CandidateChoice, CandidatesTheModelCannotSeparateNeedAStagingResultBeforeAChoice) {
  const ChoiceRules rules{0.05, 0.05};
  // Within 5% on goodput and on goodput after the loss: no choice without measurement.
  const std::vector<ChoiceCandidate> c = {C(1.0, 0.50), C(0.98, 0.49), C(0.97, 0.10), C(0.4)};
  const CandidateChoice waiting = ChooseCandidate(c, rules);
  EXPECT_EQ(waiting.basis, ChoiceBasis::kNeedsStaging);
  EXPECT_EQ(waiting.chosen, 0u);  // provisional
  EXPECT_EQ(waiting.band, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(waiting.indistinguishable, (std::vector<size_t>{1}));  // 2 is told apart by the loss
  EXPECT_EQ(waiting.needs_staging, (std::vector<size_t>{0, 1}));
  // One result is not enough: the other still needs one.
  std::vector<ChoiceCandidate> one = c;
  one[0].staged_per_gpu = 0.8;
  EXPECT_EQ(ChooseCandidate(one, rules).needs_staging, (std::vector<size_t>{1}));
  // Both measured: the better measurement decides, whatever the model said.
  std::vector<ChoiceCandidate> both = one;
  both[1].staged_per_gpu = 0.85;
  const CandidateChoice staged = ChooseCandidate(both, rules);
  EXPECT_EQ(staged.basis, ChoiceBasis::kStaging);
  EXPECT_EQ(staged.chosen, 1u);
  EXPECT_TRUE(staged.needs_staging.empty());
}

TEST(CandidateChoice, AStagingResultOutsideTheUndecidedSetDoesNotOverrideTheModel) {
  const std::vector<ChoiceCandidate> c = {C(1.0, 0.9, 0.1), C(0.5, std::nullopt, 0.9)};
  const CandidateChoice choice = ChooseCandidate(c, {0.05, 0.05});
  EXPECT_EQ(choice.chosen, 0u);
  EXPECT_EQ(choice.basis, ChoiceBasis::kGoodput);
}

TEST(CandidateChoice, AWiderModelErrorMakesMoreCandidatesNeedStaging) {
  const std::vector<ChoiceCandidate> c = {C(1.0, 0.8), C(0.92, 0.75)};
  EXPECT_EQ(ChooseCandidate(c, {0.05, 0.05}).basis, ChoiceBasis::kGoodput);
  EXPECT_EQ(ChooseCandidate(c, {0.05, 0.10}).basis, ChoiceBasis::kNeedsStaging);
}

TEST(CandidateChoice, BasisNamesAreStable) {
  EXPECT_EQ(ChoiceBasisName(ChoiceBasis::kGoodput), "goodput");
  EXPECT_EQ(ChoiceBasisName(ChoiceBasis::kResilience), "resilience");
  EXPECT_EQ(ChoiceBasisName(ChoiceBasis::kStaging), "staging");
  EXPECT_EQ(ChoiceBasisName(ChoiceBasis::kNeedsStaging), "needs-staging");
}

}  // namespace
}  // namespace fleetplan
