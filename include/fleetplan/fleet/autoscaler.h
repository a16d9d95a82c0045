// Autoscaler: the scenario's `autoscaling:` section as a fleet component — a pod loop
// that sizes the fleet from a token-demand metric (HPA semantics, optional KPA panic
// mode), a node loop that provisions nodes for the replicas it asks for, a replica
// lifecycle with model load times, forecast prewarming, and report.json `autoscaling`.
//
// Pod loop, every `interval` (passive events: they never keep the run alive):
//   metric   sampled every kAutoscalerSample over the ready replicas, averaged over the
//            window (`window`; with panic mode the stable and panic windows):
//              waiting_requests    requests waiting in the engines, per ready replica
//              outstanding_tokens  tokens of queued and running work not yet computed
//              kv_usage            share of a replica's KV blocks in use
//              ttft_attainment     share of the requests ended in the window whose TTFT
//                                  met their class's objective (fleet-wide; ratio =
//                                  target / attainment, 1 with no request ended)
//   ratio    = window average per ready replica / target
//   desired  = HpaDesired (tolerance, not-ready replicas as 0 on a scale-up), then
//              HpaBehavior (stabilization windows, policies, min/max) — scaling_math.h;
//              with panic mode KpaPanic may take over (no scale-down while panicking)
//   forecast the forecaster's count (a declared schedule, or a moving-window rate
//              estimate `horizon` ahead / `replica_rate`), max'ed with the reactive one
// Node loop: one node pool of `gpus_per_node` GPUs; a replica needs tp × pp GPUs on one
// node (first fit, lowest node id). A replica asked for with no free node is pending
// while a node is provisioned (`provisioning_delay`); without room under `max_nodes` it
// is not started and the scale event says so. A node is released when its last replica
// is gone (a provisioning node too, when the replicas it was for are cancelled).
// Replica lifecycle (the kernel's table): pending (node provisioning) -> loading
// (weights per rank / load_bandwidth + engine_start) -> ready -> draining (scale-down:
// drain grace, then requeue or cancel) -> gone. Scale-down picks pending replicas first,
// then loading ones (newest first), then ready ones holding the fewest requests.
// Report: replica counts per tick, scale and node events with reasons, GPU-hours (nodes
// held, replicas by state, idle), cost at `price`, each class's SLO attainment (from the
// report's classes), and the cold-start share of violations: of the requests that
// missed their class's objectives, the share that arrived while desired > ready.
// Invariants (CheckInvariants): every node's used GPUs are the GPUs of the live replicas
// placed on it; no node holds more than gpus_per_node; nodes held <= max_nodes.
// Thread model: single-threaded, owned by one Simulation; deterministic (ordered
// containers, events in (time, seq) order).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/scaling_math.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {

// The metric sampling period: Kubernetes' metrics pipeline and Knative's autoscaler
// both look at demand every second or two; a second keeps a 6 s panic window at six
// samples and costs one passive event per simulated second.
inline constexpr Duration kAutoscalerSample = Sec(1);

// Values reach JSON by name (ScalingMetricNames): explicit, never renumber.
enum class ScalingMetric : int { kWaitingRequests = 0, kOutstandingTokens = 1, kKvUsage = 2, kTtftAttainment = 3 };
const std::vector<std::string>& ScalingMetricNames();
std::string_view ScalingMetricName(ScalingMetric m);

struct NodePoolConfig {
  int64_t gpus_per_node = 8;
  int64_t initial = 1;
  int64_t max_nodes = 1;
  Duration provisioning_delay = Sec(240);
  bool operator==(const NodePoolConfig&) const = default;
};

struct ForecastStep {
  SimTime at;
  int64_t replicas = 0;
  bool operator==(const ForecastStep&) const = default;
};
struct ForecastConfig {
  // Values reach JSON by name: explicit, never renumber.
  enum class Kind : int { kNone = 0, kSchedule = 1, kMovingWindow = 2 };
  Kind kind = Kind::kNone;
  std::vector<ForecastStep> schedule;  // kSchedule: replicas needed from `at` on
  Duration lead;                       // kSchedule: asked for this long before `at`
  Duration window = Sec(60);           // kMovingWindow: rate measurement window
  Duration horizon;                    // kMovingWindow: how far ahead the estimate looks
  double replica_rate = 0;             // kMovingWindow: requests/s one replica serves
  bool operator==(const ForecastConfig&) const = default;
};

struct AutoscalingConfig {
  bool enabled = false;
  Duration interval = Sec(15);
  ScalingMetric metric = ScalingMetric::kWaitingRequests;
  double target = 0;
  Duration window = Sec(15);
  double tolerance = 0.1;
  int64_t min_replicas = 1;
  int64_t max_replicas = 1;
  ScalingRules scale_up{Duration(),
                        {{ScalingPolicyKind::kPods, 4, Sec(15)}, {ScalingPolicyKind::kPercent, 100, Sec(15)}}};
  ScalingRules scale_down{Sec(300), {{ScalingPolicyKind::kPercent, 100, Sec(15)}}};
  std::optional<KpaConfig> panic;
  NodePoolConfig nodes;
  int64_t load_bandwidth = 2'000'000'000;  // bytes per second, per rank
  Duration engine_start = Sec(30);
  Duration drain_grace = Sec(30);
  DrainExpiry drain_expiry = DrainExpiry::kRequeue;
  double price_per_gpu_hour = 0;  // 0: not priced
  ForecastConfig forecast;
  // Bound (FleetPlan): from the memory plan of the serving pool.
  int64_t gpus_per_replica = 1;        // tp × pp
  int64_t weight_bytes_per_rank = 0;   // the largest rank's weights
  Duration load_time;                  // weight_bytes_per_rank / load_bandwidth + engine_start

  // Provisioning + load + engine start: the longest a new replica takes to serve.
  Duration cold_start() const { return nodes.provisioning_delay + load_time; }
  Json ToJson() const;
  bool operator==(const AutoscalingConfig&) const = default;
};

// One row of report.json `autoscaling.timeline`: a pod-loop tick — the counts as the
// decision saw them (before its own changes) and the decision.
struct ScalingTick {
  SimTime at;
  int64_t ready = 0, loading = 0, pending = 0, draining = 0;
  int64_t desired = 0;    // the decision: behaviour over max(reactive, forecast), or panic's
  int64_t reactive = 0;   // HpaDesired on the (stable) window: the metric's recommendation
  int64_t forecast = 0;   // the forecaster's (0 without one)
  double metric = 0;      // window average per ready replica (attainment: the share)
  bool panicking = false;
};
struct ScalingEvent {
  SimTime at;
  std::string kind;  // "scale", "node"
  int64_t from = 0;
  int64_t to = 0;
  std::string reason;
};
// A replica's time in one state (timeline.json tracks, GPU-hours).
struct ReplicaStateSpan {
  int32_t replica = 0;
  ReplicaState state = ReplicaState::kReady;
  SimTime start;
  SimTime end;
};

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kAutoscalerRow = "autoscaler";

class Autoscaler final : public FleetComponent {
 public:
  explicit Autoscaler(Simulation& sim);
  std::string_view name() const override { return "autoscaler"; }

  Status OnReplicaAdded(int32_t id) override;
  void OnStart(SimTime now) override;
  void OnReplicaState(int32_t id, ReplicaState state, SimTime now) override;
  void OnArrival(const Request& r, SimTime now) override;
  void OnRequestDone(const RequestOutcome& o) override;
  Status CheckInvariants() const override;
  void AddReport(Duration span, Json& report) const override;
  void AddSummary(Duration span, std::vector<std::string>& lines) const override;
  void OnEvent(const Event& e) override;

  const std::vector<ScalingTick>& ticks() const { return ticks_; }
  const std::vector<ScalingEvent>& events() const { return events_; }
  // Every replica's state spans up to the simulation's current time, by (replica, start).
  std::vector<ReplicaStateSpan> StateSpans() const;

 private:
  enum Code : int32_t {
    kSample = 0,  // sample the metric (passive)
    kTick = 1,    // the pod and node loops decide (passive)
  };
  struct Node {
    SimTime requested;
    SimTime ready;                  // requested + provisioning_delay (initial nodes: 0)
    std::optional<SimTime> released;
    int64_t used_gpus = 0;
  };
  struct ReplicaInfo {
    int32_t node = -1;
    ReplicaState state = ReplicaState::kReady;
    SimTime since;                  // entered `state`
    Duration busy_at_since;         // engine busy time when it entered `state`
    bool released = false;          // its GPUs went back to the node (gone)
  };
  struct Sample {
    SimTime at;
    double value = 0;  // summed over ready replicas (attainment: unused)
    int64_t ready = 0;
    int64_t good = 0;   // ttft_attainment: requests ended since the last sample meeting TTFT
    int64_t ended = 0;
  };
  struct Counts {
    int64_t ready = 0, loading = 0, pending = 0, draining = 0;
    int64_t active() const { return ready + loading + pending; }
  };

  Counts Count() const;
  void TakeSample(SimTime now);
  // The window's usage ratio per ready replica over (now - window, now].
  double Ratio(SimTime now, Duration window, double* metric) const;
  int64_t ForecastDesired(SimTime now, std::string* why) const;
  void Tick(SimTime now);
  void ScaleUp(int64_t to, const Counts& c, SimTime now, const std::string& why);
  void ScaleDown(int64_t to, const Counts& c, SimTime now, const std::string& why);
  int32_t PlaceOnNode(SimTime now, std::string* node_note);
  void ReleaseIfEmpty(int32_t node, SimTime now);
  void NoteShortage(SimTime now);
  void CloseSpan(int32_t id, SimTime now);
  int64_t NodesHeld() const;

  Simulation& sim_;
  const AutoscalingConfig& config_;
  std::vector<Node> nodes_;
  std::vector<ReplicaInfo> replicas_;
  int32_t placing_node_ = -1;  // the node of the replica AddReplica is creating
  HpaBehavior behavior_;
  std::optional<KpaPanic> panic_;
  std::deque<Sample> samples_;
  int64_t good_since_sample_ = 0;
  int64_t ended_since_sample_ = 0;
  std::deque<SimTime> arrivals_;  // moving-window forecast: arrival times of the last 2 windows
  int64_t desired_ = 0;
  int64_t unplaced_ = 0;          // replicas the last tick could not start (max_nodes)
  std::vector<ScalingTick> ticks_;
  std::vector<ScalingEvent> events_;
  // Shortage (desired > ready) intervals: [start, end), the last one open while it lasts.
  std::vector<std::pair<SimTime, SimTime>> shortages_;
  bool short_ = false;
  std::vector<ClassObjectives> objectives_;  // by ClassId
  int64_t violations_ = 0;
  int64_t cold_violations_ = 0;
  std::vector<ReplicaStateSpan> closed_spans_;
};

}  // namespace fleetplan
