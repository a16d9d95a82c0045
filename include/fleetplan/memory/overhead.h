// The memory a rank needs besides weights and KV: the activation workspace of one step and
// the runtime's own allocations. Both are planning estimates with named constants, not
// profiles; fleetplan fit prints every term so a measured figure can be compared.
//
// Activation workspace (per rank), for a step of max_batched_tokens tokens:
//   per_token = element_bytes × (kActivationHiddenBuffers × hidden + widest)
//     widest  = the widest per-token intermediate of a layer on this rank:
//               max(attention q|k|v width, FFN width)
//               attention (GQA) = (heads/tp + 2 × kv_heads_per_rank) × head_dim
//               attention (MLA) = heads/tp × (qk_nope + qk_rope + qk_nope + v_head_dim)
//               FFN (gated)     = 3 × intermediate / tp (gate and up outputs + product)
//               FFN (plain)     = 2 × intermediate / tp
//               MoE             = top-k × 3 × expert_intermediate / tp + shared experts
//   logits    = min(max_running, max_batched_tokens) rows × vocab × 4 B (fp32 sampling)
//   total     = max_batched_tokens × per_token + logits
// Runtime overhead (per rank):
//   kCudaContextBytes + kCudaGraphPoolBytes + (kCollectiveBuffersBytes when the replica
//   has more than one GPU).
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "fleetplan/core/units.h"
#include "fleetplan/memory/inputs.h"

namespace fleetplan {

// Hidden-size buffers live at once per token: the residual stream, the normalized input,
// the attention/FFN output being added back, and one spare for fused-kernel outputs.
inline constexpr int64_t kActivationHiddenBuffers = 4;
// Bytes per activation element: models run in bf16/fp16 even with fp8/int4 weights.
inline constexpr int64_t kActivationElementBytes = 2;
// Logits are materialized in fp32 for sampling (vLLM upcasts before the sampler).
inline constexpr int64_t kLogitsElementBytes = 4;
// CUDA context, loaded kernel images and library handles (cuBLAS, NCCL, attention
// kernels): about half a GiB per process on Hopper-class GPUs.
inline constexpr Bytes kCudaContextBytes = MiB(512);
// Private memory pool of the captured CUDA graphs (one per decode batch bucket).
inline constexpr Bytes kCudaGraphPoolBytes = MiB(256);
// NCCL communicator buffers plus the custom all-reduce staging buffers, when a replica
// spans more than one GPU.
inline constexpr Bytes kCollectiveBuffersBytes = MiB(256);

struct ActivationWorkspace {
  int64_t tokens = 0;            // max_batched_tokens
  int64_t element_bytes = 0;     // kActivationElementBytes, or 4 for fp32 weights
  int64_t hidden_elements = 0;   // kActivationHiddenBuffers × hidden
  int64_t widest_elements = 0;   // per token per rank
  std::string widest_formula;    // e.g. "gated FFN 3 × 28672 / tp 4"
  Bytes per_token;               // element_bytes × (hidden_elements + widest_elements)
  int64_t logits_rows = 0;       // min(max_running, max_batched_tokens)
  Bytes logits;                  // logits_rows × vocab × kLogitsElementBytes
  Bytes total;                   // tokens × per_token + logits
};

struct RuntimeOverhead {
  Bytes cuda_context;
  Bytes cuda_graphs;
  Bytes collectives;  // zero for a one-GPU replica
  Bytes total;
};

// REQUIRES: ValidateMemoryInputs(in) returned nothing.
ActivationWorkspace PlanActivation(const MemoryInputs& in);
RuntimeOverhead PlanRuntimeOverhead(const MemoryInputs& in);

}  // namespace fleetplan
