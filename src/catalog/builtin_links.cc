// Built-in links. Bandwidth is per direction per GPU (half of a datasheet's bidirectional
// figure); latency is the per-hop small-message latency NCCL's cost model uses for that
// class of link (NCCL src/graph/tuning.cc, `hwLat`, Ring / LL protocol: NVLink 0.6 us,
// PCI 1.0 us, network 2.7 us), since vendors publish no end-to-end figure comparable
// across link classes.
#include <string>
#include <vector>

#include "catalog/builtin.h"

namespace fleetplan::catalog_internal {
namespace {

constexpr double kGBps = 1e9;                      // 1 GB/s in bytes/s
constexpr double kGbps = 1e9 / 8.0;                // 1 Gb/s (network line rate) in bytes/s
constexpr Duration kNvlinkHopLatency = Ns(600);    // NCCL hwLat[NVLINK][Ring][LL]
constexpr Duration kPcieHopLatency = Ns(1000);     // NCCL hwLat[PCI][Ring][LL]
constexpr Duration kNetworkHopLatency = Ns(2700);  // NCCL hwLat[NET][Ring][LL]

LinkSpec Link(const char* name, LinkKind kind, double bandwidth, Duration latency,
              const char* description, const char* source) {
  LinkSpec l;
  l.name = name;
  l.description = description;
  l.source = source;
  l.kind = kind;
  l.bandwidth = bandwidth;
  l.latency = latency;
  return l;
}

}  // namespace

std::vector<LinkSpec> BuiltinLinks() {
  return {
      Link("nvlink3", LinkKind::kNvlink, 300 * kGBps, kNvlinkHopLatency,
           "NVLink 3 (A100): 12 links, 600 GB/s bidirectional per GPU",
           "NVIDIA A100 Tensor Core GPU datasheet (NVLink: 600 GB/s); latency: NCCL tuning.cc "
           "hwLat"),
      Link("nvlink4", LinkKind::kNvlink, 450 * kGBps, kNvlinkHopLatency,
           "NVLink 4 (H100/H200 SXM): 18 links, 900 GB/s bidirectional per GPU",
           "NVIDIA H100 Tensor Core GPU datasheet (NVLink: 900 GB/s); latency: NCCL tuning.cc "
           "hwLat"),
      Link("nvlink5", LinkKind::kNvlink, 900 * kGBps, kNvlinkHopLatency,
           "NVLink 5 (B200): 18 links, 1.8 TB/s bidirectional per GPU",
           "NVIDIA HGX B200 datasheet (NVLink: 1.8 TB/s per GPU); latency: NCCL tuning.cc hwLat"),
      Link("pcie4", LinkKind::kPcie, 32 * kGBps, kPcieHopLatency,
           "PCIe 4.0 x16: 64 GB/s bidirectional",
           "NVIDIA A100 Tensor Core GPU datasheet (PCIe Gen4: 64 GB/s); latency: NCCL tuning.cc "
           "hwLat"),
      Link("pcie5", LinkKind::kPcie, 64 * kGBps, kPcieHopLatency,
           "PCIe 5.0 x16: 128 GB/s bidirectional",
           "NVIDIA H100 Tensor Core GPU datasheet (PCIe Gen5: 128 GB/s); latency: NCCL "
           "tuning.cc hwLat"),
      Link("xgmi", LinkKind::kXgmi, 448 * kGBps, kNvlinkHopLatency,
           "AMD Infinity Fabric (MI300X): 7 links x 128 GB/s bidirectional = 896 GB/s per GPU; "
           "one peer is reached over one link (64 GB/s per direction)",
           "AMD Instinct MI300X data sheet (Infinity Fabric: 896 GB/s peak aggregate); latency: "
           "NCCL tuning.cc hwLat NVLink row, which RCCL applies to xGMI links"),
      Link("ib-hdr-200", LinkKind::kInfiniband, 200 * kGbps, kNetworkHopLatency,
           "InfiniBand HDR, 200 Gb/s per GPU (one ConnectX-6 port per GPU)",
           "NVIDIA ConnectX-6 VPI adapter datasheet (HDR 200 Gb/s); latency: NCCL tuning.cc "
           "hwLat"),
      Link("ib-ndr-400", LinkKind::kInfiniband, 400 * kGbps, kNetworkHopLatency,
           "InfiniBand NDR, 400 Gb/s per GPU (one ConnectX-7 port per GPU)",
           "NVIDIA ConnectX-7 adapter datasheet (NDR 400 Gb/s); latency: NCCL tuning.cc hwLat"),
      Link("ib-xdr-800", LinkKind::kInfiniband, 800 * kGbps, kNetworkHopLatency,
           "InfiniBand XDR, 800 Gb/s per GPU (one ConnectX-8 port per GPU)",
           "NVIDIA ConnectX-8 SuperNIC datasheet (XDR 800 Gb/s); latency: NCCL tuning.cc hwLat"),
      Link("roce-100", LinkKind::kRoce, 100 * kGbps, kNetworkHopLatency,
           "RoCE v2 over 100 GbE per GPU",
           "IEEE 802.3 100GBASE line rate; latency: NCCL tuning.cc hwLat"),
      Link("roce-200", LinkKind::kRoce, 200 * kGbps, kNetworkHopLatency,
           "RoCE v2 over 200 GbE per GPU",
           "IEEE 802.3 200GBASE line rate; latency: NCCL tuning.cc hwLat"),
      Link("roce-400", LinkKind::kRoce, 400 * kGbps, kNetworkHopLatency,
           "RoCE v2 over 400 GbE per GPU",
           "IEEE 802.3 400GBASE line rate; latency: NCCL tuning.cc hwLat"),
  };
}

}  // namespace fleetplan::catalog_internal
