// The emulator's tokenizer and output text: deterministic, documented byte rules, so a
// client can predict every count (docs/serve.md "Tokens").
//
// Tokenize. The text is read byte by byte; a token is either
//   - at most one space (0x20) followed by a run of 1..4 ASCII letters or digits
//     (" hello" is " hell", "o"; "GPU42" is "GPU4", "2"), or
//   - any other single byte (punctuation, newline, a lone space, each byte of a UTF-8
//     sequence).
// A token's id is FNV-1a-64 of its bytes modulo kVocabulary. A prompt sent as token ids
// is taken as it is: its count is exact.
//
// Output. Token i of an answer with seed s is " " + kFillerWords[SplitMix64(s ^
// SplitMix64(i + 1)) mod 64]; every filler word has 2..4 letters, so the text of an answer
// re-tokenizes to exactly its token count.
//
// Prompt layout for the engine's prefix cache: the ids are cut into blocks of
// `block_tokens`; block k becomes one PromptSegment whose content is the hash of its ids
// (the engine chains block identities, so two prompts share exactly their identical
// leading blocks).
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/workload/request.h"

namespace fleetplan::serve {

inline constexpr int64_t kVocabulary = 100'000;
inline constexpr int kFillerWordCount = 64;

struct Tokenized {
  std::vector<int64_t> ids;
  std::vector<uint32_t> ends;  // byte offset where token i ends in the text
};
Tokenized Tokenize(std::string_view text);

// Filler token `index` of an answer drawn with `seed` (leading space included).
std::string_view FillerToken(uint64_t seed, int64_t index);

// Echo mode's answer source: the answer's token i is the source's token i mod its
// count, as the source's bytes. The source is the prompt text (completions), the last
// message's text (chat), or, for a prompt sent as token ids, the ids written as
// " <id>" each. Empty (no tokens) when the source has none: the answer is filler then.
struct EchoText {
  std::string text;
  std::vector<uint32_t> ends;  // byte offset where source token k ends
  int64_t tokens() const { return static_cast<int64_t>(ends.size()); }
  std::string_view Token(int64_t index) const {
    const auto k = static_cast<size_t>(index % tokens());
    const uint32_t begin = k == 0 ? 0 : ends[k - 1];
    return std::string_view(text).substr(begin, ends[k] - begin);
  }
};
EchoText EchoOfText(std::string_view text);
EchoText EchoOfIds(std::span<const int64_t> ids);

// The prompt as engine segments (one per block). REQUIRES: block_tokens >= 1.
std::vector<PromptSegment> PromptLayout(std::span<const int64_t> ids, int64_t block_tokens);

}  // namespace fleetplan::serve
