#include "fleetplan/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace fleetplan {
namespace {

// Width of the line-number gutter in snippets, as clang prints it ("   14 | ").
constexpr int kGutterWidth = 5;
// Longest value QuoteValue shows whole (characters); enough for any name or number.
constexpr std::size_t kMaxQuotedChars = 80;

std::string LocationPrefix(const SourceLocation& where) {
  if (where.file.empty()) return "";
  std::string out = where.file;
  if (where.line > 0) {
    out += fmt::format(":{}", where.line);
    if (where.column > 0) out += fmt::format(":{}", where.column);
  }
  out += ": ";
  return out;
}

// Appends `valid` (valid UTF-8) to `out`, with control characters other than tab shown
// as '?' when `control` is set. Runs between them are appended whole, not byte by byte:
// a reader may format thousands of errors for one input.
void AppendShown(std::string& out, std::string_view valid, bool control) {
  if (!control) {
    out += valid;
    return;
  }
  std::size_t run = 0;
  for (std::size_t i = 0; i < valid.size(); ++i) {
    const auto u = static_cast<unsigned char>(valid[i]);
    if ((u < 0x20 && u != '\t') || u == 0x7F) {
      out.append(valid.substr(run, i - run));
      out += '?';
      run = i + 1;
    }
  }
  out.append(valid.substr(run));
}

// `text` with every byte that is not part of valid UTF-8 replaced by '?' (and, when
// `control` is set, control characters other than tab too), so that a message built from
// whatever an input held stays valid UTF-8 and keeps the terminal sane.
std::string ShowSafely(std::string_view text, bool control) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t invalid = utf8::FindInvalid(text);
    AppendShown(out, text.substr(0, invalid), control);
    if (invalid == std::string_view::npos) break;
    out += '?';  // one byte of the invalid sequence; the next search starts after it
    text.remove_prefix(invalid + 1);
  }
  return out;
}

struct Snippet {
  std::string shown;
  std::string pad;
};

// The source line (or a window of it around the caret) and the pad that puts a caret
// under `column`, in code points; a code point starts at every byte that is not a UTF-8
// continuation byte. The line is walked, not indexed: a reader may format many errors on
// one long line (a flow sequence of thousands of values), and storing every start cost an
// allocation per byte of the line each time.
Snippet MakeSnippet(std::string_view line, int column) {
  const std::size_t n = utf8::CountCodePoints(line);
  // Caret index in code points, clamped to one past the end of the line.
  const std::size_t caret = std::min(static_cast<std::size_t>(std::max(column, 1) - 1), n);
  const auto max_chars = static_cast<std::size_t>(kMaxSnippetChars);
  std::size_t begin = 0;
  std::size_t end = n;
  if (n > max_chars) {
    begin = caret > max_chars / 2 ? caret - max_chars / 2 : 0;
    end = std::min(n, begin + max_chars);
    begin = end - max_chars;
  }
  Snippet s;
  if (begin > 0) {
    s.shown = "...";
    s.pad = "   ";
  }
  // Byte offsets of code points `begin` and `end` (line.size() past the last), and the
  // pad for the code points before the caret: tabs are copied so the caret lines up.
  const std::size_t begin_byte = utf8::ByteOfCodePoint(line, begin);
  std::size_t end_byte = line.size();
  std::size_t cp = begin;
  for (std::size_t i = begin_byte; i < line.size(); ++i) {
    if (utf8::IsContinuation(line[i])) continue;
    if (cp == end) {
      end_byte = i;
      break;
    }
    if (cp < caret) s.pad += line[i] == '\t' ? '\t' : ' ';
    ++cp;
  }
  s.shown += ShowSafely(line.substr(begin_byte, end_byte - begin_byte), /*control=*/true);
  if (end < n) s.shown += "...";
  return s;
}

// `s` lower-cased with '-' as '_', into `out` (reused across candidates).
void NormalizeNameInto(std::string_view s, std::string& out) {
  out.assign(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == '-') c = '_';
  }
}

std::string NormalizeName(std::string_view s) {
  std::string out;
  NormalizeNameInto(s, out);
  return out;
}

// The three rows EditDistance works in, kept across the candidates of one DidYouMean.
struct EditRows {
  std::vector<std::size_t> prev2, prev, cur;
};

// Optimal-string-alignment distance (Damerau-Levenshtein without repeated edits of a
// substring), O(|a|*|b|) time, three rows of memory, or a value >= `limit` as soon as no
// alignment can stay under it: every path to the last cell passes through one of the
// last two rows (a swap skips one), and no step lowers the distance. Callers that test
// many candidates pass the best distance so far, so most are dropped after a few rows.
std::size_t EditDistance(std::string_view a, std::string_view b, std::size_t limit, EditRows& rows) {
  auto& [prev2, prev, cur] = rows;
  prev2.assign(b.size() + 1, 0);
  prev.resize(b.size() + 1);
  cur.assign(b.size() + 1, 0);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  std::size_t prev_min = 0;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    std::size_t cur_min = cur[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
      cur_min = std::min(cur_min, cur[j]);
    }
    if (std::min(cur_min, prev_min) >= limit) return limit;
    prev_min = cur_min;
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// How often each byte value occurs in a name.
using CharCounts = std::array<uint32_t, 256>;

CharCounts CountChars(std::string_view s) {
  CharCounts counts{};
  for (const char c : s) ++counts[static_cast<unsigned char>(c)];
  return counts;
}

// The bag distance of two names: the larger of the characters each has that the other
// lacks (as multisets). Each edit changes it by at most one (a swap of neighbours not at
// all), so it is a lower bound of EditDistance, found in linear time: it rules out most
// of a long list of similar names (numbered tenants) without the quadratic table.
std::size_t BagDistance(std::size_t got_size, CharCounts got_counts, std::string_view cand) {
  std::size_t matched = 0;
  for (const char c : cand) {
    uint32_t& left = got_counts[static_cast<unsigned char>(c)];
    if (left > 0) {
      --left;
      ++matched;
    }
  }
  return std::max(got_size - matched, cand.size() - matched);
}

// Most valid names an unknown-name message lists: every schema's keys fit (the longest,
// a catalog model's, has 29), while a workload's numbered tenants can be hundreds of
// thousands, and a message naming them all helps nobody.
constexpr std::size_t kMaxListedNames = 50;

// The lines FormatLocatedError appends for a known source line: the line (or its window)
// and, when the column is known, the caret under it. A reader formats many errors at one
// value (each typed read of it that fails), so the last block is kept, per thread, and
// reused while the line number, column and text repeat: a long line is walked once for
// them, not once per error. The text is compared whole, so a hit is always exact; the
// key is cleared while the block is rebuilt, so a throw midway leaves no stale entry.
const std::string& SnippetBlock(const SourceLocation& where) {
  struct Last {
    int line = 0;
    int column = 0;
    std::string source_line;
    std::string block;
  };
  thread_local Last last;
  if (last.line == where.line && last.column == where.column && last.source_line == where.source_line) {
    return last.block;
  }
  last.line = 0;  // FormatLocatedError never asks for line 0: no hit until rebuilt
  const int width = std::max(kGutterWidth, static_cast<int>(fmt::formatted_size("{}", where.line)));
  const Snippet snippet = MakeSnippet(where.source_line, where.column);
  last.block = fmt::format("\n{:>{}} | {}\n", where.line, width, snippet.shown);
  if (where.column > 0) last.block += fmt::format("{:>{}} | {}^\n", "", width, snippet.pad);
  last.line = where.line;
  last.column = where.column;
  last.source_line = where.source_line;
  return last.block;
}

}  // namespace

std::string FormatLocatedError(const SourceLocation& where, std::string_view path,
                               std::string_view message) {
  std::string out = LocationPrefix(where);
  if (!path.empty()) out += fmt::format("{}: ", ShowSafely(path, /*control=*/true));
  // Messages may quote what a parser read (nlohmann's "last read: ..."): keep them UTF-8.
  out += ShowSafely(message, /*control=*/false);
  if (where.line <= 0 || where.source_line.empty()) return out;
  out += SnippetBlock(where);
  return out;
}

Status LocatedError(const SourceLocation& where, std::string_view path, std::string_view message) {
  return Status(StatusCode::kInvalidInput, FormatLocatedError(where, path, message),
                ErrorOrigin{where.file, where.line, where.column, std::string(path), std::string(message)});
}

std::string QuoteValue(std::string_view text) {
  std::string out = "'";
  std::size_t chars = 0;
  std::size_t next_invalid = utf8::FindInvalid(text);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!utf8::IsContinuation(c) && ++chars > kMaxQuotedChars) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (i == next_invalid) {
      // Not UTF-8: show the byte, keep the message valid UTF-8, and resume after it.
      out += fmt::format("\\x{:02x}", u);
      const std::size_t rest = utf8::FindInvalid(text.substr(i + 1));
      next_invalid = rest == std::string_view::npos ? rest : i + 1 + rest;
      if (utf8::IsContinuation(c)) ++chars;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string DidYouMean(std::string_view got, std::span<const std::string> candidates) {
  const std::string norm = NormalizeName(got);
  if (norm.empty()) return "";
  const std::size_t threshold = std::max<std::size_t>(2, norm.size() / 3);
  const std::string* best = nullptr;
  std::size_t best_distance = threshold + 1;
  const CharCounts got_counts = CountChars(norm);
  EditRows rows;
  std::string cand;
  for (const std::string& candidate : candidates) {
    NormalizeNameInto(candidate, cand);
    const std::size_t longer = std::max(norm.size(), cand.size());
    const std::size_t shorter = std::min(norm.size(), cand.size());
    if (longer - shorter >= best_distance) continue;  // cannot beat the best so far
    if (BagDistance(norm.size(), got_counts, cand) >= best_distance) continue;  // nor can this one
    const std::size_t d = EditDistance(norm, cand, best_distance, rows);
    if (d < best_distance && d < longer) {
      best = &candidate;
      best_distance = d;
    }
  }
  return best != nullptr ? *best : "";
}

std::string UnknownNameMessage(std::string_view what, std::string_view got,
                               std::span<const std::string> candidates) {
  std::string out = fmt::format("unknown {} {}", what, QuoteValue(got));
  const std::string suggestion = DidYouMean(got, candidates);
  if (!suggestion.empty()) out += fmt::format("; did you mean '{}'?", suggestion);
  if (candidates.size() > kMaxListedNames) {
    out += fmt::format(" (valid: {}, and {} more)", fmt::join(candidates.first(kMaxListedNames), ", "),
                       candidates.size() - kMaxListedNames);
  } else if (!candidates.empty()) {
    out += fmt::format(" (valid: {})", fmt::join(candidates, ", "));
  }
  return out;
}

}  // namespace fleetplan
