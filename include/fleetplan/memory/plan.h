// The memory plan of one replica: per pipeline stage, what one GPU holds and what is left
// for KV, and the KV block pool the engine gets.
//
// Per rank of stage s:
//   budget      = gpu.memory × gpu_memory_utilization, rounded to the nearest byte
//   usable_kv_s = budget − weights_s − activation − runtime overhead      (may be < 0)
//   block_bytes_s = block_tokens × kv_bytes_per_token_s
//                   (kv_bytes_per_token_s = stage layers × KV bytes per layer per rank)
//   kv_blocks_s = floor(max(usable_kv_s, 0) / block_bytes_s)
// A block spans every stage (each stage holds its own layers of the same tokens), so
//   kv_blocks_per_replica = min over stages of kv_blocks_s    (the binding stage)
// All TP ranks of a stage hold the same amounts (shards are rounded up, so the figure is
// that of the largest shard).
//
// The engine sizes its KV block pool with SizeKvPool; fleetplan fit uses PlanMemory and
// explains every term.
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/memory/kv.h"
#include "fleetplan/memory/overhead.h"
#include "fleetplan/memory/weights.h"

namespace fleetplan {

struct StagePlan {
  StageLayers layers;
  Bytes weights;             // per rank
  Bytes kv_bytes_per_token;  // per rank: layers × KvShape::bytes_per_layer_per_rank
  Bytes block_bytes;         // per rank: block_tokens × kv_bytes_per_token
  Bytes usable_kv;           // per rank; negative when weights and workspace exceed the budget
  int64_t kv_blocks = 0;     // per rank
};

struct MemoryPlan {
  MemoryInputs inputs;
  WeightsPlan weights;
  KvShape kv;
  ActivationWorkspace activation;
  RuntimeOverhead runtime;
  Bytes budget_per_rank;
  std::vector<StagePlan> stages;   // index = stage
  int64_t binding_stage = 0;       // fewest KV blocks; lowest index on ties
  int64_t kv_blocks_per_replica = 0;

  const StagePlan& binding() const { return stages.at(static_cast<size_t>(binding_stage)); }
};

// InvalidInput "<field>: <message>" (MemoryFieldName) when ValidateMemoryInputs fails.
Expected<MemoryPlan> PlanMemory(const MemoryInputs& in);

// What the engine needs to size its KV block pool (one replica, the binding stage).
struct KvPoolSize {
  Bytes kv_bytes_per_rank;            // usable KV bytes per rank; may be <= 0
  Bytes kv_bytes_per_token_per_rank;  // all layers of the stage, this rank's shard
  int64_t block_tokens = 0;
  Bytes block_bytes_per_rank;         // block_tokens × kv_bytes_per_token_per_rank
  // Blocks of the replica's pool. 0 means not even one block fits: the engine must refuse
  // the configuration (`fleetplan fit` explains why).
  int64_t kv_blocks_per_replica = 0;
  int64_t binding_stage = 0;
};

// Same errors as PlanMemory. kv_window does not change the pool: it changes how many blocks
// a sequence holds (PlanSequenceKv).
Expected<KvPoolSize> SizeKvPool(const MemoryInputs& in);

}  // namespace fleetplan
