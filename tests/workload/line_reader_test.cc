// LineReader and the CSV splitter: lines across chunk boundaries, CR LF, no final
// newline, quoted fields; the digest covers exactly the bytes.
#include "workload/line_reader.h"

#include <sstream>

#include <gtest/gtest.h>

#include "fleetplan/core/digest.h"
#include "workload/csv.h"

namespace fleetplan::workload_internal {
namespace {

std::vector<std::string> Lines(const std::string& text, std::string* digest = nullptr) {
  LineReader reader(std::make_unique<std::istringstream>(text), "x");
  std::vector<std::string> out;
  std::string_view line;
  while (reader.Next(&line) == LineReader::Result::kLine) out.emplace_back(line);
  if (digest != nullptr) *digest = reader.FinishDigest();
  return out;
}

TEST(LineReaderTest, TerminatorsAndDigest) {
  std::string digest;
  EXPECT_EQ(Lines("a\nb\r\n\nc", &digest), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(digest, DigestOf("a\nb\r\n\nc"));
  EXPECT_EQ(Lines("a\n"), std::vector<std::string>{"a"});
  EXPECT_TRUE(Lines("").empty());
}

TEST(LineReaderTest, LinesLongerThanAChunk) {
  const std::string big(3u << 20, 'x');
  const std::string text = "head\n" + big + "\ntail";
  std::string digest;
  const auto lines = Lines(text, &digest);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].size(), big.size());
  EXPECT_EQ(lines[2], "tail");
  EXPECT_EQ(digest, DigestOf(text));
}

TEST(LineReaderTest, DigestAfterStoppingEarly) {
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "line " + std::to_string(i) + "\n";
  LineReader reader(std::make_unique<std::istringstream>(text), "x");
  std::string_view line;
  ASSERT_EQ(reader.Next(&line), LineReader::Result::kLine);
  EXPECT_EQ(reader.FinishDigest(), DigestOf(text));
}

TEST(CsvTest, SplitsQuotedFieldsAndKeepsColumns) {
  std::vector<CsvField> fields;
  std::deque<std::string> storage;
  EXPECT_EQ(SplitCsvLine(R"(1, "a,b" ,"say ""hi""",)", &fields, &storage), "");
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[0].text, "1");
  EXPECT_EQ(fields[1].text, "a,b");
  EXPECT_EQ(fields[1].column, 4);
  EXPECT_EQ(fields[2].text, "say \"hi\"");
  EXPECT_EQ(fields[3].text, "");
  EXPECT_EQ(SplitCsvLine(R"(1,"open)", &fields, &storage), "unterminated quoted field starting at column 3");
  EXPECT_EQ(ParseInt64("12"), 12);
  EXPECT_FALSE(ParseInt64("12 ").has_value());
  EXPECT_FALSE(ParseInt64("+1").has_value());
  EXPECT_FALSE(ParseFiniteDouble("nan").has_value());
}

}  // namespace
}  // namespace fleetplan::workload_internal
