// KvBlockPool: the paged KV cache of one replica, as block bookkeeping, with the prefix
// index of the prefix cache.
//
// Owns a fixed number of blocks (from the memory plan), each `block_tokens` tokens of KV
// on every rank of the replica. A block is either
//   - referenced (refcount >= 1): part of at least one live request's KV, or
//   - free (refcount == 0): on the free list, available to Allocate.
// Independently, a block may be published: its content is sealed and the prefix index
// maps its BlockHash (block_hash.h) to it, so later requests can share it. A published
// block on the free list is "cached, evictable": Find still returns it, Acquire takes it
// off the free list, and Allocate reusing it evicts it (drops its index entry).
//
//   state            refcount  on free list  in index
//   private          >= 1      no            no
//   shared/sealed    >= 1      no            yes      (Publish)
//   cached           0         yes           yes      (last Release of a published block)
//   free             0         yes           no       (last Release of a private block,
//                                                      eviction, invalidation)
//
// The free list is intrusive (prev/next arrays indexed by block id) and its order is the
// reuse order, hence the eviction order (LRU): Allocate takes from the head, Release
// appends at the tail. Release takes a request's blocks in reverse, so a finished
// request's tail block is reused before its head (the head is the most shareable).
// Invalidation moves the blocks it unpublishes to the head: they hold nothing reusable.
// A block's eviction is decided by this order and the budget alone.
//
// Each published block carries a CacheTag (namespace, adapter, publishing class) for
// invalidation and accounting; evictions and invalidations are counted per class.
//
// Invariants (CheckInvariants recomputes each from scratch):
//   free_count() == blocks on the free list == blocks with refcount 0;
//   used_count() + free_count() == total(); total_refs() == sum of refcounts;
//   list links are mutually consistent;
//   the index and the published flags are a bijection (entry h -> b iff b is published
//   with hash h); evictable_count() == published blocks with refcount 0;
//   published_total() == cached_count() + evictions() + invalidations().
// Thread model: single-threaded; deterministic (the index is lookup-only; nothing
// iterates it into a result).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/engine/block_hash.h"
#include "fleetplan/engine/block_index.h"

namespace fleetplan {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

// What a published block belongs to, for invalidation and per-class accounting.
struct CacheTag {
  int32_t ns = -1;        // tenant namespace (engine.h: PrefixCacheConfig)
  int32_t adapter = -1;   // kNoAdapter for the base model
  int32_t class_id = 0;   // class of the request that published it
  bool operator==(const CacheTag&) const = default;
};

class KvBlockPool {
 public:
  // REQUIRES: total_blocks >= 0 and fits in int32.
  explicit KvBlockPool(int64_t total_blocks);

  int64_t total() const { return static_cast<int64_t>(refcount_.size()); }
  int64_t free_count() const { return free_count_; }
  int64_t used_count() const { return total() - free_count_; }
  int64_t total_refs() const { return refs_; }

  // Appends `n` blocks from the free-list head to `out` and takes one reference on each;
  // a cached block among them is evicted. Returns false, changing nothing, when fewer
  // than `n` are free.
  bool Allocate(int64_t n, std::vector<BlockId>& out);
  // Drops one reference on each block, last to first; blocks reaching zero go to the
  // free-list tail (published ones stay in the index as cached). REQUIRES: every block
  // referenced.
  void Release(std::span<const BlockId> blocks);
  // Takes one more reference (sharing). REQUIRES: block referenced.
  void AddRef(BlockId block);

  // --- prefix index ---------------------------------------------------------------
  // The published block with this hash, or kNoBlock. Takes no reference.
  BlockId Find(const BlockHash& hash) const;
  // Takes a reference on a published block (a hit); a cached block leaves the free list.
  // REQUIRES: published(block).
  void Acquire(BlockId block);
  // Seals a referenced, unpublished block under `hash`. Returns false, changing nothing,
  // when another block already holds `hash` (two writers computed the same content: the
  // second copy stays private). REQUIRES: refcount(block) >= 1, !published(block).
  bool Publish(BlockId block, const BlockHash& hash, const CacheTag& tag);
  // Unpublishes every published block whose tag satisfies `matches`, in block-id order:
  // lookups stop finding them at once; referenced ones become private and are freed when
  // their last reference drops; free ones move to the free-list head. Returns the count.
  int64_t Invalidate(const std::function<bool(const CacheTag&)>& matches);

  int32_t refcount(BlockId block) const { return refcount_[static_cast<size_t>(block)]; }
  bool published(BlockId block) const { return published_[static_cast<size_t>(block)] != 0; }
  // REQUIRES: published(block).
  const BlockHash& hash(BlockId block) const { return hash_[static_cast<size_t>(block)]; }
  const CacheTag& tag(BlockId block) const { return tag_[static_cast<size_t>(block)]; }

  int64_t cached_count() const { return index_.size(); }
  // A hint that `hash` is about to be published or looked up (BlockIndex::Prefetch).
  void PrefetchIndex(const BlockHash& hash) const { index_.Prefetch(hash); }  // published blocks
  int64_t evictable_count() const { return evictable_; }  // published blocks on the free list
  int64_t published_total() const { return published_total_; }
  int64_t evictions() const { return evictions_; }
  int64_t invalidations() const { return invalidations_; }
  // Per class id of the block's tag; shorter than the largest class id when none seen.
  const std::vector<int64_t>& evictions_by_class() const { return evictions_by_class_; }
  const std::vector<int64_t>& invalidations_by_class() const { return invalidations_by_class_; }

  // Free blocks from head (next reused) to tail.
  std::vector<BlockId> FreeListOrder() const;

  // Recomputes every counter and link; returns a description of the first violation.
  Status CheckInvariants() const;

 private:
  void PushTail(BlockId b);
  void PushHead(BlockId b);
  void Unlink(BlockId b);
  BlockId PopHead();
  void Unpublish(BlockId b, std::vector<int64_t>& by_class);
  Status CheckFreeList(int64_t& listed) const;
  Status CheckIndex() const;

  std::vector<int32_t> refcount_;
  std::vector<BlockId> prev_;
  std::vector<BlockId> next_;
  std::vector<uint8_t> published_;  // 0/1 (vector<bool> is slow to index)
  std::vector<BlockHash> hash_;
  std::vector<CacheTag> tag_;
  BlockIndex index_;  // published blocks by identity; lookup only, never iterated
  BlockId head_ = kNoBlock;
  BlockId tail_ = kNoBlock;
  int64_t free_count_ = 0;
  int64_t refs_ = 0;
  int64_t evictable_ = 0;
  int64_t published_total_ = 0;
  int64_t evictions_ = 0;
  int64_t invalidations_ = 0;
  std::vector<int64_t> evictions_by_class_;
  std::vector<int64_t> invalidations_by_class_;
};

// Blocks needed to hold `tokens` tokens. REQUIRES: block_tokens > 0, tokens >= 0.
inline int64_t BlocksForTokens(int64_t tokens, int64_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

}  // namespace fleetplan
