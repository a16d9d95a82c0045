// Synthetic request generators: a WorkloadSpec plus a master seed become a lazy,
// deterministic RequestSource.
//
// Open loop: fresh requests follow the arrival process; a conversational class's fresh
// request starts a session whose later turns are queued at arrival + think_time. The
// source emits the earlier of (next fresh arrival, earliest queued turn); a tie goes to
// the queued turn. Memory: the active sessions, nothing per past request.
// Closed loop: `users` users each have one request outstanding at a time; all start at
// time 0 (their first requests arrive at 0 + think_time). OnRequestFinished(id, t)
// queues that user's next request (next turn of its session, or a fresh one) at
// t + think_time.
//
// Named RNG streams (one per component; seeds derive from (master seed, name), so a
// change to one component never shifts another's draws):
//   workload.arrivals                      open-loop gaps
//   workload.class                         class choice (by share)
//   workload.tenant, workload.adapter      tenant and adapter choice
//   workload.users                         closed-loop think times
//   workload.classes.<c>.prompt[<i>]       segment i of class c (length or document)
//   workload.classes.<c>.output_tokens     output lengths
//   workload.classes.<c>.session           turn counts and think times
//   workload.classes.<c>.deadline, .cancel deadlines; cancellation coin and delay
//   a document's or tenant's own length:   workload.classes.<c>.prompt[<i>] forked by
//                                          "tenant-<t>" / "document-<t>-<d>"
// Per request the order of draws is fixed (class, tenant, adapter, then the class's
// streams), so the output is a pure function of (spec, seed, limits).
// Thread model: single-threaded state.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "fleetplan/core/status.h"
#include "fleetplan/workload/source.h"
#include "fleetplan/workload/workload_spec.h"

namespace fleetplan {

// What a generator adjusted, for reports: draws capped by `max:` per slot path
// ("workload.classes.document.output_tokens" -> 12), sessions cut by the limits.
struct GeneratorAdjustments {
  std::map<std::string, int64_t> capped_draws;
  int64_t sessions_cut = 0;
};

class GeneratorSource : public RequestSource {
 public:
  virtual const GeneratorAdjustments& adjustments() const = 0;
};

// REQUIRES: spec.mode is kOpenLoop or kClosedLoop (MakeRequestSource dispatches traces).
// Errors: neither a duration nor a request limit (an open-loop generator never ends).
Expected<std::unique_ptr<GeneratorSource>> MakeGenerator(const WorkloadSpec& spec, uint64_t seed,
                                                         const SourceLimits& overrides = {});

}  // namespace fleetplan
