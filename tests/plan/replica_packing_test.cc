// Complete replicas on a cluster: islands, slow links, isolation, domain loss
// (plan/replica_packing.h).
#include "fleetplan/plan/replica_packing.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/plan/cluster_file.h"

namespace fleetplan {
namespace {

Cluster Short(const std::string& form) {
  Expected<Cluster> c = ParseClusterShortForm(form, Catalog::Builtin());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

Cluster Without(const Cluster& c, std::vector<std::string> removals) {
  Expected<Cluster> out = ApplyRemovals(c, removals, "--without");
  EXPECT_TRUE(out.ok()) << out.status().message();
  return std::move(out).value();
}

std::vector<int64_t> AllNodes(const Cluster& c) {
  std::vector<int64_t> out(c.nodes().size());
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

ReplicaPacking Pack(const Cluster& c, int64_t tp, int64_t pp, bool allow = false) {
  return PackReplicas(c, AllNodes(c), ReplicaShape{tp, pp}, allow);
}

TEST(ReplicaPacking, WholeReplicasInsideNodesFirst) {
  const Cluster c = Short("2x8xh100-sxm-80g");
  const ReplicaPacking p = Pack(c, 4, 1);
  EXPECT_EQ(p.replicas, 4);
  EXPECT_EQ(p.stranded_gpus, 0);
  EXPECT_EQ(p.tp_link->name, "nvlink4");
  EXPECT_FALSE(p.pp_link.has_value());
  EXPECT_EQ(p.replica_gpus.front(), (std::vector<int64_t>{0, 1, 2, 3}));
  // tp 3: two groups per node, two GPUs per node stranded; no group spans nodes.
  const ReplicaPacking odd = Pack(c, 3, 1);
  EXPECT_EQ(odd.replicas, 4);
  EXPECT_EQ(odd.stranded_gpus, 4);
}

TEST(ReplicaPacking, PipelineStagesCrossTheNetworkOnlyWhenANodeIsTooSmall) {
  const Cluster c = Short("2x8xh100-sxm-80g");
  const ReplicaPacking inside = Pack(c, 4, 2);
  EXPECT_EQ(inside.replicas, 2);
  EXPECT_EQ(inside.pp_link->name, "nvlink4");
  const ReplicaPacking across = Pack(c, 8, 2);
  EXPECT_EQ(across.replicas, 1);
  EXPECT_EQ(across.pp_link->name, "ib-ndr-400");
  EXPECT_EQ(across.tp_link->name, "nvlink4");
  EXPECT_FALSE(across.tp_over_slow_link);
}

TEST(ReplicaPacking, TpNeverCrossesASlowLinkUnlessAllowed) {
  const Cluster c = Short("2x8xh100-sxm-80g");
  const ReplicaPacking refused = Pack(c, 16, 1);
  EXPECT_EQ(refused.replicas, 0);
  EXPECT_EQ(refused.no_fit_reason,
            "tp 16 needs 16 GPUs joined by links at least as fast as nvlink4 (450 GB/s); the largest such island "
            "has 8; pass --allow-cross-node-tp to let TP groups use slower links");
  const ReplicaPacking allowed = Pack(c, 16, 1, /*allow=*/true);
  EXPECT_EQ(allowed.replicas, 1);
  EXPECT_EQ(allowed.tp_link->name, "ib-ndr-400");
  EXPECT_TRUE(allowed.tp_over_slow_link);
}

TEST(ReplicaPacking, ALostNvlinkMakesTheNodesTpSlow) {
  const Cluster c = Without(Short("1x8xh100-sxm-80g"), {"nvlink:n0"});
  const ReplicaPacking refused = Pack(c, 2, 1);
  EXPECT_EQ(refused.replicas, 0);
  EXPECT_EQ(refused.no_fit_reason,
            "tp 2 needs 2 GPUs joined by links at least as fast as nvlink4 (450 GB/s); the largest such island "
            "has 0; islands with slow TP links: n0: pcie5 (64 GB/s, NVLink down); pass --allow-cross-node-tp to "
            "let TP groups use slower links");
  // Pipeline parallelism is not refused over PCIe: tp 1 × pp 8 places.
  const ReplicaPacking pp = Pack(c, 1, 8);
  EXPECT_EQ(pp.replicas, 1);
  EXPECT_EQ(pp.pp_link->name, "pcie5");
}

TEST(ReplicaPacking, ALostGpuLeavesASpecificReason) {
  const Cluster c = Without(Short("1x8xh100-sxm-80g"), {"gpu:n0/7"});
  const ReplicaPacking p = Pack(c, 8, 1);
  EXPECT_EQ(p.replicas, 0);
  EXPECT_EQ(p.no_fit_reason, "a replica needs tp 8 × pp 1 = 8 GPUs; the 1 node(s) of this type have 7 healthy");
  EXPECT_EQ(Pack(c, 4, 1).replicas, 1);
  EXPECT_EQ(Pack(c, 4, 1).stranded_gpus, 3);
}

TEST(ReplicaPacking, IsolatedNodesKeepTheirOwnReplicasOnly) {
  const Cluster c = Without(Short("3x4xh100-sxm-80g"), {"network:n1"});
  // tp 4 × pp 2 needs two nodes: n0 and n2 can pair over the network, n1 cannot.
  const ReplicaPacking p = Pack(c, 4, 2);
  EXPECT_EQ(p.replicas, 1);
  EXPECT_EQ(p.replica_gpus.front(), (std::vector<int64_t>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(p.stranded_gpus, 4);
}

TEST(ReplicaPacking, DomainLossCountsReplicasTouchingTheWorstDomain) {
  const Cluster c = Short("2x2x8xh100-sxm-80g");  // 2 racks of 2 nodes
  const ReplicaPacking p = Pack(c, 8, 2);         // each replica spans two nodes of one rack
  EXPECT_EQ(p.replicas, 2);
  EXPECT_EQ(p.after_loss.node, 1);
  EXPECT_EQ(p.after_loss.rack, 1);
  EXPECT_EQ(p.after_loss.zone, 0);  // one zone: losing it loses everything
}

}  // namespace
}  // namespace fleetplan
