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
// With a prefill pool (fleet/pools.h), a request below the colocation threshold goes to
// the replica the router picks among all of them and runs there whole. Any other is
// disaggregated: the router picks its serving replica among the mixed and decode ones,
// and the request goes through stages the fleet keeps in a Handoff until the serving
// replica owns it:
//   admission queue (per serving replica, FIFO: until a decode slot is predicted)
//     -> prefill replica (a copy of the request with a one-token answer)
//     -> transfer queue (per serving replica, FIFO: until BeginImport gets its blocks)
//     -> transfer (prefill replica's KvTransferLink; faults, timeout, retry)
//     -> FinishImport on the serving replica (or recompute there / reject)
// A decode slot is predicted when the serving replica's free blocks, less those
// reserved for requests already past admission, cover the request's prompt, and its
// running + importing + reserved requests stay under max_running.
//
// Per request, while it lives, the fleet keeps its RouteInfo (for requests.jsonl) and
// its adapter pin; per replica, ReplicaFigures (report.json `replicas`).
// Completed, rejected, cancelled and timed-out requests reach `sink` (an
// EngineObserver) as they end, with the replica index set, and closed-loop sources are
// told of every completion. One replica is just N = 1.
// Thread model: single-threaded; deterministic: same setup, same source, same events.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/adapters.h"
#include "fleetplan/fleet/event_queue.h"
#include "fleetplan/fleet/kv_transfer.h"
#include "fleetplan/fleet/pools.h"
#include "fleetplan/fleet/prefix_placement.h"
#include "fleetplan/fleet/prefix_view.h"
#include "fleetplan/fleet/router.h"
#include "fleetplan/perf/step_cost.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {

struct ReplicaSetup {
  EngineConfig engine;
  std::shared_ptr<const StepCostModel> cost;
  PoolRole role = PoolRole::kMixed;
  int64_t kv_bytes_per_token = 0;    // the whole replica's (all ranks); prefill: what moves
  int64_t link_bytes_per_second = 0; // prefill: the replica's KV transfer link
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
  DisaggregationConfig disaggregation;  // read only when a replica has the prefill role
  ReplicationConfig replication;        // hot-prefix placement; needs prefix tracking
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
  int64_t handed_off = 0;        // prefill pool: prompts computed here whose KV moved on
  int64_t max_queue_depth = 0;   // most waiting requests seen (after each submit and step)
  int64_t matched_prefix_tokens = 0;  // summed over decisions
  Duration queued_work;          // cache-aware components, summed over decisions
  Duration recompute;
  // TTFT of every request that got a first token here, for an exact p99: 8 bytes per
  // request for the whole run (the one per-request figure the fleet keeps past a
  // request's end).
  std::vector<int64_t> ttft_ns;
};

// What the fleet itself decides, for timelines (timeline.h).
struct RouteEvent {
  SimTime at;
  RequestId id = 0;
  int32_t replica = 0;
  std::string_view stage;  // "serve" (whole request), "decode" (disaggregated: its
                           // serving replica) or "prefill" (its prefill replica)
  int64_t matched_prefix_tokens = 0;
  Duration queue_age;
};
struct TransferEvent {
  RequestId id = 0;
  int32_t attempt = 1;
  int32_t from = 0;  // prefill replica
  int32_t to = 0;    // serving replica
  SimTime start;     // destination blocks allocated (a delay fault waits inside)
  SimTime end;
  int64_t bytes = 0;
  std::string_view outcome;  // "completed", "failed", "timeout", "cancelled"
};
class FleetObserver {
 public:
  virtual ~FleetObserver() = default;
  virtual void OnRoute(const RouteEvent& e) = 0;
  virtual void OnTransfer(const TransferEvent& e) = 0;
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

  // REQUIRES: observer outlives the simulation (may be null).
  void SetFleetObserver(FleetObserver* observer) { fleet_observer_ = observer; }
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
  // Null when router.replication is off.
  const PrefixPlacement* placement() const { return placement_ ? &*placement_ : nullptr; }
  // Null without a prefill pool.
  const StageFigures* stages() const { return prefill_.empty() ? nullptr : &stages_; }
  // report.json `disaggregation` (null JSON without a prefill pool).
  Json StageReportJson(Duration span) const;
  PoolRole role(int32_t replica) const { return setup_.replicas[static_cast<size_t>(replica)].role; }
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
  // Routes among the placement of the request's hot prefix (router.replication).
  RouteDecision RouteWithPlacement(const Request& r, SimTime now);
  // Fills the router's per-request beliefs (prefix, adapter) into `view`, one entry per
  // replica of `replicas`.
  bool BelievesAdapterResident(size_t replica, AdapterId adapter) const;
  void FillRequestView(const Request& r, const std::vector<int32_t>& replicas, std::vector<ReplicaView>& view);
  // Asks `router` to choose among `replicas`; the decision names the replica itself.
  RouteDecision RouteAmong(Router& router, const std::vector<int32_t>& replicas, const Request& r);
  // Books the decision (router memory, figures, route info); returns when the request
  // may start there (later when its adapter must load).
  SimTime BookRoute(const Request& r, const RouteDecision& d, SimTime now, std::string_view stage = "serve");
  void AfterRoute(const Request& r, const RouteDecision& d, SimTime now);
  void SubmitTo(int32_t replica, const Request& r, SimTime now, bool schedule_cancel = true);
  // Ends a request the fleet holds (not in any engine) with `status`.
  void EndInFleet(const Request& r, int32_t replica, RequestStatus status, SimTime now, std::string reason);
  void Cancel(const Event& e);

  // Pools (simulation_pools.cc).
  enum class Stage : int { kAdmission, kPrefill, kTransferQueue, kTransfer };
  struct Handoff {
    Request request;
    int32_t serving = 0;
    int32_t prefill = -1;
    Stage stage = Stage::kAdmission;
    SimTime since;                // entered the current stage
    int64_t reserved_blocks = 0;  // predicted decode slot, until BeginImport
    int32_t attempts = 0;         // transfer attempts started
    int64_t transfer_id = -1;     // on the prefill replica's link while moving
    int64_t transfer_tokens = 0;  // prompt tokens whose KV moves (the rest is cached there)
    bool fails = false;           // this attempt fails when it would complete (fault)
  };
  void RouteWithPools(const Request& r, SimTime now);
  bool WantsDisaggregation(const Request& r, int64_t matched_prefix_tokens) const;
  // True for a disaggregated request's prompt-only copy running on `replica`.
  bool InPrefillStage(int32_t replica, RequestId id) const;
  int64_t ImportBlocks(int32_t serving, const Request& r) const;
  bool DecodeSlotPredicted(int32_t serving, int64_t blocks) const;
  void StartHandoff(const Request& r, int32_t serving, SimTime now);
  void AdmitToPrefill(Handoff& h, SimTime now);
  void DrainAdmission(int32_t serving, SimTime now);
  // Prefill-role replicas: consumes the outcome of a handoff's prefill; false when the
  // outcome must reach the sink (the prefill failed: rejected, cancelled, timed out).
  bool OnPrefillEnded(const RequestOutcome& o);
  void TryStartTransfers(int32_t serving, SimTime now);
  void StartTransfer(Handoff& h, SimTime now);
  void BeginMoving(Handoff& h, SimTime now);
  void AdvanceLink(int32_t prefill, SimTime now);
  void ScheduleLink(int32_t prefill);
  void OnTransferArrived(RequestId id, SimTime now);
  void OnTransferTimeout(RequestId id, int32_t attempt, SimTime now);
  void OnTransferStart(RequestId id, int32_t attempt, SimTime now);
  void OnHandoffDeadline(RequestId id, SimTime now);
  // Abandons the attempt in flight: link share and destination blocks released.
  void StopTransfer(Handoff& h, SimTime now);
  void ReportTransfer(const Handoff& h, SimTime now, std::string_view outcome) const;
  void AfterFailedAttempt(RequestId id, SimTime now);
  void CancelHandoff(Handoff& h, SimTime now);
  void ReleaseReservation(Handoff& h);
  // Adds (+1) or removes (-1) a handoff from its serving replica's pending load: from its
  // arrival to its transfer's start (and again while a failed attempt waits to retry).
  void CountPending(const Handoff& h, int sign);
  // Deterministic uniform [0, 1) draw for a request's attempt (faults).
  double FaultDraw(RequestId id, int32_t attempt, uint64_t salt) const;
  void OnEnded(const RequestOutcome& o);
  // Starts a step on `replica` if it is idle with work, unless the replica is inside an
  // engine call already (its callbacks can reach here: a request ending on a prefill
  // replica admits the next handoff to the same replica); the caller of that engine
  // call starts it afterwards.
  void MaybeStart(int32_t replica, SimTime now);
  // Marks `replica` as inside an engine call for the guard's lifetime.
  class EngineCall {
   public:
    EngineCall(Simulation* sim, int32_t replica) : busy_(sim->in_engine_call_[static_cast<size_t>(replica)]) {
      FP_ASSERT(busy_ == 0);  // engine calls on one replica never nest
      busy_ = 1;
    }
    ~EngineCall() { busy_ = 0; }
    EngineCall(const EngineCall&) = delete;
    EngineCall& operator=(const EngineCall&) = delete;

   private:
    char& busy_;
  };
  // Pools: after `replica` may have freed blocks, prefilled requests bound for it import
  // and waiting ones are admitted to prefill.
  void AfterRelease(int32_t replica, SimTime now);
  void RefreshTelemetry(SimTime now);
  std::vector<ReplicaView> BuildView(const std::vector<int32_t>& replicas) const;
  // True when nothing can happen any more but pending invalidations.
  bool Drained() const;

  FleetSetup setup_;
  EngineObserver* sink_;
  FleetObserver* fleet_observer_ = nullptr;
  std::unique_ptr<Forwarder> forwarder_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::unique_ptr<Router> router_;          // among serving_
  std::unique_ptr<Router> prefill_router_;  // among prefill_; null without a prefill pool
  std::unique_ptr<Router> colocate_router_; // among all_; null without a prefill pool
  std::vector<int32_t> all_;                // every replica, in index order
  std::vector<int32_t> serving_;            // mixed and decode replicas, in index order
  std::vector<int32_t> prefill_;            // prefill replicas, in index order
  EventQueue queue_;
  std::optional<Request> pending_arrival_;
  std::vector<ReplicaTelemetry> telemetry_;
  std::vector<int64_t> sent_requests_;
  std::vector<int64_t> sent_tokens_;
  bool tracks_prefixes_ = false;
  std::optional<PrefixView> prefix_view_;  // the router's record; unset when precise or unused
  std::optional<PrefixView> hasher_;       // hashes prompts when precise replication needs them
  std::optional<PrefixPlacement> placement_;  // router.replication
  std::vector<BlockHash> hashes_;          // scratch: the arriving request's block hashes
  std::vector<AdapterResidency> adapters_;  // per replica; empty when adapters are off
  std::vector<std::vector<AdapterId>> adapter_snapshot_;  // resident at the last refresh, sorted
  std::vector<std::vector<AdapterId>> adapter_sent_;      // sent since the refresh
  std::unordered_map<RequestId, RouteInfo> routes_;       // live requests; lookup only
  std::map<RequestId, std::pair<int32_t, Request>> delayed_;  // waiting for an adapter load
  std::vector<std::set<std::pair<int64_t, RequestId>>> awaiting_first_token_;  // (arrival ns, id)
  std::vector<ReplicaFigures> figures_;
  std::vector<char> in_engine_call_;  // per replica: inside StartStep, FinishStep or Cancel
  RequestSource* source_ = nullptr;
  std::optional<SimTime> first_arrival_;
  SimTime now_;
  int64_t requests_done_ = 0;
  size_t pending_invalidations_ = 0;  // kInvalidate events in queue_

  // Pools state (empty without a prefill pool).
  std::map<RequestId, Handoff> handoffs_;                  // disaggregated requests not yet imported
  std::vector<std::deque<RequestId>> admission_queue_;     // per serving replica
  std::vector<std::deque<RequestId>> transfer_queue_;      // per serving replica
  std::vector<int64_t> reserved_blocks_;                   // per serving replica
  std::vector<int64_t> reserved_requests_;                 // per serving replica
  // Per serving replica: handoffs bound for it that its engine does not hold yet; the
  // router sees them as waiting requests and their answers as outstanding tokens.
  std::vector<int64_t> pending_requests_;
  std::vector<int64_t> pending_tokens_;
  std::vector<std::optional<KvTransferLink>> links_;       // per prefill replica
  std::vector<std::map<int64_t, RequestId>> link_owner_;   // per prefill replica: transfer id -> request
  std::vector<std::optional<SimTime>> link_event_at_;      // per prefill replica: pending kTransferProgress
  StageFigures stages_;
};

}  // namespace fleetplan
