#include "fleetplan/report/simulation_page.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fleetplan/report/svg.h"
#include "report/json_view.h"

namespace fleetplan::report {
namespace {

// Per-replica charts draw at most this many replicas (the first ones); the fleet charts
// and the replica table cover every one.
constexpr size_t kMaxReplicaLines = 12;

std::vector<std::string> ClassNames(const Json& report) {
  std::vector<std::string> names;
  for (const auto& [name, value] : Get(report, "classes").items()) names.push_back(name);
  return names;
}


// The metrics of a report, with their objective names.
struct Metric {
  std::string_view key;        // report.json key
  std::string_view objective;  // the objective that bounds it
  std::string_view label;
};
constexpr Metric kMetrics[] = {{"ttft_ms", "ttft", "TTFT"},
                               {"tpot_ms", "tpot", "TPOT"},
                               {"itl_max_ms", "itl_max", "ITL-max"},
                               {"e2e_ms", "e2e", "E2E"}};

// ---- verdict ----

std::string Verdict(const Json& r) {
  const Json& fleet = Get(r, "fleet");
  std::string out;
  const Json& worst = Get(fleet, "worst_class");
  const bool has_slo = Get(r, "slo").is_boolean() && Get(r, "slo").get<bool>();
  const double attainment = Num(Get(fleet, "slo_attainment"));
  std::string line = fmt::format("{} requests; SLO attainment {} over the fleet, goodput {} req/s of {} req/s served",
                                 N(Get(fleet, "requests"), 9), Pct(Get(fleet, "slo_attainment")),
                                 N(Get(fleet, "goodput_rps")), N(Get(fleet, "throughput_rps")));
  if (worst.is_object()) {
    line += fmt::format("; worst class {} at {}", Text(Get(worst, "name")), Pct(Get(worst, "slo_attainment")));
  }
  if (!has_slo) line += " (no objectives declared: every ok request qualifies)";
  const std::string_view css = !std::isfinite(attainment) ? "verdict" : attainment >= 0.99 ? "verdict good" : attainment < 0.9 ? "verdict bad" : "verdict";
  out += fmt::format("<p class=\"{}\">{}.</p>", css, line);
  std::vector<std::vector<std::string>> rows;
  for (const std::string& name : ClassNames(r)) {
    const Json& c = Get(Get(r, "classes"), name);
    // Binding: the declared objective the fewest requests met.
    std::string binding = "-";
    std::string objectives;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (const auto& [objective, o] : Get(c, "objectives").items()) {
      const int64_t met = Get(o, "met").is_number() ? Get(o, "met").get<int64_t>() : 0;
      const std::string target = Get(o, "target_ms").is_number() ? " &le; " + N(Get(o, "target_ms"), 4) + " ms" : "";
      objectives += fmt::format("{}{}: {}<br>", HtmlEscape(objective), target, Pct(Get(o, "attainment")));
      if (met < fewest) {
        fewest = met;
        binding = HtmlEscape(objective) + " (" + Pct(Get(o, "attainment")) + " met)";
      }
    }
    rows.push_back({HtmlEscape(name), N(Get(c, "requests"), 9), N(Get(c, "status", "ok"), 9),
                    Pct(Get(c, "slo_attainment")), N(Get(c, "goodput_rps")), N(Get(c, "throughput_rps")), binding,
                    objectives.empty() ? "none declared" : objectives});
  }
  out += HtmlTable({"class", "requests", "ok", "SLO attainment", "goodput req/s", "throughput req/s", "binding objective",
                    "objectives met"},
                   rows);
  out += Para("Attainment = requests meeting every objective of their class / requests; goodput = those finishing in "
              "the measurement window / its length. The binding objective is the one the fewest requests met.",
              "muted");
  return out;
}

// ---- latency ----

std::string Latency(const Json& r) {
  const std::vector<std::string> classes = ClassNames(r);
  std::vector<std::string> svgs;
  for (const Metric& m : kMetrics) {
    const std::vector<double> edges = Doubles(Get(r, "histogram_edges_ms", m.key));
    std::vector<Line> lines;
    std::vector<Marker> markers;
    for (size_t i = 0; i < classes.size(); ++i) {
      const Json& c = Get(Get(r, "classes"), classes[i]);
      std::vector<int64_t> counts;
      for (const Json& v : Get(Get(c, "histograms"), m.key)) counts.push_back(v.get<int64_t>());
      lines.push_back(CdfOfHistogram(classes[i], edges, counts, static_cast<int>(i)));
      const Json& target = Get(Get(c, "objectives", m.objective), "target_ms");
      if (target.is_number()) {
        markers.push_back({Num(target), fmt::format("{} {} {} ms", classes[i], m.label, N(target, 4)),
                           static_cast<int>(i)});
      }
    }
    ChartFrame f;
    f.title = fmt::format("{} CDF by class", m.label);
    f.x_label = fmt::format("{} (ms, log scale)", m.label);
    f.y_label = "share of ok requests";
    f.log_x = true;
    f.y_max = 1;
    f.y_percent = true;
    svgs.push_back(LineChart(f, lines, markers));
  }
  std::string out = Charts(svgs);
  std::vector<std::vector<std::string>> rows;
  for (const std::string& name : classes) {
    const Json& c = Get(Get(r, "classes"), name);
    for (const Metric& m : kMetrics) {
      const Json& s = Get(c, m.key);
      rows.push_back({HtmlEscape(name), std::string(m.label), N(Get(s, "count"), 9), N(Get(s, "p50")), N(Get(s, "p90")),
                      N(Get(s, "p99")), N(Get(s, "max"))});
    }
  }
  out += HtmlTable({"class", "metric", "count", "p50 ms", "p90 ms", "p99 ms", "max ms"}, rows);
  out += Para("CDFs from the report's histograms (shared edges: a 1-2-5 ladder merged with every SLO target, so each "
              "dashed threshold is an edge and the curve's height there is the share that met it).",
              "muted");
  return out;
}

// ---- e2e by output ----

std::string E2eByOutput(const Json& r) {
  std::vector<std::string> svgs;
  std::vector<std::vector<std::string>> rows;
  const std::vector<std::string> classes = ClassNames(r);
  const std::vector<std::string> series = {"p50", "p99"};
  for (const std::string& name : classes) {
    std::vector<BarGroup> groups;
    int64_t lower = 0;
    for (const Json& b : Get(Get(r, "classes", name), "e2e_by_output")) {
      const Json& max_output = Get(b, "max_output");
      const std::string label = max_output.is_number() ? fmt::format("{}-{}", lower + 1, max_output.get<int64_t>())
                                                       : fmt::format("&gt;{}", lower);
      if (max_output.is_number()) lower = max_output.get<int64_t>();
      const Json& e2e = Get(b, "e2e_ms");
      if (!Get(b, "requests").is_number() || Get(b, "requests").get<int64_t>() == 0) continue;
      rows.push_back({HtmlEscape(name), label, N(Get(b, "requests"), 9), N(Get(e2e, "p50")), N(Get(e2e, "p99")),
                      N(Get(b, "target_ms"), 4), Get(b, "target_ms").is_number() ? N(Get(b, "met"), 9) : "-"});
      BarGroup g;
      g.label = max_output.is_number() ? fmt::format("<={}", max_output.get<int64_t>()) : fmt::format(">{}", lower);
      g.values = {Num(Get(e2e, "p50")) / 1000, Num(Get(e2e, "p99")) / 1000};
      if (Get(b, "target_ms").is_number()) g.tick = Num(Get(b, "target_ms")) / 1000;
      groups.push_back(std::move(g));
    }
    ChartFrame f;
    f.title = fmt::format("{}: E2E by output tokens", name);
    f.x_label = "output tokens";
    f.y_label = "E2E (s)";
    f.width = 420;
    svgs.push_back(BarChart(f, series, groups));
  }
  std::string out = Charts(svgs);
  out += HtmlTable({"class", "output tokens", "requests", "E2E p50 ms", "E2E p99 ms", "target ms", "met"}, rows);
  out += Para("Buckets are the class's e2e_by_output targets, or the default powers of two when it declares none; "
              "black marks are bucket targets. Empty buckets are left out.",
              "muted");
  return out;
}

// ---- time series ----

// One line of a windowed series: a point at each window's start, held to the next, and
// the last value held to the run's end.
Line SeriesLine(const Json& ts, const Json& values, std::string label, int color, double scale = 1) {
  Line l;
  l.label = std::move(label);
  l.color = color;
  l.step = true;
  l.x = Doubles(Get(ts, "window_start_s"));
  for (const Json& v : values) l.y.push_back(Num(v) * scale);
  l.x.resize(std::min(l.x.size(), l.y.size()));
  l.y.resize(l.x.size());
  if (!l.x.empty()) {
    l.x.push_back(Num(Get(ts, "end_s")));
    l.y.push_back(l.y.back());
  }
  return l;
}

std::string SeriesChart(const Json& ts, std::string title, std::string y_label, std::vector<Line> lines) {
  ChartFrame f;
  f.title = std::move(title);
  f.x_label = "simulated time (s)";
  f.y_label = std::move(y_label);
  return LineChart(f, lines);
}

std::string TimeSeriesSection(const Json& r) {
  const Json& ts = Get(r, "timeseries");
  if (!ts.is_object()) return Para("This report has no time series.");
  const Json& fleet = Get(ts, "fleet");
  const std::string per = fmt::format("per {} s window", N(Get(ts, "interval_s")));
  std::vector<std::string> svgs;
  svgs.push_back(SeriesChart(ts, "Fleet: requests " + per, "requests",
                             {SeriesLine(ts, Get(fleet, "arrivals"), "arrivals", 0),
                              SeriesLine(ts, Get(fleet, "completions"), "completions", 1),
                              SeriesLine(ts, Get(fleet, "good"), "good", 2),
                              SeriesLine(ts, Get(fleet, "failures"), "failures", 6)}));
  std::vector<Line> goodput;
  int color = 0;
  for (const auto& [name, c] : Get(ts, "classes").items()) goodput.push_back(SeriesLine(ts, Get(c, "goodput_rps"), name, color++));
  svgs.push_back(SeriesChart(ts, "Goodput by class", "qualified req/s", goodput));
  svgs.push_back(SeriesChart(ts, "Fleet: running and waiting (at window end)", "requests",
                             {SeriesLine(ts, Get(fleet, "running"), "running", 0),
                              SeriesLine(ts, Get(fleet, "waiting"), "waiting", 1),
                              SeriesLine(ts, Get(fleet, "in_flight"), "in flight", 6)}));
  svgs.push_back(SeriesChart(ts, "Fleet: KV blocks (at window end)", "blocks",
                             {SeriesLine(ts, Get(fleet, "kv_used_blocks"), "used", 0),
                              SeriesLine(ts, Get(fleet, "kv_cached_blocks"), "cached", 2)}));
  svgs.push_back(SeriesChart(ts, "Fleet: tokens computed " + per, "tokens",
                             {SeriesLine(ts, Get(fleet, "prefill_tokens"), "prefill", 0),
                              SeriesLine(ts, Get(fleet, "decode_tokens"), "decode", 1)}));
  svgs.push_back(SeriesChart(ts, "Fleet: preemptions " + per, "preemptions",
                             {SeriesLine(ts, Get(fleet, "preemptions"), "preemptions", 1)}));
  if (Get(fleet, "transfer_queue").is_array()) {
    svgs.push_back(SeriesChart(ts, "Pools: fleet queues (at window end)", "requests",
                               {SeriesLine(ts, Get(fleet, "transfer_queue"), "transfer queue", 0),
                                SeriesLine(ts, Get(fleet, "admission_queue"), "admission queue", 1)}));
  }
  const Json& replicas = Get(ts, "replicas");
  struct PerReplica {
    std::string_view key;
    std::string_view title;
    std::string_view unit;
  };
  constexpr PerReplica kPerReplica[] = {{"running", "Running per replica", "requests"},
                                        {"waiting", "Waiting per replica", "requests"},
                                        {"kv_used_blocks", "KV blocks used per replica", "blocks"},
                                        {"decode_tokens", "Decode tokens per replica", "tokens"}};
  const size_t shown = std::min(replicas.is_array() ? replicas.size() : 0, kMaxReplicaLines);
  for (const PerReplica& p : kPerReplica) {
    std::vector<Line> lines;
    for (size_t i = 0; i < shown; ++i) {
      const Json& rep = replicas[i];
      std::string label = fmt::format("r{}", i);
      if (Get(rep, "role").is_string()) label += " " + Get(rep, "role").get<std::string>();
      lines.push_back(SeriesLine(ts, Get(rep, p.key), label, static_cast<int>(i)));
    }
    svgs.push_back(SeriesChart(ts, std::string(p.title), std::string(p.unit), lines));
  }
  std::string out = Charts(svgs);
  std::string note = fmt::format(
      "{} windows of {} s (report.json timeseries). Counts are what happened inside a window; levels (running, "
      "waiting, in flight, KV blocks, queues) are the state at its end.",
      N(Get(ts, "windows"), 9), N(Get(ts, "interval_s")));
  if (replicas.is_array() && replicas.size() > shown) {
    note += fmt::format(" Per-replica charts show the first {} of {} replicas; the fleet charts cover all.", shown,
                        replicas.size());
  }
  return out + Para(note, "muted");
}

// ---- replicas ----

std::string Replicas(const Json& r) {
  const Json& engines = Get(r, "engine", "replicas");
  const Json& replicas = Get(r, "replicas");
  std::vector<BarGroup> busy;
  std::vector<BarGroup> routed;
  std::vector<std::vector<std::string>> rows;
  double routed_sum = 0;
  double routed_max = 0;
  for (size_t i = 0; i < engines.size() && i < replicas.size(); ++i) {
    const Json& e = engines[i];
    const Json& f = replicas[i];
    const std::string label = fmt::format("r{}", i);
    busy.push_back({label, {Num(Get(e, "busy_fraction")), Num(Get(e, "kv_mean_utilization"))}, std::nullopt});
    routed.push_back({label, {Num(Get(f, "routed"))}, std::nullopt});
    routed_sum += Num(Get(f, "routed"));
    routed_max = std::max(routed_max, Num(Get(f, "routed")));
    rows.push_back({label, Get(e, "role").is_string() ? Text(Get(e, "role")) : "mixed", N(Get(f, "routed"), 9),
                    N(Get(e, "completed"), 9), Pct(Get(e, "busy_fraction")), Pct(Get(e, "kv_mean_utilization")),
                    Pct(Get(e, "kv_peak_utilization")), N(Get(e, "preemptions"), 9), N(Get(f, "max_queue_depth"), 9),
                    N(Get(f, "ttft_p99_ms")), N(Get(f, "mean_matched_prefix_tokens"))});
  }
  ChartFrame fb;
  fb.title = "Busy share and mean KV use per replica";
  fb.x_label = "replica";
  fb.y_label = "share";
  fb.y_max = 1;
  fb.y_percent = true;
  ChartFrame fr;
  fr.title = "Requests routed per replica";
  fr.x_label = "replica";
  fr.y_label = "requests";
  const std::vector<std::string> busy_series = {"busy", "KV mean use"};
  const std::vector<std::string> routed_series = {"routed"};
  std::string out = Charts({BarChart(fb, busy_series, busy), BarChart(fr, routed_series, routed)});
  const double mean = engines.empty() ? 0 : routed_sum / static_cast<double>(engines.size());
  out += Para(fmt::format("Routing balance: the busiest replica took {} the mean share of requests ({} routed, {} "
                          "replicas).",
                          mean > 0 ? FormatNumber(routed_max / mean, 3) + "x" : "-", FormatNumber(routed_sum, 9),
                          engines.size()));
  out += HtmlTable({"replica", "role", "routed", "completed", "busy", "KV mean", "KV peak", "preemptions", "max queue",
                    "TTFT p99 ms", "mean matched prefix"},
                   rows);
  return out;
}

// ---- prefix cache ----

std::string PrefixCache(const Json& r) {
  const Json& fleet = Get(Get(r, "fleet"), "prefix_cache");
  if (!Get(fleet, "lookups").is_number() || Get(fleet, "lookups").get<int64_t>() == 0) {
    return Para("The prefix cache made no lookups in this run (engine.prefix_cache is off, or nothing was admitted).");
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<BarGroup> groups;
  const auto row = [&](const std::string& name, const Json& p) {
    rows.push_back({HtmlEscape(name), N(Get(p, "lookups"), 9), N(Get(p, "lookup_tokens"), 9), N(Get(p, "hit_tokens"), 9),
                    Pct(Get(p, "hit_rate")), N(Get(p, "saved_prefill_tokens"), 9),
                    FormatNumber(Num(Get(p, "saved_prefill_ms")) / 1000, 4), N(Get(p, "rehit_tokens"), 9),
                    N(Get(p, "evictions"), 9), N(Get(p, "invalidations"), 9)});
  };
  for (const std::string& name : ClassNames(r)) {
    const Json& p = Get(Get(r, "classes", name), "prefix_cache");
    row(name, p);
    groups.push_back({name, {Num(Get(p, "hit_rate"))}, std::nullopt});
  }
  row("fleet", fleet);
  groups.push_back({"fleet", {Num(Get(fleet, "hit_rate"))}, std::nullopt});
  ChartFrame f;
  f.title = "Prefix-cache hit rate (share of looked-up prompt tokens)";
  f.x_label = "class";
  f.y_label = "hit rate";
  f.y_max = 1;
  f.y_percent = true;
  const std::vector<std::string> series = {"hit rate"};
  std::string out = Charts({BarChart(f, series, groups)});
  out += Para(fmt::format("The cache saved {} prompt tokens of prefill, {} s of prefill time by the step model.",
                          N(Get(fleet, "saved_prefill_tokens"), 9),
                          FormatNumber(Num(Get(fleet, "saved_prefill_ms")) / 1000, 4)));
  out += HtmlTable({"class", "lookups", "lookup tokens", "hit tokens", "hit rate", "saved prefill tokens",
                    "saved prefill s", "re-hit tokens", "evictions", "invalidations"},
                   rows);
  return out;
}

// ---- kv transfer ----

std::string KvTransfer(const Json& r) {
  const Json& d = Get(r, "disaggregation");
  if (!d.is_object()) {
    return Para("No prefill pool in this scenario: every request runs whole on one replica (deployment.pools adds "
                "prefill/decode pools).");
  }
  struct Stage {
    std::string_view name;
    const Json* q;
  };
  const Stage stages[] = {{"admission wait (for a decode slot)", &Get(Get(d, "admission"), "wait")},
                          {"prefill stage (submit to prompt computed)", &Get(Get(d, "prefill"), "stage_time")},
                          {"transfer queue (prompt computed to blocks allocated)", &Get(Get(d, "transfer"), "queue_wait")},
                          {"transfer (KV moving)", &Get(Get(d, "transfer"), "duration")}};
  std::vector<BarGroup> groups;
  std::vector<std::vector<std::string>> rows;
  const char* short_names[] = {"admission", "prefill", "queue", "transfer"};
  for (size_t i = 0; i < std::size(stages); ++i) {
    const Json& q = *stages[i].q;
    rows.push_back({std::string(stages[i].name), N(Get(q, "count"), 9), N(Get(q, "p50_ms")), N(Get(q, "p99_ms"))});
    groups.push_back({short_names[i], {Num(Get(q, "p50_ms")), Num(Get(q, "p99_ms"))}, std::nullopt});
  }
  ChartFrame f;
  f.title = "Disaggregated request stages";
  f.x_label = "stage";
  f.y_label = "ms";
  const std::vector<std::string> series = {"p50", "p99"};
  std::string out = Charts({BarChart(f, series, groups)});
  out += Para(fmt::format("{} requests disaggregated, {} colocated (below {} prompt tokens).",
                          N(Get(d, "requests", "disaggregated"), 9), N(Get(d, "requests", "colocated"), 9),
                          N(Get(d, "colocate_below_tokens"), 9)));
  out += HtmlTable({"stage", "count", "p50 ms", "p99 ms"}, rows);
  const Json& t = Get(d, "transfer");
  out += HtmlTable({"transfers", "completed", "GB moved", "cached tokens", "timeouts", "failures", "retries",
                    "recomputations", "rejections", "link busy", "prefill busy", "decode busy"},
                   {{N(Get(t, "count"), 9), N(Get(t, "completed"), 9), FormatNumber(Num(Get(t, "bytes")) / 1e9, 4),
                     N(Get(t, "cached_tokens"), 9), N(Get(t, "timeouts"), 9), N(Get(t, "failures"), 9),
                     N(Get(t, "retries"), 9), N(Get(t, "recomputations"), 9), N(Get(t, "rejections"), 9),
                     Pct(Get(t, "link_busy_fraction")), Pct(Get(d, "prefill", "busy_fraction")),
                     Pct(Get(d, "decode", "busy_fraction"))}});
  return out;
}

// ---- inputs ----

std::string Inputs(const Json& r) {
  const Json& s = Get(r, "scenario");
  const Json& dep = Get(r, "deployment");
  const Json& w = Get(r, "window");
  std::vector<std::vector<std::string>> rows = {
      {"scenario", Text(Get(s, "name"))},
      {"source", Text(Get(s, "source"))},
      {"scenario digest", "<code>" + Text(Get(s, "digest")) + "</code>"},
      {"seed", N(Get(s, "seed"), 20)},
      {"inputs digest", "<code>" + Text(Get(r, "inputs_digest")) + "</code>"},
      {"fleetplan", Text(Get(r, "fleetplan_version"))},
      {"deployment", fmt::format("{} x {} on {}, tp {} pp {} ep {} ({} GPUs), {} KV blocks of {} tokens per replica",
                                 N(Get(dep, "replicas"), 9), Text(Get(dep, "model")), Text(Get(dep, "gpu")),
                                 N(Get(dep, "tp"), 9), N(Get(dep, "pp"), 9), N(Get(dep, "ep"), 9),
                                 N(Get(dep, "gpus"), 9), N(Get(dep, "kv_blocks_per_replica"), 9),
                                 N(Get(dep, "block_tokens"), 9))},
      {"step model", Text(Get(Get(r, "step_model"), "kind"))},
      {"measurement window", fmt::format("{} s to {} s ({})", N(Get(w, "start_s"), 6), N(Get(w, "end_s"), 6),
                                         Text(Get(w, "source")))},
      {"simulation", fmt::format("{} events, {} requests", N(Get(r, "simulation", "events"), 12),
                                 N(Get(r, "simulation", "requests"), 12))},
  };
  std::string out = HtmlTable({"input", "value"}, rows);
  out += "<h3>Derived and filled-in values (report.json notes)</h3><ul class=\"notes\">";
  for (const Json& n : Get(r, "notes")) out += "<li>" + Text(n) + "</li>";
  return out + "</ul>";
}

}  // namespace

const std::vector<SectionRow>& SimulationSections() {
  static const std::vector<SectionRow> rows = {
      {"verdict", "Verdict", &Verdict},
      {"latency", "Latency CDFs", &Latency},
      {"e2e-by-output", "E2E by output length", &E2eByOutput},
      {"timeseries", "Over time", &TimeSeriesSection},
      {"replicas", "Replicas and routing", &Replicas},
      {"prefix-cache", "Prefix cache", &PrefixCache},
      {"kv-transfer", "KV transfer (pools)", &KvTransfer},
      {"inputs", "Inputs", &Inputs},
  };
  return rows;
}

Page SimulationPage(const Json& report) {
  Page page;
  page.title = "fleetplan simulate: " + (Get(report, "scenario", "name").is_string()
                                             ? Get(report, "scenario", "name").get<std::string>()
                                             : std::string("scenario"));
  page.subtitle = fmt::format("seed {}, scenario {}", N(Get(report, "scenario", "seed"), 20),
                              Get(report, "scenario", "digest").is_string()
                                  ? Get(report, "scenario", "digest").get<std::string>()
                                  : std::string("-"));
  for (const SectionRow& row : SimulationSections()) {
    page.sections.push_back({std::string(row.id), std::string(row.title), row.build(report)});
  }
  return page;
}

std::string SimulationHtml(const Json& report) { return RenderPage(SimulationPage(report)); }

}  // namespace fleetplan::report
