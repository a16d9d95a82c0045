// Block identity for the prefix cache: a chained 128-bit hash over full KV blocks.
//
// A request's token sequence is a layout of segments (workload/request.h): its prompt,
// then its answer (content MakeContentId(kAnswer, request id), the id a later turn of
// the conversation uses for it). Cut the sequence into blocks of B tokens; block i
// covers tokens [i*B, (i+1)*B). Its content is the list of pieces
// (segment content, offset in the segment, tokens) that cover it:
//
//   segments  | tenant T (20 tok)                 | unique U (13 tok) | answer A ... |
//   B = 16    | block 0 = (T,0,16) | block 1 = (T,16,4)+(U,0,12) | block 2 = (U,12,1)+(A,0,15) |
//
// so a block lying inside segment S at offset o is just (S, o, B). Only full blocks get
// an identity (a partial tail is private to its request and never hashed). Identities
// chain from a fixed root:
//
//   hash(-1) = kBlockHashRoot
//   hash(i)  = XXH3_128(hash(i-1) . scope . pieces(i))
//
// with every integer serialised as 8 little-endian bytes (content, offset, tokens per
// piece), so the value is the same on every machine. Equal hashes at block i mean equal
// scope and token-for-token equal content over blocks 0..i.
//
// Why XXH3_128: the cache trusts a hash match as content equality, so a collision is a
// silent wrong hit. For N distinct blocks the chance of any collision is about
// N^2 / 2^(bits+1): with 64 bits, 10^7 blocks per run (a long trace replay at 16-token
// blocks) gives ~3e-6 per run, ~3% over a 10^4-run sweep; with 128 bits even 10^12 blocks
// give ~1.5e-15. XXH3 is not cryptographic, which is fine: inputs are our own layouts,
// nobody crafts collisions. XXH3_128 costs about as much as XXH3_64 on 56-byte inputs.
//
// Scope: the engine-wide identity of the KV (model revision, tokenizer, position
// scheme, KV format) hashed once, then per request the adapter, the tenant namespace and
// the invalidation generations that apply (engine.h). A changed scope never hits.
// Thread model: value types and pure functions.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/workload/request.h"

namespace fleetplan {

struct BlockHash {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
  friend auto operator<=>(const BlockHash&, const BlockHash&) = default;
};

// For hash maps: the low word of a uniformly mixed 128-bit value.
struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo); }
};

// Root of every chain: the first 128 fractional bits of pi ("nothing up my sleeve").
inline constexpr BlockHash kBlockHashRoot{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};

// The engine-wide part of a cache scope. Two engines share KV only if all four match.
struct CacheScopeBase {
  std::string model_revision;          // weights (a new revision recomputes everything)
  std::string tokenizer;
  std::string position_scheme = "rope";
  std::string kv_format;               // KV dtype and block layout, e.g. "bf16/16"
};

BlockHash HashScopeBase(const CacheScopeBase& base);
// Mixes integer components (adapter, namespace, generations) into a base scope.
BlockHash HashScopeParts(const BlockHash& base, std::span<const int64_t> parts);

// Appends to `out` the chained hashes of the first `max_blocks` full blocks of `layout`
// (fewer when the layout has fewer full blocks). REQUIRES: block_tokens >= 1; every
// segment has tokens >= 1.
void AppendBlockHashes(std::span<const PromptSegment> layout, int64_t block_tokens, const BlockHash& scope,
                       int64_t max_blocks, std::vector<BlockHash>* out);

}  // namespace fleetplan
