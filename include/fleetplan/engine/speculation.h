// Speculative decoding in the engine (`engine.speculation`): a drafter proposes k tokens,
// the target verifies them in one forward pass, and the longest agreeing prefix is kept.
//
// One round of a decoding request, in the engine's token arithmetic (engine.h):
//
//   before   | ... computed ... | t |            num_computed = num_tokens - 1
//   verify   | ... computed ... | t | d1 .. dk'| the step computes 1 + k' tokens (a chunk
//                                                of 1 + k' new tokens over its context:
//                                                a larger shape, costed by the step model
//                                                like any chunk, taking 1 + k' tokens of
//                                                the step's budget)
//   after    | ... computed ... | t | d1..da | b |   a accepted, b the target's own token
//            num_computed += 1 + a, generated += a + 1, num_tokens = num_computed + 1
//
// k' = min(tokens_per_round, remaining output - 1): nothing is drafted past the answer's
// end, and a request with one token left decodes ordinarily. The KV of rejected drafts
// d(a+1)..dk' is written and discarded (its blocks stay with the request for later tokens).
//
// Acceptance: conditional probabilities p[1..k] (position j accepted given 1..j-1 were),
// declared or taken from a rounds file (evidence/speculation_rounds.h). The draw for
// position j of the round that starts at `generated` tokens of request `id` is
//   u = unit(SplitMix64(SplitMix64(stream ^ id) + generated * 0x9e3779b97f4a7c15 + j))
// (stream = the RngStream(seed, "engine.speculation") seed), accepted while u < p[j]: a
// pure function of (seed, request, position in its answer), so batching, preemption and
// the fleet around a request never change its draws.
//
// Draft cost (method `draft`): the draft model runs k' decode steps over the drafting
// requests before the verification (step j holds the requests with k' > j at context
// num_computed + 1 + j), costed by the draft's own step model, and adds to the step's GPU
// time. Method `ngram` drafts on the host from the request's own tokens: no GPU time, no
// memory. Draft weights and the draft's KV per token come out of the target's KV pool
// (fleet/fleet_plan.cc sizes it).
//
// Whether speculation pays (one rule for the speculation gate and the simulated engine):
// a round costs c (draft + verify) against o for one ordinary decode step and keeps a
// accepted tokens plus the target's own token. On the `emitted` basis (the default) a
// round is worth a + 1 tokens: it pays when c / (a + 1) < o, break-even a = c / o - 1. On
// the `accepted` basis (the conservative rule: the target's own token would have been
// produced by the ordinary step anyway) it is worth a: it pays when c / a < o, break-even
// a = c / o. A round of 3 + 9 ms with 1.3 accepted against 8 ms ordinary: 5.22 ms per
// emitted token (pays) but 9.23 ms per accepted token (does not). The engine's report
// applies the rule to the verify steps of the run, as a request sees them: c is a verify
// step's mean GPU time (its drafts included) and o the same steps' mean with every round
// an ordinary decode; a is the mean accepted per round. It is the per-request latency
// rule: under load goodput can still fall (the draft's memory, compute-bound steps).
//
// Policy: no round is drafted in a step that starts with more than disable_above_batch
// running requests (vLLM's speculative_disable_by_batch_size), nor for a request whose
// remaining output is below min_remaining tokens.
// Thread model: a value; the draft cost model is immutable and shared.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// Most tokens a round may draft: engines draft a handful (vLLM's num_speculative_tokens
// is typically 1-8); 64 leaves room for tree-free experiments and bounds per-step work.
inline constexpr int64_t kMaxSpeculativeTokens = 64;

// Values reach JSON and policies by name (SpeculationBasisName): explicit, never renumber.
enum class SpeculationBasis : int { kEmitted = 0, kAccepted = 1 };
std::string_view SpeculationBasisName(SpeculationBasis basis);  // "emitted", "accepted"
std::optional<SpeculationBasis> ParseSpeculationBasis(std::string_view name);

struct SpeculationEconomics {
  SpeculationBasis basis = SpeculationBasis::kEmitted;
  double round_ms = 0;          // c: mean cost of a round
  double mean_accepted = 0;     // a
  double ordinary_ms = 0;       // o
  double per_emitted_ms = 0;    // c / (a + 1)
  std::optional<double> per_accepted_ms;  // c / a; none when nothing is accepted
  double break_even_accepted = 0;         // on the basis
  bool pays = false;            // on the basis
};
// REQUIRES: ordinary_ms > 0, round_ms >= 0, mean_accepted >= 0.
SpeculationEconomics JudgeSpeculationCost(SpeculationBasis basis, double round_ms, double mean_accepted,
                                          double ordinary_ms);
// {basis, round_ms, mean_accepted, ordinary_ms, cost_per_emitted_ms, cost_per_accepted_ms,
//  break_even_accepted, pays}
Json SpeculationEconomicsJson(const SpeculationEconomics& e);

struct SpeculationConfig {
  std::string method;            // "draft" or "ngram"; "" = off
  int64_t tokens_per_round = 0;  // k; 0 = off
  std::vector<double> acceptance;  // conditional acceptance by position, size k
  std::string acceptance_source;   // "declared" or the rounds file as named
  std::optional<int64_t> disable_above_batch;
  int64_t min_remaining = 2;       // remaining output tokens below which a request decodes ordinarily
  std::string draft_model;         // method draft: the draft model's name
  std::shared_ptr<const StepCostModel> draft_cost;  // method draft; null for ngram
  uint64_t stream = 0;             // RngStream(seed, "engine.speculation").seed()
  SpeculationBasis basis = SpeculationBasis::kEmitted;  // how the report judges the cost

  bool enabled() const { return tokens_per_round > 0; }
  // Accepted tokens of the round of request `id` drafting `drafted` tokens after
  // `generated` output tokens (see the header). REQUIRES: 0 <= drafted <= tokens_per_round.
  int64_t Accepted(uint64_t id, int64_t generated, int64_t drafted) const;
  // The settings (the plan's canonical form and the report).
  Json Describe() const;
};

// What speculation did on a replica (all zero when off).
struct SpeculationCounters {
  int64_t rounds = 0;           // request-rounds verified
  int64_t drafted_tokens = 0;   // Σk'
  int64_t accepted_tokens = 0;  // Σa
  int64_t emitted_tokens = 0;   // Σ(a + 1)
  int64_t verify_steps = 0;     // steps that verified at least one round
  int64_t ordinary_decodes = 0; // decodes of steps or requests that did not speculate
  Duration draft_time;          // GPU time the draft model took
  // The verify steps' GPU time (drafts included), and the same steps costed with every
  // round an ordinary decode.
  Duration verify_step_time;
  Duration ordinary_step_time;

  SpeculationCounters& operator+=(const SpeculationCounters& o);
  // The gate's rule on what the run measured (header); none without rounds.
  std::optional<SpeculationEconomics> Economics(SpeculationBasis basis) const;
  // {enabled, rounds, drafted_tokens, accepted_tokens, emitted_tokens, acceptance_rate
  //  (accepted / drafted), mean_accepted, mean_emitted (per round), verify_steps,
  //  ordinary_decodes, draft_time_ms, cost (SpeculationEconomicsJson, or null without
  //  rounds)}; ratios are 0 without rounds.
  Json ToJson(SpeculationBasis basis) const;
};

}  // namespace fleetplan
