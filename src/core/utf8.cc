#include "core/utf8.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace fleetplan::utf8 {

namespace {

// ASCII runs are skipped a word at a time: files, traces and error snippets are nearly all
// ASCII, and these scans run over whole files (the encoding check) and long lines.
constexpr std::size_t kWord = sizeof(uint64_t);
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// The end of the run of ASCII bytes at `i`, to a whole word: the first word at or after
// `i` that holds a byte >= 0x80, or the last whole word's end.
std::size_t SkipAsciiWords(std::string_view text, std::size_t i) {
  while (i + kWord <= text.size()) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + i, kWord);
    if ((word & kHighBits) != 0) break;
    i += kWord;
  }
  return i;
}

}  // namespace

std::size_t CountCodePoints(std::string_view text) {
  std::size_t n = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t ascii_end = SkipAsciiWords(text, i);
    n += ascii_end - i;
    i = ascii_end;
    if (i < text.size()) {
      if (!IsContinuation(text[i])) ++n;
      ++i;
    }
  }
  return n;
}

std::size_t ByteOfCodePoint(std::string_view text, std::size_t index) {
  std::size_t cp = 0;  // code points that start before byte i
  std::size_t i = 0;
  while (i < text.size()) {
    if (index - cp >= kWord) {  // a whole ASCII word here holds code points cp .. cp + 7
      const std::size_t ascii_end = SkipAsciiWords(text.substr(0, i + (index - cp) / kWord * kWord), i);
      cp += ascii_end - i;
      i = ascii_end;
      if (i == text.size()) break;
    }
    if (!IsContinuation(text[i])) {
      if (cp == index) return i;
      ++cp;
    }
    ++i;
  }
  return text.size();
}

namespace {

// Length of the well-formed sequence starting at text[i], or 0 if it is ill-formed.
// Follows the table of well-formed byte sequences in the Unicode standard (3.9, D92).
std::size_t SequenceLength(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (!IsContinuation(text[i + k])) return 0;
  }
  return len;
}

}  // namespace

std::size_t FindInvalid(std::string_view text) {
  std::size_t i = 0;
  while ((i = SkipAsciiWords(text, i)) < text.size()) {
    const std::size_t len = SequenceLength(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace fleetplan::utf8
