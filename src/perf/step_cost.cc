#include "fleetplan/perf/step_cost.h"

#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

Expected<Duration> ReadStepTime(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(const Duration d, node.AsDuration());
  if (d > kMaxStepTime) {
    return node.Error(fmt::format("expected a duration of at most {} (a step-model time; docs/limits.md), got '{}'",
                                  FormatDuration(kMaxStepTime), node.Text()));
  }
  return d;
}

namespace {

// Query-key pairs one prefill chunk attends under causal masking: token i of the chunk
// (0-based) sees context + i + 1 keys, so the sum is new * context + new * (new + 1) / 2.
double PrefillPairs(int64_t context, int64_t new_tokens) {
  const double n = static_cast<double>(new_tokens);
  return n * static_cast<double>(context) + n * (n + 1.0) / 2.0;
}

}  // namespace

StepShape Summarize(std::span<const StepChunk> chunks) {
  StepShape s;
  for (const StepChunk& c : chunks) {
    if (c.decode) {
      ++s.decode_seqs;
      s.decode_context_tokens += c.context_tokens;
    } else {
      ++s.prefill_seqs;
      s.prefill_tokens += c.new_tokens;
      s.prefill_context_tokens += c.context_tokens;
      s.prefill_attention_pairs += PrefillPairs(c.context_tokens, c.new_tokens);
    }
  }
  return s;
}

StepShape SummarizePadded(std::span<const StepChunk> chunks, StepPadding padding) {
  StepShape s = Summarize(chunks);
  s.decode_seqs += padding.decodes;
  s.decode_context_tokens += padding.decodes * padding.context_tokens;
  return s;
}

StepCost StepCostModel::CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const {
  FP_ASSERT(padding.decodes >= 0 && padding.context_tokens >= 0);
  if (padding.decodes == 0) return Cost(chunks);
  std::vector<StepChunk> padded(chunks.begin(), chunks.end());
  padded.insert(padded.end(), static_cast<size_t>(padding.decodes),
                StepChunk{padding.context_tokens, 1, true});
  return Cost(padded);
}

Duration StepCostModel::PrefillCostPerToken() const {
  const StepChunk probe{0, kPrefillProbeTokens, false};
  return Cost({&probe, 1}).gpu / kPrefillProbeTokens;
}

}  // namespace fleetplan
