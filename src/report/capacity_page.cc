#include "fleetplan/report/capacity_page.h"

#include <fmt/format.h>

#include "fleetplan/report/svg.h"
#include "report/json_view.h"

namespace fleetplan::report {
namespace {

const char* const kDimensions[] = {"prompt", "decode", "concurrency", "slo"};

std::string Money(const Json& j) { return j.is_number() ? "$" + FormatNumber(Num(j), 7) : "-"; }

std::vector<std::string> LayoutNames(const Json& c) {
  std::vector<std::string> names;
  for (const Json& l : Get(c, "layouts")) names.push_back(Get(l, "layout", "name").get<std::string>());
  return names;
}

bool Contains(const Json& name_or_list, const std::string& name) {
  if (name_or_list.is_string()) return name_or_list.get<std::string>() == name;
  if (!name_or_list.is_array()) return false;
  for (const Json& n : name_or_list) {
    if (n.is_string() && n.get<std::string>() == name) return true;
  }
  return false;
}

std::string Decision(const Json& c) {
  if (!Get(c, "feasible").is_boolean() || !Get(c, "feasible").get<bool>()) {
    std::string out = Para("No layout gives a fleet that survives the declared loss in these domains.", "bad");
    std::vector<std::vector<std::string>> rows;
    for (const Json& l : Get(c, "layouts")) rows.push_back({Text(Get(l, "layout", "name")), Text(Get(l, "reason"))});
    return out + HtmlTable({"layout", "why not"}, rows);
  }
  const Json& fleet = Get(c, "fleet");
  std::string out = Para(fmt::format("{}: {} replicas on {} GPUs, {}/h ({}/month); the size is set by {}.",
                                     Get(c, "chosen_layout").get<std::string>(), N(Get(fleet, "replicas"), 9),
                                     N(Get(fleet, "gpus"), 9), Money(Get(c, "cost", "per_hour")),
                                     Money(Get(c, "cost", "per_month")), Plain(Get(c, "set_by"))));
  if (Get(c, "budget").is_object()) {
    const bool within = Get(c, "within_budget").get<bool>();
    out += Para(within ? fmt::format("Within the budget of {}/month.", Money(Get(c, "budget", "per_month")))
                       : fmt::format("Over the budget of {}/month by {}/month: the safe fleet is reported as it is, "
                                     "never shrunk.",
                                     Money(Get(c, "budget", "per_month")), Money(Get(c, "budget", "over_by_per_month"))),
                within ? "" : "bad");
  }
  const Json& v = Get(c, "simulated_after_loss");
  if (v.is_object()) {
    const bool meets = Get(v, "meets_targets").get<bool>();
    out += Para(fmt::format("Simulated: {} replicas at {}/s lose {} at {} s; after the loss the fleet {} its attainment "
                            "targets.",
                            N(Get(v, "replicas_before"), 9), N(Get(v, "rate_per_s")), Plain(Get(v, "scenario")),
                            N(Get(v, "loss_at_s")), meets ? "meets" : "misses"),
                meets ? "" : "bad");
  } else {
    out += Para("The fleet was not simulated (--no-verify).");
  }
  return out;
}

std::string Requirements(const Json& c) {
  const std::vector<std::string> layouts = LayoutNames(c);
  std::vector<BarGroup> groups;
  std::vector<std::vector<std::string>> rows;
  for (const char* dim : kDimensions) {
    BarGroup g{dim, {}, std::nullopt};
    for (const Json& l : Get(c, "layouts")) {
      const Json& d = Get(Get(l, "requirements"), dim);
      g.values.push_back(Num(Get(d, "replicas")));
      rows.push_back({Text(Get(l, "layout", "name")), dim, N(Get(d, "demand"), 6) + " " + Text(Get(d, "unit")),
                      N(Get(d, "per_replica"), 6), N(Get(d, "exact_replicas"), 4), N(Get(d, "replicas"), 9),
                      Contains(Get(l, "binding"), dim) ? "binding" : "", Text(Get(d, "basis"))});
    }
    groups.push_back(std::move(g));
  }
  ChartFrame frame{"Replicas each need asks for", "requirement", "replicas"};
  return Charts({BarChart(frame, layouts, groups)}) +
         HtmlTable({"layout", "need", "demand", "per replica", "exact", "replicas", "", "basis"}, rows);
}

std::string Losses(const Json& c) {
  const std::vector<std::string> layouts = LayoutNames(c);
  std::vector<BarGroup> groups;
  std::vector<std::vector<std::string>> rows;
  const Json& first = Get(c, "layouts").empty() ? Json() : Get(c, "layouts")[0];
  const size_t scenarios = Get(first, "loss_scenarios").is_array() ? Get(first, "loss_scenarios").size() : 0;
  for (size_t i = 0; i < scenarios; ++i) {
    BarGroup g{Get(first, "loss_scenarios")[i]["name"].get<std::string>(), {}, std::nullopt};
    for (const Json& l : Get(c, "layouts")) {
      const Json& s = Get(l, "loss_scenarios").is_array() && Get(l, "loss_scenarios").size() > i
                          ? Get(l, "loss_scenarios")[i]
                          : Json();
      g.values.push_back(Num(Get(s, "replicas_needed")));
      rows.push_back({Text(Get(l, "layout", "name")), Text(Get(s, "name")), N(Get(s, "replicas_needed"), 9),
                      N(Get(s, "surviving_replicas"), 9),
                      Get(s, "carried").is_boolean() ? (Get(s, "carried").get<bool>() ? "carried" : "NOT carried") : "-",
                      Contains(Get(l, "set_by"), Get(s, "name").is_string() ? Get(s, "name").get<std::string>() : "")
                          ? "sets the size"
                          : ""});
    }
    groups.push_back(std::move(g));
  }
  ChartFrame frame{"Replicas each loss scenario needs", "loss scenario", "replicas"};
  return Charts({BarChart(frame, layouts, groups)}) +
         HtmlTable({"layout", "loss", "replicas needed", "replicas left in the chosen fleet", "demand", ""}, rows);
}

std::string Placement(const Json& c) {
  const Json& per_domain = Get(Get(c, "fleet"), "per_domain");
  if (!per_domain.is_object()) return Para("No fleet was placed.");
  std::vector<BarGroup> groups;
  std::vector<std::vector<std::string>> rows;
  for (const Json& d : Get(Get(c, "spec"), "domains")) {
    const std::string name = d["name"].get<std::string>();
    const Json& p = Get(per_domain, name);
    groups.push_back(BarGroup{name, {Num(Get(p, "gpus")), Num(Get(p, "gpus_offered"))}, std::nullopt});
    rows.push_back({HtmlEscape(name), Text(Get(d, "region")), N(Get(p, "replicas"), 9), N(Get(p, "gpus"), 9),
                    N(Get(p, "gpus_offered"), 9)});
  }
  ChartFrame frame{"GPUs used against GPUs offered, per failure domain", "failure domain", "GPUs"};
  const std::vector<std::string> series = {"used", "offered"};
  return Charts({BarChart(frame, series, groups)}) +
         HtmlTable({"domain", "region", "replicas", "GPUs", "GPUs offered"}, rows);
}

std::string Simulated(const Json& c) {
  const Json& v = Get(c, "simulated_after_loss");
  if (!v.is_object()) return Para("Not simulated: run without --no-verify to see the fleet through its deciding loss.");
  std::vector<BarGroup> groups;
  std::vector<std::vector<std::string>> rows;
  for (const auto& [cls, after] : Get(v, "attainment").items()) {
    const Json& target = Get(Get(v, "targets"), cls);
    groups.push_back(BarGroup{cls, {Num(Get(Get(v, "attainment_before"), cls)), Num(after)},
                              target.is_number() ? std::optional<double>(Num(target)) : std::nullopt});
    rows.push_back({HtmlEscape(cls), Pct(Get(Get(v, "attainment_before"), cls)), Pct(after), Pct(target)});
  }
  ChartFrame frame{"SLO attainment before and after the loss (tick: target)", "class", "attainment"};
  const std::vector<std::string> series = {"before the loss", "after the loss"};
  return Para(fmt::format("{} in {}: {} replicas, {} after the loss at {} s; {} requests before, {} after; {} in flight "
                          "on the lost replicas were requeued.",
                          Plain(Get(v, "scenario")), Plain(Get(v, "regions")), N(Get(v, "replicas_before"), 9),
                          N(Get(v, "replicas_after"), 9), N(Get(v, "loss_at_s")), N(Get(v, "requests_before"), 9),
                          N(Get(v, "requests_after"), 9), N(Get(v, "lost_in_flight"), 9))) +
         Charts({BarChart(frame, series, groups)}) +
         HtmlTable({"class", "before the loss", "after the loss", "target"}, rows);
}

std::string Inputs(const Json& c) {
  const Json& s = Get(c, "spec");
  std::vector<std::vector<std::string>> rows = {
      {"spec", Text(Get(s, "spec"))},         {"digest", Text(Get(s, "digest"))},
      {"scenario", Text(Get(s, "scenario"))}, {"demand (requests/s)", Text(Get(s, "demand_rps"))},
      {"survive", Text(Get(s, "survive"))},   {"headroom", Pct(Get(s, "headroom"))},
      {"price", Text(Get(s, "price"))},       {"budget per month", Money(Get(s, "budget_per_month"))},
  };
  for (const Json& l : Get(c, "layouts")) {
    const Json& rc = Get(l, "replica_capacity");
    rows.push_back({"replica capacity, " + Text(Get(l, "layout", "name")),
                    fmt::format("{} ({}): {}/s per replica; workload {}", Text(Get(rc, "source")),
                                Get(rc, "max_rate").is_object() ? Text(Get(Get(rc, "max_rate"), "status")) : "-",
                                N(Get(l, "per_replica_rps"), 4), Text(Get(rc, "workload")))});
  }
  return HtmlTable({"input", "value"}, rows);
}

}  // namespace

Page CapacityPage(const Json& c) {
  Page page;
  page.title = "fleetplan capacity: " + (Get(c, "spec", "spec").is_string() ? Get(c, "spec", "spec").get<std::string>()
                                                                             : std::string("spec"));
  page.subtitle = fmt::format("survive {}, {}", Text(Get(c, "spec", "survive")), Text(Get(c, "spec", "digest")));
  page.sections = {
      {"decision", "Decision", Decision(c)},           {"requirements", "Requirements", Requirements(c)},
      {"losses", "Loss scenarios", Losses(c)},         {"placement", "Placement", Placement(c)},
      {"simulated", "Simulated loss", Simulated(c)},   {"inputs", "Inputs", Inputs(c)},
  };
  return page;
}

std::string CapacityHtml(const Json& c) { return RenderPage(CapacityPage(c)); }

}  // namespace fleetplan::report
