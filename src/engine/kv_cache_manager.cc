// The KV cache manager's shared part (pool ownership, release, counters, the sharing
// check) and the factory that picks the prefix cache or the plain manager once.
#include "engine/kv_cache_manager.h"

#include <algorithm>

#include <fmt/format.h>

namespace fleetplan {

std::unique_ptr<KvCacheManager> MakeKvCacheManager(const EngineConfig& config, const StepCostModel* cost,
                                                   EngineStats* stats) {
  const PrefixCacheConfig& cache = config.prefix_cache;
  if (cache.enabled) return std::make_unique<PrefixKvCacheManager>(config, cost, stats);
  return std::make_unique<PlainKvCacheManager>(config, stats);
}

KvCacheManager::KvCacheManager(const EngineConfig& config, EngineStats* stats)
    : block_tokens_(config.block_tokens), pool_(config.kv_blocks), stats_(stats) {
  FP_ASSERT(stats != nullptr);
}

int64_t KvCacheManager::FreeAfter(const CacheMatch& m) const {
  int64_t cached_hits = 0;
  for (int64_t i = 0; i < m.used_blocks; ++i) {
    if (pool_.refcount(m.blocks[static_cast<size_t>(i)]) == 0) ++cached_hits;
  }
  return pool_.free_count() - cached_hits;
}

void KvCacheManager::Release(LiveRequest& l) {
  pool_.Release(l.blocks);
  l.blocks.clear();
  l.sealed = 0;
  l.sealed_tail_published = false;
  l.seal_at = kNeverSeal;
}

PrefixCacheCounters& KvCacheManager::ClassCounters(ClassId class_id) {
  auto& by_class = stats_->prefix_cache_by_class;
  const auto c = static_cast<size_t>(std::max(class_id, 0));
  if (by_class.size() <= c) by_class.resize(c + 1);
  return by_class[c];
}

void KvCacheManager::SyncChangedCounters() {
  const auto& evicted = pool_.evictions_by_class();
  for (size_t c = 0; c < evicted.size(); ++c) ClassCounters(static_cast<ClassId>(c)).evictions = evicted[c];
  const auto& invalidated = pool_.invalidations_by_class();
  for (size_t c = 0; c < invalidated.size(); ++c) ClassCounters(static_cast<ClassId>(c)).invalidations = invalidated[c];
  stats_->prefix_cache.evictions = synced_evictions_ = pool_.evictions();
  stats_->prefix_cache.invalidations = synced_invalidations_ = pool_.invalidations();
}

Status KvCacheManager::CheckSharing(std::span<const LiveRequest> slots) const {
  // Only blocks the pool ever handed out can be held (KvBlockPool::untouched).
  std::vector<int32_t> holders(static_cast<size_t>(pool_.untouched()), 0);
  for (const LiveRequest& l : slots) {
    if (!l.in_use) continue;
    const int64_t writable_from = l.num_computed / block_tokens_;
    if (l.sealed > writable_from) {
      return InternalError(fmt::format("request {} sealed {} blocks but computed only {} full ones", l.req.id,
                                       l.sealed, writable_from));
    }
    for (size_t i = 0; i < l.blocks.size(); ++i) {
      const BlockId b = l.blocks[i];
      if (b < 0 || b >= pool_.untouched()) {
        return InternalError(fmt::format("request {} holds block {}, which the pool never handed out", l.req.id, b));
      }
      ++holders[static_cast<size_t>(b)];
      const auto pos = static_cast<int64_t>(i);
      if (pos >= writable_from && pool_.refcount(b) != 1) {
        return InternalError(fmt::format("block {} (position {} of request {}) is writable but has {} holders", b,
                                         pos, l.req.id, pool_.refcount(b)));
      }
      if (pos >= writable_from && pool_.published(b)) {
        return InternalError(fmt::format("block {} (position {} of request {}) is published before it is computed",
                                         b, pos, l.req.id));
      }
    }
    FP_RETURN_IF_ERROR(CheckCacheState(l));
  }
  for (BlockId b = 0; b < static_cast<BlockId>(pool_.untouched()); ++b) {
    if (holders[static_cast<size_t>(b)] != pool_.refcount(b)) {
      return InternalError(fmt::format("block {} has refcount {} but {} live requests hold it", b, pool_.refcount(b),
                                       holders[static_cast<size_t>(b)]));
    }
  }
  return Status::Ok();
}

Status PlainKvCacheManager::CheckCacheState(const LiveRequest& l) const {
  if (l.seal_at != kNeverSeal || l.sealed != 0 || !l.hashes.empty()) {
    return InternalError(fmt::format("request {} has prefix-cache state without a prefix cache", l.req.id));
  }
  return Status::Ok();
}

}  // namespace fleetplan
