// core/error.h: the located-error format (pinned text), value quoting, did-you-mean.
#include "fleetplan/core/error.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

TEST(FormatLocatedErrorTest, FullFormWithSnippetAndCaret) {
  const SourceLocation where{"scenario.yaml", 14, 13, "    policy: decode_frist"};
  EXPECT_EQ(FormatLocatedError(where, "engine.scheduler.policy",
                               "unknown value 'decode_frist'; did you mean 'decode-first'? "
                               "(valid: prefill-first, decode-first, bounded-chunk, priority-aging)"),
            "scenario.yaml:14:13: engine.scheduler.policy: unknown value 'decode_frist'; did you "
            "mean 'decode-first'? (valid: prefill-first, decode-first, bounded-chunk, "
            "priority-aging)\n"
            "   14 |     policy: decode_frist\n"
            "      |             ^\n");
}

TEST(LocatedErrorTest, CarriesItsPartsAsTheOrigin) {
  const SourceLocation where{"scenario.yaml", 14, 13, "    policy: decode_frist"};
  const Status s = LocatedError(where, "engine.scheduler.policy", "unknown value 'decode_frist'");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), FormatLocatedError(where, "engine.scheduler.policy", "unknown value 'decode_frist'"));
  ASSERT_NE(s.origin(), nullptr);
  EXPECT_EQ(s.origin()->file, "scenario.yaml");
  EXPECT_EQ(s.origin()->line, 14);
  EXPECT_EQ(s.origin()->column, 13);
  EXPECT_EQ(s.origin()->path, "engine.scheduler.policy");
  EXPECT_EQ(s.origin()->message, "unknown value 'decode_frist'");
  // A copy shares it; a Status built from the text alone has none.
  const Status copy = s;
  EXPECT_EQ(copy.origin(), s.origin());
  EXPECT_EQ(InvalidInput(s.message()).origin(), nullptr);
}

TEST(FormatLocatedErrorTest, NoFileStartsAtThePath) {
  const SourceLocation where{"", 3, 5, "a: bcd"};
  EXPECT_EQ(FormatLocatedError(where, "x.y", "bad"),
            "x.y: bad\n"
            "    3 | a: bcd\n"
            "      |     ^\n");
}

TEST(FormatLocatedErrorTest, NoPathNoSourceLineNoTrailingNewline) {
  EXPECT_EQ(FormatLocatedError({"f.yaml", 2, 1, ""}, "", "bad"), "f.yaml:2:1: bad");
  EXPECT_EQ(FormatLocatedError({"f.yaml", 0, 0, ""}, "a", "bad"), "f.yaml: a: bad");
  EXPECT_EQ(FormatLocatedError({}, "--seed", "expected an integer"), "--seed: expected an integer");
  EXPECT_EQ(FormatLocatedError({}, "", "plain"), "plain");
}

TEST(FormatLocatedErrorTest, UnknownColumnShowsTheLineWithoutCaret) {
  EXPECT_EQ(FormatLocatedError({"f.yaml", 2, 0, "abc"}, "p", "bad"),
            "f.yaml:2: p: bad\n"
            "    2 | abc\n");
}

TEST(FormatLocatedErrorTest, CaretPadKeepsTabs) {
  EXPECT_EQ(FormatLocatedError({"f", 1, 7, "\tkey: v"}, "key", "bad"),
            "f:1:7: key: bad\n"
            "    1 | \tkey: v\n"
            "      | \t     ^\n");
}

TEST(FormatLocatedErrorTest, ControlCharactersInTheShownLineBecomeQuestionMarks) {
  EXPECT_EQ(FormatLocatedError({"f", 2, 2, "\rb: x\x01"}, "", "bad"),
            "f:2:2: bad\n"
            "    2 | ?b: x?\n"
            "      |  ^\n");
}

TEST(FormatLocatedErrorTest, BytesThatAreNotUtf8InTheShownLineBecomeQuestionMarks) {
  // Found by trace_fuzz: a stray continuation byte and a truncated sequence in the input
  // line made the whole message invalid UTF-8.
  EXPECT_EQ(FormatLocatedError({"f", 1, 1, "a\x80" "b\xE2\x82"}, "", "bad"),
            "f:1:1: bad\n"
            "    1 | a?b??\n"
            "      | ^\n");
}

TEST(FormatLocatedErrorTest, MessagesQuotingBrokenInputStayUtf8) {
  // Found by trace_fuzz: nlohmann's parse error quotes the bytes it last read.
  EXPECT_EQ(FormatLocatedError({"f", 0, 0, ""}, "", "last read: '\"in\xE9'"), "f: last read: '\"in?'");
}

TEST(FormatLocatedErrorTest, ColumnsCountCharactersNotBytes) {
  EXPECT_EQ(FormatLocatedError({"f", 1, 4, "\xC3\xA9: x"}, "", "bad"),
            "f:1:4: bad\n"
            "    1 | \xC3\xA9: x\n"
            "      |    ^\n");
}

TEST(FormatLocatedErrorTest, GutterWidensForLongLineNumbers) {
  EXPECT_EQ(FormatLocatedError({"f", 123456, 1, "x"}, "", "bad"),
            "f:123456:1: bad\n"
            "123456 | x\n"
            "       | ^\n");
}

TEST(FormatLocatedErrorTest, ColumnPastTheEndClampsToOnePastTheLine) {
  EXPECT_EQ(FormatLocatedError({"f", 1, 10, "ab"}, "", "bad"),
            "f:1:10: bad\n"
            "    1 | ab\n"
            "      |   ^\n");
}

std::string Digits(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>('0' + i % 10);
  return s;
}

TEST(FormatLocatedErrorTest, LongLinesAreWindowedAroundTheCaret) {
  const std::string line = Digits(300);
  // Caret near the start: the first kMaxSnippetChars characters, then "...".
  EXPECT_EQ(FormatLocatedError({"f", 1, 10, line}, "", "bad"),
            "f:1:10: bad\n    1 | " + line.substr(0, 160) + "...\n      | " +
                std::string(9, ' ') + "^\n");
  // Caret near the end: "..." then the last kMaxSnippetChars characters.
  EXPECT_EQ(FormatLocatedError({"f", 1, 250, line}, "", "bad"),
            "f:1:250: bad\n    1 | ..." + line.substr(140) + "\n      | " +
                std::string(3 + 249 - 140, ' ') + "^\n");
}

// The snippet as the format defines it, computed the plain way: the byte offset of every
// code point (every byte that is not a UTF-8 continuation byte), a window of
// kMaxSnippetChars of them around the caret, and a pad that copies tabs.
std::string ReferenceSnippet(const std::string& line, int column) {
  const std::string head = "f:1:" + std::to_string(column) + ": bad";
  if (line.empty()) return head;  // nothing to show
  std::vector<size_t> starts;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0u) != 0x80u) starts.push_back(i);
  }
  const size_t n = starts.size();
  const auto at = [&](size_t cp) { return cp < n ? starts[cp] : line.size(); };
  const size_t caret = std::min(static_cast<size_t>(std::max(column, 1) - 1), n);
  const size_t max_chars = kMaxSnippetChars;
  size_t begin = 0;
  size_t end = n;
  if (n > max_chars) {
    begin = caret > max_chars / 2 ? caret - max_chars / 2 : 0;
    end = std::min(n, begin + max_chars);
    begin = end - max_chars;
  }
  std::string shown = begin > 0 ? "..." : "";
  std::string pad = begin > 0 ? "   " : "";
  shown += line.substr(at(begin), at(end) - at(begin));
  if (end < n) shown += "...";
  for (size_t cp = begin; cp < caret; ++cp) pad += line[at(cp)] == '\t' ? '\t' : ' ';
  return head + "\n    1 | " + shown + "\n      | " + pad + "^\n";
}

// Long lines of one- to three-byte characters and tabs, carets anywhere (past the end
// too): the walked window equals the plain computation.
TEST(FormatLocatedErrorTest, LongLineWindowsMatchThePlainComputation) {
  const std::vector<std::string> pieces = {"a", "7", "\t", "\xC3\xA9", "\xE4\xB8\xAD", ","};
  RngStream rng(7, "snippet-windows");
  for (int round = 0; round < 2000; ++round) {
    std::string line;
    const auto length = static_cast<int>(rng.NextBelow(420));
    for (int i = 0; i < length; ++i) line += pieces[rng.NextBelow(pieces.size())];
    const int column = 1 + static_cast<int>(rng.NextBelow(static_cast<uint64_t>(length) + 40));
    ASSERT_EQ(FormatLocatedError({"f", 1, column, line}, "", "bad"), ReferenceSnippet(line, column))
        << "round " << round << ", column " << column;
  }
}

// The byte-at-a-time replacement the path and message go through: the first byte of each
// invalid UTF-8 sequence becomes '?' and the search goes on after it; in the path,
// control characters other than tab become '?' too.
std::string ReferenceShown(std::string_view text, bool control) {
  std::string out;
  std::size_t next_invalid = utf8::FindInvalid(text);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == next_invalid) {
      out += '?';
      const std::size_t rest = utf8::FindInvalid(text.substr(i + 1));
      next_invalid = rest == std::string_view::npos ? rest : i + 1 + rest;
      continue;
    }
    const auto u = static_cast<unsigned char>(text[i]);
    out += control && ((u < 0x20 && u != '\t') || u == 0x7F) ? '?' : text[i];
  }
  return out;
}

TEST(FormatLocatedErrorTest, ShownPathAndMessageMatchTheByteAtATimeReplacement) {
  const std::vector<std::string> pieces = {"a",
                                           " ",
                                           "\t",
                                           "\n",
                                           "\x01",
                                           "\x7F",
                                           "\xC3\xA9",
                                           "\xE4\xB8\xAD",
                                           "\xFF",
                                           "\xC3",
                                           "\x80",
                                           "\xE4\xB8",
                                           "\xF0\x9F\x98\x80"};
  RngStream rng(11, "shown-text");
  for (int round = 0; round < 3000; ++round) {
    std::string path, message;
    for (std::string* text : {&path, &message}) {
      const auto length = static_cast<int>(rng.NextBelow(60));
      for (int i = 0; i < length; ++i) *text += pieces[rng.NextBelow(pieces.size())];
    }
    const std::string expected = path.empty() ? ReferenceShown(message, false)
                                              : ReferenceShown(path, true) + ": " + ReferenceShown(message, false);
    ASSERT_EQ(FormatLocatedError({}, path, message), expected) << "round " << round;
  }
}

TEST(FormatLocatedErrorTest, AStrayContinuationByteBeforeTheFirstCharacterIsNotShown) {
  EXPECT_EQ(FormatLocatedError({"f", 1, 2, "\x80" "abc"}, "", "bad"),
            "f:1:2: bad\n"
            "    1 | abc\n"
            "      |  ^\n");
}

// The snippet of the last error is reused for the next one at the same place: the reuse
// must follow the line's text and number and the column, not only where the error is.
TEST(FormatLocatedErrorTest, ConsecutiveErrorsShowTheirOwnLines) {
  const SourceLocation first{"a.yaml", 3, 5, "key: one"};
  const SourceLocation other_text{"b.yaml", 3, 5, "key: two"};
  const SourceLocation other_column{"b.yaml", 3, 6, "key: two"};
  const SourceLocation other_line{"b.yaml", 12, 6, "key: two"};
  const std::string first_text = "a.yaml:3:5: p: m\n    3 | key: one\n      |     ^\n";
  EXPECT_EQ(FormatLocatedError(first, "p", "m"), first_text);
  EXPECT_EQ(FormatLocatedError(first, "p", "m"), first_text);
  EXPECT_EQ(FormatLocatedError(other_text, "p", "m"), "b.yaml:3:5: p: m\n    3 | key: two\n      |     ^\n");
  EXPECT_EQ(FormatLocatedError(other_column, "p", "m"), "b.yaml:3:6: p: m\n    3 | key: two\n      |      ^\n");
  EXPECT_EQ(FormatLocatedError(other_line, "p", "m"), "b.yaml:12:6: p: m\n   12 | key: two\n      |      ^\n");
  EXPECT_EQ(FormatLocatedError(first, "p", "m"), first_text);
}

TEST(LocatedErrorTest, IsInvalidInputWithTheFormattedText) {
  const Status s = LocatedError({"f.yaml", 1, 1, ""}, "a", "bad");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "f.yaml:1:1: a: bad");
}

TEST(QuoteValueTest, QuotesEscapesAndCuts) {
  EXPECT_EQ(QuoteValue("abc"), "'abc'");
  EXPECT_EQ(QuoteValue(""), "''");
  EXPECT_EQ(QuoteValue("a\nb\tc\r\x01\x7f"), "'a\\nb\\tc\\r\\x01\\x7f'");
  EXPECT_EQ(QuoteValue("\xC3\xA9t\xC3\xA9"), "'\xC3\xA9t\xC3\xA9'");
  EXPECT_EQ(QuoteValue("a\xFF" "b\xC3"), "'a\\xffb\\xc3'");
  EXPECT_EQ(QuoteValue(std::string(100, 'x')), "'" + std::string(80, 'x') + "...'");
  EXPECT_EQ(QuoteValue(std::string(80, 'x')), "'" + std::string(80, 'x') + "'");
}

const std::vector<std::string> kFields = {"policy", "max_batched_tokens", "chunk_size"};

TEST(DidYouMeanTest, FindsTheNearestName) {
  EXPECT_EQ(DidYouMean("polcy", kFields), "policy");
  EXPECT_EQ(DidYouMean("plociy", kFields), "policy");  // two adjacent swaps
  EXPECT_EQ(DidYouMean("max_batched_tokns", kFields), "max_batched_tokens");
}

TEST(DidYouMeanTest, IgnoresCaseAndTreatsDashAsUnderscore) {
  EXPECT_EQ(DidYouMean("POLICY", kFields), "policy");
  EXPECT_EQ(DidYouMean("Max-Batched-Tokens", kFields), "max_batched_tokens");
  const std::vector<std::string> values = {"prefill-first", "decode-first"};
  EXPECT_EQ(DidYouMean("decode_frist", values), "decode-first");
}

TEST(DidYouMeanTest, NothingWhenTooFar) {
  EXPECT_EQ(DidYouMean("xyz", kFields), "");
  EXPECT_EQ(DidYouMean("", kFields), "");
  EXPECT_EQ(DidYouMean("polcy", std::vector<std::string>{}), "");
  // Distance 2 is within max(2, len/3) but every character differs: no suggestion.
  EXPECT_EQ(DidYouMean("ab", std::vector<std::string>{"tp"}), "");
}

TEST(DidYouMeanTest, ThresholdGrowsWithLength) {
  // len 12 -> threshold 4.
  EXPECT_EQ(DidYouMean("abcdefghijkl", std::vector<std::string>{"abcdefghwxyz"}), "abcdefghwxyz");
  EXPECT_EQ(DidYouMean("abcdefghijkl", std::vector<std::string>{"abcdefgvwxyz"}), "");
}

TEST(DidYouMeanTest, TiesGoToTheFirstCandidate) {
  EXPECT_EQ(DidYouMean("ab_z", std::vector<std::string>{"ab_x", "ab_y"}), "ab_x");
  EXPECT_EQ(DidYouMean("ab_z", std::vector<std::string>{"ab_y", "ab_x"}), "ab_y");
}

// The plain distance, every cell computed: DidYouMean drops a candidate as soon as its
// rows show it cannot beat the best so far, which must never change the answer.
std::size_t PlainDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string PlainDidYouMean(const std::string& got, const std::vector<std::string>& candidates) {
  const std::size_t threshold = std::max<std::size_t>(2, got.size() / 3);
  const std::string* best = nullptr;
  std::size_t best_distance = threshold + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = PlainDistance(got, c);
    if (d < best_distance && d < std::max(got.size(), c.size())) {
      best = &c;
      best_distance = d;
    }
  }
  return got.empty() || best == nullptr ? "" : *best;
}

TEST(DidYouMeanTest, MatchesThePlainDistanceOnRandomNames) {
  RngStream rng(13, "did-you-mean");
  const auto name = [&] {
    std::string s;
    const auto length = rng.NextBelow(12);
    for (uint64_t i = 0; i < length; ++i) s += static_cast<char>('a' + rng.NextBelow(4));
    return s;
  };
  for (int round = 0; round < 3000; ++round) {
    const std::string got = name();
    std::vector<std::string> candidates(1 + rng.NextBelow(30));
    for (std::string& c : candidates) c = name();
    ASSERT_EQ(DidYouMean(got, candidates), PlainDidYouMean(got, candidates)) << "round " << round << ", got " << got;
  }
}

TEST(UnknownNameMessageTest, ListsTheFirstFiftyOfALongList) {
  std::vector<std::string> names;
  for (int i = 0; i < 100000; ++i) names.push_back(fmt::format("tenant-{}", i));
  const std::string m = UnknownNameMessage("tenant", "tenant-99998x", names);
  EXPECT_EQ(m.substr(0, m.find(" (valid: ")), "unknown tenant 'tenant-99998x'; did you mean 'tenant-99998'?");
  const std::string tail = "tenant-48, tenant-49, and 99950 more)";
  EXPECT_EQ(m.substr(m.size() - tail.size()), tail);
  EXPECT_LT(m.size(), 700u);
  std::vector<std::string> fifty(names.begin(), names.begin() + 50);
  EXPECT_EQ(UnknownNameMessage("tenant", "x", fifty).find("more"), std::string::npos);
}

TEST(UnknownNameMessageTest, SuggestionAndList) {
  const std::vector<std::string> values = {"prefill-first", "decode-first", "bounded-chunk",
                                           "priority-aging"};
  EXPECT_EQ(UnknownNameMessage("value", "decode_frist", values),
            "unknown value 'decode_frist'; did you mean 'decode-first'? (valid: prefill-first, "
            "decode-first, bounded-chunk, priority-aging)");
  EXPECT_EQ(UnknownNameMessage("router", "zzz", std::vector<std::string>{"a", "b"}),
            "unknown router 'zzz' (valid: a, b)");
  EXPECT_EQ(UnknownNameMessage("model", "x", std::vector<std::string>{}), "unknown model 'x'");
}

}  // namespace
}  // namespace fleetplan
