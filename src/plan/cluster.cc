#include "fleetplan/plan/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

const std::vector<std::string>& RemovalKindNames() {
  static const std::vector<std::string> names = {"gpu", "node", "rack", "zone", "nvlink", "network", "dtype"};
  return names;
}

// A link that rides on the NVLink fabric (as opposed to the network ports).
bool RidesNvlink(const LinkSpec& link) {
  return link.kind == LinkKind::kNvlink || link.kind == LinkKind::kXgmi;
}

// Disjoint sets over node indices (islands).
int64_t Root(std::vector<int64_t>& parent, int64_t x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

Status CheckLink(const LinkSpec& link, std::string_view where) {
  if (link.bandwidth > 0) return Status::Ok();
  return InvalidInput(fmt::format("{}: link '{}' has no bandwidth (expected > 0)", where, link.name));
}

std::vector<std::string> NamesOf(const std::vector<ClusterRack>& racks) {
  std::vector<std::string> out;
  for (const ClusterRack& r : racks) out.push_back(r.name);
  return out;
}

}  // namespace

std::string_view RemovalKindName(RemovalKind k) {
  return RemovalKindNames().at(static_cast<size_t>(k));
}

Expected<Removal> ParseRemoval(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon + 1 == text.size()) {
    return InvalidInput(fmt::format(
        "expected KIND:TARGET (e.g. gpu:n0/3, node:n0, nvlink:n0, network:n0, dtype:fp8), got {}", QuoteValue(text)));
  }
  const std::string kind(text.substr(0, colon));
  const std::vector<std::string>& names = RemovalKindNames();
  const auto it = std::find(names.begin(), names.end(), kind);
  if (it == names.end()) return InvalidInput(UnknownNameMessage("removal kind", kind, names));
  return Removal{static_cast<RemovalKind>(it - names.begin()), std::string(text.substr(colon + 1))};
}

Expected<Cluster> Cluster::Make(std::string name, std::vector<ClusterRack> racks, std::vector<ClusterNode> nodes,
                                LinkSpec inter_node_link, double inter_rack_oversubscription,
                                std::vector<NodeConnection> connections) {
  Cluster c;
  c.name_ = std::move(name);
  c.racks_ = std::move(racks);
  c.nodes_ = std::move(nodes);
  c.inter_node_link_ = std::move(inter_node_link);
  c.inter_rack_oversubscription_ = inter_rack_oversubscription;
  c.connections_ = std::move(connections);
  if (c.racks_.empty()) return InvalidInput("cluster: expected at least one rack");
  if (c.nodes_.empty()) return InvalidInput("cluster: expected at least one node");
  if (!(inter_rack_oversubscription >= 1)) {
    return InvalidInput(
        fmt::format("cluster: inter-rack oversubscription must be >= 1, got {}", inter_rack_oversubscription));
  }
  std::set<std::string> seen;
  for (const ClusterRack& r : c.racks_) {
    if (!seen.insert(r.name).second) return InvalidInput(fmt::format("cluster: duplicate name '{}'", r.name));
  }
  for (ClusterNode& n : c.nodes_) {
    if (!seen.insert(n.name).second) return InvalidInput(fmt::format("cluster: duplicate name '{}'", n.name));
    if (n.rack < 0 || n.rack >= static_cast<int64_t>(c.racks_.size())) {
      return InvalidInput(fmt::format("cluster: node '{}' names no rack", n.name));
    }
    if (n.gpu_count < 1) return InvalidInput(fmt::format("cluster: node '{}' has no GPU", n.name));
    if (n.gpu_up.empty()) n.gpu_up.assign(static_cast<size_t>(n.gpu_count), true);
    FP_ASSERT(static_cast<int64_t>(n.gpu_up.size()) == n.gpu_count);
  }
  for (const NodeConnection& k : c.connections_) {
    const auto count = static_cast<int64_t>(c.nodes_.size());
    if (k.a < 0 || k.b >= count || k.a >= k.b) {
      return InvalidInput(
          fmt::format("cluster: connection between nodes {} and {} is not a pair of "
                      "distinct nodes",
                      k.a, k.b));
    }
  }
  FP_RETURN_IF_ERROR(c.CheckLinks());
  c.Index();
  return c;
}

Status Cluster::CheckLinks() const {
  FP_RETURN_IF_ERROR(CheckLink(inter_node_link_, "network.inter_node_link"));
  for (const ClusterRack& r : racks_) FP_RETURN_IF_ERROR(CheckLink(r.inter_node_link, r.name));
  for (const ClusterNode& n : nodes_) {
    FP_RETURN_IF_ERROR(CheckLink(n.intra_link, n.name));
    FP_RETURN_IF_ERROR(CheckLink(n.pcie_link, n.name));
    FP_RETURN_IF_ERROR(CheckLink(n.reference_link, n.name));
  }
  for (const NodeConnection& k : connections_) {
    FP_RETURN_IF_ERROR(CheckLink(k.link, fmt::format("connection {}-{}", nodes_[static_cast<size_t>(k.a)].name,
                                                     nodes_[static_cast<size_t>(k.b)].name)));
  }
  return Status::Ok();
}

void Cluster::Index() {
  zones_.clear();
  for (const ClusterRack& r : racks_) {
    if (std::find(zones_.begin(), zones_.end(), r.zone) == zones_.end()) zones_.push_back(r.zone);
  }
  total_gpus_ = 0;
  for (ClusterNode& n : nodes_) {
    n.first_gpu = total_gpus_;
    total_gpus_ += n.gpu_count;
  }
  // Islands: nodes joined by a usable connection that is not slow for either end.
  std::vector<int64_t> parent(nodes_.size());
  std::iota(parent.begin(), parent.end(), int64_t{0});
  for (const NodeConnection& k : connections_) {
    const ClusterNode& a = nodes_[static_cast<size_t>(k.a)];
    const ClusterNode& b = nodes_[static_cast<size_t>(k.b)];
    const bool usable = RidesNvlink(k.link) ? (a.intra_link_up && b.intra_link_up) : (a.network_up && b.network_up);
    if (!usable || IsSlowFor(k.link, k.a) || IsSlowFor(k.link, k.b)) continue;
    const int64_t ra = Root(parent, k.a);
    const int64_t rb = Root(parent, k.b);
    parent[static_cast<size_t>(std::max(ra, rb))] = std::min(ra, rb);
  }
  island_of_.assign(nodes_.size(), 0);
  std::map<int64_t, int64_t> number;  // root -> island index, by first node
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const int64_t root = Root(parent, static_cast<int64_t>(i));
    const auto it = number.emplace(root, static_cast<int64_t>(number.size())).first;
    island_of_[i] = it->second;
  }
  islands_ = static_cast<int64_t>(number.size());
}

int64_t Cluster::healthy_gpus() const {
  int64_t total = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) total += HealthyGpus(static_cast<int64_t>(n));
  return total;
}

int64_t Cluster::HealthyGpus(int64_t node) const {
  const ClusterNode& n = nodes_.at(static_cast<size_t>(node));
  return static_cast<int64_t>(std::count(n.gpu_up.begin(), n.gpu_up.end(), true));
}

bool Cluster::GpuUp(GpuRef g) const {
  return nodes_.at(static_cast<size_t>(g.node)).gpu_up.at(static_cast<size_t>(g.index));
}

int64_t Cluster::GpuId(GpuRef g) const {
  return nodes_.at(static_cast<size_t>(g.node)).first_gpu + g.index;
}

GpuRef Cluster::RefOf(int64_t gpu_id) const {
  FP_ASSERT(gpu_id >= 0 && gpu_id < total_gpus_);
  const auto it = std::upper_bound(nodes_.begin(), nodes_.end(), gpu_id,
                                   [](int64_t id, const ClusterNode& n) { return id < n.first_gpu; });
  const auto node = static_cast<int64_t>(it - nodes_.begin()) - 1;
  return GpuRef{node, gpu_id - nodes_[static_cast<size_t>(node)].first_gpu};
}

std::string Cluster::GpuName(GpuRef g) const {
  return fmt::format("{}/{}", nodes_.at(static_cast<size_t>(g.node)).name, g.index);
}

std::optional<int64_t> Cluster::FindNode(std::string_view name) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return static_cast<int64_t>(i);
  }
  return std::nullopt;
}

std::vector<std::string> Cluster::NodeNames() const {
  std::vector<std::string> out;
  for (const ClusterNode& n : nodes_) out.push_back(n.name);
  return out;
}

const LinkSpec& Cluster::NodeLink(int64_t n) const {
  const ClusterNode& node = nodes_.at(static_cast<size_t>(n));
  return node.intra_link_up ? node.intra_link : node.pcie_link;
}

std::optional<LinkSpec> Cluster::LinkBetween(int64_t a, int64_t b) const {
  FP_ASSERT(a != b);
  if (a > b) std::swap(a, b);
  const ClusterNode& na = nodes_.at(static_cast<size_t>(a));
  const ClusterNode& nb = nodes_.at(static_cast<size_t>(b));
  for (const NodeConnection& k : connections_) {
    if (k.a != a || k.b != b) continue;
    const bool usable = RidesNvlink(k.link) ? (na.intra_link_up && nb.intra_link_up) : (na.network_up && nb.network_up);
    if (usable) return k.link;
  }
  if (!na.network_up || !nb.network_up) return std::nullopt;
  if (na.rack == nb.rack) return racks_[static_cast<size_t>(na.rack)].inter_node_link;
  LinkSpec l = inter_node_link_;
  if (inter_rack_oversubscription_ > 1) {
    l.bandwidth /= inter_rack_oversubscription_;
    l.name = fmt::format("{} (inter-rack {}:1)", l.name, inter_rack_oversubscription_);
  }
  return l;
}

bool Cluster::IsSlowFor(const LinkSpec& link, int64_t n) const {
  return link.bandwidth < nodes_.at(static_cast<size_t>(n)).reference_link.bandwidth;
}

Expected<Cluster> Cluster::Without(const Removal& removal) const {
  Cluster c = *this;
  const std::string& t = removal.target;
  auto node_of = [&](std::string_view name) -> Expected<int64_t> {
    if (const auto n = FindNode(name)) return *n;
    return InvalidInput(UnknownNameMessage("node", name, NodeNames()));
  };
  switch (removal.kind) {
    case RemovalKind::kGpu: {
      const size_t slash = t.rfind('/');
      if (slash == std::string::npos) {
        return InvalidInput(fmt::format("expected NODE/INDEX (e.g. n0/3), got {}", QuoteValue(t)));
      }
      FP_ASSIGN_OR_RETURN(const int64_t n, node_of(std::string_view(t).substr(0, slash)));
      int64_t index = -1;
      const char* first = t.data() + slash + 1;
      const char* last = t.data() + t.size();
      const auto [ptr, ec] = std::from_chars(first, last, index);
      ClusterNode& node = c.nodes_[static_cast<size_t>(n)];
      if (ec != std::errc() || ptr != last || index < 0 || index >= node.gpu_count) {
        return InvalidInput(fmt::format("node '{}' has GPUs 0..{}, got {}", node.name, node.gpu_count - 1,
                                        QuoteValue(t.substr(slash + 1))));
      }
      node.gpu_up[static_cast<size_t>(index)] = false;
      break;
    }
    case RemovalKind::kNode: {
      FP_ASSIGN_OR_RETURN(const int64_t n, node_of(t));
      ClusterNode& node = c.nodes_[static_cast<size_t>(n)];
      node.gpu_up.assign(node.gpu_up.size(), false);
      break;
    }
    case RemovalKind::kRack: {
      const std::vector<std::string> names = NamesOf(racks_);
      const auto it = std::find(names.begin(), names.end(), t);
      if (it == names.end()) return InvalidInput(UnknownNameMessage("rack", t, names));
      const auto rack = static_cast<int64_t>(it - names.begin());
      for (ClusterNode& node : c.nodes_) {
        if (node.rack == rack) node.gpu_up.assign(node.gpu_up.size(), false);
      }
      break;
    }
    case RemovalKind::kZone: {
      if (std::find(zones_.begin(), zones_.end(), t) == zones_.end()) {
        return InvalidInput(UnknownNameMessage("zone", t, zones_));
      }
      for (ClusterNode& node : c.nodes_) {
        if (racks_[static_cast<size_t>(node.rack)].zone == t) node.gpu_up.assign(node.gpu_up.size(), false);
      }
      break;
    }
    case RemovalKind::kNvlink: {
      FP_ASSIGN_OR_RETURN(const int64_t n, node_of(t));
      c.nodes_[static_cast<size_t>(n)].intra_link_up = false;
      break;
    }
    case RemovalKind::kNetwork: {
      FP_ASSIGN_OR_RETURN(const int64_t n, node_of(t));
      c.nodes_[static_cast<size_t>(n)].network_up = false;
      break;
    }
    case RemovalKind::kDtype: {
      FP_ASSIGN_OR_RETURN(const DType dtype, ParseDType(t));
      bool any = false;
      for (ClusterNode& node : c.nodes_) {
        std::vector<DType>& d = node.gpu.dtypes;
        const auto before = d.size();
        d.erase(std::remove(d.begin(), d.end(), dtype), d.end());
        any = any || d.size() != before;
      }
      if (!any) return InvalidInput(fmt::format("no GPU of the cluster supports {} natively", t));
      break;
    }
  }
  c.Index();
  return c;
}

}  // namespace fleetplan
