// BlockIndex: the prefix cache's chain heads (kv_pool.h: the published blocks that no
// published parent links to), from block identity (BlockHash) to block id.
//
// A FlatIndex (flat_index.h: open addressing, linear probing, back-shift erase, load
// between 1/16 and 1/4). The keys are already uniform 128-bit hashes, so the home slot
// is the low word's low bits, with no hash function call. Because only chain heads are
// stored (a few per request, not every block), the table usually stays small enough to
// live in the processor's caches.
// Thread model: single-threaded.
#pragma once

#include <cstdint>

#include "fleetplan/engine/block_hash.h"
#include "fleetplan/engine/flat_index.h"

namespace fleetplan {

struct BlockHashHome {
  uint64_t operator()(const BlockHash& key) const { return key.lo; }
};
using BlockIndex = FlatIndex<BlockHash, BlockHashHome>;

}  // namespace fleetplan
