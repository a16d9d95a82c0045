// Property test of the prefix cache: random sequences of admit / compute / cancel /
// finish / fork / evict (allocation pressure) / invalidate against a simple reference
// model, checked after every operation.
//
// The reference knows only the documented rules, with its own hashing (the workload
// module's AppendBlockKeys, a different hash family from the engine's XXH3 chain):
//   - a request's block keys come from its layout (prompt, then its answer) and scope
//     (namespace, adapter, invalidation generations);
//   - when a step completes, every full block a live request has computed is published,
//     unless the request was cancelled during that step or an invalidation changed its
//     scope after its admission;
//   - a lookup at admission takes the longest published prefix, at most
//     (num_tokens - 1) / B blocks;
//   - an invalidation removes the entries of the matching namespace/adapter (or all).
// With a pool too large to evict (exact mode) the engine must match the reference
// exactly: hits per admission, lookups, published entries, invalidated entries. With a
// small pool (bounded mode) eviction can only lose entries: hits are at most the
// reference's. In both, after every operation: Engine::CheckInvariants (refcounts equal
// holders, no writable block shared or published, index <-> block consistency, every
// counter recounted), ended requests hold nothing, and at the end the pool holds no
// reference.
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "engine/engine_driver.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/workload/content.h"

namespace fleetplan {
namespace {

using testing::RecordingObserver;
using testing::TestCostModel;

constexpr int32_t kRefShared = -3;  // any value distinct from tenant handles
// Conversation chains stop growing here (a fresh prompt is drawn instead).
constexpr int64_t kMaxTurnTokens = 300;

// The reference model of published content and scopes.
class ReferenceCache {
 public:
  ReferenceCache(int64_t block, bool share) : block_(block), share_(share) {}

  int32_t Ns(TenantId t) const { return share_ ? kRefShared : t; }

  uint64_t Scope(const Request& r) const {
    const int32_t ns = Ns(r.tenant);
    uint64_t h = 0x5eed;
    for (int64_t part : {model_, tokenizer_, corpus_, static_cast<int64_t>(r.adapter), Gen(adapter_gen_, r.adapter),
                         static_cast<int64_t>(ns), Gen(ns_gen_, ns), Gen(corpus_ns_gen_, ns)}) {
      h = HashCombine(h, static_cast<uint64_t>(part));
    }
    return h;
  }

  // Keys of the full blocks among the first `tokens` tokens of r's layout.
  std::vector<BlockKey> FullKeys(const Request& r, uint64_t scope, int64_t tokens) const {
    std::vector<PromptSegment> layout = r.prompt;
    layout.push_back({MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(r.id)), r.output_tokens});
    std::vector<BlockKey> keys;
    AppendBlockKeys(layout, block_, scope, &keys);
    keys.resize(std::min(keys.size(), static_cast<size_t>(tokens / block_)));
    return keys;
  }

  // Leading blocks a lookup finds for r with `num_tokens` tokens.
  int64_t Matched(const Request& r, int64_t num_tokens) const {
    int64_t n = 0;
    for (BlockKey k : FullKeys(r, Scope(r), num_tokens)) {
      if (published_.count(k) == 0) break;
      ++n;
    }
    return n;
  }

  void Publish(const Request& r, uint64_t scope, int64_t computed) {
    for (BlockKey k : FullKeys(r, scope, computed)) published_.emplace(k, Tag{Ns(r.tenant), r.adapter});
  }

  // Applies an invalidation; returns the entries removed.
  int64_t Invalidate(const CacheInvalidation& inv) {
    bool all = true;
    int32_t ns = 0;
    switch (inv.kind) {
      case InvalidationKind::kModelRevision: ++model_; break;
      case InvalidationKind::kTokenizer: ++tokenizer_; break;
      case InvalidationKind::kAdapter: ++adapter_gen_[inv.target]; all = false; break;
      case InvalidationKind::kTenant: ns = Ns(inv.target); ++ns_gen_[ns]; all = false; break;
      case InvalidationKind::kCorpus:
        if (inv.target == kAllTargets) {
          ++corpus_;
        } else {
          ns = Ns(inv.target);
          ++corpus_ns_gen_[ns];
          all = false;
        }
        break;
    }
    int64_t removed = 0;
    for (auto it = published_.begin(); it != published_.end();) {
      const bool match = all || (inv.kind == InvalidationKind::kAdapter ? it->second.adapter == inv.target
                                                                          : it->second.ns == ns);
      if (match) {
        it = published_.erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
    return removed;
  }

  int64_t size() const { return static_cast<int64_t>(published_.size()); }

 private:
  struct Tag {
    int32_t ns;
    int32_t adapter;
  };
  static int64_t Gen(const std::map<int32_t, int64_t>& m, int32_t k) {
    const auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  }
  int64_t block_;
  bool share_;
  int64_t model_ = 0;
  int64_t tokenizer_ = 0;
  int64_t corpus_ = 0;
  std::map<int32_t, int64_t> adapter_gen_;
  std::map<int32_t, int64_t> ns_gen_;
  std::map<int32_t, int64_t> corpus_ns_gen_;
  std::map<BlockKey, Tag> published_;
};

struct RefRequest {
  Request req;
  bool running = false;
  uint64_t scope = 0;       // reference scope at its last admission
  bool stale = false;       // an invalidation changed its scope since
  bool cancelled = false;   // cancelled while in the step in flight
  bool ended = false;
  int64_t cached_seen = 0;
  int32_t preemptions_seen = 0;
};

struct PropertyParams {
  uint64_t seed;
  bool exact;    // pool too large to evict
  bool share;    // share_across_tenants
  int64_t block;
};

class PrefixCacheProperty {
 public:
  explicit PrefixCacheProperty(const PropertyParams& p)
      : p_(p), rng_(p.seed, "prefix-cache-property"), cost_(Us(100), Us(1), Us(10)), ref_(p.block, p.share) {
    EngineConfig c;
    c.scheduler.policy = "decode-first";
    c.scheduler.max_batched_tokens = 64;  // chunked prefill: blocks publish mid-prompt
    c.scheduler.chunk_tokens = 64;
    c.scheduler.max_running = 8;
    c.block_tokens = p.block;
    c.kv_blocks = p.exact ? 2048 : 48;  // exact: several times what a run publishes
    c.prefix_cache.enabled = true;
    c.prefix_cache.share_across_tenants = p.share;
    c.prefix_cache.scope = {"m", "t", "rope", "bf16"};
    auto e = Engine::Create(0, c, &cost_, &obs_);
    EXPECT_TRUE(e.ok());
    engine_ = std::move(e).value();
  }

  void Run(int ops) {
    for (int i = 0; i < ops && !::testing::Test::HasFailure(); ++i) {
      const uint64_t op = rng_.NextBelow(100);
      if (op < 30) {
        Admit(/*pressure=*/false);
      } else if (op < 68) {
        Step();
      } else if (op < 74) {
        Cancel();
      } else if (op < 84) {
        Finish();
      } else if (op < 92) {
        Fork();
      } else if (op < 94) {
        Invalidate();
      } else {
        Admit(/*pressure=*/true);
      }
      Check();
    }
    for (int guard = 0; guard < 100000 && (engine_->HasWork() || engine_->step_in_flight()); ++guard) {
      Step();
      Check();
    }
    EXPECT_FALSE(engine_->HasWork());
    EXPECT_EQ(engine_->pool().total_refs(), 0) << "terminal requests left references behind";
    EXPECT_EQ(engine_->pool().free_count(), engine_->pool().total());
    EXPECT_EQ(engine_->live_requests(), 0);
    for (const auto& [id, rr] : reqs_) EXPECT_EQ(obs_.outcomes.count(id), 1u) << "request " << id;
    if (p_.exact) {
      EXPECT_EQ(engine_->stats().prefix_cache.evictions, 0) << "exact mode must not evict";
    }
    std::printf("seed %llu %s: %lld lookups, %lld hit blocks, %lld published, %lld evictions, %lld invalidations, "
                "%lld forks\n",
                static_cast<unsigned long long>(p_.seed), p_.exact ? "exact" : "bounded",
                static_cast<long long>(engine_->stats().prefix_cache.lookups),
                static_cast<long long>(engine_->stats().prefix_cache.hit_blocks),
                static_cast<long long>(engine_->pool().published_total()),
                static_cast<long long>(engine_->stats().prefix_cache.evictions),
                static_cast<long long>(engine_->stats().prefix_cache.invalidations), static_cast<long long>(forks_));
  }

 private:
  // A prompt from a small alphabet so that prefixes repeat; sometimes the next turn of
  // an earlier request (its prompt, its whole answer, a new question).
  std::vector<PromptSegment> DrawPrompt() {
    if (!reqs_.empty() && rng_.NextBelow(4) == 0) {
      auto it = reqs_.begin();
      std::advance(it, static_cast<long>(rng_.NextBelow(reqs_.size())));
      std::vector<PromptSegment> prompt = it->second.req.prompt;
      prompt.push_back({MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(it->first)),
                        it->second.req.output_tokens});
      prompt.push_back({900 + rng_.NextBelow(3), 1 + static_cast<int64_t>(rng_.NextBelow(20))});
      int64_t tokens = 0;
      for (const auto& s : prompt) tokens += s.tokens;
      if (tokens <= kMaxTurnTokens) return prompt;
    }
    static constexpr int64_t kLengths[] = {3, 8, 16, 20, 32, 40};
    std::vector<PromptSegment> prompt;
    const uint64_t n = 1 + rng_.NextBelow(3);
    for (uint64_t i = 0; i < n; ++i) {
      prompt.push_back({1 + rng_.NextBelow(4), kLengths[rng_.NextBelow(6)]});
    }
    return prompt;
  }

  void Admit(bool pressure) {
    Request r;
    r.id = next_id_++;
    r.arrival = now_;
    r.tenant = static_cast<TenantId>(rng_.NextBelow(2));
    r.adapter = rng_.NextBelow(3) == 0 ? 5 : kNoAdapter;
    if (pressure) {
      // Unique content large enough to push cached blocks out of a small pool.
      r.prompt = {{static_cast<ContentId>(1'000'000 + r.id), 8 * p_.block + 5}};
      r.output_tokens = 2;
    } else {
      r.prompt = DrawPrompt();
      r.output_tokens = 1 + static_cast<int64_t>(rng_.NextBelow(20));
    }
    if (r.prompt_tokens() + r.output_tokens > 400) r.output_tokens = 1;
    reqs_.emplace(r.id, RefRequest{r});
    engine_->Submit(r, now_);
    if (!engine_->step_in_flight()) Step();
  }

  void Step() {
    if (engine_->step_in_flight()) {
      now_ = step_end_;
      engine_->FinishStep(now_);
      AfterFinish();
    } else if (engine_->HasWork()) {
      const PrefixCacheCounters before = engine_->stats().prefix_cache;
      const auto end = engine_->StartStep(now_);
      if (end) step_end_ = *end;
      AfterStart(before);
    }
  }

  void AfterStart(const PrefixCacheCounters& before) {
    int64_t first_admissions = 0;  // lookups count once per request (re-admissions are re-hits)
    for (auto& [id, rr] : reqs_) {
      if (rr.ended || rr.cancelled) continue;
      const auto view = engine_->request(id);
      if (!view) continue;  // rejected at Submit, handled in Check()
      const bool readmitted = view->preemptions > rr.preemptions_seen && view->running;
      const bool admitted_now = (view->running && !rr.running) || readmitted;
      if (admitted_now) {
        if (view->preemptions == 0) ++first_admissions;
        const int64_t matched = ref_.Matched(rr.req, view->num_tokens);
        const int64_t used = std::min(matched, (view->num_tokens - 1) / p_.block);
        const int64_t taken = view->cached_tokens - rr.cached_seen;
        if (p_.exact) {
          EXPECT_EQ(taken, used * p_.block) << "request " << id << " at admission";
        } else {
          EXPECT_LE(taken, used * p_.block) << "request " << id << " hit more than was ever published";
        }
        rr.scope = ref_.Scope(rr.req);
        rr.stale = false;
      }
      rr.running = view->running;
      rr.cached_seen = view->cached_tokens;
      rr.preemptions_seen = view->preemptions;
    }
    const int64_t lookups = engine_->stats().prefix_cache.lookups - before.lookups;
    if (p_.exact) {
      EXPECT_EQ(lookups, first_admissions);
    } else {
      EXPECT_GE(lookups, first_admissions);  // admitted and preempted within one step: unseen
    }
  }

  void AfterFinish() {
    for (auto& [id, rr] : reqs_) {
      if (rr.ended) continue;
      const auto view = engine_->request(id);
      const auto done = obs_.outcomes.find(id);
      if (!view) {
        rr.ended = true;
        ASSERT_NE(done, obs_.outcomes.end());
        if (done->second.status == RequestStatus::kOk && !rr.stale) {
          ref_.Publish(rr.req, rr.scope, rr.req.prompt_tokens() + rr.req.output_tokens - 1);
        }
        continue;
      }
      if (view->num_computed > 0 && !rr.stale) ref_.Publish(rr.req, rr.scope, view->num_computed);
      rr.running = view->running;
    }
  }

  RefRequest* PickLive(bool running_only) {
    std::vector<RequestId> ids;
    for (const auto& [id, rr] : reqs_) {
      if (rr.ended || rr.cancelled) continue;
      const auto view = engine_->request(id);
      if (view && (!running_only || view->running)) ids.push_back(id);
    }
    if (ids.empty()) return nullptr;
    return &reqs_.at(ids[rng_.NextBelow(ids.size())]);
  }

  void Cancel() {
    RefRequest* rr = PickLive(false);
    if (rr == nullptr) return;
    engine_->Cancel(rr->req.id, now_);
    if (engine_->request(rr->req.id)) {
      rr->cancelled = true;  // in the step in flight: ends, unpublished, when it completes
    } else {
      rr->ended = true;
    }
  }

  void Finish() {
    RefRequest* rr = PickLive(false);
    if (rr == nullptr) return;
    const RequestId id = rr->req.id;
    for (int guard = 0; guard < 2000 && obs_.outcomes.count(id) == 0; ++guard) {
      if (!engine_->step_in_flight() && !engine_->HasWork()) break;
      Step();
      Check();
      if (::testing::Test::HasFailure()) return;
    }
  }

  void Fork() {
    if (engine_->step_in_flight()) return;
    std::vector<RequestId> ids;
    for (const auto& [id, rr] : reqs_) {
      if (rr.ended || rr.cancelled) continue;
      const auto view = engine_->request(id);
      if (view && view->running && view->generated >= 1 && view->num_tokens - view->num_computed == 1) {
        ids.push_back(id);
      }
    }
    if (ids.empty()) return;
    const RefRequest& parent = reqs_.at(ids[rng_.NextBelow(ids.size())]);
    const auto pv = *engine_->request(parent.req.id);
    const RequestId child_id = next_id_++;
    const int64_t output = 1 + static_cast<int64_t>(rng_.NextBelow(10));
    if (!engine_->Fork(parent.req.id, child_id, output, now_)) return;
    ++forks_;
    RefRequest child{parent.req};
    child.req.id = child_id;
    child.req.output_tokens = output;
    child.req.cancel_at.reset();
    const int64_t answer = pv.num_computed - parent.req.prompt_tokens();
    if (answer > 0) {
      child.req.prompt.push_back({MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(parent.req.id)), answer});
    }
    child.running = true;
    child.scope = ref_.Scope(child.req);
    child.stale = parent.stale;
    const auto cv = engine_->request(child_id);
    if (output == 1) {
      // Its only token came with the parent's: complete at once, holding nothing.
      EXPECT_FALSE(cv.has_value());
      EXPECT_EQ(obs_.outcomes.at(child_id).status, RequestStatus::kOk);
      child.ended = true;
    } else {
      EXPECT_TRUE(cv.has_value());
      if (cv) {
        EXPECT_EQ(cv->num_computed, pv.num_computed);
        EXPECT_EQ(cv->cached_tokens, 0);
      }
    }
    reqs_.emplace(child_id, child);
  }

  void Invalidate() {
    CacheInvalidation inv;
    inv.kind = static_cast<InvalidationKind>(rng_.NextBelow(5));
    if (inv.kind == InvalidationKind::kAdapter) inv.target = rng_.NextBelow(2) == 0 ? 5 : kNoAdapter;
    if (inv.kind == InvalidationKind::kTenant) inv.target = static_cast<int32_t>(rng_.NextBelow(2));
    if (inv.kind == InvalidationKind::kCorpus && rng_.NextBelow(2) == 0) {
      inv.target = static_cast<int32_t>(rng_.NextBelow(2));
    }
    const int64_t before = engine_->stats().prefix_cache.invalidations;
    engine_->Invalidate(inv);
    const int64_t removed = ref_.Invalidate(inv);
    if (p_.exact) {
      EXPECT_EQ(engine_->stats().prefix_cache.invalidations - before, removed);
    }
    for (auto& [id, rr] : reqs_) {
      if (!rr.ended && rr.running && ref_.Scope(rr.req) != rr.scope) rr.stale = true;
    }
  }

  void Check() {
    const Status st = engine_->CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.message();
    for (auto& [id, rr] : reqs_) {
      if (obs_.outcomes.count(id) == 0) continue;
      rr.ended = true;
      EXPECT_FALSE(engine_->request(id).has_value()) << "request " << id << " ended but is live";
    }
    if (p_.exact) {
      EXPECT_EQ(engine_->pool().cached_count(), ref_.size()) << "published entries differ from the reference";
    } else {
      EXPECT_LE(engine_->pool().cached_count(), ref_.size());
    }
  }

  PropertyParams p_;
  RngStream rng_;
  TestCostModel cost_;
  RecordingObserver obs_;
  std::unique_ptr<Engine> engine_;
  ReferenceCache ref_;
  std::map<RequestId, RefRequest> reqs_;
  RequestId next_id_ = 0;
  SimTime now_;
  SimTime step_end_;
  int64_t forks_ = 0;
};

TEST(PrefixCacheProperty, ExactAgainstTheReferenceWhenNothingIsEvicted) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    PrefixCacheProperty(PropertyParams{seed, /*exact=*/true, /*share=*/seed % 3 == 0, seed % 2 == 0 ? 8 : 16})
        .Run(250);
    if (HasFailure()) break;
  }
}

TEST(PrefixCacheProperty, BoundedPoolNeverHitsMoreThanWasPublished) {
  for (uint64_t seed = 101; seed <= 112; ++seed) {
    PrefixCacheProperty(PropertyParams{seed, /*exact=*/false, /*share=*/seed % 3 == 0, seed % 2 == 0 ? 8 : 16})
        .Run(250);
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace fleetplan
