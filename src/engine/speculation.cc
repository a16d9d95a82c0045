#include "fleetplan/engine/speculation.h"

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

Json SpeculationConfig::Describe() const {
  if (!enabled()) return Json{{"enabled", false}};
  Json j{{"enabled", true},
         {"method", method},
         {"tokens_per_round", tokens_per_round},
         {"acceptance", acceptance},
         {"acceptance_source", acceptance_source},
         {"disable_above_batch", disable_above_batch ? Json(*disable_above_batch) : Json()},
         {"min_remaining", min_remaining}};
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
  return *this;
}

Json SpeculationCounters::ToJson(bool enabled) const {
  const auto ratio = [](int64_t n, int64_t d) {
    return d == 0 ? 0.0 : RoundForReport(static_cast<double>(n) / static_cast<double>(d));
  };
  return Json{{"enabled", enabled},
              {"rounds", rounds},
              {"drafted_tokens", drafted_tokens},
              {"accepted_tokens", accepted_tokens},
              {"emitted_tokens", emitted_tokens},
              {"acceptance_rate", ratio(accepted_tokens, drafted_tokens)},
              {"mean_accepted", ratio(accepted_tokens, rounds)},
              {"mean_emitted", ratio(emitted_tokens, rounds)},
              {"verify_steps", verify_steps},
              {"ordinary_decodes", ordinary_decodes},
              {"draft_time_ms", RoundForReport(draft_time.millis())}};
}

}  // namespace fleetplan
