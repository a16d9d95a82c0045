// Placement inputs and outputs: the requests file (existing allocations and the groups to
// place), the `--sizes` shorthand, and the text and JSON of one or more plans.
//
// Requests file (YAML; unknown keys are errors; errors are located):
//   allocations:                 # optional: GPUs already held
//     - {name: svc-a, gpus: [n0/0, n0/1]}
//   requests:                    # placed in this order
//     - name: chat-1
//       gpus: 4
//       locality: node           # node | island | rack | any (default node)
//       memory: 60GiB            # per GPU (optional)
//       dtypes: [fp8]            # native formats each GPU needs (optional)
//       gpu: h100-sxm-80g        # GPU type (optional)
// Names are unique across allocations and requests. A GPU is written NODE/INDEX.
//
// JSON keys scripts rely on (stable): plans[].{policy, placed[].{name, gpus}, unplaced[].
// {name, reason}, fragmentation.{before, after}.{free_gpus, sizes[].{size, groups,
// stranded}}}.
// Thread model: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/plan/cluster.h"
#include "fleetplan/plan/placement.h"

namespace fleetplan {

struct PlacementInput {
  std::vector<Allocation> allocations;
  std::vector<GroupRequest> requests;
};

Expected<PlacementInput> ReadPlacementYaml(const YamlNode& root, const Cluster& cluster);
Expected<PlacementInput> ParsePlacementText(std::string_view text, std::string display_name, const Cluster& cluster);
Expected<PlacementInput> ReadPlacementFile(const std::string& path, const Cluster& cluster);

// "1,1,4,8": one node-local group per size, named "g1", "g2", ... Errors are located at
// `flag`: "--sizes: size 2: expected an integer between 1 and 1024, got 'x'".
Expected<std::vector<GroupRequest>> ParseGroupSizes(std::string_view text, std::string_view flag);

// `plans` were made on `state` (one per policy compared).
std::string PlacementReportText(const ClusterState& state, const std::vector<PlacementPlan>& plans);
Json PlacementReportJson(const ClusterState& state, const std::vector<PlacementPlan>& plans);

}  // namespace fleetplan
