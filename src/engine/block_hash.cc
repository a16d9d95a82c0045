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

// Writes `v` as 8 little-endian bytes at `p`, whatever the host, so identities are the
// same on every machine.
inline void StoreLe64(unsigned char* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, 8);
  } else {
    for (size_t i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
  }
}

// The bytes one identity is hashed from, for the general case (a block of several
// pieces, a scope). Written by index with one bounds check per value (no per-byte
// push_back, no value-initialising resize); growing is out of line because it is rare.
class HashInput {
 public:
  void Clear() { used_ = 0; }
  void Put(uint64_t v) {
    if (used_ + 8 > bytes_.size()) Grow(8);
    StoreLe64(bytes_.data() + used_, v);
    used_ += 8;
  }
  void Put(const BlockHash& h) {
    Put(h.hi);
    Put(h.lo);
  }
  // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
  void Put(const std::string& text) {
    Put(static_cast<uint64_t>(text.size()));
    if (used_ + text.size() > bytes_.size()) Grow(text.size());
    std::copy(text.begin(), text.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(used_));
    used_ += text.size();
  }
  BlockHash Digest() const {
    const XXH128_hash_t h = XXH3_128bits(bytes_.data(), used_);
    return BlockHash{h.high64, h.low64};
  }

 private:
  [[gnu::noinline]] void Grow(size_t more) { bytes_.resize(std::max(2 * bytes_.size(), used_ + more)); }
  std::vector<unsigned char> bytes_ = std::vector<unsigned char>(kHeaderBytes + 4 * kPieceBytes);
  size_t used_ = 0;
};

// The identity of a block that lies inside one segment: the input is one piece, 56 bytes,
// exactly what HashInput would hold for it. The length is a constant here, so with the
// hash inlined (flatten) the compiler drops XXH3's dispatch on the length and keeps only
// the 17-128-byte path: most blocks of a long prompt are of this kind (perf,
// docs/PERFORMANCE.md "Engine").
[[gnu::flatten]] BlockHash HashOnePieceBlock(const BlockHash& parent, const BlockHash& scope, uint64_t content,
                                             uint64_t offset, uint64_t tokens) {
  unsigned char bytes[kHeaderBytes + kPieceBytes];
  StoreLe64(bytes, parent.hi);
  StoreLe64(bytes + 8, parent.lo);
  StoreLe64(bytes + 16, scope.hi);
  StoreLe64(bytes + 24, scope.lo);
  StoreLe64(bytes + 32, content);
  StoreLe64(bytes + 40, offset);
  StoreLe64(bytes + 48, tokens);
  const XXH128_hash_t h = XXH3_128bits(bytes, sizeof bytes);
  return BlockHash{h.high64, h.low64};
}

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
  int64_t layout_tokens = 0;
  for (const PromptSegment& segment : layout) layout_tokens += segment.tokens;
  // Room for every block up front (growing geometrically, should a caller append to one
  // vector repeatedly).
  const size_t needed = out->size() + static_cast<size_t>(std::min(max_blocks, layout_tokens / block_tokens));
  if (needed > out->capacity()) out->reserve(std::max(needed, 2 * out->capacity()));
  HashInput in;
  BlockHash parent = kBlockHashRoot;
  int64_t filled = 0;  // tokens of the current block covered so far
  int64_t done = 0;    // blocks appended
  for (const PromptSegment& segment : layout) {
    FP_ASSERT(segment.tokens >= 1);
    int64_t offset = 0;
    while (offset < segment.tokens) {
      if (filled == 0) {
        // Whole blocks inside this segment: one piece each, the fixed-size input.
        while (segment.tokens - offset >= block_tokens) {
          parent = HashOnePieceBlock(parent, scope, segment.content, static_cast<uint64_t>(offset),
                                     static_cast<uint64_t>(block_tokens));
          out->push_back(parent);
          if (++done == max_blocks) return;
          offset += block_tokens;
        }
        if (offset == segment.tokens) break;
        in.Clear();
        in.Put(parent);
        in.Put(scope);
      }
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
      filled = 0;
    }
  }
}

}  // namespace fleetplan
