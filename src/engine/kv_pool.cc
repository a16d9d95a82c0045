#include "fleetplan/engine/kv_pool.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "fleetplan/core/registry.h"

namespace fleetplan {

namespace {
inline void CountForClass(std::vector<int64_t>& by_class, int32_t class_id) {
  const auto c = static_cast<size_t>(class_id < 0 ? 0 : class_id);
  if (by_class.size() <= c) by_class.resize(c + 1, 0);
  ++by_class[c];
}
}  // namespace

KvBlockPool::KvBlockPool(int64_t total_blocks) {
  FP_ASSERT(total_blocks >= 0 && total_blocks <= std::numeric_limits<int32_t>::max());
  num_blocks_ = static_cast<uint32_t>(total_blocks);
  constexpr size_t kFirstRing = 64;  // grown by MakeRingRoom
  ring_.assign(kFirstRing, kNoBlock);
  ring_mask_ = static_cast<uint32_t>(kFirstRing - 1);
  free_count_ = total_blocks;  // all of them the untouched run, at position 0
}

BlockId KvBlockPool::TakeUntouched() {
  state_.emplace_back();
  if (chains_on_) chain_.emplace_back();
  return static_cast<BlockId>(untouched_++);
}

void KvBlockPool::MakeRingRoom() {
  const size_t capacity = size_t{ring_mask_} + 1;
  if (static_cast<size_t>(holes_) * 2 >= capacity) {
    Compact();
    return;
  }
  FP_ASSERT(capacity * 2 <= (size_t{1} << 32));  // positions are 32-bit
  std::vector<BlockId> grown(capacity * 2, kNoBlock);
  const auto grown_mask = static_cast<uint32_t>(capacity * 2 - 1);
  // Same positions, a wider mask: the span is under the old capacity, so no two meet.
  for (uint32_t p = head_; p != tail_; ++p) grown[p & grown_mask] = RingAt(p);
  ring_ = std::move(grown);
  ring_mask_ = grown_mask;
}

void KvBlockPool::Compact() {
  uint32_t to = head_;
  uint32_t untouched_pos = head_;
  for (uint32_t from = head_; from != tail_; ++from) {
    if (from == untouched_pos_) untouched_pos = to;
    const BlockId b = RingAt(from);
    if (b == kNoBlock) continue;
    RingAt(to) = b;  // to <= from: nothing unread is overwritten
    state_[Idx(b)].pos = to;
    ++to;
  }
  for (uint32_t p = to; p != tail_; ++p) RingAt(p) = kNoBlock;
  if (untouched_pos_ == tail_) untouched_pos = to;
  if (HasUntouched()) untouched_pos_ = untouched_pos;
  tail_ = to;
  holes_ = 0;
}

void KvBlockPool::SkipEndHoles() {
  const bool run = HasUntouched();
  while (head_ != tail_ && RingAt(head_) == kNoBlock && !(run && head_ == untouched_pos_)) {
    ++head_;
    --holes_;
  }
  while (head_ != tail_ && RingAt(tail_ - 1) == kNoBlock && !(run && tail_ == untouched_pos_)) {
    --tail_;
    --holes_;
  }
}

void KvBlockPool::PushTail(BlockId b) {
  if (tail_ - head_ > ring_mask_) MakeRingRoom();
  RingAt(tail_) = b;
  state_[Idx(b)].pos = tail_++;
  ++free_count_;
}

void KvBlockPool::PushHead(BlockId b) {
  if (tail_ - head_ > ring_mask_) MakeRingRoom();
  RingAt(--head_) = b;
  state_[Idx(b)].pos = head_;
  ++free_count_;
}

void KvBlockPool::Unlink(BlockId b) {
  FP_ASSERT(static_cast<uint32_t>(b) < untouched_);  // only published blocks are unlinked
  RingAt(state_[Idx(b)].pos) = kNoBlock;
  ++holes_;
  --free_count_;
  SkipEndHoles();  // keep the ends on blocks
}

inline BlockId KvBlockPool::PopHead() {
  --free_count_;
  if (HasUntouched() && head_ == untouched_pos_) {
    const BlockId b = TakeUntouched();
    if (!HasUntouched()) SkipEndHoles();  // the holes the run's position kept are ends now
    return b;
  }
  const BlockId b = RingAt(head_);
  RingAt(head_++) = kNoBlock;
  SkipEndHoles();
  return b;
}

namespace {
// heads_by_parent_ holds counts as its values.
void CountUp(BlockIndex& counts, const BlockHash& key) {
  const int32_t n = counts.Find(key);
  if (n > 0) counts.Erase(key);
  counts.Insert(key, std::max(n, 0) + 1);
}
void CountDown(BlockIndex& counts, const BlockHash& key) {
  const int32_t n = counts.Find(key);
  FP_ASSERT(n > 0);
  counts.Erase(key);
  if (n > 1) counts.Insert(key, n - 1);
}
}  // namespace

void KvBlockPool::AddHead(BlockId b, const BlockHash* parent_identity) {
  ChainEntry& entry = chain_[Idx(b)];
  const bool inserted = index_.Insert(entry.key, b);
  FP_ASSERT(inserted);
  entry.prev = kNoBlock;
  if (parent_identity == nullptr) return;
  entry.prev = kHungHead;
  if (head_parents_.size() <= Idx(b)) head_parents_.resize(untouched_, BlockHash{});
  head_parents_[Idx(b)] = *parent_identity;
  CountUp(heads_by_parent_, *parent_identity);
}

void KvBlockPool::RemoveHead(BlockId b) {
  const ChainEntry& entry = chain_[Idx(b)];
  const bool erased = index_.Erase(entry.key);
  FP_ASSERT(erased);
  if (entry.prev == kHungHead) CountDown(heads_by_parent_, head_parents_[Idx(b)]);
}

inline void KvBlockPool::Unpublish(BlockId b, std::vector<int64_t>& by_class) {
  BlockState& s = state_[Idx(b)];
  ChainEntry& entry = chain_[Idx(b)];
  if (entry.prev < 0) {
    RemoveHead(b);
  } else {
    chain_[Idx(entry.prev)].next = kNoBlock;
  }
  if (entry.next != kNoBlock) AddHead(entry.next, &entry.key);  // the child hangs off b's identity now
  entry.prev = entry.next = kNoBlock;
  if (s.refs == 0) --evictable_;
  CountForClass(by_class, tags_[static_cast<size_t>(s.tag)].class_id);
  s.tag = kUnpublished;
  --published_count_;
}

bool KvBlockPool::Allocate(int64_t n, std::vector<BlockId>& out) {
  FP_ASSERT(n >= 0);
  if (n > free_count_) return false;
  if (n > 1 && chains_on_) {
    // With the cache on, the pool's per-block state no longer fits in the nearer
    // processor caches, and each block taken reads its state and, if cached, its chain
    // entry (and its parent's, usually the next block in the list: a request's blocks
    // are released tail first). The ring gives the ids of all n blocks without reading
    // any state, so start loading them all first: the misses overlap instead of
    // queueing one behind another (docs/PERFORMANCE.md "Engine", fourth round).
    // Ring entries only: the untouched run's ids are consecutive, which the hardware
    // prefetcher follows by itself.
    const uint32_t stop = HasUntouched() ? untouched_pos_ : tail_;
    uint32_t p = head_;
    for (int64_t i = 0; i < n && p != stop; ++p) {
      const BlockId ahead = RingAt(p);
      if (ahead == kNoBlock) continue;
      __builtin_prefetch(&state_[Idx(ahead)]);
      __builtin_prefetch(&chain_[Idx(ahead)]);
      ++i;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const BlockId b = PopHead();
    BlockState& s = state_[Idx(b)];
    if (s.tag != kUnpublished) {  // cached: evicted by this reuse
      Unpublish(b, evictions_by_class_);
      ++evictions_;
    }
    s.refs = 1;
    out.push_back(b);
  }
  refs_ += n;
  if (chains_on_ && head_ != tail_ && !(HasUntouched() && head_ == untouched_pos_)) {
    // The next allocation starts here; most are of one block (a decode crossing a block
    // boundary), which the loop above cannot prefetch for. Start loading it now.
    __builtin_prefetch(&state_[Idx(RingAt(head_))]);
    __builtin_prefetch(&chain_[Idx(RingAt(head_))]);
  }
  return true;
}

void KvBlockPool::Release(std::span<const BlockId> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const BlockId b = *it;
    FP_ASSERT(IsTouched(b) && state_[Idx(b)].refs > 0);
    --refs_;
    if (--state_[Idx(b)].refs > 0) continue;
    PushTail(b);
    if (state_[Idx(b)].tag != kUnpublished) ++evictable_;
  }
}

void KvBlockPool::AddRef(BlockId block) {
  FP_ASSERT(IsTouched(block) && state_[Idx(block)].refs > 0);
  ++state_[Idx(block)].refs;
  ++refs_;
}

void KvBlockPool::Acquire(BlockId block) {
  FP_ASSERT(IsTouched(block) && state_[Idx(block)].tag != kUnpublished);
  if (state_[Idx(block)].refs == 0) {
    Unlink(block);
    --evictable_;
  }
  ++state_[Idx(block)].refs;
  ++refs_;
}

int32_t KvBlockPool::InternTag(const CacheTag& tag) {
  if (last_tag_id_ != kUnpublished && tags_[static_cast<size_t>(last_tag_id_)] == tag) return last_tag_id_;
  const auto [it, added] =
      tag_ids_.try_emplace(std::make_tuple(tag.ns, tag.adapter, tag.class_id), static_cast<int32_t>(tags_.size()));
  if (added) tags_.push_back(tag);
  last_tag_id_ = it->second;
  return last_tag_id_;
}

void KvBlockPool::EnsureChainStorage() {
  if (chains_on_) return;
  chains_on_ = true;
  chain_.assign(untouched_, ChainEntry{});
}

[[gnu::always_inline]] inline BlockId KvBlockPool::PublishInterned(BlockId block, const BlockHash& hash,
                                                                   int32_t tag_id, BlockId parent,
                                                                   const BlockHash* parent_identity) {
  FP_ASSERT(IsTouched(block));
  BlockState& s = state_[Idx(block)];
  FP_ASSERT(s.refs >= 1 && s.tag == kUnpublished);
  if (const BlockId holder = FindNext(parent, hash); holder != kNoBlock) return holder;
  ChainEntry& entry = chain_[Idx(block)];
  entry.key = hash;
  if (parent != kNoBlock && chain_[Idx(parent)].next == kNoBlock) {
    chain_[Idx(parent)].next = block;
    entry.prev = parent;
  } else {
    AddHead(block, parent_identity);  // FindNext found no holder, so the hash is new
  }
  s.tag = tag_id;
  ++published_total_;
  ++published_count_;
  return block;
}

void KvBlockPool::CheckParent(BlockId parent, const BlockHash* parent_identity) const {
  FP_ASSERT(parent == kNoBlock || (IsTouched(parent) && state_[Idx(parent)].tag != kUnpublished &&
                                   parent_identity != nullptr && chain_[Idx(parent)].key == *parent_identity));
}

bool KvBlockPool::Publish(BlockId block, const BlockHash& hash, const CacheTag& tag, BlockId parent,
                          const BlockHash* parent_identity) {
  EnsureChainStorage();
  CheckParent(parent, parent_identity);
  return PublishInterned(block, hash, InternTag(tag), parent, parent_identity) == block;
}

int64_t KvBlockPool::PublishAll(std::span<const BlockId> blocks, std::span<const BlockHash> hashes,
                                const CacheTag& tag, BlockId parent, const BlockHash* parent_identity,
                                BlockId* last_holder) {
  FP_ASSERT(blocks.size() == hashes.size());
  if (blocks.empty()) return 0;
  EnsureChainStorage();
  CheckParent(parent, parent_identity);  // the later parents come from this loop
  const int32_t tag_id = InternTag(tag);
  const int64_t before = published_total_;
  for (size_t i = 0; i < blocks.size(); ++i) {
    parent = PublishInterned(blocks[i], hashes[i], tag_id, parent, i == 0 ? parent_identity : &hashes[i - 1]);
  }
  if (last_holder != nullptr) *last_holder = parent;
  return published_total_ - before;
}

int64_t KvBlockPool::Invalidate(const std::function<bool(const CacheTag&)>& matches) {
  std::vector<char> tag_matches(tags_.size());
  for (size_t t = 0; t < tags_.size(); ++t) tag_matches[t] = matches(tags_[t]) ? 1 : 0;
  int64_t removed = 0;
  for (BlockId b = 0; b < static_cast<BlockId>(untouched_); ++b) {  // untouched blocks were never published
    const int32_t t = state_[Idx(b)].tag;
    if (t == kUnpublished || tag_matches[static_cast<size_t>(t)] == 0) continue;
    Unpublish(b, invalidations_by_class_);
    ++invalidations_;
    ++removed;
    if (state_[Idx(b)].refs == 0) {
      Unlink(b);
      PushHead(b);
    }
  }
  return removed;
}

std::vector<BlockId> KvBlockPool::FreeListOrder() const {
  std::vector<BlockId> order;
  order.reserve(static_cast<size_t>(free_count_));
  auto untouched_run = [&] {
    for (uint32_t b = untouched_; b < num_blocks_; ++b) order.push_back(static_cast<BlockId>(b));
  };
  for (uint32_t p = head_; p != tail_; ++p) {
    if (HasUntouched() && p == untouched_pos_) untouched_run();
    if (RingAt(p) != kNoBlock) order.push_back(RingAt(p));
  }
  if (HasUntouched() && tail_ == untouched_pos_) untouched_run();
  return order;
}

Status KvBlockPool::CheckFreeList(int64_t& listed) const {
  listed = 0;
  if (tail_ - head_ > ring_mask_ + 1) {
    return InternalError(fmt::format("free list spans {} positions of a ring of {}", tail_ - head_, ring_.size()));
  }
  int64_t holes = 0;
  for (uint32_t p = head_; p != tail_; ++p) {
    const BlockId b = RingAt(p);
    if (b == kNoBlock) {
      ++holes;
      continue;
    }
    if (b < 0 || static_cast<uint32_t>(b) >= untouched_) {
      return InternalError(fmt::format("free list holds block id {} (blocks ever used: {})", b, untouched_));
    }
    if (state_[Idx(b)].refs != 0) {
      return InternalError(fmt::format("block {} on the free list has refcount {}", b, state_[Idx(b)].refs));
    }
    // A block records one position, so this also makes every listed block distinct.
    if (state_[Idx(b)].pos != p) return InternalError(fmt::format("block {} is listed away from its position", b));
    ++listed;
  }
  if (holes != holes_) return InternalError(fmt::format("the free list has {} holes but counts {}", holes, holes_));
  const bool run = HasUntouched();
  if (run && (untouched_pos_ - head_ > tail_ - head_)) {
    return InternalError("the untouched blocks are listed outside the free list");
  }
  if (head_ != tail_ && ((RingAt(head_) == kNoBlock && !(run && head_ == untouched_pos_)) ||
                         (RingAt(tail_ - 1) == kNoBlock && !(run && tail_ == untouched_pos_)))) {
    return InternalError("the free list starts or ends with a hole");
  }
  listed += num_blocks_ - untouched_;
  for (uint32_t p = tail_; p != head_ + ring_mask_ + 1; ++p) {
    if (RingAt(p) != kNoBlock) return InternalError("the ring holds a block outside the free list");
  }
  return Status::Ok();
}

Status KvBlockPool::CheckIndex() const {
  int64_t published = 0;
  int64_t evictable = 0;
  int64_t heads = 0;
  std::vector<BlockHash> hashes;
  std::map<BlockHash, int32_t> hung_off;  // identity -> heads hung off it
  for (BlockId b = 0; b < static_cast<BlockId>(untouched_); ++b) {  // CheckInvariants checked the others
    const int32_t t = state_[Idx(b)].tag;
    const ChainEntry links = chains_on_ ? chain_[Idx(b)] : ChainEntry{};
    if (t == kUnpublished) {
      if (links.prev != kNoBlock || links.next != kNoBlock) {
        return InternalError(fmt::format("unpublished block {} is linked into a chain", b));
      }
      continue;
    }
    if (t < 0 || static_cast<size_t>(t) >= tags_.size()) {
      return InternalError(fmt::format("published block {} has tag id {} of {}", b, t, tags_.size()));
    }
    ++published;
    hashes.push_back(hash(b));
    if (state_[Idx(b)].refs == 0) ++evictable;
    if (links.prev < 0) {
      ++heads;
      if (index_.Find(hash(b)) != b) {
        return InternalError(fmt::format("chain head {} is not what the index holds for its hash", b));
      }
      if (links.prev == kHungHead) ++hung_off[head_parents_[Idx(b)]];
    } else if (state_[Idx(links.prev)].tag == kUnpublished || chain_[Idx(links.prev)].next != b) {
      return InternalError(fmt::format("block {} hangs off block {}, which does not link back", b, links.prev));
    }
    if (links.next != kNoBlock && chain_[Idx(links.next)].prev != b) {
      return InternalError(fmt::format("block {} links to child {}, which does not link back", b, links.next));
    }
  }
  // Every head is found under its own hash, so equal sizes mean the index holds nothing else.
  if (heads != index_.size()) {
    return InternalError(fmt::format("{} chain heads are published but the index has {} entries", heads,
                                     index_.size()));
  }
  for (const auto& [identity, count] : hung_off) {
    if (heads_by_parent_.Find(identity) != count) {
      return InternalError(fmt::format("{} heads hang off an identity that counts {}", count,
                                       heads_by_parent_.Find(identity)));
    }
  }
  if (heads_by_parent_.size() != static_cast<int64_t>(hung_off.size())) {
    return InternalError(fmt::format("heads hang off {} identities but {} are counted", hung_off.size(),
                                     heads_by_parent_.size()));
  }
  std::sort(hashes.begin(), hashes.end());
  if (std::adjacent_find(hashes.begin(), hashes.end()) != hashes.end()) {
    return InternalError("two published blocks hold the same identity");
  }
  // Every published block is found under its own hash, so equal sizes make a bijection.
  if (published != cached_count()) {
    return InternalError(fmt::format("{} blocks are published but {} are counted", published, cached_count()));
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
  if (untouched_ > num_blocks_) return InternalError(fmt::format("{} of {} blocks used", untouched_, num_blocks_));
  if (state_.size() != untouched_ || (chains_on_ && chain_.size() != untouched_) || head_parents_.size() > untouched_) {
    return InternalError(fmt::format("{} blocks handed out but {} records, {} chain entries, {} head parents",
                                     untouched_, state_.size(), chain_.size(), head_parents_.size()));
  }
  int64_t zero_refs = num_blocks_ - untouched_;
  int64_t refs = 0;
  for (size_t i = 0; i < untouched_; ++i) {
    const int32_t r = state_[i].refs;
    if (r < 0) return InternalError(fmt::format("block {} has refcount {}", i, r));
    if (r == 0) ++zero_refs;
    refs += r;
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

const std::vector<EvictionPolicyRow>& EvictionPolicies() {
  static const std::vector<EvictionPolicyRow> rows = {
      {"lru", "least recently released first: the free list's order"},
  };
  return rows;
}

const std::vector<std::string>& EvictionPolicyNames() {
  static const std::vector<std::string> names = RowNames(EvictionPolicies());
  return names;
}

}  // namespace fleetplan
