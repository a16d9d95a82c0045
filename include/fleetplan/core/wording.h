// Small helpers for the words of messages and reports: a count with its noun in the
// right number ("1 node", "3 nodes") and the article of a word ("an azure trace").
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fleetplan {

// "<n> <noun>" for n == 1 (or -1), else "<n> <plural>"; `plural` defaults to noun + "s".
inline std::string Counted(int64_t n, std::string_view noun, std::string_view plural = {}) {
  if (n == 1 || n == -1) return fmt::format("{} {}", n, noun);
  if (plural.empty()) return fmt::format("{} {}s", n, noun);
  return fmt::format("{} {}", n, plural);
}

// "an" before a word that starts with a vowel letter, else "a" (by spelling: "a csv").
inline std::string_view Article(std::string_view word) {
  if (word.empty()) return "a";
  switch (word.front()) {
    case 'a': case 'e': case 'i': case 'o': case 'u':
    case 'A': case 'E': case 'I': case 'O': case 'U': return "an";
    default: return "a";
  }
}

}  // namespace fleetplan
