// BenchClientSource: a benchmark client as a request source. A fixed list of requests
// (prompt and answer lengths) is sent in order, the way `vllm bench serve` sends its
// prompts:
//
//   open loop   request 0 at time 0, each next one a gap later; the gaps come from an
//               ArrivalProcess (arrival.h) drawn from the stream `workload.arrivals` of
//               the master seed: Poisson at the rate, or gamma with shape = burstiness
//               (CV = 1 / sqrt(burstiness)), as vLLM draws them; no process: every
//               request at time 0 (request rate "inf");
//   concurrency cap   with max_concurrency C, a request is sent when it is due AND fewer
//               than C requests are in flight (vLLM's semaphore: the client waits, and the
//               request's clock starts when it is sent):
//
//                 sent_i = max(due_i, the time the (i - C)-th earlier request ended,
//                              in the order slots were freed)
//
//               With no gaps (rate "inf") this is a closed loop of C users with no think
//               time: exactly `arrival: {process: closed-loop, users: C}` of a workload,
//               but over these requests' own lengths.
// Each prompt is one unique segment (MakeContentId(kUnique, index in the list, 0)): the
// benchmark's prompts share no prefix the simulator could know of.
//   warm-up     with `warm_up`, every prompt of the list is first sent once, all at time 0,
//               for one output token (ids 0 .. n-1), and the list proper (ids n .. 2n-1,
//               the same prompt contents) starts when the last of those has ended: a
//               server whose prefix cache holds the prompts already, as when benchmark
//               runs of the same prompts follow each other on one server. Its due times,
//               and the cap, count from that moment.
// Requests carry class 0 ("default").
// Follows the RequestSource protocol (source.h): ids 0, 1, 2, ... in list order;
// arrivals non-decreasing; with a cap, PeekArrival() is nullopt while C are in flight.
// Thread model: single-threaded state.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "fleetplan/core/rng.h"
#include "fleetplan/workload/arrival.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {

struct BenchClientRequest {
  int64_t prompt_tokens = 0;  // >= 1
  int64_t output_tokens = 0;  // >= 1
};

struct BenchClientSpec {
  std::vector<BenchClientRequest> requests;        // sent in this order
  std::shared_ptr<const ArrivalProcess> arrivals;  // null: all due at time 0
  std::optional<int64_t> max_concurrency;          // >= 1 when set
  bool warm_up = false;                            // send every prompt once first (above)
};

// Errors (InvalidInput): no requests, a length < 1, a cap < 1.
Expected<std::unique_ptr<RequestSource>> MakeBenchClientSource(const BenchClientSpec& spec, uint64_t seed);

// The arrival process of vLLM's client for `rate` requests per second and `burstiness`
// (the gamma shape): Poisson when burstiness is 1, gamma with CV 1 / sqrt(burstiness)
// otherwise. REQUIRES nothing: rate and burstiness must be > 0 (else an error).
Expected<std::shared_ptr<const ArrivalProcess>> VllmClientArrivals(double rate, double burstiness);

}  // namespace fleetplan
