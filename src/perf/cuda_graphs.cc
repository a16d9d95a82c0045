#include "fleetplan/perf/cuda_graphs.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace fleetplan {

namespace {

std::string BucketRule() {
  return fmt::format("strictly increasing integers in [1, {}]", kMaxGraphBucket);
}

}  // namespace

Duration DefaultEagerLaunchPerLayer(int64_t tp) {
  return tp > 1 ? kEagerAllReducePenalty * kTpAllReducesPerLayer : Duration();
}

Expected<CudaGraphPolicy> CudaGraphPolicy::Create(std::vector<int64_t> buckets, bool eager_fallback,
                                                  std::optional<Duration> eager_launch_per_layer) {
  if (buckets.empty()) return InvalidInput(fmt::format("buckets: expected at least one bucket ({})", BucketRule()));
  for (size_t k = 0; k < buckets.size(); ++k) {
    const int64_t b = buckets[k];
    if (b < 1 || b > kMaxGraphBucket) {
      return InvalidInput(fmt::format("buckets[{}]: expected an integer in [1, {}], got {}", k,
                                      kMaxGraphBucket, b));
    }
    if (k > 0 && b <= buckets[k - 1]) {
      return InvalidInput(fmt::format("buckets[{}]: buckets must be {}; {} follows {}", k,
                                      BucketRule(), b, buckets[k - 1]));
    }
  }
  if (eager_launch_per_layer && eager_launch_per_layer->ns() < 0) {
    return InvalidInput("eager_launch_per_layer: expected a duration >= 0");
  }
  CudaGraphPolicy p;
  p.buckets_ = std::move(buckets);
  p.eager_fallback_ = eager_fallback;
  p.eager_launch_per_layer_ = eager_launch_per_layer;
  return p;
}

Expected<CudaGraphPolicy> CudaGraphPolicy::Parse(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return CudaGraphPolicy();
  FP_RETURN_IF_ERROR(node.CheckKeys({"buckets", "eager_fallback", "eager_launch_per_layer"}));
  const YamlNode list = node["buckets"];
  FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, list.Items());
  if (items.empty()) return list.Error(fmt::format("expected at least one bucket ({})", BucketRule()));
  std::vector<int64_t> buckets;
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(const int64_t b, item.AsIntAtLeast(1));
    if (b > kMaxGraphBucket) {
      return item.Error(fmt::format("expected an integer in [1, {}], got {}", kMaxGraphBucket, b));
    }
    if (!buckets.empty() && b <= buckets.back()) {
      return item.Error(fmt::format("buckets must be {}; {} follows {}", BucketRule(), b, buckets.back()));
    }
    buckets.push_back(b);
  }
  FP_ASSIGN_OR_RETURN(const bool eager_fallback, node["eager_fallback"].BoolOr(true));
  std::optional<Duration> per_layer;
  const YamlNode launch = node["eager_launch_per_layer"];
  if (launch.present() && !launch.IsNull()) {
    FP_ASSIGN_OR_RETURN(per_layer, launch.AsDuration());
  }
  return Create(std::move(buckets), eager_fallback, per_layer);
}

GraphBucket CudaGraphPolicy::Bucket(int64_t decode_seqs) const {
  FP_ASSERT(decode_seqs >= 1);
  const auto it = std::lower_bound(buckets_.begin(), buckets_.end(), decode_seqs);
  if (it == buckets_.end()) {
    return GraphBucket{decode_seqs, false, enabled(), enabled() && !eager_fallback_};
  }
  return GraphBucket{*it, true, false, false};
}

int64_t CudaGraphPolicy::PaddedLimit(int64_t max_decode_seqs) const {
  if (max_decode_seqs < 1) return max_decode_seqs;
  return Bucket(max_decode_seqs).padded;
}

Json CudaGraphPolicy::Describe() const {
  Json j;
  j["buckets"] = buckets_;
  j["eager_fallback"] = eager_fallback_;
  if (eager_launch_per_layer_) j["eager_launch_per_layer_ns"] = eager_launch_per_layer_->ns();
  return j;
}

GraphedStepModel::GraphedStepModel(std::unique_ptr<StepCostModel> inner, CudaGraphPolicy policy,
                                   int64_t layers, Duration eager_launch_per_layer)
    : inner_(std::move(inner)),
      policy_(std::move(policy)),
      layers_(layers),
      eager_launch_per_layer_(eager_launch_per_layer),
      eager_overhead_(eager_launch_per_layer * layers) {
  FP_ASSERT(inner_ != nullptr);
  FP_ASSERT(layers_ >= 1 && eager_launch_per_layer_.ns() >= 0);
}

StepCost GraphedStepModel::Cost(std::span<const StepChunk> chunks) const {
  int64_t decodes = 0;
  int64_t decode_context = 0;
  bool prefill = false;
  for (const StepChunk& c : chunks) {
    prefill = prefill || !c.decode;
    decodes += c.decode ? 1 : 0;
    decode_context += c.decode ? c.context_tokens : 0;
  }
  if (!prefill && decodes > 0) {
    const GraphBucket bucket = policy_.Bucket(decodes);
    if (bucket.graphed) {
      return inner_->CostPadded(chunks, StepPadding{bucket.padded - decodes, decode_context / decodes});
    }
  }
  StepCost cost = inner_->Cost(chunks);
  cost.gpu += eager_overhead_;
  return cost;
}

Json GraphedStepModel::Describe() const {
  Json j = inner_->Describe();
  Json g = policy_.Describe();
  g["layers"] = layers_;
  g["eager_launch_per_layer_ns"] = eager_launch_per_layer_.ns();
  g["eager_step_overhead_ns"] = eager_overhead_.ns();
  g["padding_context"] = "mean context of the real decodes (rounded down)";
  j["cuda_graphs"] = std::move(g);
  return j;
}

}  // namespace fleetplan
