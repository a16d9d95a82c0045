// Layout search: which tensor × pipeline × expert × data-parallel composition each replica
// should use on a cluster, ranked separately for prefill and for decode, with every
// rejected composition and its reason.
//
// Enumeration, per GPU type of the cluster (nodes with the same GPU, memory and formats):
//   tp  1 .. the largest node's GPU count, then powers of two up to min(GPUs, heads);
//   pp  1 .. min(layers, GPUs / tp);
//   ep  1 for dense models; every divisor of tp for MoE models;
// each restricted to the requested value when one is given (so an explicit request that
// cannot run is reported with its reason). A composition is rejected, with the first
// failing check as its reason, when:
//   1. the memory module refuses the shape: tp not dividing the heads (or KV heads), pp
//      above the layer count (stages that would hold no layer), ep not dividing the expert
//      count or tp, ep on a dense model (memory/inputs.h, its message verbatim);
//   2. the runtime does not offer it (runtime_support.h);
//   3. the GPUs lack a native format asked for (weights or KV);
//   4. no complete replica can be placed (replica_packing.h): e.g. a TP group would cross a
//      slow link (another node over the network, or a node whose NVLink is down) and
//      --allow-cross-node-tp was not given;
//   5. one replica does not fit in memory at the operating point's sequences of `context`
//      tokens (the fit arithmetic of memory/fit.h, its reasons verbatim) — unless
//      `keep_near_misses` and at least one sequence fits: then the layout is a near miss,
//      kept in `feasible`, timed at the sequences that fit and ranked after every layout
//      that meets the operating point ("fits 59 of 64 sequences");
//   6. a requested dp exceeds the replicas the cluster holds.
//
// Timing of one step of each phase (roofline compute from perf/roofline.h, collectives from
// perf/collectives.h, links from the packing). The step's tokens are cut into m
// microbatches of ceil(tokens / m) (m = 1 when pp = 1; the last may be smaller): a decode
// step is `batch` sequences at `context` tokens, cut by sequences; a prefill step is one
// prompt of `prefill_tokens` tokens, cut into consecutive chunks (chunk j attends to the
// j earlier chunks, so cutting adds no attention work). Per microbatch j, all stages:
//   compute_j = roofline linear + attention of the microbatch (its own collectives left out)
//   tp_j      = 2 × layers × AllReduce(algorithm, tp, tokens_j × hidden × 2 B, tp link)
//   ep_j      = 2 × MoE layers × AllToAll(ep, tokens_j × top-k × hidden × 2 B / ep, tp link)
//               (dispatch and combine; bytes are counted per routed assignment, not per
//               token)
// Every stage runs every microbatch, 1/pp of the work each (stages split evenly); the
// pipeline fills and drains once (GPipe):
//   step = Σ compute_j/pp + Σ tp_j/pp + Σ ep_j/pp + (pp − 1)·max_j(compute_j + tp_j + ep_j)/pp
//          \_ compute _/   \__ tp __/   \__ ep __/   \____________ bubble ______________/
//        + (pp − 1)·SendRecv(ceil(tokens / m) × hidden × 2 B, pp link)          handoffs
// Each microbatch reads the weights again, so microbatching a memory-bound decode costs
// time while it shrinks the bubble of a compute-bound prefill.
//   tokens/s per GPU = step tokens / step / (tp × pp)
// The operating point (BatchRule) sets each layout's decode sequences per replica:
//   kPerReplica        `batch` per replica (the default: 64 sequences);
//   kFleetConcurrency  ceil(`fleet_sequences` / dp): the fleet holds that many at once,
//                      so decode throughput is min(fleet_sequences, dp × batch) / step
//                      (fleet_sequences 1: the latency of one sequence);
//   kMostThatFit       the most sequences that fit, at most `batch` (maximum throughput).
// Ranking: each phase by meeting the operating point (near misses last), then cluster
// throughput, dp × tp × pp × tokens/s per GPU (stranded GPUs
// count against a layout), then the shorter step, then fewer GPUs per replica, then (tp,
// pp, ep). Layouts within close_call_share of the winner's throughput are listed as too
// close to call without a measurement.
// Thread model: pure function; deterministic (no unordered iteration reaches the result).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/perf/collectives.h"
#include "fleetplan/perf/roofline.h"
#include "fleetplan/plan/cluster.h"
#include "fleetplan/plan/replica_packing.h"
#include "fleetplan/plan/runtime_support.h"

namespace fleetplan {

// Two predictions closer than this share of the winner cannot be told apart by an
// analytic model whose own error against measured kernels is several percent
// (docs/step-models.md); the report says to measure instead.
inline constexpr double kCloseCallShare = 0.05;
// Step shapes evaluated when none are given: a decode batch of 64 sequences of 8192 tokens
// (a busy interactive replica), and a prefill step of the reference scenario's token budget
// per step (memory/inputs.h kDefaultMaxBatchedTokens).
inline constexpr int64_t kDefaultLayoutBatch = 64;
inline constexpr int64_t kDefaultLayoutContext = 8192;
inline constexpr int64_t kDefaultLayoutPrefillTokens = kDefaultMaxBatchedTokens;

// How each layout's decode sequences per replica are chosen (see the file comment).
// Values reach JSON by name (BatchRuleName); never renumber.
enum class BatchRule : int { kPerReplica = 0, kFleetConcurrency = 1, kMostThatFit = 2 };
std::string_view BatchRuleName(BatchRule rule);  // "per-replica", "fleet-concurrency", "most-that-fit"

struct LayoutRequest {
  ModelSpec model;
  DType weight_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  int64_t context = kDefaultLayoutContext;  // tokens per resident sequence
  int64_t batch = kDefaultLayoutBatch;      // decode sequences per step (and resident)
  BatchRule batch_rule = BatchRule::kPerReplica;
  int64_t fleet_sequences = 0;  // kFleetConcurrency: sequences the whole fleet holds
  // Keep layouts that fit one replica but fewer sequences than asked (near misses).
  bool keep_near_misses = false;
  int64_t prefill_tokens = kDefaultLayoutPrefillTokens;
  int64_t microbatches = 1;  // per step, when pp > 1
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::kRing;
  bool allow_cross_node_tp = false;  // TP groups may use slow links
  std::string runtime = std::string(kDefaultRuntime);
  double gpu_memory_utilization = kDefaultGpuMemoryUtilization;
  RooflineParams roofline;
  double close_call_share = kCloseCallShare;
  // Restrict the enumeration to these values (an explicit request).
  std::optional<int64_t> tp, pp, ep;
  // Data-parallel replicas wanted; default: every replica the cluster holds.
  std::optional<int64_t> dp;
};

// One step of one phase, term by term (see the file comment).
struct PhaseTiming {
  int64_t tokens = 0;        // tokens the step computes
  int64_t microbatches = 1;  // effective m (microbatches actually cut)
  int64_t tokens_per_microbatch = 0;
  Duration compute;
  Duration tp_all_reduce;
  Duration ep_all_to_all;
  Duration pp_handoff;
  Duration pp_bubble;
  Duration step;                   // the sum of the five terms above
  Bytes tp_message;                // bytes of one all-reduce (one microbatch)
  Bytes pp_boundary_per_token;       // what one stage boundary hands over per token (0 at pp 1)
  Bytes pp_boundary_per_microbatch;  // ... per microbatch
  int64_t routed_assignments = 0;  // per step: tokens × top-k (MoE), else 0
  Bytes ep_dispatch_bytes;         // per step, all MoE layers: assignments leaving their group
  Bytes ep_combine_bytes;          // equal to dispatch: every result returns
  double tokens_per_s_per_gpu = 0;
  Duration comm() const { return tp_all_reduce + ep_all_to_all + pp_handoff; }
};

struct FeasibleLayout {
  std::string gpu;            // GPU type label
  Parallelism layout;         // tp, pp, ep
  int64_t dp = 0;             // replicas used
  int64_t replicas = 0;       // replicas the cluster holds
  int64_t stranded_gpus = 0;  // healthy GPUs of this type in no replica
  Bytes bytes_per_rank;       // binding stage: weights + activation + runtime + batch × KV
  Bytes budget_per_rank;      // memory × utilization
  int64_t max_sequences = 0;  // at `context`, per replica
  int64_t batch_asked = 0;    // decode sequences per replica the operating point asks
  int64_t batch = 0;          // decode sequences per replica timed (< batch_asked: near miss)
  bool near_miss() const { return batch < batch_asked; }
  GpuSpec gpu_spec;           // the GPU type's spec (memory and formats as the nodes have them)
  int64_t node_gpus = 0;      // GPUs of the type's largest node
  LinkSpec node_link;         // the GPU link inside the type's first node
  std::optional<LinkSpec> tp_link;
  std::optional<LinkSpec> pp_link;
  bool tp_over_slow_link = false;  // only with allow_cross_node_tp
  DomainLoss after_loss;
  PhaseTiming prefill;
  PhaseTiming decode;
  double prefill_score = 0;  // dp × GPUs per replica × tokens/s per GPU
  double decode_score = 0;
  int64_t prefill_rank = 0;  // 1-based
  int64_t decode_rank = 0;
};

struct RejectedLayout {
  std::string gpu;
  Parallelism layout;
  std::string reason;
};

struct PhaseRanking {
  std::vector<size_t> order;  // indices into LayoutResult::feasible, best first
  std::vector<size_t> close;  // the runners-up within close_call_share of the winner
};

struct LayoutResult {
  LayoutRequest request;
  std::vector<FeasibleLayout> feasible;  // in decode rank order
  std::vector<RejectedLayout> rejected;  // in enumeration order
  PhaseRanking prefill;
  PhaseRanking decode;
  std::vector<std::string> derived;  // defaults and adjustments, one line each
};

// Errors (InvalidInput, unlocated, naming the field as the flag spells it): batch,
// fleet_sequences (with kFleetConcurrency), context, prefill_tokens, microbatches < 1; context above the model's max_context;
// microbatches above the batch or the prefill tokens; an unknown runtime; close_call_share
// outside [0, 1). "Nothing fits" is not an error: feasible is empty and rejected says why.
// `progress`, when set, is called after each candidate layout is evaluated with
// (candidates done, candidates in all): evaluation packs replicas onto every node, so a
// large cluster takes seconds.
using LayoutProgressFn = std::function<void(int64_t done, int64_t total)>;
Expected<LayoutResult> SearchLayouts(const LayoutRequest& request, const Cluster& cluster,
                                     const LayoutProgressFn& progress = {});

}  // namespace fleetplan
