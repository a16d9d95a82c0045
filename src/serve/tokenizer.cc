#include "fleetplan/serve/tokenizer.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "fleetplan/core/rng.h"

namespace fleetplan::serve {
namespace {

constexpr std::array<std::string_view, kFillerWordCount> kFillerWords = {
    " the", " of",   " and",  " to",   " in",   " is",   " for",  " on",   " that", " by",   " with",
    " as",  " at",   " from", " this", " are",  " be",   " was",  " or",   " an",   " it",   " not",
    " but", " all",  " can",  " has",  " one",  " more", " will", " each", " into", " time", " data",
    " node", " load", " step", " page", " fast", " slow", " rate", " plan", " run",  " unit", " test",
    " path", " case", " line", " word", " cell", " tree", " root", " leaf", " edge", " hash", " key",
    " map", " set",  " list", " pool", " gate", " loop", " core", " task", " flow"};

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

constexpr size_t kMaxRun = 4;  // letters or digits per token: about 4 bytes a token, like BPE on English

}  // namespace

Tokenized Tokenize(std::string_view text) {
  Tokenized out;
  out.ids.reserve(text.size() / 3 + 1);
  out.ends.reserve(text.size() / 3 + 1);
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    size_t j = i;
    if (text[j] == ' ' && j + 1 < text.size() && IsAlnum(text[j + 1])) ++j;
    if (IsAlnum(text[j])) {
      const size_t run_start = j;
      while (j < text.size() && IsAlnum(text[j]) && j - run_start < kMaxRun) ++j;
    } else {
      ++j;
    }
    i = j;
    out.ids.push_back(static_cast<int64_t>(Fnv1a64(text.substr(start, i - start)) % static_cast<uint64_t>(kVocabulary)));
    out.ends.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

std::string_view FillerToken(uint64_t seed, int64_t index) {
  const uint64_t h = SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(index) + 1));
  return kFillerWords[h % kFillerWordCount];
}

EchoText EchoOfText(std::string_view text) {
  EchoText echo;
  echo.text = std::string(text);
  echo.ends = Tokenize(text).ends;
  return echo;
}

EchoText EchoOfIds(std::span<const int64_t> ids) {
  EchoText echo;
  for (const int64_t id : ids) {
    echo.text += fmt::format(" {}", id);
    echo.ends.push_back(static_cast<uint32_t>(echo.text.size()));
  }
  return echo;
}

std::vector<PromptSegment> PromptLayout(std::span<const int64_t> ids, int64_t block_tokens) {
  std::vector<PromptSegment> segments;
  const size_t block = static_cast<size_t>(block_tokens);
  for (size_t start = 0; start < ids.size(); start += block) {
    const size_t n = std::min(block, ids.size() - start);
    uint64_t h = 0x6a09e667f3bcc908ULL;
    for (size_t k = 0; k < n; ++k) h = SplitMix64(h ^ static_cast<uint64_t>(ids[start + k]));
    segments.push_back(PromptSegment{h, static_cast<int64_t>(n)});
  }
  return segments;
}

}  // namespace fleetplan::serve
