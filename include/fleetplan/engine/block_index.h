// BlockIndex: the prefix cache's index, published block identity -> block id.
//
// Why not std::unordered_map: profiling the engine benchmark with the cache on (perf,
// docs/PERFORMANCE.md "Engine") put 55% of the run in unordered_map's node lookups and
// erases: one heap node per entry and a pointer chase per probe, on every publish,
// eviction and lookup. The keys here are already uniform 128-bit hashes, the values are
// dense block ids, and the entries are bounded by the pool's block count, which a
// general-purpose map cannot exploit:
//   - capacity is fixed at the first insert to a power of two >= 4 × max_entries, so the
//     load factor stays <= 1/4 and the table never rehashes. At 1/4 an insert probes
//     ~1.3 slots and an erase shifts ~0.3 entries (at 1/2: ~2 and ~1); in the engine
//     benchmark, where every block is inserted and erased once, that fewer instructions
//     beat the smaller footprint of 2 × (docs/PERFORMANCE.md "Engine");
//   - the table is 8-byte slots (block id, low 32 bits of the key), and the full keys
//     live beside it indexed by block id. Probing reads only the slots (24-byte slots
//     holding whole keys made the table three times larger); a full key is read only
//     when the 32 bits match, which for an absent key is a ~2^-(32 - log2 capacity)
//     chance per probed slot;
//   - the slot is the key's low bits (no hash function call), probing is linear;
//   - erase shifts the following entries back (no tombstones), so probe sequences stay
//     as short as if the erased key had never been inserted; the home slot of a moved
//     entry is its stored low bits, so the shift reads no full keys either.
// Each block id is stored under at most one key (a block is published under one
// identity), which is what lets the keys be kept by block id and erased by block.
// Nothing is allocated until the first insert, so a pool with the cache off pays nothing.
// Never iterated: its order cannot reach any output.
// Thread model: single-threaded.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/engine/block_hash.h"

namespace fleetplan {

class BlockIndex {
 public:
  // REQUIRES: max_entries >= 0 (and fits in int32: block ids are int32).
  explicit BlockIndex(int64_t max_entries);

  // The block stored under `key`, or -1.
  int32_t Find(const BlockHash& key) const {
    if (slots_.empty()) return -1;
    return slots_[ProbeKey(key)].block;
  }
  // Stores key -> block; false (changing nothing) when the key is present.
  // REQUIRES: 0 <= block < max_entries; `block` is not stored under any key.
  bool Insert(const BlockHash& key, int32_t block) {
    FP_ASSERT(block >= 0 && block < max_entries_ && size_ < max_entries_);
    if (slots_.empty()) AllocateTable();
    Slot& s = slots_[ProbeKey(key)];
    if (s.block >= 0) return false;
    s = Slot{static_cast<uint32_t>(key.lo), block};
    keys_[static_cast<size_t>(block)] = key;
    lows_[static_cast<size_t>(block)] = static_cast<uint32_t>(key.lo);
    ++size_;
    return true;
  }
  // Removes `key`; false when absent.
  bool Erase(const BlockHash& key);
  // Removes the entry of `block` (the key it was inserted under). REQUIRES: `block` is stored.
  void EraseBlock(int32_t block) {
    FP_ASSERT(!slots_.empty() && block >= 0 && block < max_entries_);
    // The block's slot lies on its key's probe path; matching the id needs no key compare.
    size_t i = Home(lows_[static_cast<size_t>(block)]);
    while (slots_[i].block != block) {
      FP_ASSERT(slots_[i].block >= 0);  // an empty slot ends the path: the block is not stored
      i = (i + 1) & mask_;
    }
    RemoveAt(i);
  }
  // The key `block` is stored under. REQUIRES: `block` is stored.
  const BlockHash& key(int32_t block) const { return keys_[static_cast<size_t>(block)]; }
  int64_t size() const { return size_; }
  // A hint that `key` is about to be inserted, found or erased: starts loading its home
  // slot. Callers about to touch many keys prefetch them all first, so the cache misses
  // overlap instead of queueing one behind another. No effect on the contents.
  void Prefetch(const BlockHash& key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(static_cast<uint32_t>(key.lo))]);
  }
  // The same for the entry of a stored block about to be erased. REQUIRES: `block` is stored.
  void PrefetchBlock(int32_t block) const { __builtin_prefetch(&slots_[Home(lows_[static_cast<size_t>(block)])]); }

 private:
  struct Slot {
    uint32_t low = 0;    // low 32 bits of the key: its home slot and a first filter
    int32_t block = -1;  // -1: empty
  };
  size_t Home(uint32_t low) const { return low & mask_; }
  // The slot holding `key`, or the empty slot where its probe sequence ends.
  size_t ProbeKey(const BlockHash& key) const {
    const auto low = static_cast<uint32_t>(key.lo);
    size_t i = Home(low);
    while (slots_[i].block >= 0 && !(slots_[i].low == low && keys_[static_cast<size_t>(slots_[i].block)] == key)) {
      i = (i + 1) & mask_;
    }
    return i;
  }
  // Empties slot `hole` and shifts the rest of its cluster back over it.
  void RemoveAt(size_t hole) {
    // Backward shift: move each following entry of the cluster into the hole when the
    // hole lies on its probe path (between its home slot and its slot, cyclically).
    for (size_t next = (hole + 1) & mask_; slots_[next].block >= 0; next = (next + 1) & mask_) {
      const size_t home = Home(slots_[next].low);
      if (((hole - home) & mask_) < ((next - home) & mask_)) {
        slots_[hole] = slots_[next];
        hole = next;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }
  // Sizes the table at the first insert, so an index that is never used costs nothing.
  void AllocateTable();

  int64_t max_entries_;
  std::vector<Slot> slots_;
  std::vector<BlockHash> keys_;  // by block id; meaningful only for stored blocks
  // keys_[b].lo's low 32 bits, apart: erasing a block needs only its home slot, and this
  // array is a quarter of keys_, so it stays in cache where keys_ does not.
  std::vector<uint32_t> lows_;
  size_t mask_ = 0;
  int64_t size_ = 0;
};

}  // namespace fleetplan
