// capacity.json and the text summary: two renderings of one CapacityResult.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/capacity/capacity.h"

namespace fleetplan {
namespace {

Json NameOrList(const std::vector<std::string>& names) {
  if (names.size() == 1) return names.front();
  return names;
}

Json RequirementJson(const DimensionRequirement& d) {
  return {{"unit", d.unit},
          {"demand", RoundForReport(d.demand, 6)},
          {"per_replica", RoundForReport(d.per_replica, 6)},
          {"per_replica_rps", RoundForReport(d.per_replica_rps, 6)},
          {"exact_replicas", RoundForReport(d.exact_replicas, 6)},
          {"replicas", d.replicas},
          {"basis", d.basis}};
}

Json CostJson(const FleetCost& c) {
  return {{"per_hour", RoundForReport(c.per_hour, 6)},
          {"per_month", RoundForReport(c.per_month, 6)},
          {"on_demand_per_hour", RoundForReport(c.on_demand_per_hour, 6)},
          {"committed_per_hour", RoundForReport(c.committed_per_hour, 6)},
          {"on_demand_gpus", c.on_demand_gpus},
          {"committed_gpus_used", c.committed_gpus_used},
          {"unused_committed_gpu_hours_per_month", RoundForReport(c.unused_committed_gpu_hours_per_month, 6)}};
}

Json LayoutJson(const CapacityResult& r, const LayoutCapacity& l) {
  Json requirements = Json::object();
  for (const DimensionRequirement& d : l.requirements) requirements[d.name] = RequirementJson(d);
  Json losses = Json::array();
  for (const LossScenario& s : l.losses) {
    losses.push_back({{"name", s.name},
                      {"lost", s.lost},
                      {"replicas_needed", s.replicas_needed >= 0 ? Json(s.replicas_needed) : Json(nullptr)},
                      {"surviving_replicas", s.surviving_replicas},
                      {"required_after_loss", s.required_after >= 0 ? Json(s.required_after) : Json(nullptr)},
                      {"carried", s.carried}});
  }
  Json j = {{"layout", {{"name", l.layout.Name()}, {"tp", l.layout.tp}, {"pp", l.layout.pp}}},
            {"gpus_per_replica", l.gpus_per_replica},
            {"feasible", l.ok},
            {"reason", l.reason},
            {"replica_capacity", l.replica_capacity},
            {"requirements", requirements},
            {"binding", NameOrList(l.binding)},
            {"per_replica_rps", RoundForReport(l.per_replica_rps, 6)},
            {"loss_scenarios", losses}};
  if (!l.ok) return j;
  Json per_domain = Json::object();
  const Json& domains = r.spec["domains"];
  for (size_t d = 0; d < l.per_domain.size(); ++d) {
    per_domain[domains[d]["name"].get<std::string>()] = {{"replicas", l.per_domain[d]},
                                                         {"gpus", l.per_domain[d] * l.gpus_per_replica},
                                                         {"gpus_offered", domains[d]["gpus"]}};
  }
  j["set_by"] = NameOrList(l.set_by);
  j["fleet"] = {{"replicas", l.replicas}, {"gpus", l.gpus}, {"per_domain", per_domain}};
  j["cost"] = CostJson(l.cost);
  j["within_budget"] = l.within_budget;
  j["simulated_after_loss"] = l.simulated_after_loss;
  j["grown_for_loss"] = l.grown_for_loss;
  j["model_error"] = l.model_error;
  return j;
}

std::string Money(double v) { return fmt::format("${:.2f}", v); }

}  // namespace

Json CapacityJson(const CapacityResult& r) {
  Json layouts = Json::array();
  for (const LayoutCapacity& l : r.layouts) layouts.push_back(LayoutJson(r, l));
  Json j = {{"kind", "fleetplan-capacity"}, {"spec", r.spec}, {"layouts", layouts}};
  const size_t head = r.chosen.value_or(0);
  j["chosen_layout"] = r.chosen ? Json(r.layouts[head].layout.Name()) : Json(nullptr);
  // The chosen layout's figures at the top level (the first layout's when none fits).
  for (const auto& [key, value] : layouts[head].items()) {
    if (key != "layout") j[key] = value;
  }
  Json inside = Json::array();
  for (size_t i : r.inside_band) inside.push_back(r.layouts[i].layout.Name());
  j["inside_band"] = inside;
  j["feasible"] = r.chosen.has_value();
  j["within_budget"] = r.chosen && r.within_budget;
  if (r.spec.contains("budget_per_month") && r.chosen) {
    const double over = r.layouts[head].cost.per_month - r.spec["budget_per_month"].get<double>();
    j["budget"] = {{"per_month", r.spec["budget_per_month"]}, {"over_by_per_month", RoundForReport(std::max(0.0, over), 6)}};
  }
  return j;
}

std::string CapacityText(const CapacityResult& r) {
  std::string out;
  auto line = [&](std::string s) { out += s + "\n"; };
  for (const LayoutCapacity& l : r.layouts) {
    const bool chosen = r.chosen && &r.layouts[*r.chosen] == &l;
    line(fmt::format("layout {} ({} GPUs per replica){}", l.layout.Name(), l.gpus_per_replica, chosen ? "  <- chosen" : ""));
    for (const DimensionRequirement& d : l.requirements) {
      const bool binds = std::find(l.binding.begin(), l.binding.end(), d.name) != l.binding.end();
      line(fmt::format("  {:<12} {:>10.1f} {:<10} / {:>9.2f} per replica = {:>7.2f} -> {:>4} replicas{}", d.name, d.demand,
                       d.unit, d.per_replica, d.exact_replicas, d.replicas, binds ? (l.binding.size() > 1 ? "  (tie)" : "  (binding)") : ""));
    }
    if (!l.ok) {
      line("  no fleet: " + l.reason);
      continue;
    }
    for (const LossScenario& s : l.losses) {
      const bool sets = std::find(l.set_by.begin(), l.set_by.end(), s.name) != l.set_by.end();
      const std::string what =
          s.lost.empty()
              ? fmt::format("{:>4} replicas serve,   {:>4} required", s.surviving_replicas, s.required_after)
              : fmt::format("{:>4} replicas survive, {:>4} required after the loss; a fleet of {:>4} survives it",
                            s.surviving_replicas, s.required_after, s.replicas_needed);
      line(fmt::format("  loss {:<24} {}{}{}", s.name, what, s.carried ? "" : "  (NOT carried: the survivors fall short)",
                       sets ? "  (sets the size)" : ""));
    }
    std::string per_domain;
    const Json& domains = r.spec["domains"];
    for (size_t d = 0; d < l.per_domain.size(); ++d) {
      per_domain += fmt::format("{}{} {}", per_domain.empty() ? "" : ", ", domains[d]["name"].get<std::string>(), l.per_domain[d]);
    }
    line(fmt::format("  fleet: {} replicas, {} GPUs ({})", l.replicas, l.gpus, per_domain));
    line(fmt::format("  cost: {}/h, {}/month (on demand {}/h for {} GPUs, committed {}/h; unused committed {:.0f} GPU-h/month)",
                     Money(l.cost.per_hour), Money(l.cost.per_month), Money(l.cost.on_demand_per_hour), l.cost.on_demand_gpus,
                     Money(l.cost.committed_per_hour), l.cost.unused_committed_gpu_hours_per_month));
    if (r.spec.contains("budget_per_month")) {
      line(l.within_budget ? fmt::format("  within the budget of {}/month", Money(r.spec["budget_per_month"].get<double>()))
                           : fmt::format("  OVER BUDGET: the safe fleet costs {}/month, the budget is {}/month; capacity is "
                                         "not reduced to fit",
                                         Money(l.cost.per_month), Money(r.spec["budget_per_month"].get<double>())));
    }
    const Json& v = l.simulated_after_loss;
    if (v.is_object()) {
      std::string att;
      for (const auto& [cls, a] : v["attainment"].items()) {
        att += fmt::format("{}{} {:.1f}%", att.empty() ? "" : ", ", cls, a.get<double>() * 100);
      }
      const std::string loss = v["lost"].empty() ? std::string("with nothing lost")
                                                 : fmt::format("{} lost at {} s", v["scenario"].get<std::string>(),
                                                               v["loss_at_s"].dump());
      line(fmt::format("  simulated: {} replicas at {}/s, {}: attainment {} {} ({})", v["replicas_before"].get<int64_t>(),
                       v["rate_per_s"].dump(), loss, v["lost"].empty() ? "after " + v["loss_at_s"].dump() + " s" : std::string("after the loss"),
                       att, v["meets_targets"].get<bool>() ? "meets the targets" : "MISSES the targets"));
    }
    const Json& e = l.model_error;
    if (e.is_object()) {
      const Json& p = e["pessimistic"];
      line(p.contains("replicas")
               ? fmt::format("  model error: {} on {} states steps up to {:.1f}% longer; at that edge {} replicas, {} "
                             "GPUs, {}/h{}",
                             e["step_model"].get<std::string>(), e["gpu"].get<std::string>(), 100 * e["band"].get<double>(),
                             p["replicas"].get<int64_t>(), p["gpus"].get<int64_t>(), Money(p["per_hour"].get<double>()),
                             p["within_budget"].get<bool>() ? "" : " (over budget)")
               : fmt::format("  model error: {} on {} states steps up to {:.1f}% longer; at that edge no fleet fits: {}",
                             e["step_model"].get<std::string>(), e["gpu"].get<std::string>(), 100 * e["band"].get<double>(),
                             p["reason"].get<std::string>()));
    }
    const Json& g = l.grown_for_loss;
    if (g.is_object()) {
      std::vector<std::string> tried;
      for (const Json& a : g["attempts"]) {
        tried.push_back(fmt::format("{} at {:.0f}%{}", a["replicas"].get<int64_t>(), 100 * a["share"].get<double>(),
                                    a["meets_targets"].get<bool>() ? " meets" : " misses"));
      }
      line(g["share"].is_number()
               ? fmt::format("  grown for the loss: the {} replicas sized first missed the targets through it; sized at "
                             "{:.0f}% of the rate per replica, {} meet them ({})",
                             g["sized_replicas"].get<int64_t>(), 100 * g["share"].get<double>(), l.replicas,
                             fmt::join(tried, ", "))
               : fmt::format("  not grown enough: no fleet sized at 70% of the rate per replica or more met the targets "
                             "through the loss ({})",
                             fmt::join(tried, ", ")));
    }
  }
  if (!r.chosen) line("no layout gives a fleet that survives the declared loss in these domains");
  if (r.chosen && !r.inside_band.empty()) {
    std::vector<std::string> names;
    for (size_t i : r.inside_band) names.push_back(r.layouts[i].layout.Name());
    line(fmt::format("inside the model's error: {} at its pessimistic edge costs no less than {} as sized; the simulated "
                     "rates cannot decide between them: measure them and declare the rates (replica_capacity "
                     "{{rate: ...}})",
                     r.layouts[*r.chosen].layout.Name(), fmt::join(names, ", ")));
  }
  return out;
}

}  // namespace fleetplan
