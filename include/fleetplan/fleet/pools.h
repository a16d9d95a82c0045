// Prefill/decode pools: the configuration and the per-stage figures of disaggregated
// serving (the machinery is in fleet/simulation.h).
//
// A fleet is one or more pools of replicas, each pool with a role:
//   mixed    serves whole requests and decodes disaggregated ones;
//   decode   decodes disaggregated requests (and serves whole the short ones the
//            conditional threshold keeps colocated);
//   prefill  computes the prompts of disaggregated requests and samples their first
//            token (and serves whole the short ones the threshold keeps colocated);
//            never the destination of a transfer.
// A request is colocated when `colocate_below_tokens` > 0 and, on the replica the router
// picks among all replicas, fewer of its prompt tokens than that are not believed cached:
// it runs whole there. Every other request is disaggregated: the router picks its
// serving replica among the mixed and decode ones; it waits until that replica is
// predicted to have room for its KV (a decode slot), prefills on a prefill replica, and
// its KV moves over that replica's link to the serving replica, whose decode starts when
// the transfer completes, with the first token, which travels with the KV. With
// `colocate_below_tokens: 0` (the default) every request is disaggregated.
//
// Transfer faults (`faults.kv_transfer`) delay or fail transfers. A transfer not done
// `timeout` after it started, or one that fails, is abandoned: its destination blocks are
// discarded, and it is retried (up to `retries` times, while the request's deadline has
// not passed), then recomputed on the serving replica (`on_failure: recompute`) or
// rejected (`on_failure: reject`).
// Thread model: value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/pool_role.h"

namespace fleetplan {

// faults.kv_transfer: each transfer draws (deterministically, from the seed, the request
// and the attempt) whether it is delayed and whether it fails.
struct TransferFaults {
  Duration delay;                  // added before the transfer starts moving
  double delay_probability = 0;    // in [0, 1]
  double failure_probability = 0;  // in [0, 1]: the transfer fails when it would complete
  uint64_t seed = 0;
  bool any() const { return delay_probability > 0 || failure_probability > 0; }
};

struct DisaggregationConfig {
  // Prompts with fewer uncached tokens (as the router believes) stay colocated.
  int64_t colocate_below_tokens = 0;
  Duration setup;                 // per transfer, before bytes move
  Duration timeout = Duration::Nanos(10'000'000'000);  // abandon a transfer not done by then (10 s)
  int32_t retries = 1;            // attempts after the first, while the deadline allows
  bool reject_on_failure = false; // after the last attempt: reject (else recompute)
  TransferFaults faults;
};

// Per-stage figures of a run with a prefill pool (report.json `disaggregation`). The
// sample vectors hold 8 bytes per disaggregated request.
struct StageFigures {
  int64_t colocated = 0;        // requests served whole on a serving replica
  int64_t disaggregated = 0;    // requests sent to the prefill pool
  int64_t admission_waits = 0;  // disaggregated requests that waited for a decode slot
  int64_t timed_out_waiting = 0;   // deadline passed waiting for a slot or a transfer
  int64_t transfers = 0;        // transfer attempts started
  int64_t transfers_completed = 0;
  int64_t transfer_bytes = 0;   // moved by completed transfers
  int64_t transfer_cached_tokens = 0;  // prompt tokens the serving replica already cached
                                       // (per attempt): their KV did not move
  int64_t timeouts = 0;         // attempts abandoned at the timeout
  int64_t failures = 0;         // attempts that failed (faults)
  int64_t retries = 0;
  int64_t recomputations = 0;   // prompts recomputed on the serving replica
  int64_t rejections = 0;       // rejected after the last attempt (on_failure: reject)
  std::vector<int64_t> admission_wait_ns;  // arrival -> prefill submit, for those who waited
  std::vector<int64_t> prefill_stage_ns;   // prefill submit -> prompt computed
  std::vector<int64_t> transfer_wait_ns;   // prompt computed -> destination blocks allocated
  std::vector<int64_t> transfer_ns;        // transfer start -> KV arrived (completed ones)
};

}  // namespace fleetplan
