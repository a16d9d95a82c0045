// The choice among layouts simulated on a workload (workload_layout.h): goodput first,
// failure domains within a declared closeness, and a measured staging result where the
// model cannot tell the candidates apart.
//
//   1. goodput      candidates in simulated order (SLO-qualified goodput per GPU, then
//                   attainment, then static rank); the leader is the first simulated one.
//   2. resilience   the close band: candidates within `close_call` of the leader's goodput
//                   per GPU. Each band member's fleet after the worst single loss of the
//                   declared failure domain (node, rack or zone: the replicas left by the
//                   packing, nothing moved) is simulated on the same workload; the band is
//                   re-ranked by that goodput per GPU of the whole fleet as bought (a
//                   layout that loses every replica scores 0), then by its goodput before
//                   the loss. `simulated_rank` is the order after this step.
//   3. staging      the pick is the first of that order. Another candidate is
//                   indistinguishable from it when its goodput per GPU and its goodput
//                   after the loss are both within `model_error` of the pick's (a share of
//                   the larger). With any indistinguishable candidate the model does not
//                   choose: a measured staging result is required for the pick and each of
//                   them. When every one of them has one, the decision is the best
//                   measured goodput per GPU among them.
// After-loss figures are simulated for every candidate within max(close_call, model_error)
// of the leader, so step 3 never compares against a figure that was not computed.
//
// Staging results: per-request records of a staging run of one layout on the scenario's
// workload, in any format `fleetplan report` reads (metrics/records_io.h), judged by the
// scenario's SLOs. The run's GPUs are dp × tp × pp of the spec (`tp4xdp1=FILE`: one
// replica, which should then have carried 1/dp of the fleet's load).
// Thread model: pure functions; deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/plan/replica_packing.h"

namespace fleetplan {

// The model's own error on goodput when none is declared: the worst out-of-sample mean
// E2E error over the shared real runs is about 5% (docs/FIDELITY.md), and the roofline's
// error against measured kernels is several percent (docs/step-models.md).
inline constexpr double kDefaultModelError = 0.05;

enum class LossDomain { kNode, kRack, kZone };
std::string_view LossDomainName(LossDomain d);
// "node", "rack", "zone"; anything else is an error naming them.
Expected<LossDomain> ParseLossDomain(std::string_view name);
// The replicas the packing leaves after the worst single loss of `d`.
int64_t ReplicasLeft(const DomainLoss& loss, LossDomain d);

// `--staging SPEC=FILE`: SPEC is tp<N>[xpp<N>][xep<N>][xdp<N>] (pp and ep default to 1;
// dp to the candidate's replicas), in any order, each at most once.
struct StagingInput {
  Parallelism layout;
  std::optional<int64_t> dp;
  std::string spec;  // as given, for messages
  std::string path;
};
Expected<StagingInput> ParseStagingSpec(std::string_view text);

// A staging run's figures, from its records.
struct StagingResult {
  std::string spec;
  std::string path;
  std::string format;
  std::string digest;
  int64_t dp = 0;
  int64_t gpus = 0;
  int64_t requests = 0;
  double goodput_rps = 0;
  double goodput_per_gpu = 0;
  std::optional<double> attainment;
};

// The fleet after the worst single loss of the declared domain, simulated.
struct AfterLoss {
  int64_t replicas = 0;  // left by the packing
  double goodput_rps = 0;
  double goodput_per_gpu = 0;  // per GPU of the whole fleet as bought
  std::optional<double> attainment;
  std::string error;  // why it could not be simulated
};

// One candidate as the choice sees it.
struct ChoiceCandidate {
  double goodput_per_gpu = 0;
  std::optional<double> after_loss_per_gpu;  // absent: outside the band, not simulated
  std::optional<double> staged_per_gpu;      // absent: no staging result
};

struct ChoiceRules {
  double close_call = 0.05;
  double model_error = kDefaultModelError;
};

enum class ChoiceBasis { kGoodput, kResilience, kStaging, kNeedsStaging };
std::string_view ChoiceBasisName(ChoiceBasis b);  // "goodput", "resilience", "staging", "needs-staging"

struct CandidateChoice {
  size_t chosen = 0;  // index into the candidates (provisional when kNeedsStaging)
  ChoiceBasis basis = ChoiceBasis::kGoodput;
  std::vector<size_t> band;               // within close_call of the leader (leader first)
  std::vector<size_t> indistinguishable;  // within model_error of the pick on both figures
  std::vector<size_t> needs_staging;      // the pick and the indistinguishable ones without a result
};

// True when b is within `share` of a (a share of the larger; two zeros are within).
bool WithinShare(double a, double b, double share);

// Candidates whose after-loss figure must be simulated: within max(close_call,
// model_error) of the leader (index 0). REQUIRES: candidates in goodput order.
std::vector<size_t> NeedsAfterLoss(const std::vector<ChoiceCandidate>& candidates, const ChoiceRules& rules);

// The order after step 2 (a permutation of the indices). REQUIRES: candidates in goodput
// order. A band member without an after-loss figure goes to the band's end.
std::vector<size_t> RankWithResilience(const std::vector<ChoiceCandidate>& candidates, const ChoiceRules& rules);

// Step 3 on candidates already in the order of step 2. REQUIRES: non-empty.
CandidateChoice ChooseCandidate(const std::vector<ChoiceCandidate>& candidates, const ChoiceRules& rules);

}  // namespace fleetplan
