// Simulation: the event loop over a fleet of engine replicas behind a router.
//
// Owns the clock (an EventQueue), the replicas (engine/engine.h) and the router. Pulls
// requests lazily from a RequestSource — at most one announced arrival is held at a
// time — so memory follows the requests in flight, not the workload's length.
//
//   arrival -> router (telemetry as of the last refresh) -> replica.Submit
//   replica idle with work -> StartStep -> kStepDone at its end -> FinishStep -> ...
//   cancel_at -> replica.Cancel
//   invalidation (workload.events) -> every replica's Invalidate
//
// Completed, rejected, cancelled and timed-out requests reach `sink` (an
// EngineObserver) as they end, with the replica index set, and closed-loop sources are
// told of every completion. One replica is just N = 1.
// Thread model: single-threaded; deterministic: same setup, same source, same events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/event_queue.h"
#include "fleetplan/fleet/router.h"
#include "fleetplan/perf/step_cost.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {

struct ReplicaSetup {
  EngineConfig engine;
  std::shared_ptr<const StepCostModel> cost;
};

// A prefix-cache invalidation (engine.h) applied to every replica at `at`.
struct TimedInvalidation {
  SimTime at;
  CacheInvalidation invalidation;
};

struct FleetSetup {
  std::vector<ReplicaSetup> replicas;
  RouterConfig router;
  // Applied in (time, list order), before arrivals at the same time. One due after the
  // last request has ended is dropped: it cannot change anything, and it must not
  // stretch the simulated span.
  std::vector<TimedInvalidation> invalidations;
};

// Called every `kProgressEvents` events: simulated time now, requests ended so far.
using ProgressFn = std::function<void(SimTime now, int64_t requests_done)>;

class Simulation {
 public:
  // REQUIRES: sink outlives the simulation (may be null).
  static Expected<std::unique_ptr<Simulation>> Create(const FleetSetup& setup, EngineObserver* sink);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs until the source is exhausted and every replica is idle.
  Status Run(RequestSource& source, const ProgressFn& progress = {});

  int32_t replica_count() const { return static_cast<int32_t>(engines_.size()); }
  const Engine& replica(int32_t i) const { return *engines_[static_cast<size_t>(i)]; }
  uint64_t events() const { return queue_.pushed(); }
  SimTime first_arrival() const { return first_arrival_.value_or(SimTime()); }
  SimTime end_time() const { return now_; }
  int64_t requests_done() const { return requests_done_; }
  Status CheckInvariants() const;

  static constexpr uint64_t kProgressEvents = 1u << 18;

 private:
  class Forwarder;  // routes engine callbacks to the sink and the source
  Simulation(const FleetSetup& setup, EngineObserver* sink);

  Status PullArrival(RequestSource& source);
  void OnArrival(SimTime now);
  void MaybeStart(int32_t replica, SimTime now);
  void RefreshTelemetry(SimTime now);
  std::vector<ReplicaView> BuildView() const;
  // True when nothing can happen any more but pending invalidations.
  bool Drained() const;

  FleetSetup setup_;
  EngineObserver* sink_;
  std::unique_ptr<Forwarder> forwarder_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::unique_ptr<Router> router_;
  EventQueue queue_;
  std::optional<Request> pending_arrival_;
  std::vector<ReplicaTelemetry> telemetry_;
  std::vector<int64_t> sent_requests_;
  std::vector<int64_t> sent_tokens_;
  RequestSource* source_ = nullptr;
  std::optional<SimTime> first_arrival_;
  SimTime now_;
  int64_t requests_done_ = 0;
  size_t pending_invalidations_ = 0;  // kInvalidate events in queue_
};

}  // namespace fleetplan
