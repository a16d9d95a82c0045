// Placement requests files, --sizes, and reports (placement_report.h).
#include "fleetplan/plan/placement_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/plan/cluster_file.h"

namespace fleetplan {
namespace {

const std::vector<std::string> kRootKeys = {"allocations", "requests"};
const std::vector<std::string> kAllocationKeys = {"name", "gpus"};
const std::vector<std::string> kRequestKeys = {"name", "gpus", "locality", "memory", "dtypes", "gpu"};

class Reader {
 public:
  explicit Reader(const Cluster& c) : c_(c) {}

  Expected<PlacementInput> Read(const YamlNode& root) {
    FP_RETURN_IF_ERROR(root.CheckKeys(kRootKeys));
    PlacementInput in;
    if (const YamlNode a = root["allocations"]; a.present() && !a.IsNull()) {
      FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, a.Items());
      for (const YamlNode& item : items) {
        FP_ASSIGN_OR_RETURN(Allocation alloc, ReadAllocation(item));
        in.allocations.push_back(std::move(alloc));
      }
    }
    FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> requests, root["requests"].Items());
    for (const YamlNode& item : requests) {
      FP_ASSIGN_OR_RETURN(GroupRequest r, ReadRequest(item));
      in.requests.push_back(std::move(r));
    }
    return in;
  }

 private:
  Status Claim(const YamlNode& node, const std::string& name) {
    const auto [it, inserted] = names_.emplace(name, node.location().line);
    if (inserted) return Status::Ok();
    return node.Error(fmt::format("duplicate name '{}': already used at line {}", name, it->second));
  }

  Expected<int64_t> ReadGpu(const YamlNode& item) const {
    FP_ASSIGN_OR_RETURN(const std::string text, item.AsString());
    const size_t slash = text.rfind('/');
    if (slash == std::string::npos) {
      return item.Error(fmt::format("expected a GPU as NODE/INDEX (e.g. n0/3), got {}", QuoteValue(text)));
    }
    const std::string node = text.substr(0, slash);
    const auto n = c_.FindNode(node);
    if (!n) return item.Error(UnknownNameMessage("node", node, c_.NodeNames()));
    const ClusterNode& cn = c_.nodes()[static_cast<size_t>(*n)];
    int64_t index = -1;
    const char* first = text.data() + slash + 1;
    const char* last = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(first, last, index);
    if (ec != std::errc() || ptr != last || index < 0 || index >= cn.gpu_count) {
      return item.Error(
          fmt::format("node '{}' has GPUs 0..{}, got {}", node, cn.gpu_count - 1, QuoteValue(text.substr(slash + 1))));
    }
    return c_.GpuId(GpuRef{*n, index});
  }

  Expected<Allocation> ReadAllocation(const YamlNode& node) {
    FP_RETURN_IF_ERROR(node.CheckKeys(kAllocationKeys));
    Allocation a;
    FP_ASSIGN_OR_RETURN(a.name, node["name"].AsString());
    FP_RETURN_IF_ERROR(Claim(node["name"], a.name));
    FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> gpus, node["gpus"].Items());
    if (gpus.empty()) return node["gpus"].Error("expected at least one GPU, got an empty list");
    for (const YamlNode& g : gpus) {
      FP_ASSIGN_OR_RETURN(const int64_t id, ReadGpu(g));
      if (std::count(a.gpus.begin(), a.gpus.end(), id) > 0) {
        return g.Error(fmt::format("GPU {} is listed twice", g.Text()));
      }
      if (const auto it = held_.find(id); it != held_.end()) {
        return g.Error(fmt::format("GPU {} is already held by '{}'", g.Text(), it->second));
      }
      if (!c_.GpuUp(c_.RefOf(id))) return g.Error(fmt::format("GPU {} is down", g.Text()));
      held_.emplace(id, a.name);
      a.gpus.push_back(id);
    }
    std::sort(a.gpus.begin(), a.gpus.end());
    return a;
  }

  Expected<GroupRequest> ReadRequest(const YamlNode& node) {
    FP_RETURN_IF_ERROR(node.CheckKeys(kRequestKeys));
    GroupRequest r;
    FP_ASSIGN_OR_RETURN(r.name, node["name"].AsString());
    FP_RETURN_IF_ERROR(Claim(node["name"], r.name));
    FP_ASSIGN_OR_RETURN(r.gpus, node["gpus"].AsIntAtLeast(1));
    if (r.gpus > kMaxGpusPerNode) {
      return node["gpus"].Error(fmt::format("expected at most {} GPUs, got {}", kMaxGpusPerNode, r.gpus));
    }
    FP_ASSIGN_OR_RETURN(const std::string locality, node["locality"].StringOr("node"));
    Expected<Locality> l = ParseLocality(locality);
    if (!l.ok()) return node["locality"].Error(l.status().message());
    r.locality = *l;
    if (const YamlNode m = node["memory"]; m.present() && !m.IsNull()) {
      FP_ASSIGN_OR_RETURN(r.memory_per_gpu, m.AsBytes());
    }
    if (const YamlNode d = node["dtypes"]; d.present() && !d.IsNull()) {
      FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, d.Items());
      for (const YamlNode& item : items) {
        FP_ASSIGN_OR_RETURN(const std::string text, item.AsString());
        Expected<DType> t = ParseDType(text);
        if (!t.ok()) return item.Error(t.status().message());
        r.dtypes.push_back(*t);
      }
    }
    if (const YamlNode g = node["gpu"]; g.present() && !g.IsNull()) {
      FP_ASSIGN_OR_RETURN(r.gpu_type, g.AsString());
      std::vector<std::string> types;
      for (const ClusterNode& n : c_.nodes()) {
        if (std::find(types.begin(), types.end(), n.gpu.name) == types.end()) types.push_back(n.gpu.name);
      }
      if (std::find(types.begin(), types.end(), r.gpu_type) == types.end()) {
        return g.Error(UnknownNameMessage("GPU type in this cluster", r.gpu_type, types));
      }
    }
    return r;
  }

  const Cluster& c_;
  std::map<std::string, int> names_;     // name -> line
  std::map<int64_t, std::string> held_;  // GPU id -> allocation
};

std::vector<std::string> GpuNames(const Cluster& c, const std::vector<int64_t>& gpus) {
  std::vector<std::string> out;
  for (const int64_t g : gpus) out.push_back(c.GpuName(c.RefOf(g)));
  return out;
}

Json FragmentationJson(const Fragmentation& f) {
  Json sizes = Json::array();
  for (const FragmentationRow& row : f.rows) {
    sizes.push_back({{"size", row.size}, {"groups", row.groups}, {"stranded", row.stranded}});
  }
  return Json{{"free_gpus", f.free_gpus}, {"sizes", std::move(sizes)}};
}

std::string FragmentationText(const Fragmentation& f) {
  std::vector<std::string> parts;
  for (const FragmentationRow& row : f.rows) {
    parts.push_back(fmt::format("{}-GPU groups {} ({} stranded)", row.size, row.groups, row.stranded));
  }
  return fmt::format("{} free; {}", f.free_gpus, fmt::join(parts, ", "));
}

}  // namespace

Expected<PlacementInput> ReadPlacementYaml(const YamlNode& root, const Cluster& cluster) {
  return Reader(cluster).Read(root);
}

Expected<PlacementInput> ParsePlacementText(std::string_view text, std::string display_name, const Cluster& cluster) {
  FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  return ReadPlacementYaml(doc.root(), cluster);
}

Expected<PlacementInput> ReadPlacementFile(const std::string& path, const Cluster& cluster) {
  FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadPlacementYaml(doc.root(), cluster);
}

Expected<std::vector<GroupRequest>> ParseGroupSizes(std::string_view text, std::string_view flag) {
  std::vector<GroupRequest> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1 || v > kMaxGpusPerNode) {
      return LocatedError(SourceLocation{}, flag,
                          fmt::format("size {}: expected an integer between 1 and {}, got {}", out.size() + 1,
                                      kMaxGpusPerNode, QuoteValue(item)));
    }
    GroupRequest r;
    r.name = fmt::format("g{}", out.size() + 1);
    r.gpus = v;
    out.push_back(std::move(r));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string PlacementReportText(const ClusterState& state, const std::vector<PlacementPlan>& plans) {
  const Cluster& c = state.cluster();
  std::string out = fmt::format("fleetplan place: {} ({} GPUs, {} healthy, {} held by {} allocation(s))\n", c.name(),
                                c.gpus(), c.healthy_gpus(), c.healthy_gpus() - MeasureFragmentation(state).free_gpus,
                                state.allocations().size());
  for (const PlacementPlan& p : plans) {
    out += fmt::format("\nPolicy {}: {} placed, {} unplaced\n", p.policy, p.placed.size(), p.unplaced.size());
    // Request order, placed and unplaced together.
    for (size_t i = 0; i < p.requests.size(); ++i) {
      const GroupRequest& r = p.requests[i];
      const auto placed =
          std::find_if(p.placed.begin(), p.placed.end(), [&](const PlacedGroup& g) { return g.request == i; });
      if (placed != p.placed.end()) {
        out += fmt::format("  {:<12} {} GPU(s) {:<6} -> {}\n", r.name, r.gpus, LocalityName(r.locality),
                           fmt::join(GpuNames(c, placed->gpus), " "));
        continue;
      }
      const auto unplaced =
          std::find_if(p.unplaced.begin(), p.unplaced.end(), [&](const UnplacedGroup& g) { return g.request == i; });
      out += fmt::format("  {:<12} {} GPU(s) {:<6} -> UNPLACED: {}\n", r.name, r.gpus, LocalityName(r.locality),
                         unplaced->reason);
    }
    out += fmt::format("  fragmentation before: {}\n", FragmentationText(p.before));
    out += fmt::format("  fragmentation after:  {}\n", FragmentationText(p.after));
  }
  if (!c.derived().empty()) {
    out += "\nDerived:\n";
    for (const std::string& line : c.derived()) out += "  " + line + "\n";
  }
  return out;
}

Json PlacementReportJson(const ClusterState& state, const std::vector<PlacementPlan>& plans) {
  const Cluster& c = state.cluster();
  Json j;
  j["cluster"] = {{"name", c.name()}, {"gpus", c.gpus()}, {"healthy_gpus", c.healthy_gpus()}};
  Json allocations = Json::array();
  for (const Allocation& a : state.allocations())
    allocations.push_back({{"name", a.name}, {"gpus", GpuNames(c, a.gpus)}});
  j["allocations"] = std::move(allocations);
  Json out_plans = Json::array();
  for (const PlacementPlan& p : plans) {
    Json placed = Json::array();
    for (const PlacedGroup& g : p.placed) {
      const GroupRequest& r = p.requests[g.request];
      placed.push_back({{"name", r.name},
                        {"gpus", GpuNames(c, g.gpus)},
                        {"size", r.gpus},
                        {"locality", std::string(LocalityName(r.locality))}});
    }
    Json unplaced = Json::array();
    for (const UnplacedGroup& g : p.unplaced) {
      const GroupRequest& r = p.requests[g.request];
      unplaced.push_back({{"name", r.name}, {"size", r.gpus}, {"reason", g.reason}});
    }
    out_plans.push_back(
        {{"policy", p.policy},
         {"placed", std::move(placed)},
         {"unplaced", std::move(unplaced)},
         {"fragmentation", {{"before", FragmentationJson(p.before)}, {"after", FragmentationJson(p.after)}}}});
  }
  j["plans"] = std::move(out_plans);
  j["derived"] = c.derived();
  return j;
}

}  // namespace fleetplan
