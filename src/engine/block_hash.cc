// Chained block hashes; see block_hash.h for the scheme and the choice of XXH3_128.
#include "fleetplan/engine/block_hash.h"

#include <algorithm>

#include "fleetplan/core/status.h"

// Header-only use of the system xxhash (libxxhash-dev): the functions are inlined into
// this file, so no link dependency is added and the hot loop needs no library call.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fleetplan {
namespace {

// Bytes of one serialised piece: content, offset, tokens.
constexpr size_t kPieceBytes = 24;
// Bytes before the pieces: parent hash and scope, 16 each.
constexpr size_t kHeaderBytes = 32;

// Little-endian whatever the host, so identities are the same on every machine. One
// resize per value, not eight push_backs: this is the hottest line of the cache.
void PutU64(uint64_t v, std::vector<unsigned char>& buf) {
  const size_t at = buf.size();
  buf.resize(at + 8);
  for (size_t i = 0; i < 8; ++i) buf[at + i] = static_cast<unsigned char>(v >> (8 * i));
}

void PutHash(const BlockHash& h, std::vector<unsigned char>& buf) {
  PutU64(h.hi, buf);
  PutU64(h.lo, buf);
}

BlockHash Digest(const std::vector<unsigned char>& buf) {
  const XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size());
  return BlockHash{h.high64, h.low64};
}

}  // namespace

BlockHash HashScopeBase(const CacheScopeBase& base) {
  std::vector<unsigned char> buf;
  PutHash(kBlockHashRoot, buf);
  // Each string is length-prefixed so ("ab", "c") and ("a", "bc") differ.
  for (const std::string* s : {&base.model_revision, &base.tokenizer, &base.position_scheme, &base.kv_format}) {
    PutU64(s->size(), buf);
    buf.insert(buf.end(), s->begin(), s->end());
  }
  return Digest(buf);
}

BlockHash HashScopeParts(const BlockHash& base, std::span<const int64_t> parts) {
  std::vector<unsigned char> buf;
  buf.reserve(16 + 8 * parts.size());
  PutHash(base, buf);
  for (int64_t p : parts) PutU64(static_cast<uint64_t>(p), buf);
  return Digest(buf);
}

void AppendBlockHashes(std::span<const PromptSegment> layout, int64_t block_tokens, const BlockHash& scope,
                       int64_t max_blocks, std::vector<BlockHash>* out) {
  FP_ASSERT(block_tokens >= 1);
  if (max_blocks <= 0) return;
  std::vector<unsigned char> buf;
  buf.reserve(kHeaderBytes + 2 * kPieceBytes);
  auto start_block = [&](const BlockHash& parent) {
    buf.clear();
    PutHash(parent, buf);
    PutHash(scope, buf);
  };
  BlockHash parent = kBlockHashRoot;
  start_block(parent);
  int64_t filled = 0;  // tokens of the current block covered so far
  int64_t done = 0;    // blocks appended
  for (const PromptSegment& segment : layout) {
    FP_ASSERT(segment.tokens >= 1);
    int64_t offset = 0;
    while (offset < segment.tokens) {
      const int64_t take = std::min(segment.tokens - offset, block_tokens - filled);
      PutU64(segment.content, buf);
      PutU64(static_cast<uint64_t>(offset), buf);
      PutU64(static_cast<uint64_t>(take), buf);
      offset += take;
      filled += take;
      if (filled < block_tokens) continue;
      parent = Digest(buf);
      out->push_back(parent);
      if (++done == max_blocks) return;
      start_block(parent);
      filled = 0;
    }
  }
}

}  // namespace fleetplan
