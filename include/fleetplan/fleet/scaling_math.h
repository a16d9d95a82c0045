// Autoscaling recommendations as pure values, with no simulation in them: Kubernetes
// HPA's replica calculation and its scaling behaviour, and Knative KPA's panic mode. The
// autoscaler component (autoscaler.h) feeds them its measurements each tick.
//
// HPA (k8s pkg/controller/podautoscaler: replica_calculator.go, horizontal.go):
//   ratio    = metric per ready replica / target                     (usage ratio)
//   scale-up with not-ready replicas (pending, loading): they count as 0, so
//            ratio' = ratio × ready / (ready + not_ready) over ready + not_ready replicas
//   |ratio' − 1| <= tolerance, or a dilution that turns a scale-up into a scale-down:
//            no change (desired = current = ready + not_ready)
//   desired  = ceil(ratio' × n),  n = ready + not_ready (scale-up) or ready (scale-down)
// Behaviour, applied to that desired each tick (HpaBehavior):
//   stabilization  the recommendation is bounded by the recommendations of the last
//                  window: scale-down uses the highest in the down window (300 s by
//                  default), scale-up the lowest in the up window (0 s by default)
//   policies       per direction, the most change any policy allows (selectPolicy Max):
//                  pods:    start ± value per period
//                  percent: start × (1 ± value/100) per period (up: ceil, down: floor)
//                  where start = current − the net change in the last period
//   min/max        the result is clamped to [min_replicas, max_replicas]
// KPA panic (knative serving pkg/autoscaler/scaling/autoscaler.go):
//   desired_stable = ceil(ready × ratio over the stable window)    (60 s)
//   desired_panic  = ceil(ready × ratio over the panic window)     (6 s)
//   over threshold: desired_panic / max(ready, 1) >= panic_threshold (2.0 = 200%)
//   panic starts (or is extended) at every tick over the threshold, and ends at the
//   first tick not over it once a stable window has passed since the last one that was;
//   while panicking the decision is the highest panic desired seen since it started,
//   never below the current count: no scale-down while panicking.
// Thread model: value types; deterministic (no clocks: times are passed in).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

// One scaling policy of a direction. Values reach JSON by name: explicit, never renumber.
enum class ScalingPolicyKind : int { kPods = 0, kPercent = 1 };
struct ScalingPolicy {
  ScalingPolicyKind kind = ScalingPolicyKind::kPods;
  int64_t value = 0;  // pods, or percent
  Duration period;    // > 0
  bool operator==(const ScalingPolicy&) const = default;
};
// One direction's behaviour: its stabilization window and policies (none: unlimited).
struct ScalingRules {
  Duration stabilization;
  std::vector<ScalingPolicy> policies;
  bool operator==(const ScalingRules&) const = default;
};

struct HpaInput {
  double ratio = 0;       // metric per ready replica / target (over the metric window)
  int64_t ready = 0;
  int64_t not_ready = 0;  // pending + loading: no metric yet
  double tolerance = 0.1;
};
struct HpaRecommendation {
  int64_t desired = 0;
  double ratio = 0;           // as judged: with not-ready replicas at 0 on a scale-up
  bool held = false;          // within tolerance (or no ready replica): desired = current
};
// HPA's replica calculation. Without a ready replica there is no metric: hold.
HpaRecommendation HpaDesired(const HpaInput& in);

class HpaBehavior {
 public:
  HpaBehavior(ScalingRules up, ScalingRules down, int64_t min_replicas, int64_t max_replicas);
  struct Decision {
    int64_t replicas = 0;    // what to run now
    int64_t stabilized = 0;  // the recommendation after the stabilization windows
    // What bounded the change: "" (nothing), "scale-down stabilization",
    // "scale-up stabilization", "scale-up policy", "scale-down policy", "min_replicas",
    // "max_replicas".
    std::string limited_by;
  };
  // This tick's raw recommendation at `now` with `current` replicas running (ready and
  // not ready); records the recommendation and, when the count changes, the change.
  // REQUIRES: now non-decreasing across calls.
  Decision Next(SimTime now, int64_t desired, int64_t current);
  // A change made outside Next (panic, forecast): counts in the policies' periods.
  void RecordChange(SimTime now, int64_t delta);

 private:
  int64_t ChangeSince(SimTime since, int sign) const;  // summed +deltas (sign 1) or -deltas (-1)

  ScalingRules up_;
  ScalingRules down_;
  int64_t min_;
  int64_t max_;
  Duration history_;  // the longest window or period: older entries are dropped
  std::deque<std::pair<SimTime, int64_t>> recommendations_;
  std::deque<std::pair<SimTime, int64_t>> changes_;  // (time, replicas added (+) or removed (-))
};

struct KpaConfig {
  Duration stable_window = Sec(60);
  Duration panic_window = Sec(6);
  double panic_threshold = 2.0;
  bool operator==(const KpaConfig&) const = default;
};

class KpaPanic {
 public:
  explicit KpaPanic(KpaConfig config) : config_(config) {}
  struct Decision {
    bool panicking = false;
    bool started = false;   // this tick began a panic
    bool ended = false;     // this tick ended one
    int64_t desired = 0;    // while panicking: max(highest panic desired since it began, current)
  };
  // `panic_ratio`: the ratio over the panic window (per ready replica, / target).
  // REQUIRES: now non-decreasing across calls.
  Decision Next(SimTime now, double panic_ratio, int64_t ready, int64_t current);
  bool panicking() const { return panic_time_.has_value(); }

 private:
  KpaConfig config_;
  std::optional<SimTime> panic_time_;  // the last tick over the threshold, while panicking
  int64_t max_panic_ = 0;
};

}  // namespace fleetplan
