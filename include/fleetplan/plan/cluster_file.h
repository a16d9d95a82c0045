// Reading a cluster: a YAML cluster file, or a short form for common shapes.
//
// Cluster file (every key is checked; unknown keys are errors; docs/layout.md has a full
// example):
//   name: lab-a                          # optional (default: the file name)
//   links:                               # optional link classes beside the catalog's
//     rail-ib: {kind: infiniband, bandwidth: 50GB/s, latency: 2.7us}
//   network:                             # optional
//     inter_node_link: ib-ndr-400        # default kDefaultInterNodeLink
//     inter_rack_oversubscription: 2     # >= 1 (2 = 2:1); default 1
//   racks:
//     - name: rack-a
//       zone: zone-1                     # optional (default kDefaultZone)
//       inter_node_link: roce-400        # optional override for this rack
//       nodes:
//         - name: a0
//           gpu: h100-sxm-80g            # a catalog GPU
//           gpus: 8
//           intra_link: nvlink4          # optional (default: the GPU's default_intra_link)
//           pcie_link: pcie5             # optional (default kDefaultPcieLink)
//           memory: 80GiB                # optional: narrows the GPU's memory
//           dtypes: [bf16, fp16]         # optional: narrows the GPU's native formats
//   connections:                         # optional node pairs with their own link
//     - {between: [a0, a1], link: nvlink4}
// Link names resolve against the file's `links` first, then the catalog. Names (zones,
// racks, nodes, link classes) are unique in their kind, and a node name is also unique
// against rack names. Errors are located: "cluster.yaml:7:16: racks[0].nodes[0].gpu:
// unknown gpu 'h100'; did you mean ...".
//
// Short form: "[R x] N x G x GPU" — R racks (default 1) of N nodes of G GPUs of catalog
// GPU `GPU`, e.g. "2x8xh100-sxm-80g" or "4x4x8xh200-141g". Nodes are n0, n1, ... (rack
// r0 holds n0..n(N-1)); the intra link is the GPU's default_intra_link and the network is
// kDefaultInterNodeLink; both defaults are listed in Cluster::derived().
// Thread model: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/plan/cluster.h"

namespace fleetplan {

// Most GPUs a node may declare and most nodes a cluster may hold: far beyond any real
// system (a GB200 NVL72 rack is 72 GPUs), and small enough that a typo (80000 for 8) is
// caught rather than allocated.
inline constexpr int64_t kMaxGpusPerNode = 1024;
inline constexpr int64_t kMaxClusterGpus = int64_t{1} << 20;

Expected<Cluster> ReadClusterYaml(const YamlNode& root, const Catalog& catalog, const std::string& default_name);
Expected<Cluster> ParseClusterText(std::string_view text, std::string display_name, const Catalog& catalog);
Expected<Cluster> ReadClusterFile(const std::string& path, const Catalog& catalog);

// True when `text` has the shape of a short form (digits 'x' digits 'x' name, optionally
// one more leading count); it may still name an unknown GPU.
bool IsClusterShortForm(std::string_view text);
// Errors are unlocated ("short form '2x0xh100-sxm-80g': expected GPUs per node >= 1, got
// 0"); the caller adds the flag.
Expected<Cluster> ParseClusterShortForm(std::string_view text, const Catalog& catalog);

// A file when a file of that name exists or the text is not a short form; else the short
// form. Errors of the short form are located at `flag` (e.g. "--cluster").
Expected<Cluster> LoadCluster(const std::string& file_or_short_form, const Catalog& catalog, std::string_view flag);

// Applies removals ("gpu:n0/3", "nvlink:n0", ... see ParseRemoval) in order and lists each
// in the cluster's derived lines. Errors are located at `flag` (e.g. "--without"); the
// same removal given twice is a usage error (StatusCode::kUsage) naming it.
Expected<Cluster> ApplyRemovals(Cluster cluster, const std::vector<std::string>& removals, std::string_view flag);

}  // namespace fleetplan
