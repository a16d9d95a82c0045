// The engine's prefix cache: lookups at admission, sealing at step completion, branches,
// invalidation and accounting. engine.h describes the token arithmetic; kv_pool.h the
// block states; block_hash.h the identities.
#include <algorithm>

#include <fmt/format.h>

#include "engine/engine_live.h"
#include "fleetplan/engine/engine.h"
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

PrefixCacheCounters& Engine::ClassCounters(ClassId class_id) {
  auto& by_class = stats_.prefix_cache_by_class;
  const auto c = static_cast<size_t>(std::max(class_id, 0));
  if (by_class.size() <= c) by_class.resize(c + 1);
  return by_class[c];
}

PrefixCacheCounters Engine::prefix_cache_for_class(ClassId class_id) const {
  const auto& by_class = stats_.prefix_cache_by_class;
  const auto c = static_cast<size_t>(std::max(class_id, 0));
  return c < by_class.size() ? by_class[c] : PrefixCacheCounters{};
}

void Engine::SyncPoolCounters() {
  if (pool_.evictions() == synced_evictions_ && pool_.invalidations() == synced_invalidations_) return;
  const auto& evicted = pool_.evictions_by_class();
  for (size_t c = 0; c < evicted.size(); ++c) ClassCounters(static_cast<ClassId>(c)).evictions = evicted[c];
  const auto& invalidated = pool_.invalidations_by_class();
  for (size_t c = 0; c < invalidated.size(); ++c) ClassCounters(static_cast<ClassId>(c)).invalidations = invalidated[c];
  stats_.prefix_cache.evictions = synced_evictions_ = pool_.evictions();
  stats_.prefix_cache.invalidations = synced_invalidations_ = pool_.invalidations();
}

// ---------------------------------------------------------------------------------------
// Scope and identities

int32_t Engine::Namespace(TenantId tenant) const {
  return config_.prefix_cache.share_across_tenants ? kSharedNamespace : tenant;
}

BlockHash Engine::ScopeOf(const Request& r) const {
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

void Engine::EnsureHashes(Live& l) {
  if (l.scope_epoch == scope_epoch_) return;
  const BlockHash scope = ScopeOf(l.req);
  if (l.scope_epoch < 0 || scope != l.scope) {
    l.hashes.clear();
    const int64_t most_computed = l.req.prompt_tokens() + l.req.output_tokens - 1;
    AppendBlockHashes(TokenLayout(l.req), config_.block_tokens, scope, most_computed / config_.block_tokens,
                      &l.hashes);
    l.scope = scope;
    l.publishable = true;
  }
  l.scope_epoch = scope_epoch_;
}

int64_t Engine::CachedPrefixTokens(const Request& r) const {
  const int64_t block = config_.block_tokens;
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

Engine::Match Engine::Lookup(Live& l) {
  FP_ASSERT(l.blocks.empty() && l.num_computed == 0);
  EnsureHashes(l);
  const int64_t block = config_.block_tokens;
  const auto full = static_cast<size_t>(std::min(static_cast<int64_t>(l.hashes.size()), l.num_tokens / block));
  match_blocks_.clear();
  BlockId b = kNoBlock;  // the hit before position i: the parent of its identity
  for (size_t i = 0; i < full; ++i) {
    b = pool_.FindNext(b, l.hashes[i]);
    if (b == kNoBlock) break;
    match_blocks_.push_back(b);
  }
  Match m;
  m.hit_blocks = static_cast<int64_t>(match_blocks_.size());
  m.used_blocks = std::min(m.hit_blocks, (l.num_tokens - 1) / block);
  return m;
}

int64_t Engine::FreeAfterAcquire(const Match& m) const {
  int64_t cached_hits = 0;
  for (int64_t i = 0; i < m.used_blocks; ++i) {
    if (pool_.refcount(match_blocks_[static_cast<size_t>(i)]) == 0) ++cached_hits;
  }
  return pool_.free_count() - cached_hits;
}

void Engine::TakeHits(int32_t slot, const Match& m) {
  Live& l = slots_[static_cast<size_t>(slot)];
  for (int64_t i = 0; i < m.used_blocks; ++i) {
    const BlockId b = match_blocks_[static_cast<size_t>(i)];
    pool_.Acquire(b);
    l.blocks.push_back(b);
  }
  const int64_t block = config_.block_tokens;
  const int64_t saved = m.used_blocks * block;
  l.sealed = m.used_blocks;
  l.num_computed = saved;
  l.cached_tokens += saved;
  outstanding_tokens_ -= saved;

  PrefixCacheCounters c;
  if (l.preemptions > 0) {
    // A re-admission: the request's lookup and savings were counted when it was first
    // admitted (or imported); what the cache gives back now is recompute it absorbs.
    c.rehit_blocks = m.hit_blocks;
    c.rehit_tokens = m.hit_blocks * block;
    ClassCounters(l.req.class_id) += c;
    stats_.prefix_cache += c;
    return;
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
  stats_.prefix_cache += c;
}

// ---------------------------------------------------------------------------------------
// Sealing when a step completes

void Engine::SealComputed(Live& l) {
  // Full blocks now, counted up from the last sealed one instead of divided: a decode
  // fills one block, so this is one or two compares where a division costs tens of
  // cycles; a prefill chunk's loop runs once per block it filled, as the publishing
  // below does anyway.
  const int64_t block = config_.block_tokens;
  int64_t full = l.sealed;
  while ((full + 1) * block <= l.num_computed) ++full;
  if (full <= l.sealed) return;
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
}

BlockId Engine::ChainHolder(const Live& l, int64_t position) const {
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
// Invalidation and branches

void Engine::Invalidate(const CacheInvalidation& inv) {
  if (!config_.prefix_cache.enabled) return;
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
  SyncPoolCounters();
}

bool Engine::Fork(RequestId parent_id, RequestId child_id, int64_t output_tokens, SimTime now) {
  FP_ASSERT(!in_flight_ && output_tokens >= 1 && !index_.Contains(child_id));
  const int32_t parent_slot = index_.Find(parent_id);
  FP_ASSERT(parent_slot >= 0);
  const Live& parent = slots_[static_cast<size_t>(parent_slot)];
  FP_ASSERT(parent.running && parent.generated >= 1 && parent.is_decode());

  const int64_t block = config_.block_tokens;
  const int64_t computed = parent.num_computed;
  const int64_t shared = computed / block;  // full blocks: sealed, shared by reference
  Request child = parent.req;
  child.id = child_id;
  child.output_tokens = output_tokens;
  child.cancel_at.reset();
  const int64_t answer_so_far = computed - parent.req.prompt_tokens();
  if (answer_so_far > 0) {
    child.prompt.push_back(
        PromptSegment{MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(parent.req.id)), answer_so_far});
  }
  const int64_t target = config_.admission == AdmissionMode::kReserve
                             ? BlocksForTokens(computed + output_tokens, block)
                             : BlocksForTokens(computed, block);
  const int64_t need = target - shared;  // the copied tail, plus the reservation
  if (need > pool_.free_count()) return false;
  const bool parent_scope_current =
      !config_.prefix_cache.enabled || (parent.publishable && ScopeOf(parent.req) == parent.scope);

  const int32_t slot = NewSlot(child, now);  // may reallocate slots_: no references held
  Live& c = slots_[static_cast<size_t>(slot)];
  const Live& p = slots_[static_cast<size_t>(parent_slot)];
  for (int64_t i = 0; i < shared; ++i) {
    const BlockId b = p.blocks[static_cast<size_t>(i)];
    pool_.AddRef(b);
    c.blocks.push_back(b);
  }
  const bool allocated = pool_.Allocate(need, c.blocks);
  FP_ASSERT(allocated);
  c.num_computed = computed;
  c.num_tokens = computed + 1;
  c.generated = 1;
  c.first_token = now;
  c.last_token = now;
  c.sealed = shared;
  outstanding_tokens_ -= computed;
  if (config_.prefix_cache.enabled) {
    EnsureHashes(c);
    c.publishable = parent_scope_current;
    SyncPoolCounters();
  }
  if (observer_ != nullptr) observer_->OnFirstToken(replica_, child_id, now);
  if (output_tokens == 1) {
    End(slot, RequestStatus::kOk, now);  // its only token was sampled with the parent's
    return true;
  }
  InsertRunning(slot);
  return true;
}

// ---------------------------------------------------------------------------------------
// Views and checks

std::optional<RequestView> Engine::request(RequestId id) const {
  const int32_t slot = index_.Find(id);
  if (slot < 0) return std::nullopt;
  const Live& l = slots_[static_cast<size_t>(slot)];
  return RequestView{l.running, l.num_tokens, l.num_computed, l.generated, l.cached_tokens, l.preemptions, l.blocks};
}

std::vector<RequestId> Engine::LiveIds() const {
  std::vector<RequestId> ids;
  ids.reserve(static_cast<size_t>(index_.size()));
  for (const Live& l : slots_) {
    if (l.in_use) ids.push_back(l.req.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

const Request* Engine::live_request(RequestId id) const {
  const int32_t slot = index_.Find(id);
  return slot < 0 ? nullptr : &slots_[static_cast<size_t>(slot)].req;
}

Status Engine::CheckSharing() const {
  // Only blocks the pool ever handed out can be held (KvBlockPool::untouched).
  std::vector<int32_t> holders(static_cast<size_t>(pool_.untouched()), 0);
  const int64_t block = config_.block_tokens;
  for (const Live& l : slots_) {
    if (!l.in_use) continue;
    const int64_t writable_from = l.num_computed / block;
    if (l.sealed_tail_published && l.publishable && ScopeOf(l.req) == l.scope) {
      const auto tail = static_cast<size_t>(l.sealed - 1);
      const BlockId b = l.blocks[tail];
      if (!pool_.published(b) || pool_.hash(b) != l.hashes[tail]) {
        return InternalError(fmt::format("request {} takes block {} for the holder of its last sealed identity, but "
                                         "it is not",
                                         l.req.id, b));
      }
    }
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
      if (!pool_.published(b)) continue;
      if (pos >= writable_from) {
        return InternalError(fmt::format("block {} (position {} of request {}) is published before it is computed",
                                         b, pos, l.req.id));
      }
      const bool hashes_current = l.publishable && l.scope_epoch >= 0 && ScopeOf(l.req) == l.scope;
      if (hashes_current && i < l.hashes.size() && pool_.hash(b) != l.hashes[i]) {
        return InternalError(fmt::format("block {} (position {} of request {}) is published under another content's "
                                         "hash",
                                         b, pos, l.req.id));
      }
      const BlockId parent = pool_.chain_parent(b);
      if (hashes_current && parent != kNoBlock && (i == 0 || pool_.hash(parent) != l.hashes[i - 1])) {
        return InternalError(fmt::format("block {} (position {} of request {}) hangs off a block that does not hold "
                                         "the preceding identity",
                                         b, pos, l.req.id));
      }
    }
  }
  for (BlockId b = 0; b < static_cast<BlockId>(pool_.untouched()); ++b) {
    if (holders[static_cast<size_t>(b)] != pool_.refcount(b)) {
      return InternalError(fmt::format("block {} has refcount {} but {} live requests hold it", b, pool_.refcount(b),
                                       holders[static_cast<size_t>(b)]));
    }
  }
  return Status::Ok();
}

}  // namespace fleetplan
