// Host overhead per engine step: the CPU time of one step that the GPU waits for
// (scheduling, input preparation, sampling bookkeeping, detokenisation), as a function of
// the step's batch rather than one constant.
//
//   host(step) = per_step + per_sequence * S + per_prefill_token * P
//
//   S = sequences scheduled in the step (decodes + prefill chunks)
//   P = prompt tokens computed in the step (sum of new_tokens over prefill chunks)
//
// Why this form (docs/step-models.md "Host overhead"): vLLM v1's CPU work per step splits
// into a fixed part (the scheduler's call, the forward's launch, the output's hand-off to
// the detokenising process), a part per scheduled request (the scheduler walks every
// running request; input preparation builds a block-table row, a position and a sampling
// row per request; the output processor detokenises one new token per request) and a part
// per prompt token of a prefill chunk (input ids, positions and slot mapping are built per
// token; a decode is one token, counted in its sequence). GPU time per token is in the step
// model; these are the CPU's. The three terms are all a measured run's per-request
// latencies can identify: a term per KV token or per decode token would be collinear with
// the step model's own terms.
//
// Integer nanoseconds throughout (a per-token term of 0.4 ns is not representable: such a
// term is below anything the runs can resolve). Default: zero, the step model alone.
// Thread model: a value; Of is pure.
#pragma once

#include <cstdint>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

struct HostOverhead {
  Duration per_step;           // every step
  Duration per_sequence;       // per scheduled request (decode or prefill chunk)
  Duration per_prefill_token;  // per prompt token computed (prefill chunks only)

  // REQUIRES: every term >= 0.
  Duration Of(const StepShape& shape) const {
    return per_step + per_sequence * shape.batch_size() + per_prefill_token * shape.prefill_tokens;
  }
  // True when only per_step is set: the host overhead does not depend on the batch.
  bool constant() const { return per_sequence == Duration() && per_prefill_token == Duration(); }
  // {per_step_ns, per_sequence_ns, per_prefill_token_ns}
  Json ToJson() const;
  bool operator==(const HostOverhead&) const = default;
};

}  // namespace fleetplan
