#include "fleetplan/report/plan_page.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "fleetplan/report/svg.h"
#include "report/json_view.h"

namespace fleetplan::report {
namespace {

// The rollout strip's boxes (pixels): wide enough for "canary-10" and "1% · hold".
constexpr int kStageWidth = 118;
constexpr int kStageGap = 26;
constexpr int kStripHeight = 92;

std::string Str(const Json& j) {
  return j.is_string() ? j.get<std::string>() : std::string();
}
std::string Money(const Json& j) {
  return j.is_number() ? "$" + FormatNumber(Num(j), 7) : "-";
}
// Prose in a table cell: HtmlTable right-aligns a cell that starts like a number ("5
// evidence files fresh"), so text is wrapped to stay left.
std::string Prose(std::string html) {
  return html.empty() ? html : "<span>" + html + "</span>";
}
std::string Code(const Json& j) {
  return j.is_string() ? "<code>" + HtmlEscape(Str(j)) + "</code>" : "-";
}

// A verdict's CSS class: pass, fail, hold, or none (not reached, not run).
std::string_view VerdictClass(const std::string& v) {
  if (v == "pass" || v == "fail" || v == "hold") return v;
  return "none";
}
std::string Badge(const Json& verdict) {
  const std::string v = verdict.is_string() ? Str(verdict) : "-";
  return fmt::format(R"(<span class="badge {}">{}</span>)", VerdictClass(v), HtmlEscape(v));
}
// Evidence freshness (evidence.h FreshnessName) as a badge: fresh passes, expired fails,
// not yet observed holds.
std::string FreshnessBadge(const Json& state) {
  const std::string s = state.is_string() ? Str(state) : "-";
  const std::string_view css = s == "fresh" ? "pass" : s == "expired" ? "fail" : s == "-" ? "none" : "hold";
  return fmt::format(R"(<span class="badge {}">{}</span>)", css, HtmlEscape(s));
}
// The stylesheet's colour of a verdict's box (page.cc's badges, one shade lighter).
std::string_view VerdictFill(const std::string& v) {
  if (v == "pass") return "#009e73";
  if (v == "fail") return "#d55e00";
  if (v == "hold") return "#e69f00";
  return "#e3e6ec";
}

// A check's numbers as text: `key=value` joined by "; ", arrays by ", ", objects inside
// in parentheses; numbers with 6 significant digits. Key order is plan.json's.
std::string ValueText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return FormatNumber(Num(v), 6);
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "-";
  std::string out;
  if (v.is_array()) {
    for (const Json& e : v) out += (out.empty() ? "" : ", ") + ValueText(e);
    return "[" + out + "]";
  }
  for (const auto& [k, e] : v.items()) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, ValueText(e));
  return "(" + out + ")";
}
// A name or a list of names, joined by ", " (unescaped).
std::string List(const Json& j) {
  if (!j.is_array()) return Plain(j);
  std::string out;
  for (const Json& e : j) out += (out.empty() ? "" : ", ") + ValueText(e);
  return out;
}
std::string NumbersText(const Json& numbers) {
  if (!numbers.is_object() || numbers.empty()) return "";
  std::string out;
  for (const auto& [k, v] : numbers.items()) out += fmt::format("{}{}={}", out.empty() ? "" : "; ", k, ValueText(v));
  return out;
}

std::vector<std::string> CheckRow(const Json& c) {
  return {Badge(Get(c, "decision")), Text(Get(c, "name")), Prose(Text(Get(c, "reason"))),
          HtmlEscape(NumbersText(Get(c, "numbers"))),
          Get(c, "nearest_passing").is_string() && !Str(Get(c, "nearest_passing")).empty()
              ? Text(Get(c, "nearest_passing"))
              : ""};
}
const std::vector<std::string> kCheckHeader = {"", "gate", "reason", "numbers", "nearest passing"};

// The reasons of the checks named `name` that did not pass, for a part the plan skipped.
std::string WhyNot(const Json& plan, std::initializer_list<std::string_view> names) {
  std::string out;
  for (const Json& c : Get(plan, "checks")) {
    const std::string name = Str(Get(c, "name"));
    if (Str(Get(c, "decision")) == "pass" || std::find(names.begin(), names.end(), name) == names.end()) continue;
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", name, Str(Get(c, "reason")));
  }
  return out.empty() ? "the plan did not reach this step" : out;
}

std::string Decision(const Json& plan) {
  const Json& d = Get(plan, "decision");
  const std::string release = Str(Get(d, "release"));
  const std::string css = release == "pass" ? "good" : release == "fail" ? "bad" : "warn";
  std::string out = fmt::format(R"(<p class="verdict release {}" id="release">Release: {}</p>)", css,
                                HtmlEscape(release.empty() ? "-" : release));
  out += Para(Plain(Get(d, "summary")));
  const Json& stage = Get(d, "stage");
  if (stage.is_object()) {
    out += Para(fmt::format("Rollout: {} at stage {} ({} traffic).", Plain(Get(stage, "rollout")),
                            Plain(Get(stage, "name")), Pct(Get(stage, "traffic"))),
                "muted");
  }
  std::vector<std::vector<std::string>> rows;
  for (const Json& r : Get(d, "reasons")) rows.push_back(CheckRow(r));
  out += fmt::format("<h3>{}</h3>", release == "pass" ? "Every check passes" : "Deciding reasons");
  return out + HtmlTable(kCheckHeader, rows);
}

std::string Checks(const Json& plan) {
  int counts[3] = {0, 0, 0};
  std::vector<std::vector<std::string>> rows;
  for (const Json& c : Get(plan, "checks")) {
    const std::string v = Str(Get(c, "decision"));
    ++counts[v == "pass" ? 0 : v == "hold" ? 1 : 2];
    rows.push_back(CheckRow(c));
  }
  return Para(fmt::format("{} checks, in the order the plan ran them: {} pass, {} hold, {} fail.", rows.size(),
                          counts[0], counts[1], counts[2])) +
         HtmlTable(kCheckHeader, rows);
}

std::string Inputs(const Json& plan) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& in : Get(plan, "inputs")) {
    const Json& f = Get(in, "freshness");
    const bool same = Get(in, "revision") == Get(in, "content_digest");
    // Evidence: its state, when it expires and when it was observed, in one cell.
    std::string fresh = "not evidence";
    if (f.is_object()) {
      fresh = FreshnessBadge(Get(f, "freshness")) + " expires " + Text(Get(f, "expires"));
      if (!Str(Get(f, "reason")).empty()) fresh += "<br>" + Text(Get(f, "reason"));
      fresh += R"(<br><span class="muted">observed )" + Text(Get(f, "observed_at")) + "</span>";
    }
    rows.push_back({Text(Get(in, "name")), Text(Get(in, "kind")), Text(Get(in, "role")),
                    same ? "the content digest" : Code(Get(in, "revision")), Code(Get(in, "content_digest")), fresh,
                    f.is_object() ? Text(Get(f, "source")) : ""});
  }
  return Para(fmt::format("{} files, each bound by its content digest; evidence judged at {}.", rows.size(),
                          Plain(Get(plan, "as_of")))) +
         HtmlTable({"file", "kind", "role", "revision", "content digest", "freshness at --as-of", "source"}, rows);
}

std::string Layouts(const Json& plan) {
  const Json& l = Get(plan, "layout");
  if (!Get(l, "feasible").is_array()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const Json& f : Get(l, "feasible")) {
    rows.push_back({Text(Get(f, "layout")), N(Get(f, "prefill_rank"), 9), N(Get(f, "decode_rank"), 9),
                    N(Get(f, "benchmark_rate_per_s"), 4), N(Get(f, "decode_tokens_per_s_per_gpu"), 5),
                    N(Get(f, "max_sequences"), 9)});
  }
  std::vector<std::vector<std::string>> rejected;
  for (const Json& r : Get(l, "rejected")) rejected.push_back({Text(Get(r, "layout")), Text(Get(r, "reason"))});
  return fmt::format("<h3>Layouts on one {} node ({} per node), ranked at {}</h3>", Text(Get(l, "gpu")),
                     N(Get(l, "gpus_per_node"), 9), Text(Get(Get(l, "ranked_at"), "basis"))) +
         HtmlTable({"layout", "prefill rank", "decode rank", "benchmark rate/s", "decode tok/s/GPU", "max sequences"},
                   rows) +
         (rejected.empty() ? "" : HtmlTable({"rejected", "why"}, rejected));
}

std::string Fleet(const Json& plan) {
  const Json& c = Get(plan, "capacity");
  if (!c.is_object())
    return Para("No fleet was sized: " + WhyNot(plan, {"coverage", "fit", "capacity"}) + ".") + Layouts(plan);
  const Json& fleet = Get(c, "fleet");
  const Json& spec = Get(c, "spec");
  std::string out = Para(fmt::format(
      "{} ({} GPUs per replica): {} replicas on {} GPUs across {} domains, surviving {}; {}/h ({}/month). The size is "
      "set by {}; the binding requirement is {}.",
      Plain(Get(c, "chosen_layout")), N(Get(c, "gpus_per_replica"), 9), N(Get(fleet, "replicas"), 9),
      N(Get(fleet, "gpus"), 9), Get(spec, "domains").is_array() ? Get(spec, "domains").size() : 0,
      Plain(Get(spec, "survive")), Money(Get(c, "cost", "per_hour")), Money(Get(c, "cost", "per_month")),
      List(Get(c, "set_by")), List(Get(c, "binding"))));
  if (Get(c, "budget").is_object()) {
    const bool within = Get(c, "within_budget").is_boolean() && Get(c, "within_budget").get<bool>();
    out += Para(within ? fmt::format("Within the budget of {}/month.", Money(Get(c, "budget", "per_month")))
                       : fmt::format("Over the budget of {}/month by {}/month.", Money(Get(c, "budget", "per_month")),
                                     Money(Get(c, "budget", "over_by_per_month"))),
                within ? "good" : "bad");
  }
  std::vector<BarGroup> replicas;
  std::vector<BarGroup> gpus;
  std::vector<std::vector<std::string>> rows;
  for (const Json& d : Get(spec, "domains")) {
    const std::string name = Str(Get(d, "name"));
    const Json& p = Get(Get(fleet, "per_domain"), name);
    replicas.push_back(BarGroup{name, {Num(Get(p, "replicas"))}, std::nullopt});
    gpus.push_back(BarGroup{name, {Num(Get(p, "gpus")), Num(Get(p, "gpus_offered"))}, std::nullopt});
    rows.push_back({HtmlEscape(name), Text(Get(d, "region")), N(Get(p, "replicas"), 9), N(Get(p, "gpus"), 9),
                    N(Get(p, "gpus_offered"), 9)});
  }
  const std::vector<std::string> one = {"replicas"};
  const std::vector<std::string> two = {"used", "offered"};
  out += Charts({BarChart(ChartFrame{"Replicas per failure domain", "failure domain", "replicas"}, one, replicas),
                 BarChart(ChartFrame{"GPUs used against offered", "failure domain", "GPUs"}, two, gpus)});
  out += HtmlTable({"domain", "region", "replicas", "GPUs", "GPUs offered"}, rows);
  const Json& cost = Get(c, "cost");
  out += HtmlTable({"cost", "GPUs", "per hour"},
                   {{"committed", N(Get(cost, "committed_gpus_used"), 9), Money(Get(cost, "committed_per_hour"))},
                    {"on demand", N(Get(cost, "on_demand_gpus"), 9), Money(Get(cost, "on_demand_per_hour"))},
                    {"total", N(Get(fleet, "gpus"), 9), Money(Get(cost, "per_hour"))}});
  std::vector<std::vector<std::string>> candidates;
  for (const Json& k : Get(c, "candidates")) {
    const bool chosen = Get(k, "layout") == Get(c, "chosen_layout");
    candidates.push_back(
        {Text(Get(k, "layout")) + (chosen ? " <strong>(chosen)</strong>" : ""),
         Get(k, "sized").is_boolean() ? (Get(k, "sized").get<bool>() ? "yes" : "no") : "-", N(Get(k, "replicas"), 9),
         N(Get(k, "gpus"), 9), Money(Get(k, "per_hour")),
         Get(k, "within_budget").is_boolean() ? (Get(k, "within_budget").get<bool>() ? "yes" : "no") : "-",
         HtmlEscape(List(Get(k, "binding"))), Text(Get(k, "reason"))});
  }
  out += "<h3>Candidates compared (the cheapest sized one is chosen)</h3>";
  out +=
      HtmlTable({"layout", "sized", "replicas", "GPUs", "per hour", "within budget", "binding", "why not"}, candidates);
  return out + Layouts(plan);
}

// The decision at both edges of the step model's stated error, and why the layouts differ.
std::string ModelError(const Json& plan) {
  const Json& m = Get(plan, "model_error");
  if (!m.is_object()) return Para("Not judged: " + WhyNot(plan, {"coverage", "fit", "capacity"}) + ".");
  std::string out = Para(fmt::format(
      "The step model is {} on {}; measured step times ran up to {}% longer than it predicts ({}). The benchmark's "
      "rates are {}: {}",
      Plain(Get(m, "step_model")), Plain(Get(m, "gpu")), N(Json(100 * Num(Get(m, "band")))), Plain(Get(m, "basis")),
      Plain(Get(m, "benchmark_method")),
      Str(Get(m, "benchmark_method")) == "simulated"
          ? "at the pessimistic edge every step is that much longer and each rate per replica that much lower."
          : "they carry no model error; only the simulations that verify the fleet do."));
  const bool inside = Get(m, "inside_band").is_array() && !Get(m, "inside_band").empty();
  out += Para(inside ? fmt::format("Inside the band the model cannot separate the pick from {}: a measured benchmark "
                                   "decides.", List(Get(m, "inside_band")))
                     : "The pick is the cheapest at both edges.",
              inside ? "bad" : "good");
  const Json& why = Get(m, "reasoning");
  if (why.is_array() && !why.empty()) out += Para("Why: " + Plain(why[0]) + ".");
  std::vector<std::string> series;
  std::map<std::string, std::vector<double>> cost;
  std::vector<std::vector<std::string>> rows;
  for (const Json& e : Get(m, "edges")) {
    series.push_back(fmt::format("{} (steps x{})", Str(Get(e, "edge")), N(Get(e, "step_time_scale"))));
    for (const Json& f : Get(e, "fleets")) {
      const bool sized = Get(f, "sized").is_boolean() && Get(f, "sized").get<bool>();
      cost[Str(Get(f, "layout"))].push_back(sized ? Num(Get(f, "per_month")) : std::numeric_limits<double>::quiet_NaN());
      rows.push_back({Text(Get(e, "edge")), Text(Get(f, "layout")) + (Get(e, "cheapest") == Get(f, "layout") ? " <strong>(cheapest)</strong>" : ""),
                      N(Get(f, "replica_rate_per_s")), sized ? N(Get(f, "replicas"), 9) : "not sized",
                      sized ? N(Get(f, "gpus"), 9) : "-", sized ? Money(Get(f, "per_month")) : "-",
                      sized && Get(f, "within_budget").is_boolean() ? (Get(f, "within_budget").get<bool>() ? "yes" : "no")
                                                                   : "-"});
    }
  }
  std::vector<BarGroup> cost_groups;
  const Json& budget = Get(Get(plan, "capacity"), "budget", "per_month");
  const std::optional<double> budget_tick = budget.is_number() ? std::optional<double>(Num(budget)) : std::nullopt;
  for (const auto& [layout, values] : cost) cost_groups.push_back(BarGroup{layout, values, budget_tick});
  std::vector<BarGroup> split_groups;
  std::vector<std::vector<std::string>> split_rows;
  for (const Json& l : Get(m, "layouts")) {
    for (const char* at : {"batch_1", "operating_point"}) {
      const Json& s = Get(l, at);
      const double step = Num(Get(s, "step_ms"));
      const double coll = Num(Get(s, "collectives_ms"));
      const std::string where = std::string(at) == "batch_1" ? "batch 1" : "operating point";
      split_groups.push_back(BarGroup{Str(Get(l, "layout")) + " " + where, {step - coll, coll}, std::nullopt});
      split_rows.push_back({Text(Get(l, "layout")), HtmlEscape(where), N(Get(s, "decodes"), 9), N(Get(s, "prefill_tokens"), 9),
                            N(Get(s, "step_ms")), N(Get(s, "collectives_ms")), Pct(Get(s, "collective_share"))});
    }
  }
  const std::vector<std::string> split_series = {"rest of the step", "collectives"};
  out += Charts({BarChart(ChartFrame{budget_tick ? "Fleet cost at each edge of the model's error (tick: the budget)"
                                             : "Fleet cost at each edge of the model's error",
                                 "layout", "$/month"},
                      series, cost_groups),
                 BarChart(ChartFrame{"A decode step, ms (why the layouts differ)", "layout and load", "ms"}, split_series,
                          split_groups)});
  out += HtmlTable({"edge", "layout", "rate per replica/s", "replicas", "GPUs", "per month", "within budget"}, rows);
  out += HtmlTable({"layout", "load", "decodes", "prompt tokens", "step ms", "collectives ms", "collective share"}, split_rows);
  return out;
}

std::string Simulation(const Json& plan) {
  const Json& s = Get(plan, "simulation");
  if (!s.is_object()) return Para("Not simulated: " + WhyNot(plan, {"coverage", "fit", "capacity"}) + ".");
  std::string out = Para(fmt::format(
      "The chosen fleet ({} x {}) at peak {}/s for {} s through {} routing: {} requests, {} not ok, {} rejected by "
      "admission{}.",
      N(Get(s, "replicas"), 9), Plain(Get(s, "layout")), N(Get(s, "rate_per_s")), N(Get(s, "duration_s")),
      Plain(Get(s, "router")), N(Get(s, "requests"), 9), N(Get(s, "not_ok"), 9), N(Get(s, "rejected"), 9),
      Get(s, "over_capacity").is_boolean() && Get(s, "over_capacity").get<bool>() ? "; over capacity" : ""));
  std::vector<BarGroup> groups;
  std::vector<std::vector<std::string>> rows;
  for (const Json& k : Get(s, "classes")) {
    const Json& target = Get(k, "target");
    groups.push_back(BarGroup{Str(Get(k, "class")),
                              {Num(Get(k, "attainment"))},
                              target.is_number() ? std::optional<double>(Num(target)) : std::nullopt});
    const bool meets = target.is_number() && Num(Get(k, "attainment")) >= Num(target);
    rows.push_back({Text(Get(k, "class")), N(Get(k, "requests"), 9), Pct(Get(k, "attainment")), Pct(target),
                    target.is_number() ? (meets ? "meets" : "<strong>misses</strong>") : "-"});
  }
  ChartFrame frame{"SLO attainment at peak (tick: the policy's target)", "class", "attainment"};
  frame.y_max = 1;
  frame.y_percent = true;
  const std::vector<std::string> series = {"attainment"};
  out += Charts({BarChart(frame, series, groups)});
  out += HtmlTable({"class", "requests", "attainment", "target", ""}, rows);
  std::vector<std::vector<std::string>> admission;
  for (const auto& [name, a] : Get(Get(s, "admission"), "classes").items()) {
    admission.push_back({HtmlEscape(name), N(Get(a, "priority"), 9), N(Get(a, "arrived"), 9), N(Get(a, "admitted"), 9),
                         N(Get(a, "rejected_total"), 9), N(Get(a, "expired"), 9),
                         N(Get(Get(a, "queue_wait"), "p99_ms"), 4)});
  }
  if (!admission.empty()) {
    out += "<h3>Admission per priority class</h3>";
    out +=
        HtmlTable({"class", "priority", "arrived", "admitted", "rejected", "expired", "queue wait p99 ms"}, admission);
  }
  return out;
}

std::string Gates(const Json& plan) {
  const Json& gates = Get(plan, "gates");
  if (!gates.is_object() || gates.empty()) return Para("The policy requires no gate beyond the plan's own checks.");
  std::string out;
  for (const auto& [name, g] : gates.items()) {
    out += fmt::format("<h3>{} ({})</h3>", HtmlEscape(name), Text(Get(g, "file")));
    out += Para(
        fmt::format("Proposed: {}; advancing: {}.", Plain(Get(g, "proposed")),
                    Get(g, "advance").is_array() && !Get(g, "advance").empty() ? List(Get(g, "advance")) : "none"));
    std::vector<std::vector<std::string>> rows;
    for (const Json& k : Get(g, "candidates")) {
      std::string failing;
      size_t checks = 0;
      for (const Json& c : Get(k, "checks")) {
        ++checks;
        if (Str(Get(c, "decision")) == "pass") continue;
        failing += fmt::format("{}{}: {}", failing.empty() ? "" : "; ", Str(Get(c, "name")), Str(Get(c, "reason")));
      }
      rows.push_back({Text(Get(k, "name")), Text(Get(k, "method")), Badge(Get(k, "decision")),
                      Text(Get(k, "advance_to")),
                      failing.empty() ? fmt::format("every check passes ({})", checks) : Prose(HtmlEscape(failing))});
    }
    out += HtmlTable({"candidate", "method", "", "advances to", "checks not passing"}, rows);
  }
  return out;
}

// The ladder as a strip of boxes, one per stage, coloured by verdict; the stage the
// rollout stopped at has a heavy border.
std::string StageStrip(const Json& stages, const std::string& at) {
  const int n = static_cast<int>(stages.is_array() ? stages.size() : 0);
  const int width = std::max(560, 20 + n * kStageWidth + std::max(0, n - 1) * kStageGap);
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {0} {1}" width="{0}" height="{1}" role="img">)",
      width, kStripHeight);
  out += "<title>The rollout ladder: each stage's verdict</title>";
  out += fmt::format(R"(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)", width, kStripHeight);
  out += R"(<text x="10" y="16" class="ct">The rollout ladder</text>)";
  for (int i = 0; i < n; ++i) {
    const Json& s = stages[static_cast<size_t>(i)];
    const std::string name = Str(Get(s, "name"));
    const std::string verdict = Str(Get(s, "verdict"));
    const int x = 10 + i * (kStageWidth + kStageGap);
    const bool here = name == at;
    const bool dark = VerdictClass(verdict) != "none";
    if (i > 0) {
      out += fmt::format(R"(<line x1="{}" y1="52" x2="{}" y2="52" stroke="#9aa3b2" stroke-width="2"/>)",
                         x - kStageGap + 3, x - 3);
    }
    out += fmt::format(
        R"(<rect x="{}" y="28" width="{}" height="48" rx="5" fill="{}" stroke="{}" stroke-width="{}"><title>{}: {}{}</title></rect>)",
        x, kStageWidth, VerdictFill(verdict), here ? "#1d2330" : "#ffffff", here ? 4 : 1, HtmlEscape(name),
        HtmlEscape(verdict), here ? " (the rollout stopped here)" : "");
    const std::string_view ink = dark ? "#ffffff" : "#1d2330";
    // No class: the stylesheet's text fills would override the ink.
    out +=
        fmt::format(R"(<text x="{}" y="48" font-size="12" text-anchor="middle" fill="{}" font-weight="600">{}</text>)",
                    x + kStageWidth / 2, ink, HtmlEscape(name));
    out += fmt::format(R"(<text x="{}" y="66" font-size="11" text-anchor="middle" fill="{}">{} · {}</text>)",
                       x + kStageWidth / 2, ink, Pct(Get(s, "traffic")), HtmlEscape(verdict));
  }
  return out + "</svg>";
}

std::string Rollout(const Json& plan) {
  const Json& r = Get(plan, "rollout");
  if (!r.is_object()) return Para("No rollout ladder was walked: " + WhyNot(plan, {"rollout"}) + ".");
  const std::string at = Str(Get(r, "stage"));
  std::string out =
      Para(fmt::format("{} against {}: {} at {} ({} traffic).", Plain(Get(r, "candidate")), Plain(Get(r, "baseline")),
                       Plain(Get(r, "decision")), at.empty() ? "-" : at, Pct(Get(r, "traffic"))));
  out += Charts({StageStrip(Get(r, "stages"), at)});
  // The table by hand: the stage the rollout stopped at is a highlighted row.
  out +=
      "<table><thead><tr><th>stage</th><th>traffic</th><th>evidence</th><th></th><th>reason</th></tr></thead><tbody>";
  for (const Json& s : Get(r, "stages")) {
    const bool here = Str(Get(s, "name")) == at;
    out += fmt::format(R"(<tr{}><td>{}{}</td><td class="n">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>)",
                       here ? R"( class="at")" : "", Text(Get(s, "name")), here ? " (stopped here)" : "",
                       Pct(Get(s, "traffic")), Text(Get(s, "evidence_kind")), Badge(Get(s, "verdict")),
                       Get(s, "reason").is_string() ? Text(Get(s, "reason")) : "");
  }
  out += "</tbody></table>";
  return out + Para(fmt::format("Ladder {} ({}); simulated evidence {}.", Plain(Get(Get(r, "ladder"), "digest")),
                                Plain(Get(Get(r, "ladder"), "file")),
                                Get(Get(r, "ladder"), "accept_simulated") == Json(true) ? "accepted" : "not accepted"),
                    "muted");
}

std::string Sensitivity(const Json& plan) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& s : Get(plan, "sensitivity")) {
    rows.push_back(
        {Text(Get(s, "name")), Prose(Text(Get(s, "size"))), Prose(Text(Get(s, "change"))),
         Get(s, "changes").is_boolean() ? (Get(s, "changes").get<bool>() ? "<strong>yes</strong>" : "no") : "-",
         HtmlEscape(NumbersText(Get(s, "threshold")))});
  }
  std::string out = Para(
      "Each perturbation the policy declares, re-run: what it gives, and the threshold where the "
      "fleet or the decision changes.");
  if (!rows.empty()) {
    out += HtmlTable({"perturbation", "size", "what it gives", "changes the fleet", "threshold"}, rows);
  } else if (Get(plan, "capacity").is_object()) {
    out += Para("No perturbation was run (--no-sensitivity).");
  } else {
    out += Para("No perturbation was run: " + WhyNot(plan, {"coverage", "fit", "capacity"}) + ".");
  }
  std::vector<std::vector<std::string>> triggers;
  for (const Json& t : Get(plan, "review_triggers")) {
    triggers.push_back({Prose(Text(Get(t, "trigger"))), N(Get(t, "threshold"), 6) + " " + Text(Get(t, "unit")),
                        Text(Get(t, "evidence")), Text(Get(t, "perturbation"))});
  }
  out += "<h3>Review triggers: what would reopen this decision</h3>";
  return out + (triggers.empty()
                    ? Para("None.")
                    : HtmlTable({"trigger", "threshold", "the evidence that would show it", "perturbation"}, triggers));
}

std::string Digest(const Json& plan) {
  return Para(fmt::format("The plan's digest is SHA-256 over {}: the same bundle and --as-of give the same digest, and "
                          "any change to a bound file or to the decision changes it.",
                          Plain(Get(plan, "digest_covers")))) +
         "<p id=\"digest\">" + Code(Get(plan, "digest")) + "</p>" +
         HtmlTable({"plan", "value"}, {{"name", Text(Get(plan, "name"))},
                                       {"kind", Text(Get(plan, "kind"))},
                                       {"version", N(Get(plan, "version"), 9)},
                                       {"as of", Text(Get(plan, "as_of"))},
                                       {"release", Badge(Get(Get(plan, "decision"), "release"))}});
}

}  // namespace

const std::vector<SectionRow>& PlanSections() {
  static const std::vector<SectionRow> rows = {
      {"decision", "Decision", &Decision},
      {"checks", "Checks", &Checks},
      {"inputs", "Inputs", &Inputs},
      {"fleet", "Fleet", &Fleet},
      {"model-error", "Model error", &ModelError},
      {"simulation", "Simulation at peak", &Simulation},
      {"gates", "Gates", &Gates},
      {"rollout", "Rollout", &Rollout},
      {"sensitivity", "Sensitivity", &Sensitivity},
      {"digest", "Digest", &Digest},
  };
  return rows;
}

Page PlanPage(const Json& plan) {
  Page page;
  page.title = "fleetplan plan: " + (Get(plan, "name").is_string() ? Str(Get(plan, "name")) : std::string("plan"));
  page.subtitle = fmt::format("release {} at {}, {}", Plain(Get(Get(plan, "decision"), "release")),
                              Plain(Get(plan, "as_of")), Plain(Get(plan, "digest")));
  for (const SectionRow& row : PlanSections()) {
    page.sections.push_back({std::string(row.id), std::string(row.title), row.build(plan)});
  }
  return page;
}

std::string PlanHtml(const Json& plan) {
  return RenderPage(PlanPage(plan));
}

}  // namespace fleetplan::report
