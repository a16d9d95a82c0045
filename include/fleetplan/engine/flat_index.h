// FlatIndex<Key, Home>: a hash table from a key to a non-negative int32 id (a block, a
// request's slot), for the engine's lookups that sit on its hot paths: the prefix
// cache's chain heads (BlockIndex, block_index.h) and live requests by id
// (RequestIndex, below).
//
// Why not std::unordered_map: profiling the engine benchmark with the cache on (perf,
// docs/PERFORMANCE.md "Engine") put 55% of the run in unordered_map's node lookups and
// erases, and under overload its node allocation and the pointer chase of every erase
// were ~8% of a step (docs/PERFORMANCE.md "Engine under overload"): one heap node per
// entry and a pointer chase per probe. The values here are dense ids, which a
// general-purpose map cannot exploit:
//   - open addressing over one array of slots (key and id), linear probing, the slot
//     being Home(key)'s low bits;
//   - erase shifts the following entries back (no tombstones), so probe sequences stay
//     as short as if the erased key had never been inserted;
//   - the capacity follows the size: a power of two, doubled when an insert would take
//     the load above 1/4 and halved when an erase leaves it below 1/16 (never below
//     kMinSlots). At load <= 1/4 an insert probes ~1.3 slots and an erase shifts ~0.3
//     entries; the factor of four between the two bounds makes resizing amortised O(1).
// `Home` maps a key to 64 well-mixed bits (its low bits pick the home slot).
// Nothing is allocated until the first insert. Never iterated into a result: its order
// cannot reach any output.
// Thread model: single-threaded.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "fleetplan/core/status.h"

namespace fleetplan {

template <typename Key, typename Home>
class FlatIndex {
 public:
  static constexpr size_t kMinSlots = 64;

  // The id stored under `key`, or -1.
  int32_t Find(const Key& key) const {
    if (slots_.empty()) return -1;
    return slots_[Probe(key)].id;
  }
  bool Contains(const Key& key) const { return Find(key) >= 0; }
  // Stores key -> id; false (changing nothing) when the key is present.
  // REQUIRES: id >= 0.
  bool Insert(const Key& key, int32_t id) {
    FP_ASSERT(id >= 0);
    if (4 * (size_ + 1) > slots_.size()) Resize(slots_.empty() ? kMinSlots : 2 * slots_.size());
    Slot& s = slots_[Probe(key)];
    if (s.id >= 0) return false;
    s = Slot{key, id};
    ++size_;
    return true;
  }
  // Removes `key`; false when absent.
  bool Erase(const Key& key) {
    if (slots_.empty()) return false;
    const size_t i = Probe(key);
    if (slots_[i].id < 0) return false;
    RemoveAt(i);
    if (16 * size_ < slots_.size() && slots_.size() > kMinSlots) Resize(slots_.size() / 2);
    return true;
  }
  int64_t size() const { return static_cast<int64_t>(size_); }
  // Slots in the table (0 before the first insert); for tests and benchmarks.
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    Key key{};
    int32_t id = -1;  // -1: empty
  };
  size_t HomeSlot(const Key& key) const { return static_cast<size_t>(Home{}(key)) & mask_; }
  // The slot holding `key`, or the empty slot where its probe sequence ends.
  size_t Probe(const Key& key) const {
    size_t i = HomeSlot(key);
    while (slots_[i].id >= 0 && !(slots_[i].key == key)) i = (i + 1) & mask_;
    return i;
  }
  // Empties slot `hole` and shifts the rest of its cluster back over it: each following
  // entry of the cluster moves into the hole when the hole lies on its probe path
  // (between its home slot and its slot, cyclically).
  void RemoveAt(size_t hole) {
    for (size_t next = (hole + 1) & mask_; slots_[next].id >= 0; next = (next + 1) & mask_) {
      const size_t home = HomeSlot(slots_[next].key);
      if (((hole - home) & mask_) < ((next - home) & mask_)) {
        slots_[hole] = slots_[next];
        hole = next;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }
  // Rebuilds the table with `capacity` slots (a power of two > 4 × size).
  void Resize(size_t capacity) {
    FP_ASSERT(capacity >= kMinSlots && (capacity & (capacity - 1)) == 0 && capacity > 4 * size_);
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(capacity));
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.id < 0) continue;
      size_t i = HomeSlot(s.key);
      while (slots_[i].id >= 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Request ids are often sequential or strided (one replica of many sees every R-th id),
// so they are mixed before their low bits pick a slot: a multiply by 2^64 / phi (odd),
// then the high half folded onto the low one, which the product's high bits depend on.
struct RequestIdHome {
  uint64_t operator()(int64_t id) const {
    const uint64_t x = static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL;
    return x ^ (x >> 32);
  }
};
// Live requests by id -> slot (the engine's Cancel, import and view lookups).
using RequestIndex = FlatIndex<int64_t, RequestIdHome>;

}  // namespace fleetplan
