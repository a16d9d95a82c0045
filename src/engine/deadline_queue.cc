#include "fleetplan/engine/deadline_queue.h"

#include <fmt/format.h>

namespace fleetplan {

void DeadlineQueue::PopUpTo(SimTime now, std::vector<DeadlineStay>& out) {
  const uint64_t key = Key(now);
  FP_ASSERT(key >= floor_);
  if (size_ == 0) {  // nothing to take: most steps of a workload without deadlines
    floor_ = key;
    return;
  }
  const size_t before = out.size();
  // Bucket 0 is always due; below the bucket `now` falls in (0 when now is the floor),
  // every bucket is due whole; above it, none is.
  const size_t split = BucketOf(key, floor_);
  floor_ = key;
  out.insert(out.end(), buckets_[0].begin(), buckets_[0].end());
  buckets_[0].clear();
  if (split > 0) {
    for (uint64_t due = occupied_ & (Bit(split) - 1); due != 0; due &= due - 1) {
      std::vector<DeadlineStay>& b = buckets_[static_cast<size_t>(std::countr_zero(due)) + 1];
      out.insert(out.end(), b.begin(), b.end());
      b.clear();
    }
    occupied_ &= ~(Bit(split) - 1);
    if ((occupied_ & Bit(split)) != 0) {
      occupied_ &= ~Bit(split);
      split_.swap(buckets_[split]);  // the bucket now falls in: taken or moved lower
      for (const DeadlineStay& s : split_) {
        const size_t to = BucketOf(Key(s.deadline), floor_);
        FP_ASSERT(to < split);
        if (to == 0) {
          out.push_back(s);
        } else {
          Append(to, s);
        }
      }
      split_.clear();
    }
  }
  size_ -= out.size() - before;
}

Status DeadlineQueue::CheckInvariants() const {
  size_t counted = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    for (const DeadlineStay& s : buckets_[b]) {
      if (BucketOf(Key(s.deadline), floor_) != b) {
        return InternalError(fmt::format("deadline queue: the stay at position {} (deadline {} ns) sits in bucket {}",
                                         s.pos, s.deadline.ns(), b));
      }
    }
    counted += buckets_[b].size();
    if (b > 0 && buckets_[b].empty() == ((occupied_ & Bit(b)) != 0)) {
      return InternalError(fmt::format("deadline queue: bucket {} is {} but marked otherwise", b,
                                       buckets_[b].empty() ? "empty" : "occupied"));
    }
  }
  if (counted != size_) {
    return InternalError(fmt::format("deadline queue holds {} entries but counts {}", counted, size_));
  }
  return Status::Ok();
}

}  // namespace fleetplan
