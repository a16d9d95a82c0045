#include "fleetplan/capacity/verify.h"

#include <algorithm>

#include <fmt/format.h>

#include "fleetplan/fleet/run.h"
#include "fleetplan/metrics/report.h"
#include "fleetplan/sweep/point.h"

namespace fleetplan {
namespace {

// How long the fleet runs after the loss when the spec does not say.
constexpr Duration kAfterLoss = Sec(300);

// The attainment "meets" is judged against when capacity was not searched.
constexpr double kDefaultTarget = 0.99;

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Json AttainmentOf(const std::vector<std::string>& classes, const std::vector<RequestRecord>& records,
                  const SloSpec& slo) {
  Json out = Json::object();
  if (records.empty()) return out;
  auto report = ComputeReport(classes, records, slo);
  if (!report.ok()) return out;
  for (const ClassReport& c : report->classes) {
    if (c.slo_attainment) out[c.name] = RoundForReport(*c.slo_attainment, 6);
  }
  return out;
}

}  // namespace

Expected<Json> VerifyAfterLoss(const CapacitySpec& cs, const LayoutCapacity& chosen) {
  // The first deciding scenario that loses something (a tie with the baseline is decided
  // by the loss: it is the one worth watching).
  const LossScenario* deciding = nullptr;
  for (const std::string& name : chosen.set_by) {
    for (const LossScenario& s : chosen.losses) {
      if (s.name == name && (deciding == nullptr || (deciding->lost.empty() && !s.lost.empty()))) deciding = &s;
    }
  }
  FP_ASSERT(deciding != nullptr);

  // Which domains the simulated fleet holds, and at what rate it is driven.
  std::vector<std::string> regions;
  if (deciding->lost.empty()) {
    const auto peak = std::max_element(cs.demand.begin(), cs.demand.end(),
                                       [](const RegionDemand& a, const RegionDemand& b) { return a.peak < b.peak; });
    regions.push_back(peak->region);
  } else {
    for (const FailureDomain& d : cs.domains) {
      if (Has(deciding->lost, d.name) && !Has(regions, d.region)) regions.push_back(d.region);
    }
    const bool region_survives = std::any_of(cs.domains.begin(), cs.domains.end(), [&](const FailureDomain& d) {
      return Has(regions, d.region) && !Has(deciding->lost, d.name);
    });
    if (!region_survives) {  // a region is gone: the whole fleet takes its demand
      regions.clear();
      for (const RegionDemand& r : cs.demand) regions.push_back(r.region);
    }
  }
  double rate = 0;
  for (const RegionDemand& r : cs.demand) {
    if (Has(regions, r.region)) rate += r.peak.per_second;
  }
  int64_t replicas = 0;
  std::vector<int32_t> lost_ids;
  std::vector<std::string> domains;
  for (size_t d = 0; d < cs.domains.size(); ++d) {
    if (!Has(regions, cs.domains[d].region)) continue;
    domains.push_back(cs.domains[d].name);
    for (int64_t k = 0; k < chosen.per_domain[d]; ++k, ++replicas) {
      if (Has(deciding->lost, cs.domains[d].name)) lost_ids.push_back(static_cast<int32_t>(replicas));
    }
  }
  if (replicas == 0) return Json(nullptr);

  const Duration duration = cs.verify_duration.value_or(cs.loss_at + kAfterLoss);
  SweepSpec s = cs.base;
  std::vector<std::shared_ptr<YamlDocument>> keep;
  const YamlNode at = cs.document->root();
  auto scalar = [&](const std::string& path, std::string value) {
    keep.push_back(std::make_shared<YamlDocument>(YamlDocument::Scalar(std::move(value), at)));
    s.overrides.push_back(YamlOverride{path, keep.back()->root()});
  };
  scalar("deployment.replicas", std::to_string(replicas));
  // The failure domains hold the fleet: the scenario's own hardware section gets the nodes it needs.
  const auto per_node_read = cs.base.base->root()["hardware"]["gpus_per_node"].IntOr(8);
  const int64_t per_node = per_node_read.ok() ? *per_node_read : 8;
  const int64_t gpus = replicas * chosen.gpus_per_replica;
  scalar("hardware.nodes", std::to_string((gpus + per_node - 1) / std::max<int64_t>(1, per_node)));
  scalar("deployment.tp", std::to_string(chosen.layout.tp));
  scalar("deployment.pp", std::to_string(chosen.layout.pp));
  const bool scales_rate = cs.base.base->root()["workload"]["arrival"]["rate"].present();
  if (scales_rate) scalar("workload.arrival.rate", RateText(Rate{rate}));
  scalar("workload.duration", fmt::format("{}ns", duration.ns()));
  FP_ASSIGN_OR_RETURN(FleetPlan plan, BindPoint(s, PointAt(s, 0)));
  if (!lost_ids.empty()) plan.replica_losses.push_back(ReplicaLoss{SimTime() + cs.loss_at, lost_ids});

  std::vector<RequestRecord> before, after;
  RunOptions opt;
  opt.write_files = false;
  opt.on_record = [&](const RequestRecord& r) {
    (r.arrival < SimTime() + cs.loss_at ? before : after).push_back(r);
  };
  FP_ASSIGN_OR_RETURN(RunResult run, Simulate(plan, opt));

  const Json att_before = AttainmentOf(run.names.classes, before, plan.slo);
  const Json att_after = AttainmentOf(run.names.classes, after, plan.slo);
  AttainmentTargets targets = cs.replica_capacity.attainment;
  if (targets.empty()) {
    for (const ClassSlo& c : plan.slo.classes()) targets.emplace_back(c.name, kDefaultTarget);
  }
  bool meets = true;
  Json target_json = Json::object();
  for (const auto& [cls, target] : targets) {
    target_json[cls] = target;
    if (!att_after.contains(cls) || att_after[cls].get<double>() + 1e-12 < target) meets = false;
  }
  int64_t cancelled_by_loss = 0;
  for (const ReplicaResult& r : run.result.replicas) {
    if (std::find(lost_ids.begin(), lost_ids.end(), r.id) != lost_ids.end()) cancelled_by_loss += r.figures.drain_requeued + r.figures.drain_rejected + r.figures.drain_cancelled;
  }
  return Json{{"scenario", deciding->name},
              {"lost", deciding->lost},
              {"regions", regions},
              {"domains", domains},
              {"replicas_before", replicas},
              {"replicas_after", replicas - static_cast<int64_t>(lost_ids.size())},
              {"rate_per_s", scales_rate ? Json(RoundForReport(rate)) : Json(nullptr)},
              {"loss_at_s", RoundForReport(cs.loss_at.seconds())},
              {"duration_s", RoundForReport(duration.seconds())},
              {"requests_before", before.size()},
              {"requests_after", after.size()},
              {"lost_in_flight", cancelled_by_loss},
              {"attainment_before", att_before},
              {"attainment", att_after},
              {"targets", target_json},
              {"meets_targets", meets}};
}

}  // namespace fleetplan
