// Placement of GPU groups (placement.h).
#include "fleetplan/plan/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "fleetplan/core/error.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan {
namespace {

// One place a group may sit for its locality: a node, an island, a rack, or every
// networked node together.
struct Domain {
  std::string label;
  std::vector<int64_t> nodes;  // ascending
};

std::vector<Domain> DomainsOf(const Cluster& c, Locality l) {
  std::vector<Domain> out;
  const auto n = static_cast<int64_t>(c.nodes().size());
  auto name = [&](int64_t i) { return c.nodes()[static_cast<size_t>(i)].name; };
  switch (l) {
    case Locality::kNode:
      for (int64_t i = 0; i < n; ++i) out.push_back(Domain{name(i), {i}});
      break;
    case Locality::kIsland: {
      std::map<int64_t, size_t> index;
      for (int64_t i = 0; i < n; ++i) {
        const auto [it, inserted] = index.emplace(c.island_of()[static_cast<size_t>(i)], out.size());
        if (inserted) out.push_back(Domain{"island " + name(i), {}});
        out[it->second].nodes.push_back(i);
      }
      break;
    }
    case Locality::kRack:
      for (const ClusterRack& r : c.racks()) out.push_back(Domain{"rack " + r.name, {}});
      for (int64_t i = 0; i < n; ++i)
        out[static_cast<size_t>(c.nodes()[static_cast<size_t>(i)].rack)].nodes.push_back(i);
      break;
    case Locality::kAny: {
      Domain networked{"the networked nodes", {}};
      for (int64_t i = 0; i < n; ++i) {
        if (c.nodes()[static_cast<size_t>(i)].network_up) {
          networked.nodes.push_back(i);
        } else {
          out.push_back(Domain{name(i) + " (network down)", {i}});
        }
      }
      if (!networked.nodes.empty()) out.insert(out.begin(), std::move(networked));
      break;
    }
  }
  return out;
}

bool NodeMeets(const ClusterNode& n, const GroupRequest& r) {
  if (!r.gpu_type.empty() && n.gpu.name != r.gpu_type) return false;
  if (n.gpu.memory < r.memory_per_gpu) return false;
  return std::all_of(r.dtypes.begin(), r.dtypes.end(), [&](DType t) { return n.gpu.Supports(t); });
}

// The eligible free GPUs of one node.
std::vector<int64_t> EligibleOn(const ClusterState& s, int64_t node, const GroupRequest& r) {
  const ClusterNode& n = s.cluster().nodes()[static_cast<size_t>(node)];
  std::vector<int64_t> out;
  if (!NodeMeets(n, r)) return out;
  for (int64_t g = 0; g < n.gpu_count; ++g) {
    if (s.Free(n.first_gpu + g)) out.push_back(n.first_gpu + g);
  }
  return out;
}

struct NodeOffer {
  int64_t node = 0;
  std::vector<int64_t> gpus;
  Bytes memory;  // free memory of those GPUs
};

struct DomainOffer {
  size_t domain = 0;
  std::vector<NodeOffer> nodes;
  int64_t gpus = 0;
  Bytes memory;
};

std::vector<DomainOffer> Offers(const ClusterState& s, const GroupRequest& r, const std::vector<Domain>& domains) {
  std::vector<DomainOffer> out;
  for (size_t d = 0; d < domains.size(); ++d) {
    DomainOffer offer{d, {}, 0, Bytes()};
    for (const int64_t node : domains[d].nodes) {
      std::vector<int64_t> gpus = EligibleOn(s, node, r);
      if (gpus.empty()) continue;
      const Bytes memory =
          s.cluster().nodes()[static_cast<size_t>(node)].gpu.memory * static_cast<int64_t>(gpus.size());
      offer.gpus += static_cast<int64_t>(gpus.size());
      offer.memory += memory;
      offer.nodes.push_back(NodeOffer{node, std::move(gpus), memory});
    }
    out.push_back(std::move(offer));
  }
  return out;
}

// Takes `count` GPUs from the offer's nodes in the given node order.
std::vector<int64_t> Take(std::vector<NodeOffer> nodes, int64_t count,
                          const std::function<bool(const NodeOffer&, const NodeOffer&)>& before) {
  std::stable_sort(nodes.begin(), nodes.end(), before);
  std::vector<int64_t> out;
  for (const NodeOffer& n : nodes) {
    for (const int64_t g : n.gpus) {
      if (static_cast<int64_t>(out.size()) == count) break;
      out.push_back(g);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Tight fit: the domain with the fewest eligible free GPUs that hold the group; inside
// it, the nodes with the fewest free first.
class TightPolicy final : public PlacementPolicy {
 public:
  std::string name() const override { return "tight"; }
  std::optional<std::vector<int64_t>> Choose(const ClusterState& s, const GroupRequest& r) const override {
    const std::vector<DomainOffer> offers = Offers(s, r, DomainsOf(s.cluster(), r.locality));
    const DomainOffer* best = nullptr;
    for (const DomainOffer& o : offers) {
      if (o.gpus >= r.gpus && (best == nullptr || o.gpus < best->gpus)) best = &o;
    }
    if (best == nullptr) return std::nullopt;
    return Take(best->nodes, r.gpus, [](const NodeOffer& a, const NodeOffer& b) {
      return std::make_tuple(a.gpus.size(), a.node) < std::make_tuple(b.gpus.size(), b.node);
    });
  }
};

// Most free memory first: the domain, then the nodes, with the most free GPU memory.
class MostFreePolicy final : public PlacementPolicy {
 public:
  std::string name() const override { return "most-free"; }
  std::optional<std::vector<int64_t>> Choose(const ClusterState& s, const GroupRequest& r) const override {
    const std::vector<DomainOffer> offers = Offers(s, r, DomainsOf(s.cluster(), r.locality));
    const DomainOffer* best = nullptr;
    for (const DomainOffer& o : offers) {
      if (o.gpus >= r.gpus && (best == nullptr || o.memory > best->memory)) best = &o;
    }
    if (best == nullptr) return std::nullopt;
    return Take(best->nodes, r.gpus, [](const NodeOffer& a, const NodeOffer& b) {
      return std::make_tuple(-a.memory.count(), a.node) < std::make_tuple(-b.memory.count(), b.node);
    });
  }
};

using Builder = std::function<std::unique_ptr<PlacementPolicy>()>;
const std::map<std::string, Builder>& Builders() {
  static const std::map<std::string, Builder> builders = {
      {"most-free", [] { return std::make_unique<MostFreePolicy>(); }},
      {"tight", [] { return std::make_unique<TightPolicy>(); }},
  };
  return builders;
}

std::string Needs(const GroupRequest& r) {
  std::vector<std::string> parts;
  if (!r.gpu_type.empty()) parts.push_back(r.gpu_type);
  for (const DType t : r.dtypes) parts.push_back(fmt::format("native {}", DTypeName(t)));
  if (r.memory_per_gpu.count() > 0) parts.push_back(fmt::format(">= {} each", FormatBytes(r.memory_per_gpu)));
  if (parts.empty()) return "";
  return fmt::format(" ({})", fmt::join(parts, ", "));
}

std::string UnplacedReason(const ClusterState& s, const GroupRequest& r) {
  const std::vector<Domain> domains = DomainsOf(s.cluster(), r.locality);
  const std::vector<DomainOffer> offers = Offers(s, r, domains);
  const DomainOffer* largest = nullptr;
  int64_t total = 0;
  for (const DomainOffer& o : offers) {
    if (largest == nullptr || o.gpus > largest->gpus) largest = &o;
  }
  for (int64_t node = 0; node < static_cast<int64_t>(s.cluster().nodes().size()); ++node) {
    total += static_cast<int64_t>(EligibleOn(s, node, r).size());
  }
  const std::string where = largest == nullptr || largest->gpus == 0 ? "" : " on " + domains[largest->domain].label;
  return fmt::format(
      "needs {} eligible free GPU(s){} in one {}; the largest such group is {}{}, {} eligible free "
      "in all",
      r.gpus, Needs(r), LocalityName(r.locality), largest == nullptr ? 0 : largest->gpus, where, total);
}

}  // namespace

std::string_view LocalityName(Locality l) {
  return LocalityNames().at(static_cast<size_t>(l));
}

const std::vector<std::string>& LocalityNames() {
  static const std::vector<std::string> names = {"node", "island", "rack", "any"};
  return names;
}

Expected<Locality> ParseLocality(std::string_view name) {
  const std::vector<std::string>& names = LocalityNames();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return InvalidInput(UnknownNameMessage("locality", name, names));
  return static_cast<Locality>(it - names.begin());
}

ClusterState::ClusterState(Cluster cluster)
    : cluster_(std::move(cluster)), owner_(static_cast<size_t>(cluster_.gpus())) {}

Expected<ClusterState> ClusterState::WithAllocations(Cluster cluster, std::vector<Allocation> allocations) {
  ClusterState s(std::move(cluster));
  for (Allocation& a : allocations) {
    std::sort(a.gpus.begin(), a.gpus.end());
    for (const int64_t g : a.gpus) {
      FP_ASSERT(g >= 0 && g < s.cluster_.gpus());  // readers resolve GPU names to valid ids
      const std::string name = s.cluster_.GpuName(s.cluster_.RefOf(g));
      if (!s.cluster_.GpuUp(s.cluster_.RefOf(g))) {
        return InvalidInput(fmt::format("allocation '{}': GPU {} is down", a.name, name));
      }
      if (!s.Owner(g).empty()) {
        return InvalidInput(fmt::format("allocation '{}': GPU {} is already held by '{}'", a.name, name, s.Owner(g)));
      }
      s.owner_[static_cast<size_t>(g)] = a.name;
    }
    s.allocations_.push_back(std::move(a));
  }
  return s;
}

bool ClusterState::Free(int64_t gpu) const {
  return owner_.at(static_cast<size_t>(gpu)).empty() && cluster_.GpuUp(cluster_.RefOf(gpu));
}

int64_t ClusterState::FreeGpus(int64_t node) const {
  const ClusterNode& n = cluster_.nodes().at(static_cast<size_t>(node));
  int64_t free = 0;
  for (int64_t g = 0; g < n.gpu_count; ++g) free += Free(n.first_gpu + g) ? 1 : 0;
  return free;
}

void ClusterState::Allocate(Allocation allocation) {
  for (const int64_t g : allocation.gpus) {
    FP_ASSERT(Free(g));
    owner_[static_cast<size_t>(g)] = allocation.name.empty() ? "(unnamed)" : allocation.name;
  }
  allocations_.push_back(std::move(allocation));
  ++version_;
}

std::optional<std::string> CheckGroup(const ClusterState& s, const GroupRequest& r, const std::vector<int64_t>& gpus) {
  const Cluster& c = s.cluster();
  if (static_cast<int64_t>(gpus.size()) != r.gpus) {
    return fmt::format("expected {} GPU(s), got {}", r.gpus, gpus.size());
  }
  std::set<int64_t> nodes;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const int64_t g = gpus[i];
    if (g < 0 || g >= c.gpus()) return fmt::format("GPU id {} is not in the cluster", g);
    if (std::count(gpus.begin(), gpus.end(), g) > 1)
      return fmt::format("GPU {} is listed twice", c.GpuName(c.RefOf(g)));
    const GpuRef ref = c.RefOf(g);
    const std::string name = c.GpuName(ref);
    if (!c.GpuUp(ref)) return fmt::format("GPU {} is down", name);
    if (!s.Owner(g).empty()) return fmt::format("GPU {} is held by '{}'", name, s.Owner(g));
    const ClusterNode& n = c.nodes()[static_cast<size_t>(ref.node)];
    if (!NodeMeets(n, r))
      return fmt::format("GPU {} ({}) does not meet the group's needs{}", name, n.gpu.name, Needs(r));
    nodes.insert(ref.node);
  }
  for (const Domain& d : DomainsOf(c, r.locality)) {
    if (std::includes(d.nodes.begin(), d.nodes.end(), nodes.begin(), nodes.end())) return std::nullopt;
  }
  std::vector<std::string> names;
  for (const int64_t n : nodes) names.push_back(c.nodes()[static_cast<size_t>(n)].name);
  return fmt::format("GPUs on nodes {} are not in one {}", fmt::join(names, ", "), LocalityName(r.locality));
}

const std::vector<std::string>& PlacementPolicyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, builder] : Builders()) out.push_back(name);
    return out;
  }();
  return names;
}

Expected<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name) {
  const auto it = Builders().find(std::string(name));
  if (it == Builders().end()) return InvalidInput(UnknownNameMessage("placement policy", name, PlacementPolicyNames()));
  return it->second();
}

Fragmentation MeasureFragmentation(const ClusterState& s) {
  Fragmentation f;
  const auto nodes = static_cast<int64_t>(s.cluster().nodes().size());
  std::vector<int64_t> free(static_cast<size_t>(nodes));
  for (int64_t n = 0; n < nodes; ++n) {
    free[static_cast<size_t>(n)] = s.FreeGpus(n);
    f.free_gpus += free[static_cast<size_t>(n)];
  }
  for (const int64_t size : kFragmentationSizes) {
    FragmentationRow row{size, 0, 0};
    for (const int64_t k : free) row.groups += k / size;
    row.stranded = f.free_gpus - row.groups * size;
    f.rows.push_back(row);
  }
  return f;
}

PlacementPlan PlanPlacement(const ClusterState& state, const std::vector<GroupRequest>& requests,
                            const PlacementPolicy& policy) {
  PlacementPlan plan;
  plan.policy = policy.name();
  plan.base_version = state.version();
  plan.requests = requests;
  plan.before = MeasureFragmentation(state);
  ClusterState scratch = state;
  for (size_t i = 0; i < requests.size(); ++i) {
    const GroupRequest& r = requests[i];
    std::optional<std::vector<int64_t>> gpus = policy.Choose(scratch, r);
    if (!gpus) {
      plan.unplaced.push_back(UnplacedGroup{i, UnplacedReason(scratch, r)});
      continue;
    }
    FP_ASSERT(!CheckGroup(scratch, r, *gpus).has_value());  // a policy returns only valid groups
    scratch.Allocate(Allocation{r.name, *gpus});
    plan.placed.push_back(PlacedGroup{i, std::move(*gpus)});
  }
  plan.after = MeasureFragmentation(scratch);
  return plan;
}

Status CommitPlacement(ClusterState& state, const PlacementPlan& plan) {
  ClusterState next = state;
  for (const PlacedGroup& p : plan.placed) {
    const GroupRequest& r = plan.requests.at(p.request);
    if (const auto problem = CheckGroup(next, r, p.gpus)) {
      return Status(StatusCode::kCheckFailed,
                    fmt::format("placement of '{}' no longer holds: {}; nothing was committed", r.name, *problem));
    }
    next.Allocate(Allocation{r.name, p.gpus});
  }
  state = std::move(next);
  return Status::Ok();
}

}  // namespace fleetplan
