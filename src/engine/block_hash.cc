// Chained block hashes; see block_hash.h for the scheme and the choice of XXH3_128.
#include "fleetplan/engine/block_hash.h"

#include <algorithm>
#include <bit>
#include <cstring>

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

// The bytes one identity is hashed from. Values are written little-endian whatever the
// host, so identities are the same on every machine. Written by index with one bounds
// check per value (no per-byte push_back, no value-initialising resize): building the
// input was the costliest part of hashing a block (perf, docs/PERFORMANCE.md "Engine").
class HashInput {
 public:
  void Clear() { used_ = 0; }
  void Put(uint64_t v) {
    Reserve(8);
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(bytes_.data() + used_, &v, 8);
    } else {
      for (size_t i = 0; i < 8; ++i) bytes_[used_ + i] = static_cast<unsigned char>(v >> (8 * i));
    }
    used_ += 8;
  }
  void Put(const BlockHash& h) {
    Put(h.hi);
    Put(h.lo);
  }
  // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
  void Put(const std::string& text) {
    Put(static_cast<uint64_t>(text.size()));
    Reserve(text.size());
    std::copy(text.begin(), text.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(used_));
    used_ += text.size();
  }
  BlockHash Digest() const {
    const XXH128_hash_t h = XXH3_128bits(bytes_.data(), used_);
    return BlockHash{h.high64, h.low64};
  }

 private:
  void Reserve(size_t more) {
    if (used_ + more > bytes_.size()) bytes_.resize(std::max(2 * bytes_.size(), used_ + more));
  }
  std::vector<unsigned char> bytes_ = std::vector<unsigned char>(kHeaderBytes + 4 * kPieceBytes);
  size_t used_ = 0;
};

}  // namespace

BlockHash HashScopeBase(const CacheScopeBase& base) {
  HashInput in;
  in.Put(kBlockHashRoot);
  for (const std::string* s : {&base.model_revision, &base.tokenizer, &base.position_scheme, &base.kv_format}) {
    in.Put(*s);
  }
  return in.Digest();
}

BlockHash HashScopeParts(const BlockHash& base, std::span<const int64_t> parts) {
  HashInput in;
  in.Put(base);
  for (int64_t p : parts) in.Put(static_cast<uint64_t>(p));
  return in.Digest();
}

void AppendBlockHashes(std::span<const PromptSegment> layout, int64_t block_tokens, const BlockHash& scope,
                       int64_t max_blocks, std::vector<BlockHash>* out) {
  FP_ASSERT(block_tokens >= 1);
  if (max_blocks <= 0) return;
  HashInput in;
  auto start_block = [&](const BlockHash& parent) {
    in.Clear();
    in.Put(parent);
    in.Put(scope);
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
      in.Put(segment.content);
      in.Put(static_cast<uint64_t>(offset));
      in.Put(static_cast<uint64_t>(take));
      offset += take;
      filled += take;
      if (filled < block_tokens) continue;
      parent = in.Digest();
      out->push_back(parent);
      if (++done == max_blocks) return;
      start_block(parent);
      filled = 0;
    }
  }
}

}  // namespace fleetplan
