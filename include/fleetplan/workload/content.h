// Content identity: how a prompt layout (request.h) turns into ids a prefix cache can
// compare, without real token ids.
//
// A segment's ContentId is a 64-bit hash of (kind, a, b), where the kind says what the
// segment is and (a, b) which one of its kind:
//
//   kind                  a                 b            shared by
//   system                0                 0            every request of the workload
//   tenant-instructions   tenant            0            every request of that tenant
//   document              tenant (or -1)    document     requests citing that document
//   unique                request id        segment idx  nobody
//   answer                request id        0            the later turns of its session
//   trace-block           trace hash id     0            trace requests with that id
//
// Block identity. Cut the prompt into blocks of B tokens (the last may be partial). The
// content of a block is the list of pieces (segment content, offset in segment, tokens)
// that cover it, e.g. with B = 16:
//
//   segments  | tenant 0..20 (20 tok)          | unique 0..5 (5 tok) |
//   blocks    | block 0 = (T,0,16) | block 1 = (T,16,4)+(U,0,5)       |
//
// and its key chains the previous block's key: key_b = H(key_{b-1}, content_b, tokens_b)
// with key_{-1} = kBlockRoot ^ scope. Two prompts share blocks 0..k iff their first k+1
// keys are equal, i.e. they are token-for-token equal up to there (segments with equal
// content ids and offsets hold equal tokens). Mooncake traces carry one `hash_id` per
// 512-token block; imported as one trace-block segment per id they give, at B = 512,
// exactly one block key per distinct prefix path (tests pin the shared trace's count).
//
// The hash is SplitMix64-based (core/rng.h), stable across machines and releases:
// changing it changes every content id written to a trace file.
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fleetplan/workload/request.h"

namespace fleetplan {

// Reaches trace files through content ids: explicit values, never renumber.
enum class SegmentKind : uint64_t {
  kSystem = 1,
  kTenantInstructions = 2,
  kDocument = 3,
  kUnique = 4,
  kAnswer = 5,
  kTraceBlock = 6,
};

// One step of the hash chain: a bijective mix of h with a mixed v.
uint64_t HashCombine(uint64_t h, uint64_t v);

ContentId MakeContentId(SegmentKind kind, uint64_t a, uint64_t b = 0);

using BlockKey = uint64_t;

// Root of every block chain (the fractional bits of pi, a "nothing up my sleeve" value).
inline constexpr BlockKey kBlockRoot = 0x243f6a8885a308d3ULL;

// Appends to `out` the chained key of every block of `prompt` (ceil(tokens / B) keys;
// the last block may be partial, its key covers only its tokens). `scope` separates
// caches that must not share (adapter, tenant namespace, ...); 0 for none.
// REQUIRES: block_tokens >= 1; every segment has tokens >= 1.
void AppendBlockKeys(std::span<const PromptSegment> prompt, int64_t block_tokens, uint64_t scope,
                     std::vector<BlockKey>* out);

}  // namespace fleetplan
