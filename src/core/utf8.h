// Small UTF-8 helpers shared by the core module's sources (not a public header).
// Thread model: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace fleetplan::utf8 {

// True for a byte that continues a multi-byte sequence (10xxxxxx).
constexpr bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0u) == 0x80u; }

// Number of code points in `text`, counting each byte that starts a sequence (or is
// invalid) as one. Exact for valid UTF-8.
std::size_t CountCodePoints(std::string_view text);

// Byte offset at which code point `index` starts (counted as CountCodePoints counts), or
// text.size() when `text` holds no more than `index` code points.
std::size_t ByteOfCodePoint(std::string_view text, std::size_t index);

// Byte offset of the first byte that is not part of a well-formed UTF-8 sequence
// (overlong forms, surrogates and values above U+10FFFF are ill-formed), or npos.
std::size_t FindInvalid(std::string_view text);

}  // namespace fleetplan::utf8
