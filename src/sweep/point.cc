#include "fleetplan/sweep/point.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/metrics/slo.h"
#include "fleetplan/sweep/search.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {
namespace {

Json RowHead(const SweepSpec& spec, const PointTask& p) {
  Json values = Json::object();
  for (size_t i = 0; i < spec.axes.size(); ++i) values[spec.axes[i].path] = SweepValueJson(spec.axes[i].values[p.axis_values[i]]);
  return {{"index", p.index}, {"configuration", p.configuration}, {"values", values}, {"seed", p.seed}};
}

Json ErrorRow(Json row, std::string_view status, const Status& error) {
  row["status"] = status;
  row["reason"] = error.message();
  return row;
}

std::optional<double> Ms(const std::optional<Duration>& d) {
  if (!d) return std::nullopt;
  return RoundForReport(static_cast<double>(d->ns()) / 1e6);
}

Json OptionalJson(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

// Attainment of class `name`, or nullopt when it had no requests.
std::optional<double> AttainmentOf(const Report& report, std::string_view name) {
  for (const ClassReport& c : report.classes) {
    if (c.name == name && c.requests > 0) return static_cast<double>(c.qualified) / static_cast<double>(c.requests);
  }
  return std::nullopt;
}

bool MeetsTargets(const Report& report, const AttainmentTargets& targets) {
  return std::all_of(targets.begin(), targets.end(), [&](const auto& t) {
    const std::optional<double> a = AttainmentOf(report, t.first);
    return a && *a >= t.second;
  });
}

Json FiguresJson(const SweepSpec& spec, const FleetPlan& plan, const RunResult& run, Json row) {
  const Report& report = run.result.report;
  Json classes = Json::object();
  for (const ClassReport& c : report.classes) {
    const LatencySummary& ttft = c.of(LatencyMetric::kTtft);
    const LatencySummary& tpot = c.of(LatencyMetric::kTpot);
    const LatencySummary& e2e = c.of(LatencyMetric::kE2e);
    classes[c.name] = {{"requests", c.requests},
                       {"attainment", OptionalJson(c.slo_attainment)},
                       {"ttft_p50_ms", OptionalJson(Ms(ttft.p50))},
                       {"ttft_p90_ms", OptionalJson(Ms(ttft.p90))},
                       {"ttft_p99_ms", OptionalJson(Ms(ttft.p99))},
                       {"tpot_p50_ms", OptionalJson(Ms(tpot.p50))},
                       {"tpot_p99_ms", OptionalJson(Ms(tpot.p99))},
                       {"e2e_p50_ms", OptionalJson(Ms(e2e.p50))},
                       {"e2e_p99_ms", OptionalJson(Ms(e2e.p99))},
                       {"goodput_rps", RoundForReport(c.goodput_rps)}};
  }
  const int64_t gpus = PlanGpus(plan);
  Json fleet = {{"requests", report.fleet.requests},
                {"attainment", OptionalJson(report.fleet.slo_attainment)},
                {"goodput_rps", RoundForReport(report.fleet.goodput_rps)},
                {"throughput_rps", RoundForReport(report.fleet.throughput_rps)},
                {"goodput_per_gpu", RoundForReport(report.fleet.goodput_rps / static_cast<double>(gpus))},
                {"meets_slo", MeetsTargets(report, spec.targets)}};
  if (spec.gpu_hour_price) fleet["cost_per_hour"] = RoundForReport(*spec.gpu_hour_price * static_cast<double>(gpus));
  row["status"] = "ok";
  row["reason"] = "";
  row["gpus"] = gpus;
  row["steps"] = run.result.engine.steps;
  row["classes"] = std::move(classes);
  row["fleet"] = std::move(fleet);
  row["scenario_digest"] = plan.scenario_digest;
  return row;
}

// Arrivals per class of the plan's open-loop workload at `seed`, or nullopt when the
// count depends on the run (closed loop: arrivals wait for finishes).
Expected<std::optional<std::vector<int64_t>>> CountArrivals(const FleetPlan& plan, uint64_t seed) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> source, MakeRequestSource(plan.workload, seed));
  std::vector<int64_t> counts(source->names().classes.size(), 0);
  while (true) {
    FP_ASSIGN_OR_RETURN(std::optional<Request> r, source->Next());
    if (!r) break;
    const auto id = static_cast<size_t>(r->class_id);
    if (id >= counts.size()) counts.resize(id + 1, 0);
    ++counts[id];
  }
  if (!source->exhausted()) return std::optional<std::vector<int64_t>>();
  return std::optional<std::vector<int64_t>>(std::move(counts));
}

// Ends a probe once some targeted class has missed so many requests that its attainment
// can no longer reach the target: (arrivals - misses) / arrivals < target.
class EarlyStop {
 public:
  EarlyStop(const FleetPlan& plan, const AttainmentTargets& targets, std::vector<std::string> classes,
            std::vector<int64_t> arrivals)
      : arrivals_(std::move(arrivals)), misses_(arrivals_.size(), 0) {
    for (const auto& [name, target] : targets) {
      const auto it = std::find(classes.begin(), classes.end(), name);
      const ClassSlo* slo = plan.slo.Find(name);
      if (it == classes.end() || slo == nullptr) continue;
      const auto id = static_cast<size_t>(it - classes.begin());
      if (id >= objectives_.size()) objectives_.resize(id + 1);
      objectives_[id] = Watch{slo->objectives, target, true};
    }
  }
  bool operator()(const RequestRecord& r) {
    const auto id = static_cast<size_t>(r.class_id);
    if (id >= objectives_.size() || !objectives_[id].watched || id >= arrivals_.size()) return false;
    if (Evaluate(r, objectives_[id].objectives).qualified) return false;
    ++misses_[id];
    const auto n = static_cast<double>(arrivals_[id]);
    return n > 0 && (n - static_cast<double>(misses_[id])) / n < objectives_[id].target;
  }
  // The best attainment class `id` can still reach.
  double Bound(size_t id) const {
    if (id >= arrivals_.size() || arrivals_[id] == 0) return 0;
    return static_cast<double>(arrivals_[id] - misses_[id]) / static_cast<double>(arrivals_[id]);
  }

 private:
  struct Watch {
    ClassObjectives objectives;
    double target = 1;
    bool watched = false;
  };
  std::vector<int64_t> arrivals_;
  std::vector<int64_t> misses_;
  std::vector<Watch> objectives_;
};

Expected<RateProbe> Probe(const SweepSpec& spec, const PointTask& point, double rate) {
  const MaxRateSearch& search = *spec.search;
  const YamlDocument value = YamlDocument::Scalar(RateText(Rate{rate}), *search.where);
  FP_ASSIGN_OR_RETURN(FleetPlan plan, BindPoint(spec, point, {YamlOverride{search.axis, value.root()}}));
  RunOptions opt;
  opt.write_files = false;
  opt.seed = point.seed;
  std::shared_ptr<EarlyStop> stop;
  if (search.early_stop) {
    FP_ASSIGN_OR_RETURN(auto arrivals, CountArrivals(plan, point.seed));
    if (arrivals) {
      FP_ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> names_source, MakeRequestSource(plan.workload, point.seed));
      stop = std::make_shared<EarlyStop>(plan, search.attainment, names_source->names().classes, std::move(*arrivals));
      opt.stop_when = [stop](const RequestRecord& r) { return (*stop)(r); };
    }
  }
  FP_ASSIGN_OR_RETURN(RunResult run, Simulate(plan, opt));
  RateProbe p;
  p.rate = rate;
  p.complete = !run.stopped_early;
  const Report& report = run.result.report;
  for (const auto& [name, target] : search.attainment) {
    double a = 0;
    if (p.complete) {
      a = AttainmentOf(report, name).value_or(0);
    } else {
      size_t id = 0;
      for (; id < report.classes.size() && report.classes[id].name != name; ++id) {
      }
      a = stop->Bound(id);
    }
    p.attainment.emplace_back(name, a);
  }
  p.passed = p.complete && MeetsTargets(report, search.attainment);
  p.steps = run.result.engine.steps;
  if (!p.complete) p.stopped_at_s = run.simulated_end.seconds();
  return p;
}

// The point's own run as a probe of the search, when the searched axis is the open-loop
// arrival rate the run used (so the search need not simulate that rate again).
std::optional<RateProbe> BaseRateProbe(const MaxRateSearch& search, const RunResult& run) {
  const Json& workload = run.report["workload"];
  const Json& arrival = workload.value("arrival", Json());
  const std::string process = arrival.is_object() ? arrival.value("process", "") : "";
  const bool steady = process == "poisson" || process == "constant" || process == "gamma";
  if (search.axis != "workload.arrival.rate" || workload.value("loop", "") != "open" || !steady ||
      !arrival["rate_per_s"].is_number()) {
    return std::nullopt;
  }
  RateProbe p;
  p.rate = arrival["rate_per_s"].get<double>();
  const Report& report = run.result.report;
  for (const auto& [name, target] : search.attainment) p.attainment.emplace_back(name, AttainmentOf(report, name).value_or(0));
  p.passed = MeetsTargets(report, search.attainment);
  p.steps = run.result.engine.steps;
  return p;
}

}  // namespace

PointTask PointAt(const SweepSpec& spec, int64_t index) {
  PointTask p;
  p.index = index;
  const auto seeds = static_cast<int64_t>(spec.seeds.size());
  p.configuration = index / seeds;
  p.seed_index = static_cast<size_t>(index % seeds);
  p.seed = spec.seeds[p.seed_index];
  p.axis_values = spec.AxisValues(p.configuration);
  return p;
}

int64_t PlanGpus(const FleetPlan& plan) {
  int64_t gpus = 0;
  for (const BoundPool& pool : plan.pools) gpus += pool.replicas * pool.fit.memory.layout.gpus();
  return gpus;
}

Expected<FleetPlan> BindPoint(const SweepSpec& spec, const PointTask& point, const std::vector<YamlOverride>& extra) {
  std::vector<YamlOverride> overrides = spec.overrides;
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    overrides.push_back(YamlOverride{spec.axes[i].path, spec.axes[i].values[point.axis_values[i]]});
  }
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::WithOverrides(*spec.base, overrides));
  // The point's identity: the base's bytes and every value put over them.
  Json changes = Json::array();
  for (const YamlOverride& o : overrides) changes.push_back({o.path, o.value.Text()});
  FP_ASSIGN_OR_RETURN(std::string digest, DigestOfJson(Json{{"base", spec.base_digest}, {"overrides", changes}}));
  FP_ASSIGN_OR_RETURN(Scenario scenario,
                      LoadScenarioDocument(std::make_shared<const YamlDocument>(std::move(doc)), spec.base_dir, digest));
  FP_ASSIGN_OR_RETURN(FleetPlan plan, Bind(scenario));
  // A row keeps figures, not series: a point records no time series.
  plan.output.timeseries_interval = Duration();
  return plan;
}

// A bind error is the point's input ("invalid": it does not fit, a value is out of range);
// an internal error is a failure of the tool ("failed").
std::string_view BindErrorStatus(const Status& s) { return s.code() == StatusCode::kInternal ? "failed" : "invalid"; }

std::optional<Json> CheckPoint(const SweepSpec& spec, const PointTask& point, int64_t* gpus) {
  std::vector<YamlOverride> extra;
  std::optional<YamlDocument> low;
  if (spec.search) {  // the searched axis must take a rate in this scenario too
    low = YamlDocument::Scalar(RateText(spec.search->low), *spec.search->where);
    extra.push_back(YamlOverride{spec.search->axis, low->root()});
  }
  auto plan = BindPoint(spec, point, extra);
  if (plan.ok()) {
    if (gpus != nullptr) *gpus = PlanGpus(*plan);
    return std::nullopt;
  }
  return ErrorRow(RowHead(spec, point), BindErrorStatus(plan.status()), plan.status());
}

Json RunPoint(const SweepSpec& spec, const PointTask& point) {
  Json row = RowHead(spec, point);
  auto plan = BindPoint(spec, point);
  if (!plan.ok()) return ErrorRow(std::move(row), BindErrorStatus(plan.status()), plan.status());
  RunOptions opt;
  opt.write_files = false;
  opt.seed = point.seed;
  auto run = Simulate(*plan, opt);
  if (!run.ok()) return ErrorRow(std::move(row), "failed", run.status());
  row = FiguresJson(spec, *plan, *run, std::move(row));
  if (spec.search) {
    auto found = SearchMaxRate(*spec.search, [&](double rate) { return Probe(spec, point, rate); },
                               BaseRateProbe(*spec.search, *run));
    if (!found.ok()) return ErrorRow(std::move(row), "failed", found.status());
    row["max_rate"] = MaxRateJson(*found);
  }
  return row;
}

}  // namespace fleetplan
