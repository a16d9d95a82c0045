// Located input errors, formatted like a compiler's:
//
//   scenario.yaml:14:13: engine.scheduler.policy: unknown value 'decode_frist'; did you
//   mean 'decode-first'? (valid: prefill-first, decode-first, bounded-chunk, priority-aging)
//      14 |     policy: decode_frist
//         |             ^
//
// Exactly: "<file>:<line>:<col>: <path>: <message>" and, when the source line is known,
// "\n" + "<line right-aligned in 5> | <source line>\n" + "      | <pad>^\n". Parts that are
// unknown are left out: no file -> no location prefix (the text starts at the path); no
// line -> "<file>: "; no column -> "<file>:<line>: " and no caret line; no path -> no
// "<path>: "; no source line -> no snippet and no trailing newline. The caret
// pad copies tabs from the source line so the caret lines up in a terminal; other control
// characters in the shown line print as '?'; a line longer than kMaxSnippetChars is shown
// as a window around the column, elided with "...".
// Tests pin this exact text, so the format is part of the contract.
// Thread model: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"

namespace fleetplan {

// Where a value came from. line and column are 1-based; 0 means unknown (e.g. a value
// given on the command line, which has a flag name as its path and no file). column counts
// characters (UTF-8 code points), not bytes.
struct SourceLocation {
  std::string file;         // as the user named it; empty for command-line values
  int line = 0;
  int column = 0;
  std::string source_line;  // the text of that line, without its newline; may be empty
};

// Longest source line shown whole in a snippet (characters); longer lines are windowed.
inline constexpr int kMaxSnippetChars = 160;

// "<file>:<line>:<col>: <path>: <message>" then, when the source line is known, the
// line and a caret under the column. Parts that are unknown are left out.
std::string FormatLocatedError(const SourceLocation& where, std::string_view path,
                               std::string_view message);

// A Status(kInvalidInput) carrying FormatLocatedError(...) and, as its origin(), the parts.
Status LocatedError(const SourceLocation& where, std::string_view path, std::string_view message);

// A value as messages quote it: "'abc'". Control characters are escaped ("\n", "\x01")
// and text longer than 80 characters is cut with "..." so one bad value cannot flood a
// terminal.
std::string QuoteValue(std::string_view text);

// The closest candidate by Damerau-Levenshtein distance (optimal-string-alignment variant:
// insert, delete, substitute, swap adjacent), case-insensitive, with '-' == '_'; or empty
// when none is close enough: distance > max(2, len(got)/3), or every character differs
// (distance >= the longer length), or `got` is empty. Ties: first in order.
std::string DidYouMean(std::string_view got, std::span<const std::string> candidates);

// "unknown <what> 'got'; did you mean 'x'? (valid: a, b, c)" — the suggestion only when
// DidYouMean finds one; the list only when there are candidates. Candidates are listed in
// the order given, the first 50 of a longer list followed by "and N more".
std::string UnknownNameMessage(std::string_view what, std::string_view got,
                               std::span<const std::string> candidates);

}  // namespace fleetplan
