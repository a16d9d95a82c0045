// Deterministic random numbers: one master seed, one named stream per component.
//
// The generator is ours (xoshiro256** seeded through SplitMix64) because the standard
// library's engines are fine but its distributions differ between implementations, and
// abseil's are not stable across processes; we need byte-identical draws on every
// machine. A stream's seed is SplitMix64-mixed from (master seed, FNV-1a-64 of its name),
// so adding a consumer with a new name does not shift any other stream's draws.
//
// Derivation, exactly (documented so that other tools can reproduce a stream):
//   seed(parent, name) = SplitMix64(SplitMix64(parent) ^ Fnv1a64(name))
//   state word s[i]    = SplitMix64(seed + (i + 1) * 0x9e3779b97f4a7c15), i = 0..3
//   (the first four outputs of the reference SplitMix64 generator started at seed)
// where parent is the master seed for RngStream(master, name) and the parent stream's
// seed() for Fork(name). Four distinct inputs through a bijection leave at most one state
// word zero, so the state is never xoshiro's all-zero fixed point.
//
// Golden values for RngStream(42, "test") are pinned in tests/core/rng_test.cc: changing
// the generator, the seeding or the name hash is a breaking change of every output.
// Thread model: a stream is single-threaded state; make one per component. Copying a
// stream copies its position (the copy replays the same draws).
#pragma once

#include <cstdint>
#include <string_view>

namespace fleetplan {

class RngStream {
 public:
  RngStream(uint64_t master_seed, std::string_view stream_name);

  uint64_t NextU64();
  // Uniform in [0, 1) with 53 random bits: (NextU64() >> 11) * 2^-53.
  double NextDouble();
  // Uniform in (0, 1]: safe for log(). ((NextU64() >> 11) + 1) * 2^-53.
  double NextDoubleOpenZero();
  // Uniform integer in [0, n). REQUIRES: n > 0. Unbiased (Lemire's method); usually one
  // NextU64, occasionally more (rejection probability < n / 2^64).
  uint64_t NextBelow(uint64_t n);

  // A child stream, independent of this one's position: seed(this stream's seed, name).
  // Fork(name) equals RngStream(seed(), name), whatever has been drawn from this stream.
  RngStream Fork(std::string_view child_name) const;

  uint64_t seed() const { return seed_; }

 private:
  explicit RngStream(uint64_t derived_seed);
  uint64_t seed_;
  uint64_t s_[4];
};

// FNV-1a 64-bit: stable hash of a name (documented so other tools can derive streams).
uint64_t Fnv1a64(std::string_view bytes);
// SplitMix64 finaliser: a bijective mix of 64 bits.
uint64_t SplitMix64(uint64_t x);

}  // namespace fleetplan
