// Branches of a live request (Fork) and read-only views of live requests.
#include <algorithm>

#include "engine/engine_live.h"
#include "engine/kv_cache_manager.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/workload/content.h"

namespace fleetplan {

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
  KvBlockPool& pool = kv_->pool();
  if (need > pool.free_count()) return false;

  const int32_t slot = NewSlot(child, now);  // may reallocate slots_: no references held
  Live& c = slots_[static_cast<size_t>(slot)];
  const Live& p = slots_[static_cast<size_t>(parent_slot)];
  for (int64_t i = 0; i < shared; ++i) {
    const BlockId b = p.blocks[static_cast<size_t>(i)];
    pool.AddRef(b);
    c.blocks.push_back(b);
  }
  const bool allocated = pool.Allocate(need, c.blocks);
  FP_ASSERT(allocated);
  c.num_computed = computed;
  c.num_tokens = computed + 1;
  c.generated = 1;
  c.first_token = now;
  c.last_token = now;
  outstanding_tokens_ -= computed;
  kv_->Forked(p, c, shared);
  if (observer_ != nullptr) observer_->OnFirstToken(replica_, child_id, now);
  if (output_tokens == 1) {
    End(slot, RequestStatus::kOk, now);  // its only token was sampled with the parent's
    return true;
  }
  InsertRunning(slot);
  return true;
}

// ---------------------------------------------------------------------------------------
// Views

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

RequestId Engine::planned_request(int32_t slot) const {
  FP_ASSERT(slot >= 0 && static_cast<size_t>(slot) < slots_.size());
  const Live& l = slots_[static_cast<size_t>(slot)];
  FP_ASSERT(l.in_use);
  return l.req.id;
}

PrefixCacheCounters Engine::prefix_cache_for_class(ClassId class_id) const {
  const auto& by_class = stats_.prefix_cache_by_class;
  const auto c = static_cast<size_t>(std::max(class_id, 0));
  return c < by_class.size() ? by_class[c] : PrefixCacheCounters{};
}

void Engine::Invalidate(const CacheInvalidation& invalidation) { kv_->Invalidate(invalidation); }

}  // namespace fleetplan
