// LiveRequest (Engine::Live): the per-request state of a live request, internal to the
// engine's .cc files and its KV cache manager (kv_cache_manager.h); engine.h documents
// the arithmetic. Reset when the request ends; the slot keeps only the capacity of its
// vectors for the next request (see ResetKeepingCapacity).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "fleetplan/engine/engine.h"

namespace fleetplan {

// LiveRequest::seal_at when the KV cache manager wants no Seal call.
inline constexpr int64_t kNeverSeal = std::numeric_limits<int64_t>::max();

struct LiveRequest {
  // Read or written for every chunk of every step, so kept together at the front: the
  // first cache line holds what scheduling and applying a decode need, the second its
  // timing and blocks. (With the request first, these spread over three lines behind
  // ~120 bytes of request; perf, docs/PERFORMANCE.md "Engine".)
  int64_t num_tokens = 0;    // prompt + sampled so far
  int64_t num_computed = 0;  // tokens whose KV exists
  int64_t generated = 0;     // output tokens sampled
  int64_t output_tokens = 0; // req.output_tokens, beside the counters it ends
  int64_t scheduled_step = -1; // step index of the last step that scheduled it
  // The num_computed at which the KV cache manager seals the next full block (Seal);
  // kNeverSeal without the prefix cache, or while the request holds no blocks. Set by the
  // manager only: the engine compares, so a chunk that fills no block calls nothing.
  int64_t seal_at = kNeverSeal;
  bool in_use = false;
  bool running = false;        // member of running_ (kept so membership is O(1))
  bool waiting = false;        // in the waiting queue at position wait_pos
  bool importing = false;      // between BeginImport and FinishImport: KV still moving
  bool cancelled = false;
  bool gap_spans_preemption = false;
  bool publishable = true;     // prefix cache: false once an invalidation changed its scope
  // blocks[sealed - 1] is the published holder of hashes[sealed - 1], as this request's
  // last publication found: the parent of its next one, known without reading the
  // pool. Its own block cannot be evicted while referenced, and an invalidation that
  // reaches it changes the scope, which stops publishing. False whenever unknown.
  bool sealed_tail_published = false;
  SimTime last_token;
  Duration itl_max;
  std::optional<SimTime> first_token;
  std::vector<BlockId> blocks;

  Request req;
  int64_t enqueued_step = 0;   // step index when it last entered the waiting queue
  int64_t wait_pos = 0;        // its position there while `waiting` (Engine::EnqueueWaiting)
  int32_t preemptions = 0;

  // Prefix cache (the KV cache manager's). Blocks [0, sealed) are full and immutable.
  int64_t sealed = 0;
  // `hashes` are the chained identities of the full blocks this request
  // can ever compute, under `scope` (valid while scope_epoch matches the engine's, or
  // the recomputed scope is unchanged).
  std::vector<BlockHash> hashes;
  BlockHash scope;
  int64_t scope_epoch = -1;    // -1: hashes not computed
  int64_t cached_tokens = 0;   // tokens taken from the cache, over admissions

  // Back to a default-constructed Live, except that the prompt, block and hash vectors
  // keep their capacity (emptied): with the prefix cache on, the hash vector alone is
  // ~1.2 KB per request, past glibc's thread cache, and was freed and reallocated for
  // every request. What stays allocated is bounded by the peak number of live requests
  // times the largest request each slot has held; nothing of the old request survives.
  void ResetKeepingCapacity() {
    std::vector<PromptSegment> kept_prompt = std::move(req.prompt);
    std::vector<BlockId> kept_blocks = std::move(blocks);
    std::vector<BlockHash> kept_hashes = std::move(hashes);
    *this = LiveRequest{};
    kept_prompt.clear();
    kept_blocks.clear();
    kept_hashes.clear();
    req.prompt = std::move(kept_prompt);
    blocks = std::move(kept_blocks);
    hashes = std::move(kept_hashes);
  }

  // Tokens still to compute: the last sampled token is never computed.
  int64_t remaining_work() const { return req.prompt_tokens() + req.output_tokens - 1 - num_computed; }
  bool is_decode() const { return generated > 0 && num_tokens - num_computed == 1; }
};

}  // namespace fleetplan
