// Cluster files and short forms (cluster_file.h).
#include "fleetplan/plan/cluster_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "fleetplan/core/error.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan {
namespace {

const std::vector<std::string> kRootKeys = {"name", "links", "network", "racks", "connections"};
const std::vector<std::string> kNetworkKeys = {"inter_node_link", "inter_rack_oversubscription"};
const std::vector<std::string> kRackKeys = {"name", "zone", "inter_node_link", "nodes"};
const std::vector<std::string> kNodeKeys = {"name", "gpu", "gpus", "intra_link", "pcie_link", "memory", "dtypes"};
const std::vector<std::string> kConnectionKeys = {"between", "link"};
const std::vector<std::string> kLinkKeys = {"kind", "bandwidth", "latency", "description"};

// Bandwidths above this are unit mistakes (bits for bytes, B/s for GB/s): ~100× any link.
constexpr double kMaxLinkBandwidth = 1e14;
// Largest inter-rack oversubscription accepted: beyond 64:1 a "fabric" is a typo.
constexpr double kMaxOversubscription = 64;

// Reads one cluster document; remembers where each name was first defined.
class Reader {
 public:
  explicit Reader(const Catalog& catalog) : catalog_(catalog) {}

  Expected<Cluster> Read(const YamlNode& root, const std::string& default_name) {
    FP_RETURN_IF_ERROR(root.CheckKeys(kRootKeys));
    if (!root.IsMap()) return root.Error(fmt::format("expected a mapping, got {}", QuoteValue(root.Text())));
    FP_ASSIGN_OR_RETURN(std::string name, root["name"].StringOr(default_name));
    FP_RETURN_IF_ERROR(ReadLinkClasses(root["links"]));
    FP_RETURN_IF_ERROR(ReadNetwork(root["network"]));
    FP_RETURN_IF_ERROR(ReadRacks(root["racks"]));
    FP_RETURN_IF_ERROR(ReadConnections(root["connections"]));
    FP_ASSIGN_OR_RETURN(Cluster cluster, Cluster::Make(std::move(name), std::move(racks_), std::move(nodes_),
                                                       inter_node_, oversubscription_, std::move(connections_)));
    for (std::string& line : derived_) cluster.AddDerived(std::move(line));
    return cluster;
  }

 private:
  // Unique names across racks and nodes, and across link classes.
  Status Claim(const YamlNode& node, const std::string& name, std::string_view kind) {
    const auto [it, inserted] = first_use_.emplace(name, fmt::format("{} at line {}", kind, node.location().line));
    if (inserted) return Status::Ok();
    return node.Error(fmt::format("duplicate name '{}': already names a {}", name, it->second));
  }

  std::vector<std::string> LinkNames() const {
    std::set<std::string> names;
    for (const auto& [n, l] : file_links_) names.insert(n);
    for (const auto& [n, l] : catalog_.links()) names.insert(n);
    return {names.begin(), names.end()};
  }

  Expected<LinkSpec> LinkNamed(const YamlNode& node, const std::string& name) const {
    if (const auto it = file_links_.find(name); it != file_links_.end()) return it->second;
    if (const auto it = catalog_.links().find(name); it != catalog_.links().end()) return it->second;
    return node.Error(UnknownNameMessage("link", name, LinkNames()));
  }

  Expected<LinkSpec> ReadLinkRef(const YamlNode& node) const {
    FP_ASSIGN_OR_RETURN(const std::string name, node.AsString());
    return LinkNamed(node, name);
  }

  static Expected<double> ReadBandwidthValue(const YamlNode& node) {
    FP_ASSIGN_OR_RETURN(const std::string text, node.AsString());
    Expected<double> parsed = ParseBandwidth(text);
    if (!parsed.ok()) return node.Error(parsed.status().message());
    if (!(*parsed > 0) || *parsed > kMaxLinkBandwidth) {
      return node.Error(fmt::format("expected a bandwidth above 0 and at most 100TB/s, got '{}'", text));
    }
    return *parsed;
  }

  Status ReadLinkClasses(const YamlNode& links) {
    if (!links.present() || links.IsNull()) return Status::Ok();
    FP_ASSIGN_OR_RETURN(const auto entries, links.Entries());
    for (const auto& [name, node] : entries) {
      FP_RETURN_IF_ERROR(node.CheckKeys(kLinkKeys));
      LinkSpec l;
      l.name = name;
      FP_ASSIGN_OR_RETURN(l.description, node["description"].StringOr(""));
      l.source = fmt::format("cluster file {}:{}", node.location().file, node.location().line);
      FP_ASSIGN_OR_RETURN(const std::string kind, node["kind"].AsString());
      Expected<LinkKind> parsed = ParseLinkKind(kind);
      if (!parsed.ok()) return node["kind"].Error(parsed.status().message());
      l.kind = *parsed;
      FP_ASSIGN_OR_RETURN(l.bandwidth, ReadBandwidthValue(node["bandwidth"]));
      FP_ASSIGN_OR_RETURN(l.latency, node["latency"].AsDuration());
      file_links_.emplace(name, std::move(l));
    }
    return Status::Ok();
  }

  Status ReadNetwork(const YamlNode& net) {
    FP_RETURN_IF_ERROR(net.CheckKeys(kNetworkKeys));
    const YamlNode link = net["inter_node_link"];
    if (link.present() && !link.IsNull()) {
      FP_ASSIGN_OR_RETURN(inter_node_, ReadLinkRef(link));
    } else {
      FP_ASSIGN_OR_RETURN(inter_node_, catalog_.Link(kDefaultInterNodeLink));
      derived_.push_back(
          fmt::format("inter-node link {}: default (network.inter_node_link not given)", kDefaultInterNodeLink));
    }
    const YamlNode over = net["inter_rack_oversubscription"];
    if (over.present() && !over.IsNull()) {
      FP_ASSIGN_OR_RETURN(oversubscription_, over.AsDoubleInRange(1, kMaxOversubscription));
    }
    return Status::Ok();
  }

  Status ReadRacks(const YamlNode& racks) {
    FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, racks.Items());
    if (items.empty()) return racks.Error("expected at least one rack, got an empty list");
    for (const YamlNode& r : items) {
      FP_RETURN_IF_ERROR(r.CheckKeys(kRackKeys));
      ClusterRack rack;
      FP_ASSIGN_OR_RETURN(rack.name, r["name"].AsString());
      FP_RETURN_IF_ERROR(Claim(r["name"], rack.name, "rack"));
      FP_ASSIGN_OR_RETURN(rack.zone, r["zone"].StringOr(std::string(kDefaultZone)));
      const YamlNode link = r["inter_node_link"];
      rack.inter_node_link = inter_node_;
      if (link.present() && !link.IsNull()) {
        FP_ASSIGN_OR_RETURN(rack.inter_node_link, ReadLinkRef(link));
      }
      FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> nodes, r["nodes"].Items());
      if (nodes.empty()) return r["nodes"].Error("expected at least one node, got an empty list");
      for (const YamlNode& n : nodes) {
        if (static_cast<int64_t>(nodes_.size()) >= kMaxClusterNodes) {
          return n.Error(fmt::format("more than {} nodes: fleetplan's limit for a cluster (docs/limits.md)",
                                     kMaxClusterNodes));
        }
        FP_ASSIGN_OR_RETURN(ClusterNode node, ReadNode(n));
        node.rack = static_cast<int64_t>(racks_.size());
        nodes_.push_back(std::move(node));
      }
      racks_.push_back(std::move(rack));
    }
    return Status::Ok();
  }

  Status NarrowGpu(const YamlNode& n, GpuSpec& gpu) const {
    const YamlNode memory = n["memory"];
    if (memory.present() && !memory.IsNull()) {
      FP_ASSIGN_OR_RETURN(const Bytes b, memory.AsBytes());
      if (b.count() <= 0 || b > gpu.memory) {
        return memory.Error(fmt::format("expected a size above 0 and at most the {} of {}, got '{}'",
                                        FormatBytes(gpu.memory), gpu.name, memory.Text()));
      }
      gpu.memory = b;
    }
    const YamlNode dtypes = n["dtypes"];
    if (!dtypes.present() || dtypes.IsNull()) return Status::Ok();
    FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, dtypes.Items());
    std::vector<DType> narrowed;
    for (const YamlNode& item : items) {
      FP_ASSIGN_OR_RETURN(const std::string text, item.AsString());
      Expected<DType> t = ParseDType(text);
      if (!t.ok()) return item.Error(t.status().message());
      if (!gpu.Supports(*t)) {
        return item.Error(fmt::format("{} has no native {} (it has: {})", gpu.name, text, DTypeList(gpu)));
      }
      narrowed.push_back(*t);
    }
    gpu.dtypes = std::move(narrowed);
    return Status::Ok();
  }

  static std::string DTypeList(const GpuSpec& gpu) {
    std::vector<std::string> names;
    for (DType t : gpu.dtypes) names.emplace_back(DTypeName(t));
    return fmt::format("{}", fmt::join(names, ", "));
  }

  Expected<ClusterNode> ReadNode(const YamlNode& n) {
    FP_RETURN_IF_ERROR(n.CheckKeys(kNodeKeys));
    ClusterNode node;
    FP_ASSIGN_OR_RETURN(node.name, n["name"].AsString());
    FP_RETURN_IF_ERROR(Claim(n["name"], node.name, "node"));
    FP_ASSIGN_OR_RETURN(const std::string gpu_name, n["gpu"].AsString());
    Expected<GpuSpec> gpu = catalog_.Gpu(gpu_name);
    if (!gpu.ok()) return n["gpu"].Error(gpu.status().message());
    node.gpu = std::move(gpu).value();
    FP_RETURN_IF_ERROR(NarrowGpu(n, node.gpu));
    FP_ASSIGN_OR_RETURN(node.gpu_count, n["gpus"].AsIntAtLeast(1));
    if (node.gpu_count > kMaxGpusPerNode) {
      return n["gpus"].Error(fmt::format("expected at most {} GPUs per node, got {}", kMaxGpusPerNode, node.gpu_count));
    }
    total_gpus_ += node.gpu_count;
    if (total_gpus_ > kMaxClusterGpus) {
      return n["gpus"].Error(fmt::format("the cluster exceeds {} GPUs", kMaxClusterGpus));
    }
    FP_ASSIGN_OR_RETURN(node.reference_link, catalog_.Link(node.gpu.default_intra_link));
    node.intra_link = node.reference_link;
    if (const YamlNode l = n["intra_link"]; l.present() && !l.IsNull()) {
      FP_ASSIGN_OR_RETURN(node.intra_link, ReadLinkRef(l));
    }
    if (const YamlNode l = n["pcie_link"]; l.present() && !l.IsNull()) {
      FP_ASSIGN_OR_RETURN(node.pcie_link, ReadLinkRef(l));
    } else {
      FP_ASSIGN_OR_RETURN(node.pcie_link, catalog_.Link(kDefaultPcieLink));
      pcie_defaulted_ = true;
    }
    node.gpu_up.assign(static_cast<size_t>(node.gpu_count), true);
    return node;
  }

  Expected<int64_t> NodeIndex(const YamlNode& item) const {
    FP_ASSIGN_OR_RETURN(const std::string name, item.AsString());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].name == name) return static_cast<int64_t>(i);
    }
    std::vector<std::string> names;
    for (const ClusterNode& node : nodes_) names.push_back(node.name);
    return item.Error(UnknownNameMessage("node", name, names));
  }

  Status ReadConnections(const YamlNode& conns) {
    if (pcie_defaulted_) {
      derived_.push_back(fmt::format("pcie link {}: default for nodes that name none", kDefaultPcieLink));
    }
    if (!conns.present() || conns.IsNull()) return Status::Ok();
    FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, conns.Items());
    for (const YamlNode& c : items) {
      FP_RETURN_IF_ERROR(c.CheckKeys(kConnectionKeys));
      FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> ends, c["between"].Items());
      if (ends.size() != 2) {
        return c["between"].Error(fmt::format("expected two node names, got {}", ends.size()));
      }
      FP_ASSIGN_OR_RETURN(const int64_t a, NodeIndex(ends[0]));
      FP_ASSIGN_OR_RETURN(const int64_t b, NodeIndex(ends[1]));
      if (a == b)
        return ends[1].Error(fmt::format("a connection joins two different nodes, got '{}' twice", ends[1].Text()));
      for (const NodeConnection& k : connections_) {
        if (k.a == std::min(a, b) && k.b == std::max(a, b)) {
          return c["between"].Error(
              fmt::format("duplicate connection between '{}' and '{}'", ends[0].Text(), ends[1].Text()));
        }
      }
      FP_ASSIGN_OR_RETURN(LinkSpec link, ReadLinkRef(c["link"]));
      connections_.push_back(NodeConnection{std::min(a, b), std::max(a, b), std::move(link)});
    }
    return Status::Ok();
  }

  const Catalog& catalog_;
  std::map<std::string, LinkSpec> file_links_;
  std::map<std::string, std::string> first_use_;  // name -> "node at line 4"
  LinkSpec inter_node_;
  double oversubscription_ = 1.0;
  std::vector<ClusterRack> racks_;
  std::vector<ClusterNode> nodes_;
  std::vector<NodeConnection> connections_;
  std::vector<std::string> derived_;
  int64_t total_gpus_ = 0;
  bool pcie_defaulted_ = false;
};

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The leading counts of a short form and the GPU name after them.
struct ShortForm {
  std::vector<std::string_view> counts;
  std::string_view gpu;
};

ShortForm SplitShortForm(std::string_view text) {
  ShortForm f;
  while (f.counts.size() < 3) {
    const size_t x = text.find('x');
    if (x == std::string_view::npos || !AllDigits(text.substr(0, x))) break;
    f.counts.push_back(text.substr(0, x));
    text.remove_prefix(x + 1);
  }
  f.gpu = text;
  return f;
}

Expected<int64_t> ShortCount(std::string_view form, std::string_view digits, std::string_view what, int64_t max) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || v < 1 || v > max) {
    return InvalidInput(fmt::format("short form {}: expected {} between 1 and {}, got {}", QuoteValue(form), what, max,
                                    QuoteValue(digits)));
  }
  return v;
}

}  // namespace

Expected<Cluster> ReadClusterYaml(const YamlNode& root, const Catalog& catalog, const std::string& default_name) {
  return Reader(catalog).Read(root, default_name);
}

Expected<Cluster> ParseClusterText(std::string_view text, std::string display_name, const Catalog& catalog) {
  const std::string stem = std::filesystem::path(display_name).stem().string();
  FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  return ReadClusterYaml(doc.root(), catalog, stem);
}

Expected<Cluster> ReadClusterFile(const std::string& path, const Catalog& catalog) {
  FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadClusterYaml(doc.root(), catalog, std::filesystem::path(path).stem().string());
}

bool IsClusterShortForm(std::string_view text) {
  const ShortForm f = SplitShortForm(text);
  return f.counts.size() >= 2 && !f.gpu.empty() && !AllDigits(f.gpu) && f.gpu.find('/') == std::string_view::npos &&
         f.gpu.find('.') == std::string_view::npos;
}

Expected<Cluster> ParseClusterShortForm(std::string_view text, const Catalog& catalog) {
  const ShortForm f = SplitShortForm(text);
  if (f.counts.size() < 2 || f.gpu.empty()) {
    return InvalidInput(
        fmt::format("expected a short form [RACKS x] NODES x GPUS x GPU (e.g. "
                    "2x8xh100-sxm-80g), got {}",
                    QuoteValue(text)));
  }
  const bool has_racks = f.counts.size() == 3;
  int64_t racks = 1;
  if (has_racks) {
    FP_ASSIGN_OR_RETURN(racks, ShortCount(text, f.counts[0], "racks", kMaxClusterGpus));
  }
  const size_t base = has_racks ? 1 : 0;
  FP_ASSIGN_OR_RETURN(const int64_t nodes, ShortCount(text, f.counts[base], "nodes per rack", kMaxClusterGpus));
  FP_ASSIGN_OR_RETURN(const int64_t gpus, ShortCount(text, f.counts[base + 1], "GPUs per node", kMaxGpusPerNode));
  if (racks * nodes > kMaxClusterNodes) {
    return InvalidInput(fmt::format("short form {}: {} nodes exceed fleetplan's limit of {} (docs/limits.md)",
                                    QuoteValue(text), racks * nodes, kMaxClusterNodes));
  }
  if (racks * nodes * gpus > kMaxClusterGpus) {
    return InvalidInput(fmt::format("short form {}: {} GPUs exceed the limit of {}", QuoteValue(text),
                                    racks * nodes * gpus, kMaxClusterGpus));
  }
  Expected<GpuSpec> gpu = catalog.Gpu(f.gpu);
  if (!gpu.ok()) return InvalidInput(fmt::format("short form {}: {}", QuoteValue(text), gpu.status().message()));
  FP_ASSIGN_OR_RETURN(const LinkSpec intra, catalog.Link(gpu->default_intra_link));
  FP_ASSIGN_OR_RETURN(const LinkSpec inter, catalog.Link(kDefaultInterNodeLink));
  FP_ASSIGN_OR_RETURN(const LinkSpec pcie, catalog.Link(kDefaultPcieLink));
  std::vector<ClusterRack> rack_list;
  std::vector<ClusterNode> node_list;
  for (int64_t r = 0; r < racks; ++r) {
    rack_list.push_back(ClusterRack{fmt::format("r{}", r), std::string(kDefaultZone), inter});
    for (int64_t n = 0; n < nodes; ++n) {
      ClusterNode node;
      node.name = fmt::format("n{}", r * nodes + n);
      node.rack = r;
      node.gpu = *gpu;
      node.gpu_count = gpus;
      node.intra_link = intra;
      node.reference_link = intra;
      node.pcie_link = pcie;
      node_list.push_back(std::move(node));
    }
  }
  FP_ASSIGN_OR_RETURN(Cluster cluster,
                      Cluster::Make(std::string(text), std::move(rack_list), std::move(node_list), inter, 1.0, {}));
  cluster.AddDerived(
      fmt::format("intra-node link {}: the default_intra_link of {} (short form)", intra.name, gpu->name));
  cluster.AddDerived(fmt::format("inter-node link {}: default (short form)", inter.name));
  cluster.AddDerived(fmt::format("pcie link {}: default (short form)", pcie.name));
  return cluster;
}

Expected<Cluster> LoadCluster(const std::string& file_or_short_form, const Catalog& catalog, std::string_view flag) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(file_or_short_form, ec);
  if (!exists && IsClusterShortForm(file_or_short_form)) {
    Expected<Cluster> c = ParseClusterShortForm(file_or_short_form, catalog);
    if (!c.ok()) return LocatedError(SourceLocation{}, flag, c.status().message());
    return c;
  }
  if (!exists) {
    return LocatedError(SourceLocation{}, flag,
                        fmt::format("cannot read '{}': No such file or directory (a short form "
                                    "looks like 2x8xh100-sxm-80g)",
                                    file_or_short_form));
  }
  return ReadClusterFile(file_or_short_form, catalog);
}

Expected<Cluster> ApplyRemovals(Cluster cluster, const std::vector<std::string>& removals, std::string_view flag) {
  for (std::size_t i = 0; i < removals.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (removals[j] != removals[i]) continue;
      return UsageError(FormatLocatedError(
          SourceLocation{}, flag,
          fmt::format("{} is given twice (each removal once: what is lost is lost)", QuoteValue(removals[i]))));
    }
  }
  for (const std::string& text : removals) {
    Expected<Removal> removal = ParseRemoval(text);
    if (!removal.ok()) return LocatedError(SourceLocation{}, flag, removal.status().message());
    Expected<Cluster> next = cluster.Without(*removal);
    if (!next.ok()) {
      return LocatedError(SourceLocation{}, flag, fmt::format("{}: {}", text, next.status().message()));
    }
    cluster = std::move(next).value();
    cluster.AddDerived(fmt::format("removed {} (what-if)", text));
  }
  return cluster;
}

}  // namespace fleetplan
