#include "fleetplan/perf/host_overhead.h"

namespace fleetplan {

Json HostOverhead::ToJson() const {
  return Json{{"per_step_ns", per_step.ns()},
              {"per_sequence_ns", per_sequence.ns()},
              {"per_prefill_token_ns", per_prefill_token.ns()}};
}

}  // namespace fleetplan
