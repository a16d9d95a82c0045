// BlockIndex: a hash table from block identity (BlockHash) to block id, for the prefix
// cache's chain heads (kv_pool.h: the published blocks that no published parent links to).
//
// Why not std::unordered_map: profiling the engine benchmark with the cache on (perf,
// docs/PERFORMANCE.md "Engine") put 55% of the run in unordered_map's node lookups and
// erases: one heap node per entry and a pointer chase per probe. The keys here are
// already uniform 128-bit hashes and the values are dense block ids, which a
// general-purpose map cannot exploit:
//   - open addressing over one array of 24-byte slots (key and block id), linear
//     probing, the slot being the key's low bits (no hash function call);
//   - erase shifts the following entries back (no tombstones), so probe sequences stay
//     as short as if the erased key had never been inserted;
//   - the capacity follows the size: a power of two, doubled when an insert would take
//     the load above 1/4 and halved when an erase leaves it below 1/16 (never below
//     kMinSlots). At load <= 1/4 an insert probes ~1.3 slots and an erase shifts ~0.3
//     entries; the factor of four between the two bounds makes resizing amortised O(1).
//     Because only chain heads are stored (a few per request, not every block), the
//     table usually stays small enough to live in the processor's caches.
// Nothing is allocated until the first insert, so a pool with the cache off pays nothing.
// Never iterated into a result: its order cannot reach any output.
// Thread model: single-threaded.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/engine/block_hash.h"

namespace fleetplan {

class BlockIndex {
 public:
  static constexpr size_t kMinSlots = 64;

  // The block stored under `key`, or -1.
  int32_t Find(const BlockHash& key) const {
    if (slots_.empty()) return -1;
    return slots_[Probe(key)].block;
  }
  // Stores key -> block; false (changing nothing) when the key is present.
  // REQUIRES: block >= 0.
  bool Insert(const BlockHash& key, int32_t block) {
    FP_ASSERT(block >= 0);
    if (4 * (size_ + 1) > slots_.size()) Resize(slots_.empty() ? kMinSlots : 2 * slots_.size());
    Slot& s = slots_[Probe(key)];
    if (s.block >= 0) return false;
    s = Slot{key, block};
    ++size_;
    return true;
  }
  // Removes `key`; false when absent.
  bool Erase(const BlockHash& key) {
    if (slots_.empty()) return false;
    const size_t i = Probe(key);
    if (slots_[i].block < 0) return false;
    RemoveAt(i);
    if (16 * size_ < slots_.size() && slots_.size() > kMinSlots) Resize(slots_.size() / 2);
    return true;
  }
  int64_t size() const { return static_cast<int64_t>(size_); }
  // Slots in the table (0 before the first insert); for tests and benchmarks.
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    BlockHash key;
    int32_t block = -1;  // -1: empty
  };
  size_t Home(const BlockHash& key) const { return static_cast<size_t>(key.lo) & mask_; }
  // The slot holding `key`, or the empty slot where its probe sequence ends.
  size_t Probe(const BlockHash& key) const {
    size_t i = Home(key);
    while (slots_[i].block >= 0 && !(slots_[i].key == key)) i = (i + 1) & mask_;
    return i;
  }
  // Empties slot `hole` and shifts the rest of its cluster back over it: each following
  // entry of the cluster moves into the hole when the hole lies on its probe path
  // (between its home slot and its slot, cyclically).
  void RemoveAt(size_t hole) {
    for (size_t next = (hole + 1) & mask_; slots_[next].block >= 0; next = (next + 1) & mask_) {
      const size_t home = Home(slots_[next].key);
      if (((hole - home) & mask_) < ((next - home) & mask_)) {
        slots_[hole] = slots_[next];
        hole = next;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }
  // Rebuilds the table with `capacity` slots (a power of two > 4 × size).
  void Resize(size_t capacity);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace fleetplan
