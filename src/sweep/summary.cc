#include "fleetplan/sweep/summary.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace fleetplan {
namespace {

// The figures a configuration aggregates over its seeds, as JSON pointers into a row and
// the flat names they are reported under.
struct FigureRef {
  std::string name;     // "fleet.goodput_per_gpu", "classes.interactive.ttft_p99_ms"
  Json::json_pointer at;
};

std::vector<FigureRef> FigureRefs(const std::vector<std::string>& classes, bool priced, bool searched) {
  std::vector<FigureRef> refs;
  for (const char* f : {"goodput_rps", "goodput_per_gpu", "throughput_rps", "attainment"}) {
    refs.push_back({fmt::format("fleet.{}", f), Json::json_pointer(fmt::format("/fleet/{}", f))});
  }
  if (priced) refs.push_back({"fleet.cost_per_hour", Json::json_pointer("/fleet/cost_per_hour")});
  for (const std::string& c : classes) {
    for (const char* f : {"attainment", "goodput_rps", "ttft_p50_ms", "ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms"}) {
      refs.push_back({fmt::format("classes.{}.{}", c, f), Json::json_pointer(fmt::format("/classes/{}/{}", c, f))});
    }
  }
  if (searched) refs.push_back({"max_rate.rate_per_s", Json::json_pointer("/max_rate/rate_per_s")});
  return refs;
}

std::optional<double> NumberAt(const Json& row, const Json::json_pointer& at) {
  if (!row.contains(at)) return std::nullopt;
  const Json& v = row.at(at);
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

// Lower and upper ends of a MeanInterval (the mean itself with one value).
double Lower(const Json& stat) { return stat["ci95"].is_null() ? stat["mean"].get<double>() : stat["ci95"][0].get<double>(); }
double Upper(const Json& stat) { return stat["ci95"].is_null() ? stat["mean"].get<double>() : stat["ci95"][1].get<double>(); }

// Every seed's probes together: seeds disagree when one fails at a rate below another's
// pass — the bracket of one seed does not hold for the others.
bool SeedsAgree(const std::vector<const Json*>& rows) {
  std::optional<double> lowest_fail;
  std::optional<double> highest_pass;
  for (const Json* row : rows) {
    if (!row->contains("max_rate")) continue;
    for (const Json& p : (*row)["max_rate"]["probes"]) {
      const double rate = p["rate_per_s"].get<double>();
      if (p["passed"].get<bool>()) {
        highest_pass = std::max(highest_pass.value_or(rate), rate);
      } else {
        lowest_fail = std::min(lowest_fail.value_or(rate), rate);
      }
    }
  }
  return !(lowest_fail && highest_pass && *lowest_fail < *highest_pass);
}

Json SearchSummary(const std::vector<const Json*>& rows) {
  Json statuses = Json::array();
  bool monotone = true;
  std::optional<double> lo, hi;
  for (const Json* row : rows) {
    const Json& m = (*row)["max_rate"];
    statuses.push_back(m["status"]);
    monotone = monotone && m["monotone"].get<bool>();
    const double b0 = m["bracket"][0].get<double>();
    lo = std::min(lo.value_or(b0), b0);
    if (!m["bracket"][1].is_null()) {
      const double b1 = m["bracket"][1].get<double>();
      hi = std::max(hi.value_or(b1), b1);
    }
  }
  return {{"statuses", statuses},
          {"monotone", monotone},
          {"seeds_agree", SeedsAgree(rows)},
          {"bracket", Json::array({lo ? Json(*lo) : Json(nullptr), hi ? Json(*hi) : Json(nullptr)})}};
}

Json SummarizeConfiguration(const Json& spec, const std::vector<const Json*>& rows, const std::vector<FigureRef>& refs) {
  const Json& first = *rows.front();
  Json c = {{"configuration", first["configuration"]}, {"values", first["values"]}, {"seeds", rows.size()}};
  std::vector<const Json*> ok;
  for (const Json* r : rows) {
    if ((*r)["status"] == "ok") {
      ok.push_back(r);
    } else if (!c.contains("status")) {
      c["status"] = (*r)["status"];
      c["reason"] = (*r)["reason"];
    }
  }
  if (!c.contains("status")) {
    c["status"] = "ok";
    c["reason"] = "";
  }
  if (ok.empty()) return c;
  c["gpus"] = first.contains("gpus") ? first["gpus"] : (*ok.front())["gpus"];
  Json figures = Json::object();
  for (const FigureRef& f : refs) {
    std::vector<double> values;
    for (const Json* r : ok) {
      if (auto v = NumberAt(*r, f.at)) values.push_back(*v);
    }
    if (!values.empty()) figures[f.name] = MeanInterval(values);
  }
  bool meets = c["status"] == "ok";
  for (const std::string cls : spec["target_order"]) {
    const std::string key = fmt::format("classes.{}.attainment", cls);
    meets = meets && figures.contains(key) && Lower(figures[key]) >= spec["targets"][cls].get<double>();
  }
  c["meets_slo"] = meets;
  if (spec.contains("search")) {
    c["max_rate"] = SearchSummary(ok);
    if (figures.contains("max_rate.rate_per_s")) {
      std::vector<double> per_gpu;
      for (const Json* r : ok) {
        if (auto v = NumberAt(*r, Json::json_pointer("/max_rate/rate_per_s"))) {
          per_gpu.push_back(*v / (*r)["gpus"].get<double>());
        }
      }
      figures["max_rate_per_gpu"] = MeanInterval(per_gpu);
    }
  }
  c["figures"] = std::move(figures);
  return c;
}

// The best configuration by `figure` among those `eligible`, on the lower bound; ties are
// those whose interval reaches the winner's lower bound.
Json PickBest(const Json& configs, const std::string& figure, const std::function<bool(const Json&)>& eligible,
              const std::string& why) {
  const Json* winner = nullptr;
  for (const Json& c : configs) {
    if (!eligible(c) || !c.contains("figures") || !c["figures"].contains(figure)) continue;
    if (winner == nullptr || Lower(c["figures"][figure]) > Lower((*winner)["figures"][figure])) winner = &c;
  }
  if (winner == nullptr) return {{"verdict", "none"}, {"objective", why}, {"figure", figure}};
  const double bar = Lower((*winner)["figures"][figure]);
  Json tied = Json::array();
  for (const Json& c : configs) {
    if (&c == winner || !eligible(c) || !c.contains("figures") || !c["figures"].contains(figure)) continue;
    if (Upper(c["figures"][figure]) >= bar) tied.push_back(c["configuration"]);
  }
  return {{"verdict", tied.empty() ? "winner" : "tie"},
          {"objective", why},
          {"figure", figure},
          {"configuration", (*winner)["configuration"]},
          {"values", (*winner)["values"]},
          {"gpus", (*winner)["gpus"]},
          {"value", (*winner)["figures"][figure]},
          {"tied_with", tied}};
}

std::string ParetoClass(const Json& spec, const std::vector<std::string>& classes) {
  if (std::find(classes.begin(), classes.end(), "interactive") != classes.end()) return "interactive";
  for (const std::string t : spec["target_order"]) {
    if (std::find(classes.begin(), classes.end(), t) != classes.end()) return t;
  }
  return classes.empty() ? "" : classes.front();
}

Json Pareto(const Json& configs, const std::string& cls) {
  const std::string ttft = fmt::format("classes.{}.ttft_p99_ms", cls);
  struct P {
    const Json* c;
    double gpg;
    double ttft;
  };
  std::vector<P> ps;
  for (const Json& c : configs) {
    if (c["status"] != "ok" || !c.contains("figures")) continue;
    const Json& f = c["figures"];
    if (!f.contains("fleet.goodput_per_gpu") || !f.contains(ttft)) continue;
    ps.push_back({&c, f["fleet.goodput_per_gpu"]["mean"].get<double>(), f[ttft]["mean"].get<double>()});
  }
  Json front = Json::array();
  std::vector<const P*> kept;
  for (const P& a : ps) {
    const bool dominated = std::any_of(ps.begin(), ps.end(), [&](const P& b) {
      return b.gpg >= a.gpg && b.ttft <= a.ttft && (b.gpg > a.gpg || b.ttft < a.ttft);
    });
    if (!dominated) kept.push_back(&a);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const P* a, const P* b) { return a->ttft < b->ttft; });
  for (const P* p : kept) {
    front.push_back({{"configuration", (*p->c)["configuration"]},
                     {"values", (*p->c)["values"]},
                     {"goodput_per_gpu", p->gpg},
                     {"ttft_p99_ms", p->ttft}});
  }
  return {{"class", cls}, {"x", "fleet.goodput_per_gpu"}, {"y", ttft}, {"front", front}};
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string CsvValue(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return CsvField(v.get<std::string>());
  return CsvField(v.dump());
}

std::vector<std::string> ClassesOf(const std::vector<Json>& rows) {
  std::set<std::string> names;
  for (const Json& r : rows) {
    if (!r.contains("classes")) continue;
    for (auto it = r["classes"].begin(); it != r["classes"].end(); ++it) names.insert(it.key());
  }
  return {names.begin(), names.end()};
}

std::string Stat(const Json& figures, const std::string& key, int decimals) {
  if (!figures.contains(key)) return "-";
  const Json& s = figures[key];
  const double mean = s["mean"].get<double>();
  if (s["ci95"].is_null()) return fmt::format("{:.{}f}", mean, decimals);
  return fmt::format("{:.{}f}±{:.{}f}", mean, decimals, (Upper(s) - Lower(s)) / 2, decimals);
}

// "deployment.replicas=4 router.policy=cache-aware", in the spec's axis order.
std::string ValuesText(const Json& values, const Json& spec) {
  std::string out;
  for (const Json& axis : spec["axes"]) {
    const std::string path = axis["path"].get<std::string>();
    if (!values.contains(path)) continue;
    const Json& v = values[path];
    if (!out.empty()) out += " ";
    out += fmt::format("{}={}", path, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out.empty() ? "(base)" : out;
}

}  // namespace

double StudentT95(int64_t df) {
  static constexpr std::array<double, 30> kTable = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                                    2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                                    2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                                    2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  // Past the table, the value at the start of each band (never narrower than the truth).
  if (df < 1) return kTable[0];
  if (df <= 30) return kTable[static_cast<size_t>(df - 1)];
  if (df <= 40) return 2.042;
  if (df <= 60) return 2.021;
  if (df <= 120) return 2.000;
  return 1.980;
}

Json MeanInterval(const std::vector<double>& values) {
  const auto n = static_cast<int64_t>(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / static_cast<double>(n);
  Json j = {{"mean", RoundForReport(mean)}, {"n", n}};
  if (n < 2) {
    j["ci95"] = nullptr;
    return j;
  }
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  const double half = StudentT95(n - 1) * std::sqrt(ss / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n));
  j["ci95"] = Json::array({RoundForReport(mean - half), RoundForReport(mean + half)});
  return j;
}

Expected<Json> SummarizeSweep(const Json& spec, std::vector<Json> rows) {
  std::sort(rows.begin(), rows.end(), [](const Json& a, const Json& b) { return a["index"] < b["index"]; });
  const int64_t points = spec["points"].get<int64_t>();
  if (static_cast<int64_t>(rows.size()) != points) {
    return InternalError(fmt::format("the sweep has {} points but {} results", points, rows.size()));
  }
  for (int64_t i = 0; i < points; ++i) {
    if (rows[static_cast<size_t>(i)]["index"].get<int64_t>() != i) {
      return InternalError(fmt::format("point {} has no result (or another is repeated)", i));
    }
  }
  const std::vector<std::string> classes = ClassesOf(rows);
  const std::vector<FigureRef> refs = FigureRefs(classes, spec.contains("price"), spec.contains("search"));
  const auto seeds = static_cast<int64_t>(spec["seeds"].size());
  Json configs = Json::array();
  std::map<std::string, int64_t> counts = {{"ok", 0}, {"invalid", 0}, {"failed", 0}};
  for (const Json& r : rows) ++counts[r["status"].get<std::string>()];
  for (int64_t c = 0; c * seeds < points; ++c) {
    std::vector<const Json*> group;
    for (int64_t s = 0; s < seeds; ++s) group.push_back(&rows[static_cast<size_t>(c * seeds + s)]);
    configs.push_back(SummarizeConfiguration(spec, group, refs));
  }
  auto meets = [](const Json& c) { return c["status"] == "ok" && c.value("meets_slo", false); };
  Json best = Json::object();
  best["goodput_per_gpu"] = PickBest(configs, "fleet.goodput_per_gpu", meets, "highest goodput per GPU meeting every target");
  // Fewest GPUs: among the configurations meeting the targets with the lowest GPU count,
  // the highest goodput per GPU.
  std::optional<int64_t> fewest;
  for (const Json& c : configs) {
    if (meets(c)) fewest = std::min(fewest.value_or(c["gpus"].get<int64_t>()), c["gpus"].get<int64_t>());
  }
  best["fewest_gpus"] = PickBest(
      configs, "fleet.goodput_per_gpu",
      [&](const Json& c) { return meets(c) && fewest && c["gpus"].get<int64_t>() == *fewest; },
      "fewest GPUs meeting every target at the point's rate, then highest goodput per GPU");
  if (spec.contains("search")) {
    best["max_rate_per_gpu"] = PickBest(
        configs, "max_rate_per_gpu", [](const Json& c) { return c["status"] == "ok"; },
        "highest sustainable rate per GPU (max-rate search)");
  }
  Json notes = Json::array();
  for (const Json& c : configs) {
    if (!c.contains("max_rate")) continue;
    if (!c["max_rate"]["monotone"].get<bool>()) {
      notes.push_back(fmt::format("configuration {} ({}): attainment is not monotone in rate; read its probes",
                                  c["configuration"].get<int64_t>(), ValuesText(c["values"], spec)));
    }
    if (!c["max_rate"]["seeds_agree"].get<bool>()) {
      notes.push_back(fmt::format("configuration {} ({}): seeds disagree on the bracket (one fails below another's "
                                  "pass); the max rate is uncertain beyond its interval",
                                  c["configuration"].get<int64_t>(), ValuesText(c["values"], spec)));
    }
  }
  for (const char* objective : {"goodput_per_gpu", "fewest_gpus", "max_rate_per_gpu"}) {
    if (best.contains(objective) && best[objective]["verdict"] == "tie") {
      notes.push_back(fmt::format("best by {}: a tie within the 95% interval between configuration {} and {}", objective,
                                  best[objective]["configuration"].get<int64_t>(), best[objective]["tied_with"].dump()));
    }
  }
  Json doc = {{"kind", "fleetplan-sweep"},
              {"spec", spec},
              {"points", std::move(rows)},
              {"configurations", configs},
              {"best", best},
              {"pareto", Pareto(configs, ParetoClass(spec, classes))},
              {"counts", counts},
              {"notes", notes}};
  return doc;
}

std::string SweepCsv(const Json& sweep) {
  const Json& spec = sweep["spec"];
  std::vector<std::string> axes;
  for (const Json& a : spec["axes"]) axes.push_back(a["path"].get<std::string>());
  std::vector<Json> rows(sweep["points"].begin(), sweep["points"].end());
  const std::vector<std::string> classes = ClassesOf(rows);
  std::vector<std::pair<std::string, Json::json_pointer>> cols;
  cols.emplace_back("gpus", Json::json_pointer("/gpus"));
  for (const char* f : {"goodput_rps", "throughput_rps", "attainment", "goodput_per_gpu", "cost_per_hour", "meets_slo"}) {
    if (std::string(f) == "cost_per_hour" && !spec.contains("price")) continue;
    cols.emplace_back(fmt::format("fleet_{}", f), Json::json_pointer(fmt::format("/fleet/{}", f)));
  }
  for (const std::string& c : classes) {
    for (const char* f : {"requests", "attainment", "goodput_rps", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
                          "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms", "e2e_p99_ms"}) {
      cols.emplace_back(fmt::format("{}_{}", c, f), Json::json_pointer(fmt::format("/classes/{}/{}", c, f)));
    }
  }
  if (spec.contains("search")) {
    cols.emplace_back("max_rate_per_s", Json::json_pointer("/max_rate/rate_per_s"));
    cols.emplace_back("max_rate_lowest_failing_per_s", Json::json_pointer("/max_rate/bracket/1"));
    cols.emplace_back("max_rate_status", Json::json_pointer("/max_rate/status"));
    cols.emplace_back("max_rate_monotone", Json::json_pointer("/max_rate/monotone"));
  }
  std::string out = "index,configuration";
  for (const std::string& a : axes) out += "," + CsvField(a);
  out += ",seed,status";
  for (const auto& [name, at] : cols) out += "," + CsvField(name);
  out += ",reason\n";
  for (const Json& r : rows) {
    out += fmt::format("{},{}", r["index"].get<int64_t>(), r["configuration"].get<int64_t>());
    for (const std::string& a : axes) out += "," + CsvValue(r["values"].value(a, Json(nullptr)));
    out += fmt::format(",{},{}", r["seed"].get<uint64_t>(), r["status"].get<std::string>());
    for (const auto& [name, at] : cols) out += "," + (r.contains(at) ? CsvValue(r.at(at)) : std::string());
    const std::string reason = r["reason"].get<std::string>();
    out += "," + CsvField(reason.substr(0, reason.find('\n'))) + "\n";
  }
  return out;
}

std::string SweepText(const Json& sweep) {
  const Json& spec = sweep["spec"];
  const Json& counts = sweep["counts"];
  std::string out = fmt::format(
      "sweep {}: {} points ({} configurations x {} seeds): {} ok, {} invalid, {} failed\n", spec["name"].get<std::string>(),
      spec["points"].get<int64_t>(), spec["configurations"].get<int64_t>(), spec["seeds"].size(),
      counts["ok"].get<int64_t>(), counts["invalid"].get<int64_t>(), counts["failed"].get<int64_t>());
  std::string targets;
  for (const std::string cls : spec["target_order"]) {
    targets += fmt::format("{}{} >= {:g}", targets.empty() ? "" : ", ", cls, spec["targets"][cls].get<double>());
  }
  out += fmt::format("targets (attainment, {}): {}\n", spec["targets_source"].get<std::string>(), targets.empty() ? "none" : targets);
  const std::string pareto_class = sweep["pareto"]["class"].get<std::string>();
  out += fmt::format("columns: means over seeds, ± the 95% interval's half-width; ttft p99 ms is the {} class's\n",
                     pareto_class);
  out += fmt::format("\n{:>4}  {:>5}  {:>14}  {:>14}  {:>16}  {:>14}  {:<5}  {}\n", "cfg", "gpus", "goodput/s",
                     "goodput/GPU", "ttft p99 ms",
                     spec.contains("search") ? "max rate/s" : "attainment", "meets", "values");
  for (const Json& c : sweep["configurations"]) {
    const std::string values = ValuesText(c["values"], spec);
    if (c["status"] != "ok") {
      const std::string reason = c["reason"].get<std::string>();
      out += fmt::format("{:>4}  {}: {}  {}\n", c["configuration"].get<int64_t>(), c["status"].get<std::string>(),
                         reason.substr(0, reason.find('\n')), values);
      continue;
    }
    const Json& f = c["figures"];
    out += fmt::format("{:>4}  {:>5}  {:>14}  {:>14}  {:>16}  {:>14}  {:<5}  {}\n", c["configuration"].get<int64_t>(),
                       c["gpus"].get<int64_t>(), Stat(f, "fleet.goodput_rps", 2), Stat(f, "fleet.goodput_per_gpu", 3),
                       Stat(f, fmt::format("classes.{}.ttft_p99_ms", pareto_class), 0),
                       spec.contains("search") ? Stat(f, "max_rate.rate_per_s", 2) : Stat(f, "fleet.attainment", 3),
                       c["meets_slo"].get<bool>() ? "yes" : "no", values);
  }
  out += "\nbest:\n";
  for (auto it = sweep["best"].begin(); it != sweep["best"].end(); ++it) {
    const Json& b = it.value();
    if (b["verdict"] == "none") {
      out += fmt::format("  {:<17} none ({})\n", it.key(), b["objective"].get<std::string>());
      continue;
    }
    out += fmt::format("  {:<17} configuration {} ({}), {} GPUs, {} {}{}\n", it.key(), b["configuration"].get<int64_t>(),
                       ValuesText(b["values"], spec), b["gpus"].get<int64_t>(), b["figure"].get<std::string>(),
                       Stat(Json{{"x", b["value"]}}, "x", 3),
                       b["verdict"] == "tie" ? fmt::format(" — a tie with {}", b["tied_with"].dump()) : "");
  }
  out += fmt::format("pareto front (goodput per GPU vs {} TTFT p99):", pareto_class);
  for (const Json& p : sweep["pareto"]["front"]) out += fmt::format(" {}", p["configuration"].get<int64_t>());
  out += "\n";
  for (const Json& n : sweep["notes"]) out += "note: " + n.get<std::string>() + "\n";
  return out;
}

}  // namespace fleetplan
