// FleetComponent: one fleet feature (telemetry, prefix beliefs, adapters, hot-prefix
// replication, prefill/decode pools with KV transfer, invalidation events), plugged
// into the simulation kernel (simulation.h).
//
// A component owns its configuration, its per-replica state (grown in OnReplicaAdded,
// so replicas may join mid-run), its events (it is their EventHandler: the kernel
// dispatches every event to the handler it names, with the component's own code), its
// invariants and its report section. The kernel calls every component at the same
// points, in the order they were added, and never asks which component it is: a new
// feature is a new component, not a branch in the kernel. Every hook has a default that
// does nothing, so a component implements only the points it cares about.
//
// Hooks in the order a request meets them:
//   OnArrival     every arrival, before any Dispatch (observers: time series)
//   Dispatch      an arrival; true = the component took the request (admission, pools)
//   Route         the decision among the candidates; a value = this decision (replication)
//   FillView      the router's per-request belief about one replica (prefixes, adapters)
//   OnRouted      a decision was booked; returns when the request may start (adapters)
//   OnDispatched  a request (or a prompt-only copy) was sent to a replica (beliefs)
//   Consume*      an engine outcome or a cancel the component owns (pools' prefill
//                 copies and handoffs); true = the kernel does nothing more with it
//   AfterRelease  a replica may have freed blocks (pools admit waiting handoffs)
//   GiveUpHeld    a replica was lost (drain grace ran out): hand back what it was owed
//   OnRequestDone  the client's outcome of a request that left the fleet (every one,
//                 routed or not, after the Consume* hooks let it through)
//   OnRequestEnded the request left the fleet (routed requests, with their route)
// A request a component keeps outside every engine (a queue, a handoff) is recorded in
// the kernel's request ledger (request_ledger.h) under a stage the component declared:
// the ledger, not a hook, tells the kernel that the run still holds requests, where a
// routed request is, whether an engine's request is a component's copy, and each
// replica's time series levels (a stage declared as a level).
// Thread model: single-threaded, owned by one Simulation; deterministic.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/event_queue.h"
#include "fleetplan/fleet/router.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

class Simulation;
struct FleetSetup;
enum class ReplicaState : int;
struct RouteInfo;
enum class ReplicaState : int;

class FleetComponent : public EventHandler {
 public:
  virtual ~FleetComponent() = default;
  virtual std::string_view name() const = 0;

  // Replica `id` joined the replica table (ids are dense and never reused); an error
  // refuses the replica.
  virtual Status OnReplicaAdded(int32_t id) { (void)id; return Status::Ok(); }
  // The simulation starts at `now` (schedule the first events).
  virtual void OnStart(SimTime now) { (void)now; }
  // Replica `id` entered `state` at `now` (its lifecycle: pending, loading, ready,
  // draining, gone); replicas of the setup start ready without a call.
  virtual void OnReplicaState(int32_t id, ReplicaState state, SimTime now) { (void)id; (void)state; (void)now; }

  virtual void OnArrival(const Request& r, SimTime now) { (void)r; (void)now; }
  virtual bool Dispatch(const Request& r, SimTime now) { (void)r; (void)now; return false; }
  virtual std::optional<RouteDecision> Route(const Request& r, SimTime now) { (void)r; (void)now; return std::nullopt; }
  virtual void FillView(const Request& r, int32_t replica, ReplicaView& view) { (void)r; (void)replica; (void)view; }
  virtual SimTime OnRouted(const Request& r, int32_t replica, SimTime now, RouteInfo& info) {
    (void)r; (void)replica; (void)info;
    return now;
  }
  virtual void OnDispatched(const Request& r, int32_t replica, int64_t tokens) { (void)r; (void)replica; (void)tokens; }
  // Telemetry refresh of `replica` (`t`: the router's view of it from now on): the
  // component adds what it holds for it that the engine does not count yet (the pools'
  // handoffs), and snapshots what its beliefs keep per refresh (adapters).
  virtual void OnTelemetryRefresh(int32_t replica, ReplicaTelemetry& t) { (void)replica; (void)t; }

  virtual bool ConsumeOutcome(const RequestOutcome& o) { (void)o; return false; }
  virtual bool ConsumeCancel(RequestId id, SimTime now) { (void)id; (void)now; return false; }
  // Simulation::Submit of an id already submitted and not arrived; true = the component
  // takes the second request and ends it (else Submit refuses it).
  virtual bool ConsumeDuplicate(const Request& r, SimTime now) { (void)r; (void)now; return false; }
  virtual void AfterRelease(int32_t replica, SimTime now) { (void)replica; (void)now; }
  // Replica `replica` was lost (its drain's grace ran out): the component gives up the
  // routed requests it holds bound for it that no engine of it holds (releasing its own
  // state), appending them to `given_up` in a deterministic order; the kernel requeues or
  // cancels them. One it cannot give up now (a prompt still computing elsewhere) it gives
  // up later through Simulation::GiveUpRequest.
  virtual void GiveUpHeld(int32_t replica, SimTime now, std::vector<Request>& given_up) {
    (void)replica; (void)now; (void)given_up;
  }
  virtual void OnRequestDone(const RequestOutcome& o) { (void)o; }
  virtual void OnRequestEnded(RequestId id, const RouteInfo& info) { (void)id; (void)info; }

  virtual Status CheckInvariants() const { return Status::Ok(); }
  // Adds the component's fields to replica `id`'s entry of report.json `replicas` and
  // `engine.replicas` (`engine` is that replica's engine entry).
  virtual void AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) {
    (void)id; (void)span; (void)figures; (void)engine;
  }
  // Adds the component's own section(s) to report.json, and its lines to the text
  // summary; both render the same figures.
  virtual void AddReport(Duration span, Json& report) const { (void)span; (void)report; }
  virtual void AddSummary(Duration span, std::vector<std::string>& lines) const { (void)span; (void)lines; }

  void OnEvent(const Event& e) override { (void)e; }
};

// The component registry: one row per feature, in the order the kernel calls them.
// Simulation::Create builds every row the setup wants: `wanted` says so for the rows
// every fleet or a shape of fleet has (telemetry, prefill pools); a row without one is
// wanted when FleetSetup::components has an entry under its name, which its `make` reads.
struct FleetComponentRow {
  std::string_view name;
  bool (*wanted)(const FleetSetup& setup) = nullptr;
  Expected<std::unique_ptr<FleetComponent>> (*make)(Simulation& sim) = nullptr;
};
const std::vector<FleetComponentRow>& FleetComponents();

}  // namespace fleetplan
