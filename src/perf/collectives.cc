#include "fleetplan/perf/collectives.h"

#include <cmath>

#include "fleetplan/core/status.h"

namespace fleetplan {

namespace {

// hops × α + volume_factor × M / B, rounded once to the nearest nanosecond.
Duration AlphaBeta(int64_t hops, double volume_factor, Bytes message, LinkCost link) {
  FP_ASSERT(link.bandwidth > 0 && link.latency.ns() >= 0 && message.count() >= 0);
  const double transfer_ns =
      volume_factor * static_cast<double>(message.count()) / link.bandwidth * 1e9;
  return link.latency * hops + Duration::Nanos(std::llround(transfer_ns));
}

// ⌈log2 n⌉ for n >= 1.
int64_t CeilLog2(int64_t n) {
  int64_t depth = 0;
  for (int64_t reach = 1; reach < n; reach *= 2) ++depth;
  return depth;
}

// (n-1)/n: the share of the buffer each rank must move in a ring or pairwise exchange.
double RingShare(int64_t n) {
  return static_cast<double>(n - 1) / static_cast<double>(n);
}

}  // namespace

std::string_view AllReduceAlgorithmName(AllReduceAlgorithm a) {
  switch (a) {
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kTree:
      return "tree";
  }
  return "unknown";
}

Duration AllReduceTime(AllReduceAlgorithm algorithm, int64_t ranks, Bytes message, LinkCost link) {
  return algorithm == AllReduceAlgorithm::kTree ? AllReduceTreeTime(ranks, message, link)
                                                : AllReduceRingTime(ranks, message, link);
}

Duration AllReduceRingTime(int64_t ranks, Bytes message, LinkCost link) {
  FP_ASSERT(ranks >= 1);
  if (ranks == 1) return Duration();
  // Reduce-scatter then all-gather: 2(n-1) steps, each moving M/n.
  return AlphaBeta(2 * (ranks - 1), 2.0 * RingShare(ranks), message, link);
}

Duration AllReduceTreeTime(int64_t ranks, Bytes message, LinkCost link) {
  FP_ASSERT(ranks >= 1);
  if (ranks == 1) return Duration();
  // Reduce up and broadcast down a tree of depth ⌈log2 n⌉, pipelined; two trees each
  // carry half the buffer, so every rank receives M and sends M per phase.
  return AlphaBeta(2 * CeilLog2(ranks), 2.0, message, link);
}

Duration AllGatherTime(int64_t ranks, Bytes gathered, LinkCost link) {
  FP_ASSERT(ranks >= 1);
  if (ranks == 1) return Duration();
  return AlphaBeta(ranks - 1, RingShare(ranks), gathered, link);
}

Duration ReduceScatterTime(int64_t ranks, Bytes input_per_rank, LinkCost link) {
  FP_ASSERT(ranks >= 1);
  if (ranks == 1) return Duration();
  return AlphaBeta(ranks - 1, RingShare(ranks), input_per_rank, link);
}

Duration AllToAllTime(int64_t ranks, Bytes sent_per_rank, LinkCost link) {
  FP_ASSERT(ranks >= 1);
  if (ranks == 1) return Duration();
  // n-1 pairwise rounds; each sends the M/n destined to one peer.
  return AlphaBeta(ranks - 1, RingShare(ranks), sent_per_rank, link);
}

Duration SendRecvTime(Bytes message, LinkCost link) { return AlphaBeta(1, 1.0, message, link); }

LinkCost HostStaged(LinkCost link) { return LinkCost{link.bandwidth / 2, link.latency * 2}; }

bool VllmUsesCustomAllReduce(int64_t ranks, Bytes message, bool nvlink, bool peer_to_peer) {
  const bool supported_size = ranks == 2 || ranks == 4 || ranks == 6 || ranks == 8;
  return supported_size && peer_to_peer && (ranks == 2 || nvlink) &&
         message.count() < kVllmCustomAllReduceMaxBytes;
}

Duration CustomAllReduceTime(int64_t ranks, Bytes message, LinkCost link, bool nvlink) {
  FP_ASSERT(VllmUsesCustomAllReduce(ranks, message, nvlink, true));
  // The kernel's own thresholds for reading every peer in one stage.
  constexpr int64_t kOneStageUpTo4 = int64_t{512} << 10;
  constexpr int64_t kOneStageUpTo8 = int64_t{256} << 10;
  const int64_t m = message.count();
  const bool one_stage = ranks == 2 || (nvlink && ((ranks <= 4 && m < kOneStageUpTo4) || m < kOneStageUpTo8));
  if (one_stage) return AlphaBeta(1, static_cast<double>(ranks - 1), message, link);
  return AlphaBeta(2, 2.0 * RingShare(ranks), message, link);
}

}  // namespace fleetplan
