#include "fleetplan/core/text_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fleetplan {
namespace {

std::vector<std::pair<int, std::string>> Walk(std::string_view text) {
  std::vector<std::pair<int, std::string>> out;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) out.emplace_back(lines.line_no(), std::string(line));
  return out;
}

using Lines = std::vector<std::pair<int, std::string>>;

TEST(TextLines, NumbersLinesFromOneWithoutTheirEndings) {
  EXPECT_EQ(Walk("a,b\n1,2\r\n\n3,4"), (Lines{{1, "a,b"}, {2, "1,2"}, {3, ""}, {4, "3,4"}}));
}

TEST(TextLines, AFinalNewlineMakesNoEmptyLastLine) {
  EXPECT_EQ(Walk("x\n"), (Lines{{1, "x"}}));
  EXPECT_EQ(Walk("x\n\n"), (Lines{{1, "x"}, {2, ""}}));
  EXPECT_EQ(Walk(""), Lines{});
  EXPECT_EQ(Walk("\n"), (Lines{{1, ""}}));
}

TEST(TextLines, OnlyTheCarriageReturnBeforeTheNewlineIsDropped) {
  EXPECT_EQ(Walk("a\rb\r\r\n\r"), (Lines{{1, "a\rb\r"}, {2, ""}}));
  TextLines lines("one");
  EXPECT_EQ(lines.line_no(), 0);
}

}  // namespace
}  // namespace fleetplan
