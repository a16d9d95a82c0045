// DeadlineQueue: the waiting queue's deadlines, a monotone priority queue (a radix heap)
// from which a step takes every stay whose deadline has passed.
//
// Why not a binary heap: under overload the queue holds tens of thousands of stays and
// about one expires per step; std::pop_heap walks the heap's ~17 levels, each a cold
// cache line, for every entry it removes (6-8% of the overloaded engine benchmark,
// docs/PERFORMANCE.md "Engine under overload"). The engine never asks for one minimum,
// only for "everything due by now", and `now` never goes back, which a radix heap
// answers with sequential work:
//   - every entry sits in the bucket named by the highest bit in which its key differs
//     from the floor (the last `now` taken): bucket 0 holds keys <= floor, bucket b >= 1
//     keys above it whose highest differing bit is b - 1;
//   - Push appends to its bucket: O(1);
//   - PopUpTo(now): with j the bucket `now` itself falls in, buckets 0 .. j-1 hold only
//     keys <= now (all taken, as whole vectors), buckets above j only keys > now (kept,
//     and still in the right bucket once the floor becomes now), and bucket j is split:
//     its keys <= now taken, the others moved to lower buckets under the new floor.
//     An entry only ever moves to a lower bucket, so it moves at most 64 times over
//     its life (about log2(deadline horizon / step time) in practice), each move a
//     sequential copy.
// Keys are SimTime nanoseconds with the sign bit flipped, so unsigned order is time
// order for any int64 value.
//
// The entries taken come out in no particular (but deterministic) order: the caller
// orders them (the engine sorts expired stays by queue position). Stale entries are the
// caller's business too: it filters what PopUpTo hands out and compacts with EraseIf.
// Thread model: single-threaded; deterministic (the same calls give the same order).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

// One stay in the waiting queue with a deadline: its slot and queue position name it.
struct DeadlineStay {
  SimTime deadline;
  int64_t pos = 0;
  int32_t slot = 0;
};

class DeadlineQueue {
 public:
  // Adds a stay. A deadline at or before the floor is due at the next PopUpTo.
  void Push(const DeadlineStay& stay) {
    Append(BucketOf(Key(stay.deadline), floor_), stay);
    ++size_;
  }

  // Appends to `out` every entry whose deadline is <= now and makes now the floor.
  // REQUIRES: now is not before the previous call's now.
  void PopUpTo(SimTime now, std::vector<DeadlineStay>& out);

  // Removes the entries for which pred(entry) is true (compaction of stale stays).
  template <typename Pred>
  void EraseIf(Pred pred) {
    for (size_t b = 0; b < kBuckets; ++b) {
      size_ -= std::erase_if(buckets_[b], pred);
      if (b > 0 && buckets_[b].empty()) occupied_ &= ~Bit(b);
    }
  }

  template <typename Fn>
  void ForEach(Fn fn) const {
    for (const std::vector<DeadlineStay>& b : buckets_) {
      for (const DeadlineStay& s : b) fn(s);
    }
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Every entry is in the bucket its key and the floor name, and size() counts them.
  Status CheckInvariants() const;

 private:
  static constexpr size_t kBuckets = 65;
  static uint64_t Key(SimTime t) { return static_cast<uint64_t>(t.ns()) ^ (uint64_t{1} << 63); }
  static size_t BucketOf(uint64_t key, uint64_t floor) {
    return key <= floor ? 0 : static_cast<size_t>(64 - std::countl_zero(key ^ floor));
  }
  static uint64_t Bit(size_t bucket) { return uint64_t{1} << (bucket - 1); }  // REQUIRES: bucket >= 1
  void Append(size_t bucket, const DeadlineStay& stay) {
    buckets_[bucket].push_back(stay);
    if (bucket > 0) occupied_ |= Bit(bucket);
  }

  std::array<std::vector<DeadlineStay>, kBuckets> buckets_;
  // Bit b - 1 set iff bucket b >= 1 is non-empty, so a step skips the empty buckets below
  // the one now falls in (about log2 of the step time of them) without touching them.
  uint64_t occupied_ = 0;
  std::vector<DeadlineStay> split_;  // PopUpTo's scratch: the bucket being split
  uint64_t floor_ = 0;               // Key of the last PopUpTo's now (0: before any)
  size_t size_ = 0;
};

}  // namespace fleetplan
