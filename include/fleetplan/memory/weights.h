// Weight memory: the bytes of the whole model and the bytes one GPU of each pipeline stage
// holds, term by term, with how each term is split.
//
// Placement (vLLM's, which SGLang and TensorRT-LLM share in substance):
//  - pipeline stages own consecutive layers, layers/pp each; the remainder goes one layer
//    each to the stages just before the last (vLLM get_pp_indices), so the first stage
//    (embedding, vision tower) and the last (LM head) are not the heavy ones;
//  - attention q/o projections, FFNs, shared experts, the vision encoder and projector are
//    sharded by TP (column/row parallel);
//  - K/V projections are sharded by TP while tp <= kv_heads; beyond that every rank holds
//    one KV head, so each head is replicated tp/kv_heads times;
//  - MLA: the down-projections (q_a, kv_a) are replicated on every TP rank, the
//    up-projections and the output projection are sharded;
//  - routed experts: ep groups hold experts/ep experts each, every expert sharded tp/ep
//    ways, so a rank holds 1/tp of the expert bytes;
//  - the input embedding and the LM head are vocab-parallel (vocab/tp rows per rank); the
//    embedding lives on the first stage, the LM head on the last; with tied embeddings and
//    pp > 1 the last stage loads its own copy of the embedding for the LM head;
//  - norms and the MoE router are replicated on every rank.
// Formats: the linear layers (attention, FFN, experts) are stored in the weight dtype. The
// embedding, LM head, norms, router and vision tower are kept at 16 bits (bf16) when the
// weight dtype is narrower, as fp8/int8/int4/fp4 checkpoints ship them; else in the weight
// dtype. Not modelled: quantization scale tensors (a few % for group-quantized int4/fp4)
// and vocabulary padding.
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/units.h"
#include "fleetplan/memory/inputs.h"

namespace fleetplan {

// Storage format of the parts a quantized checkpoint keeps wide (see above).
inline constexpr DType kWideWeightDType = DType::kBf16;

// The layers of one pipeline stage: [first_layer, first_layer + layers).
struct StageLayers {
  int64_t stage = 0;
  int64_t first_layer = 0;
  int64_t layers = 0;
  int64_t global_layers = 0;    // full-attention layers
  int64_t windowed_layers = 0;  // sliding-window layers of the model
};

// vLLM's stage split, with per-stage windowed/global counts (layer i is global when the
// model has no window, or when global_every > 0 and (i + 1) % global_every == 0).
// REQUIRES: 1 <= pp <= model.layers.
std::vector<StageLayers> SplitStages(const ModelSpec& model, int64_t pp);

// One group of weights.
struct WeightTerm {
  std::string name;      // "attention q/o", "embedding", "routed experts", ...
  DType dtype = DType::kBf16;
  std::string sharding;  // how a rank's share is derived: "TP/4", "replicated", ...
  int64_t params = 0;    // whole model
  Bytes bytes;           // whole model: BytesFor(dtype, params)
  // Per rank of each pipeline stage (index = stage): params and BytesFor(dtype, params).
  std::vector<int64_t> params_per_rank;
  std::vector<Bytes> bytes_per_rank;
};

struct WeightsPlan {
  std::vector<WeightTerm> terms;   // in model order; terms with nothing to hold are left out
  int64_t params_total = 0;        // the model's parameters (CountParams(...).total())
  Bytes bytes_total;               // sum of the terms' bytes
  std::vector<Bytes> bytes_per_rank;  // per stage: sum of the terms' bytes_per_rank
  Bytes replica_bytes;             // held by all GPUs of a replica together (incl. copies)
  // MoE: parameters and bytes touched per token (top-k routed + shared + the rest). Dense:
  // equal to the totals (vision tower excluded for a VLM: it runs per image, not per token).
  int64_t active_params_per_token = 0;
  Bytes active_bytes_per_token;
  // VLM parts (zero otherwise): the decoder is everything but the vision tower.
  Bytes decoder_bytes;
  Bytes vision_encoder_bytes;
  Bytes vision_projector_bytes;
  std::vector<std::string> notes;  // replication and placement facts worth saying
};

// REQUIRES: ValidateMemoryInputs(in) returned nothing.
WeightsPlan PlanWeights(const MemoryInputs& in);

}  // namespace fleetplan
