#include "fleetplan/capacity/spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

const std::vector<std::string> kSpecKeys = {"version", "scenario", "builtin", "demand",  "domains", "survive", "headroom",
                                            "replica_capacity", "price", "budget", "layouts", "verify"};
// Most regions and failure domains one spec may name: placement checks every loss
// scenario against every domain, so this bounds a run at 10^6 checks.
constexpr size_t kMaxDomains = 1000;
// Most GPUs one domain may offer (a million: far beyond any region).
constexpr int64_t kMaxDomainGpus = int64_t{1} << 20;

// Highest price per GPU-hour accepted, on demand or committed: about 10^5 times what any
// GPU rents for, and low enough that cost over any fleet this reader accepts (10^9 GPUs,
// 730 hours a month) stays a finite number JSON can hold (docs/limits.md).
constexpr double kMaxPricePerGpuHour = 1e6;

const std::vector<std::string> kSurviveNames = {"none", "largest-domain", "any-one-domain", "any-one-region"};

// A number followed by one of `units` ("4.10/gpu-h", "150000/month", "10%"); the number
// must be finite and >= 0.
Expected<double> ReadAmount(const YamlNode& node, const std::vector<std::string>& units, std::string_view example) {
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  for (const std::string& unit : units) {
    if (text.size() <= unit.size() || text.compare(text.size() - unit.size(), unit.size(), unit) != 0) continue;
    std::string number = text.substr(0, text.size() - unit.size());
    while (!number.empty() && number.back() == ' ') number.pop_back();
    auto doc = YamlDocument::LoadString(number, "amount");
    if (!doc.ok()) break;
    auto v = doc->root().AsDouble();
    if (!v.ok() || !(*v >= 0)) break;
    return *v;
  }
  return node.Error(fmt::format("expected {}, got '{}'", example, text));
}

Expected<double> ReadPercent(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(double pct, ReadAmount(node, {"%"}, "a percentage such as 10%"));
  if (pct >= 100) return node.Error(fmt::format("expected a headroom below 100%, got {}", node.Text()));
  return pct / 100;
}

// `scenario: FILE` or `scenario: {builtin: atlas}` (read as a sweep base), or `builtin:
// atlas` beside the other keys (`node` is then that value).
Status ReadScenario(const YamlNode& node, bool top_level_builtin, const std::string& dir, CapacitySpec& s) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  if (!top_level_builtin) {
    FP_ASSIGN_OR_RETURN(s.base, SweepSpecOfBase(node, dir, s.display_name));
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(std::string which, node.AsString());
  const std::vector<std::string> builtins = {"atlas"};
  if (which != "atlas") return node.Error(UnknownNameMessage("built-in scenario", which, builtins));
  FP_ASSIGN_OR_RETURN(YamlDocument builtin, YamlDocument::LoadString("{builtin: atlas}", s.display_name));
  FP_ASSIGN_OR_RETURN(s.base, SweepSpecOfBase(builtin.root(), dir, s.display_name));
  return Status::Ok();
}

Status ReadDemand(const YamlNode& node, CapacitySpec& s) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one region: peak rate (e.g. {us-east: 40/s})");
  if (entries.size() > kMaxDomains) return node.Error(fmt::format("expected at most {} regions, got {}", kMaxDomains, entries.size()));
  for (const auto& [region, value] : entries) {
    FP_ASSIGN_OR_RETURN(Rate r, value.AsRate());
    if (!(r.per_second > 0)) return value.Error(fmt::format("expected a peak rate > 0, got {}", value.Text()));
    s.demand.push_back(RegionDemand{region, r});
  }
  return Status::Ok();
}

Status ReadDomains(const YamlNode& node, CapacitySpec& s) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one failure domain: {region, gpus}");
  if (entries.size() > kMaxDomains) {
    return node.Error(fmt::format("expected at most {} failure domains, got {}", kMaxDomains, entries.size()));
  }
  std::vector<std::string> regions;
  for (const RegionDemand& d : s.demand) regions.push_back(d.region);
  for (const auto& [name, value] : entries) {
    FP_RETURN_IF_ERROR(value.CheckKeys({"region", "gpus"}));
    FP_RETURN_IF_ERROR(value["region"].RequirePresent());
    FP_RETURN_IF_ERROR(value["gpus"].RequirePresent());
    FailureDomain d;
    d.name = name;
    FP_ASSIGN_OR_RETURN(d.region, value["region"].AsString());
    if (std::find(regions.begin(), regions.end(), d.region) == regions.end()) {
      return value["region"].Error(UnknownNameMessage("region", d.region, regions) + " (regions are the keys of demand)");
    }
    FP_ASSIGN_OR_RETURN(d.gpus, value["gpus"].AsIntAtLeast(0));
    if (d.gpus > kMaxDomainGpus) {
      return value["gpus"].Error(fmt::format("expected at most {} GPUs in one domain, got {}", kMaxDomainGpus, d.gpus));
    }
    s.domains.push_back(std::move(d));
  }
  for (const RegionDemand& r : s.demand) {
    const bool has = std::any_of(s.domains.begin(), s.domains.end(), [&](const FailureDomain& d) { return d.region == r.region; });
    if (!has) {
      return node.Error(fmt::format("region '{}' has demand but no failure domain: add one with region: {}", r.region,
                                    r.region));
    }
  }
  return Status::Ok();
}

Status ReadReplicaCapacity(const YamlNode& node, CapacitySpec& s) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  ReplicaCapacitySource& c = s.replica_capacity;
  c.where = node;
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.size() != 1) {
    return node.Error("expected exactly one of search, file or rate (e.g. {search: {attainment: {interactive: 0.99}}})");
  }
  FP_RETURN_IF_ERROR(node.CheckKeys({"search", "file", "rate"}));
  const auto& [kind, value] = entries.front();
  const std::vector<std::string> classes = SloClassNames(*s.base.base);
  if (kind == "search") {
    c.kind = ReplicaCapacitySource::Kind::kSearch;
    FP_RETURN_IF_ERROR(value.CheckKeys({"attainment", "low", "high", "resolution", "duration"}));
    if (value["attainment"].present()) {
      FP_ASSIGN_OR_RETURN(c.attainment, ReadAttainmentTargets(value["attainment"], classes, "classes of the scenario's slo"));
    } else {
      if (classes.empty()) return value.Error("the scenario has no slo: name the attainment to search for");
      for (const std::string& cls : classes) c.attainment.emplace_back(cls, 0.99);
    }
    if (value["low"].present()) {
      FP_ASSIGN_OR_RETURN(c.low, value["low"].AsRate());
    }
    if (value["high"].present()) {
      FP_ASSIGN_OR_RETURN(c.high, value["high"].AsRate());
    }
    if (!(c.low.per_second > 0)) return value["low"].Error("expected a rate > 0");
    if (!(c.high.per_second > c.low.per_second)) {
      return value["high"].Error(fmt::format("expected a rate above low, got {}", value["high"].Text()));
    }
    if (value["resolution"].present()) {
      FP_ASSIGN_OR_RETURN(double pct, ReadAmount(value["resolution"], {"%"}, "a percentage such as 2%"));
      if (!(pct >= 0.1 && pct <= 100)) return value["resolution"].Error("expected a resolution between 0.1% and 100%");
      c.resolution = pct / 100;
    }
    if (value["duration"].present()) {
      FP_ASSIGN_OR_RETURN(Duration d, value["duration"].AsPositiveDuration());
      c.duration = d;
    }
  } else if (kind == "file") {
    c.kind = ReplicaCapacitySource::Kind::kFile;
    if (value.IsMap()) {
      FP_RETURN_IF_ERROR(value.CheckKeys({"path", "configuration"}));
      FP_RETURN_IF_ERROR(value["path"].RequirePresent());
      FP_ASSIGN_OR_RETURN(c.file, value["path"].AsString());
      if (value["configuration"].present()) {
        FP_ASSIGN_OR_RETURN(c.configuration, value["configuration"].AsIntAtLeast(0));
      }
    } else {
      FP_ASSIGN_OR_RETURN(c.file, value.AsString());
    }
    if (!std::filesystem::path(c.file).is_absolute() && !s.dir.empty()) {
      c.file = (std::filesystem::path(s.dir) / c.file).string();
    }
  } else {
    c.kind = ReplicaCapacitySource::Kind::kRate;
    FP_ASSIGN_OR_RETURN(c.rate, value.AsRate());
    if (!(c.rate.per_second > 0)) return value.Error(fmt::format("expected a rate > 0, got {}", value.Text()));
  }
  return Status::Ok();
}

// A price per GPU-hour, at most kMaxPricePerGpuHour.
Expected<double> ReadPricePerGpuHour(const YamlNode& node, std::string_view example) {
  FP_ASSIGN_OR_RETURN(double price, ReadAmount(node, {"/gpu-h", "/gpu-hour"}, example));
  if (price > kMaxPricePerGpuHour) {
    return node.Error(fmt::format("expected a price of at most {:.0f}/gpu-h (fleetplan's limit; docs/limits.md), got '{}'",
                                  kMaxPricePerGpuHour, node.Text()));
  }
  return price;
}

Status ReadPrice(const YamlNode& node, CapacitySpec& s) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"on_demand", "committed"}));
  FP_RETURN_IF_ERROR(node["on_demand"].RequirePresent());
  FP_ASSIGN_OR_RETURN(s.price.on_demand_per_gpu_hour,
                      ReadPricePerGpuHour(node["on_demand"], "a price per GPU-hour such as 4.10/gpu-h"));
  const YamlNode c = node["committed"];
  if (c.present() && !c.IsNull()) {
    FP_RETURN_IF_ERROR(c.CheckKeys({"rate", "gpus", "term"}));
    for (const char* key : {"rate", "gpus", "term"}) FP_RETURN_IF_ERROR(c[key].RequirePresent());
    CommittedPrice p;
    FP_ASSIGN_OR_RETURN(p.per_gpu_hour, ReadPricePerGpuHour(c["rate"], "a price per GPU-hour such as 2.60/gpu-h"));
    FP_ASSIGN_OR_RETURN(p.gpus, c["gpus"].AsIntAtLeast(1));
    FP_ASSIGN_OR_RETURN(p.term, c["term"].AsString());
    FP_ASSIGN_OR_RETURN(double term, ReadAmount(c["term"], {"y", "m"}, "a term such as 1y, 3y or 6m"));
    if (!(term > 0)) return c["term"].Error(fmt::format("expected a term > 0, got {}", p.term));
    s.price.committed = p;
  }
  return Status::Ok();
}

Status ReadLayouts(const YamlNode& node, CapacitySpec& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  if (items.empty()) return node.Error("expected at least one layout (e.g. [{tp: 4}, {tp: 8}]) or no layouts key");
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const YamlNode& item : items) {
    FP_RETURN_IF_ERROR(item.CheckKeys({"tp", "pp"}));
    FP_RETURN_IF_ERROR(item["tp"].RequirePresent());
    LayoutChoice l;
    l.where = item;
    FP_ASSIGN_OR_RETURN(l.tp, item["tp"].AsIntAtLeast(1));
    FP_ASSIGN_OR_RETURN(l.pp, item["pp"].IntOr(1));
    if (l.pp < 1) return item["pp"].Error("expected pp >= 1");
    if (!seen.insert({l.tp, l.pp}).second) return item.Error(fmt::format("layout {} is listed twice", l.Name()));
    s.layouts.push_back(l);
  }
  return Status::Ok();
}

Status ReadVerify(const YamlNode& node, CapacitySpec& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys({"loss_at", "duration"}));
  if (node["loss_at"].present()) {
    FP_ASSIGN_OR_RETURN(s.loss_at, node["loss_at"].AsDuration());
  }
  if (node["duration"].present()) {
    FP_ASSIGN_OR_RETURN(Duration d, node["duration"].AsDuration());
    if (d <= s.loss_at) {
      return node["duration"].Error(fmt::format("expected a duration after loss_at ({:g} s), got {}", s.loss_at.seconds(),
                                                node["duration"].Text()));
    }
    s.verify_duration = d;
  }
  return Status::Ok();
}

}  // namespace

std::string_view SurviveRuleName(SurviveRule rule) {
  return kSurviveNames[static_cast<size_t>(rule)];
}

std::string LayoutChoice::Name() const { return pp == 1 ? fmt::format("tp{}", tp) : fmt::format("tp{}-pp{}", tp, pp); }

Json CapacitySpec::Describe() const {
  Json demand_json = Json::object();
  for (const RegionDemand& d : demand) demand_json[d.region] = RoundForReport(d.peak.per_second);
  Json domains_json = Json::array();
  for (const FailureDomain& d : domains) domains_json.push_back({{"name", d.name}, {"region", d.region}, {"gpus", d.gpus}});
  Json price_json = {{"on_demand_per_gpu_hour", RoundForReport(price.on_demand_per_gpu_hour)}};
  if (price.committed) {
    price_json["committed"] = {{"per_gpu_hour", RoundForReport(price.committed->per_gpu_hour)},
                               {"gpus", price.committed->gpus},
                               {"term", price.committed->term}};
  }
  Json j = {{"spec", display_name},
            {"digest", digest},
            {"scenario", base.base_source},
            {"demand_rps", demand_json},
            {"domains", domains_json},
            {"survive", SurviveRuleName(survive)},
            {"headroom", RoundForReport(headroom)},
            {"price", price_json}};
  if (budget_per_month) j["budget_per_month"] = RoundForReport(*budget_per_month);
  return j;
}

namespace {

// Every key but the scenario's, from `root` into `s`.
Status ReadSpecBody(const YamlNode& root, CapacitySpec& s) {
  FP_RETURN_IF_ERROR(ReadDemand(root["demand"], s));
  FP_RETURN_IF_ERROR(ReadDomains(root["domains"], s));
  FP_RETURN_IF_ERROR(root["survive"].RequirePresent());
  FP_ASSIGN_OR_RETURN(std::string survive, root["survive"].AsString());
  auto it = std::find(kSurviveNames.begin(), kSurviveNames.end(), survive);
  if (it == kSurviveNames.end()) return root["survive"].Error(UnknownNameMessage("loss to survive", survive, kSurviveNames));
  s.survive = static_cast<SurviveRule>(it - kSurviveNames.begin());
  if (root["headroom"].present()) {
    FP_ASSIGN_OR_RETURN(s.headroom, ReadPercent(root["headroom"]));
  }
  FP_RETURN_IF_ERROR(ReadReplicaCapacity(root["replica_capacity"], s));
  FP_RETURN_IF_ERROR(ReadPrice(root["price"], s));
  if (root["budget"].present() && !root["budget"].IsNull()) {
    FP_ASSIGN_OR_RETURN(double budget, ReadAmount(root["budget"], {"/month"}, "a budget per month such as 150000/month"));
    s.budget_per_month = budget;
  }
  FP_RETURN_IF_ERROR(ReadLayouts(root["layouts"], s));
  FP_RETURN_IF_ERROR(ReadVerify(root["verify"], s));
  return Status::Ok();
}

Status CheckRoot(const YamlNode& root) {
  if (!root.IsMap()) return root.Error("expected a capacity spec mapping (version, scenario, demand, ...): docs/capacity.md");
  FP_RETURN_IF_ERROR(root.CheckKeys(kSpecKeys));
  FP_RETURN_IF_ERROR(root["version"].RequirePresent());
  FP_ASSIGN_OR_RETURN(int64_t version, root["version"].AsInt());
  if (version != 1) {
    return root["version"].Error(fmt::format("unsupported capacity spec version {}; this fleetplan reads version 1", version));
  }
  return Status::Ok();
}

}  // namespace

Expected<CapacitySpec> LoadCapacitySpecText(std::string_view text, std::string display_name, std::string dir) {
  CapacitySpec s;
  s.display_name = display_name;
  s.dir = dir;
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  s.document = std::make_shared<const YamlDocument>(std::move(doc));
  const YamlNode root = s.document->root();
  FP_RETURN_IF_ERROR(CheckRoot(root));
  // `scenario: FILE`, `scenario: {builtin: atlas}`, or `builtin: atlas` beside the other keys.
  if (root["builtin"].present()) {
    if (root["scenario"].present()) return root["builtin"].Error("give either scenario or builtin, not both");
    FP_RETURN_IF_ERROR(ReadScenario(root["builtin"], true, dir, s));
  } else {
    FP_RETURN_IF_ERROR(ReadScenario(root["scenario"], false, dir, s));
  }
  FP_RETURN_IF_ERROR(ReadSpecBody(root, s));
  FP_ASSIGN_OR_RETURN(s.digest, DigestOfJson(Json{{"spec", DigestOf(text)}, {"scenario", s.base.base_digest}}));
  return s;
}

Expected<CapacitySpec> CapacitySpecOf(std::shared_ptr<const YamlDocument> doc, SweepSpec base, std::string dir,
                                      std::string digest) {
  CapacitySpec s;
  s.display_name = doc->display_name();
  s.dir = std::move(dir);
  s.document = std::move(doc);
  s.base = std::move(base);
  const YamlNode root = s.document->root();
  FP_RETURN_IF_ERROR(CheckRoot(root));
  FP_RETURN_IF_ERROR(ReadSpecBody(root, s));
  s.digest = std::move(digest);
  return s;
}

Expected<CapacitySpec> LoadCapacitySpec(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return LoadCapacitySpecText(text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace fleetplan
