// Placement: GPU groups (replicas of 1, 2, 4, 8 GPUs with locality needs) onto a cluster
// that already has allocations.
//
// Two steps, kept apart:
//   PlanPlacement   a pure function: places the requests in order on a copy of the state
//                   with one policy; the state is untouched.
//   CommitPlacement the atomic step: re-checks every assignment of the plan against the
//                   state as it is now (GPUs healthy and still free, each group still meeting
//                   its memory, format and locality needs) and applies all of them, or none
//                   and says which assignment no longer holds.
// Every group a policy returns passes CheckGroup; PlanPlacement asserts it.
//
// Policies (one factory, MakePlacementPolicy; the error lists the valid names):
//   tight      topology-aware tight fit: the locality domain (node, island, rack) with the
//              fewest eligible free GPUs that still hold the group, and inside it the
//              nodes with the fewest free GPUs first — small groups fill fragments and
//              leave whole nodes for large ones;
//   most-free  naive "most free memory first": the domain, then the nodes, with the most
//              free GPU memory — it spreads small groups across nodes, which is what
//              strands capacity.
// Fragmentation: free healthy GPUs that can no longer form a one-node group of each size.
// Thread model: ClusterState is a single-threaded value; policies are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/plan/cluster.h"

namespace fleetplan {

// Where the GPUs of one group must sit. Values reach JSON by name; never renumber.
enum class Locality : int { kNode = 0, kIsland = 1, kRack = 2, kAny = 3 };
std::string_view LocalityName(Locality l);  // "node", "island", "rack", "any"
const std::vector<std::string>& LocalityNames();
Expected<Locality> ParseLocality(std::string_view name);  // unknown: did-you-mean + list

struct GroupRequest {
  std::string name;
  int64_t gpus = 1;
  Locality locality = Locality::kNode;
  Bytes memory_per_gpu;       // 0 = no need stated
  std::vector<DType> dtypes;  // formats each GPU must run natively
  std::string gpu_type;       // catalog GPU name; empty = any
};

struct Allocation {
  std::string name;
  std::vector<int64_t> gpus;  // GPU ids, ascending
};

class ClusterState {
 public:
  explicit ClusterState(Cluster cluster);
  // Errors: a GPU that is down, or held twice ("allocation 'b': GPU n0/1 is already held
  // by 'a'").
  static Expected<ClusterState> WithAllocations(Cluster cluster, std::vector<Allocation> allocations);

  const Cluster& cluster() const { return cluster_; }
  const std::vector<Allocation>& allocations() const { return allocations_; }
  // Increases with every change; a plan remembers the version it was made against.
  int64_t version() const { return version_; }
  // Healthy and held by nobody.
  bool Free(int64_t gpu) const;
  // The allocation holding `gpu`, or "" when free.
  const std::string& Owner(int64_t gpu) const { return owner_.at(static_cast<size_t>(gpu)); }
  int64_t FreeGpus(int64_t node) const;
  // Adds an allocation. REQUIRES: every GPU Free.
  void Allocate(Allocation allocation);

 private:
  Cluster cluster_;
  std::vector<Allocation> allocations_;
  std::vector<std::string> owner_;  // per GPU id
  int64_t version_ = 0;
};

// Why `gpus` cannot hold `request` on `state` (a GPU not free, the wrong count, a missing
// format, too little memory, another GPU type, or GPUs outside one locality domain), or
// nullopt when it can.
std::optional<std::string> CheckGroup(const ClusterState& state, const GroupRequest& request,
                                      const std::vector<int64_t>& gpus);

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string name() const = 0;
  // GPUs (ascending ids) for `request` among the free eligible GPUs, or nullopt when no
  // locality domain holds it.
  virtual std::optional<std::vector<int64_t>> Choose(const ClusterState& state, const GroupRequest& request) const = 0;
};

inline constexpr std::string_view kDefaultPlacementPolicy = "tight";
const std::vector<std::string>& PlacementPolicyNames();  // sorted
Expected<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name);

struct PlacedGroup {
  size_t request = 0;         // index into PlacementPlan::requests
  std::vector<int64_t> gpus;  // ascending
};

struct UnplacedGroup {
  size_t request = 0;
  std::string reason;  // the largest eligible group there was, and where
};

// Free GPUs by the one-node groups they can still form.
struct FragmentationRow {
  int64_t size = 0;
  int64_t groups = 0;    // Σ nodes ⌊free / size⌋
  int64_t stranded = 0;  // free GPUs in no such group
};
struct Fragmentation {
  int64_t free_gpus = 0;
  std::vector<FragmentationRow> rows;  // sizes kFragmentationSizes
};
// The group sizes replicas come in (1, 2, 4, 8 GPUs: the tp × pp products of single-node
// layouts).
inline constexpr int64_t kFragmentationSizes[] = {1, 2, 4, 8};
Fragmentation MeasureFragmentation(const ClusterState& state);

struct PlacementPlan {
  std::string policy;
  int64_t base_version = 0;  // state version the plan was made against
  std::vector<GroupRequest> requests;
  std::vector<PlacedGroup> placed;      // request order
  std::vector<UnplacedGroup> unplaced;  // request order
  Fragmentation before;
  Fragmentation after;  // had every placed group been committed
};

PlacementPlan PlanPlacement(const ClusterState& state, const std::vector<GroupRequest>& requests,
                            const PlacementPolicy& policy);

// Errors: kCheckFailed "placement of 'r1' no longer holds: GPU n0/2 is held by 'x'"; the
// state is unchanged. On success every placed group is allocated under its request name.
Status CommitPlacement(ClusterState& state, const PlacementPlan& plan);

}  // namespace fleetplan
