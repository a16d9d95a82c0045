// Alpha-beta (Hockney) cost of collective operations over n ranks.
//
// A link is a latency α (one-way, small message) and a bandwidth B (bytes/s per direction
// per GPU, LinkSpec::bandwidth). A message of m bytes over one hop costs α + m / B. The
// collectives below are the textbook algorithms NCCL implements (Thakur, Rabenseifner &
// Gropp 2005; NCCL's ring and double binary tree), with M the message size in bytes:
//
//   all-reduce, ring            2(n-1)·α + 2·(n-1)/n · M/B      (M: the buffer reduced)
//   all-reduce, double tree     2·⌈log2 n⌉·α + 2 · M/B
//   all-gather, ring            (n-1)·α + (n-1)/n · M/B         (M: the gathered output)
//   reduce-scatter, ring        (n-1)·α + (n-1)/n · M/B         (M: the input per rank)
//   all-to-all, pairwise        (n-1)·α + (n-1)/n · M/B         (M: what one rank sends
//                                                                 in total, incl. to itself)
//   send/recv                   α + M/B
//
// n == 1 costs nothing. Results round to the nearest nanosecond. docs/step-models.md
// compares the ring all-reduce with measured NCCL times on H100 (error per size range).
//
// GPUs without peer-to-peer access (GeForce parts on PCIe: the driver refuses P2P) move
// every transfer through a host buffer, device to host then host to device. NCCL's SHM
// transport does this; each transfer crosses the PCIe link twice in series:
//
//   HostStaged(α, B) = (2α, B / 2)        used in place of the link in every formula
//
// vLLM's tensor-parallel all-reduce (vllm/distributed/device_communicators: CudaCommunicator
// tries its custom all-reduce first, then NCCL) uses the custom kernel when
//   ranks in {2, 4, 6, 8}, the ranks have peer-to-peer access, (ranks == 2 or the ranks
//   are fully connected by NVLink), and the message is under 8 MiB (CustomAllreduce
//   max_size; should_custom_ar's `inp_size < max_size`);
// otherwise NCCL. The custom kernel reads its peers' buffers directly:
//
//   one stage  (ranks == 2, or NVLink with ranks <= 4 and M < 512 KiB, or M < 256 KiB)
//                               α + (n-1) · M/B        every rank reads every peer's buffer
//   two stages (otherwise)      2α + 2·(n-1)/n · M/B   reduce-scatter, then all-gather
//
// (csrc/custom_all_reduce.cuh, cross_device_reduce_1stage / _2stage; one α per barrier.)
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

// The two parameters of the alpha-beta model.
struct LinkCost {
  double bandwidth = 0;  // bytes/s per direction per GPU; REQUIRES > 0
  Duration latency;      // per hop; REQUIRES >= 0
  static LinkCost Of(const LinkSpec& link) { return LinkCost{link.bandwidth, link.latency}; }
};

// Megatron-style tensor parallelism all-reduces a layer's activations twice: after the
// attention output projection and after the FFN down projection (both row-parallel).
inline constexpr int64_t kTpAllReducesPerLayer = 2;

// Values reach reports by name (AllReduceAlgorithmName); never renumber.
enum class AllReduceAlgorithm : int { kRing = 0, kTree = 1 };
std::string_view AllReduceAlgorithmName(AllReduceAlgorithm a);

// REQUIRES (all): ranks >= 1, message >= 0 bytes, link as above.
Duration AllReduceTime(AllReduceAlgorithm algorithm, int64_t ranks, Bytes message, LinkCost link);
Duration AllReduceRingTime(int64_t ranks, Bytes message, LinkCost link);
Duration AllReduceTreeTime(int64_t ranks, Bytes message, LinkCost link);
Duration AllGatherTime(int64_t ranks, Bytes gathered, LinkCost link);
Duration ReduceScatterTime(int64_t ranks, Bytes input_per_rank, LinkCost link);
Duration AllToAllTime(int64_t ranks, Bytes sent_per_rank, LinkCost link);
Duration SendRecvTime(Bytes message, LinkCost link);

// The link a transfer between GPUs without peer-to-peer access effectively has (above).
LinkCost HostStaged(LinkCost link);

// vLLM's custom all-reduce: the size limit, and the choice it makes (above).
inline constexpr int64_t kVllmCustomAllReduceMaxBytes = int64_t{8} << 20;
bool VllmUsesCustomAllReduce(int64_t ranks, Bytes message, bool nvlink, bool peer_to_peer);
// REQUIRES: VllmUsesCustomAllReduce(ranks, message, nvlink, true).
Duration CustomAllReduceTime(int64_t ranks, Bytes message, LinkCost link, bool nvlink);

}  // namespace fleetplan
