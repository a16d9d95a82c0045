// A cluster: zones → racks → nodes → GPUs, and the links between them.
//
// What it owns: the nodes (each one GPU type, with its capabilities — memory and native
// formats — possibly narrowed by the cluster file), the link classes (NVLink island inside
// a node, a PCIe fallback, the inter-node network, oversubscription between racks, and
// explicit node-pair connections such as a multi-node NVLink domain), and the health of
// every GPU, NVLink island and network port. Failure domains are the node, the rack and
// the zone.
//
// Links between two GPUs (LinkBetween):
//   same node            the node's intra link (its NVLink island), or its PCIe link
//                        when the island is down;
//   an explicit connection between the two nodes: that link;
//   same rack            the rack's inter-node link (the cluster default unless the rack
//                        names its own);
//   different racks      the cluster's inter-node link with its bandwidth divided by the
//                        inter-rack oversubscription (e.g. 2:1 halves it).
// A link is *slow* for a GPU type when its bandwidth is below that of the type's catalog
// default intra link (GpuSpec::default_intra_link): a TP group over it pays for every
// all-reduce, so layout search refuses it unless told otherwise.
//
// Islands: nodes joined by connections that are not slow form one island (an NVLink
// domain); every other node is an island of its own. A TP group inside one island with a
// healthy NVLink never crosses a slow link.
//
// Invariants (checked by Cluster::Make): rack and node names unique together; every
// node in exactly one rack; GPU ids are dense 0..gpus()-1, node by node in file order;
// every link has a bandwidth > 0.
// Thread model: immutable value type after Make; queries are const and pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/hardware.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

// The network between nodes when a cluster states none: one NDR InfiniBand port per GPU,
// the rail-optimized fabric of current H100/H200 clusters (DGX H100 reference design).
inline constexpr std::string_view kDefaultInterNodeLink = "ib-ndr-400";
// The host link a GPU falls back to when its NVLink island is lost: PCIe 5.0 x16, the host
// interface of every Hopper and Blackwell part in the catalog.
inline constexpr std::string_view kDefaultPcieLink = "pcie5";
// Zone of a rack that names none.
inline constexpr std::string_view kDefaultZone = "zone-0";

struct ClusterRack {
  std::string name;
  std::string zone;
  LinkSpec inter_node_link;  // between nodes of this rack
};

struct ClusterNode {
  std::string name;
  int64_t rack = 0;  // index into Cluster::racks()
  GpuSpec gpu;       // the catalog GPU, with the file's memory / dtypes overrides
  int64_t gpu_count = 0;
  int64_t first_gpu = 0;  // id of its GPU 0
  LinkSpec intra_link;    // the NVLink island (or the PCIe switch for PCIe parts)
  LinkSpec pcie_link;     // used inside the node when the island is down
  // The catalog default intra link of the GPU type: links slower than it are slow for TP.
  LinkSpec reference_link;
  bool intra_link_up = true;
  bool network_up = true;    // false: the node reaches no other node
  std::vector<bool> gpu_up;  // per GPU of the node
};

// Two nodes joined by their own link (e.g. a multi-node NVLink domain, or a direct cable).
struct NodeConnection {
  int64_t a = 0;  // node indices, a < b
  int64_t b = 0;
  LinkSpec link;
};

// One GPU as a location: node index and index within the node.
struct GpuRef {
  int64_t node = 0;
  int64_t index = 0;
  auto operator<=>(const GpuRef&) const = default;
};

// What can be removed from a cluster to ask "what if it is lost": a GPU, a node, a rack, a
// zone, a node's NVLink island, a node's network port, or a native format of every GPU.
// Enum values reach text by name (RemovalKindName); never renumber.
enum class RemovalKind : int {
  kGpu = 0,
  kNode = 1,
  kRack = 2,
  kZone = 3,
  kNvlink = 4,
  kNetwork = 5,
  kDtype = 6,
};
std::string_view RemovalKindName(RemovalKind k);  // "gpu", "node", "rack", ...

struct Removal {
  RemovalKind kind = RemovalKind::kGpu;
  std::string target;  // "node/3" for a GPU, a name for the others, a dtype name for kDtype
};

// "gpu:n0/3", "node:n0", "rack:r1", "zone:z1", "nvlink:n0", "network:n0", "dtype:fp8".
// Unknown kinds list the valid ones; the target is checked by Cluster::Without.
Expected<Removal> ParseRemoval(std::string_view text);

class Cluster {
 public:
  // Checks the invariants above and assigns GPU ids; errors name the first broken one.
  // Zones are those the racks name, in order of first appearance.
  static Expected<Cluster> Make(std::string name, std::vector<ClusterRack> racks, std::vector<ClusterNode> nodes,
                                LinkSpec inter_node_link, double inter_rack_oversubscription,
                                std::vector<NodeConnection> connections);

  const std::string& name() const { return name_; }
  const std::vector<std::string>& zones() const { return zones_; }
  const std::vector<ClusterRack>& racks() const { return racks_; }
  const std::vector<ClusterNode>& nodes() const { return nodes_; }
  const std::vector<NodeConnection>& connections() const { return connections_; }
  const LinkSpec& inter_node_link() const { return inter_node_link_; }
  double inter_rack_oversubscription() const { return inter_rack_oversubscription_; }
  // Defaults the reader applied, one line each, for the output ("inter-node link
  // ib-ndr-400: default (not given)").
  const std::vector<std::string>& derived() const { return derived_; }
  void AddDerived(std::string line) { derived_.push_back(std::move(line)); }

  int64_t gpus() const { return total_gpus_; }
  int64_t healthy_gpus() const;
  int64_t HealthyGpus(int64_t node) const;
  bool GpuUp(GpuRef g) const;
  int64_t GpuId(GpuRef g) const;
  GpuRef RefOf(int64_t gpu_id) const;   // REQUIRES: 0 <= gpu_id < gpus()
  std::string GpuName(GpuRef g) const;  // "n0/3"

  std::optional<int64_t> FindNode(std::string_view name) const;
  std::vector<std::string> NodeNames() const;

  // The link inside node `n` (intra link, or PCIe when the island is down).
  const LinkSpec& NodeLink(int64_t n) const;
  // The link between two different nodes (see the file comment). REQUIRES: a != b. Gives
  // nullopt when either node's network is down and no connection joins them.
  std::optional<LinkSpec> LinkBetween(int64_t a, int64_t b) const;
  // Whether `link` is slower than node n's reference link (its GPU type's catalog default
  // intra link).
  bool IsSlowFor(const LinkSpec& link, int64_t n) const;

  // Islands: for each node, the index of its island (islands numbered by first node).
  const std::vector<int64_t>& island_of() const { return island_of_; }
  int64_t islands() const { return islands_; }

  // The same cluster with `removal` applied. Errors: an unknown target (did-you-mean over
  // the names of its kind), a GPU index out of range, a dtype no GPU supports.
  Expected<Cluster> Without(const Removal& removal) const;

 private:
  Cluster() = default;
  void Index();
  Status CheckLinks() const;

  std::string name_;
  std::vector<std::string> zones_;
  std::vector<ClusterRack> racks_;
  std::vector<ClusterNode> nodes_;
  std::vector<NodeConnection> connections_;
  LinkSpec inter_node_link_;
  double inter_rack_oversubscription_ = 1.0;
  std::vector<std::string> derived_;
  std::vector<int64_t> island_of_;
  int64_t islands_ = 0;
  int64_t total_gpus_ = 0;
};

}  // namespace fleetplan
