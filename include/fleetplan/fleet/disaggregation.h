// Disaggregation: prefill/decode pools with the KV transfer stage and its faults, as a
// fleet component (present when a replica has the prefill role; pools.h has the
// configuration and the figures).
//
// A request below the colocation threshold goes to the replica the router picks among
// all ready replicas and runs there whole. Any other is disaggregated: the router picks
// its serving replica among the ready mixed and decode ones, and the request goes
// through stages the component keeps in a Handoff until the serving replica owns it:
//   admission queue (per serving replica, FIFO: until a decode slot is predicted)
//     -> prefill replica (a copy of the request with a one-token answer)
//     -> transfer queue (per serving replica, FIFO: until BeginImport gets its blocks)
//     -> transfer (prefill replica's KvTransferLink; faults, timeout, retry)
//     -> FinishImport on the serving replica (or recompute there / reject)
// A decode slot is predicted when the serving replica's free blocks, less those
// reserved for requests already past admission, cover the request's prompt, and its
// running + importing + reserved requests stay under max_running. The router sees the
// requests on their way to a serving replica as waiting there (AddTelemetry).
//
// Invariants (CheckInvariants, recounted from the handoffs): per serving replica the
// reserved blocks and requests, the pending requests and tokens, and the members of the
// admission and transfer queues; every transfer on a link belongs to a handoff in the
// transfer stage.
// Thread model: single-threaded; deterministic (ordered maps, FIFO queues).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/kv_transfer.h"
#include "fleetplan/fleet/pools.h"

namespace fleetplan {

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kDisaggregationRow = "disaggregation";

class Disaggregation final : public FleetComponent {
 public:
  explicit Disaggregation(Simulation& sim);
  std::string_view name() const override { return "disaggregation"; }
  const StageFigures& figures() const { return stages_; }

  Status OnReplicaAdded(int32_t id) override;
  bool Dispatch(const Request& r, SimTime now) override;
  // The handoffs bound for `replica` that its engine does not hold yet, as waiting
  // requests and outstanding tokens (the emulator's metrics read them too).
  void AddTelemetry(int32_t replica, ReplicaTelemetry& t) const;
  void OnTelemetryRefresh(int32_t replica, ReplicaTelemetry& t) override { AddTelemetry(replica, t); }
  bool ConsumeOutcome(const RequestOutcome& o) override;
  bool ConsumeCancel(RequestId id, SimTime now) override;
  void AfterRelease(int32_t replica, SimTime now) override;
  // A lost serving replica's handoffs are given up; one whose prompt is still computing is
  // given up when its prefill ends (from an event of its own, outside the engine call).
  void GiveUpHeld(int32_t replica, SimTime now, std::vector<Request>& given_up) override;
  Status CheckInvariants() const override;
  void AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) override;
  void AddReport(Duration span, Json& report) const override;
  void OnEvent(const Event& e) override;

 private:
  enum class Stage : int { kAdmission, kPrefill, kTransferQueue, kTransfer };
  // This component's event codes (`replica` carries the transfer attempt where noted).
  enum Code : int32_t {
    kTransferProgress = 0,  // the link of prefill replica `replica` may have changed
    kTransferStart = 1,     // a delayed transfer of `request` starts moving (attempt)
    kTransferTimeout = 2,   // `request`'s transfer attempt is abandoned if not done (attempt)
    kHandoffDeadline = 3,   // `request`'s deadline, while it waits in a fleet queue
    kGiveUp = 4,            // `request`'s serving replica was lost: hand it to the kernel
  };
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
    bool delayed = false;         // this attempt waits faults.kv_transfer.delay first
  };
  // Per replica (indexed by id; the queues and counters of serving replicas, the link of
  // prefill ones).
  struct PerReplica {
    std::deque<RequestId> admission_queue;
    std::deque<RequestId> transfer_queue;
    int64_t reserved_blocks = 0;
    int64_t reserved_requests = 0;
    // Handoffs bound for it that its engine does not hold yet; the router sees them as
    // waiting requests and their answers as outstanding tokens.
    int64_t pending_requests = 0;
    int64_t pending_tokens = 0;
    std::optional<KvTransferLink> link;
    std::map<int64_t, RequestId> link_owner;  // transfer id -> request
    std::optional<SimTime> link_event_at;     // pending kTransferProgress
    bool lost = false;                        // serving: its drain's grace ran out
  };

  const DisaggregationConfig& config() const { return config_; }
  // Sets the handoff's stage and its request ledger entry (request_ledger.h).
  void SetStage(Handoff& h, Stage stage);
  // Forgets a handoff and releases its ledger entry.
  void Forget(std::map<RequestId, Handoff>::iterator it);
  PoolRole role(int32_t replica) const;
  bool WantsDisaggregation(const Request& r, int64_t matched_prefix_tokens) const;
  // True for a disaggregated request's prompt-only copy running on `replica`.
  bool InPrefillStage(int32_t replica, RequestId id) const;
  int64_t ImportBlocks(int32_t serving, const Request& r);
  bool DecodeSlotPredicted(int32_t serving, int64_t blocks);
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
  // Takes a handoff out of every queue, transfer and counter (not in the prefill stage)
  // and forgets it; returns its request.
  Request Detach(Handoff& h, SimTime now);
  void ReleaseReservation(Handoff& h);
  // Adds (+1) or removes (-1) a handoff from its serving replica's pending load: from its
  // arrival to its transfer's start (and again while a failed attempt waits to retry).
  void CountPending(const Handoff& h, int sign);
  // Deterministic uniform [0, 1) draw for a request's attempt (faults).
  double FaultDraw(RequestId id, int32_t attempt, uint64_t salt) const;
  PerReplica& at(int32_t replica) { return replicas_[static_cast<size_t>(replica)]; }

  Simulation& sim_;
  // FleetSetup::components' entry of kDisaggregationRow, or the defaults without one.
  const DisaggregationConfig& config_;
  std::map<RequestId, Handoff> handoffs_;  // disaggregated requests not yet imported
  std::map<RequestId, std::pair<int32_t, Request>> given_up_;  // (lost serving replica, request), kGiveUp due
  std::vector<PerReplica> replicas_;
  StageFigures stages_;
  int32_t stage_ids_[4] = {};  // by Stage: the request ledger's stage
  int32_t given_up_stage_ = 0;  // given_up_'s entries
};

}  // namespace fleetplan
