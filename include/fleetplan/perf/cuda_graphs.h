// CUDA graphs: which decode steps replay a captured graph, at what padded batch size, and
// what an eager step costs instead.
//
// Serving engines capture one CUDA graph per batch size in a bucket list and replay the
// smallest one that fits; the unused slots run as padding (vLLM cudagraph_capture_sizes,
// SGLang cuda_graph_bs). Scenario: `engine.cuda_graphs: {buckets: [1, 4, 8, 16, 32],
// eager_fallback: true}`, optional `eager_launch_per_layer: 34us`.
//
//   decode-only step of b sequences, b <= largest bucket  -> graphed at the smallest
//                                                           bucket >= b (padded)
//   decode-only step, b > largest bucket                  -> eager at b (fallback)
//   step with any prefill work                            -> eager (graphs cover decode
//                                                           batches only, as in vLLM's
//                                                           full-graph decode mode)
//
// eager_fallback: false declares an engine that should never run a decode batch eager. A
// batch above the largest bucket cannot be split (the step is already the engine's
// choice), so it still runs eager at b; Bucket() marks it `unexpected` so the engine
// counts it apart from the fallback rate and the report says the declared buckets are
// too small for max_running.
//
// CudaGraphPolicy is pure: the engine calls Bucket() to count hit rate, padding ratio and
// fallback rate; GraphedStepModel (below) calls it to cost the step.
// Thread model: immutable; safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/perf/collectives.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// Largest bucket accepted: engines capture up to 512 (vLLM's default max) and capture
// memory grows with the bucket; 8192 leaves room without admitting typos like 320000.
inline constexpr int64_t kMaxGraphBucket = 8192;

// What an eager step costs beyond the graph replay of the same batch, per decoder layer,
// when the model is tensor-parallel: two all-reduces per layer, each ~17 us slower eager
// than graph-captured (measured: vLLM 0.24 custom all-reduce on H100, 2-8 GPUs, messages
// <= 64 Ki elements, eager minus graph = 16.1-17.7 us mean; profiles/aiconfigurator
// custom_allreduce_perf). Other kernels' launch gaps are not in that table and are not
// added; a measured override goes in `eager_launch_per_layer`.
inline constexpr Duration kEagerAllReducePenalty = Us(17);
// The default eager overhead per layer for a tp-way model: 2 × 17 us with tp > 1, else 0.
Duration DefaultEagerLaunchPerLayer(int64_t tp);

struct GraphBucket {
  int64_t padded = 0;       // batch the step computes (>= the real decode count)
  bool graphed = false;     // replayed from a captured graph
  bool fallback = false;    // above the largest bucket: ran eager at the real size
  bool unexpected = false;  // fallback while eager_fallback is false (counted apart)
};

class CudaGraphPolicy {
 public:
  // No buckets: graphs off, every step eager.
  CudaGraphPolicy() = default;
  // REQUIRES nothing; errors (not located) for empty, non-increasing or out-of-range
  // buckets.
  static Expected<CudaGraphPolicy> Create(std::vector<int64_t> buckets, bool eager_fallback,
                                          std::optional<Duration> eager_launch_per_layer);
  // Reads `engine.cuda_graphs`: absent or null = graphs off; otherwise a map with
  // `buckets` (required, strictly increasing integers in [1, kMaxGraphBucket]),
  // `eager_fallback` (default true, what vLLM and SGLang do) and `eager_launch_per_layer`
  // (a duration; default DefaultEagerLaunchPerLayer(tp) where the policy is used).
  static Expected<CudaGraphPolicy> Parse(const YamlNode& node);

  bool enabled() const { return !buckets_.empty(); }
  const std::vector<int64_t>& buckets() const { return buckets_; }
  bool eager_fallback() const { return eager_fallback_; }
  const std::optional<Duration>& eager_launch_per_layer() const { return eager_launch_per_layer_; }

  // The bucket of a decode-only step. REQUIRES: decode_seqs >= 1. O(log buckets).
  GraphBucket Bucket(int64_t decode_seqs) const;
  // The padded size of the largest decode batch the engine can form: what a measured
  // table must cover when its steps are padded.
  int64_t PaddedLimit(int64_t max_decode_seqs) const;

  Json Describe() const;

 private:
  std::vector<int64_t> buckets_;
  bool eager_fallback_ = true;
  std::optional<Duration> eager_launch_per_layer_;
};

// Decorates a step model with graph replay and eager launch cost:
//  - a graphed decode-only step costs inner->CostPadded(chunks, padding) where the padding
//    decodes each carry the mean context of the real decodes (integer mean, rounded down);
//  - every other step costs inner->Cost(chunks) plus layers × eager_launch_per_layer.
// kind() and PrefillCostPerToken() are the inner model's (prefill steps run eager either
// way; the launch cost is per step, not per token). Describe() adds `cuda_graphs`.
// Thread model: immutable; safe to share.
class GraphedStepModel final : public StepCostModel {
 public:
  // REQUIRES: inner non-null; layers >= 1; eager_launch_per_layer >= 0.
  GraphedStepModel(std::unique_ptr<StepCostModel> inner, CudaGraphPolicy policy, int64_t layers,
                   Duration eager_launch_per_layer);

  StepCost Cost(std::span<const StepChunk> chunks) const override;
  std::string kind() const override { return inner_->kind(); }
  Json Describe() const override;
  Duration PrefillCostPerToken() const override { return inner_->PrefillCostPerToken(); }

  const StepCostModel& inner() const { return *inner_; }
  const CudaGraphPolicy& policy() const { return policy_; }
  Duration eager_overhead() const { return eager_overhead_; }  // layers × per-layer cost

 private:
  std::unique_ptr<StepCostModel> inner_;
  CudaGraphPolicy policy_;
  int64_t layers_;
  Duration eager_launch_per_layer_;
  Duration eager_overhead_;
};

}  // namespace fleetplan
