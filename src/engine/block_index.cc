#include "fleetplan/engine/block_index.h"

#include "fleetplan/core/status.h"

namespace fleetplan {

BlockIndex::BlockIndex(int64_t max_entries) : max_entries_(max_entries) {
  FP_ASSERT(max_entries >= 0 && max_entries <= INT32_MAX);
}

void BlockIndex::AllocateTable() {
  size_t capacity = 2;
  while (capacity < 4 * static_cast<size_t>(max_entries_)) capacity *= 2;
  slots_.assign(capacity, Slot{});
  keys_.assign(static_cast<size_t>(max_entries_), BlockHash{});
  lows_.assign(static_cast<size_t>(max_entries_), 0);
  mask_ = capacity - 1;
}

bool BlockIndex::Erase(const BlockHash& key) {
  if (slots_.empty()) return false;
  const size_t i = ProbeKey(key);
  if (slots_[i].block < 0) return false;
  RemoveAt(i);
  return true;
}

}  // namespace fleetplan
