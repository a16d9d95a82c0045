// KvBlockPool: the paged KV cache of one replica, as block bookkeeping, with the prefix
// index of the prefix cache.
//
// Owns a fixed number of blocks (from the memory plan), each `block_tokens` tokens of KV
// on every rank of the replica. A block is either
//   - referenced (refcount >= 1): part of at least one live request's KV, or
//   - free (refcount == 0): on the free list, available to Allocate.
// Independently, a block may be published: its content is sealed under its BlockHash
// (block_hash.h), so later requests can share it. A published block on the free list is
// "cached, evictable": lookups still find it, Acquire takes it off the free list, and
// Allocate reusing it evicts it (unpublishes it).
//
//   state            refcount  on free list  published
//   private          >= 1      no            no
//   shared/sealed    >= 1      no            yes      (Publish)
//   cached           0         yes           yes      (last Release of a published block)
//   free             0         yes           no       (last Release of a private block,
//                                                      eviction, invalidation)
//
// Identities chain (block i's hash covers blocks 0..i), and every lookup walks a chain
// from its start, so the published blocks are kept as chains too. Publish is told the
// parent: the published block holding the identity that precedes the new one, or kNoBlock
// when that identity is not published (or the block starts a chain). A block whose
// parent has no child yet becomes that child (parent.next = block, block.prev = parent);
// any other published block is a chain head and is entered in the BlockIndex. Hence
//   every published block with a prev is its prev's next, and its identity is a child
//   of its prev's identity; the index holds exactly the published blocks without a prev;
//   no two published blocks share an identity (a second writer of the same content
//   keeps its copy private).
// FindNext(parent, hash), with parent the published holder of the preceding identity or
// kNoBlock, is then exact with at most one compare and one index probe: a published block
// with `hash` either hangs off its parent (parent.next) or is a head (in the index).
// Unpublishing a block promotes its child, if any, to a head. A request's blocks are
// published and, mostly, evicted in chain order, so this costs one index entry per
// request's chain instead of one per block (docs/PERFORMANCE.md "Engine", fourth round).
//
// The free list's order is the reuse order, hence the eviction order (LRU): Allocate
// takes from the head, Release appends at the tail. Release takes a request's blocks in
// reverse, so a finished request's tail block is reused before its head (the head is the
// most shareable). Invalidation moves the blocks it unpublishes to the head: they hold
// nothing reusable. A block's eviction is decided by this order and the budget alone.
//
// Blocks never handed out since the pool was built are not in the ring: ids
// [untouched(), total()) are the list's "untouched run", in id order, at ring position
// untouched_pos_ (after the ring entries before that position, before the ones from it
// on). The order is exactly that of a ring filled with 0..total()-1 at construction:
// the run is taken from its start by Allocate, and nothing else can reach an untouched
// block. The per-block records, the chain entries and the ring grow with the blocks
// handed out, so building a pool costs O(1) and memory, the end-of-run recount and the
// invalidation scan are O(blocks ever used), not O(total()): a sweep sets up and checks
// thousands of pools whose runs touch a small part of them (docs/PERFORMANCE.md "Sweeps").
//
// The list is a ring of block ids rather than prev/next links, because Allocate takes
// ~60 blocks at a time and, with links, each block's successor is known only once the
// block's state has been read: one cache miss after another (with the prefix cache on
// the pool's state no longer fits in L2; docs/PERFORMANCE.md "Engine", third round).
// The ring holds the next blocks' ids in consecutive entries, so their misses overlap.
// Each free block records its ring position; taking a block out of the middle (a cache
// hit on a free block, invalidation) leaves a hole that the head and tail skip, and a
// full ring is compacted in order. The order is exactly that of the linked list it
// replaced.
//
//   ring    | .... | b7 | b3 | hole | b9 | ... | b4 | .... |
//                    ^ head                      ^ tail - 1
//   Neither end is ever a hole, except at the untouched run's position while the run is
//   not empty; "...." lies outside the list (empty). Positions are 32-bit sequence
//   numbers that wrap: a position's slot is position & mask. A full ring is compacted
//   when at least half of it is holes and doubled otherwise, so it stays at most four
//   times the blocks it lists, and both are amortised O(1) per push.
//
// Each published block carries a CacheTag (namespace, adapter, publishing class) for
// invalidation and accounting; evictions and invalidations are counted per class.
//
// Invariants (CheckInvariants recomputes each from scratch):
//   free_count() == blocks on the free list == blocks with refcount 0;
//   used_count() + free_count() == total(); total_refs() == sum of refcounts;
//   the ring holds each free block below untouched() once, at the position the block
//   records, and none from untouched() on; the untouched run's position lies in
//   [head, tail]; holes between head and tail are counted; head and tail - 1 are holes
//   only at a non-empty run's position; per-block records exist for exactly the blocks
//   below untouched();
//   the chain links and the index are as described above (the index holds the published
//   blocks without a prev, each under its hash; links are symmetric; published hashes are
//   distinct); evictable_count() == published blocks with refcount 0;
//   published_total() == cached_count() + evictions() + invalidations().
// Thread model: single-threaded; deterministic (the index is lookup-only; nothing
// iterates it into a result).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
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

  int64_t total() const { return num_blocks_; }
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

  // --- prefix cache ----------------------------------------------------------------
  // The published block with `hash`, or kNoBlock. `parent` is the published block holding
  // the identity that precedes `hash` in its chain, or kNoBlock when that identity is not
  // published or `hash` starts a chain (a lookup walks a chain passing each hit as the
  // next parent). Takes no reference.
  BlockId FindNext(BlockId parent, const BlockHash& hash) const {
    if (parent != kNoBlock) {
      const ChainEntry& p = chain_[Idx(parent)];
      if (p.next != kNoBlock && chain_[Idx(p.next)].key == hash) return p.next;
      // Any other block with `hash` is a head hung off the parent's identity.
      if (heads_by_parent_.size() == 0 || heads_by_parent_.Find(p.key) < 0) return kNoBlock;
    }
    return index_.Find(hash);
  }
  // Takes a reference on a published block (a hit); a cached block leaves the free list.
  // REQUIRES: published(block).
  void Acquire(BlockId block);
  // Seals a referenced, unpublished block under `hash`. `parent_identity` is the identity
  // that precedes `hash` in its chain (nullptr when `hash` starts one) and `parent` its
  // published holder, or kNoBlock when it has none. Returns false, changing nothing, when
  // another block already holds `hash` (two writers computed the same content: the second
  // copy stays private).
  // REQUIRES: refcount(block) >= 1, !published(block); parent is kNoBlock or a published
  // block whose hash is *parent_identity.
  bool Publish(BlockId block, const BlockHash& hash, const CacheTag& tag, BlockId parent = kNoBlock,
               const BlockHash* parent_identity = nullptr);
  // Publishes a run of one chain: blocks[i] under hashes[i], where hashes[i - 1] precedes
  // hashes[i], and `parent` and `parent_identity` are as for Publish for hashes[0]. A
  // block whose hash is already held stays private, and the holder is the next block's
  // parent. Returns how many were published, and sets *last_holder (when given) to the
  // block holding hashes.back() afterwards. REQUIRES: equal sizes; each block and the
  // parent as for Publish.
  int64_t PublishAll(std::span<const BlockId> blocks, std::span<const BlockHash> hashes, const CacheTag& tag,
                     BlockId parent = kNoBlock, const BlockHash* parent_identity = nullptr,
                     BlockId* last_holder = nullptr);
  // Unpublishes every published block whose tag satisfies `matches`, in block-id order:
  // lookups stop finding them at once; referenced ones become private and are freed when
  // their last reference drops; free ones move to the free-list head. Returns the count.
  // `matches` must depend on the tag alone (it is asked once per distinct tag).
  int64_t Invalidate(const std::function<bool(const CacheTag&)>& matches);

  // REQUIRES (both): 0 <= block < total(). An untouched block is free and unpublished.
  int32_t refcount(BlockId block) const { return IsTouched(block) ? state_[Idx(block)].refs : 0; }
  bool published(BlockId block) const { return IsTouched(block) && state_[Idx(block)].tag != kUnpublished; }
  // REQUIRES: published(block).
  const BlockHash& hash(BlockId block) const { return chain_[Idx(block)].key; }
  // The published block this one hangs off in its chain, or kNoBlock for a chain head.
  // REQUIRES: published(block).
  BlockId chain_parent(BlockId block) const { return std::max(chain_[Idx(block)].prev, kNoBlock); }
  // REQUIRES: published(block).
  const CacheTag& tag(BlockId block) const { return tags_[static_cast<size_t>(state_[Idx(block)].tag)]; }

  int64_t cached_count() const { return published_count_; }
  int64_t chain_heads() const { return index_.size(); }
  int64_t evictable_count() const { return evictable_; }  // published blocks on the free list
  int64_t published_total() const { return published_total_; }
  int64_t evictions() const { return evictions_; }
  int64_t invalidations() const { return invalidations_; }
  // Per class id of the block's tag; shorter than the largest class id when none seen.
  const std::vector<int64_t>& evictions_by_class() const { return evictions_by_class_; }
  const std::vector<int64_t>& invalidations_by_class() const { return invalidations_by_class_; }

  // Free blocks from head (next reused) to tail.
  std::vector<BlockId> FreeListOrder() const;
  // Blocks [0, untouched()) are the only ones ever handed out; the others are free,
  // unpublished and unreferenced, and always have been.
  int64_t untouched() const { return untouched_; }

  // Recomputes every counter and link; returns a description of the first violation.
  Status CheckInvariants() const;

 private:
  static constexpr int32_t kUnpublished = -1;
  // Everything the pool keeps per block, together: 12 bytes, so an allocation, release,
  // publication or eviction touches one cache line of pool state per block (separate
  // arrays cost one line each, and with the cache on the pool no longer fits in L2).
  struct BlockState {
    int32_t refs = 0;
    int32_t tag = kUnpublished;  // published: index into tags_
    uint32_t pos = 0;            // ring position, meaningful while refs == 0
  };
  static size_t Idx(BlockId b) { return static_cast<size_t>(b); }
  // A block handed out at least once, so it has a record (one compare: a negative id
  // wraps above any count).
  bool IsTouched(BlockId b) const { return static_cast<uint32_t>(b) < untouched_; }
  BlockId& RingAt(uint32_t pos) { return ring_[pos & ring_mask_]; }
  BlockId RingAt(uint32_t pos) const { return ring_[pos & ring_mask_]; }

  void PushTail(BlockId b);
  void PushHead(BlockId b);
  void Unlink(BlockId b);
  BlockId PopHead();
  bool HasUntouched() const { return untouched_ < num_blocks_; }
  // The next block of the untouched run, with its records created.
  BlockId TakeUntouched();
  // Makes room for one more ring entry: compacts or doubles a full ring.
  void MakeRingRoom();
  // Moves head and tail off holes, stopping at a non-empty untouched run's position.
  void SkipEndHoles();
  // Rewrites the ring without holes, in order, from the head. Called when it is full,
  // which leaves at least half of it holes: amortised O(1) per hole.
  void Compact();
  // A published block's identity and chain links (links are kNoBlock for an unpublished
  // block). One record, so publishing or walking a block touches one place.
  struct ChainEntry {
    BlockHash key;
    BlockId prev = kNoBlock;  // kNoBlock: a chain's first block; kHungHead: another head
    BlockId next = kNoBlock;
  };
  // prev of a head that is not a chain's first block: its parent's identity is unpublished
  // or its parent already had a child. Its parent identity is in head_parents_.
  static constexpr BlockId kHungHead = -2;
  // Enters a block, linked to nothing, as a head: hung off `parent_identity`, or a
  // chain's first block when that is nullptr.
  void AddHead(BlockId b, const BlockHash* parent_identity);
  void RemoveHead(BlockId b);
  // Publish's REQUIRES on a caller's parent.
  void CheckParent(BlockId parent, const BlockHash* parent_identity) const;
  // Unpublishes a block (its child becomes a chain head) and counts it for its class.
  void Unpublish(BlockId b, std::vector<int64_t>& by_class);
  // The id of `tag` in tags_, adding it the first time it is seen.
  int32_t InternTag(const CacheTag& tag);
  // Publish for a block whose tag is already interned. Returns the block holding `hash`
  // afterwards: `block` when it was published, the earlier holder when it stays private.
  BlockId PublishInterned(BlockId block, const BlockHash& hash, int32_t tag_id, BlockId parent,
                          const BlockHash* parent_identity);
  // Turns chain entries on at the first publication (one per touched block from then
  // on), so a pool whose cache is off pays nothing for them.
  void EnsureChainStorage();
  Status CheckFreeList(int64_t& listed) const;
  Status CheckIndex() const;

  std::vector<BlockState> state_;  // by block id, for the blocks below untouched_
  uint32_t num_blocks_ = 0;  // total()
  // The distinct tags of published blocks, in first-publication order; blocks refer to
  // them by position. Bounded by the distinct (namespace, adapter, class) triples seen.
  std::vector<CacheTag> tags_;
  std::map<std::tuple<int32_t, int32_t, int32_t>, int32_t> tag_ids_;
  int32_t last_tag_id_ = kUnpublished;  // InternTag's answer for the previous call
  BlockIndex index_;               // chain heads by identity; never iterated
  bool chains_on_ = false;         // a block was ever published
  std::vector<ChainEntry> chain_;  // by block id, below untouched_ once chains_on_
  // Heads that are not a chain's first block: by block id, the identity each hangs off
  // (grown as such heads appear); and by that identity, how many hang off it
  // (the value is the count). FindNext needs the index only for an identity listed here,
  // so walking and publishing a chain nobody branched from costs no index probe.
  std::vector<BlockHash> head_parents_;
  BlockIndex heads_by_parent_;
  int64_t published_count_ = 0;
  // The free list: positions [head_, tail_) of the ring, free blocks and holes (kNoBlock).
  // Capacity a power of two, grown by MakeRingRoom.
  std::vector<BlockId> ring_;
  uint32_t ring_mask_ = 0;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
  // The untouched run: blocks [untouched_, num_blocks_), listed at ring position
  // untouched_pos_ (meaningful while the run is not empty).
  uint32_t untouched_ = 0;
  uint32_t untouched_pos_ = 0;
  int64_t holes_ = 0;
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

// The eviction-policy registry (engine.prefix_cache.eviction). The free list's order is
// the eviction order, so a policy is an order the pool keeps; `lru` (released blocks
// join the tail, the head is evicted first) is the one it keeps today. The scenario
// reader validates names against these rows.
struct EvictionPolicyRow {
  std::string_view name;
  std::string_view summary;
};
const std::vector<EvictionPolicyRow>& EvictionPolicies();
const std::vector<std::string>& EvictionPolicyNames();

}  // namespace fleetplan
