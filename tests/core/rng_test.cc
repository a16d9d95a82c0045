// RngStream: byte-stable golden draws, the documented seed derivation, stream
// independence (names, seeds, new consumers), Fork semantics and the integer/double
// conversions.
#include "fleetplan/core/rng.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace fleetplan {
namespace {

std::vector<uint64_t> Draws(RngStream stream, int count) {
  std::vector<uint64_t> out;
  for (int i = 0; i < count; ++i) out.push_back(stream.NextU64());
  return out;
}

// ---- Reference model of the documented derivation (rng.h), written independently of
// src/core/rng.cc from the published algorithms: xoshiro256** 1.0 and SplitMix64.

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

struct ReferenceXoshiro {
  std::array<uint64_t, 4> s;
  uint64_t Next() {
    const uint64_t result = Rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = Rotl(s[3], 45);
    return result;
  }
};

// The reference SplitMix64 *generator*: state += gamma, then the finaliser.
struct ReferenceSplitMix {
  uint64_t x;
  uint64_t Next() {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

ReferenceXoshiro ReferenceStream(uint64_t parent, const std::string& name) {
  ReferenceSplitMix mix{SplitMix64(SplitMix64(parent) ^ Fnv1a64(name))};
  ReferenceXoshiro x{};
  for (uint64_t& word : x.s) word = mix.Next();
  return x;
}

TEST(Fnv1a64, MatchesPublishedTestVectors) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(SplitMix64, FinaliserReproducesTheReferenceGeneratorFromSeedZero) {
  // The reference SplitMix64 generator seeded with 0 starts with these four outputs.
  constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  EXPECT_EQ(SplitMix64(1 * kGamma), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(SplitMix64(2 * kGamma), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(SplitMix64(3 * kGamma), 0x06c45d188009454fULL);
  EXPECT_EQ(SplitMix64(4 * kGamma), 0xf88bb8a8724c81ecULL);
}

TEST(ReferenceXoshiro, MatchesPublishedFirstOutputsForState1234) {
  // Sanity check of the test's own reference model: xoshiro256** from {1, 2, 3, 4}.
  ReferenceXoshiro x{{1, 2, 3, 4}};
  EXPECT_EQ(x.Next(), 11520u);
  EXPECT_EQ(x.Next(), 0u);
  EXPECT_EQ(x.Next(), 1509978240u);
  EXPECT_EQ(x.Next(), 1215971899390074240u);
}

// ---- Golden values: a change here changes every simulation output.

TEST(RngStreamGolden, First8NextU64OfSeed42Test) {
  RngStream rng(42, "test");
  EXPECT_EQ(rng.seed(), 0xe660add28641dd0cULL);
  const std::vector<uint64_t> expected = {
      0x215f3c4bcbda4a41ULL, 0x77b50ca55179b198ULL, 0x8f4e2cd21ee4f6d3ULL, 0x074573397d2c5bf8ULL,
      0x9179bfed67e8f191ULL, 0x16a620c746cc4e3eULL, 0x0cf14c9e12068fe8ULL, 0x8688a5af1644aec1ULL,
  };
  EXPECT_EQ(Draws(rng, 8), expected);
}

TEST(RngStreamGolden, DoublesAndBoundedIntegers) {
  RngStream a(42, "test");
  EXPECT_EQ(a.NextDouble(), 0.13035942888732521);
  EXPECT_EQ(a.NextDouble(), 0.4676063445672074);
  RngStream b(42, "test");
  EXPECT_EQ(b.NextDoubleOpenZero(), 0.13035942888732532);
  EXPECT_EQ(b.NextDoubleOpenZero(), 0.46760634456720751);
  RngStream c(42, "test");
  EXPECT_EQ(c.NextBelow(1000), 130u);
  EXPECT_EQ(c.NextBelow(1000), 467u);
  EXPECT_EQ(c.NextBelow(1000), 559u);
  EXPECT_EQ(c.NextBelow(1000), 28u);
}

TEST(RngStreamGolden, Fork) {
  RngStream child = RngStream(42, "test").Fork("child");
  EXPECT_EQ(child.seed(), 0x38a32f54d2e71a79ULL);
  EXPECT_EQ(child.NextU64(), 0xa16edd6d4792a260ULL);
}

TEST(RngStream, FollowsTheDocumentedDerivation) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {0, ""}, {42, "test"}, {42, "router"}, {7, "workload/arrivals"}, {~0ULL, "x"}};
  for (const auto& [seed, name] : cases) {
    SCOPED_TRACE(name);
    RngStream rng(seed, name);
    ReferenceXoshiro ref = ReferenceStream(seed, name);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(rng.NextU64(), ref.Next()) << "draw " << i;
  }
}

// ---- Independence of streams.

TEST(RngStream, SameSeedAndNameReplayTheSameDraws) {
  EXPECT_EQ(Draws(RngStream(9, "arrivals"), 32), Draws(RngStream(9, "arrivals"), 32));
}

TEST(RngStream, DifferentNamesGiveDifferentStreams) {
  const std::vector<std::string> names = {"",      "a",    "b",      "test",
                                          "test2", "Test", "router", "routes"};
  std::vector<std::vector<uint64_t>> seen;
  for (const std::string& name : names) {
    std::vector<uint64_t> draws = Draws(RngStream(42, name), 4);
    for (const auto& other : seen) {
      for (size_t i = 0; i < draws.size(); ++i) EXPECT_NE(draws[i], other[i]) << name;
    }
    seen.push_back(std::move(draws));
  }
}

TEST(RngStream, NeighbouringMasterSeedsGiveDifferentStreams) {
  const std::vector<uint64_t> a = Draws(RngStream(42, "test"), 4);
  const std::vector<uint64_t> b = Draws(RngStream(43, "test"), 4);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]);
}

TEST(RngStream, AddingANewStreamDoesNotChangeAnotherStreamsDraws) {
  const std::vector<uint64_t> alone = Draws(RngStream(42, "arrivals"), 16);
  // The same consumer, now sharing the master seed with new consumers created before it
  // and drawn from in between its own draws.
  RngStream before(42, "new-consumer-before");
  RngStream arrivals(42, "arrivals");
  RngStream after(42, "new-consumer-after");
  std::vector<uint64_t> interleaved;
  for (int i = 0; i < 16; ++i) {
    before.NextU64();
    interleaved.push_back(arrivals.NextU64());
    after.NextBelow(7);
    after.NextDouble();
  }
  EXPECT_EQ(interleaved, alone);
}

TEST(RngStream, CopyReplaysFromTheSamePosition) {
  RngStream rng(5, "copy");
  rng.NextU64();
  RngStream copy = rng;
  EXPECT_EQ(Draws(rng, 8), Draws(copy, 8));
}

// ---- Fork semantics.

TEST(RngStreamFork, EqualsAStreamNamedUnderTheParentSeed) {
  RngStream parent(42, "fleet");
  EXPECT_EQ(Draws(parent.Fork("replica-0"), 8), Draws(RngStream(parent.seed(), "replica-0"), 8));
}

TEST(RngStreamFork, DoesNotDependOnTheParentsPosition) {
  RngStream parent(42, "fleet");
  const std::vector<uint64_t> fresh = Draws(parent.Fork("replica-0"), 8);
  for (int i = 0; i < 100; ++i) parent.NextU64();
  EXPECT_EQ(Draws(parent.Fork("replica-0"), 8), fresh);
}

TEST(RngStreamFork, DoesNotAdvanceTheParent) {
  RngStream parent(42, "fleet");
  RngStream untouched = parent;
  (void)parent.Fork("replica-0");
  (void)parent.Fork("replica-1");
  EXPECT_EQ(Draws(parent, 8), Draws(untouched, 8));
}

TEST(RngStreamFork, ChildrenDifferFromEachOtherFromTheParentAndFromTopLevelNames) {
  RngStream parent(42, "fleet");
  const std::vector<uint64_t> c0 = Draws(parent.Fork("replica-0"), 4);
  const std::vector<uint64_t> c1 = Draws(parent.Fork("replica-1"), 4);
  const std::vector<uint64_t> top = Draws(RngStream(42, "replica-0"), 4);
  const std::vector<uint64_t> own = Draws(parent, 4);
  for (size_t i = 0; i < c0.size(); ++i) {
    EXPECT_NE(c0[i], c1[i]);
    EXPECT_NE(c0[i], top[i]);
    EXPECT_NE(c0[i], own[i]);
  }
}

TEST(RngStreamFork, NestedForksAreDeterministic) {
  const RngStream root(1, "root");
  EXPECT_EQ(Draws(root.Fork("a").Fork("b"), 8), Draws(root.Fork("a").Fork("b"), 8));
  EXPECT_NE(Draws(root.Fork("a").Fork("b"), 1), Draws(root.Fork("b").Fork("a"), 1));
}

// ---- Conversions.

TEST(RngStream, NextDoubleIsTheTop53BitsScaled) {
  RngStream rng(3, "doubles");
  RngStream raw = rng;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t bits = raw.NextU64() >> 11;
    ASSERT_EQ(rng.NextDouble(), std::ldexp(static_cast<double>(bits), -53));
  }
}

TEST(RngStream, NextDoubleOpenZeroIsShiftedUpByOneUlp) {
  RngStream rng(3, "doubles");
  RngStream raw = rng;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t bits = (raw.NextU64() >> 11) + 1;
    const double u = rng.NextDoubleOpenZero();
    ASSERT_EQ(u, std::ldexp(static_cast<double>(bits), -53));
    ASSERT_GT(u, 0.0);
    ASSERT_LE(u, 1.0);
  }
}

__extension__ typedef unsigned __int128 U128;

// Lemire's method with native 128-bit arithmetic, as an independent reference.
uint64_t ReferenceBelow(ReferenceXoshiro& x, uint64_t n) {
  U128 m = static_cast<U128>(x.Next()) * n;
  if (static_cast<uint64_t>(m) < n) {
    const uint64_t threshold = (0 - n) % n;
    while (static_cast<uint64_t>(m) < threshold) m = static_cast<U128>(x.Next()) * n;
  }
  return static_cast<uint64_t>(m >> 64);
}

TEST(RngStream, NextBelowMatchesLemireWith128BitArithmetic) {
  const std::vector<uint64_t> bounds = {
      1, 2, 3, 6, 1000, (1ULL << 32) + 1, (1ULL << 63) + 1, 3ULL << 62, ~0ULL};
  for (uint64_t n : bounds) {
    SCOPED_TRACE(n);
    RngStream rng(11, "below");
    ReferenceXoshiro ref = ReferenceStream(11, "below");
    for (int i = 0; i < 200; ++i) {
      const uint64_t v = rng.NextBelow(n);
      ASSERT_EQ(v, ReferenceBelow(ref, n));
      ASSERT_LT(v, n);
    }
  }
}

TEST(RngStream, NextBelowOneIsAlwaysZero) {
  RngStream rng(1, "one");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(rng.NextBelow(1), 0u);
}

TEST(RngStream, NextBelowHasNoModuloBiasForHugeBounds) {
  // n = 3 * 2^62: an unbiased draw is below 2^63 with probability 2/3; the naive
  // NextU64() % n would give 3/4. With N = 30000 the standard error of the fraction is
  // sqrt(2/9 / N) = 0.0027, so 5 standard errors (0.014) separate the two by far.
  constexpr int kDraws = 30000;
  RngStream rng(42, "bias");
  int below = 0;
  for (int i = 0; i < kDraws; ++i) below += rng.NextBelow(3ULL << 62) < (1ULL << 63) ? 1 : 0;
  const double fraction = static_cast<double>(below) / kDraws;
  EXPECT_NEAR(fraction, 2.0 / 3.0, 5 * std::sqrt(2.0 / 9.0 / kDraws));
}

TEST(RngStream, NextBelowSmallBoundIsUniformByChiSquare) {
  // Six faces, N = 60000: chi-square with 5 degrees of freedom; the critical value at
  // alpha = 0.001 is 20.515.
  constexpr int kDraws = 60000;
  constexpr int kFaces = 6;
  RngStream rng(42, "die");
  std::array<int, kFaces> counts{};
  for (int i = 0; i < kDraws; ++i) ++counts[rng.NextBelow(kFaces)];
  const double expected = static_cast<double>(kDraws) / kFaces;
  double chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 20.515);
}

TEST(RngStreamDeathTest, NextBelowZeroIsABug) {
  RngStream rng(1, "zero");
  EXPECT_DEATH(rng.NextBelow(0), "assertion failed: n > 0");
}

}  // namespace
}  // namespace fleetplan
