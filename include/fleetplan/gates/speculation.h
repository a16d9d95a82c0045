// The speculation gate: does a draft model (or n-gram drafter) pay for itself against
// ordinary decoding, and which of two drafts is cheaper on the same emitted tokens.
//
// Input: a rounds file (evidence/speculation_rounds.h has its format).
//
// Arithmetic of one round with k drafted tokens:
//   accepted a = the longest prefix where draft and target agree (0..k)
//   emitted  e = a + 1 (the target's token after the last accepted one; a fully accepted
//                round emits k + 1)
//   cost     c = draft_ms + verify_ms
// Over the rounds: mean_accepted = Σa / n, mean_emitted = Σe / n,
//   cost_per_accepted_ms = Σc / Σa (null when nothing was accepted),
//   cost_per_emitted_ms  = Σc / Σe,
//   round_p50_ms, round_p95_ms = nearest-rank percentiles of c,
//   acceptance_by_position (position j = 1..k_max):
//     conditional[j] = #(a >= j) / #(a >= j - 1 and k >= j)  (accepted j given the j - 1
//                      before were and j was drafted; 0 when no round got there)
//     cumulative[j]  = #(a >= j) / #rounds   (vLLM's cumulative per-position acceptance)
//   break_even_accepted = mean(c) / ordinary_ms - 1: the mean accepted tokens per round at
//     which a round's cost per emitted token equals one ordinary decode step (on the
//     accepted basis mean(c) / ordinary_ms: per accepted token).
// Verdict: `speculate` when the round pays on the policy's basis (engine/speculation.h,
// JudgeSpeculationCost: `emitted`, the default, cost_per_emitted_ms < ordinary_ms;
// `accepted`, cost_per_accepted_ms < ordinary_ms), no round reports an error and no
// policy rule turns speculation off; `ordinary` otherwise, with the reason. Both figures
// are reported with the basis that decided. Rounds whose mean cost is 0 ms measured
// nothing: the gate holds.
// Decision (gate.h): hold when the rounds are unidentified or fewer than min_rounds;
// fail (evaluation failed, exit 1) when any round reports a verification error — such a
// round is counted, never dropped; pass for `speculate`; fail (reasoned) for `ordinary`.
//
// Paired comparison of two rounds files (two drafts against the same target): each
// emitted token is keyed by (seq, position), position counting the tokens the sequence
// emitted before it in file order, and carries its round's cost / e. Tokens present in
// both files are paired (when both know the token id, the ids must agree, else the pair
// is excluded and counted as a mismatch). The statistic is Σ(cost1 - cost2) / #pairs in
// ms per emitted token; its 95% interval is a paired bootstrap over sequences (sequences
// resampled with replacement, kBootstrapResamples times, RngStream(seed,
// "gate.speculation.bootstrap"), percentile interval at the 2.5th and 97.5th nearest
// ranks). The first draft wins when the interval lies below 0, the second when above;
// otherwise a tie, with its interval. Fewer than kMinPairedSequences sequences holds.
//
// Policy (--policy FILE, all optional):
//   basis: emitted               emitted | accepted: what a round's tokens are counted as
//   min_rounds: 20               fewer rounds hold (insufficient evidence)
//   min_acceptance_rate: 0.3     Σa / Σk below it turns speculation off
//   min_remaining_output: 16     reported as a condition: off for requests with fewer
//                                remaining output tokens than this
//   graph_buckets: [1, 2, 4, 8]  verify steps compute batch × (k_max + 1) tokens: batches
//                                whose verify shape exceeds the largest bucket run eager,
//                                reported as a condition (off above batch B)
//   memory: {fit: {...}, draft_weights: 1GiB, draft_kv: 2GiB, max_kv_share: 0.1}
//                                the draft's memory per rank comes out of the target's KV
//                                (usable KV per rank of the binding stage, from fit);
//                                a share above max_kv_share turns speculation off
// Thread model: value types and pure functions; deterministic for a given seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/engine/speculation.h"
#include "fleetplan/evidence/speculation_rounds.h"
#include "fleetplan/gates/gate.h"

namespace fleetplan {

// Resamples of the paired bootstrap: 2000 keeps the 2.5% / 97.5% ranks stable to about
// 1% of the interval width at the sizes rounds files have (thousands of rounds).
inline constexpr int kBootstrapResamples = 2000;
// A paired bootstrap over sequences needs at least this many sequences to vary.
inline constexpr int64_t kMinPairedSequences = 2;
// Below this many rounds the p95 round latency is (nearly) the maximum: hold.
inline constexpr int64_t kDefaultMinRounds = 20;


struct SpecAnalysis {
  int64_t rounds = 0;
  int64_t error_rounds = 0;
  int64_t first_error_line = 0;  // 0 when none
  int64_t drafted = 0;           // Σk
  int64_t accepted = 0;          // Σa
  int64_t emitted = 0;           // Σe
  int64_t max_batch = 0;         // 0 when no round gives one
  int64_t max_draft = 0;         // k_max
  double mean_accepted = 0;
  double mean_emitted = 0;
  double acceptance_rate = 0;    // Σa / Σk
  double total_ms = 0;
  double mean_round_ms = 0;
  std::optional<double> cost_per_accepted_ms;
  double cost_per_emitted_ms = 0;
  double round_p50_ms = 0;
  double round_p95_ms = 0;
  std::vector<double> conditional;  // index j - 1
  std::vector<double> cumulative;
  double break_even_accepted = 0;   // against ordinary_ms, on the emitted basis
};

// REQUIRES: !rounds.rounds.empty(); ordinary_ms > 0.
SpecAnalysis AnalyzeRounds(const SpecRounds& rounds, double ordinary_ms);

struct PairedComparison {
  GateDecision decision = GateDecision::kHold;  // pass when a winner or a tie is decided
  std::string winner;          // "first", "second", "tie"; "" on hold
  std::string reason;
  int64_t pairs = 0;
  int64_t sequences = 0;
  int64_t mismatches = 0;      // pairs excluded: the two targets disagree on the token
  double mean_diff_ms = 0;     // first - second, ms per emitted token
  double low_ms = 0;           // 95% bootstrap interval
  double high_ms = 0;
  double first_ms = 0;         // mean cost per paired token, each draft
  double second_ms = 0;
};

PairedComparison ComparePaired(const SpecRounds& first, const SpecRounds& second, uint64_t seed);

struct SpecMemoryPolicy {
  Bytes draft_weights;
  Bytes draft_kv;
  double max_kv_share = 0;
  Bytes target_kv;             // usable KV per rank, from fit
  int64_t target_sequences = 0;  // sequences of the fit's context that fit without the draft
  Bytes sequence_kv;           // reserved KV per sequence per rank
};

struct SpecPolicy {
  SpeculationBasis basis = SpeculationBasis::kEmitted;
  int64_t min_rounds = kDefaultMinRounds;
  std::optional<double> min_acceptance_rate;
  std::optional<int64_t> min_remaining_output;
  std::vector<int64_t> graph_buckets;
  std::optional<SpecMemoryPolicy> memory;
};

// Reads a policy document (the keys above; unknown keys are errors). The memory's fit
// section is the fit verb's inputs: model, gpu, tp, pp, weight_dtype, kv_dtype, context,
// concurrency, gpu_memory_utilization, block_tokens.
Expected<SpecPolicy> ReadSpecPolicy(const YamlNode& root);
Expected<SpecPolicy> LoadSpecPolicy(const std::string& path);

struct SpecDraftResult {
  std::string file;
  EvidenceIdentity identity;
  SpecAnalysis analysis;
  SpeculationEconomics economics;    // the rule on the policy's basis
  std::string verdict;               // "speculate" or "ordinary"
  std::vector<std::string> reasons;  // why ordinary / rules that apply
  std::vector<std::string> conditions;  // speculation is conditional on these
  std::vector<GateCheck> checks;
  GateDecision decision = GateDecision::kHold;
  bool evaluation_failed = false;    // a round reported an error
};

struct SpecGateResult {
  double ordinary_ms = 0;
  SpecPolicy policy;
  std::vector<SpecDraftResult> drafts;  // one per file
  std::optional<PairedComparison> comparison;
};

// REQUIRES: 1 or 2 rounds files with at least one round each; ordinary_ms > 0.
SpecGateResult RunSpeculationGate(const std::vector<SpecRounds>& files, double ordinary_ms,
                                  const SpecPolicy& policy, uint64_t seed);
// Top level: the first draft's figures and verdict (the contract keys), `second` (the
// second draft's, same keys) and `comparison` with two files.
Json ToJson(const SpecGateResult& r);
std::string ToText(const SpecGateResult& r);
int ExitCode(const SpecGateResult& r);

// The registry row's entry point: files, --ordinary DURATION, --policy FILE, --seed.
Expected<GateReport> RunSpeculationRequest(const GateRequest& request);

}  // namespace fleetplan
