#include "fleetplan/fleet/scaling_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fleetplan {
namespace {

// A recommendation is never larger than this (a ratio of infinity, a division by a tiny
// attainment): the replica bounds clamp it long before.
constexpr int64_t kMaxRecommendation = 1'000'000;

int64_t CeilCount(double x) {
  if (!(x < static_cast<double>(kMaxRecommendation))) return kMaxRecommendation;
  return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(x)));
}

}  // namespace

HpaRecommendation HpaDesired(const HpaInput& in) {
  HpaRecommendation r;
  const int64_t current = in.ready + in.not_ready;
  r.desired = current;
  if (in.ready <= 0) {
    r.held = true;
    return r;
  }
  double ratio = in.ratio;
  int64_t n = in.ready;
  if (in.ratio > 1.0 && in.not_ready > 0) {
    ratio = in.ratio * static_cast<double>(in.ready) / static_cast<double>(current);
    n = current;
  }
  r.ratio = ratio;
  // Within tolerance, or a scale-up that the not-ready replicas turn into a scale-down.
  if (std::fabs(ratio - 1.0) <= in.tolerance || (in.ratio > 1.0 && ratio < 1.0)) {
    r.held = true;
    return r;
  }
  const int64_t desired = CeilCount(ratio * static_cast<double>(n));
  if ((ratio < 1.0 && desired > current) || (ratio > 1.0 && desired < current)) {
    r.held = true;
    return r;
  }
  r.desired = desired;
  return r;
}

HpaBehavior::HpaBehavior(ScalingRules up, ScalingRules down, int64_t min_replicas, int64_t max_replicas)
    : up_(std::move(up)), down_(std::move(down)), min_(min_replicas), max_(max_replicas) {
  history_ = std::max(up_.stabilization, down_.stabilization);
  for (const ScalingRules* rules : {&up_, &down_}) {
    for (const ScalingPolicy& p : rules->policies) history_ = std::max(history_, p.period);
  }
}

int64_t HpaBehavior::ChangeSince(SimTime since, int sign) const {
  int64_t sum = 0;
  for (const auto& [t, delta] : changes_) {
    if (t > since && delta * sign > 0) sum += delta * sign;
  }
  return sum;
}

void HpaBehavior::RecordChange(SimTime now, int64_t delta) {
  if (delta != 0) changes_.emplace_back(now, delta);
}

HpaBehavior::Decision HpaBehavior::Next(SimTime now, int64_t desired, int64_t current) {
  const SimTime horizon = now - history_;
  while (!recommendations_.empty() && recommendations_.front().first < horizon) recommendations_.pop_front();
  while (!changes_.empty() && changes_.front().first < horizon) changes_.pop_front();

  // Stabilization: the lowest recommendation of the up window, the highest of the down
  // window (this tick's included).
  int64_t up_rec = desired;
  int64_t down_rec = desired;
  for (const auto& [t, rec] : recommendations_) {
    if (t > now - up_.stabilization) up_rec = std::min(up_rec, rec);
    if (t > now - down_.stabilization) down_rec = std::max(down_rec, rec);
  }
  recommendations_.emplace_back(now, desired);
  Decision d;
  int64_t stabilized = std::max(current, up_rec);
  stabilized = std::min(stabilized, down_rec);
  d.stabilized = stabilized;
  if (desired < current && stabilized > desired) d.limited_by = "scale-down stabilization";
  if (desired > current && stabilized < desired) d.limited_by = "scale-up stabilization";

  int64_t result = stabilized;
  if (stabilized > current) {
    int64_t limit = up_.policies.empty() ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    for (const ScalingPolicy& p : up_.policies) {
      const SimTime since = now - p.period;
      const int64_t start = current - ChangeSince(since, 1) + ChangeSince(since, -1);
      const int64_t proposed =
          p.kind == ScalingPolicyKind::kPods
              ? start + p.value
              : CeilCount(static_cast<double>(start) * (1.0 + static_cast<double>(p.value) / 100.0));
      limit = std::max(limit, proposed);
    }
    if (result > limit) {
      result = std::max(limit, current);
      d.limited_by = "scale-up policy";
    }
    if (result > max_) {
      result = max_;
      d.limited_by = "max_replicas";
    }
  } else if (stabilized < current) {
    int64_t limit = down_.policies.empty() ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    for (const ScalingPolicy& p : down_.policies) {
      const SimTime since = now - p.period;
      const int64_t start = current + ChangeSince(since, -1) - ChangeSince(since, 1);
      const int64_t proposed =
          p.kind == ScalingPolicyKind::kPods
              ? start - p.value
              : static_cast<int64_t>(static_cast<double>(start) * (1.0 - static_cast<double>(p.value) / 100.0));
      limit = std::min(limit, proposed);
    }
    if (result < limit) {
      result = std::min(limit, current);
      d.limited_by = "scale-down policy";
    }
    if (result < min_) {
      result = min_;
      d.limited_by = "min_replicas";
    }
  }
  if (result < min_) {
    result = min_;
    d.limited_by = "min_replicas";
  }
  if (result > max_) {
    result = max_;
    d.limited_by = "max_replicas";
  }
  d.replicas = result;
  RecordChange(now, result - current);
  return d;
}

KpaPanic::Decision KpaPanic::Next(SimTime now, double panic_ratio, int64_t ready, int64_t current) {
  Decision d;
  const int64_t ready_pods = std::max<int64_t>(ready, 1);
  const double dppc = panic_ratio * static_cast<double>(ready);  // desired panic pod count
  const bool over = dppc / static_cast<double>(ready_pods) >= config_.panic_threshold;
  if (over) {
    d.started = !panic_time_.has_value();
    panic_time_ = now;
  } else if (panic_time_ && *panic_time_ + config_.stable_window < now) {
    panic_time_.reset();
    max_panic_ = 0;
    d.ended = true;
  }
  if (panic_time_) {
    max_panic_ = std::max(max_panic_, CeilCount(dppc));
    d.panicking = true;
    d.desired = std::max(max_panic_, current);
  }
  return d;
}

}  // namespace fleetplan
