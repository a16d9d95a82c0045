// The affine step model: the "measured service model" of queueing-style capacity planning.
//
//   prefill-only step = prefill.base + prefill.per_token × prefill_tokens
//   decode-only step  = decode.base  + decode.per_seq    × decode_seqs
//   mixed step        = max(prefill.base, decode.base)
//                       + prefill.per_token × prefill_tokens + decode.per_seq × decode_seqs
//
// A mixed step (decodes and prefill chunks in one forward pass, as chunked prefill runs
// them) pays one base — the fixed cost of a forward pass (weights streamed once, kernel
// launches, sampling) — not two; it pays the larger base because the pass does the work
// of both kinds. Context length does not enter: this is the model to use when you have
// two fitted lines and nothing else (docs/step-models.md).
//
// All parameters are integer nanoseconds (YAML durations keep ns precision: 0.035ms is
// exactly 35000 ns), so costs are exact: no floating point on this path.
// Thread model: immutable; safe to share.
#pragma once

#include <span>
#include <string>

#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

struct AffineParams {
  Duration prefill_base;       // fixed cost of a forward pass with prefill work
  Duration prefill_per_token;  // per prompt token computed
  Duration decode_base;        // fixed cost of a forward pass with decodes
  Duration decode_per_seq;     // per decoding sequence
};

class AffineStepModel final : public StepCostModel {
 public:
  explicit AffineStepModel(const AffineParams& params) : p_(params) {}

  // Reads `{kind: affine, prefill: {base, per_token}, decode: {base, per_seq}}`; all four
  // durations are required (located errors; unknown keys are errors).
  static Expected<AffineParams> Parse(const YamlNode& node);

  StepCost Cost(std::span<const StepChunk> chunks) const override;
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override;
  std::string kind() const override { return "affine"; }
  Json Describe() const override;
  // The marginal cost of one prompt token: prefill.per_token (the base is paid anyway).
  Duration PrefillCostPerToken() const override { return p_.prefill_per_token; }

  // The formula on aggregates (what Cost evaluates after Summarize).
  Duration CostOf(const StepShape& shape) const;
  const AffineParams& params() const { return p_; }

 private:
  AffineParams p_;
};

}  // namespace fleetplan
