// The roofline step model: a step's FLOPs and bytes over the GPU's ceilings.
//
// One step is one forward pass of the batch through every pipeline stage in turn (the
// engine runs one step at a time, so stages do not overlap). Per stage s, per rank of
// its tp ranks (docs/step-models.md has the full derivation):
//
//   linear  = max(FLOPs_lin / (peak(weight dtype) × compute_eff),
//                 weight bytes read / (HBM bandwidth × memory_eff))
//   attn    = max(FLOPs_attn / (peak(bf16) × attention_eff),
//                 KV bytes read / (HBM bandwidth × memory_eff))
//   comm    = layers_s × 2 × ring all-reduce(tp, tokens × hidden × 2 bytes)  (tp_link)
//   stage_s = linear + attn + comm
//   step    = Σ stage_s + (pp - 1) × send/recv(tokens × hidden × 2 bytes)    (pp_link)
//
// where, from the memory module's weight terms and KV shape (memory/weights.h, kv.h):
//   FLOPs_lin = 2 × tokens × (linear params per rank + routed-expert params per rank ×
//               top_k / experts) + 2 × sequences × LM-head params per rank;
//   weight bytes = the stage's bytes per rank, except: the embedding is a row gather (not
//               read whole; left out), the vision tower runs per image (left out), and
//               routed experts count only the experts a step can touch — an upper bound
//               min(experts per rank, tokens × top_k) of the experts/ep a rank holds;
//   FLOPs_attn = Σ layers × query-key pairs × FLOPs per pair per rank
//               (GQA: 4 × heads/tp × head_dim; MLA decode, absorbed: heads/tp ×
//               (4 × kv_lora_rank + 2 × qk_rope_head_dim); MLA prefill: heads/tp ×
//               (2 × (qk_nope + qk_rope) + 2 × v_head_dim)); pairs honour sliding windows
//               and kv_window (a query sees at most the window's keys);
//   KV bytes  = Σ layers × KV bytes per token per layer per rank × tokens read (a decode
//               reads min(context + 1, window) tokens, a prefill chunk new + min(context,
//               window)); MLA caches one latent, not sharded by TP.
// Every sequence in the step is counted as producing logits (an upper bound: a prefill
// chunk that does not end its prompt samples nothing). Not modelled: norms, rotary,
// activation functions and sampling kernels, activation traffic, kernel launch gaps —
// the efficiencies absorb part of them, CUDA graphs (perf/cuda_graphs.h) the rest.
// Thread model: immutable; safe to share. Cost is O(batch + pp) with no allocation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/perf/collectives.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// Default efficiencies: medians of measured kernels on H100 SXM (aiconfigurator vLLM 0.24
// tables, profiles/aiconfigurator/h100_sxm; docs/step-models.md has the selection).
// bf16 GEMMs with m >= 512 and n, k >= 4096 reach 0.77-0.83 of 989.5 TFLOP/s.
inline constexpr double kDefaultComputeEfficiency = 0.8;
// FlashAttention-3 prefill, head_dim 128, prompts >= 2048: median 0.54 of peak.
inline constexpr double kDefaultAttentionEfficiency = 0.55;
// Weight streaming in GEMMs with m <= 128: 0.80-0.84 of 3.35 TB/s (decode attention
// reaches 0.91; weights dominate decode steps, so the lower figure is the default).
inline constexpr double kDefaultMemoryEfficiency = 0.8;
// Activations and their collectives stay 16-bit whatever the weight format (vLLM).
inline constexpr DType kActivationDType = DType::kBf16;

struct RooflineParams {
  double compute_efficiency = kDefaultComputeEfficiency;      // of peak(weight dtype), in (0, 1]
  double attention_efficiency = kDefaultAttentionEfficiency;  // of peak(bf16), in (0, 1]
  double memory_efficiency = kDefaultMemoryEfficiency;        // of HBM bandwidth, in (0, 1]
};

// What the roofline needs: the memory planner's inputs (model, GPU, tp/pp/ep, dtypes,
// kv_window) and the links its collectives cross.
struct RooflineInputs {
  MemoryInputs memory;
  LinkSpec tp_link;  // between the tp ranks of a stage (intra-node)
  LinkSpec pp_link;  // between consecutive stages
  RooflineParams params;
};

// One step, term by term (what Cost sums; tests and reports print it).
struct RooflineBreakdown {
  double linear_flops = 0;       // per rank, all stages
  double weight_bytes = 0;       // per rank, all stages
  double attention_flops = 0;
  double kv_bytes = 0;
  Duration linear_compute;       // Σ stages FLOPs_lin / (peak × eff)
  Duration linear_memory;        // Σ stages weight bytes / (bw × eff)
  Duration attention_compute;
  Duration attention_memory;
  Duration linear;               // Σ stages max(compute, memory)
  Duration attention;            // Σ stages max(compute, memory)
  Duration collectives;          // TP all-reduces + PP handoffs
  Duration total;                // linear + attention + collectives
  bool linear_memory_bound = false;     // linear_memory > linear_compute (summed)
  bool attention_memory_bound = false;
};

class RooflineStepModel final : public StepCostModel {
 public:
  // Parses the optional `compute_efficiency`, `attention_efficiency`, `memory_efficiency`
  // of `{kind: roofline, ...}` (numbers in (0, 1]; located errors).
  static Expected<RooflineParams> Parse(const YamlNode& node);
  // Errors (not located): memory inputs that ValidateMemoryInputs rejects, a GPU or link
  // without bandwidth, efficiencies outside (0, 1].
  static Expected<std::unique_ptr<RooflineStepModel>> Create(const RooflineInputs& inputs);

  StepCost Cost(std::span<const StepChunk> chunks) const override;
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override;
  std::string kind() const override { return "roofline"; }
  Json Describe() const override;

  RooflineBreakdown Explain(std::span<const StepChunk> chunks, StepPadding padding = {}) const;

 private:
  // Per rank of one pipeline stage: what a step reads and computes, by kind of weight.
  struct Stage {
    int64_t layers = 0;
    int64_t global_layers = 0;
    int64_t windowed_layers = 0;
    double linear_params = 0;  // applied to every token
    double linear_bytes = 0;   // read once per step
    double head_params = 0;    // LM head: applied to every sequence's last token
    double head_bytes = 0;
    double routed_params = 0;  // routed experts held by the rank
    double routed_bytes = 0;
  };
  // Attention work of one step for one kind of layer (global or windowed).
  struct Window {
    double decode_pairs = 0;   // query-key pairs of decodes
    double prefill_pairs = 0;  // query-key pairs of prefill chunks
    double kv_tokens = 0;      // tokens of KV read
  };
  struct Tally {
    double tokens = 0;
    double seqs = 0;
    Window global;
    Window windowed;
  };
  explicit RooflineStepModel(const RooflineInputs& inputs);
  Tally Count(std::span<const StepChunk> chunks, StepPadding padding) const;

  RooflineInputs in_;
  std::vector<Stage> stages_;
  int64_t hidden_ = 0;
  int64_t tp_ = 1;
  double kv_bytes_per_layer_rank_ = 0;  // per token
  int64_t global_window_ = 0;           // tokens a global layer keeps (kMaxTokens = all)
  int64_t windowed_window_ = 0;         // tokens a windowed layer keeps
  double decode_flops_per_pair_ = 0;    // per layer per rank
  double prefill_flops_per_pair_ = 0;
  double top_k_share_ = 0;              // top_k / experts (MoE), else 0
  int64_t experts_per_rank_ = 0;        // experts / ep (MoE), else 0
  int64_t top_k_ = 0;
  double linear_peak_ = 0;              // FLOP/s × efficiency
  double attention_peak_ = 0;
  double bandwidth_ = 0;                // bytes/s × efficiency
};

}  // namespace fleetplan
