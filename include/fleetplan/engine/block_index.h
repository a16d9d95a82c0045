// BlockIndex: the prefix cache's index, published block identity -> block id.
//
// Why not std::unordered_map: profiling the engine benchmark with the cache on (perf,
// docs/PERFORMANCE.md "Engine") put 55% of the run in unordered_map's node lookups and
// erases: one heap node per entry and a pointer chase per probe, on every publish,
// eviction and lookup. The keys here are already uniform 128-bit hashes and the entries
// are bounded by the pool's block count, which a general-purpose map cannot exploit:
//   - capacity is fixed at the first insert to a power of two >= 2 × max_entries, so the
//     load factor stays <= 1/2 and the table never rehashes;
//   - the slot is the key's low bits (no hash function call), probing is linear over a
//     flat array;
//   - erase shifts the following entries back (no tombstones), so probe sequences stay
//     as short as if the erased key had never been inserted.
// Nothing is allocated until the first insert, so a pool with the cache off pays nothing.
// Never iterated: its order cannot reach any output.
// Thread model: single-threaded.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetplan/engine/block_hash.h"

namespace fleetplan {

class BlockIndex {
 public:
  // REQUIRES: max_entries >= 0.
  explicit BlockIndex(int64_t max_entries);

  // The block stored under `key`, or -1.
  int32_t Find(const BlockHash& key) const;
  // Stores key -> block; false (changing nothing) when the key is present.
  // REQUIRES: block >= 0; size() < max_entries.
  bool Insert(const BlockHash& key, int32_t block);
  // Removes `key`; false when absent.
  bool Erase(const BlockHash& key);
  int64_t size() const { return size_; }
  // A hint that `key` is about to be inserted, found or erased: starts loading its home
  // slot. Callers about to touch many keys prefetch them all first, so the cache misses
  // overlap instead of queueing one behind another. No effect on the contents.
  void Prefetch(const BlockHash& key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(key)]);
  }

 private:
  struct Slot {
    BlockHash key;
    int32_t block = -1;  // -1: empty
  };
  size_t Home(const BlockHash& key) const { return static_cast<size_t>(key.lo) & mask_; }
  // The slot holding `key`, or the empty slot where its probe sequence ends.
  size_t Probe(const BlockHash& key) const;

  int64_t max_entries_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int64_t size_ = 0;
};

}  // namespace fleetplan
