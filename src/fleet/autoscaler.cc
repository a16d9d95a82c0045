#include "fleetplan/fleet/autoscaler.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fleetplan/core/units_parse.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/metrics/slo.h"

namespace fleetplan {
namespace {

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> names = {"waiting_requests", "outstanding_tokens", "kv_usage",
                                                 "ttft_attainment"};
  return names;
}

// The attainment a ttft_attainment ratio divides by at least: a window where every
// request missed asks for target / 1% of the replicas (then the bounds).
constexpr double kMinAttainment = 0.01;

double Hours(Duration d) { return d.seconds() / 3600.0; }
double Cents(double money) { return std::round(money * 100.0) / 100.0; }

// A metric value in a reason: shares and small counts with three decimals, large ones whole.
std::string MetricText(double v) { return v < 10 ? fmt::format("{:.3f}", v) : fmt::format("{:.0f}", v); }

Json RulesJson(const ScalingRules& r) {
  Json policies = Json::array();
  for (const ScalingPolicy& p : r.policies) {
    policies.push_back({{p.kind == ScalingPolicyKind::kPods ? "pods" : "percent", p.value},
                        {"period_s", p.period.seconds()}});
  }
  return Json{{"stabilization_s", r.stabilization.seconds()}, {"policies", std::move(policies)}};
}

bool HasObjectives(const ClassObjectives& o) {
  return o.ttft || o.tpot || o.itl_max || o.e2e || !o.e2e_by_output.empty();
}

}  // namespace

const std::vector<std::string>& ScalingMetricNames() { return MetricNames(); }
std::string_view ScalingMetricName(ScalingMetric m) { return MetricNames()[static_cast<size_t>(m)]; }

Json AutoscalingConfig::ToJson() const {
  Json j{{"interval_s", interval.seconds()},
         {"metric", std::string(ScalingMetricName(metric))},
         {"target", target},
         {"window_s", window.seconds()},
         {"tolerance", tolerance},
         {"min_replicas", min_replicas},
         {"max_replicas", max_replicas},
         {"scale_up", RulesJson(scale_up)},
         {"scale_down", RulesJson(scale_down)},
         {"nodes",
          {{"gpus_per_node", nodes.gpus_per_node},
           {"initial", nodes.initial},
           {"max_nodes", nodes.max_nodes},
           {"provisioning_delay_s", nodes.provisioning_delay.seconds()}}},
         {"gpus_per_replica", gpus_per_replica},
         {"weight_bytes_per_rank", weight_bytes_per_rank},
         {"load_bandwidth_bytes_per_s", load_bandwidth},
         {"engine_start_s", engine_start.seconds()},
         {"load_time_s", load_time.seconds()},
         {"cold_start_s", cold_start().seconds()},
         {"drain", {{"grace_s", drain_grace.seconds()}, {"expiry", std::string(DrainExpiryName(drain_expiry))}}},
         {"price_per_gpu_hour", price_per_gpu_hour}};
  j["panic"] = panic ? Json{{"stable_window_s", panic->stable_window.seconds()},
                            {"panic_window_s", panic->panic_window.seconds()},
                            {"threshold", panic->panic_threshold}}
                     : Json();
  switch (forecast.kind) {
    case ForecastConfig::Kind::kNone: j["forecast"] = Json(); break;
    case ForecastConfig::Kind::kSchedule: {
      Json steps = Json::array();
      for (const ForecastStep& s : forecast.schedule) steps.push_back({{"at_s", s.at.seconds()}, {"replicas", s.replicas}});
      j["forecast"] = {{"kind", "schedule"}, {"schedule", std::move(steps)}, {"lead_s", forecast.lead.seconds()}};
      break;
    }
    case ForecastConfig::Kind::kMovingWindow:
      j["forecast"] = {{"kind", "moving-window"},
                       {"window_s", forecast.window.seconds()},
                       {"horizon_s", forecast.horizon.seconds()},
                       {"replica_rate", forecast.replica_rate}};
      break;
  }
  return j;
}


Autoscaler::Autoscaler(Simulation& sim)
    : sim_(sim),
      config_(*sim.setup().components.Find<AutoscalingConfig>(kAutoscalerRow)),
      behavior_(config_.scale_up, config_.scale_down, config_.min_replicas, config_.max_replicas) {
  if (config_.panic) panic_.emplace(*config_.panic);
  for (int64_t i = 0; i < config_.nodes.initial; ++i) nodes_.push_back(Node{SimTime(), SimTime(), std::nullopt, 0});
  objectives_ = sim.setup().classes.objectives;
}

Status Autoscaler::OnReplicaAdded(int32_t id) {
  const int64_t g = config_.gpus_per_replica;
  int32_t node = placing_node_;
  if (node < 0) {
    // A replica of the setup (ready at the start): the first node with room.
    for (size_t n = 0; n < nodes_.size() && node < 0; ++n) {
      if (!nodes_[n].released && nodes_[n].used_gpus + g <= config_.nodes.gpus_per_node) node = static_cast<int32_t>(n);
    }
    if (node < 0) {
      return InvalidInput(fmt::format("replica {} (tp x pp = {} GPUs) finds no room on the {} initial nodes of {} GPUs",
                                      id, g, config_.nodes.initial, config_.nodes.gpus_per_node));
    }
  }
  nodes_[static_cast<size_t>(node)].used_gpus += g;
  ReplicaInfo info;
  info.node = node;
  info.state = sim_.state(id);
  info.since = sim_.now();
  replicas_.push_back(info);
  return Status::Ok();
}

void Autoscaler::OnStart(SimTime now) {
  sim_.queue().Push(now + kAutoscalerSample, this, kSample, -1, -1, /*passive=*/true);
  sim_.queue().Push(now + config_.interval, this, kTick, -1, -1, /*passive=*/true);
}

void Autoscaler::OnEvent(const Event& e) {
  switch (static_cast<Code>(e.code)) {
    case kSample:
      TakeSample(e.time);
      sim_.queue().Push(e.time + kAutoscalerSample, this, kSample, -1, -1, /*passive=*/true);
      break;
    case kTick:
      Tick(e.time);
      sim_.queue().Push(e.time + config_.interval, this, kTick, -1, -1, /*passive=*/true);
      break;
  }
}

Autoscaler::Counts Autoscaler::Count() const {
  Counts c;
  for (const ReplicaInfo& r : replicas_) {
    switch (r.state) {
      case ReplicaState::kReady: ++c.ready; break;
      case ReplicaState::kLoading: ++c.loading; break;
      case ReplicaState::kPending: ++c.pending; break;
      case ReplicaState::kDraining: ++c.draining; break;
      case ReplicaState::kGone: break;
    }
  }
  return c;
}

void Autoscaler::TakeSample(SimTime now) {
  Sample s;
  s.at = now;
  for (const int32_t id : sim_.ready_serving()) {
    const Engine& e = sim_.replica(id);
    ++s.ready;
    switch (config_.metric) {
      case ScalingMetric::kWaitingRequests: s.value += static_cast<double>(e.waiting_count()); break;
      case ScalingMetric::kOutstandingTokens: s.value += static_cast<double>(e.outstanding_tokens()); break;
      case ScalingMetric::kKvUsage:
        s.value += static_cast<double>(e.pool().used_count()) / static_cast<double>(std::max<int64_t>(1, e.pool().total()));
        break;
      case ScalingMetric::kTtftAttainment: break;
    }
  }
  s.good = good_since_sample_;
  s.ended = ended_since_sample_;
  good_since_sample_ = 0;
  ended_since_sample_ = 0;
  samples_.push_back(s);
  Duration keep = config_.window;
  if (config_.panic) keep = std::max(keep, config_.panic->stable_window);
  while (!samples_.empty() && samples_.front().at <= now - keep) samples_.pop_front();
}

double Autoscaler::Ratio(SimTime now, Duration window, double* metric) const {
  if (config_.metric == ScalingMetric::kTtftAttainment) {
    int64_t good = 0;
    int64_t ended = 0;
    for (const Sample& s : samples_) {
      if (s.at <= now - window) continue;
      good += s.good;
      ended += s.ended;
    }
    if (ended == 0) {
      *metric = 1.0;
      return 1.0;  // nothing ended: no evidence either way
    }
    const double attainment = static_cast<double>(good) / static_cast<double>(ended);
    *metric = attainment;
    return config_.target / std::max(attainment, kMinAttainment);
  }
  double sum = 0;
  int64_t n = 0;
  for (const Sample& s : samples_) {
    if (s.at <= now - window || s.ready == 0) continue;
    sum += s.value / static_cast<double>(s.ready);
    ++n;
  }
  *metric = n > 0 ? sum / static_cast<double>(n) : 0.0;
  return *metric / config_.target;
}

int64_t Autoscaler::ForecastDesired(SimTime now, std::string* why) const {
  const ForecastConfig& f = config_.forecast;
  switch (f.kind) {
    case ForecastConfig::Kind::kNone: return 0;
    case ForecastConfig::Kind::kSchedule: {
      // The most any step in effect during [now, now + lead] asks for: a step is asked
      // for `lead` ahead, and held until the next one takes effect.
      int64_t replicas = 0;
      const ForecastStep* step = nullptr;
      for (size_t i = 0; i < f.schedule.size(); ++i) {
        const ForecastStep& s = f.schedule[i];
        const bool started = s.at <= now + f.lead;
        const bool over = i + 1 < f.schedule.size() && f.schedule[i + 1].at <= now;
        if (started && !over && s.replicas > replicas) {
          replicas = s.replicas;
          step = &s;
        }
      }
      if (step != nullptr) {
        *why = fmt::format("forecast schedule: {} replicas from {:g} s (asked for {:.1f} s ahead)", step->replicas,
                           step->at.seconds(), f.lead.seconds());
      }
      return std::min(replicas, config_.max_replicas);
    }
    case ForecastConfig::Kind::kMovingWindow: {
      const double w = f.window.seconds();
      int64_t recent = 0;
      int64_t before = 0;
      for (const SimTime t : arrivals_) {
        if (t > now - f.window) {
          ++recent;
        } else if (t > now - f.window - f.window) {
          ++before;
        }
      }
      const double rate = static_cast<double>(recent) / w;
      // The trend needs two whole windows of history.
      const bool trend = now - SimTime() >= f.window + f.window;
      const double slope = trend ? (rate - static_cast<double>(before) / w) / w : 0.0;
      const double predicted = std::max(0.0, rate + slope * f.horizon.seconds());
      const auto replicas = static_cast<int64_t>(std::ceil(predicted / f.replica_rate));
      *why = fmt::format("forecast: {:.2f}/s now, {:.2f}/s predicted {:g} s ahead at {:g}/s per replica", rate,
                         predicted, f.horizon.seconds(), f.replica_rate);
      return std::min(replicas, config_.max_replicas);
    }
  }
  return 0;
}

void Autoscaler::Tick(SimTime now) {
  const Counts c = Count();
  const int64_t current = c.active();
  double metric = 0;
  const Duration window = config_.panic ? config_.panic->stable_window : config_.window;
  const double ratio = Ratio(now, window, &metric);
  const HpaRecommendation rec = HpaDesired({ratio, c.ready, c.pending + c.loading, config_.tolerance});
  const int64_t reactive = rec.desired;
  std::string why =
      fmt::format("{} {}{} vs target {:g} (ratio {:.2f}{}{}): recommends {}", ScalingMetricName(config_.metric),
                  MetricText(metric), config_.metric == ScalingMetric::kTtftAttainment ? "" : " per ready replica", config_.target,
                  rec.ratio, c.pending + c.loading > 0 && ratio > 1.0 ? ", not-ready replicas at 0" : "",
                  rec.held ? ", within tolerance" : "", rec.desired);
  // The forecast is one more recommendation (as a scheduled metric is to an HPA): the
  // higher of the two goes through the stabilization windows and the policies.
  std::string forecast_why;
  const int64_t forecast = ForecastDesired(now, &forecast_why);
  if (forecast > reactive) why = forecast_why + "; " + why;
  const HpaBehavior::Decision d = behavior_.Next(now, std::max(reactive, forecast), current);
  int64_t desired = d.replicas;
  if (!d.limited_by.empty()) why += fmt::format(", {} gives {}", d.limited_by, d.replicas);
  bool panicking = false;
  if (panic_) {
    double panic_metric = 0;
    const double panic_ratio = Ratio(now, config_.panic->panic_window, &panic_metric);
    const KpaPanic::Decision p = panic_->Next(now, panic_ratio, c.ready, current);
    panicking = p.panicking;
    if (p.started) {
      events_.push_back({now, "panic", current, p.desired,
                         fmt::format("panic: {} over the {:g} s window is {:.2f}x the target on {} ready",
                                     MetricText(panic_metric),
                                     config_.panic->panic_window.seconds(), panic_ratio, c.ready)});
    }
    if (p.ended) {
      events_.push_back({now, "panic", current, desired,
                         fmt::format("panic over: {:g} s without exceeding {:g}x", config_.panic->stable_window.seconds(),
                                     config_.panic->panic_threshold)});
    }
    if (p.panicking) {
      // Panic takes over from the stable decision: the highest panic count since it
      // began (never below the current count), or the stable one when that is higher.
      const int64_t panic_desired = std::clamp(p.desired, config_.min_replicas, config_.max_replicas);
      if (panic_desired > desired) {
        why = fmt::format("panic: {} {} over {:g} s ({:.2f}x target): holds the highest panic count {}",
                          ScalingMetricName(config_.metric), MetricText(panic_metric), config_.panic->panic_window.seconds(),
                          panic_ratio, p.desired);
      }
      desired = std::max(desired, panic_desired);
      behavior_.RecordChange(now, desired - d.replicas);
    }
  }
  desired_ = desired;
  if (desired > current) {
    ScaleUp(desired, c, now, why);
  } else if (desired < current) {
    ScaleDown(desired, c, now, why);
  }
  ticks_.push_back({now, c.ready, c.loading, c.pending, c.draining, desired, reactive, forecast, metric, panicking});
  NoteShortage(now);
}

int64_t Autoscaler::NodesHeld() const {
  int64_t n = 0;
  for (const Node& node : nodes_) n += node.released ? 0 : 1;
  return n;
}

int32_t Autoscaler::PlaceOnNode(SimTime now, std::string* note) {
  const int64_t g = config_.gpus_per_replica;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    if (node.released || node.used_gpus + g > config_.nodes.gpus_per_node) continue;
    if (node.ready > now) {
      *note = fmt::format("pending on node {} (provisioning, up in {:.1f} s, then loading {:.1f} s)", n,
                          (node.ready - now).seconds(), config_.load_time.seconds());
    }
    return static_cast<int32_t>(n);
  }
  std::vector<std::string> held;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!nodes_[n].released) held.push_back(fmt::format("{}: {}/{}", n, nodes_[n].used_gpus, config_.nodes.gpus_per_node));
  }
  if (NodesHeld() >= config_.nodes.max_nodes) return -1;
  const auto id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(Node{now, now + config_.nodes.provisioning_delay, std::nullopt, 0});
  events_.push_back({now, "node", NodesHeld() - 1, NodesHeld(),
                     fmt::format("no free node (GPUs in use {}): provisioning node {}, ready in {:g} s",
                                 fmt::join(held, ", "), id, config_.nodes.provisioning_delay.seconds())});
  *note = fmt::format("pending: no free node, provisioning node {} (up in {:.1f} s, then loading {:.1f} s)", id,
                      config_.nodes.provisioning_delay.seconds(), config_.load_time.seconds());
  return id;
}

void Autoscaler::ScaleUp(int64_t to, const Counts& c, SimTime now, const std::string& why) {
  const int64_t from = c.active();
  // What each new replica waits for, grouped: "replicas 5, 6 pending on node 2 (...)".
  std::vector<std::pair<std::string, std::vector<int32_t>>> groups;
  std::string unplaced;
  int64_t started = 0;
  for (int64_t k = from; k < to; ++k) {
    std::string note;
    const int32_t node = PlaceOnNode(now, &note);
    if (node < 0) {
      unplaced_ = to - k;
      unplaced = fmt::format("; no free node and max_nodes {} reached: {} not started", config_.nodes.max_nodes,
                             unplaced_);
      break;
    }
    const SimTime at = std::max(now, nodes_[static_cast<size_t>(node)].ready);
    if (note.empty()) note = fmt::format("loading on free nodes, ready in {:.1f} s", config_.load_time.seconds());
    placing_node_ = node;
    const Expected<int32_t> id = sim_.AddReplica(sim_.setup().replicas[0], at, config_.load_time);
    placing_node_ = -1;
    FP_ASSERT(id.ok());  // the role and times are the fleet's own
    if (groups.empty() || groups.back().first != note) groups.emplace_back(note, std::vector<int32_t>{});
    groups.back().second.push_back(*id);
    ++started;
  }
  if (started == to - from) unplaced_ = 0;
  std::string reason = why;
  for (const auto& [note, ids] : groups) {
    reason += fmt::format("; replica{} {} {}", ids.size() > 1 ? "s" : "", fmt::join(ids, ", "), note);
  }
  reason += unplaced;
  events_.push_back({now, "scale", from, from + started, std::move(reason)});
}

void Autoscaler::ScaleDown(int64_t to, const Counts& c, SimTime now, const std::string& why) {
  // Victims: pending first, then loading (newest first), then ready holding the fewest
  // requests (newest first on ties).
  struct Candidate {
    int rank;
    int64_t load;
    int32_t id;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    switch (replicas_[i].state) {
      case ReplicaState::kPending: candidates.push_back({0, 0, id}); break;
      case ReplicaState::kLoading: candidates.push_back({1, 0, id}); break;
      case ReplicaState::kReady: candidates.push_back({2, sim_.replica(id).live_requests(), id}); break;
      default: break;
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.load != b.load) return a.load < b.load;
    return a.id > b.id;
  });
  const int64_t from = c.active();
  const int64_t n = std::min<int64_t>(from - to, static_cast<int64_t>(candidates.size()));
  std::vector<std::string> names;
  for (int64_t k = 0; k < n; ++k) {
    const Candidate& v = candidates[static_cast<size_t>(k)];
    const Status st = sim_.DrainReplica(v.id, now, config_.drain_grace, config_.drain_expiry);
    FP_ASSERT(st.ok());  // a replica of the table, now, a mixed replica
    names.push_back(fmt::format("{} ({})", v.id, ReplicaStateName(replicas_[static_cast<size_t>(v.id)].state)));
  }
  events_.push_back({now, "scale", from, from - n,
                     fmt::format("{}; drains {} (grace {:g} s, then {})", why, fmt::join(names, ", "),
                                 config_.drain_grace.seconds(), DrainExpiryName(config_.drain_expiry))});
}

void Autoscaler::ReleaseIfEmpty(int32_t node, SimTime now) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (n.released || n.used_gpus != 0) return;
  n.released = now;
  events_.push_back({now, "node", NodesHeld() + 1, NodesHeld(), fmt::format("node {} released: its last replica is gone", node)});
}

void Autoscaler::CloseSpan(int32_t id, SimTime now) {
  const ReplicaInfo& r = replicas_[static_cast<size_t>(id)];
  if (now > r.since) closed_spans_.push_back({id, r.state, r.since, now});
}

void Autoscaler::OnReplicaState(int32_t id, ReplicaState state, SimTime now) {
  CloseSpan(id, now);
  ReplicaInfo& r = replicas_[static_cast<size_t>(id)];
  r.state = state;
  r.since = now;
  if (state == ReplicaState::kGone && !r.released) {
    r.released = true;
    nodes_[static_cast<size_t>(r.node)].used_gpus -= config_.gpus_per_replica;
    ReleaseIfEmpty(r.node, now);
  }
  NoteShortage(now);
}

void Autoscaler::NoteShortage(SimTime now) {
  const bool shortage = desired_ > Count().ready;
  if (shortage == short_) return;
  short_ = shortage;
  if (shortage) {
    shortages_.emplace_back(now, SimTime::Max());
  } else {
    shortages_.back().second = now;
  }
}

void Autoscaler::OnArrival(const Request& r, SimTime now) {
  (void)r;
  if (config_.forecast.kind != ForecastConfig::Kind::kMovingWindow) return;
  arrivals_.push_back(now);
  const SimTime keep = now - config_.forecast.window - config_.forecast.window;
  while (!arrivals_.empty() && arrivals_.front() <= keep) arrivals_.pop_front();
}

void Autoscaler::OnRequestDone(const RequestOutcome& o) {
  const auto c = static_cast<size_t>(o.class_id);
  if (c >= objectives_.size() || !HasObjectives(objectives_[c])) return;
  const ClassObjectives& obj = objectives_[c];
  if (obj.ttft) {
    ++ended_since_sample_;
    if (o.first_token && *o.first_token - o.arrival <= *obj.ttft) ++good_since_sample_;
  }
  if (Evaluate(ToRequestRecord(o), obj).qualified) return;
  ++violations_;
  // Arrived in a shortage: the last interval starting at or before the arrival.
  const auto it = std::upper_bound(shortages_.begin(), shortages_.end(), o.arrival,
                                   [](SimTime t, const std::pair<SimTime, SimTime>& s) { return t < s.first; });
  if (it != shortages_.begin() && o.arrival < std::prev(it)->second) ++cold_violations_;
}

Status Autoscaler::CheckInvariants() const {
  std::vector<int64_t> used(nodes_.size(), 0);
  for (const ReplicaInfo& r : replicas_) {
    if (!r.released) used[static_cast<size_t>(r.node)] += config_.gpus_per_replica;
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (used[n] != nodes_[n].used_gpus) {
      return InternalError(fmt::format("autoscaler: node {} counts {} GPUs in use; its replicas hold {}", n,
                                       nodes_[n].used_gpus, used[n]));
    }
    if (used[n] > config_.nodes.gpus_per_node || (nodes_[n].released && used[n] != 0)) {
      return InternalError(fmt::format("autoscaler: node {} holds {} GPUs of {}{}", n, used[n],
                                       config_.nodes.gpus_per_node, nodes_[n].released ? " after its release" : ""));
    }
  }
  if (NodesHeld() > config_.nodes.max_nodes) {
    return InternalError(fmt::format("autoscaler: {} nodes held, max_nodes {}", NodesHeld(), config_.nodes.max_nodes));
  }
  for (size_t i = 0; i < replicas_.size(); ++i) {
    if (replicas_[i].state != sim_.state(static_cast<int32_t>(i))) {
      return InternalError(fmt::format("autoscaler: replica {} is {} in the table but {} here", i,
                                       ReplicaStateName(sim_.state(static_cast<int32_t>(i))),
                                       ReplicaStateName(replicas_[i].state)));
    }
  }
  return Status::Ok();
}

std::vector<ReplicaStateSpan> Autoscaler::StateSpans() const {
  std::vector<ReplicaStateSpan> spans = closed_spans_;
  const SimTime now = sim_.now();
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const ReplicaInfo& r = replicas_[i];
    if (r.state != ReplicaState::kGone && now > r.since) {
      spans.push_back({static_cast<int32_t>(i), r.state, r.since, now});
    }
  }
  std::sort(spans.begin(), spans.end(), [](const ReplicaStateSpan& a, const ReplicaStateSpan& b) {
    return std::tie(a.replica, a.start) < std::tie(b.replica, b.start);
  });
  return spans;
}

void Autoscaler::AddReport(Duration span, Json& report) const {
  (void)span;
  const SimTime end = sim_.now();
  const int64_t g = config_.gpus_per_replica;
  Json j;
  j["config"] = config_.ToJson();
  // Counts per tick, one column per series (as report.json `timeseries`).
  Json timeline;
  std::vector<double> at_s, metric;
  std::vector<int64_t> ready, loading, pending, draining, desired, reactive, forecast;
  std::vector<bool> panicking;
  for (const ScalingTick& t : ticks_) {
    at_s.push_back(t.at.seconds());
    ready.push_back(t.ready);
    loading.push_back(t.loading);
    pending.push_back(t.pending);
    draining.push_back(t.draining);
    desired.push_back(t.desired);
    reactive.push_back(t.reactive);
    forecast.push_back(t.forecast);
    metric.push_back(RoundForReport(t.metric, 6));
    panicking.push_back(t.panicking);
  }
  timeline["at_s"] = at_s;
  timeline["ready"] = ready;
  timeline["loading"] = loading;
  timeline["pending"] = pending;
  timeline["draining"] = draining;
  timeline["desired"] = desired;
  timeline["reactive"] = reactive;
  timeline["forecast"] = forecast;
  timeline["metric"] = metric;
  timeline["panicking"] = panicking;
  j["timeline"] = std::move(timeline);
  Json events = Json::array();
  for (const ScalingEvent& e : events_) {
    events.push_back({{"at_s", e.at.seconds()}, {"kind", e.kind}, {"from", e.from}, {"to", e.to}, {"reason", e.reason}});
  }
  j["events"] = std::move(events);
  // GPU-hours: nodes from their request to their release (or the end); replicas by state.
  Duration node_time;
  int64_t peak_nodes = config_.nodes.initial;
  for (const Node& n : nodes_) node_time += n.released.value_or(end) - n.requested;
  peak_nodes = std::max<int64_t>(peak_nodes, static_cast<int64_t>(nodes_.size()));
  Duration by_state[5];
  for (const ReplicaStateSpan& s : StateSpans()) by_state[static_cast<int>(s.state)] += s.end - s.start;
  Duration busy;
  for (int32_t i = 0; i < sim_.replica_count(); ++i) busy += sim_.replica(i).stats().busy;
  const double node_gpu_h = Hours(node_time) * static_cast<double>(config_.nodes.gpus_per_node);
  Duration replica_time;
  for (const Duration& d : by_state) replica_time += d;
  const double replica_gpu_h = Hours(replica_time) * static_cast<double>(g);
  const double idle_gpu_h = Hours(replica_time - busy) * static_cast<double>(g);
  Json states;
  for (int s = 0; s < 4; ++s) {
    states[std::string(ReplicaStateName(static_cast<ReplicaState>(s)))] =
        RoundForReport(Hours(by_state[s]) * static_cast<double>(g), 6);
  }
  j["gpu_hours"] = {{"nodes", RoundForReport(node_gpu_h, 6)},
                    {"replicas", RoundForReport(replica_gpu_h, 6)},
                    {"by_state", std::move(states)},
                    {"idle", RoundForReport(idle_gpu_h, 6)},
                    {"unallocated", RoundForReport(node_gpu_h - replica_gpu_h, 6)}};
  j["cost"] = config_.price_per_gpu_hour > 0
                  ? Json{{"price_per_gpu_hour", config_.price_per_gpu_hour},
                         {"total", Cents(node_gpu_h * config_.price_per_gpu_hour)},
                         {"idle", Cents(idle_gpu_h * config_.price_per_gpu_hour)}}
                  : Json();
  int64_t peak_ready = 0;
  int64_t peak_desired = 0;
  for (const ScalingTick& t : ticks_) {
    peak_ready = std::max(peak_ready, t.ready);
    peak_desired = std::max(peak_desired, t.desired);
  }
  int64_t scale_events = 0;
  for (const ScalingEvent& e : events_) scale_events += e.kind == "scale" ? 1 : 0;
  int64_t requeued = 0, cancelled = 0, rejected = 0;
  for (int32_t i = 0; i < sim_.replica_count(); ++i) {
    requeued += sim_.figures(i).drain_requeued;
    cancelled += sim_.figures(i).drain_cancelled;
    rejected += sim_.figures(i).drain_rejected;
  }
  j["summary"] = {{"replicas_created", static_cast<int64_t>(replicas_.size())},
                  {"peak_ready", peak_ready},
                  {"peak_desired", peak_desired},
                  {"scale_events", scale_events},
                  {"nodes_provisioned", static_cast<int64_t>(nodes_.size()) - config_.nodes.initial},
                  {"peak_nodes", peak_nodes},
                  {"drain", {{"requeued", requeued}, {"cancelled", cancelled}, {"rejected", rejected}}}};
  // The report's own attainment per class (classes.<name>.slo_attainment), beside the
  // share of violations that arrived while the fleet was short of its desired count.
  Json attainment = Json::object();
  if (report.contains("classes")) {
    for (const auto& [name, c] : report["classes"].items()) {
      if (c.contains("slo_attainment")) attainment[name] = c["slo_attainment"];
    }
  }
  j["slo_attainment"] = std::move(attainment);
  Duration short_time;
  for (const auto& [a, b] : shortages_) short_time += std::min(b, end) - a;
  j["violations"] = {{"total", violations_},
                     {"arrived_short", cold_violations_},
                     {"cold_start_share",
                      violations_ > 0 ? Json(RoundForReport(static_cast<double>(cold_violations_) /
                                                            static_cast<double>(violations_), 6))
                                      : Json()},
                     {"short_s", short_time.seconds()}};
  report["autoscaling"] = std::move(j);
}

void Autoscaler::AddSummary(Duration span, std::vector<std::string>& lines) const {
  Json r;
  AddReport(span, r);
  const Json& a = r["autoscaling"];
  const Json& s = a["summary"];
  lines.push_back(fmt::format("autoscaling: {} target {:g}, every {:g} s{}{}: peak {} ready (desired {}), {} scale "
                              "events, {} replicas created, {} nodes provisioned (peak {} of {})\n",
                              ScalingMetricName(config_.metric), config_.target, config_.interval.seconds(),
                              config_.panic ? ", panic mode" : "",
                              config_.forecast.kind == ForecastConfig::Kind::kNone ? "" : ", forecast",
                              s["peak_ready"].get<int64_t>(), s["peak_desired"].get<int64_t>(),
                              s["scale_events"].get<int64_t>(), s["replicas_created"].get<int64_t>(),
                              s["nodes_provisioned"].get<int64_t>(), s["peak_nodes"].get<int64_t>(),
                              config_.nodes.max_nodes));
  // The scale events themselves, as docs/autoscaling.md shows them: the first kShownEvents.
  constexpr size_t kShownEvents = 20;
  const Json& events = a["events"];
  for (size_t i = 0; i < events.size() && i < kShownEvents; ++i) {
    const Json& e = events[i];
    lines.push_back(fmt::format("  {:.1f} {:<5} {:>3} -> {}  {}\n", e["at_s"].get<double>(),
                                e["kind"].get<std::string>(), e["from"].get<int64_t>(), e["to"].get<int64_t>(),
                                e["reason"].get<std::string>()));
  }
  if (events.size() > kShownEvents) {
    lines.push_back(fmt::format("  ... {} more (report.json autoscaling.events)\n", events.size() - kShownEvents));
  }
  const Json& h = a["gpu_hours"];
  std::string cost;
  if (!a["cost"].is_null()) {
    cost = fmt::format(", cost ${:.2f} at ${:.2f}/GPU-h (idle ${:.2f})", a["cost"]["total"].get<double>(),
                       config_.price_per_gpu_hour, a["cost"]["idle"].get<double>());
  }
  lines.push_back(fmt::format("autoscaling: {:.2f} GPU-hours on nodes, {:.2f} in replicas, {:.2f} idle "
                              "(pending, loading or not stepping){}; cold start {:.1f} s (load {:.1f} s)\n",
                              h["nodes"].get<double>(), h["replicas"].get<double>(), h["idle"].get<double>(), cost,
                              config_.cold_start().seconds(), config_.load_time.seconds()));
  const Json& v = a["violations"];
  lines.push_back(fmt::format("autoscaling: {} requests missed their objectives, {} of them arrived while desired > "
                              "ready ({}; short for {:.1f} s); drains requeued {}, cancelled {}\n",
                              v["total"].get<int64_t>(), v["arrived_short"].get<int64_t>(),
                              v["cold_start_share"].is_null()
                                  ? std::string("-")
                                  : fmt::format("{:.1f}%", 100.0 * v["cold_start_share"].get<double>()),
                              v["short_s"].get<double>(), s["drain"]["requeued"].get<int64_t>(),
                              s["drain"]["cancelled"].get<int64_t>()));
}

}  // namespace fleetplan
