// GPU and link specifications. Every figure cites its public source in the catalog data
// (`source` field).
//
// Conventions (they decide every fit verdict, so they are exact):
//  - `memory` is the capacity the driver reports as total device memory: nvidia-smi
//    `memory.total` (MiB, ECC on where the part has ECC) or rocm-smi VRAM total, stored as
//    an exact byte count. It is not the marketing figure: an "H100 80GB" reports
//    81,559 MiB (85,520,809,984 bytes), below 80 GiB. Where no such report is cited the
//    datasheet's decimal GB are used as-is and the source says so.
//  - Bandwidths are bytes per second, decimal (1 TB/s = 1e12 B/s), as datasheets state
//    them. Link bandwidth is per direction per GPU (half of a "bidirectional" figure).
//  - Peak FLOP/s are dense (no 2:4 sparsity), i.e. half of a datasheet's "with sparsity"
//    figure where only that is given.
// Thread model: value types.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

struct GpuSpec {
  std::string name;
  std::string description;
  std::string source;
  Bytes memory;                    // device memory as the driver reports it (see above)
  double memory_bandwidth = 0;     // bytes/s
  double bf16_flops = 0;           // dense FLOP/s
  double fp8_flops = 0;            // 0 = not supported natively
  double int8_ops = 0;             // 0 = not supported natively
  double fp4_flops = 0;            // 0 = not supported natively
  std::vector<DType> dtypes;       // formats the GPU stores and computes natively
  std::string default_intra_link;  // link name in the catalog, e.g. nvlink4
  // Whether GPUs of this type in one node reach each other's memory directly (NVLink, or
  // PCIe peer-to-peer). GeForce parts on PCIe do not (the driver refuses P2P): their
  // transfers stage through host memory (perf/collectives.h HostStaged).
  bool peer_to_peer = true;
  // The measured kernel tables that ship for this GPU (perf/gzip_file.h), e.g.
  // `builtin:aiconfigurator/h100_sxm`: the default step model reads them
  // (docs/step-models.md "Which default each GPU gets"). Empty: none ship, the default is
  // the roofline. Only built-in GPUs have them; a catalog file's GPU never does (it may
  // redefine a part the tables were not measured on).
  std::string kernel_tables;

  bool Supports(DType t) const;
  // Peak dense throughput for matmuls in `t`: the native rate when the GPU has one (fp16
  // runs at the bf16 rate), else bf16 (formats stored compactly but computed in bf16,
  // e.g. int4 weight-only, or fp8 on an A100). fp32 runs as TF32 at half the bf16 rate.
  double PeakFlops(DType t) const;
};

// Values reach JSON by name (LinkKindName); keep the numbers stable all the same.
enum class LinkKind : int {
  kNvlink = 0,
  kPcie = 1,
  kInfiniband = 2,
  kRoce = 3,
  kEthernet = 4,
  kXgmi = 5
};

struct LinkSpec {
  std::string name;
  std::string description;
  std::string source;
  LinkKind kind = LinkKind::kNvlink;
  double bandwidth = 0;  // bytes/s per direction per GPU
  Duration latency;      // one-way small-message latency
};

// Bytes per second from text with a unit per second, as users write it in catalog files:
// "450GB/s", "3.35TB/s", "25GiB/s" (bytes, decimal or binary prefixes) or "400Gb/s"
// (bits: lowercase b). Errors are InvalidInput, not located, naming what was expected.
Expected<double> ParseBandwidth(std::string_view text);

// "nvlink", "pcie", "infiniband", "roce", "ethernet", "xgmi".
std::string_view LinkKindName(LinkKind k);
const std::vector<std::string>& LinkKindNames();
// Unknown names: InvalidInput (not located) with did-you-mean and the valid list.
Expected<LinkKind> ParseLinkKind(std::string_view name);

}  // namespace fleetplan
