// The UTF-8 scans against plain byte-at-a-time computations: the scans skip ASCII a word
// at a time, so every position of a non-ASCII byte relative to a word boundary matters.
#include "core/utf8.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/core/rng.h"

namespace fleetplan::utf8 {
namespace {

std::size_t PlainCountCodePoints(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += IsContinuation(c) ? 0u : 1u;
  return n;
}

// Decodes one code point at a time and checks it against the rules it encodes: length by
// lead byte, continuation bytes, shortest form, no surrogates, nothing above U+10FFFF.
std::size_t PlainFindInvalid(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    std::size_t len = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      len = 1;
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1Fu;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0Fu;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07u;
    } else {
      return i;
    }
    if (i + len > text.size()) return i;
    for (std::size_t k = 1; k < len; ++k) {
      if (!IsContinuation(text[i + k])) return i;
      cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3Fu);
    }
    const uint32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < shortest[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::size_t PlainByteOfCodePoint(std::string_view text, std::size_t index) {
  std::size_t cp = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (IsContinuation(text[i])) continue;
    if (cp == index) return i;
    ++cp;
  }
  return text.size();
}

std::string Hex(std::string_view text) {
  std::string out;
  for (char c : text) out += fmt::format("{:02x} ", static_cast<uint8_t>(c));
  return out;
}

// Text that is mostly ASCII, with valid characters of every length and stray bytes
// (continuations, overlong leads, surrogates, truncated sequences) at random places.
std::string RandomText(RngStream& rng) {
  static const char* const kPieces[] = {"\xC3\xA9",
                                        "\xE2\x82\xAC",
                                        "\xF0\x9F\x98\x80",
                                        "\x80",
                                        "\xC0\xAF",
                                        "\xED\xA0\x80",
                                        "\xF4\x90\x80\x80",
                                        "\xE2\x82",
                                        "\xFF",
                                        "\t",
                                        "\n"};
  std::string text;
  const uint64_t parts = 1 + rng.NextBelow(12);
  for (uint64_t p = 0; p < parts; ++p) {
    text.append(rng.NextBelow(20), static_cast<char>('a' + rng.NextBelow(26)));
    if (rng.NextBelow(3) != 0) text += kPieces[rng.NextBelow(std::size(kPieces))];
  }
  return text;
}

TEST(Utf8Test, ScansMatchTheByteAtATimeComputationsAtEveryAlignment) {
  RngStream rng(7, "utf8_test");
  for (int run = 0; run < 20000; ++run) {
    const std::string text = RandomText(rng);
    ASSERT_EQ(FindInvalid(text), PlainFindInvalid(text)) << Hex(text);
    ASSERT_EQ(CountCodePoints(text), PlainCountCodePoints(text)) << Hex(text);
  }
}

TEST(Utf8Test, ByteOfEachCodePointMatchesTheByteAtATimeWalk) {
  RngStream rng(9, "utf8_test.byte_of");
  for (int run = 0; run < 5000; ++run) {
    const std::string text = RandomText(rng);
    const std::size_t n = PlainCountCodePoints(text);
    for (std::size_t index = 0; index <= n + 9; ++index) {
      ASSERT_EQ(ByteOfCodePoint(text, index), PlainByteOfCodePoint(text, index))
          << "index " << index << ": " << Hex(text);
    }
  }
  EXPECT_EQ(ByteOfCodePoint("\x80\x80"
                            "abc",
                            0),
            2u);  // stray continuation bytes start nothing
  EXPECT_EQ(ByteOfCodePoint(std::string(40, 'a'), 17), 17u);
  EXPECT_EQ(ByteOfCodePoint(std::string(40, 'a'), 40), 40u);
  EXPECT_EQ(ByteOfCodePoint("", 0), 0u);
}

TEST(Utf8Test, AnInvalidByteIsFoundAtEachPlaceAroundAWordBoundary) {
  for (std::size_t at = 0; at < 20; ++at) {
    std::string text(24, 'x');
    text[at] = '\xFF';
    EXPECT_EQ(FindInvalid(text), at);
    EXPECT_EQ(CountCodePoints(text), 24u);
  }
  EXPECT_EQ(FindInvalid(std::string(64, 'a')), std::string_view::npos);
  EXPECT_EQ(FindInvalid(std::string(15, 'a') + "\xE2\x82"), 15u);  // truncated at the end
  EXPECT_EQ(CountCodePoints(std::string(13, 'a') + "\xE2\x82\xAC" + std::string(9, 'b')), 23u);
  EXPECT_EQ(FindInvalid(""), std::string_view::npos);
  EXPECT_EQ(CountCodePoints(""), 0u);
}

}  // namespace
}  // namespace fleetplan::utf8
