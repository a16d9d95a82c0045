#include "fleetplan/core/limits.h"

#include <fmt/format.h>

namespace fleetplan {

std::size_t FindJsonNestingBeyond(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string JsonNestingMessage(int max_depth) {
  return fmt::format("arrays and objects nested more than {} deep (fleetplan's limit; no input of ours needs "
                     "more than a few levels)",
                     max_depth);
}

}  // namespace fleetplan
