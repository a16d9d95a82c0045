#include "fleetplan/engine/block_index.h"

#include "fleetplan/core/status.h"

namespace fleetplan {

BlockIndex::BlockIndex(int64_t max_entries) : max_entries_(max_entries) { FP_ASSERT(max_entries >= 0); }

size_t BlockIndex::Probe(const BlockHash& key) const {
  size_t i = Home(key);
  while (slots_[i].block >= 0 && !(slots_[i].key == key)) i = (i + 1) & mask_;
  return i;
}

int32_t BlockIndex::Find(const BlockHash& key) const {
  if (slots_.empty()) return -1;
  return slots_[Probe(key)].block;
}

bool BlockIndex::Insert(const BlockHash& key, int32_t block) {
  FP_ASSERT(block >= 0 && size_ < max_entries_);
  if (slots_.empty()) {
    size_t capacity = 2;
    while (capacity < 2 * static_cast<size_t>(max_entries_)) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
  }
  Slot& s = slots_[Probe(key)];
  if (s.block >= 0) return false;
  s = Slot{key, block};
  ++size_;
  return true;
}

bool BlockIndex::Erase(const BlockHash& key) {
  if (slots_.empty()) return false;
  size_t hole = Probe(key);
  if (slots_[hole].block < 0) return false;
  // Backward shift: move each following entry of the cluster into the hole when the hole
  // lies on its probe path (between its home slot and its slot, cyclically).
  size_t next = (hole + 1) & mask_;
  while (slots_[next].block >= 0) {
    const size_t home = Home(slots_[next].key);
    const size_t dist_next = (next - home) & mask_;
    const size_t dist_hole = (hole - home) & mask_;
    if (dist_hole < dist_next) {
      slots_[hole] = slots_[next];
      hole = next;
    }
    next = (next + 1) & mask_;
  }
  slots_[hole] = Slot{};
  --size_;
  return true;
}

}  // namespace fleetplan
