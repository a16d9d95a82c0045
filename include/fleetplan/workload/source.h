// RequestSource: the lazy stream of requests a simulation pulls, in arrival order.
//
// Implementations: the synthetic generators (generator.h; open loop and closed loop)
// and trace replay (trace.h). Only requests that have been announced but not yet taken
// live in memory, so a 10-million-request workload costs what its active sessions and
// closed-loop users cost, not what its requests cost.
//
// Protocol (what the engine/fleet event loop does):
//
//   loop:
//     t_next_event = earliest event in the simulator's queue
//     while (a = PeekArrival()) and a <= t_next_event:  push Next() as an arrival event
//     process the event; when a request finishes: OnRequestFinished(id, now)
//
// Guarantees: requests come out with ids 0, 1, 2, ... and non-decreasing arrival times.
// Open-loop sources never block: PeekArrival() returns nullopt only when exhausted.
// A closed-loop source returns nullopt while every user waits on a completion; a
// completion at time t makes the finished user's next request arrive at t + think_time
// >= t, so following the protocol above keeps arrivals non-decreasing.
// Errors (a bad trace line) are located InvalidInput statuses; after one, the source is
// exhausted.
// Thread model: single-threaded state; one source per simulation.
#pragma once

#include <memory>
#include <optional>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

struct WorkloadSpec;

class RequestSource {
 public:
  virtual ~RequestSource() = default;

  // Arrival time of the next request, without taking it; nullopt when none is available
  // now (exhausted, or closed loop with every user waiting).
  virtual Expected<std::optional<SimTime>> PeekArrival() = 0;
  // Takes the next request; nullopt exactly when PeekArrival() would return nullopt.
  virtual Expected<std::optional<Request>> Next() = 0;
  // Closed loop: request `id` finished (or was cancelled) at `finished_at`. Open-loop
  // sources ignore it. REQUIRES: id was returned by Next() and not finished before;
  // finished_at >= its arrival.
  virtual void OnRequestFinished(RequestId id, SimTime finished_at) {
    (void)id;
    (void)finished_at;
  }
  // True once no request will ever come again (also after an error).
  virtual bool exhausted() const = 0;
  // Names behind the class/tenant/adapter handles of the requests returned so far.
  // Generators know every name up front; trace importers may add names as they meet
  // them (existing handles never change).
  virtual const WorkloadNames& names() const = 0;
  // What produced the stream, for reports: {"source": "generator" | "trace",
  // "loop": "open" | "closed", "arrival": {...}, ...}.
  virtual Json Describe() const = 0;
};

// Limits that replace the spec's `duration:` / `requests:` (command-line flags): when
// either field is set, these are the end conditions and the spec's are ignored, so
// `--requests 1000000` gives a million requests even if the scenario says `duration: 10m`.
struct SourceLimits {
  std::optional<Duration> duration;  // no arrival at or after this time
  std::optional<int64_t> requests;   // at most this many requests
};

// The source a workload spec describes: a generator, or a trace replay when the spec
// has `trace:`. `seed` is the scenario's master seed.
Expected<std::unique_ptr<RequestSource>> MakeRequestSource(const WorkloadSpec& spec, uint64_t seed,
                                                           const SourceLimits& overrides = {});

}  // namespace fleetplan
