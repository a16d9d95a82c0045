#include "fleetplan/plan/replica_packing.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace fleetplan {
namespace {

// A TP group: its GPUs, the nodes they sit on, and the slowest link between them.
struct Group {
  std::vector<int64_t> gpus;
  std::vector<int64_t> nodes;  // ascending, unique
  std::optional<LinkSpec> link;
  int64_t island = -1;  // -1: pooled across islands
};

struct Island {
  int64_t id = 0;
  std::vector<int64_t> nodes;
  std::vector<int64_t> gpus;  // healthy, node order then index
  LinkSpec link;              // slowest link inside the island
  bool slow = false;
  bool networked = true;  // every node's network is up
};

void KeepSlower(std::optional<LinkSpec>& slowest, const LinkSpec& l) {
  if (!slowest || l.bandwidth < slowest->bandwidth) slowest = l;
}

class Packer {
 public:
  Packer(const Cluster& c, const std::vector<int64_t>& nodes, ReplicaShape shape, bool allow)
      : c_(c), nodes_(nodes), shape_(shape), allow_(allow) {}

  ReplicaPacking Run() {
    BuildIslands();
    std::vector<std::vector<Group>> island_groups;
    std::vector<int64_t> leftovers;  // GPUs of networked islands not in an island group
    for (const Island& is : islands_) {
      island_groups.push_back(CutIsland(is, leftovers));
    }
    std::vector<Group> pooled_groups;
    if (allow_) pooled_groups = CutPool(leftovers);
    std::vector<Group> spare;  // groups not used by in-island replicas, on networked islands
    for (size_t i = 0; i < islands_.size(); ++i) {
      std::vector<Group>& groups = island_groups[i];
      const size_t whole = groups.size() / static_cast<size_t>(shape_.pp) * static_cast<size_t>(shape_.pp);
      for (size_t g = 0; g < whole; g += static_cast<size_t>(shape_.pp)) {
        Place(std::vector<Group>(groups.begin() + static_cast<std::ptrdiff_t>(g),
                                 groups.begin() + static_cast<std::ptrdiff_t>(g) + shape_.pp));
      }
      groups_formed_ += static_cast<int64_t>(groups.size());
      if (!islands_[i].networked) continue;
      spare.insert(spare.end(), groups.begin() + static_cast<std::ptrdiff_t>(whole), groups.end());
    }
    groups_formed_ += static_cast<int64_t>(pooled_groups.size());
    spare.insert(spare.end(), pooled_groups.begin(), pooled_groups.end());
    const size_t whole = spare.size() / static_cast<size_t>(shape_.pp) * static_cast<size_t>(shape_.pp);
    for (size_t g = 0; g < whole; g += static_cast<size_t>(shape_.pp)) {
      Place(std::vector<Group>(spare.begin() + static_cast<std::ptrdiff_t>(g),
                               spare.begin() + static_cast<std::ptrdiff_t>(g) + shape_.pp));
    }
    Finish();
    return std::move(out_);
  }

 private:
  // The link between two nodes as a group or a pipeline uses it.
  std::optional<LinkSpec> PairLink(int64_t a, int64_t b) const {
    if (a == b) return c_.NodeLink(a);
    const int64_t ia = c_.island_of()[static_cast<size_t>(a)];
    if (ia == c_.island_of()[static_cast<size_t>(b)]) return IslandById(ia).link;
    return c_.LinkBetween(a, b);
  }

  const Island& IslandById(int64_t id) const {
    for (const Island& is : islands_) {
      if (is.id == id) return is;
    }
    FP_ASSERT(false);
    return islands_.front();
  }

  void BuildIslands() {
    std::map<int64_t, size_t> index;
    for (const int64_t n : nodes_) {
      const int64_t id = c_.island_of()[static_cast<size_t>(n)];
      auto [it, inserted] = index.emplace(id, islands_.size());
      if (inserted) islands_.push_back(Island{id, {}, {}, c_.NodeLink(n), false, true});
      Island& is = islands_[it->second];
      is.nodes.push_back(n);
      const ClusterNode& node = c_.nodes()[static_cast<size_t>(n)];
      for (int64_t g = 0; g < node.gpu_count; ++g) {
        if (node.gpu_up[static_cast<size_t>(g)]) is.gpus.push_back(node.first_gpu + g);
      }
      is.networked = is.networked && node.network_up;
      healthy_ += c_.HealthyGpus(n);
    }
    for (Island& is : islands_) {
      std::optional<LinkSpec> slowest;
      for (const int64_t n : is.nodes) KeepSlower(slowest, c_.NodeLink(n));
      for (const NodeConnection& k : c_.connections()) {
        const bool inside = std::count(is.nodes.begin(), is.nodes.end(), k.a) > 0 &&
                            std::count(is.nodes.begin(), is.nodes.end(), k.b) > 0;
        if (inside) KeepSlower(slowest, k.link);
      }
      is.link = *slowest;
      is.slow = c_.IsSlowFor(is.link, is.nodes.front());
    }
  }

  Group MakeGroup(std::vector<int64_t> gpus, int64_t island) const {
    Group g;
    g.island = island;
    std::set<int64_t> nodes;
    for (const int64_t id : gpus) nodes.insert(c_.RefOf(id).node);
    g.nodes.assign(nodes.begin(), nodes.end());
    g.gpus = std::move(gpus);
    if (shape_.tp > 1) {
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        for (size_t j = i; j < g.nodes.size(); ++j) {
          if (const auto l = PairLink(g.nodes[i], g.nodes[j])) KeepSlower(g.link, *l);
        }
      }
    }
    return g;
  }

  std::vector<Group> CutIsland(const Island& is, std::vector<int64_t>& leftovers) {
    std::vector<Group> groups;
    const auto tp = static_cast<size_t>(shape_.tp);
    size_t used = 0;
    if (!is.slow || allow_ || shape_.tp == 1) {
      largest_usable_ = std::max(largest_usable_, static_cast<int64_t>(is.gpus.size()));
      for (; used + tp <= is.gpus.size(); used += tp) {
        groups.push_back(MakeGroup({is.gpus.begin() + static_cast<std::ptrdiff_t>(used),
                                    is.gpus.begin() + static_cast<std::ptrdiff_t>(used + tp)},
                                   is.id));
      }
    } else {
      slow_islands_.push_back(&is);
    }
    if (is.networked)
      leftovers.insert(leftovers.end(), is.gpus.begin() + static_cast<std::ptrdiff_t>(used), is.gpus.end());
    return groups;
  }

  std::vector<Group> CutPool(const std::vector<int64_t>& gpus) const {
    std::vector<Group> groups;
    const auto tp = static_cast<size_t>(shape_.tp);
    for (size_t used = 0; used + tp <= gpus.size(); used += tp) {
      groups.push_back(MakeGroup(
          {gpus.begin() + static_cast<std::ptrdiff_t>(used), gpus.begin() + static_cast<std::ptrdiff_t>(used + tp)},
          -1));
    }
    return groups;
  }

  void Place(const std::vector<Group>& stages) {
    std::vector<int64_t> gpus;
    std::set<int64_t> nodes;
    for (size_t s = 0; s < stages.size(); ++s) {
      const Group& g = stages[s];
      gpus.insert(gpus.end(), g.gpus.begin(), g.gpus.end());
      nodes.insert(g.nodes.begin(), g.nodes.end());
      if (g.link) {
        KeepSlower(out_.tp_link, *g.link);
        if (c_.IsSlowFor(*g.link, g.nodes.front())) out_.tp_over_slow_link = true;
      }
      if (s == 0) continue;
      for (const int64_t a : stages[s - 1].nodes) {
        for (const int64_t b : g.nodes) {
          const auto l = PairLink(a, b);
          FP_ASSERT(l.has_value());  // pooled stages sit on networked nodes
          KeepSlower(out_.pp_link, *l);
        }
      }
    }
    out_.replica_gpus.push_back(std::move(gpus));
    replica_nodes_.emplace_back(nodes.begin(), nodes.end());
  }

  // Replicas left after the worst loss of one domain, given each replica's domains.
  int64_t Survivors(const std::vector<std::set<int64_t>>& touched) const {
    std::map<int64_t, int64_t> per_domain;
    for (const std::set<int64_t>& domains : touched) {
      for (const int64_t d : domains) ++per_domain[d];
    }
    int64_t worst = 0;
    for (const auto& [d, count] : per_domain) worst = std::max(worst, count);
    return out_.replicas - worst;
  }

  void Finish() {
    out_.replicas = static_cast<int64_t>(out_.replica_gpus.size());
    out_.stranded_gpus = healthy_ - out_.replicas * shape_.tp * shape_.pp;
    std::vector<std::set<int64_t>> nodes, racks, zones;
    for (const std::vector<int64_t>& rn : replica_nodes_) {
      std::set<int64_t> n, r, z;
      for (const int64_t node : rn) {
        n.insert(node);
        const int64_t rack = c_.nodes()[static_cast<size_t>(node)].rack;
        r.insert(rack);
        const std::string& zone = c_.racks()[static_cast<size_t>(rack)].zone;
        z.insert(std::find(c_.zones().begin(), c_.zones().end(), zone) - c_.zones().begin());
      }
      nodes.push_back(std::move(n));
      racks.push_back(std::move(r));
      zones.push_back(std::move(z));
    }
    out_.after_loss = DomainLoss{Survivors(nodes), Survivors(racks), Survivors(zones)};
    if (out_.replicas == 0) out_.no_fit_reason = NoFitReason();
  }

  std::string SlowNote() const {
    std::vector<std::string> parts;
    for (const Island* is : slow_islands_) {
      const ClusterNode& n = c_.nodes()[static_cast<size_t>(is->nodes.front())];
      parts.push_back(fmt::format("{}: {} ({}{})", n.name, is->link.name, FormatBandwidth(is->link.bandwidth),
                                  n.intra_link_up ? "" : ", NVLink down"));
    }
    if (parts.empty()) return "";
    return fmt::format("; islands with slow TP links: {}", fmt::join(parts, ", "));
  }

  std::string NoFitReason() const {
    const LinkSpec& ref = c_.nodes()[static_cast<size_t>(nodes_.front())].reference_link;
    const int64_t gpus_needed = shape_.tp * shape_.pp;
    if (healthy_ < gpus_needed) {
      return fmt::format("a replica needs tp {} × pp {} = {} GPUs; the {} node(s) of this type have {} healthy",
                         shape_.tp, shape_.pp, gpus_needed, nodes_.size(), healthy_);
    }
    if (groups_formed_ == 0 && !allow_) {
      return fmt::format(
          "tp {} needs {} GPUs joined by links at least as fast as {} ({}); the largest such "
          "island has {}{}; pass --allow-cross-node-tp to let TP groups use slower links",
          shape_.tp, shape_.tp, ref.name, FormatBandwidth(ref.bandwidth), largest_usable_, SlowNote());
    }
    return fmt::format("pp {} needs {} TP groups of {} GPUs that can reach each other; the cluster forms {}{}",
                       shape_.pp, shape_.pp, shape_.tp, groups_formed_,
                       allow_ ? "" : " (TP groups stay inside islands)");
  }

  const Cluster& c_;
  const std::vector<int64_t>& nodes_;
  ReplicaShape shape_;
  bool allow_;
  std::vector<Island> islands_;
  std::vector<const Island*> slow_islands_;
  std::vector<std::vector<int64_t>> replica_nodes_;
  int64_t healthy_ = 0;
  int64_t groups_formed_ = 0;
  int64_t largest_usable_ = 0;
  ReplicaPacking out_;
};

}  // namespace

ReplicaPacking PackReplicas(const Cluster& cluster, const std::vector<int64_t>& nodes, ReplicaShape shape,
                            bool allow_slow_tp) {
  FP_ASSERT(shape.tp >= 1 && shape.pp >= 1);
  ReplicaPacking empty;
  if (nodes.empty()) {
    empty.no_fit_reason = "no node of this GPU type";
    return empty;
  }
  return Packer(cluster, nodes, shape, allow_slow_tp).Run();
}

std::string FormatBandwidth(double bytes_per_s) {
  constexpr double kGBps = 1e9;
  const double gbps = bytes_per_s / kGBps;
  if (gbps == static_cast<double>(static_cast<int64_t>(gbps)))
    return fmt::format("{} GB/s", static_cast<int64_t>(gbps));
  return fmt::format("{:.2f} GB/s", gbps);
}

}  // namespace fleetplan
