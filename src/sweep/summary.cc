#include "fleetplan/sweep/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "sweep/pretty_object.h"

namespace fleetplan {
namespace {

// The figures a configuration aggregates over its seeds, as JSON pointers into a row and
// the flat names they are reported under.
struct FigureRef {
  std::string name;  // "fleet.goodput_per_gpu", "classes.interactive.ttft_p99_ms"
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
double Lower(const Json& stat) {
  return stat["ci95"].is_null() ? stat["mean"].get<double>() : stat["ci95"][0].get<double>();
}
double Upper(const Json& stat) {
  return stat["ci95"].is_null() ? stat["mean"].get<double>() : stat["ci95"][1].get<double>();
}

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

Json SummarizeConfiguration(const Json& spec, const std::vector<const Json*>& rows,
                            const std::vector<FigureRef>& refs) {
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

std::string ParetoClass(const Json& spec, const std::vector<std::string>& classes) {
  if (std::find(classes.begin(), classes.end(), "interactive") != classes.end()) return "interactive";
  for (const std::string t : spec["target_order"]) {
    if (std::find(classes.begin(), classes.end(), t) != classes.end()) return t;
  }
  return classes.empty() ? "" : classes.front();
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

// The best configuration by one figure, on the lower bound, in two passes over the
// configurations: Consider (the first with the highest lower bound wins), then Tie (every
// other one whose interval reaches the winner's lower bound). The caller passes only the
// configurations eligible for the objective, in configuration order, both times.
class BestPick {
 public:
  BestPick(std::string figure, std::string why) : figure_(std::move(figure)), why_(std::move(why)) {}

  void Consider(const Json& c) {
    if (!HasFigure(c)) return;
    const double lower = Lower(c["figures"][figure_]);
    if (winner_.is_null() || lower > bar_) {
      bar_ = lower;
      winner_ = {{"configuration", c["configuration"]},
                 {"values", c["values"]},
                 {"gpus", c["gpus"]},
                 {"value", c["figures"][figure_]}};
    }
  }

  void Tie(const Json& c) {
    if (winner_.is_null() || !HasFigure(c) || c["configuration"] == winner_["configuration"]) return;
    if (Upper(c["figures"][figure_]) >= bar_) tied_.push_back(c["configuration"]);
  }

  Json Result() const {
    if (winner_.is_null()) return {{"verdict", "none"}, {"objective", why_}, {"figure", figure_}};
    Json r = winner_;
    r["verdict"] = tied_.empty() ? "winner" : "tie";
    r["objective"] = why_;
    r["figure"] = figure_;
    r["tied_with"] = tied_;
    return r;
  }

 private:
  bool HasFigure(const Json& c) const { return c.contains("figures") && c["figures"].contains(figure_); }

  std::string figure_, why_;
  Json winner_;  // null until one is found
  double bar_ = 0;
  Json tied_ = Json::array();
};

// The configurations no other one dominates in (goodput per GPU up, TTFT p99 down), kept
// as configurations arrive: a newcomer that one on the front dominates is dropped, and it
// drops those it dominates. Dominance is transitive, so this keeps exactly the
// configurations nobody dominates, in arrival order; the result is sorted by TTFT (stable).
class ParetoFront {
 public:
  explicit ParetoFront(std::string cls) : cls_(std::move(cls)), ttft_(fmt::format("classes.{}.ttft_p99_ms", cls_)) {}

  void Add(const Json& c) {
    if (c["status"] != "ok" || !c.contains("figures")) return;
    const Json& f = c["figures"];
    if (!f.contains("fleet.goodput_per_gpu") || !f.contains(ttft_)) return;
    const Point a{c["configuration"], c["values"], f["fleet.goodput_per_gpu"]["mean"].get<double>(),
                  f[ttft_]["mean"].get<double>()};
    auto dominates = [](const Point& b, const Point& x) {
      return b.gpg >= x.gpg && b.ttft <= x.ttft && (b.gpg > x.gpg || b.ttft < x.ttft);
    };
    if (std::any_of(front_.begin(), front_.end(), [&](const Point& b) { return dominates(b, a); })) return;
    std::erase_if(front_, [&](const Point& b) { return dominates(a, b); });
    front_.push_back(a);
  }

  Json Result() const {
    std::vector<const Point*> kept;
    for (const Point& p : front_) kept.push_back(&p);
    std::stable_sort(kept.begin(), kept.end(), [](const Point* a, const Point* b) { return a->ttft < b->ttft; });
    Json front = Json::array();
    for (const Point* p : kept) {
      front.push_back({{"configuration", p->configuration},
                       {"values", p->values},
                       {"goodput_per_gpu", p->gpg},
                       {"ttft_p99_ms", p->ttft}});
    }
    return {{"class", cls_}, {"x", "fleet.goodput_per_gpu"}, {"y", ttft_}, {"front", front}};
  }

 private:
  struct Point {
    Json configuration, values;
    double gpg, ttft;
  };
  std::string cls_, ttft_;
  std::vector<Point> front_;
};

// The CSV's figure columns: name and where in a row.
std::vector<std::pair<std::string, Json::json_pointer>> CsvColumns(const Json& spec,
                                                                   const std::vector<std::string>& classes) {
  std::vector<std::pair<std::string, Json::json_pointer>> cols;
  cols.emplace_back("gpus", Json::json_pointer("/gpus"));
  for (const char* f :
       {"goodput_rps", "throughput_rps", "attainment", "goodput_per_gpu", "cost_per_hour", "meets_slo"}) {
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
  return cols;
}

// Every row's class names, sorted (one pass over the spool).
Expected<std::vector<std::string>> ClassesOf(const JsonSpool& rows) {
  std::set<std::string> names;
  for (int64_t i = 0; i < rows.slots(); ++i) {
    if (!rows.Has(i)) continue;
    FP_ASSIGN_OR_RETURN(const Json r, rows.Get(i));
    if (!r.contains("classes")) continue;
    for (auto it = r["classes"].begin(); it != r["classes"].end(); ++it) names.insert(it.key());
  }
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

double StudentT95(int64_t df) {
  static constexpr std::array<double, 30> kTable = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
      2.120,  2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
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
  const double half =
      StudentT95(n - 1) * std::sqrt(ss / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n));
  j["ci95"] = Json::array({RoundForReport(mean - half), RoundForReport(mean + half)});
  return j;
}

Expected<std::unique_ptr<JsonSpool>> SpoolRows(int64_t points, const std::vector<Json>& rows) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<JsonSpool> spool, JsonSpool::Create(points));
  for (const Json& r : rows) FP_RETURN_IF_ERROR(spool->Put(r.value("index", int64_t{-1}), r));
  return spool;
}

Expected<SweepResult> SummarizeSweep(const Json& spec, std::unique_ptr<JsonSpool> rows) {
  const int64_t points = spec["points"].get<int64_t>();
  if (rows->slots() != points) {
    return InternalError(fmt::format("the sweep has {} points but room for {} results", points, rows->slots()));
  }
  for (int64_t i = 0; i < points; ++i) {
    if (!rows->Has(i)) return InternalError(fmt::format("point {} has no result", i));
  }
  SweepResult r;
  r.spec_ = spec;
  FP_ASSIGN_OR_RETURN(r.classes_, ClassesOf(*rows));
  const std::vector<FigureRef> refs = FigureRefs(r.classes_, spec.contains("price"), spec.contains("search"));
  const auto seeds = static_cast<int64_t>(spec["seeds"].size());
  const int64_t configurations = points / seeds;
  FP_ASSIGN_OR_RETURN(r.configs_, JsonSpool::Create(configurations));

  auto meets = [](const Json& c) { return c["status"] == "ok" && c.value("meets_slo", false); };
  const std::string fewest_why = "fewest GPUs meeting every target at the point's rate, then highest goodput per GPU";
  BestPick best_gpg("fleet.goodput_per_gpu", "highest goodput per GPU meeting every target");
  BestPick best_max_rate("max_rate_per_gpu", "highest sustainable rate per GPU (max-rate search)");
  // Fewest GPUs: among the configurations meeting the targets with the lowest GPU count,
  // the highest goodput per GPU — one candidate per GPU count until the lowest is known.
  std::map<int64_t, BestPick> fewest_by_gpus;
  ParetoFront pareto(ParetoClass(spec, r.classes_));
  std::map<std::string, int64_t> counts = {{"ok", 0}, {"invalid", 0}, {"failed", 0}};
  Json notes = Json::array();

  for (int64_t c = 0; c < configurations; ++c) {
    std::vector<Json> group;
    for (int64_t s = 0; s < seeds; ++s) {
      FP_ASSIGN_OR_RETURN(Json row, rows->Get(c * seeds + s));
      ++counts[row["status"].get<std::string>()];
      group.push_back(std::move(row));
    }
    std::vector<const Json*> members;
    for (const Json& g : group) members.push_back(&g);
    const Json config = SummarizeConfiguration(spec, members, refs);
    if (meets(config)) {
      best_gpg.Consider(config);
      fewest_by_gpus.try_emplace(config["gpus"].get<int64_t>(), "fleet.goodput_per_gpu", fewest_why)
          .first->second.Consider(config);
    }
    if (spec.contains("search") && config["status"] == "ok") best_max_rate.Consider(config);
    pareto.Add(config);
    if (config.contains("max_rate")) {
      if (!config["max_rate"]["monotone"].get<bool>()) {
        notes.push_back(fmt::format("configuration {} ({}): attainment is not monotone in rate; read its probes", c,
                                    ValuesText(config["values"], spec)));
      }
      if (!config["max_rate"]["seeds_agree"].get<bool>()) {
        notes.push_back(
            fmt::format("configuration {} ({}): seeds disagree on the bracket (one fails below another's "
                        "pass); the max rate is uncertain beyond its interval",
                        c, ValuesText(config["values"], spec)));
      }
    }
    FP_RETURN_IF_ERROR(r.configs_->Put(c, config));
  }

  // Second pass: the configurations tied with each winner.
  const bool any_meets = !fewest_by_gpus.empty();
  const int64_t fewest = any_meets ? fewest_by_gpus.begin()->first : -1;
  BestPick best_fewest = any_meets ? fewest_by_gpus.begin()->second : BestPick("fleet.goodput_per_gpu", fewest_why);
  for (int64_t c = 0; c < configurations; ++c) {
    FP_ASSIGN_OR_RETURN(const Json config, r.configs_->Get(c));
    if (meets(config)) {
      best_gpg.Tie(config);
      if (config["gpus"].get<int64_t>() == fewest) best_fewest.Tie(config);
    }
    if (spec.contains("search") && config["status"] == "ok") best_max_rate.Tie(config);
  }
  r.best_ = Json::object();
  r.best_["goodput_per_gpu"] = best_gpg.Result();
  r.best_["fewest_gpus"] = best_fewest.Result();
  if (spec.contains("search")) r.best_["max_rate_per_gpu"] = best_max_rate.Result();
  for (const char* objective : {"goodput_per_gpu", "fewest_gpus", "max_rate_per_gpu"}) {
    if (r.best_.contains(objective) && r.best_[objective]["verdict"] == "tie") {
      notes.push_back(fmt::format("best by {}: a tie within the 95% interval between configuration {} and {}",
                                  objective, r.best_[objective]["configuration"].get<int64_t>(),
                                  r.best_[objective]["tied_with"].dump()));
    }
  }
  r.pareto_ = pareto.Result();
  r.counts_ = counts;
  r.notes_ = std::move(notes);
  r.rows_ = std::move(rows);
  return r;
}

Status SweepResult::WriteJson(const TextSink& sink) const {
  sweep_internal::PrettyObjectWriter doc(sink);
  FP_RETURN_IF_ERROR(doc.Member("best", best_));
  FP_RETURN_IF_ERROR(doc.SpooledArray("configurations", *configs_));
  FP_RETURN_IF_ERROR(doc.Member("counts", counts_));
  FP_RETURN_IF_ERROR(doc.Member("kind", "fleetplan-sweep"));
  FP_RETURN_IF_ERROR(doc.Member("notes", notes_));
  FP_RETURN_IF_ERROR(doc.Member("pareto", pareto_));
  FP_RETURN_IF_ERROR(doc.SpooledArray("points", *rows_));
  FP_RETURN_IF_ERROR(doc.Member("spec", spec_));
  return doc.Close();
}

// The parts of the document other than its spooled arrays.
Json SweepResult::Conclusions() const {
  return {{"kind", "fleetplan-sweep"},
          {"spec", spec_},
          {"points", Json::array()},
          {"configurations", Json::array()},
          {"best", best_},
          {"pareto", pareto_},
          {"counts", counts_},
          {"notes", notes_}};
}

Expected<Json> SweepResult::ToJson() const {
  Json doc = Conclusions();
  for (int64_t i = 0; i < rows_->slots(); ++i) {
    FP_ASSIGN_OR_RETURN(Json row, rows_->Get(i));
    doc["points"].push_back(std::move(row));
  }
  for (int64_t c = 0; c < configs_->slots(); ++c) {
    FP_ASSIGN_OR_RETURN(Json config, configs_->Get(c));
    doc["configurations"].push_back(std::move(config));
  }
  return doc;
}

Expected<Json> SweepResult::PageView(int64_t max_configurations, int64_t max_curves) const {
  const int64_t shown = std::min(max_configurations, configs_->slots());
  Json doc = Conclusions();
  doc["shown"] = {{"configurations", shown}, {"of", configs_->slots()}};
  const auto seeds = static_cast<int64_t>(spec_["seeds"].size());
  int64_t curves = 0;
  for (int64_t c = 0; c < shown; ++c) {
    FP_ASSIGN_OR_RETURN(Json config, configs_->Get(c));
    doc["configurations"].push_back(std::move(config));
    for (int64_t s = 0; s < seeds && curves < max_curves; ++s) {
      FP_ASSIGN_OR_RETURN(Json row, rows_->Get(c * seeds + s));
      if (!row.contains("max_rate")) continue;
      doc["points"].push_back(std::move(row));
      ++curves;
      break;
    }
  }
  return doc;
}

Status SweepResult::WriteCsv(const TextSink& sink) const {
  std::vector<std::string> axes;
  for (const Json& a : spec_["axes"]) axes.push_back(a["path"].get<std::string>());
  const auto cols = CsvColumns(spec_, classes_);
  std::string header = "index,configuration";
  for (const std::string& a : axes) header += "," + CsvField(a);
  header += ",seed,status";
  for (const auto& [name, at] : cols) header += "," + CsvField(name);
  FP_RETURN_IF_ERROR(sink(header + ",reason\n"));
  for (int64_t i = 0; i < rows_->slots(); ++i) {
    FP_ASSIGN_OR_RETURN(const Json r, rows_->Get(i));
    std::string line = fmt::format("{},{}", r["index"].get<int64_t>(), r["configuration"].get<int64_t>());
    for (const std::string& a : axes) line += "," + CsvValue(r["values"].value(a, Json(nullptr)));
    line += fmt::format(",{},{}", r["seed"].get<uint64_t>(), r["status"].get<std::string>());
    for (const auto& [name, at] : cols) line += "," + (r.contains(at) ? CsvValue(r.at(at)) : std::string());
    const std::string reason = r["reason"].get<std::string>();
    line += "," + CsvField(reason.substr(0, reason.find('\n'))) + "\n";
    FP_RETURN_IF_ERROR(sink(line));
  }
  return Status::Ok();
}

Status SweepResult::WriteTableRows(const TextSink& sink) const {
  const std::string pareto_class = pareto_["class"].get<std::string>();
  for (int64_t i = 0; i < configs_->slots(); ++i) {
    FP_ASSIGN_OR_RETURN(const Json c, configs_->Get(i));
    const std::string values = ValuesText(c["values"], spec_);
    if (c["status"] != "ok") {
      const std::string reason = c["reason"].get<std::string>();
      FP_RETURN_IF_ERROR(
          sink(fmt::format("{:>4}  {}: {}  {}\n", c["configuration"].get<int64_t>(), c["status"].get<std::string>(),
                           reason.substr(0, reason.find('\n')), values)));
      continue;
    }
    const Json& f = c["figures"];
    FP_RETURN_IF_ERROR(
        sink(fmt::format("{:>4}  {:>5}  {:>14}  {:>14}  {:>16}  {:>14}  {:<5}  {}\n", c["configuration"].get<int64_t>(),
                         c["gpus"].get<int64_t>(), Stat(f, "fleet.goodput_rps", 2), Stat(f, "fleet.goodput_per_gpu", 3),
                         Stat(f, fmt::format("classes.{}.ttft_p99_ms", pareto_class), 0),
                         spec_.contains("search") ? Stat(f, "max_rate.rate_per_s", 2) : Stat(f, "fleet.attainment", 3),
                         c["meets_slo"].get<bool>() ? "yes" : "no", values)));
  }
  return Status::Ok();
}

Status SweepResult::WriteText(const TextSink& sink) const {
  const Json& spec = spec_;
  std::string out =
      fmt::format("sweep {}: {} points ({} configurations x {} seeds): {} ok, {} invalid, {} failed\n",
                  spec["name"].get<std::string>(), spec["points"].get<int64_t>(), spec["configurations"].get<int64_t>(),
                  spec["seeds"].size(), counts_["ok"].get<int64_t>(), counts_["invalid"].get<int64_t>(),
                  counts_["failed"].get<int64_t>());
  std::string targets;
  for (const std::string cls : spec["target_order"]) {
    targets += fmt::format("{}{} >= {:g}", targets.empty() ? "" : ", ", cls, spec["targets"][cls].get<double>());
  }
  out += fmt::format("targets (attainment, {}): {}\n", spec["targets_source"].get<std::string>(),
                     targets.empty() ? "none" : targets);
  const std::string pareto_class = pareto_["class"].get<std::string>();
  out += fmt::format("columns: means over seeds, ± the 95% interval's half-width; ttft p99 ms is the {} class's\n",
                     pareto_class);
  out += fmt::format("\n{:>4}  {:>5}  {:>14}  {:>14}  {:>16}  {:>14}  {:<5}  {}\n", "cfg", "gpus", "goodput/s",
                     "goodput/GPU", "ttft p99 ms", spec.contains("search") ? "max rate/s" : "attainment", "meets",
                     "values");
  FP_RETURN_IF_ERROR(sink(out));
  FP_RETURN_IF_ERROR(WriteTableRows(sink));
  out = "\nbest:\n";
  for (auto it = best_.begin(); it != best_.end(); ++it) {
    const Json& b = it.value();
    if (b["verdict"] == "none") {
      out += fmt::format("  {:<17} none ({})\n", it.key(), b["objective"].get<std::string>());
      continue;
    }
    out += fmt::format("  {:<17} configuration {} ({}), {} GPUs, {} {}{}\n", it.key(),
                       b["configuration"].get<int64_t>(), ValuesText(b["values"], spec), b["gpus"].get<int64_t>(),
                       b["figure"].get<std::string>(), Stat(Json{{"x", b["value"]}}, "x", 3),
                       b["verdict"] == "tie" ? fmt::format(" — a tie with {}", b["tied_with"].dump()) : "");
  }
  if (pareto_class.empty()) {
    out += "pareto front: none (no point ran)\n";
  } else {
    out += fmt::format("pareto front (goodput per GPU vs {} TTFT p99):", pareto_class);
    for (const Json& p : pareto_["front"]) out += fmt::format(" {}", p["configuration"].get<int64_t>());
    out += "\n";
  }
  for (const Json& n : notes_) out += "note: " + n.get<std::string>() + "\n";
  return sink(out);
}

}  // namespace fleetplan
