// Simulation: the event loop over a fleet of engine replicas behind a router.
//
// Owns the clock (an EventQueue), the replicas (engine/engine.h) and the router. Pulls
// requests lazily from a RequestSource — at most one announced arrival is held at a
// time — so memory follows the requests in flight, not the workload's length.
//
//   arrival -> router (telemetry as of the last refresh, prefix and adapter beliefs)
//           -> [adapter cold: kAdapterReady when its load completes] -> replica.Submit
//   replica idle with work -> StartStep -> kStepDone at its end -> FinishStep -> ...
//   cancel_at -> replica.Cancel
//   invalidation (workload.events) -> every replica's Invalidate
//
// Per request, while it lives, the fleet keeps its RouteInfo (for requests.jsonl) and
// its adapter pin; per replica, ReplicaFigures (report.json `replicas`).
// Completed, rejected, cancelled and timed-out requests reach `sink` (an
// EngineObserver) as they end, with the replica index set, and closed-loop sources are
// told of every completion. One replica is just N = 1.
// Thread model: single-threaded; deterministic: same setup, same source, same events.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/adapters.h"
#include "fleetplan/fleet/event_queue.h"
#include "fleetplan/fleet/prefix_view.h"
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
  AdapterConfig adapters;  // per-replica adapter residency (adapters.h); off by default
  // Applied in (time, list order), before arrivals at the same time. One due after the
  // last request has ended is dropped: it cannot change anything, and it must not
  // stretch the simulated span.
  std::vector<TimedInvalidation> invalidations;
};

// How one request was routed: the decision, as it reaches requests.jsonl.
struct RouteInfo {
  int32_t replica = 0;
  int64_t matched_prefix_tokens = 0;  // the router's belief for the chosen replica
                                      // (0 for policies that do not track prefixes)
  Duration queue_age;  // at assignment: how long the oldest request at the chosen
                       // replica still without a first token had been there (0: none)
  Duration adapter_wait;  // cold adapter load the request waited for
  AdapterId adapter = kNoAdapter;  // pinned on the replica while the request lives
  int64_t arrival_ns = 0;
};

// Per-replica figures of a run (report.json `replicas`).
struct ReplicaFigures {
  int64_t routed = 0;
  int64_t max_queue_depth = 0;   // most waiting requests seen (after each submit and step)
  int64_t matched_prefix_tokens = 0;  // summed over decisions
  Duration queued_work;          // cache-aware components, summed over decisions
  Duration recompute;
  // TTFT of every request that got a first token here, for an exact p99: 8 bytes per
  // request for the whole run (the one per-request figure the fleet keeps past a
  // request's end).
  std::vector<int64_t> ttft_ns;
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

  // The routing of `id`. Valid for a live request, including inside
  // EngineObserver::OnRequestDone for that request; nullptr otherwise.
  const RouteInfo* route_of(RequestId id) const;
  const ReplicaFigures& figures(int32_t replica) const { return figures_[static_cast<size_t>(replica)]; }
  // Null when adapters are off.
  const AdapterResidency* adapters(int32_t replica) const {
    return adapters_.empty() ? nullptr : &adapters_[static_cast<size_t>(replica)];
  }
  // report.json `replicas`: per replica {replica, routed, max_queue_depth, ttft_p99_ms,
  // mean_matched_prefix_tokens, mean_queued_work_ms, mean_recompute_ms, adapters
  // (AdapterStats::ToJson, when adapters are on)}. Advances adapter memory to the end.
  Json ReplicaReportJson(Duration span);

  static constexpr uint64_t kProgressEvents = 1u << 18;

 private:
  class Forwarder;  // routes engine callbacks to the sink and the source
  Simulation(const FleetSetup& setup, EngineObserver* sink);

  Status PullArrival(RequestSource& source);
  void OnArrival(SimTime now);
  // Fills the router's per-request beliefs (prefix, adapter) into `view`.
  bool BelievesAdapterResident(size_t replica, AdapterId adapter) const;
  void FillRequestView(const Request& r, std::vector<ReplicaView>& view);
  void AfterRoute(const Request& r, const RouteDecision& d, SimTime now);
  void SubmitTo(int32_t replica, const Request& r, SimTime now);
  void OnEnded(const RequestOutcome& o);
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
  bool tracks_prefixes_ = false;
  std::optional<PrefixView> prefix_view_;  // the router's record; unset when precise or unused
  std::vector<BlockHash> hashes_;          // scratch: the arriving request's block hashes
  std::vector<AdapterResidency> adapters_;  // per replica; empty when adapters are off
  std::vector<std::vector<AdapterId>> adapter_snapshot_;  // resident at the last refresh, sorted
  std::vector<std::vector<AdapterId>> adapter_sent_;      // sent since the refresh
  std::unordered_map<RequestId, RouteInfo> routes_;       // live requests; lookup only
  std::map<RequestId, std::pair<int32_t, Request>> delayed_;  // waiting for an adapter load
  std::vector<std::set<std::pair<int64_t, RequestId>>> awaiting_first_token_;  // (arrival ns, id)
  std::vector<ReplicaFigures> figures_;
  RequestSource* source_ = nullptr;
  std::optional<SimTime> first_arrival_;
  SimTime now_;
  int64_t requests_done_ = 0;
  size_t pending_invalidations_ = 0;  // kInvalidate events in queue_
};

}  // namespace fleetplan
