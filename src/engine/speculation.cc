#include "fleetplan/engine/speculation.h"

#include <algorithm>

#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"

namespace fleetplan {

int64_t SpeculationConfig::Accepted(uint64_t id, int64_t generated, int64_t drafted) const {
  const uint64_t base = SplitMix64(SplitMix64(stream ^ id) + static_cast<uint64_t>(generated) * 0x9e3779b97f4a7c15ULL);
  int64_t a = 0;
  while (a < drafted) {
    const double u = static_cast<double>(SplitMix64(base + static_cast<uint64_t>(a) + 1) >> 11) * 0x1.0p-53;
    if (u >= acceptance[static_cast<size_t>(a)]) break;
    ++a;
  }
  return a;
}

std::string_view SpeculationBasisName(SpeculationBasis basis) {
  return basis == SpeculationBasis::kAccepted ? "accepted" : "emitted";
}

std::optional<SpeculationBasis> ParseSpeculationBasis(std::string_view name) {
  if (name == "emitted") return SpeculationBasis::kEmitted;
  if (name == "accepted") return SpeculationBasis::kAccepted;
  return std::nullopt;
}

SpeculationEconomics JudgeSpeculationCost(SpeculationBasis basis, double round_ms, double mean_accepted,
                                          double ordinary_ms) {
  FP_ASSERT(ordinary_ms > 0 && round_ms >= 0 && mean_accepted >= 0);
  SpeculationEconomics e;
  e.basis = basis;
  e.round_ms = round_ms;
  e.mean_accepted = mean_accepted;
  e.ordinary_ms = ordinary_ms;
  e.per_emitted_ms = round_ms / (mean_accepted + 1);
  if (mean_accepted > 0) e.per_accepted_ms = round_ms / mean_accepted;
  if (basis == SpeculationBasis::kEmitted) {
    e.break_even_accepted = round_ms / ordinary_ms - 1;
    e.pays = e.per_emitted_ms < ordinary_ms;
  } else {
    e.break_even_accepted = round_ms / ordinary_ms;
    e.pays = e.per_accepted_ms && *e.per_accepted_ms < ordinary_ms;
  }
  return e;
}

Json SpeculationEconomicsJson(const SpeculationEconomics& e) {
  return Json{{"basis", SpeculationBasisName(e.basis)},
              {"round_ms", RoundForReport(e.round_ms)},
              {"mean_accepted", RoundForReport(e.mean_accepted)},
              {"ordinary_ms", RoundForReport(e.ordinary_ms)},
              {"cost_per_emitted_ms", RoundForReport(e.per_emitted_ms)},
              {"cost_per_accepted_ms", e.per_accepted_ms ? Json(RoundForReport(*e.per_accepted_ms)) : Json(nullptr)},
              {"break_even_accepted", RoundForReport(e.break_even_accepted)},
              {"pays", e.pays}};
}

Json SpeculationConfig::Describe() const {
  if (!enabled()) return Json{{"enabled", false}};
  Json j{{"enabled", true},
         {"method", method},
         {"tokens_per_round", tokens_per_round},
         {"acceptance", acceptance},
         {"acceptance_source", acceptance_source},
         {"disable_above_batch", disable_above_batch ? Json(*disable_above_batch) : Json()},
         {"min_remaining", min_remaining},
         {"basis", SpeculationBasisName(basis)}};
  if (draft_cost) {
    j["draft_model"] = draft_model;
    j["draft_step_model"] = draft_cost->Describe();
  }
  return j;
}

SpeculationCounters& SpeculationCounters::operator+=(const SpeculationCounters& o) {
  rounds += o.rounds;
  drafted_tokens += o.drafted_tokens;
  accepted_tokens += o.accepted_tokens;
  emitted_tokens += o.emitted_tokens;
  verify_steps += o.verify_steps;
  ordinary_decodes += o.ordinary_decodes;
  draft_time += o.draft_time;
  verify_step_time += o.verify_step_time;
  ordinary_step_time += o.ordinary_step_time;
  return *this;
}

std::optional<SpeculationEconomics> SpeculationCounters::Economics(SpeculationBasis basis) const {
  if (rounds == 0 || verify_steps == 0 || ordinary_step_time <= Duration()) return std::nullopt;
  const auto steps = static_cast<double>(verify_steps);
  return JudgeSpeculationCost(basis, verify_step_time.millis() / steps, static_cast<double>(accepted_tokens) / static_cast<double>(rounds),
                              ordinary_step_time.millis() / steps);
}

Json SpeculationCounters::ToJson(SpeculationBasis basis) const {
  const auto ratio = [](int64_t n, int64_t d) {
    return d == 0 ? 0.0 : RoundForReport(static_cast<double>(n) / static_cast<double>(d));
  };
  const std::optional<SpeculationEconomics> economics = Economics(basis);
  return Json{{"enabled", true},
              {"rounds", rounds},
              {"drafted_tokens", drafted_tokens},
              {"accepted_tokens", accepted_tokens},
              {"emitted_tokens", emitted_tokens},
              {"acceptance_rate", ratio(accepted_tokens, drafted_tokens)},
              {"mean_accepted", ratio(accepted_tokens, rounds)},
              {"mean_emitted", ratio(emitted_tokens, rounds)},
              {"verify_steps", verify_steps},
              {"ordinary_decodes", ordinary_decodes},
              {"draft_time_ms", RoundForReport(draft_time.millis())},
              {"cost", economics ? SpeculationEconomicsJson(*economics) : Json(nullptr)}};
}

}  // namespace fleetplan
