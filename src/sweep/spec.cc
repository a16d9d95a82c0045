#include "fleetplan/sweep/spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/scenario_schema.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/fleet/scenario.h"
#include "sweep/sweep_limits.h"

namespace fleetplan {
namespace {

using sweep_internal::kMaxSweepPoints;
// Most values one range axis may expand to.
constexpr int64_t kMaxRangeValues = 10'000;
// The attainment a class must reach to "meet the SLO" when the spec states none.
constexpr double kDefaultTarget = 0.99;

constexpr std::string_view kTargetsHint = "targets name classes of the base scenario's slo";

const std::vector<std::string> kSpecKeys = {"version", "base",    "overrides", "axes",
                                            "seeds",   "targets", "price",     "search"};

void AddPaths(const YamlNode& node, const std::string& path, std::set<std::string>& out) {
  if (node.IsMap()) {
    auto entries = node.Entries();
    if (!entries.ok()) return;
    for (const auto& [key, child] : *entries) {
      const std::string p = path.empty() ? key : path + "." + key;
      out.insert(p);
      AddPaths(child, p, out);
    }
  } else if (node.IsSequence()) {
    auto items = node.Items();
    if (!items.ok()) return;
    for (size_t i = 0; i < items->size(); ++i) {
      const std::string p = fmt::format("{}[{}]", path, i);
      out.insert(p);
      AddPaths((*items)[i], p, out);
    }
  }
}

// The fixed sections of the format and their documented keys (core/scenario_schema.h).
void AddSchemaPaths(std::set<std::string>& out) {
  namespace k = scenario_keys;
  const std::vector<std::pair<std::string, const std::vector<std::string>*>> sections = {
      {"", &k::kRoot},
      {"model", &k::kModel},
      {"hardware", &k::kHardware},
      {"deployment", &k::kDeployment},
      {"deployment.disaggregation", &k::kDisaggregation},
      {"faults", &k::kFaults},
      {"faults.kv_transfer", &k::kTransferFaults},
      {"engine", &k::kEngine},
      {"engine.adapters", &k::kAdapters},
      {"engine.speculation", &k::kSpeculation},
      {"engine.speculation.draft", &k::kSpeculationDraft},
      {"engine.speculation.acceptance", &k::kSpeculationAcceptance},
      {"engine.scheduler", &k::kScheduler},
      {"engine.kv", &k::kKv},
      {"engine.prefix_cache", &k::kPrefixCache},
      {"engine.prefix_cache.scope", &k::kPrefixCacheScope},
      {"router", &k::kRouter},
      {"router.replication", &k::kReplication},
      {"router.adapter_aware", &k::kRouterAdapterAware},
      {"output", &k::kOutput},
  };
  for (const auto& [parent, keys] : sections) {
    for (const std::string& key : *keys) out.insert(parent.empty() ? key : parent + "." + key);
  }
}

Status CheckKeyPath(const YamlNode& at, const std::string& path, const std::vector<std::string>& known) {
  if (std::binary_search(known.begin(), known.end(), path)) return Status::Ok();
  return at.Error(UnknownNameMessage("scenario key path", path, {}) +
                  [&] {
                    const std::string near = DidYouMean(path, known);
                    return near.empty() ? std::string(" (a key of the base scenario or of the format: docs/scenario.md)")
                                        : fmt::format("; did you mean '{}'?", near);
                  }());
}

// A range axis {from, to, step}: integers, rates, durations or plain numbers.
Expected<std::vector<YamlNode>> ExpandRange(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"from", "to", "step"}));
  const YamlNode from = node["from"], to = node["to"], step = node["step"];
  for (const YamlNode& n : {from, to, step}) FP_RETURN_IF_ERROR(n.RequirePresent());
  std::vector<std::string> texts;
  auto count_of = [&](double a, double b, double s) -> Expected<int64_t> {
    if (!(s > 0)) return step.Error(fmt::format("expected a step > 0, got {}", step.Text()));
    if (b < a) return to.Error(fmt::format("expected 'to' >= 'from' ({}), got {}", from.Text(), to.Text()));
    const double n = std::floor((b - a) / s * (1 + 1e-12)) + 1;
    if (n > static_cast<double>(kMaxRangeValues)) {
      return node.Error(fmt::format("the range has {:.0f} values; at most {} are allowed", n, kMaxRangeValues));
    }
    return static_cast<int64_t>(n);
  };
  if (auto a = from.AsInt(), b = to.AsInt(), s = step.AsInt(); a.ok() && b.ok() && s.ok()) {
    FP_ASSIGN_OR_RETURN(int64_t n, count_of(static_cast<double>(*a), static_cast<double>(*b), static_cast<double>(*s)));
    for (int64_t i = 0; i < n; ++i) texts.push_back(std::to_string(*a + i * *s));
  } else if (auto ra = from.AsRate(); ra.ok()) {
    FP_ASSIGN_OR_RETURN(Rate rb, to.AsRate());
    FP_ASSIGN_OR_RETURN(Rate rs, step.AsRate());
    FP_ASSIGN_OR_RETURN(int64_t n, count_of(ra->per_second, rb.per_second, rs.per_second));
    for (int64_t i = 0; i < n; ++i) {
      texts.push_back(RateText(Rate{ra->per_second + static_cast<double>(i) * rs.per_second}));
    }
  } else if (auto da = from.AsDuration(); da.ok()) {
    FP_ASSIGN_OR_RETURN(Duration db, to.AsDuration());
    FP_ASSIGN_OR_RETURN(Duration ds, step.AsDuration());
    FP_ASSIGN_OR_RETURN(int64_t n, count_of(static_cast<double>(da->ns()), static_cast<double>(db.ns()),
                                            static_cast<double>(ds.ns())));
    for (int64_t i = 0; i < n; ++i) texts.push_back(fmt::format("{}ns", da->ns() + i * ds.ns()));
  } else {
    auto fa = from.AsDouble();
    if (!fa.ok()) {
      return from.Error(fmt::format("expected an integer, a number, a rate (2/s) or a duration (100ms), got {}",
                                    from.Text()));
    }
    FP_ASSIGN_OR_RETURN(double fb, to.AsDouble());
    FP_ASSIGN_OR_RETURN(double fs, step.AsDouble());
    FP_ASSIGN_OR_RETURN(int64_t n, count_of(*fa, fb, fs));
    for (int64_t i = 0; i < n; ++i) texts.push_back(fmt::format("{}", RoundForReport(*fa + static_cast<double>(i) * fs)));
  }
  std::vector<YamlNode> values;
  for (std::string& t : texts) values.push_back(YamlDocument::Scalar(std::move(t), node).root());
  return values;
}


// "2%" or a fraction such as 0.02.
Expected<double> ReadResolution(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return 0.02;
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  double value = 0;
  if (!text.empty() && text.back() == '%') {
    FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text.substr(0, text.size() - 1), "resolution"));
    auto v = doc.root().AsDouble();
    if (!v.ok()) return node.Error(fmt::format("expected a percentage such as 2%, got {}", node.Text()));
    value = *v / 100;
  } else {
    auto v = node.AsDouble();
    if (!v.ok()) return node.Error(fmt::format("expected a percentage such as 2% or a fraction, got {}", node.Text()));
    value = *v;
  }
  if (!(value >= 0.001 && value <= 1)) {
    return node.Error(fmt::format("expected a resolution between 0.1% and 100%, got {}", node.Text()));
  }
  return value;
}

Expected<MaxRateSearch> ReadSearch(const YamlNode& node, const std::vector<std::string>& known,
                                   const std::vector<std::string>& slo_classes) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"max_rate"}));
  const YamlNode m = node["max_rate"];
  FP_RETURN_IF_ERROR(m.RequirePresent());
  FP_RETURN_IF_ERROR(m.CheckKeys({"axis", "low", "high", "attainment", "resolution", "early_stop"}));
  MaxRateSearch s;
  s.where = m;
  FP_ASSIGN_OR_RETURN(s.axis, m["axis"].AsString());
  FP_RETURN_IF_ERROR(CheckKeyPath(m["axis"], s.axis, known));
  FP_ASSIGN_OR_RETURN(s.low, m["low"].AsRate());
  FP_ASSIGN_OR_RETURN(s.high, m["high"].AsRate());
  if (!(s.low.per_second > 0)) return m["low"].Error("expected a rate > 0");
  if (!(s.high.per_second > s.low.per_second)) {
    return m["high"].Error(fmt::format("expected a rate above low ({}), got {}", m["low"].Text(), m["high"].Text()));
  }
  FP_RETURN_IF_ERROR(m["attainment"].RequirePresent());
  FP_ASSIGN_OR_RETURN(s.attainment, ReadAttainmentTargets(m["attainment"], slo_classes, kTargetsHint));
  FP_ASSIGN_OR_RETURN(s.resolution, ReadResolution(m["resolution"]));
  FP_ASSIGN_OR_RETURN(s.early_stop, m["early_stop"].BoolOr(true));
  return s;
}


Status ReadBase(const YamlNode& node, const std::string& dir, SweepSpec& s) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  std::string text;
  if (node.IsMap()) {
    FP_RETURN_IF_ERROR(node.CheckKeys({"builtin"}));
    FP_ASSIGN_OR_RETURN(std::string which, node["builtin"].AsString());
    const std::vector<std::string> builtins = {"atlas"};
    if (which != "atlas") return node["builtin"].Error(UnknownNameMessage("built-in scenario", which, builtins));
    text = std::string(AtlasScenarioYaml());
    s.base_source = "builtin:atlas";
  } else {
    FP_ASSIGN_OR_RETURN(std::string path, node.AsString());
    if (path.empty()) return node.Error("expected a scenario file, or {builtin: atlas}");
    const std::filesystem::path p = std::filesystem::path(path).is_absolute() || dir.empty()
                                        ? std::filesystem::path(path)
                                        : std::filesystem::path(dir) / path;
    auto read = ReadFile(p.string());
    if (!read.ok()) return node.Error(read.status().message());
    text = std::move(*read);
    s.base_source = p.lexically_normal().string();
    s.base_dir = p.parent_path().string();
  }
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, s.base_source));
  s.base = std::make_shared<const YamlDocument>(std::move(doc));
  s.base_digest = DigestOf(text);
  return Status::Ok();
}

Status ReadAxes(const YamlNode& node, const std::vector<std::string>& known, SweepSpec& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [path, value] : entries) {
    FP_RETURN_IF_ERROR(CheckKeyPath(value, path, known));
    SweepAxis axis;
    axis.path = path;
    if (value.IsMap()) {
      FP_ASSIGN_OR_RETURN(axis.values, ExpandRange(value));
    } else {
      auto items = value.Items();
      if (!items.ok()) {
        return value.Error(fmt::format("expected a list of values or a range {{from, to, step}}, got {}", value.Text()));
      }
      axis.values = std::move(*items);
    }
    if (axis.values.empty()) return value.Error("expected at least one value");
    // Axes that overlap (one path inside another's) would label a point with a value
    // that the other axis then replaces: refuse them.
    for (const SweepAxis& other : s.axes) {
      const auto inside = [](const std::string& inner, const std::string& outer) {
        return inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 && inner[outer.size()] == '.';
      };
      if (inside(path, other.path) || inside(other.path, path)) {
        return value.Error(fmt::format("axis '{}' overlaps axis '{}': a point would be labelled with a value the "
                                       "other axis replaces; sweep one of them, or put the field in the other's values",
                                       path, other.path));
      }
    }
    s.axes.push_back(std::move(axis));
  }
  return Status::Ok();
}

Status ReadSeeds(const YamlNode& node, SweepSpec& s) {
  if (!node.present() || node.IsNull()) {
    FP_ASSIGN_OR_RETURN(int64_t seed, s.base->root()["seed"].IntOr(0));
    s.seeds = {static_cast<uint64_t>(std::max<int64_t>(seed, 0))};
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  if (items.empty()) return node.Error("expected at least one seed (or leave seeds out for the base seed)");
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(int64_t seed, item.AsIntAtLeast(0));
    if (std::find(s.seeds.begin(), s.seeds.end(), static_cast<uint64_t>(seed)) != s.seeds.end()) {
      return item.Error(fmt::format("seed {} is listed twice", seed));
    }
    s.seeds.push_back(static_cast<uint64_t>(seed));
  }
  s.seeds_given = true;
  return Status::Ok();
}

}  // namespace

std::vector<std::string> SloClassNames(const YamlDocument& base) {
  std::vector<std::string> names;
  const YamlNode slo = base.root()["slo"];
  if (!slo.IsMap()) return names;
  auto entries = slo.Entries();
  if (!entries.ok()) return names;
  for (const auto& [name, value] : *entries) names.push_back(name);
  return names;
}

Expected<AttainmentTargets> ReadAttainmentTargets(const YamlNode& node, const std::vector<std::string>& slo_classes,
                                                  std::string_view hint) {
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one class: attainment (e.g. {interactive: 0.99})");
  AttainmentTargets targets;
  for (const auto& [cls, value] : entries) {
    if (std::find(slo_classes.begin(), slo_classes.end(), cls) == slo_classes.end()) {
      return value.Error(UnknownNameMessage("SLO class", cls, slo_classes) + " (" + std::string(hint) + ")");
    }
    FP_ASSIGN_OR_RETURN(double t, value.AsDoubleInRange(0, 1));
    if (t <= 0) return value.Error("expected an attainment in (0, 1], got 0");
    targets.emplace_back(cls, t);
  }
  return targets;
}

Json SweepValueJson(const YamlNode& v) {
  if (auto i = v.AsInt(); i.ok()) return *i;
  if (auto d = v.AsDouble(); d.ok()) return *d;
  if (auto b = v.AsBool(); b.ok()) return *b;
  if (v.IsScalar()) return *v.AsString();
  return v.Text();
}

std::string RateText(Rate r) {
  std::string t = fmt::format("{:.6f}", r.per_second);
  while (!t.empty() && t.back() == '0') t.pop_back();
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t + "/s";
}

std::vector<std::string> ScenarioKeyPaths(const YamlDocument& scenario) {
  std::set<std::string> paths;
  AddPaths(scenario.root(), "", paths);
  AddSchemaPaths(paths);
  return {paths.begin(), paths.end()};
}

int64_t SweepSpec::configurations() const {
  int64_t n = 1;
  for (const SweepAxis& a : axes) n *= static_cast<int64_t>(a.values.size());
  return n;
}

std::vector<size_t> SweepSpec::AxisValues(int64_t configuration) const {
  std::vector<size_t> at(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    const auto n = static_cast<int64_t>(axes[i].values.size());
    at[i] = static_cast<size_t>(configuration % n);
    configuration /= n;
  }
  return at;
}

Json SweepSpec::Describe() const {
  Json axes_json = Json::array();
  for (const SweepAxis& a : axes) {
    Json values = Json::array();
    for (const YamlNode& v : a.values) values.push_back(SweepValueJson(v));
    axes_json.push_back({{"path", a.path}, {"values", values}});
  }
  Json overrides_json = Json::array();
  for (const YamlOverride& o : overrides) overrides_json.push_back({{"path", o.path}, {"value", SweepValueJson(o.value)}});
  Json targets_json = Json::object();
  for (const auto& [cls, t] : targets) targets_json[cls] = t;
  Json j = {{"name", name},
            {"source", display_name},
            {"digest", digest},
            {"base", {{"source", base_source}, {"digest", base_digest}}},
            {"axes", axes_json},
            {"overrides", overrides_json},
            {"seeds", seeds},
            {"targets", targets_json},
            {"targets_source", targets_source},
            {"configurations", configurations()},
            {"points", points()}};
  // Axis order is meaningful but JSON objects are sorted: keep the order as a list.
  j["target_order"] = Json::array();
  for (const auto& [cls, t] : targets) j["target_order"].push_back(cls);
  if (gpu_hour_price) j["price"] = {{"gpu_hour", *gpu_hour_price}};
  if (search) {
    Json att = Json::object();
    for (const auto& [cls, t] : search->attainment) att[cls] = t;
    j["search"] = {{"max_rate",
                    {{"axis", search->axis},
                     {"low_per_s", search->low.per_second},
                     {"high_per_s", search->high.per_second},
                     {"attainment", att},
                     {"resolution", search->resolution},
                     {"early_stop", search->early_stop}}}};
  }
  return j;
}

Expected<SweepSpec> SweepSpecOfBase(const YamlNode& base_node, const std::string& dir, std::string display_name) {
  SweepSpec s;
  s.display_name = display_name;
  s.name = display_name.empty() ? "base" : std::filesystem::path(display_name).stem().string();
  FP_RETURN_IF_ERROR(ReadBase(base_node, dir, s));
  FP_ASSIGN_OR_RETURN(int64_t seed, s.base->root()["seed"].IntOr(0));
  s.seeds = {static_cast<uint64_t>(std::max<int64_t>(seed, 0))};
  for (const std::string& cls : SloClassNames(*s.base)) s.targets.emplace_back(cls, kDefaultTarget);
  s.targets_source = fmt::format("not given: {} for every SLO class", kDefaultTarget);
  FP_ASSIGN_OR_RETURN(s.digest, DigestOfJson(Json{{"base", s.base_digest}}));
  return s;
}

Expected<SweepSpec> LoadSweepSpecText(std::string_view text, std::string display_name, std::string dir) {
  SweepSpec s;
  s.display_name = display_name;
  s.name = display_name.empty() ? "sweep" : std::filesystem::path(display_name).stem().string();
  if (s.name.empty()) s.name = "sweep";
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  s.document = std::make_shared<const YamlDocument>(std::move(doc));
  const YamlNode root = s.document->root();
  if (!root.IsMap()) return root.Error("expected a sweep spec mapping (version, base, axes, ...): docs/sweep.md");
  FP_RETURN_IF_ERROR(root.CheckKeys(kSpecKeys));
  FP_RETURN_IF_ERROR(root["version"].RequirePresent());
  FP_ASSIGN_OR_RETURN(int64_t version, root["version"].AsInt());
  if (version != 1) return root["version"].Error(fmt::format("unsupported sweep spec version {}; this fleetplan reads version 1", version));
  FP_RETURN_IF_ERROR(ReadBase(root["base"], dir, s));
  const std::vector<std::string> known = ScenarioKeyPaths(*s.base);
  const std::vector<std::string> slo_classes = SloClassNames(*s.base);

  if (root["overrides"].present() && !root["overrides"].IsNull()) {
    FP_ASSIGN_OR_RETURN(auto entries, root["overrides"].Entries());
    for (const auto& [path, value] : entries) {
      FP_RETURN_IF_ERROR(CheckKeyPath(value, path, known));
      s.overrides.push_back(YamlOverride{path, value});
    }
  }
  FP_RETURN_IF_ERROR(ReadAxes(root["axes"], known, s));
  FP_RETURN_IF_ERROR(ReadSeeds(root["seeds"], s));
  if (root["search"].present() && !root["search"].IsNull()) {
    FP_ASSIGN_OR_RETURN(s.search, ReadSearch(root["search"], known, slo_classes));
    for (const SweepAxis& a : s.axes) {
      if (a.path == s.search->axis) {
        return root["search"]["max_rate"]["axis"].Error(
            fmt::format("'{}' is both an axis and the searched axis; remove it from axes", a.path));
      }
    }
  }
  if (root["targets"].present() && !root["targets"].IsNull()) {
    FP_ASSIGN_OR_RETURN(s.targets, ReadAttainmentTargets(root["targets"], slo_classes, kTargetsHint));
    s.targets_source = "targets";
  } else if (s.search) {
    s.targets = s.search->attainment;
    s.targets_source = "search.max_rate.attainment";
  } else {
    for (const std::string& cls : slo_classes) s.targets.emplace_back(cls, kDefaultTarget);
    s.targets_source = fmt::format("not given: {} for every SLO class", kDefaultTarget);
  }
  if (root["price"].present() && !root["price"].IsNull()) {
    FP_RETURN_IF_ERROR(root["price"].CheckKeys({"gpu_hour"}));
    FP_ASSIGN_OR_RETURN(double price, root["price"]["gpu_hour"].AsDouble());
    if (!(price > 0)) return root["price"]["gpu_hour"].Error("expected a price per GPU-hour > 0");
    s.gpu_hour_price = price;
  }
  const double points = static_cast<double>(s.configurations()) * static_cast<double>(s.seeds.size());
  if (points > static_cast<double>(kMaxSweepPoints)) {
    return root["axes"].Error(fmt::format("the sweep has {:.0f} points; at most {} are allowed", points, kMaxSweepPoints));
  }
  FP_ASSIGN_OR_RETURN(s.digest, DigestOfJson(Json{{"spec", DigestOf(text)}, {"base", s.base_digest}}));
  return s;
}

Expected<SweepSpec> LoadSweepSpec(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return LoadSweepSpecText(text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace fleetplan
