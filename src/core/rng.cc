// xoshiro256** seeded through SplitMix64; see rng.h for the contract.
#include "fleetplan/core/rng.h"

#include "fleetplan/core/status.h"

namespace fleetplan {
namespace {

// FNV-1a 64-bit parameters (Fowler/Noll/Vo, "FNV-1a" reference values).
constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

// SplitMix64's increment (the 64-bit golden ratio); successive state words are the
// finaliser applied to seed + i * kGoldenGamma, exactly as the reference SplitMix64
// generator produces them.
constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// NextDouble keeps the top 53 bits, the width of a double's significand.
constexpr int kDoubleBits = 53;
constexpr double kTwoToMinus53 = 0x1.0p-53;

constexpr uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// The full 128-bit product of two 64-bit words, as (high, low), in portable arithmetic
// (no __int128, which -Wpedantic rejects).
struct Product128 {
  uint64_t high;
  uint64_t low;
};

Product128 Multiply128(uint64_t a, uint64_t b) {
  constexpr uint64_t kLow32 = 0xffffffffULL;
  const uint64_t a_lo = a & kLow32, a_hi = a >> 32;
  const uint64_t b_lo = b & kLow32, b_hi = b >> 32;
  const uint64_t lo_lo = a_lo * b_lo;
  const uint64_t hi_lo = a_hi * b_lo;
  const uint64_t lo_hi = a_lo * b_hi;
  const uint64_t hi_hi = a_hi * b_hi;
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & kLow32) + lo_hi;
  return Product128{hi_hi + (hi_lo >> 32) + (cross >> 32), (cross << 32) | (lo_lo & kLow32)};
}

// The seed of stream `name` under `parent_seed` (a master seed, or a parent stream's
// seed for Fork). The parent is mixed before the name's hash is folded in so that
// neighbouring master seeds (42, 43) give unrelated streams.
uint64_t DeriveSeed(uint64_t parent_seed, std::string_view name) {
  return SplitMix64(SplitMix64(parent_seed) ^ Fnv1a64(name));
}

}  // namespace

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = kFnvOffsetBasis;
  for (const char c : bytes) {
    hash ^= static_cast<uint64_t>(static_cast<unsigned char>(c));
    hash *= kFnvPrime;
  }
  return hash;
}

uint64_t SplitMix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

RngStream::RngStream(uint64_t master_seed, std::string_view stream_name)
    : RngStream(DeriveSeed(master_seed, stream_name)) {}

RngStream::RngStream(uint64_t derived_seed) : seed_(derived_seed) {
  // Four distinct inputs through a bijection: at most one state word can be zero, so the
  // state is never the all-zero fixed point of xoshiro.
  for (uint64_t i = 0; i < 4; ++i) {
    s_[i] = SplitMix64(derived_seed + (i + 1) * kGoldenGamma);
  }
}

uint64_t RngStream::NextU64() {
  // xoshiro256** 1.0 (Blackman and Vigna, 2018).
  const uint64_t result = RotateLeft(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = RotateLeft(s_[3], 45);
  return result;
}

double RngStream::NextDouble() {
  return static_cast<double>(NextU64() >> (64 - kDoubleBits)) * kTwoToMinus53;
}

double RngStream::NextDoubleOpenZero() {
  return static_cast<double>((NextU64() >> (64 - kDoubleBits)) + 1) * kTwoToMinus53;
}

uint64_t RngStream::NextBelow(uint64_t n) {
  FP_ASSERT(n > 0);
  // Lemire, "Fast Random Integer Generation in an Interval" (2019): the high word of
  // x * n is uniform on [0, n) once the low words below 2^64 mod n are rejected.
  Product128 m = Multiply128(NextU64(), n);
  if (m.low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (m.low < threshold) {
      m = Multiply128(NextU64(), n);
    }
  }
  return m.high;
}

RngStream RngStream::Fork(std::string_view child_name) const {
  return RngStream(DeriveSeed(seed_, child_name));
}

}  // namespace fleetplan
