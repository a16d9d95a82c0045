// Fault injection for the emulator (`fleetplan serve`), from the scenario's
// `faults.serve` section (docs/scenario.md, docs/serve.md "Faults"):
//
//   faults:
//     serve:
//       errors: {500: 0.01, 429: 0.02}             # share of requests answered this status at once
//       latency_spike: {probability: 0.05, delay: 300ms}  # the request reaches the engine late
//       stall: {probability: 0.01, duration: 2s}   # a stream stops for this long mid-answer
//
// Draws are deterministic: one stream seeded from (scenario seed, "faults.serve"), drawn
// per request in the order requests reach a replica. The simulator ignores this section.
// Thread model: value types.
#pragma once

#include <cstdint>
#include <map>

#include "fleetplan/core/units.h"

namespace fleetplan {

struct ServeFaults {
  std::map<int, double> errors;  // HTTP status (400..599) -> probability; sum <= 1
  double spike_probability = 0;
  Duration spike_delay;
  double stall_probability = 0;
  Duration stall_duration;
  uint64_t seed = 0;

  bool any() const { return !errors.empty() || spike_probability > 0 || stall_probability > 0; }
};

}  // namespace fleetplan
