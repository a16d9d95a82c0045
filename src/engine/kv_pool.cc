#include "fleetplan/engine/kv_pool.h"

#include <limits>

#include <fmt/format.h>

namespace fleetplan {

namespace {
size_t Idx(BlockId b) { return static_cast<size_t>(b); }

void CountForClass(std::vector<int64_t>& by_class, int32_t class_id) {
  const auto c = static_cast<size_t>(class_id < 0 ? 0 : class_id);
  if (by_class.size() <= c) by_class.resize(c + 1, 0);
  ++by_class[c];
}
}  // namespace

KvBlockPool::KvBlockPool(int64_t total_blocks) : index_(total_blocks) {
  FP_ASSERT(total_blocks >= 0 && total_blocks <= std::numeric_limits<int32_t>::max());
  const auto n = static_cast<size_t>(total_blocks);
  refcount_.assign(n, 0);
  prev_.assign(n, kNoBlock);
  next_.assign(n, kNoBlock);
  published_.assign(n, 0);
  hash_.assign(n, BlockHash{});
  tag_.assign(n, CacheTag{});
  for (BlockId b = 0; b < static_cast<BlockId>(total_blocks); ++b) PushTail(b);
}

void KvBlockPool::PushTail(BlockId b) {
  prev_[Idx(b)] = tail_;
  next_[Idx(b)] = kNoBlock;
  if (tail_ != kNoBlock) {
    next_[Idx(tail_)] = b;
  } else {
    head_ = b;
  }
  tail_ = b;
  ++free_count_;
}

void KvBlockPool::PushHead(BlockId b) {
  next_[Idx(b)] = head_;
  prev_[Idx(b)] = kNoBlock;
  if (head_ != kNoBlock) {
    prev_[Idx(head_)] = b;
  } else {
    tail_ = b;
  }
  head_ = b;
  ++free_count_;
}

void KvBlockPool::Unlink(BlockId b) {
  const BlockId p = prev_[Idx(b)];
  const BlockId n = next_[Idx(b)];
  if (p != kNoBlock) {
    next_[Idx(p)] = n;
  } else {
    head_ = n;
  }
  if (n != kNoBlock) {
    prev_[Idx(n)] = p;
  } else {
    tail_ = p;
  }
  prev_[Idx(b)] = kNoBlock;
  next_[Idx(b)] = kNoBlock;
  --free_count_;
}

BlockId KvBlockPool::PopHead() {
  const BlockId b = head_;
  Unlink(b);
  return b;
}

void KvBlockPool::Unpublish(BlockId b, std::vector<int64_t>& by_class) {
  const bool erased = index_.Erase(hash_[Idx(b)]);
  FP_ASSERT(erased);
  published_[Idx(b)] = 0;
  if (refcount_[Idx(b)] == 0) --evictable_;
  CountForClass(by_class, tag_[Idx(b)].class_id);
}

bool KvBlockPool::Allocate(int64_t n, std::vector<BlockId>& out) {
  FP_ASSERT(n >= 0);
  if (n > free_count_) return false;
  // The blocks to be taken are the first n of the free list; start loading the index
  // slots of the cached ones among them before evicting any (see BlockIndex::Prefetch).
  BlockId ahead = head_;
  for (int64_t i = 0; i < n && ahead != kNoBlock; ++i, ahead = next_[Idx(ahead)]) {
    if (published_[Idx(ahead)] != 0) index_.Prefetch(hash_[Idx(ahead)]);
  }
  for (int64_t i = 0; i < n; ++i) {
    const BlockId b = PopHead();
    if (published_[Idx(b)] != 0) {
      Unpublish(b, evictions_by_class_);
      ++evictions_;
    }
    refcount_[Idx(b)] = 1;
    ++refs_;
    out.push_back(b);
  }
  return true;
}

void KvBlockPool::Release(std::span<const BlockId> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const BlockId b = *it;
    FP_ASSERT(b >= 0 && Idx(b) < refcount_.size() && refcount_[Idx(b)] > 0);
    --refs_;
    if (--refcount_[Idx(b)] > 0) continue;
    PushTail(b);
    if (published_[Idx(b)] != 0) ++evictable_;
  }
}

void KvBlockPool::AddRef(BlockId block) {
  FP_ASSERT(block >= 0 && Idx(block) < refcount_.size() && refcount_[Idx(block)] > 0);
  ++refcount_[Idx(block)];
  ++refs_;
}

BlockId KvBlockPool::Find(const BlockHash& hash) const {
  return index_.Find(hash);
}

void KvBlockPool::Acquire(BlockId block) {
  FP_ASSERT(block >= 0 && Idx(block) < refcount_.size() && published_[Idx(block)] != 0);
  if (refcount_[Idx(block)] == 0) {
    Unlink(block);
    --evictable_;
  }
  ++refcount_[Idx(block)];
  ++refs_;
}

bool KvBlockPool::Publish(BlockId block, const BlockHash& hash, const CacheTag& tag) {
  FP_ASSERT(block >= 0 && Idx(block) < refcount_.size());
  FP_ASSERT(refcount_[Idx(block)] >= 1 && published_[Idx(block)] == 0);
  if (!index_.Insert(hash, block)) return false;
  published_[Idx(block)] = 1;
  hash_[Idx(block)] = hash;
  tag_[Idx(block)] = tag;
  ++published_total_;
  return true;
}

int64_t KvBlockPool::Invalidate(const std::function<bool(const CacheTag&)>& matches) {
  int64_t removed = 0;
  for (BlockId b = 0; b < static_cast<BlockId>(total()); ++b) {
    if (published_[Idx(b)] == 0 || !matches(tag_[Idx(b)])) continue;
    Unpublish(b, invalidations_by_class_);
    ++invalidations_;
    ++removed;
    if (refcount_[Idx(b)] == 0) {
      Unlink(b);
      PushHead(b);
    }
  }
  return removed;
}

std::vector<BlockId> KvBlockPool::FreeListOrder() const {
  std::vector<BlockId> order;
  order.reserve(static_cast<size_t>(free_count_));
  for (BlockId b = head_; b != kNoBlock; b = next_[Idx(b)]) order.push_back(b);
  return order;
}

Status KvBlockPool::CheckFreeList(int64_t& listed) const {
  listed = 0;
  BlockId prev = kNoBlock;
  for (BlockId b = head_; b != kNoBlock; b = next_[Idx(b)]) {
    if (listed > total()) return InternalError("free list has a cycle");
    if (refcount_[Idx(b)] != 0) {
      return InternalError(fmt::format("block {} on the free list has refcount {}", b, refcount_[Idx(b)]));
    }
    if (prev_[Idx(b)] != prev) return InternalError(fmt::format("block {} has a broken prev link", b));
    prev = b;
    ++listed;
  }
  if (prev != tail_) return InternalError("free-list tail does not match the last listed block");
  return Status::Ok();
}

Status KvBlockPool::CheckIndex() const {
  int64_t published = 0;
  int64_t evictable = 0;
  for (BlockId b = 0; b < static_cast<BlockId>(total()); ++b) {
    if (published_[Idx(b)] == 0) continue;
    ++published;
    if (refcount_[Idx(b)] == 0) ++evictable;
    if (Find(hash_[Idx(b)]) != b) {
      return InternalError(fmt::format("published block {} is not what the index holds for its hash", b));
    }
  }
  // Every published block is found under its own hash, so equal sizes make a bijection.
  if (published != cached_count()) {
    return InternalError(fmt::format("{} blocks are published but the index has {} entries", published,
                                     cached_count()));
  }
  if (evictable != evictable_) {
    return InternalError(fmt::format("evictable count is {} but {} published blocks are free", evictable_, evictable));
  }
  if (published_total_ != cached_count() + evictions_ + invalidations_) {
    return InternalError(fmt::format("{} blocks were published but {} cached + {} evicted + {} invalidated",
                                     published_total_, cached_count(), evictions_, invalidations_));
  }
  int64_t by_class = 0;
  for (int64_t n : evictions_by_class_) by_class += n;
  if (by_class != evictions_) return InternalError("evictions by class do not add up to the total");
  by_class = 0;
  for (int64_t n : invalidations_by_class_) by_class += n;
  if (by_class != invalidations_) return InternalError("invalidations by class do not add up to the total");
  return Status::Ok();
}

Status KvBlockPool::CheckInvariants() const {
  int64_t zero_refs = 0;
  int64_t refs = 0;
  for (size_t i = 0; i < refcount_.size(); ++i) {
    if (refcount_[i] < 0) return InternalError(fmt::format("block {} has refcount {}", i, refcount_[i]));
    if (refcount_[i] == 0) ++zero_refs;
    refs += refcount_[i];
  }
  if (refs != refs_) return InternalError(fmt::format("total_refs is {} but the refcounts sum to {}", refs_, refs));
  int64_t listed = 0;
  FP_RETURN_IF_ERROR(CheckFreeList(listed));
  if (listed != zero_refs) {
    return InternalError(fmt::format("{} blocks have refcount 0 but {} are on the free list", zero_refs, listed));
  }
  if (listed != free_count_) {
    return InternalError(fmt::format("free_count is {} but the free list holds {}", free_count_, listed));
  }
  return CheckIndex();
}

}  // namespace fleetplan
