// KvCacheManager: one replica's KV cache as the engine sees it — the block pool and,
// behind the same calls, either the prefix cache or nothing (vLLM v1's KVCacheManager
// seam). Internal to the engine (src/engine); engine.h documents the token arithmetic,
// kv_pool.h the block states, block_hash.h the identities.
//
// Owns the KvBlockPool and every piece of prefix-cache state: scope generations, the
// lookup scratch, the counters already copied from the pool. Per request it writes only
// the cache fields of LiveRequest (blocks it references for hits, sealed, seal_at,
// hashes, scope, publishable, sealed_tail_published, cached_tokens) and the prefix-cache
// counters of the EngineStats it was built with; num_computed only where hits are
// taken. The engine owns everything else (queues, budgets, outstanding tokens).
//
// The engine asks and gets values back; it never branches on whether the cache is on.
// MakeKvCacheManager picks the implementation once, from EngineConfig::prefix_cache:
//   PlainKvCacheManager   finds no hit, seals and publishes nothing, ignores
//                         invalidations: every call is the "no cache" answer;
//   PrefixKvCacheManager  looks up chained block identities at admission, takes hits,
//                         seals and publishes full blocks when a step computed them,
//                         invalidates by scope, accounts per class.
//
// A request's cache life, as the engine drives it:
//
//   FindCached ─► FreeAfter ─► TakeCached | TakeImported ─► (pool().Allocate)
//        ─► steps: num_computed >= seal_at ─► Seal ... ─► Release (preemption, end)
//
// seal_at is the contract that keeps the per-chunk path free of calls: the engine calls
// Seal only when a chunk brought num_computed to seal_at, and the manager keeps seal_at
// at the first token past the next full block ((sealed + 1) * block_tokens) while a
// request may publish, at kNeverSeal otherwise (always, for the plain manager).
//
// Invariants (CheckSharing, with the engine's live requests): every pool refcount equals
// the number of live requests holding the block; blocks at or after num_computed /
// block_tokens are writable (refcount 1) and unpublished; sealed <= num_computed /
// block_tokens; with the prefix cache, a published block a request holds carries the
// hash the request computed for that position and hangs off the preceding identity.
// Thread model: single-threaded; deterministic (no unordered iteration into a result).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine_live.h"
#include "fleetplan/core/status.h"
#include "fleetplan/engine/block_hash.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/engine/kv_pool.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// The leading blocks of a request's sequence that the cache holds now (FindCached).
struct CacheMatch {
  int64_t hit_blocks = 0;   // leading blocks found in the index
  int64_t used_blocks = 0;  // of those, taken (at least one token is left to compute)
  // The found blocks, hit_blocks of them; valid until the manager is next called.
  std::span<const BlockId> blocks;
};

class KvCacheManager {
 public:
  virtual ~KvCacheManager() = default;
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  KvBlockPool& pool() { return pool_; }
  const KvBlockPool& pool() const { return pool_; }

  // Prompt tokens of `r` a lookup would take from the cache now (read-only; 0 without
  // the cache): the engine's deadline prediction and a precise router's view.
  virtual int64_t CachedPrefixTokens(const Request& r) const = 0;

  // Read-only lookup of l's leading full blocks (computes l's identities if needed).
  // REQUIRES: l holds no blocks and has computed nothing.
  virtual CacheMatch FindCached(LiveRequest& l) = 0;
  // Blocks Allocate can hand out once m's used hits are taken: a hit on a cached block
  // takes it off the free list.
  int64_t FreeAfter(const CacheMatch& m) const;
  // Admission from the waiting queue: references m's used blocks for l, marks them
  // sealed, sets l.num_computed to the tokens they hold and accounts the lookup (a
  // lookup at l's first admission, a re-hit after a preemption). Returns the tokens
  // taken (0 without the cache). REQUIRES: m is FindCached(l)'s answer, unchanged since.
  virtual int64_t TakeCached(LiveRequest& l, const CacheMatch& m) = 0;
  // BeginImport's hits: as TakeCached, counted as a lookup whose hits are KV that does
  // not move (nothing is saved from prefill: another replica computed the prompt).
  virtual int64_t TakeImported(LiveRequest& l, const CacheMatch& m) = 0;
  // The imported KV arrived: its full blocks publish after l's next step.
  virtual void FinishImported(LiveRequest& l) = 0;
  // A branch: `child` took references on parent's `shared` full blocks and a private
  // copy of its tail; those blocks are sealed for it, and it publishes what it computes
  // only while the parent's scope is current.
  virtual void Forked(const LiveRequest& parent, LiveRequest& child, int64_t shared) = 0;

  // Seals (and publishes, with the cache) the blocks l's computed tokens filled since
  // the last call. REQUIRES: l.num_computed >= l.seal_at (see the header comment).
  virtual void Seal(LiveRequest& l) = 0;
  // Releases every block l holds (preemption or end); sealing restarts from nothing.
  void Release(LiveRequest& l);
  // Applies an invalidation now (engine.h InvalidationKind); no-op without the cache.
  virtual void Invalidate(const CacheInvalidation& invalidation) = 0;

  // Copies the pool's eviction and invalidation counts into the prefix-cache counters
  // when they changed (Allocate evicts). O(1) when nothing changed, which is always
  // without the cache: nothing is published, so nothing is evicted or invalidated.
  void SyncCounters() {
    if (pool_.evictions() != synced_evictions_ || pool_.invalidations() != synced_invalidations_) SyncChangedCounters();
  }

  // The sharing invariants over the live requests in `slots` (entries not in_use skipped).
  Status CheckSharing(std::span<const LiveRequest> slots) const;

 protected:
  // REQUIRES: stats outlives the manager.
  KvCacheManager(const EngineConfig& config, EngineStats* stats);
  // The counters of the class of a request (grown on first use).
  PrefixCacheCounters& ClassCounters(ClassId class_id);
  // The cache's own checks of one live request's published blocks and identities.
  virtual Status CheckCacheState(const LiveRequest& l) const = 0;

  const int64_t block_tokens_;
  KvBlockPool pool_;
  EngineStats* stats_;  // writes only prefix_cache and prefix_cache_by_class

 private:
  void SyncChangedCounters();

  int64_t synced_evictions_ = 0;
  int64_t synced_invalidations_ = 0;
};

// The manager EngineConfig::prefix_cache asks for. REQUIRES: cost and stats outlive it.
std::unique_ptr<KvCacheManager> MakeKvCacheManager(const EngineConfig& config, const StepCostModel* cost,
                                                   EngineStats* stats);

// No prefix cache: blocks are private, allocated and released; nothing is found, sealed
// or published.
class PlainKvCacheManager final : public KvCacheManager {
 public:
  PlainKvCacheManager(const EngineConfig& config, EngineStats* stats) : KvCacheManager(config, stats) {}

  int64_t CachedPrefixTokens(const Request&) const override { return 0; }
  CacheMatch FindCached(LiveRequest&) override { return {}; }
  int64_t TakeCached(LiveRequest&, const CacheMatch&) override { return 0; }
  int64_t TakeImported(LiveRequest&, const CacheMatch&) override { return 0; }
  void FinishImported(LiveRequest&) override {}
  void Forked(const LiveRequest&, LiveRequest&, int64_t) override {}
  void Seal(LiveRequest&) override {}
  void Invalidate(const CacheInvalidation&) override {}

 protected:
  Status CheckCacheState(const LiveRequest& l) const override;
};

// The prefix cache (engine.h "Prefix cache"): identities under the request's scope (the
// engine-wide CacheScopeBase, adapter, tenant namespace and invalidation generations),
// lookups at admission, publication when a step completes, invalidation by scope.
class PrefixKvCacheManager final : public KvCacheManager {
 public:
  PrefixKvCacheManager(const EngineConfig& config, const StepCostModel* cost, EngineStats* stats);

  int64_t CachedPrefixTokens(const Request& r) const override;
  CacheMatch FindCached(LiveRequest& l) override;
  int64_t TakeCached(LiveRequest& l, const CacheMatch& m) override;
  int64_t TakeImported(LiveRequest& l, const CacheMatch& m) override;
  void FinishImported(LiveRequest& l) override { EnsureHashes(l); }
  void Forked(const LiveRequest& parent, LiveRequest& child, int64_t shared) override;
  void Seal(LiveRequest& l) override;
  void Invalidate(const CacheInvalidation& invalidation) override;

 protected:
  Status CheckCacheState(const LiveRequest& l) const override;

 private:
  int32_t Namespace(TenantId tenant) const;
  BlockHash ScopeOf(const Request& r) const;
  // l's identities under its current scope (recomputed only after an invalidation
  // changed the scope); a changed scope makes l publishable again.
  void EnsureHashes(LiveRequest& l);
  // References m's used blocks for l and marks them sealed; returns the tokens taken.
  int64_t ReferenceHits(LiveRequest& l, const CacheMatch& m);
  // The published block holding l.hashes[position] (its own block when that is the one
  // published), or kNoBlock: the parent to publish position + 1 under (kv_pool.h).
  BlockId ChainHolder(const LiveRequest& l, int64_t position) const;
  void SetSealAt(LiveRequest& l) const { l.seal_at = (l.sealed + 1) * block_tokens_; }

  const bool share_across_tenants_;
  const StepCostModel* cost_;
  const BlockHash scope_base_;
  int64_t scope_epoch_ = 0;  // bumped by every invalidation
  int64_t model_generation_ = 0;
  int64_t tokenizer_generation_ = 0;
  int64_t corpus_generation_ = 0;                    // corpus invalidations of every namespace
  std::map<int32_t, int64_t> adapter_generation_;    // lookup only
  std::map<int32_t, int64_t> namespace_generation_;  // tenant invalidations
  std::map<int32_t, int64_t> corpus_ns_generation_;  // corpus invalidations of one namespace
  std::vector<BlockId> match_blocks_;                // FindCached's answer
};

}  // namespace fleetplan
