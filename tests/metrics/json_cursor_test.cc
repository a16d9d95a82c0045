// JsonCursor: the record readers' JSON scanner against RFC 8259.
#include "metrics/json_cursor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fleetplan::metrics_detail {
namespace {

std::string String(std::string_view text) {
  JsonCursor c(text);
  std::string_view out;
  EXPECT_TRUE(c.ReadString(&out)) << c.error_message();
  return std::string(out);
}

std::string StringError(std::string_view text) {
  JsonCursor c(text);
  std::string_view out;
  EXPECT_FALSE(c.ReadString(&out));
  return c.error_message() + " @" + std::to_string(c.error_offset());
}

TEST(JsonCursor, DecodesEscapes) {
  EXPECT_EQ(String(R"("plain")"), "plain");
  EXPECT_EQ(String(R"("a\"b\\c\/d\b\f\n\r\t")"), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(String(R"("\u00e9\u4e2d")"), "\xc3\xa9\xe4\xb8\xad");
  EXPECT_EQ(String(R"("\ud83d\ude00")"), "\xf0\x9f\x98\x80");  // surrogate pair -> U+1F600
  EXPECT_EQ(String("\"caf\xc3\xa9 \\n ok\""), "caf\xc3\xa9 \n ok");  // UTF-8 kept through escapes
}

TEST(JsonCursor, RejectsBadStrings) {
  EXPECT_EQ(StringError(R"("\x")"), "invalid escape '\\x' in a string @1");
  EXPECT_EQ(StringError(R"("\ud83d")"), "unpaired UTF-16 surrogate in \\u escape @1");
  EXPECT_EQ(StringError(R"("\ude00")"), "unpaired UTF-16 surrogate in \\u escape @1");
  EXPECT_EQ(StringError(R"("\u12g4")"), "expected 4 hex digits after \\u @5");
  EXPECT_EQ(StringError("\"a\tb\""), "unescaped control byte 0x09 in a string @2");
  EXPECT_EQ(StringError("\"\xc3\x28\""), "invalid UTF-8 sequence in a string @1");
  EXPECT_EQ(StringError("\"\xed\xa0\x80\""), "invalid UTF-8 sequence in a string @1");  // surrogate
  EXPECT_EQ(StringError("\"\xff\""), "invalid UTF-8 byte 0xff in a string @1");
  EXPECT_EQ(StringError("\"abc"), "truncated: the text ends before the JSON value is complete @4");
}

JsonNumber Number(std::string_view text) {
  JsonCursor c(text);
  JsonNumber n;
  EXPECT_TRUE(c.ReadNumber(&n)) << text << ": " << c.error_message();
  EXPECT_TRUE(c.AtEnd()) << text;
  return n;
}

std::string NumberError(std::string_view text) {
  JsonCursor c(text);
  JsonNumber n;
  EXPECT_FALSE(c.ReadNumber(&n)) << text;
  return c.error_message();
}

TEST(JsonCursor, ReadsNumbers) {
  EXPECT_EQ(Number("0").integer, 0);
  EXPECT_TRUE(Number("-12").is_integer);
  EXPECT_EQ(Number("-12").integer, -12);
  EXPECT_FALSE(Number("1.0").is_integer);
  EXPECT_DOUBLE_EQ(Number("1.5e3").value, 1500.0);
  EXPECT_DOUBLE_EQ(Number("2E-2").value, 0.02);
  EXPECT_EQ(Number("9223372036854775807").integer, INT64_MAX);
  EXPECT_FALSE(Number("9223372036854775808").is_integer);  // beyond int64: a double only
  EXPECT_EQ(Number("0.1").value, 0.1);
}

TEST(JsonCursor, RejectsNonJsonNumbers) {
  EXPECT_EQ(NumberError("01"), "invalid number '01'");
  EXPECT_EQ(NumberError("1."), "truncated: the text ends before the JSON value is complete");
  EXPECT_EQ(NumberError("1.x"), "expected a digit after '.' in a number");
  EXPECT_EQ(NumberError("1e"), "truncated: the text ends before the JSON value is complete");
  EXPECT_EQ(NumberError("-"), "truncated: the text ends before the JSON value is complete");
  EXPECT_EQ(NumberError("1e999"), "number 1e999 is out of range");
}

TEST(JsonCursor, PeekAndLiterals) {
  JsonCursor c("  [ null , true,false ] ");
  EXPECT_EQ(c.Peek(), JsonType::kArray);
  EXPECT_TRUE(c.TryConsume('['));
  EXPECT_EQ(c.Peek(), JsonType::kNull);
  EXPECT_TRUE(c.ReadNull());
  EXPECT_TRUE(c.TryConsume(','));
  bool b = false;
  EXPECT_TRUE(c.ReadBool(&b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(c.TryConsume(','));
  EXPECT_TRUE(c.ReadBool(&b));
  EXPECT_FALSE(b);
  EXPECT_TRUE(c.TryConsume(']'));
  EXPECT_TRUE(c.AtEnd());
  JsonCursor bad("nul");
  EXPECT_FALSE(bad.ReadNull());
  EXPECT_EQ(bad.error_message(), "truncated: the text ends before the JSON value is complete");
  JsonCursor worse("nope");
  EXPECT_FALSE(worse.ReadNull());
  EXPECT_EQ(worse.error_message(), "expected a JSON value, got 'n'");
}

TEST(JsonCursor, SkipsNestedValues) {
  JsonCursor c(R"({"a": [1, {"b": [true, null, "x"]}], "c": {}} rest)");
  EXPECT_TRUE(c.SkipValue()) << c.error_message();
  EXPECT_EQ(c.text().substr(c.pos()), " rest");
  JsonCursor unclosed(R"({"a": [1, 2)");
  EXPECT_FALSE(unclosed.SkipValue());
  EXPECT_EQ(unclosed.error_message(), "truncated: the text ends before the JSON value is complete");
  std::string deep(JsonCursor::kMaxDepth + 2, '[');
  JsonCursor too_deep(deep);
  EXPECT_FALSE(too_deep.SkipValue());
  EXPECT_THAT(too_deep.error_message(), testing::StartsWith("arrays and objects nested more than 64 deep"));
}

TEST(JsonCursor, PositionOfCountsLines) {
  const std::string_view text = "ab\ncde\r\nfg";
  TextPosition p = PositionOf(text, 4);
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 2);
  EXPECT_EQ(p.line_text, "cde");
  p = PositionOf(text, 9);
  EXPECT_EQ(p.line, 3);
  EXPECT_EQ(p.column, 2);
  EXPECT_EQ(p.line_text, "fg");
}

}  // namespace
}  // namespace fleetplan::metrics_detail
