// The prefix cache as a KV cache manager: identities and scope, lookups at admission,
// sealing when a step completes, invalidation and accounting. kv_cache_manager.h states
// the manager's contract; engine.h the token arithmetic; kv_pool.h the block states;
// block_hash.h the identities.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "engine/kv_cache_manager.h"
#include "fleetplan/workload/content.h"

namespace fleetplan {
namespace {

// Namespace of every tenant when tenants share the cache (distinct from kNoTenant, the
// namespace of requests without a tenant, and from every tenant handle).
constexpr int32_t kSharedNamespace = -3;

int64_t Generation(const std::map<int32_t, int64_t>& generations, int32_t key) {
  const auto it = generations.find(key);
  return it == generations.end() ? 0 : it->second;
}

// The request's whole token sequence: its prompt, then its answer.
std::vector<PromptSegment> TokenLayout(const Request& r) {
  std::vector<PromptSegment> layout = r.prompt;
  layout.push_back(PromptSegment{MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(r.id)), r.output_tokens});
  return layout;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Counters

PrefixCacheCounters& PrefixCacheCounters::operator+=(const PrefixCacheCounters& o) {
  lookups += o.lookups;
  lookup_tokens += o.lookup_tokens;
  hit_blocks += o.hit_blocks;
  hit_tokens += o.hit_tokens;
  saved_prefill_tokens += o.saved_prefill_tokens;
  saved_prefill += o.saved_prefill;
  rehit_blocks += o.rehit_blocks;
  rehit_tokens += o.rehit_tokens;
  evictions += o.evictions;
  invalidations += o.invalidations;
  return *this;
}

Json PrefixCacheCounters::ToJson() const {
  Json j;
  j["lookups"] = lookups;
  j["lookup_tokens"] = lookup_tokens;
  j["hit_blocks"] = hit_blocks;
  j["hit_tokens"] = hit_tokens;
  j["saved_prefill_tokens"] = saved_prefill_tokens;
  j["saved_prefill_ms"] = RoundForReport(saved_prefill.millis());
  j["hit_rate"] = lookup_tokens > 0
                      ? RoundForReport(static_cast<double>(hit_tokens) / static_cast<double>(lookup_tokens))
                      : 0.0;
  j["rehit_tokens"] = rehit_tokens;
  j["evictions"] = evictions;
  j["invalidations"] = invalidations;
  return j;
}

const std::vector<std::string>& InvalidationKindNames() {
  static const std::vector<std::string> names = {"model-revision", "tokenizer", "adapter", "tenant", "corpus"};
  return names;
}

std::string_view InvalidationKindName(InvalidationKind kind) {
  return InvalidationKindNames()[static_cast<size_t>(kind)];
}

// ---------------------------------------------------------------------------------------
// Scope and identities

PrefixKvCacheManager::PrefixKvCacheManager(const EngineConfig& config, const StepCostModel* cost,
                                           EngineStats* stats)
    : KvCacheManager(config, stats),
      share_across_tenants_(config.prefix_cache.share_across_tenants),
      cost_(cost),
      scope_base_(HashScopeBase(config.prefix_cache.scope)) {}

int32_t PrefixKvCacheManager::Namespace(TenantId tenant) const {
  return share_across_tenants_ ? kSharedNamespace : tenant;
}

BlockHash PrefixKvCacheManager::ScopeOf(const Request& r) const {
  const int32_t ns = Namespace(r.tenant);
  const int64_t parts[] = {model_generation_,
                           tokenizer_generation_,
                           corpus_generation_,
                           r.adapter,
                           Generation(adapter_generation_, r.adapter),
                           ns,
                           Generation(namespace_generation_, ns),
                           Generation(corpus_ns_generation_, ns)};
  return HashScopeParts(scope_base_, parts);
}

void PrefixKvCacheManager::EnsureHashes(LiveRequest& l) {
  if (l.scope_epoch == scope_epoch_) return;
  const BlockHash scope = ScopeOf(l.req);
  if (l.scope_epoch < 0 || scope != l.scope) {
    l.hashes.clear();
    const int64_t most_computed = l.req.prompt_tokens() + l.req.output_tokens - 1;
    AppendBlockHashes(TokenLayout(l.req), block_tokens_, scope, most_computed / block_tokens_, &l.hashes);
    l.scope = scope;
    l.publishable = true;
  }
  l.scope_epoch = scope_epoch_;
}

int64_t PrefixKvCacheManager::CachedPrefixTokens(const Request& r) const {
  const int64_t block = block_tokens_;
  std::vector<BlockHash> hashes;
  AppendBlockHashes(r.prompt, block, ScopeOf(r), (r.prompt_tokens() - 1) / block, &hashes);
  int64_t hits = 0;
  for (BlockId parent = kNoBlock; hits < static_cast<int64_t>(hashes.size()); ++hits) {
    parent = pool_.FindNext(parent, hashes[static_cast<size_t>(hits)]);
    if (parent == kNoBlock) break;
  }
  return hits * block;
}

// ---------------------------------------------------------------------------------------
// Lookup at admission

CacheMatch PrefixKvCacheManager::FindCached(LiveRequest& l) {
  FP_ASSERT(l.blocks.empty() && l.num_computed == 0);
  EnsureHashes(l);
  const int64_t block = block_tokens_;
  const auto full = static_cast<size_t>(std::min(static_cast<int64_t>(l.hashes.size()), l.num_tokens / block));
  match_blocks_.clear();
  BlockId b = kNoBlock;  // the hit before position i: the parent of its identity
  for (size_t i = 0; i < full; ++i) {
    b = pool_.FindNext(b, l.hashes[i]);
    if (b == kNoBlock) break;
    match_blocks_.push_back(b);
  }
  CacheMatch m;
  m.hit_blocks = static_cast<int64_t>(match_blocks_.size());
  m.used_blocks = std::min(m.hit_blocks, (l.num_tokens - 1) / block);
  m.blocks = match_blocks_;
  return m;
}

int64_t PrefixKvCacheManager::ReferenceHits(LiveRequest& l, const CacheMatch& m) {
  for (int64_t i = 0; i < m.used_blocks; ++i) {
    const BlockId b = m.blocks[static_cast<size_t>(i)];
    pool_.Acquire(b);
    l.blocks.push_back(b);
  }
  const int64_t taken = m.used_blocks * block_tokens_;
  l.sealed = m.used_blocks;
  SetSealAt(l);
  l.num_computed = taken;
  l.cached_tokens += taken;
  return taken;
}

int64_t PrefixKvCacheManager::TakeCached(LiveRequest& l, const CacheMatch& m) {
  const int64_t block = block_tokens_;
  const int64_t saved = ReferenceHits(l, m);
  PrefixCacheCounters c;
  if (l.preemptions > 0) {
    // A re-admission: the request's lookup and savings were counted when it was first
    // admitted (or imported); what the cache gives back now is recompute it absorbs.
    c.rehit_blocks = m.hit_blocks;
    c.rehit_tokens = m.hit_blocks * block;
    ClassCounters(l.req.class_id) += c;
    stats_->prefix_cache += c;
    return saved;
  }
  c.lookups = 1;
  c.lookup_tokens = l.num_tokens;
  c.hit_blocks = m.hit_blocks;
  c.hit_tokens = m.hit_blocks * block;
  c.saved_prefill_tokens = saved;
  if (saved > 0) {
    const StepChunk without{0, l.num_tokens, false};
    const StepChunk with{saved, l.num_tokens - saved, false};
    c.saved_prefill = cost_->Cost({&without, 1}).gpu - cost_->Cost({&with, 1}).gpu;
  }
  ClassCounters(l.req.class_id) += c;
  stats_->prefix_cache += c;
  return saved;
}

int64_t PrefixKvCacheManager::TakeImported(LiveRequest& l, const CacheMatch& m) {
  const int64_t taken = ReferenceHits(l, m);
  // A lookup and its hits; nothing is saved from prefill here (the prefill replica
  // computed the prompt): the hits are KV that does not have to move.
  PrefixCacheCounters c;
  c.lookups = 1;
  c.lookup_tokens = l.num_tokens;
  c.hit_blocks = m.hit_blocks;
  c.hit_tokens = m.hit_blocks * block_tokens_;
  ClassCounters(l.req.class_id) += c;
  stats_->prefix_cache += c;
  return taken;
}

void PrefixKvCacheManager::Forked(const LiveRequest& parent, LiveRequest& child, int64_t shared) {
  const bool parent_scope_current = parent.publishable && ScopeOf(parent.req) == parent.scope;
  child.sealed = shared;
  SetSealAt(child);
  EnsureHashes(child);
  child.publishable = parent_scope_current;
  SyncCounters();
}

// ---------------------------------------------------------------------------------------
// Sealing when a step completes

void PrefixKvCacheManager::Seal(LiveRequest& l) {
  // Full blocks now, counted up from the last sealed one instead of divided: a decode
  // fills one block, so this is one or two compares where a division costs tens of
  // cycles; a prefill chunk's loop runs once per block it filled, as the publishing
  // below does anyway.
  const int64_t block = block_tokens_;
  int64_t full = l.sealed;
  while ((full + 1) * block <= l.num_computed) ++full;
  FP_ASSERT(full > l.sealed);  // seal_at was reached
  if (l.publishable && l.scope_epoch != scope_epoch_) {
    // An invalidation happened since the hashes were made: publish only if this
    // request's scope survived it.
    if (ScopeOf(l.req) == l.scope) {
      l.scope_epoch = scope_epoch_;
    } else {
      l.publishable = false;
    }
  }
  if (l.publishable) {
    FP_ASSERT(static_cast<size_t>(full) <= l.hashes.size());
    const CacheTag tag{Namespace(l.req.tenant), l.req.adapter, l.req.class_id};
    const auto first = static_cast<size_t>(l.sealed);
    const auto count = static_cast<size_t>(full - l.sealed);
    // One batch for the step's newly full blocks. A duplicate (another request published
    // the same content first) stays private.
    const BlockId parent =
        first == 0 ? kNoBlock : (l.sealed_tail_published ? l.blocks[first - 1] : ChainHolder(l, l.sealed - 1));
    const BlockHash* parent_identity = first == 0 ? nullptr : &l.hashes[first - 1];
    BlockId last_holder = kNoBlock;
    (void)pool_.PublishAll(std::span(l.blocks).subspan(first, count), std::span(l.hashes).subspan(first, count), tag,
                           parent, parent_identity, &last_holder);
    l.sealed_tail_published = last_holder == l.blocks[static_cast<size_t>(full - 1)];
  }
  l.sealed = full;
  SetSealAt(l);
}

BlockId PrefixKvCacheManager::ChainHolder(const LiveRequest& l, int64_t position) const {
  const auto at = static_cast<size_t>(position);
  const BlockId own = l.blocks[at];
  if (pool_.published(own) && pool_.hash(own) == l.hashes[at]) return own;
  // The request's own copy is private (another request published that content first)
  // or not published: walk the chain from its start. A miss does not end the walk, as a
  // lookup's would: FindNext with no parent finds a block whose parent is not published.
  BlockId holder = kNoBlock;
  for (size_t i = 0; i <= at; ++i) holder = pool_.FindNext(holder, l.hashes[i]);
  return holder;
}

// ---------------------------------------------------------------------------------------
// Invalidation

void PrefixKvCacheManager::Invalidate(const CacheInvalidation& inv) {
  std::function<bool(const CacheTag&)> matches = [](const CacheTag&) { return true; };
  switch (inv.kind) {
    case InvalidationKind::kModelRevision:
      ++model_generation_;
      break;
    case InvalidationKind::kTokenizer:
      ++tokenizer_generation_;
      break;
    case InvalidationKind::kAdapter: {
      const int32_t adapter = inv.target;
      ++adapter_generation_[adapter];
      matches = [adapter](const CacheTag& t) { return t.adapter == adapter; };
      break;
    }
    case InvalidationKind::kTenant: {
      const int32_t ns = Namespace(inv.target);
      ++namespace_generation_[ns];
      matches = [ns](const CacheTag& t) { return t.ns == ns; };
      break;
    }
    case InvalidationKind::kCorpus: {
      if (inv.target == kAllTargets) {
        ++corpus_generation_;
        break;
      }
      const int32_t ns = Namespace(inv.target);
      ++corpus_ns_generation_[ns];
      matches = [ns](const CacheTag& t) { return t.ns == ns; };
      break;
    }
  }
  ++scope_epoch_;
  (void)pool_.Invalidate(matches);
  SyncCounters();
}

// ---------------------------------------------------------------------------------------
// Checks

Status PrefixKvCacheManager::CheckCacheState(const LiveRequest& l) const {
  const bool hashes_current = l.publishable && l.scope_epoch >= 0 && ScopeOf(l.req) == l.scope;
  if (l.sealed_tail_published && hashes_current) {
    const auto tail = static_cast<size_t>(l.sealed - 1);
    const BlockId b = l.blocks[tail];
    if (!pool_.published(b) || pool_.hash(b) != l.hashes[tail]) {
      return InternalError(fmt::format("request {} takes block {} for the holder of its last sealed identity, but "
                                       "it is not",
                                       l.req.id, b));
    }
  }
  // Admitted requests seal at their next full block; waiting ones hold nothing to seal.
  const int64_t seal_at = l.waiting ? kNeverSeal : (l.sealed + 1) * block_tokens_;
  if (l.seal_at != seal_at) {
    return InternalError(fmt::format("request {} seals at {} tokens, not at {}", l.req.id, l.seal_at, seal_at));
  }
  if (!hashes_current) return Status::Ok();
  for (size_t i = 0; i < l.blocks.size(); ++i) {
    const BlockId b = l.blocks[i];
    if (!pool_.published(b)) continue;
    if (i < l.hashes.size() && pool_.hash(b) != l.hashes[i]) {
      return InternalError(fmt::format("block {} (position {} of request {}) is published under another content's "
                                       "hash",
                                       b, i, l.req.id));
    }
    const BlockId parent = pool_.chain_parent(b);
    if (parent != kNoBlock && (i == 0 || pool_.hash(parent) != l.hashes[i - 1])) {
      return InternalError(fmt::format("block {} (position {} of request {}) hangs off a block that does not hold "
                                       "the preceding identity",
                                       b, i, l.req.id));
    }
  }
  return Status::Ok();
}

}  // namespace fleetplan
