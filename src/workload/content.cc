// Content ids and chained block keys; see content.h for the scheme.
#include "fleetplan/workload/content.h"

#include <algorithm>

#include "fleetplan/core/rng.h"
#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

// Offsets v before mixing so that v = 0 does not map to SplitMix64(0) = 0.
constexpr uint64_t kValueOffset = 0x9e3779b97f4a7c15ULL;

// Root of content-id hashing, distinct from kBlockRoot so that a content id never
// equals a block key by construction (the fractional bits of e).
constexpr uint64_t kContentRoot = 0xb7e151628aed2a6bULL;

}  // namespace

uint64_t HashCombine(uint64_t h, uint64_t v) { return SplitMix64(h ^ SplitMix64(v + kValueOffset)); }

ContentId MakeContentId(SegmentKind kind, uint64_t a, uint64_t b) {
  uint64_t h = HashCombine(kContentRoot, static_cast<uint64_t>(kind));
  h = HashCombine(h, a);
  return HashCombine(h, b);
}

void AppendBlockKeys(std::span<const PromptSegment> prompt, int64_t block_tokens, uint64_t scope,
                     std::vector<BlockKey>* out) {
  FP_ASSERT(block_tokens >= 1);
  BlockKey parent = kBlockRoot ^ scope;
  uint64_t content = kBlockRoot;  // running hash of the current block's pieces
  int64_t filled = 0;             // tokens of the current block covered so far
  for (const PromptSegment& segment : prompt) {
    FP_ASSERT(segment.tokens >= 1);
    int64_t offset = 0;
    while (offset < segment.tokens) {
      const int64_t take = std::min(segment.tokens - offset, block_tokens - filled);
      content = HashCombine(content, segment.content);
      content = HashCombine(content, static_cast<uint64_t>(offset));
      content = HashCombine(content, static_cast<uint64_t>(take));
      offset += take;
      filled += take;
      if (filled == block_tokens) {
        parent = HashCombine(HashCombine(parent, content), static_cast<uint64_t>(filled));
        out->push_back(parent);
        content = kBlockRoot;
        filled = 0;
      }
    }
  }
  if (filled > 0) {
    out->push_back(HashCombine(HashCombine(parent, content), static_cast<uint64_t>(filled)));
  }
}

}  // namespace fleetplan
