// Cluster files, short forms, links, islands and removals (plan/cluster.h, cluster_file.h).
#include "fleetplan/plan/cluster.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/plan/cluster_file.h"

namespace fleetplan {
namespace {

const Catalog& Cat() {
  return Catalog::Builtin();
}

Cluster Parse(const std::string& text) {
  Expected<Cluster> c = ParseClusterText(text, "lab.yaml", Cat());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

std::string ErrorOf(const std::string& text) {
  Expected<Cluster> c = ParseClusterText(text, "lab.yaml", Cat());
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().message();
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> out;
  for (const auto& [name, gpu] : Cat().gpus()) out.push_back(name);
  return out;
}

const char* const kLab =
    "name: lab\n"
    "links:\n"
    "  fabric: {kind: infiniband, bandwidth: 50GB/s, latency: 2.7us}\n"
    "network:\n"
    "  inter_node_link: fabric\n"
    "  inter_rack_oversubscription: 2\n"
    "racks:\n"
    "  - name: r0\n"
    "    zone: z0\n"
    "    nodes:\n"
    "      - {name: a0, gpu: h100-sxm-80g, gpus: 8}\n"
    "      - {name: a1, gpu: h100-sxm-80g, gpus: 8}\n"
    "  - name: r1\n"
    "    zone: z1\n"
    "    nodes:\n"
    "      - {name: b0, gpu: h100-sxm-80g, gpus: 8, pcie_link: pcie4}\n"
    "      - {name: b1, gpu: l40s, gpus: 4, memory: 40GiB, dtypes: [bf16, fp16]}\n"
    "connections:\n"
    "  - {between: [a0, a1], link: nvlink4}\n";

TEST(ClusterFile, ReadsRacksNodesLinksAndZones) {
  const Cluster c = Parse(kLab);
  EXPECT_EQ(c.name(), "lab");
  ASSERT_EQ(c.nodes().size(), 4u);
  EXPECT_EQ(c.gpus(), 28);
  EXPECT_EQ(c.zones(), (std::vector<std::string>{"z0", "z1"}));
  EXPECT_EQ(c.nodes()[2].first_gpu, 16);
  EXPECT_EQ(c.nodes()[0].intra_link.name, "nvlink4");  // the GPU's default_intra_link
  EXPECT_EQ(c.nodes()[2].pcie_link.name, "pcie4");
  EXPECT_EQ(c.nodes()[0].pcie_link.name, "pcie5");  // default, listed as derived
  EXPECT_EQ(c.nodes()[3].gpu.memory, GiB(40));
  EXPECT_EQ(c.nodes()[3].gpu.dtypes, (std::vector<DType>{DType::kBf16, DType::kFp16}));
  EXPECT_EQ(c.derived(), (std::vector<std::string>{"pcie link pcie5: default for nodes that name none"}));
  // a0 and a1 share an NVLink island; b0 and b1 are islands of their own.
  EXPECT_EQ(c.island_of(), (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(c.LinkBetween(0, 1)->name, "nvlink4");
  EXPECT_EQ(c.LinkBetween(0, 2)->name, "fabric (inter-rack 2:1)");
  EXPECT_DOUBLE_EQ(c.LinkBetween(0, 2)->bandwidth, 25e9);
  EXPECT_EQ(c.LinkBetween(2, 3)->name, "fabric");  // same rack: the rack's link
  EXPECT_TRUE(c.IsSlowFor(*c.LinkBetween(2, 3), 2));
  EXPECT_FALSE(c.IsSlowFor(*c.LinkBetween(0, 1), 0));
  EXPECT_EQ(c.GpuName(c.RefOf(17)), "b0/1");
}

TEST(ClusterShortForm, NodesOfGpusWithStatedDefaults) {
  Expected<Cluster> c = ParseClusterShortForm("2x8xh100-sxm-80g", Cat());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gpus(), 16);
  EXPECT_EQ(c->NodeNames(), (std::vector<std::string>{"n0", "n1"}));
  EXPECT_EQ(c->LinkBetween(0, 1)->name, "ib-ndr-400");
  EXPECT_EQ(c->derived(),
            (std::vector<std::string>{"intra-node link nvlink4: the default_intra_link of h100-sxm-80g (short form)",
                                      "inter-node link ib-ndr-400: default (short form)",
                                      "pcie link pcie5: default (short form)"}));
  Expected<Cluster> racks = ParseClusterShortForm("2x2x4xmi300x", Cat());
  ASSERT_TRUE(racks.ok()) << racks.status().message();
  EXPECT_EQ(racks->racks().size(), 2u);
  EXPECT_EQ(racks->nodes()[3].name, "n3");
  EXPECT_EQ(racks->nodes()[3].rack, 1);
  EXPECT_EQ(racks->nodes()[0].intra_link.name, "xgmi");
}

TEST(ClusterShortForm, ErrorsSayWhatWasExpected) {
  EXPECT_TRUE(IsClusterShortForm("2x8xh100-sxm-80g"));
  EXPECT_FALSE(IsClusterShortForm("cluster.yaml"));
  EXPECT_FALSE(IsClusterShortForm("8xh100"));
  EXPECT_EQ(ParseClusterShortForm("2x0xh100-sxm-80g", Cat()).status().message(),
            "short form '2x0xh100-sxm-80g': expected GPUs per node between 1 and 1024, got '0'");
  EXPECT_EQ(ParseClusterShortForm("2x8xh100-sxm", Cat()).status().message(),
            "short form '2x8xh100-sxm': " + UnknownNameMessage("gpu", "h100-sxm", GpuNames()));
  EXPECT_EQ(LoadCluster("missing.yaml", Cat(), "--cluster").status().message(),
            "--cluster: cannot read 'missing.yaml': No such file or directory (a short form looks like "
            "2x8xh100-sxm-80g)");
}

TEST(ClusterFile, UnknownGpuIsLocatedWithSuggestion) {
  const std::string text =
      "racks:\n"
      "  - name: r0\n"
      "    nodes:\n"
      "      - {name: n0, gpu: h100-sxm-80, gpus: 8}\n";
  const std::string message = UnknownNameMessage("gpu", "h100-sxm-80", GpuNames());
  EXPECT_EQ(message.substr(0, message.find(" (valid:")), "unknown gpu 'h100-sxm-80'; did you mean 'h100-sxm-80g'?");
  EXPECT_EQ(ErrorOf(text), "lab.yaml:4:25: racks[0].nodes[0].gpu: " + message +
                               "\n    4 |       - {name: n0, gpu: h100-sxm-80, gpus: 8}\n"
                               "      |                         ^\n");
}

TEST(ClusterFile, ConnectionToMissingNodeIsLocated) {
  const std::string text =
      "racks:\n"
      "  - name: r0\n"
      "    nodes:\n"
      "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
      "      - {name: n1, gpu: h100-sxm-80g, gpus: 8}\n"
      "connections:\n"
      "  - {between: [n0, n9], link: nvlink4}\n";
  EXPECT_EQ(ErrorOf(text),
            "lab.yaml:7:20: connections[0].between[1]: unknown node 'n9'; did you mean 'n0'? (valid: n0, n1)\n"
            "    7 |   - {between: [n0, n9], link: nvlink4}\n"
            "      |                    ^\n");
}

TEST(ClusterFile, ZeroBandwidthIsLocated) {
  const std::string text =
      "links:\n"
      "  fabric: {kind: roce, bandwidth: 0GB/s, latency: 3us}\n"
      "racks:\n"
      "  - name: r0\n"
      "    nodes: [{name: n0, gpu: h100-sxm-80g, gpus: 8}]\n";
  EXPECT_EQ(ErrorOf(text),
            "lab.yaml:2:35: links.fabric.bandwidth: expected a bandwidth above 0 and at most 100TB/s, got '0GB/s'\n"
            "    2 |   fabric: {kind: roce, bandwidth: 0GB/s, latency: 3us}\n"
            "      |                                   ^\n");
}

TEST(ClusterFile, DuplicateNamesAreLocatedAtTheSecondUse) {
  const std::string text =
      "racks:\n"
      "  - name: r0\n"
      "    nodes:\n"
      "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
      "  - name: r1\n"
      "    nodes:\n"
      "      - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n";
  EXPECT_EQ(ErrorOf(text),
            "lab.yaml:7:16: racks[1].nodes[0].name: duplicate name 'n0': already names a node at line 4\n"
            "    7 |       - {name: n0, gpu: h100-sxm-80g, gpus: 8}\n"
            "      |                ^\n");
  // A node may not reuse a rack's name either.
  EXPECT_EQ(ErrorOf("racks:\n  - name: r0\n    nodes: [{name: r0, gpu: l4, gpus: 1}]\n"),
            "lab.yaml:3:20: racks[0].nodes[0].name: duplicate name 'r0': already names a rack at line 2\n"
            "    3 |     nodes: [{name: r0, gpu: l4, gpus: 1}]\n"
            "      |                    ^\n");
}

TEST(ClusterFile, UnknownKeysAndBadValuesAreErrors) {
  EXPECT_EQ(ErrorOf("racks:\n  - name: r0\n    nodes: [{name: n0, gpu: l4, gpu: 2}]\n").substr(0, 14),
            "lab.yaml:3:33:");
  const std::string unknown = ErrorOf("racks:\n  - name: r0\n    nodse: []\n");
  EXPECT_EQ(unknown.substr(0, unknown.find('\n')),
            "lab.yaml:3:5: racks[0]: unknown field 'nodse'; did you mean 'nodes'? (valid: name, zone, "
            "inter_node_link, nodes)");
  const std::string memory =
      ErrorOf("racks:\n  - name: r0\n    nodes: [{name: n0, gpu: l4, gpus: 1, memory: 99GiB}]\n");
  EXPECT_EQ(memory.substr(0, memory.find('\n')),
            "lab.yaml:3:50: racks[0].nodes[0].memory: expected a size above 0 and at most the 22.49 GiB of l4, "
            "got '99GiB'");
  const std::string dtype =
      ErrorOf("racks:\n  - name: r0\n    nodes: [{name: n0, gpu: a100-80g, gpus: 1, dtypes: [fp8]}]\n");
  EXPECT_EQ(dtype.substr(0, dtype.find('\n')),
            "lab.yaml:3:57: racks[0].nodes[0].dtypes[0]: a100-80g has no native fp8 (it has: bf16, fp16, fp32, "
            "int8, int4)");
}

TEST(ClusterRemoval, ParsesKindsAndListsTheValidOnes) {
  Expected<Removal> r = ParseRemoval("nvlink:a0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, RemovalKind::kNvlink);
  EXPECT_EQ(r->target, "a0");
  EXPECT_EQ(ParseRemoval("nvlnk:a0").status().message(),
            "unknown removal kind 'nvlnk'; did you mean 'nvlink'? (valid: gpu, node, rack, zone, nvlink, network, "
            "dtype)");
  EXPECT_EQ(ParseRemoval("gpu").status().message(),
            "expected KIND:TARGET (e.g. gpu:n0/3, node:n0, nvlink:n0, network:n0, dtype:fp8), got 'gpu'");
}

TEST(ClusterRemoval, EachKindChangesWhatItShould) {
  const Cluster c = Parse(kLab);
  Expected<Cluster> gpu = c.Without(Removal{RemovalKind::kGpu, "a0/3"});
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->HealthyGpus(0), 7);
  EXPECT_FALSE(gpu->GpuUp(GpuRef{0, 3}));
  EXPECT_EQ(c.Without(Removal{RemovalKind::kGpu, "a0/8"}).status().message(), "node 'a0' has GPUs 0..7, got '8'");
  Expected<Cluster> nvlink = c.Without(Removal{RemovalKind::kNvlink, "a0"});
  ASSERT_TRUE(nvlink.ok());
  EXPECT_EQ(nvlink->NodeLink(0).name, "pcie5");
  // The NVLink connection a0-a1 needs a0's NVLink: the island splits.
  EXPECT_EQ(nvlink->island_of(), (std::vector<int64_t>{0, 1, 2, 3}));
  Expected<Cluster> network = c.Without(Removal{RemovalKind::kNetwork, "b0"});
  ASSERT_TRUE(network.ok());
  EXPECT_FALSE(network->LinkBetween(1, 2).has_value());
  Expected<Cluster> zone = c.Without(Removal{RemovalKind::kZone, "z1"});
  ASSERT_TRUE(zone.ok());
  EXPECT_EQ(zone->healthy_gpus(), 16);
  Expected<Cluster> fp8 = c.Without(Removal{RemovalKind::kDtype, "fp8"});
  ASSERT_TRUE(fp8.ok());
  EXPECT_FALSE(fp8->nodes()[0].gpu.Supports(DType::kFp8));
  EXPECT_EQ(c.Without(Removal{RemovalKind::kNode, "a9"}).status().message(),
            "unknown node 'a9'; did you mean 'a0'? (valid: a0, a1, b0, b1)");
  EXPECT_EQ(c.Without(Removal{RemovalKind::kDtype, "fp4"}).status().message(),
            "no GPU of the cluster supports fp4 natively");
}

TEST(ClusterRemoval, ApplyRemovalsLocatesAtTheFlagAndListsWhatWasRemoved) {
  Expected<Cluster> c = ApplyRemovals(Parse(kLab), {"gpu:a0/1", "network:b1"}, "--without");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->derived().back(), "removed network:b1 (what-if)");
  EXPECT_EQ(ApplyRemovals(Parse(kLab), {"rack:r7"}, "--without").status().message(),
            "--without: rack:r7: unknown rack 'r7'; did you mean 'r0'? (valid: r0, r1)");
}

}  // namespace
}  // namespace fleetplan
