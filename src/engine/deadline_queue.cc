#include "fleetplan/engine/deadline_queue.h"

#include <fmt/format.h>

namespace fleetplan {

void DeadlineQueue::PopUpTo(SimTime now, std::vector<DeadlineStay>& out) {
  const uint64_t key = Key(now);
  FP_ASSERT(key >= floor_);
  const size_t before = out.size();
  // Bucket 0 is always due; below the bucket `now` falls in (0 when now is the floor),
  // every bucket is due whole.
  const size_t split = BucketOf(key, floor_);
  for (size_t b = 0; b < std::max<size_t>(split, 1); ++b) {
    out.insert(out.end(), buckets_[b].begin(), buckets_[b].end());
    buckets_[b].clear();
  }
  floor_ = key;
  if (split > 0) {
    split_.swap(buckets_[split]);  // the bucket now falls in: taken or moved lower
    for (const DeadlineStay& s : split_) {
      const size_t to = BucketOf(Key(s.deadline), floor_);
      FP_ASSERT(to < split);
      if (to == 0) {
        out.push_back(s);
      } else {
        buckets_[to].push_back(s);
      }
    }
    split_.clear();
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
  }
  if (counted != size_) {
    return InternalError(fmt::format("deadline queue holds {} entries but counts {}", counted, size_));
  }
  return Status::Ok();
}

}  // namespace fleetplan
