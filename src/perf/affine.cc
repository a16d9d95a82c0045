#include "fleetplan/perf/affine.h"

#include <algorithm>

namespace fleetplan {

Expected<AffineParams> AffineStepModel::Parse(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"kind", "prefill", "decode"}));
  const YamlNode prefill = node["prefill"];
  const YamlNode decode = node["decode"];
  FP_RETURN_IF_ERROR(prefill.CheckKeys({"base", "per_token"}));
  FP_RETURN_IF_ERROR(decode.CheckKeys({"base", "per_seq"}));
  AffineParams p;
  FP_ASSIGN_OR_RETURN(p.prefill_base, ReadStepTime(prefill["base"]));
  FP_ASSIGN_OR_RETURN(p.prefill_per_token, ReadStepTime(prefill["per_token"]));
  FP_ASSIGN_OR_RETURN(p.decode_base, ReadStepTime(decode["base"]));
  FP_ASSIGN_OR_RETURN(p.decode_per_seq, ReadStepTime(decode["per_seq"]));
  return p;
}

Duration AffineStepModel::CostOf(const StepShape& s) const {
  Duration base;
  if (s.prefill_seqs > 0) base = std::max(base, p_.prefill_base);
  if (s.decode_seqs > 0) base = std::max(base, p_.decode_base);
  return base + p_.prefill_per_token * s.prefill_tokens + p_.decode_per_seq * s.decode_seqs;
}

StepCost AffineStepModel::Cost(std::span<const StepChunk> chunks) const {
  return StepCost{CostOf(Summarize(chunks)), Duration(), false};
}

StepCost AffineStepModel::CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const {
  return StepCost{CostOf(SummarizePadded(chunks, padding)), Duration(), false};
}

Json AffineStepModel::Describe() const {
  Json j;
  j["kind"] = "affine";
  j["prefill"] = {{"base_ns", p_.prefill_base.ns()}, {"per_token_ns", p_.prefill_per_token.ns()}};
  j["decode"] = {{"base_ns", p_.decode_base.ns()}, {"per_seq_ns", p_.decode_per_seq.ns()}};
  j["mixed_step"] = "max(prefill.base if prefill, decode.base if decode) + "
                    "prefill.per_token * prefill_tokens + decode.per_seq * decode_seqs";
  return j;
}

}  // namespace fleetplan
