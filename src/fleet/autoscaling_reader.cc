// The `autoscaling:` section reader (section_readers.h; the component is autoscaler.h).
// Every value it fills in is listed in `derived`; the load time is derived here from the
// serving pool's memory plan (weights per rank).
#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/core/units_parse.h"
#include "fleetplan/fleet/autoscaler.h"
#include "fleetplan/memory/plan.h"
#include "fleet/section_readers.h"

namespace fleetplan::section {
namespace {

const std::vector<std::string> kExpiryNames = {"requeue", "cancel"};

std::string Seconds(Duration d) { return fmt::format("{:g} s", d.seconds()); }

// "<number><suffix>" with a non-negative decimal number.
Expected<double> NumberWithSuffix(const YamlNode& node, std::string_view suffix, std::string_view example) {
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  const auto bad = [&] {
    return node.Error(fmt::format("expected a value such as {}, got '{}'", example, text));
  };
  if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return bad();
  }
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size() - suffix.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || !(value >= 0) || !std::isfinite(value)) return bad();
  return value;
}

// A bandwidth: a size per second ("2GB/s", "1.5GiB/s").
Expected<int64_t> ReadBandwidth(const YamlNode& node, int64_t fallback) {
  if (!node.present()) return fallback;
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  const std::string_view suffix = "/s";
  if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return node.Error(fmt::format("expected a bandwidth such as 2GB/s or 1.5GiB/s, got '{}'", text));
  }
  const Expected<Bytes> bytes = ParseBytes(std::string_view(text).substr(0, text.size() - suffix.size()));
  if (!bytes.ok()) return node.Error(bytes.status().message());
  if (bytes->count() <= 0) return node.Error(fmt::format("expected a bandwidth > 0, got '{}'", text));
  return bytes->count();
}

Expected<Duration> PositiveDuration(const YamlNode& node, Duration fallback) {
  FP_ASSIGN_OR_RETURN(Duration d, node.DurationOr(fallback));
  if (d <= Duration()) return node.Error("expected a duration > 0");
  return d;
}

Expected<ScalingRules> ReadRules(const YamlNode& node, const ScalingRules& defaults, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kAutoscalingRules));
  ScalingRules r = defaults;
  FP_ASSIGN_OR_RETURN(r.stabilization, node["stabilization"].DurationOr(defaults.stabilization));
  NoteDefault(node["stabilization"], Seconds(r.stabilization), s);
  const YamlNode policies = node["policies"];
  if (policies.present()) {
    r.policies.clear();
    FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, policies.Items());
    for (const YamlNode& item : items) {
      FP_RETURN_IF_ERROR(item.CheckKeys(keys::kAutoscalingPolicy));
      const bool pods = item["pods"].present();
      if (pods == item["percent"].present()) {
        return item.Error("expected exactly one of `pods` and `percent`, e.g. {pods: 4, period: 15s}");
      }
      ScalingPolicy p;
      p.kind = pods ? ScalingPolicyKind::kPods : ScalingPolicyKind::kPercent;
      FP_ASSIGN_OR_RETURN(p.value, (pods ? item["pods"] : item["percent"]).AsIntAtLeast(1));
      FP_ASSIGN_OR_RETURN(p.period, item["period"].AsDuration());
      if (p.period <= Duration()) return item["period"].Error("expected a duration > 0");
      r.policies.push_back(p);
    }
  } else {
    std::vector<std::string> text;
    for (const ScalingPolicy& p : r.policies) {
      text.push_back(fmt::format("{} {} per {}", p.value, p.kind == ScalingPolicyKind::kPods ? "pods" : "percent",
                                 Seconds(p.period)));
    }
    NoteDefault(policies, fmt::format("{}", fmt::join(text, ", ")), s, "the more permissive applies");
  }
  return r;
}

}  // namespace

Status ReadAutoscaling(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kAutoscaling));
  if (s.pools.size() != 1 || s.pools[0].role != PoolRole::kMixed) {
    return node.Error("autoscaling is simulated for one mixed pool; deployment.pools has prefill or decode pools");
  }
  AutoscalingConfig& c = s.autoscaling;
  c.enabled = true;
  FP_ASSIGN_OR_RETURN(c.interval, PositiveDuration(node["interval"], c.interval));
  NoteDefault(node["interval"], Seconds(c.interval), s);
  FP_ASSIGN_OR_RETURN(std::string metric,
                      ReadChoice(node["metric"], "waiting_requests", "scaling metric", ScalingMetricNames()));
  c.metric = static_cast<ScalingMetric>(
      std::find(ScalingMetricNames().begin(), ScalingMetricNames().end(), metric) - ScalingMetricNames().begin());
  NoteDefault(node["metric"], metric, s);
  FP_ASSIGN_OR_RETURN(c.target, node["target"].AsDouble());
  if (c.metric == ScalingMetric::kTtftAttainment || c.metric == ScalingMetric::kKvUsage) {
    if (!(c.target > 0 && c.target <= 1)) {
      return node["target"].Error(fmt::format("expected a share in (0, 1] for {}, got {}", metric, c.target));
    }
  } else if (!(c.target > 0)) {
    return node["target"].Error(fmt::format("expected a target > 0 per replica, got {}", c.target));
  }
  if (c.metric == ScalingMetric::kTtftAttainment) {
    bool any = false;
    for (const ClassSlo& k : s.slo.classes()) any = any || k.objectives.ttft.has_value();
    if (!any) return node["metric"].Error("ttft_attainment needs a class with a `ttft` objective under `slo`");
  }
  FP_ASSIGN_OR_RETURN(c.window, PositiveDuration(node["window"], c.interval));
  NoteDefault(node["window"], Seconds(c.window), s, "the interval");
  FP_ASSIGN_OR_RETURN(c.tolerance, node["tolerance"].DoubleOr(c.tolerance));
  if (!(c.tolerance >= 0 && c.tolerance < 1)) {
    return node["tolerance"].Error(fmt::format("expected a tolerance in [0, 1), got {}", c.tolerance));
  }
  NoteDefault(node["tolerance"], fmt::format("{:g}", c.tolerance), s);
  FP_ASSIGN_OR_RETURN(c.scale_up, ReadRules(node["scale_up"], c.scale_up, s));
  FP_ASSIGN_OR_RETURN(c.scale_down, ReadRules(node["scale_down"], c.scale_down, s));

  // Panic mode (present: on).
  const YamlNode panic = node["panic"];
  if (panic.present() && !panic.IsNull()) {
    FP_RETURN_IF_ERROR(CheckOptionalMap(panic, keys::kAutoscalingPanic));
    KpaConfig k;
    FP_ASSIGN_OR_RETURN(k.stable_window, PositiveDuration(panic["stable_window"], k.stable_window));
    FP_ASSIGN_OR_RETURN(k.panic_window, PositiveDuration(panic["panic_window"], k.panic_window));
    FP_ASSIGN_OR_RETURN(k.panic_threshold, panic["threshold"].DoubleOr(k.panic_threshold));
    if (k.panic_window > k.stable_window) {
      return panic["panic_window"].Error(fmt::format("expected at most the stable window ({}), got {}",
                                                     Seconds(k.stable_window), Seconds(k.panic_window)));
    }
    if (!(k.panic_threshold > 1)) {
      return panic["threshold"].Error(fmt::format("expected a threshold > 1 (2 = 200%), got {}", k.panic_threshold));
    }
    NoteDefault(panic["stable_window"], Seconds(k.stable_window), s);
    NoteDefault(panic["panic_window"], Seconds(k.panic_window), s);
    NoteDefault(panic["threshold"], fmt::format("{:g}", k.panic_threshold), s);
    c.panic = k;
  }

  // The node pool.
  const YamlNode nodes = node["nodes"];
  FP_RETURN_IF_ERROR(CheckOptionalMap(nodes, keys::kAutoscalingNodes));
  NodePoolConfig& n = c.nodes;
  FP_ASSIGN_OR_RETURN(n.gpus_per_node, nodes["gpus_per_node"].IntOr(s.gpus_per_node));
  FP_ASSIGN_OR_RETURN(n.initial, nodes["initial"].IntOr(s.nodes));
  FP_ASSIGN_OR_RETURN(n.max_nodes, nodes["max_nodes"].IntOr(n.initial));
  FP_ASSIGN_OR_RETURN(n.provisioning_delay, nodes["provisioning_delay"].DurationOr(n.provisioning_delay));
  if (!nodes["gpus_per_node"].present()) {
    s.derived.push_back(fmt::format("autoscaling.nodes.gpus_per_node: {} (hardware.gpus_per_node; not given)",
                                    n.gpus_per_node));
  }
  if (!nodes["initial"].present()) {
    s.derived.push_back(fmt::format("autoscaling.nodes.initial: {} (hardware.nodes; not given)", n.initial));
  }
  if (!nodes["max_nodes"].present()) {
    s.derived.push_back(fmt::format("autoscaling.nodes.max_nodes: {} (nodes.initial; not given)", n.max_nodes));
  }
  NoteDefault(nodes["provisioning_delay"], Seconds(n.provisioning_delay), s);
  c.gpus_per_replica = s.fit.memory.layout.gpus();
  if (n.gpus_per_node < c.gpus_per_replica) {
    return nodes["gpus_per_node"].present()
               ? nodes["gpus_per_node"].Error(fmt::format("a replica needs tp x pp = {} GPUs on one node, got {}",
                                                          c.gpus_per_replica, n.gpus_per_node))
               : node.Error(fmt::format("a replica needs tp x pp = {} GPUs on one node; nodes hold {}",
                                        c.gpus_per_replica, n.gpus_per_node));
  }
  if (n.initial < 1) return nodes["initial"].Error(fmt::format("expected an integer >= 1, got {}", n.initial));
  if (n.max_nodes < n.initial) {
    return nodes["max_nodes"].Error(fmt::format("expected at least nodes.initial ({}), got {}", n.initial, n.max_nodes));
  }
  const int64_t per_node = n.gpus_per_node / c.gpus_per_replica;
  if (s.replicas > n.initial * per_node) {
    return node.Error(fmt::format("deployment.replicas {} do not fit the {} initial nodes ({} replicas of {} GPUs "
                                  "per node of {})",
                                  s.replicas, n.initial, per_node, c.gpus_per_replica, n.gpus_per_node));
  }

  FP_ASSIGN_OR_RETURN(c.min_replicas, node["min_replicas"].IntOr(c.min_replicas));
  if (c.min_replicas < 1) {
    return node["min_replicas"].Error(fmt::format("expected an integer >= 1, got {}", c.min_replicas));
  }
  NoteDefault(node["min_replicas"], std::to_string(c.min_replicas), s);
  FP_ASSIGN_OR_RETURN(c.max_replicas, node["max_replicas"].IntOr(n.max_nodes * per_node));
  if (!node["max_replicas"].present()) {
    s.derived.push_back(fmt::format("autoscaling.max_replicas: {} (what max_nodes {} x {} replicas per node hold; "
                                    "not given)",
                                    c.max_replicas, n.max_nodes, per_node));
  }
  if (c.max_replicas < c.min_replicas) {
    return node["max_replicas"].Error(
        fmt::format("expected at least min_replicas ({}), got {}", c.min_replicas, c.max_replicas));
  }
  if (s.replicas < c.min_replicas || s.replicas > c.max_replicas) {
    return node.Error(fmt::format("deployment.replicas ({}) must lie in [min_replicas, max_replicas] = [{}, {}]",
                                  s.replicas, c.min_replicas, c.max_replicas));
  }

  // The replica lifecycle: load time from the memory plan.
  FP_ASSIGN_OR_RETURN(c.load_bandwidth, ReadBandwidth(node["load_bandwidth"], c.load_bandwidth));
  NoteDefault(node["load_bandwidth"], "2GB/s", s, "per rank");
  FP_ASSIGN_OR_RETURN(c.engine_start, node["engine_start"].DurationOr(c.engine_start));
  NoteDefault(node["engine_start"], Seconds(c.engine_start), s);
  FP_ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(s.fit.memory));
  for (const StagePlan& stage : plan.stages) c.weight_bytes_per_rank = std::max(c.weight_bytes_per_rank, stage.weights.count());
  c.load_time = Duration::Nanos(static_cast<int64_t>(std::llround(static_cast<double>(c.weight_bytes_per_rank) * 1e9 /
                                                                   static_cast<double>(c.load_bandwidth)))) +
                c.engine_start;
  s.derived.push_back(fmt::format("autoscaling: a new replica loads in {:.1f} s ({:.2f} GB of weights per rank at "
                                  "{:g} GB/s, then engine_start {}); cold start with a new node {:.1f} s",
                                  c.load_time.seconds(), static_cast<double>(c.weight_bytes_per_rank) / 1e9,
                                  static_cast<double>(c.load_bandwidth) / 1e9, Seconds(c.engine_start),
                                  c.cold_start().seconds()));

  // Scale-down drains.
  const YamlNode drain = node["drain"];
  FP_RETURN_IF_ERROR(CheckOptionalMap(drain, keys::kAutoscalingDrain));
  FP_ASSIGN_OR_RETURN(c.drain_grace, drain["grace"].DurationOr(c.drain_grace));
  FP_ASSIGN_OR_RETURN(std::string expiry, ReadChoice(drain["expiry"], "requeue", "drain expiry", kExpiryNames));
  c.drain_expiry = expiry == "requeue" ? DrainExpiry::kRequeue : DrainExpiry::kCancel;
  NoteDefault(drain["grace"], Seconds(c.drain_grace), s);
  NoteDefault(drain["expiry"], expiry, s);

  if (node["price"].present()) {
    FP_ASSIGN_OR_RETURN(c.price_per_gpu_hour, NumberWithSuffix(node["price"], "/gpu-h", "4.10/gpu-h"));
  }

  // Forecast prewarming.
  const YamlNode f = node["forecast"];
  if (f.present() && !f.IsNull()) {
    FP_RETURN_IF_ERROR(f.CheckKeys(keys::kAutoscalingForecast));
    ForecastConfig& fc = c.forecast;
    const bool schedule = f["schedule"].present();
    const bool moving = f["replica_rate"].present() || f["window"].present() || f["horizon"].present();
    if (schedule == moving) {
      return f.Error("expected either `schedule` (with `lead`) or a moving window (`replica_rate`, `window`, "
                     "`horizon`)");
    }
    if (schedule) {
      fc.kind = ForecastConfig::Kind::kSchedule;
      FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, f["schedule"].Items());
      if (items.empty()) return f["schedule"].Error("expected at least one step, e.g. [{at: 2m, replicas: 6}]");
      for (const YamlNode& item : items) {
        FP_RETURN_IF_ERROR(item.CheckKeys(keys::kAutoscalingForecastStep));
        FP_ASSIGN_OR_RETURN(Duration at, item["at"].AsDuration());
        if (!fc.schedule.empty() && at <= fc.schedule.back().at - SimTime()) {
          return item["at"].Error(fmt::format("expected a time after {} (steps in increasing time)",
                                              FormatDuration(fc.schedule.back().at - SimTime())));
        }
        FP_ASSIGN_OR_RETURN(int64_t replicas, item["replicas"].AsIntAtLeast(0));
        fc.schedule.push_back({SimTime() + at, replicas});
      }
      // The tick that first sees a step may come up to one interval after the lead.
      FP_ASSIGN_OR_RETURN(fc.lead, f["lead"].DurationOr(c.cold_start() + c.interval));
      if (!f["lead"].present()) {
        s.derived.push_back(fmt::format("autoscaling.forecast.lead: {:.1f} s (the cold start plus one interval; not "
                                        "given)",
                                        fc.lead.seconds()));
      }
    } else {
      if (f["lead"].present()) return f["lead"].Error("`lead` applies to a forecast `schedule`");
      fc.kind = ForecastConfig::Kind::kMovingWindow;
      FP_ASSIGN_OR_RETURN(Rate rate, f["replica_rate"].AsRate());
      fc.replica_rate = rate.per_second;
      if (!(fc.replica_rate > 0)) return f["replica_rate"].Error("expected a rate > 0 (requests/s one replica serves)");
      FP_ASSIGN_OR_RETURN(fc.window, PositiveDuration(f["window"], fc.window));
      NoteDefault(f["window"], Seconds(fc.window), s);
      FP_ASSIGN_OR_RETURN(fc.horizon, f["horizon"].DurationOr(c.cold_start()));
      if (!f["horizon"].present()) {
        s.derived.push_back(
            fmt::format("autoscaling.forecast.horizon: {:.1f} s (the cold start; not given)", fc.horizon.seconds()));
      }
      if (fc.horizon < c.cold_start()) {
        return f["horizon"].Error(fmt::format("expected at least the cold start ({}: provisioning {} + load {}), got "
                                              "{}: the forecast must see past a new replica's warm-up",
                                              Seconds(c.cold_start()), Seconds(n.provisioning_delay),
                                              Seconds(c.load_time), Seconds(fc.horizon)));
      }
    }
  }
  return Status::Ok();
}

}  // namespace fleetplan::section
