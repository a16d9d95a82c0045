// Inputs of the memory planner: what runs (a model shape), where (one GPU type), how one
// replica is split (tp × pp GPUs, ep over the experts), in which formats (weights and KV
// separately) and the engine knobs that reserve memory (utilization, block size, the
// token budget per step that sizes the activation workspace).
//
// ValidateMemoryInputs is the single gate: every function of the memory module that takes
// MemoryInputs REQUIRES that it returned nothing. It reports the first bad field as a
// FieldError (which field, what was expected, what was got, the valid values when there
// is a short list); shells locate it at the flag or YAML node the value came from.
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/model.h"

namespace fleetplan {

// The parallel layout of one replica: tp × pp GPUs.
//  - tp shards every matrix of a layer across the tp ranks of a pipeline stage;
//  - pp splits the layers into pp consecutive stages;
//  - ep (MoE only) splits the routed experts of a stage across ep groups of its tp ranks;
//    each expert is then sharded tp/ep ways inside its group. ep divides tp and adds no
//    GPUs (SGLang's ep_size <= tp_size convention).
struct Parallelism {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t ep = 1;
  int64_t gpus() const { return tp * pp; }
};

// vLLM's default share of GPU memory its engine may use; the rest is left to others.
inline constexpr double kDefaultGpuMemoryUtilization = 0.90;
// vLLM's default KV block size on CUDA, in tokens.
inline constexpr int64_t kDefaultBlockTokens = 16;
// Token budget per step of the reference scenario (engine.scheduler.max_batched_tokens).
inline constexpr int64_t kDefaultMaxBatchedTokens = 8192;
// Most sequences holding KV at once (engine.scheduler.max_running), vLLM's max_num_seqs
// default. A scenario that does not state max_running runs with this and its fit checks
// this many sequences; the fit verb's own default (flags only) is one sequence.
inline constexpr int64_t kDefaultMaxRunning = 256;
// Upper bound on any token count (context, window, block, step budget): 2^30 tokens is
// far beyond any served context and keeps every byte product below 2^62.
inline constexpr int64_t kMaxTokens = int64_t{1} << 30;
// Upper bound on sequences (concurrency, max_running): 2^24.
inline constexpr int64_t kMaxSequences = int64_t{1} << 24;
// Upper bound on the KV bytes of one token (all layers): 4 GiB. With kMaxTokens this keeps
// the bytes of one sequence below 2^62; no real model comes near (70B dense: 320 KiB).
inline constexpr int64_t kMaxKvBytesPerToken = int64_t{1} << 32;

struct MemoryInputs {
  ModelSpec model;
  GpuSpec gpu;
  Parallelism layout;
  DType weight_dtype = DType::kBf16;  // linear layers; see weights.h for the parts kept wider
  DType kv_dtype = DType::kBf16;      // independent of weight_dtype
  // Tokens of one sequence each layer keeps in KV; nullopt = the whole context. Layers that
  // the model itself windows keep min(model window, kv_window).
  std::optional<int64_t> kv_window;
  double gpu_memory_utilization = kDefaultGpuMemoryUtilization;  // in (0, 1]
  int64_t block_tokens = kDefaultBlockTokens;
  int64_t max_batched_tokens = kDefaultMaxBatchedTokens;  // tokens computed per step
  int64_t max_running = 1;  // sequences per step whose logits are materialized
};

// Enum values reach JSON by name (MemoryFieldName); never renumber.
enum class MemoryField : int {
  kModel = 0,
  kGpu = 1,
  kTp = 2,
  kPp = 3,
  kEp = 4,
  kWeightDType = 5,
  kKvDType = 6,
  kKvWindow = 7,
  kGpuMemoryUtilization = 8,
  kBlockTokens = 9,
  kMaxBatchedTokens = 10,
  kMaxRunning = 11,
  kContext = 12,
  kConcurrency = 13,
};

// "tp", "kv_window", "gpu_memory_utilization", ... (the scenario's spelling).
std::string_view MemoryFieldName(MemoryField field);

// A bad input value: which field, and a message "expected ..., got ..." without location.
struct FieldError {
  MemoryField field = MemoryField::kModel;
  std::string message;
};

// The first problem with `in`, or nullopt when planning may proceed. Checks ranges (every
// count >= 1, utilization in (0, 1], the bounds above), the model shape (no zero
// dimensions) and the layout against it: tp divides the attention heads; tp divides the
// KV heads or is a multiple of them; pp <= layers; ep > 1 only for MoE, ep divides tp and
// the expert count.
std::optional<FieldError> ValidateMemoryInputs(const MemoryInputs& in);

// The tp values (ascending, 1..heads) that pass the layout checks for `model` with `ep`.
std::vector<int64_t> ValidTpValues(const ModelSpec& model, int64_t ep);

}  // namespace fleetplan
