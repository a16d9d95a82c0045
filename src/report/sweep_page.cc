#include "fleetplan/report/sweep_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "fleetplan/report/svg.h"
#include "report/json_view.h"

namespace fleetplan::report {
namespace {

// The attainment-against-rate chart draws at most this many configurations.
constexpr size_t kMaxCurves = 16;

std::string ValuesText(const Json& values) {
  std::string out;
  for (const auto& [path, v] : values.items()) {
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", path, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

const Json& Mean(const Json& config, const std::string& figure) {
  return Get(Get(Get(config, "figures"), figure), "mean");
}

std::string FirstTarget(const Json& s) {
  const Json& order = Get(Get(s, "spec"), "target_order");
  return order.is_array() && !order.empty() && order[0].is_string() ? order[0].get<std::string>() : std::string();
}

std::string Summary(const Json& s) {
  const Json& counts = Get(s, "counts");
  std::string out = Para(
      fmt::format("{} points: {} ok, {} invalid, {} failed. Targets ({}): {}.", N(Get(Get(s, "spec"), "points"), 9),
                  N(Get(counts, "ok"), 9), N(Get(counts, "invalid"), 9), N(Get(counts, "failed"), 9),
                  Plain(Get(Get(s, "spec"), "targets_source")), Plain(Get(Get(s, "spec"), "targets"))));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [objective, b] : Get(s, "best").items()) {
    rows.push_back({HtmlEscape(objective), Text(Get(b, "verdict")), N(Get(b, "configuration"), 9),
                    HtmlEscape(ValuesText(Get(b, "values"))), N(Get(b, "gpus"), 9), N(Get(Get(b, "value"), "mean"), 4),
                    Text(Get(b, "tied_with")), Text(Get(b, "objective"))});
  }
  return out +
         HtmlTable({"objective", "verdict", "configuration", "values", "GPUs", "value", "tied with", "rule"}, rows);
}

// With more configurations than a page holds, the page view (SweepResult::PageView) keeps
// the first ones and says of how many; sweep.json and sweep.csv hold them all.
std::string ShownNote(const Json& s) {
  const Json& shown = Get(s, "shown");
  if (!Get(shown, "configurations").is_number_integer() || !Get(shown, "of").is_number_integer()) return "";
  if (Get(shown, "configurations").get<int64_t>() >= Get(shown, "of").get<int64_t>()) return "";
  return Para(fmt::format("The first {} of {} configurations; every one is in sweep.json and sweep.csv.",
                          N(Get(shown, "configurations"), 9), N(Get(shown, "of"), 9)));
}

std::string Configurations(const Json& s) {
  const std::string cls = FirstTarget(s);
  std::vector<std::vector<std::string>> rows;
  for (const Json& c : Get(s, "configurations")) {
    rows.push_back({N(Get(c, "configuration"), 9), N(Get(c, "gpus"), 9), N(Mean(c, "fleet.goodput_rps"), 4),
                    N(Mean(c, "fleet.goodput_per_gpu"), 4), N(Mean(c, "classes." + cls + ".ttft_p99_ms"), 5),
                    Get(c, "max_rate").is_object() ? N(Get(Get(c, "max_rate"), "bracket")[0], 4) : "-",
                    Get(c, "meets_slo").is_boolean() ? (Get(c, "meets_slo").get<bool>() ? "yes" : "no") : "-",
                    HtmlEscape(ValuesText(Get(c, "values")))});
  }
  return ShownNote(s) + HtmlTable({"configuration", "GPUs", "goodput/s", "goodput/GPU", cls + " TTFT p99 ms",
                                   "max rate/s", "meets", "values"},
                                  rows);
}

std::string Pareto(const Json& s) {
  const Json& p = Get(s, "pareto");
  const std::string x_key = Get(p, "x").is_string() ? Get(p, "x").get<std::string>() : "fleet.goodput_per_gpu";
  const std::string y_key = Get(p, "y").is_string() ? Get(p, "y").get<std::string>() : "";
  Line all{"configurations", {}, {}, 1, false, false, true, true, {}};
  for (const Json& c : Get(s, "configurations")) {
    all.x.push_back(Num(Mean(c, x_key)));
    all.y.push_back(Num(Mean(c, y_key)));
    all.point_labels.push_back(
        fmt::format("configuration {}: {}", N(Get(c, "configuration"), 9), ValuesText(Get(c, "values"))));
  }
  Line front{"Pareto front", {}, {}, 0, false, false, true, false, {}};
  std::vector<std::pair<double, std::pair<double, std::string>>> pts;
  for (const Json& f : Get(p, "front")) {
    pts.push_back({Num(Get(f, "goodput_per_gpu")),
                   {Num(Get(f, "ttft_p99_ms")),
                    fmt::format("configuration {}: {}", N(Get(f, "configuration"), 9), ValuesText(Get(f, "values")))}});
  }
  std::sort(pts.begin(), pts.end());
  for (const auto& [x, rest] : pts) {
    front.x.push_back(x);
    front.y.push_back(rest.first);
    front.point_labels.push_back(rest.second);
  }
  ChartFrame frame{fmt::format("{} against {}", y_key, x_key), "goodput per GPU (req/s)",
                   Text(Get(p, "class")) + " TTFT p99 (ms)"};
  const std::vector<Line> lines = {all, front};
  return Para(
             "Every configuration is a dot; the front joins those no other configuration beats on both axes (more "
             "goodput per GPU, lower tail latency). Hover a dot for its values.") +
         ShownNote(s) + Charts({LineChart(frame, lines)});
}

std::string MaxRate(const Json& s) {
  const Json& search = Get(Get(Get(s, "spec"), "search"), "max_rate");
  if (!search.is_object()) return Para("The spec has no search: each configuration ran at its scenario's own rate.");
  const std::string cls = FirstTarget(s);
  // The first seed's probes of each configuration, sorted by rate.
  std::map<int64_t, const Json*> first_point;
  for (const Json& pt : Get(s, "points")) {
    if (!Get(pt, "max_rate").is_object()) continue;
    const auto c = Get(pt, "configuration").get<int64_t>();
    if (!first_point.count(c)) first_point[c] = &pt;
  }
  std::vector<Line> lines;
  for (const auto& [config, pt] : first_point) {
    if (lines.size() == kMaxCurves) break;
    std::vector<std::pair<double, double>> probes;
    for (const Json& p : Get(Get(*pt, "max_rate"), "probes")) {
      if (!Get(p, "complete").is_boolean() || !Get(p, "complete").get<bool>()) continue;  // early-stopped: a bound
      probes.push_back({Num(Get(p, "rate_per_s")), Num(Get(Get(p, "attainment"), cls))});
    }
    std::sort(probes.begin(), probes.end());
    Line l{fmt::format("cfg {}", config), {}, {}, static_cast<int>(lines.size()), false, false, true, false, {}};
    for (const auto& [rate, att] : probes) {
      l.x.push_back(rate);
      l.y.push_back(att);
    }
    lines.push_back(std::move(l));
  }
  ChartFrame frame{fmt::format("{} attainment against arrival rate (complete probes)", cls), "arrival rate (req/s)",
                   "attainment"};
  frame.log_x = true;
  frame.y_percent = true;
  frame.y_max = 1;
  return Para(fmt::format("Each line is one configuration's max-rate search (first seed); probes stopped early, once "
                          "they could no longer pass, are upper bounds and are left out. Target: {}.",
                          Plain(Get(Get(search, "attainment"), cls)))) +
         Charts({LineChart(frame, lines)});
}

std::string Inputs(const Json& s) {
  const Json& spec = Get(s, "spec");
  std::vector<std::vector<std::string>> rows = {
      {"spec", Text(Get(spec, "source"))},
      {"digest", Text(Get(spec, "digest"))},
      {"base", Text(Get(Get(spec, "base"), "source"))},
      {"axes", Text(Get(spec, "axes"))},
      {"overrides", Text(Get(spec, "overrides"))},
      {"seeds", Text(Get(spec, "seeds"))},
      {"search", Text(Get(spec, "search"))},
      {"price", Text(Get(spec, "price"))},
  };
  std::string notes;
  for (const Json& n : Get(s, "notes")) notes += Para(n.is_string() ? n.get<std::string>() : n.dump());
  return HtmlTable({"input", "value"}, rows) + notes;
}

}  // namespace

Page SweepPage(const Json& s) {
  Page page;
  page.title =
      "fleetplan sweep: " +
      (Get(Get(s, "spec"), "name").is_string() ? Get(Get(s, "spec"), "name").get<std::string>() : std::string("spec"));
  page.subtitle = fmt::format("{} configurations x {} seeds, {}", N(Get(Get(s, "spec"), "configurations"), 9),
                              Get(Get(s, "spec"), "seeds").is_array() ? Get(Get(s, "spec"), "seeds").size() : 0,
                              Text(Get(Get(s, "spec"), "digest")));
  page.sections = {
      {"summary", "Summary", Summary(s)},    {"configurations", "Configurations", Configurations(s)},
      {"pareto", "Pareto front", Pareto(s)}, {"max-rate", "Attainment against rate", MaxRate(s)},
      {"inputs", "Inputs", Inputs(s)},
  };
  return page;
}

std::string SweepHtml(const Json& s) {
  return RenderPage(SweepPage(s));
}

}  // namespace fleetplan::report
