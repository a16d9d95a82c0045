// Admission: classes, tenant quotas and bounded queues in front of the router, as a fleet
// component (the scenario's `admission:` section; off when absent). docs/admission.md.
//
// Every arrival gets an admission class from trusted policy — the scenario's `assign`
// rules (first match on tenant or workload class, else `default_class`), never the
// request's content. It is released into routing at once when the fleet has room and its
// tenant has quota; otherwise it waits in its class's queue, or is rejected when that
// queue is full. A released request is routed as an arrival is (later components'
// Dispatch, Route, the router), at the time it is released; its arrival stays its
// arrival, so admission waits count toward TTFT.
//
//   arrival -> class (assign rules) -> duplicate? -> reject "duplicate"
//           -> charge > quota bound? -> reject "exceeds_quota"
//           -> class queue (FIFO; bounded by max_queue; expires at max_wait)
//           -> release: in flight < capacity and the tenant's quota allows
//                order: aged requests (waited >= max_wait - aging_margin) first,
//                oldest deadline first; then by class priority, FIFO within a class
//           -> routed; counted in flight until it leaves the fleet
//
// Capacity: max_in_flight_per_replica (default: each replica's max_running) summed over
// the ready serving replicas at the moment of release, so replicas that join or leave
// move it. Tenant quota: concurrent requests, tokens in flight (a request's charge:
// prompt tokens, or prompt + output with `reserve_kv: worst-case`, held from release to
// its end) and a token rate (a token bucket of `burst` tokens refilled at `token_rate`,
// as a GCRA: the bucket's state is one theoretical arrival time, so it is exact integer
// time arithmetic).
//
// A rejection or an expiry changes no counter: a request is charged only when it is
// released. A request submitted under the id of one the component holds or has admitted
// (still live), or one not yet arrived (Simulation::Submit), ends "duplicate" without a
// charge. Rejections carry retry_after: the requests queued in the class (plus the new
// one) over the class's release rate in the last kReleaseRateWindow, at most max_wait.
//
// Invariants (CheckInvariants, recounted from the queued and the live admitted
// requests): per tenant the concurrent requests and tokens in flight, per class the
// queue members, the in-flight count; no queue longer than max_queue between events.
// Thread model: single-threaded; deterministic (ordered maps and sets).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/fleet/component.h"

namespace fleetplan {

// One admission class.
struct AdmissionClass {
  std::string name;
  int64_t priority = 0;        // larger = released first
  int64_t max_queue = 1000;    // queued requests of the class, at most
  Duration max_wait = Ms(10000);  // queued longer than this: expired
  bool worst_case_kv = false;  // charge prompt + output (else the prompt)
  // Aging: waited >= max_wait - aging_margin goes before any higher-priority request.
  // nullopt: no aging.
  std::optional<Duration> aging_margin;
};

// A tenant's quota; nullopt = no limit.
struct TenantQuota {
  std::optional<int64_t> max_concurrent;
  std::optional<int64_t> max_tokens_in_flight;
  std::optional<double> token_rate;  // tokens per second (> 0)
  int64_t burst = 0;                 // bucket size, tokens (with token_rate)
};

// The resolved configuration (FleetSetup::admission).
struct AdmissionConfig {
  bool enabled = false;
  std::vector<AdmissionClass> classes;
  // Assign rules in order: the first whose tenant or workload class matches wins.
  struct Rule {
    bool by_tenant = false;  // else by workload class
    int32_t handle = 0;      // TenantId or ClassId
    int32_t admission_class = 0;
  };
  std::vector<Rule> rules;
  int32_t default_class = 0;
  std::optional<int64_t> max_in_flight_per_replica;  // nullopt: each replica's max_running
  TenantQuota default_quota;
  std::vector<std::optional<TenantQuota>> tenant_quotas;  // by TenantId; nullopt: the default
  std::vector<std::string> tenant_names;  // by TenantId, for the report

  int32_t ClassOf(const Request& r) const;
  const TenantQuota& QuotaOf(TenantId tenant) const;
};

// The section as read (Scenario::admission): names are resolved against the workload's
// names when the run is built (ResolveAdmission), with errors located at the nodes.
struct AdmissionSpec {
  bool enabled = false;
  std::vector<AdmissionClass> classes;
  struct Rule {
    bool by_tenant = false;
    std::string name;  // tenant or workload class
    int32_t admission_class = 0;
    std::optional<YamlNode> node;  // the name's value (always set by the reader)
  };
  std::vector<Rule> rules;
  int32_t default_class = 0;
  std::optional<int64_t> max_in_flight_per_replica;
  TenantQuota default_quota;
  struct Override {
    std::string tenant;
    TenantQuota quota;
    std::optional<YamlNode> node;  // the tenant's quota (always set by the reader)
  };
  std::vector<Override> overrides;
};

Expected<AdmissionConfig> ResolveAdmission(const AdmissionSpec& spec, const WorkloadNames& names);

// Reasons a request ends in admission (RequestOutcome::reason).
inline constexpr std::string_view kReasonQueueFull = "queue_full";
inline constexpr std::string_view kReasonExpired = "expired";
inline constexpr std::string_view kReasonDuplicate = "duplicate";
inline constexpr std::string_view kReasonTenantConcurrency = "tenant_concurrency";
inline constexpr std::string_view kReasonTenantTokens = "tenant_tokens";
inline constexpr std::string_view kReasonTenantTokenRate = "tenant_token_rate";
inline constexpr std::string_view kReasonExceedsQuota = "exceeds_quota";

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kAdmissionRow = "admission";

class Admission final : public FleetComponent {
 public:
  // The window of the release rate behind retry_after: long enough to average a few
  // completions on a busy fleet, short enough to follow a change of capacity.
  static constexpr Duration kReleaseRateWindow = Ms(10000);

  explicit Admission(Simulation& sim);
  std::string_view name() const override { return "admission"; }

  // Per class figures (report.json `admission.classes`).
  struct ClassFigures {
    int64_t arrived = 0;
    int64_t admitted = 0;
    int64_t aged = 0;  // released by the aging rule ahead of a higher priority
    int64_t expired = 0;
    int64_t ended_waiting = 0;  // cancelled, or past the request's deadline, while queued
    std::map<std::string, int64_t, std::less<>> rejected;  // by reason
    std::vector<int64_t> wait_ns;  // every admitted request's queue wait (8 bytes each)
    int64_t max_queue_length = 0;
  };
  const ClassFigures& figures(int32_t admission_class) const { return classes_[static_cast<size_t>(admission_class)].figures; }
  int64_t queue_length(int32_t admission_class) const {
    return static_cast<int64_t>(classes_[static_cast<size_t>(admission_class)].queue.size());
  }
  int64_t in_flight() const { return static_cast<int64_t>(admitted_.size()); }
  int64_t capacity() const;
  // Tenant `tenant`'s live admitted requests and their charged tokens.
  int64_t tenant_concurrent(TenantId tenant) const;
  int64_t tenant_tokens_in_flight(TenantId tenant) const;
  const AdmissionConfig& config() const { return config_; }

  bool Dispatch(const Request& r, SimTime now) override;
  bool ConsumeDuplicate(const Request& r, SimTime now) override;
  bool ConsumeCancel(RequestId id, SimTime now) override;
  void OnRequestDone(const RequestOutcome& o) override;
  void OnReplicaState(int32_t replica, ReplicaState state, SimTime now) override;
  Status CheckInvariants() const override;
  void AddReport(Duration span, Json& report) const override;
  void AddSummary(Duration span, std::vector<std::string>& lines) const override;
  void OnEvent(const Event& e) override;

 private:
  enum Code : int32_t {
    kPump = 0,       // capacity or quota may have freed: release what may go
    kExpire = 1,     // `request`'s wait reaches its class's max_wait (or its deadline)
    kDuplicate = 2,  // a duplicate submitted before its original arrived arrives (`request`: serial)
  };
  struct Queued {
    Request request;
    int32_t cls = 0;
    SimTime enqueued;
    SimTime expires;        // enqueued + max_wait, or the request's deadline when earlier
    bool deadline = false;  // `expires` is the request's deadline
    int64_t charge = 0;
    uint64_t seq = 0;
    bool cancel_scheduled = false;  // its client's cancel is queued (ScheduleCancel)
  };
  struct Live {
    int32_t cls = 0;
    TenantId tenant = kNoTenant;
    int64_t charge = 0;
  };
  struct TenantState {
    int64_t concurrent = 0;
    int64_t tokens = 0;
    SimTime tat;  // GCRA theoretical arrival time of the token bucket
    int64_t arrived = 0;
    int64_t admitted = 0;
    int64_t rejected = 0;  // rejected or expired
    int64_t peak_concurrent = 0;
    int64_t peak_tokens = 0;
  };
  struct ClassState {
    std::set<std::pair<uint64_t, RequestId>> queue;  // (seq, id): FIFO
    std::deque<int64_t> releases_ns;                 // within kReleaseRateWindow
    ClassFigures figures;
  };
  // Why a request may not be released now; empty when it may. `wake` is lowered to the
  // time a token-rate wait ends.
  std::string_view Blocked(TenantId tenant, int64_t charge, SimTime now, std::optional<SimTime>* wake) const;
  Duration RateCost(const TenantQuota& q, int64_t tokens) const;
  TenantState& tenant_state(TenantId tenant);
  const TenantState* find_tenant(TenantId tenant) const;
  int64_t ChargeOf(const Request& r, int32_t cls) const;
  // Releases what may go, best first, while the fleet has room.
  void Pump(SimTime now);
  // The queued request to release next (null: none may go now).
  const Queued* Pick(SimTime now, std::optional<SimTime>* wake, bool* aged) const;
  void Release(const Request& r, int32_t cls, int64_t charge, SimTime since, SimTime now);
  void SchedulePump(SimTime at);
  void Reject(const Request& r, int32_t cls, std::string_view reason, SimTime now, bool retry);
  void EndQueued(std::map<RequestId, Queued>::iterator it, RequestStatus status, std::string_view reason, SimTime now);
  Duration RetryAfter(int32_t cls, SimTime now);
  void NoteQueueLength(int32_t cls);
  // Forgets a queued request and releases its request ledger entry (request_ledger.h).
  void Forget(std::map<RequestId, Queued>::iterator it);

  Simulation& sim_;
  AdmissionConfig config_;
  std::vector<ClassState> classes_;
  std::vector<int32_t> by_priority_;  // class indexes, highest priority first (ties: declared order)
  std::map<RequestId, Queued> queued_;
  std::map<RequestId, Live> admitted_;
  std::vector<TenantState> tenants_;  // index: tenant + 1 (0: requests without a tenant)
  int32_t queue_stage_ = 0;  // the request ledger's stage of the class queues
  std::map<uint64_t, Request> duplicates_;  // submitted before the original arrived; by serial
  uint64_t seq_ = 0;
  uint64_t duplicate_serial_ = 0;
  std::set<int64_t> pumps_;  // scheduled kPump times
  std::optional<SimTime> first_arrival_;
  bool ending_ = false;   // inside our own EndInFleet: the outcome is not an admitted request's
  bool pumping_ = false;  // inside Pump: a release's synchronous end schedules, not recurses
  int64_t max_in_flight_ = 0;
};

}  // namespace fleetplan
