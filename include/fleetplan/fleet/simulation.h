// Simulation: the fleet kernel — an event loop over a table of engine replicas behind a
// router, with the fleet's features plugged in as components (component.h).
//
// The kernel owns the clock (an EventQueue ordered by (time, seq)), the replica table,
// the routers, what it knows of every live request (its RouteInfo), and three kinds of
// events of its own: arrivals, step completions and cancellations. Everything else —
// telemetry refresh, prefix beliefs, adapters, hot-prefix replication, prefill/decode
// pools with the KV transfer stage and its faults, cache invalidations — is a component
// that owns its events, state, invariants and report section:
//
//   arrival -> components' Dispatch (pools may take it) -> candidates: ready serving
//           replicas -> components' Route (replication) or the router, over a view
//           (telemetry + components' FillView) -> OnRouted (adapters may delay the
//           start) -> replica.Submit
//   replica idle with work -> StartStep -> step done at its end -> FinishStep -> ...
//   cancel -> components' ConsumeCancel (a handoff in the pools) or the replica's Cancel
// A request pinned to a replica (Request::pinned_replica: the emulator's port) skips the
// components' Route, and every router choice whose candidates include that replica
// (RouteAmong) takes it without asking the router.
//
// Replica table. Every replica has a stable id (dense, in creation order, never reused)
// and a lifecycle:
//   pending -> loading -> ready -> draining -> gone
// Replicas of the setup are ready at the start. AddReplica creates one mid-run: pending
// until `at`, loading for its load time, then ready. DrainReplica stops routing to a
// replica at `at`; it finishes what it holds (waiting and running requests, imports) and
// is gone once it holds nothing. A drain with a grace period gives it until
// `at + grace`: then the replica is lost, and every request still bound for it (waiting
// or running in its engine, a delayed start, a component's handoff) is given up as the
// drain's DrainExpiry says — requeued (routed again, arrival unchanged, so its TTFT
// includes the loss; rejected when no replica is ready) or cancelled (reason
// `drained`). A request in the step in flight is given up when that step ends (the step
// still uses its blocks). Grace 0 is a failure: lost at once. Routers and components
// only ever see ready replicas as candidates; a gone replica keeps its figures for the
// report.
//
// Two ways to drive it. Pull: Run(source) pulls requests lazily from a RequestSource —
// an open-loop source is held one announced arrival ahead (a closed-loop one: every
// request due before the earliest held), so memory follows the requests in flight, not
// the workload's length. Push (a real-time emulator, tests): Submit(request)
// at its arrival time, Cancel(id, at), RunUntil(t), and a per-token callback (request
// id, token index, time). Both may be mixed: Start(source) attaches a source, RunUntil
// advances, Finish checks that every request ended.
//
// Completed, rejected, cancelled and timed-out requests reach `sink` (an
// EngineObserver) as they end, with the replica id set; closed-loop sources are told of
// every completion. One replica is just N = 1.
// Thread model: single-threaded; deterministic: same setup, same requests, same events.
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
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/component_config.h"
#include "fleetplan/fleet/event_queue.h"
#include "fleetplan/fleet/pool_role.h"
#include "fleetplan/fleet/request_ledger.h"
#include "fleetplan/fleet/router.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/metrics/slo.h"
#include "fleetplan/perf/step_cost.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {

struct ReplicaSetup {
  EngineConfig engine;
  std::shared_ptr<const StepCostModel> cost;
  PoolRole role = PoolRole::kMixed;
  int64_t kv_bytes_per_token = 0;    // the whole replica's (all ranks); prefill: what moves
  int64_t link_bytes_per_second = 0; // prefill: the replica's KV transfer link
  // Replicas with the same group >= 0 step in lock-step, as vLLM's data-parallel ranks of
  // an MoE model do (their expert layers exchange tokens every step): a step starts on
  // every member at once, when none has one in flight and any has work, and ends on every
  // member at the latest member's end (Engine::StretchStep); a member without work sits
  // the step out (vLLM runs a dummy batch there, whose time the longest member's covers).
  // -1: the replica steps on its own.
  int32_t lockstep_group = -1;
};

// A prefix-cache invalidation (engine.h) applied to every replica at `at`.
struct TimedInvalidation {
  SimTime at;
  CacheInvalidation invalidation;
};

struct ReplicaLoss;  // below, after DrainExpiry

// The run's request classes, by ClassId: names and objectives (a class id beyond them is
// named by its number and has no objectives). Components that judge outcomes (time
// series, the autoscaler) read them here.
struct FleetClasses {
  std::vector<std::string> names;
  std::vector<ClassObjectives> objectives;
};

struct FleetSetup {
  std::vector<ReplicaSetup> replicas;
  RouterConfig router;
  FleetClasses classes;
  // The components the run wants, each row's bound settings under its name (component.h
  // registry, component_config.h); the kernel reads none of them.
  ComponentConfigs components;
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
  bool awaiting_first_token = true;  // no token has reached the client yet
};

// The record of a request's outcome (metrics/record.h), without the routing fields.
RequestRecord ToRequestRecord(const RequestOutcome& o);

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
  // A drain with a grace period (report.json `replicas[].drain`, present once one was
  // asked for): what its expiry gave up.
  bool drain_limited = false;
  int64_t drain_requeued = 0;   // routed again
  int64_t drain_rejected = 0;   // requeue found no ready replica
  int64_t drain_cancelled = 0;  // ended cancelled, reason `drained`
};

// What a drain's expiry does with the requests its replica still holds. Values are the
// kernel's own (they reach JSON by name, DrainExpiryName): explicit, never renumber.
enum class DrainExpiry : int { kRequeue = 0, kCancel = 1 };
std::string_view DrainExpiryName(DrainExpiry expiry);

// Replicas (ids of the setup) that fail at `at`, as when a failure domain is lost: each
// is drained with no grace, and what it holds is given up as `expiry` says.
struct ReplicaLoss {
  SimTime at;
  std::vector<int32_t> replicas;
  DrainExpiry expiry = DrainExpiry::kRequeue;
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
  bool delayed = false;      // a delay fault held it before it moved
};
class FleetObserver {
 public:
  virtual ~FleetObserver() = default;
  virtual void OnRoute(const RouteEvent& e) = 0;
  virtual void OnTransfer(const TransferEvent& e) = 0;
};

// A replica's place in its lifecycle. Values reach JSON by name (ReplicaStateName):
// explicit, never renumber.
enum class ReplicaState : int { kPending = 0, kLoading = 1, kReady = 2, kDraining = 3, kGone = 4 };
std::string_view ReplicaStateName(ReplicaState state);

// One output token of a request, as the push API reports it: `index` 0 is the first
// token (its time is the TTFT), the last index is output_tokens - 1.
struct TokenEvent {
  RequestId id = 0;
  int32_t replica = 0;
  int64_t index = 0;
  SimTime at;
};
using TokenFn = std::function<void(const TokenEvent&)>;

// Called every `kProgressEvents` events: simulated time now, requests ended so far.
using ProgressFn = std::function<void(SimTime now, int64_t requests_done)>;

class Telemetry;

class Simulation final : public EventHandler {
 public:
  // REQUIRES: sink outlives the simulation (may be null).
  static Expected<std::unique_ptr<Simulation>> Create(const FleetSetup& setup, EngineObserver* sink);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // REQUIRES: observer outlives the simulation (may be null).
  void SetFleetObserver(FleetObserver* observer) { fleet_observer_ = observer; }
  // Called with every output token (push API). Null: none (the default; costs nothing).
  void SetTokenCallback(TokenFn fn);
  // Called after every event with the simulation between events (property tests check
  // CheckInvariants there).
  void SetEventHook(std::function<void()> hook) { event_hook_ = std::move(hook); }

  // Pull: runs until the source is exhausted and every request has ended.
  Status Run(RequestSource& source, const ProgressFn& progress = {});

  // Push. Start attaches an optional source (null: only submitted requests); Submit
  // schedules a request's arrival at request.arrival; Cancel makes its client give up at
  // `at` (an unknown or ended id is ignored then); RunUntil runs every event up to and
  // including `t` and leaves the clock at t; Finish runs to the end and checks that every
  // request ended and every block was released.
  // REQUIRES: Start before the others; Submit: arrival >= now(), id unique (a component
  // may take a duplicate of a request not yet arrived instead: admission ends it).
  Status Start(RequestSource* source, const ProgressFn& progress = {});
  Status Submit(const Request& request);
  void Cancel(RequestId id, SimTime at);
  Status RunUntil(SimTime t);
  Status Finish();
  // Stops the run after the event being handled: RunUntil and Finish return at once
  // (Finish without its end checks: requests may still be live). For early stops.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }
  SimTime now() const { return now_; }
  // When the next event is due (nullopt: nothing scheduled).
  std::optional<SimTime> next_event() const;

  // The replica table. AddReplica: a replica of `setup` that becomes ready at
  // at + load_time (its role must be one the fleet had at creation); returns its id.
  // DrainReplica: stop routing to `id` at `at`; it finishes what it holds, then is gone;
  // with `grace`, what it still holds at `at + grace` ends as `expiry` says (see the
  // replica table above). The first drain of a replica decides when it stops routing;
  // the earliest expiry of its drains applies.
  // A time before now(), an unknown id, a role the fleet lacks, a negative load time or
  // grace, or a grace on a prefill replica (its engine holds only stage copies) is an
  // InvalidInput error.
  Expected<int32_t> AddReplica(const ReplicaSetup& setup, SimTime at, Duration load_time);
  Status DrainReplica(int32_t id, SimTime at);
  Status DrainReplica(int32_t id, SimTime at, Duration grace, DrainExpiry expiry);
  ReplicaState state(int32_t id) const { return table_[static_cast<size_t>(id)].state; }

  int32_t replica_count() const { return static_cast<int32_t>(table_.size()); }
  const Engine& replica(int32_t i) const { return *table_[static_cast<size_t>(i)].engine; }
  uint64_t events() const { return queue_.pushed(); }
  SimTime first_arrival() const { return first_arrival_.value_or(SimTime()); }
  SimTime end_time() const { return now_; }
  int64_t requests_done() const { return requests_done_; }
  // Recounts what the fleet holds: every engine's invariants; every live request known
  // to exactly one place (an engine, a delayed start, or a component); the kernel's
  // per-replica queues against the live routes; every component's own invariants.
  Status CheckInvariants() const;

  // The routing of `id`. Valid for a live request, including inside
  // EngineObserver::OnRequestDone for that request; nullptr otherwise.
  const RouteInfo* route_of(RequestId id) const;
  PoolRole role(int32_t replica) const { return table_[static_cast<size_t>(replica)].setup.role; }
  const ReplicaSetup& setup_of(int32_t replica) const { return table_[static_cast<size_t>(replica)].setup; }
  const ReplicaFigures& figures(int32_t replica) const { return table_[static_cast<size_t>(replica)].figures; }
  // The component of type T, or null when the fleet has none.
  template <typename T>
  const T* component() const {
    return const_cast<Simulation*>(this)->find_component<T>();
  }
  // report.json `replicas` and the components' per-replica fields of `engine` (one
  // entry per replica, in id order); components' own sections into `report`.
  Json ReplicaReportJson(Duration span, Json* engine_replicas);
  void AddComponentReports(Duration span, Json& report) const;

  // Often enough for a progress line to move while an overloaded run grinds (the line
  // itself redraws at most every 100 ms), rare enough to cost nothing.
  static constexpr uint64_t kProgressEvents = 1u << 12;

  // ---- Component services (component.h): what a component may ask of the kernel. ----
  // An earlier component of type T (components are built in registry order), or null.
  template <typename T>
  T* find_component() {
    for (const auto& c : components_) {
      if (auto* t = dynamic_cast<T*>(c.get())) return t;
    }
    return nullptr;
  }
  const FleetSetup& setup() const { return setup_; }
  EventQueue& queue() { return queue_; }
  // Where components hold live requests outside the engines (request_ledger.h).
  RequestLedger& ledger() { return ledger_; }
  const RequestLedger& ledger() const { return ledger_; }
  Engine& engine(int32_t replica) { return *table_[static_cast<size_t>(replica)].engine; }
  ReplicaFigures& mutable_figures(int32_t replica) { return table_[static_cast<size_t>(replica)].figures; }
  FleetObserver* fleet_observer() const { return fleet_observer_; }
  bool has_pending_arrival() const { return !pulled_.empty(); }
  // True while `id` is dispatched again because its replica gave it back (lost, or drained
  // with requeue): components that admit arrivals let it through as the request it was.
  bool requeuing(RequestId id) const { return requeuing_ == id; }
  // Calls fn(id, route) for every live request (unordered: for counts only).
  template <typename Fn>
  void ForEachRoute(Fn&& fn) const {
    for (const auto& [id, info] : routes_) fn(id, info);
  }
  // Calls fn(component) for every component, in registry order.
  template <typename Fn>
  void ForEachComponent(Fn&& fn) {
    for (const auto& c : components_) fn(*c);
  }
  // Ready replicas, in id order: every role; mixed and decode (they serve requests);
  // prefill.
  const std::vector<int32_t>& ready_all() const { return ready_all_; }
  const std::vector<int32_t>& ready_serving() const { return ready_serving_; }
  const std::vector<int32_t>& ready_prefill() const { return ready_prefill_; }
  // The router of one candidate set (routers keep their own rotation per set).
  enum class RouterSet : int { kServing = 0, kPrefill = 1, kAll = 2 };
  // The view of `replicas` as the router sees it (telemetry), without request beliefs.
  std::vector<ReplicaView> BuildView(const std::vector<int32_t>& replicas) const;
  // Asks the router of `set` to choose among `replicas` (non-empty); the decision names
  // the replica itself and carries the matched prefix of the view. A request pinned to
  // one of `replicas` gets it, and the router is not asked (its rotation stays).
  RouteDecision RouteAmong(RouterSet set, const std::vector<int32_t>& replicas, const Request& r);
  // Books the decision (router memory, figures, route info, components' OnRouted);
  // returns when the request may start there.
  SimTime BookRoute(const Request& r, const RouteDecision& d, SimTime now, std::string_view stage = "serve");
  // Books and submits now, or when the components' OnRouted allows.
  void AfterRoute(const Request& r, const RouteDecision& d, SimTime now);
  // Tells the components that `tokens` of `r` were sent to `replica`.
  void NoteDispatch(const Request& r, int32_t replica, int64_t tokens);
  void SubmitTo(int32_t replica, const Request& r, SimTime now, bool schedule_cancel = true);
  // Ends a request the fleet holds (not in any engine) with `status`; replica -1: one
  // never routed. `retry_after`: a rejection's estimate of when to try again.
  void EndInFleet(const Request& r, int32_t replica, RequestStatus status, SimTime now, std::string reason,
                  std::optional<Duration> retry_after = std::nullopt);
  // Schedules this request's client cancellation (kernel event; the replica is looked up
  // when it fires).
  void ScheduleCancel(const Request& r, SimTime now);
  // Asks for a step on `replica` once every event of this instant has been handled:
  // same-instant admission — every arrival at or before a step's start is waiting when
  // the step is planned, whatever order the instant's events came in (vLLM's scheduler
  // sees every waiting request). `now` is the current simulated time.
  void MaybeStart(int32_t replica, SimTime now);
  // Starts a step on `replica` if it is idle with work, unless the replica is inside an
  // engine call already (its callbacks can reach here); the caller of that engine call
  // starts it afterwards.
  void StartIfIdle(int32_t replica, SimTime now);
  // The starts asked for in this instant, in the order they were asked.
  void StartPending();
  // MaybeStart for a replica of a lock-step group (ReplicaSetup::lockstep_group).
  void MaybeStartGroup(int32_t replica, SimTime now);
  // After `replica` may have freed blocks: the components' AfterRelease.
  void AfterRelease(int32_t replica, SimTime now);
  // A request bound for a lost replica that is in no engine (a component's handoff, given
  // up in FleetComponent::GiveUpHeld or later): requeued or cancelled as the replica's
  // drain expiry says, counted in its figures.
  // REQUIRES: `replica` was lost (its grace ran out).
  void GiveUpRequest(const Request& r, int32_t replica, SimTime now);
  // An engine call on `replica` (Cancel, FinishImport...) made by a component.
  void CancelOn(int32_t replica, RequestId id, SimTime now);
  bool in_engine_call(int32_t replica) const { return table_[static_cast<size_t>(replica)].in_engine_call; }

  void OnEvent(const Event& e) override;

 private:
  class Forwarder;  // routes engine callbacks to components, the sink and the source
  struct Replica {
    ReplicaSetup setup;
    std::unique_ptr<Engine> engine;
    ReplicaState state = ReplicaState::kReady;
    ReplicaFigures figures;
    // Requests routed here, in routing order: (routed at ns, id). The front
    // entries whose request got a first token or ended are dropped when the oldest
    // awaiting one is asked for.
    std::deque<std::pair<int64_t, RequestId>> awaiting_first_token;
    bool in_engine_call = false;  // inside StartStep, FinishStep or Cancel
    bool start_pending = false;   // in pending_starts_
    std::optional<DrainExpiry> lost;  // its drain's grace ran out: how it gives requests up
  };
  // A request given up from a lost replica's engine, until its engine outcome (at once,
  // or when the step in flight ends): the outcome is not the client's.
  struct GivingUp {
    int32_t replica = 0;
    DrainExpiry expiry = DrainExpiry::kCancel;
    std::optional<Request> request;  // kRequeue: routed again when the outcome comes
  };
  // Marks `replica` as inside an engine call for the guard's lifetime.
  class EngineCall {
   public:
    EngineCall(Simulation* sim, int32_t replica) : busy_(sim->table_[static_cast<size_t>(replica)].in_engine_call) {
      FP_ASSERT(!busy_);  // engine calls on one replica never nest
      busy_ = true;
    }
    ~EngineCall() { busy_ = false; }
    EngineCall(const EngineCall&) = delete;
    EngineCall& operator=(const EngineCall&) = delete;

   private:
    bool& busy_;
  };
  // The kernel's own event codes. Values are local to the kernel.
  enum Code : int32_t {
    kArrival = 0,        // source request `request` arrives (held in pulled_)
    kPushedArrival = 1,  // submitted request `request` arrives (held in pushed_)
    kStepDone = 2,       // replica `replica` finishes its step in flight
    kCancel = 3,         // the client of `request` gives up (replica: -1 = look it up)
    kDelayedStart = 4,   // `request`, routed to `replica`, may start there now
    kReplicaLoading = 5, // `replica` starts loading
    kReplicaReady = 6,   // `replica` is ready
    kReplicaDrain = 7,   // `replica` starts draining
    kReplicaLost = 8,    // `replica`'s drain grace ran out (request: the DrainExpiry)
  };

  Simulation(const FleetSetup& setup, EngineObserver* sink);
  Status AddComponents();
  Expected<int32_t> NewReplica(const ReplicaSetup& setup, ReplicaState state);
  void RebuildReadyLists();
  void SetState(int32_t replica, ReplicaState state);
  // A draining replica that holds nothing any more is gone.
  void MaybeGone(int32_t replica);
  // The grace of `replica`'s drain ran out: give up everything bound for it.
  void LoseReplica(int32_t replica, DrainExpiry expiry);
  // Routes a request given up by lost replica `from` again (its route there is
  // forgotten); rejected when no replica is ready.
  void Requeue(const Request& r, int32_t from, SimTime now);
  // A client's outcome, past the Forwarder's interception of given-up requests.
  void Deliver(const RequestOutcome& o);
  Status PullArrival();
  void OnArrival(Request r, SimTime now);
  void RouteRequest(const Request& r, SimTime now);
  void OnStepDone(int32_t replica);
  void OnCancelEvent(const Event& e);
  void OnEnded(const RequestOutcome& o);
  // True when nothing can happen any more but passive events.
  bool Drained() const;
  Status HandleEvents(SimTime until);
  Status CheckEnd() const;

  FleetSetup setup_;
  EngineObserver* sink_;
  FleetObserver* fleet_observer_ = nullptr;
  std::unique_ptr<Forwarder> forwarder_;
  std::vector<Replica> table_;
  std::vector<int32_t> pending_starts_;  // MaybeStart's, until the instant's events are handled
  std::vector<int32_t> ready_all_;
  std::vector<int32_t> ready_serving_;
  std::vector<int32_t> ready_prefill_;
  std::vector<bool> roles_at_creation_;  // index: PoolRole
  std::unique_ptr<Router> routers_[3];   // index: RouterSet; kPrefill and kAll only with a prefill pool
  RequestLedger ledger_;  // before components_: they declare stages as they are built
  std::vector<std::unique_ptr<FleetComponent>> components_;
  Telemetry* telemetry_ = nullptr;  // one of components_: the routers' view
  EventQueue queue_;
  RequestSource* source_ = nullptr;
  ProgressFn progress_;
  bool stop_requested_ = false;
  uint64_t handled_ = 0;
  bool started_ = false;
  // Source requests announced but not arrived (one for an open-loop source), and their
  // (arrival ns, id) in time order.
  std::unordered_map<RequestId, Request> pulled_;  // lookup only
  std::set<std::pair<int64_t, RequestId>> pulled_times_;
  bool source_told_ = false;  // a completion or a held arrival since PullArrival last looked
  std::unordered_map<RequestId, Request> pushed_;  // submitted, not arrived; lookup only
  std::set<RequestId> cancelled_before_arrival_;   // of pushed_
  std::unordered_map<RequestId, RouteInfo> routes_;           // live requests; lookup only
  std::map<RequestId, std::pair<int32_t, Request>> delayed_;  // routed, start delayed
  std::map<RequestId, GivingUp> giving_up_;  // given up by a lost replica, outcome to come
  std::optional<RequestId> requeuing_;        // the request Requeue is dispatching
  TokenFn on_token_;
  std::function<void()> event_hook_;
  std::optional<SimTime> first_arrival_;
  SimTime now_;
  int64_t requests_done_ = 0;
};

}  // namespace fleetplan
