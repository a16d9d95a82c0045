// Placement of GPU groups: policies, the shared policy contract, commit, fragmentation
// (plan/placement.h, placement_report.h).
#include "fleetplan/plan/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/placement_report.h"

namespace fleetplan {
namespace {

Cluster Short(const std::string& form) {
  Expected<Cluster> c = ParseClusterShortForm(form, Catalog::Builtin());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

GroupRequest Group(std::string name, int64_t gpus, Locality locality = Locality::kNode) {
  GroupRequest r;
  r.name = std::move(name);
  r.gpus = gpus;
  r.locality = locality;
  return r;
}

ClusterState WithHeld(const Cluster& c, std::vector<Allocation> allocations) {
  Expected<ClusterState> s = ClusterState::WithAllocations(c, std::move(allocations));
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

PlacementPlan PlanWith(const std::string& policy, const ClusterState& s, const std::vector<GroupRequest>& requests) {
  Expected<std::unique_ptr<PlacementPolicy>> p = MakePlacementPolicy(policy);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return PlanPlacement(s, requests, **p);
}

const FragmentationRow& Row(const Fragmentation& f, int64_t size) {
  return *std::find_if(f.rows.begin(), f.rows.end(), [&](const FragmentationRow& r) { return r.size == size; });
}

// Existing allocation on n0/0-1; then two single GPUs and a 4-GPU replica.
std::vector<GroupRequest> SinglesThenFour() {
  return {Group("one-a", 1), Group("one-b", 1), Group("four", 4)};
}

TEST(Placement, NaivePolicyStrandsEnoughGpusButNoFourGpuGroup) {
  const ClusterState s = WithHeld(Short("2x4xh100-sxm-80g"), {Allocation{"svc", {0, 1}}});
  const PlacementPlan naive = PlanWith("most-free", s, SinglesThenFour());
  ASSERT_EQ(naive.placed.size(), 2u);
  EXPECT_EQ(naive.placed[0].gpus, (std::vector<int64_t>{4}));  // the emptier node n1
  EXPECT_EQ(naive.placed[1].gpus, (std::vector<int64_t>{5}));
  ASSERT_EQ(naive.unplaced.size(), 1u);
  EXPECT_EQ(naive.unplaced[0].request, 2u);
  EXPECT_EQ(naive.unplaced[0].reason,
            "needs 4 eligible free GPU(s) in one node; the largest such group is 2 on n0, 4 eligible free in all");
  // Enough GPUs in total, none in one group: all four stranded for a 4-GPU replica.
  EXPECT_EQ(naive.after.free_gpus, 4);
  EXPECT_EQ(Row(naive.after, 4).groups, 0);
  EXPECT_EQ(Row(naive.after, 4).stranded, 4);
}

TEST(Placement, TightPolicyKeepsAValidGroupForTheLaterRequest) {
  const ClusterState s = WithHeld(Short("2x4xh100-sxm-80g"), {Allocation{"svc", {0, 1}}});
  const PlacementPlan tight = PlanWith("tight", s, SinglesThenFour());
  ASSERT_EQ(tight.placed.size(), 3u);
  EXPECT_TRUE(tight.unplaced.empty());
  EXPECT_EQ(tight.placed[0].gpus, (std::vector<int64_t>{2}));  // fills the fragment on n0
  EXPECT_EQ(tight.placed[1].gpus, (std::vector<int64_t>{3}));
  EXPECT_EQ(tight.placed[2].gpus, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(tight.before.free_gpus, 6);
  EXPECT_EQ(Row(tight.before, 4).groups, 1);
  EXPECT_EQ(Row(tight.before, 4).stranded, 2);
  EXPECT_EQ(tight.after.free_gpus, 0);
}

TEST(Placement, PlanningIsPureAndCommitIsAtomic) {
  ClusterState s = WithHeld(Short("2x4xh100-sxm-80g"), {});
  const PlacementPlan plan = PlanWith("tight", s, {Group("a", 2), Group("b", 4)});
  EXPECT_EQ(s.version(), 0);  // planning changed nothing
  EXPECT_TRUE(s.allocations().empty());
  // Someone takes n1/0 between planning and committing: the 4-GPU group no longer holds.
  ClusterState moved = s;
  moved.Allocate(Allocation{"intruder", {4}});
  const Status conflict = CommitPlacement(moved, plan);
  EXPECT_EQ(conflict.code(), StatusCode::kCheckFailed);
  EXPECT_EQ(conflict.message(),
            "placement of 'b' no longer holds: GPU n1/0 is held by 'intruder'; nothing was committed");
  EXPECT_EQ(moved.allocations().size(), 1u);  // not even 'a' was committed
  EXPECT_TRUE(moved.Free(0));
  // Against the unchanged state it commits whole.
  ASSERT_TRUE(CommitPlacement(s, plan).ok());
  EXPECT_EQ(s.allocations().size(), 2u);
  EXPECT_EQ(s.Owner(5), "b");
  EXPECT_EQ(s.version(), 2);
  // Committing the same plan twice fails: its GPUs are held now.
  EXPECT_EQ(CommitPlacement(s, plan).message(),
            "placement of 'a' no longer holds: GPU n0/0 is held by 'a'; nothing was committed");
}

TEST(Placement, MemoryCapabilityAndTypeAreHonoured) {
  const char* text =
      "racks:\n"
      "  - name: r0\n"
      "    nodes:\n"
      "      - {name: small, gpu: a100-40g, gpus: 4}\n"
      "      - {name: big, gpu: h100-sxm-80g, gpus: 4}\n";
  Expected<Cluster> c = ParseClusterText(text, "c.yaml", Catalog::Builtin());
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ClusterState s(*c);
  GroupRequest fp8 = Group("fp8", 2);
  fp8.dtypes = {DType::kFp8};
  GroupRequest roomy = Group("roomy", 1);
  roomy.memory_per_gpu = GiB(60);
  GroupRequest typed = Group("typed", 4);
  typed.gpu_type = "a100-40g";
  GroupRequest impossible = Group("impossible", 2);
  impossible.dtypes = {DType::kFp8};
  impossible.gpu_type = "a100-40g";
  for (const std::string& policy : PlacementPolicyNames()) {
    const PlacementPlan plan = PlanWith(policy, s, {fp8, roomy, typed, impossible});
    ASSERT_EQ(plan.placed.size(), 3u) << policy;
    EXPECT_EQ(plan.placed[0].gpus.front() / 4, 1) << policy;  // fp8: the H100 node
    EXPECT_EQ(plan.placed[1].gpus.front() / 4, 1) << policy;  // 60 GiB: the H100 node
    EXPECT_EQ(plan.placed[2].gpus, (std::vector<int64_t>{0, 1, 2, 3})) << policy;
    ASSERT_EQ(plan.unplaced.size(), 1u);
    EXPECT_EQ(plan.unplaced[0].reason,
              "needs 2 eligible free GPU(s) (a100-40g, native fp8) in one node; the largest such group is 0, 0 "
              "eligible free in all");
  }
}

TEST(Placement, LocalityRackAndIslandSpanNodes) {
  const Cluster c = Short("2x2x4xh100-sxm-80g");  // racks r0 {n0, n1}, r1 {n2, n3}
  const ClusterState s = WithHeld(c, {Allocation{"x", {0, 1, 2}}, Allocation{"y", {8}}});
  const PlacementPlan plan = PlanWith("tight", s, {Group("rack6", 6, Locality::kRack), Group("node4", 4)});
  ASSERT_EQ(plan.placed.size(), 2u);
  // r0 has 1 + 4 = 5 free, r1 has 3 + 4 = 7: only r1 holds six; its fuller node first.
  EXPECT_EQ(plan.placed[0].gpus, (std::vector<int64_t>{9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(plan.placed[1].gpus, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(CheckGroup(s, Group("bad", 2, Locality::kNode), {3, 4}).value(),
            "GPUs on nodes n0, n1 are not in one node");
  EXPECT_EQ(CheckGroup(s, Group("bad", 2, Locality::kIsland), {3, 4}).value(),
            "GPUs on nodes n0, n1 are not in one island");
  EXPECT_FALSE(CheckGroup(s, Group("ok", 2, Locality::kRack), {3, 4}).has_value());
}

TEST(Placement, FactoryListsTheValidNames) {
  EXPECT_EQ(PlacementPolicyNames(), (std::vector<std::string>{"most-free", "tight"}));
  EXPECT_EQ(MakePlacementPolicy("tigth").status().message(),
            "unknown placement policy 'tigth'; did you mean 'tight'? (valid: most-free, tight)");
  EXPECT_EQ(ParseLocality("nod").status().message(),
            "unknown locality 'nod'; did you mean 'node'? (valid: node, island, rack, any)");
}

// The contract every policy passes: every group it places satisfies memory, capability,
// type and locality on the state it was placed on, and it leaves a request unplaced only
// when no locality domain holds enough eligible free GPUs. Random request sequences,
// fixed seed, replayed against CheckGroup and a brute-force count.
TEST(PlacementContract, EveryPolicyPlacesOnlyValidGroupsAndOnlyFailsWhenNothingFits) {
  const char* text =
      "racks:\n"
      "  - name: r0\n"
      "    nodes:\n"
      "      - {name: h0, gpu: h100-sxm-80g, gpus: 8}\n"
      "      - {name: h1, gpu: h100-sxm-80g, gpus: 8}\n"
      "  - name: r1\n"
      "    nodes:\n"
      "      - {name: a0, gpu: a100-40g, gpus: 8}\n"
      "      - {name: l0, gpu: l40s, gpus: 4}\n";
  Expected<Cluster> c = ParseClusterText(text, "c.yaml", Catalog::Builtin());
  ASSERT_TRUE(c.ok()) << c.status().message();
  const int64_t sizes[] = {1, 2, 4, 8};
  const std::vector<std::string> types = {"", "h100-sxm-80g", "a100-40g", "l40s"};
  for (const std::string& name : PlacementPolicyNames()) {
    RngStream rng(20240601, "placement-contract/" + name);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<GroupRequest> requests;
      const auto count = static_cast<int>(3 + rng.NextBelow(8));
      for (int i = 0; i < count; ++i) {
        GroupRequest r =
            Group("r" + std::to_string(i), sizes[rng.NextBelow(4)], static_cast<Locality>(rng.NextBelow(4)));
        if (rng.NextBelow(4) == 0) r.dtypes = {DType::kFp8};
        if (rng.NextBelow(4) == 0) r.memory_per_gpu = GiB(45);
        r.gpu_type = types[rng.NextBelow(types.size())];
        requests.push_back(std::move(r));
      }
      const ClusterState start(*c);
      const PlacementPlan plan = PlanWith(name, start, requests);
      ClusterState replay = start;
      size_t next_placed = 0;
      for (size_t i = 0; i < requests.size(); ++i) {
        const GroupRequest& r = requests[i];
        if (next_placed < plan.placed.size() && plan.placed[next_placed].request == i) {
          const std::vector<int64_t>& gpus = plan.placed[next_placed++].gpus;
          const auto problem = CheckGroup(replay, r, gpus);
          EXPECT_FALSE(problem.has_value()) << name << " trial " << trial << ": " << *problem;
          replay.Allocate(Allocation{r.name, gpus});
          continue;
        }
        // Unplaced: brute force over the domains of its locality.
        std::map<std::string, int64_t> eligible;  // domain key -> eligible free GPUs
        for (int64_t n = 0; n < static_cast<int64_t>(c->nodes().size()); ++n) {
          const ClusterNode& node = c->nodes()[static_cast<size_t>(n)];
          const bool meets =
              (r.gpu_type.empty() || node.gpu.name == r.gpu_type) && node.gpu.memory >= r.memory_per_gpu &&
              std::all_of(r.dtypes.begin(), r.dtypes.end(), [&](DType t) { return node.gpu.Supports(t); });
          if (!meets) continue;
          const std::string key = r.locality == Locality::kNode ? node.name
                                  : r.locality == Locality::kIsland
                                      ? std::to_string(c->island_of()[static_cast<size_t>(n)])
                                  : r.locality == Locality::kRack ? std::to_string(node.rack)
                                                                  : "all";
          eligible[key] += replay.FreeGpus(n);
        }
        for (const auto& [key, free] : eligible) {
          EXPECT_LT(free, r.gpus) << name << " trial " << trial << " left " << r.name << " unplaced with " << free
                                  << " eligible GPUs in " << key;
        }
      }
      EXPECT_EQ(next_placed, plan.placed.size());
    }
  }
}

TEST(PlacementFile, ReadsAllocationsAndRequestsWithLocatedErrors) {
  const Cluster c = Short("2x4xh100-sxm-80g");
  Expected<PlacementInput> in = ParsePlacementText(
      "allocations:\n"
      "  - {name: svc, gpus: [n0/0, n0/1]}\n"
      "requests:\n"
      "  - {name: chat, gpus: 4, locality: rack, memory: 60GiB, dtypes: [fp8], gpu: h100-sxm-80g}\n",
      "p.yaml", c);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->allocations[0].gpus, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(in->requests[0].locality, Locality::kRack);
  EXPECT_EQ(in->requests[0].memory_per_gpu, GiB(60));
  EXPECT_EQ(ParsePlacementText("requests:\n  - {name: a, gpus: [n0/9]}\n", "p.yaml", c).status().message(),
            "p.yaml:2:21: requests[0].gpus: expected an integer >= 1, got a sequence\n"
            "    2 |   - {name: a, gpus: [n0/9]}\n"
            "      |                     ^\n");
  EXPECT_EQ(
      ParsePlacementText("allocations:\n  - {name: a, gpus: [n7/1]}\nrequests: []\n", "p.yaml", c).status().message(),
      "p.yaml:2:22: allocations[0].gpus[0]: unknown node 'n7'; did you mean 'n0'? (valid: n0, n1)\n"
      "    2 |   - {name: a, gpus: [n7/1]}\n"
      "      |                      ^\n");
  EXPECT_EQ(ParsePlacementText("requests:\n  - {name: a, gpus: 1}\n  - {name: a, gpus: 2}\n", "p.yaml", c)
                .status()
                .message()
                .substr(0, 78),
            "p.yaml:3:12: requests[1].name: duplicate name 'a': already used at line 2\n    ");
  EXPECT_EQ(ParseGroupSizes("1,2,x", "--sizes").status().message(),
            "--sizes: size 3: expected an integer between 1 and 1024, got 'x'");
}

}  // namespace
}  // namespace fleetplan
