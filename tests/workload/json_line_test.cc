// FlatJsonLine: the fast scanner and the nlohmann fallback build the same tree; syntax
// errors are reported with a column.
#include "workload/json_line.h"

#include <gtest/gtest.h>

namespace fleetplan::workload_internal {
namespace {

// A canonical rendering of the parsed tree, to compare the two paths.
std::string Render(const FlatJsonLine& j) {
  std::string out;
  for (const JsonField& f : j.fields()) {
    out += std::string(f.key) + "=";
    const auto render = [&](auto&& self, uint32_t i) -> void {
      const JsonNodeLite& n = j.node(i);
      switch (n.kind) {
        case JsonKind::kArray: {
          out += "[";
          uint32_t c = i + 1;
          for (uint32_t k = 0; k < n.children; ++k, c = j.NextSibling(c)) {
            if (k > 0) out += ",";
            self(self, c);
          }
          out += "]";
          return;
        }
        case JsonKind::kString:
          out += "s:" + std::string(n.text);
          return;
        case JsonKind::kInt:
          out += "i:" + std::to_string(n.integer);
          return;
        case JsonKind::kUInt:
          out += "u:" + std::to_string(n.uinteger);
          return;
        case JsonKind::kDouble:
          out += "d:" + std::to_string(n.number);
          return;
        case JsonKind::kBool:
          out += n.boolean ? "true" : "false";
          return;
        case JsonKind::kNull:
          out += "null";
          return;
        case JsonKind::kObject:
          out += "{}";
          return;
      }
    };
    render(render, f.node);
    out += ";";
  }
  return out;
}

TEST(FlatJsonLineTest, FastPathParsesTraceRows) {
  FlatJsonLine j;
  ASSERT_TRUE(j.Parse(R"({"a": 1, "b": [[18446744073709551615, 2], [3, -4]], "c": "x", "d": null, "e": true, "f": 1.5})"));
  EXPECT_FALSE(j.used_fallback());
  EXPECT_EQ(Render(j), "a=i:1;b=[[u:18446744073709551615,i:2],[i:3,i:-4]];c=s:x;d=null;e=true;f=d:1.500000;");
  EXPECT_EQ(j.fields()[1].column, 15);
  EXPECT_EQ(j.node(j.fields()[1].node + 2).column, 17);
}

TEST(FlatJsonLineTest, FallbackHandlesWhatTheScannerDoesNot) {
  FlatJsonLine j;
  ASSERT_TRUE(j.Parse(R"({"name": "caf\u00e9 \"x\"", "obj": {"k": 1}, "n": 7})"));
  EXPECT_TRUE(j.used_fallback());
  // nlohmann sorts keys; values are decoded.
  EXPECT_EQ(Render(j), "n=i:7;name=s:caf\xC3\xA9 \"x\";obj={};");
}

TEST(FlatJsonLineTest, BothPathsAgree) {
  // Lines the scanner accepts, re-parsed through the fallback by adding an escape to a
  // dummy key (which forces the fallback) must give the same fields.
  for (const std::string body : {R"("a": 1, "b": [1, 2, 3])", R"("hash_ids": [], "timestamp": 0)",
                                 R"("p": [[1, 2], [3, 4]], "s": "plain")", R"("x": -0, "y": 1e3)"}) {
    FlatJsonLine fast, slow;
    const std::string fast_line = "{" + body + "}";  // views point into the line: keep it alive
    const std::string slow_line = "{" + body + R"(, "z\u0021": 0})";
    ASSERT_TRUE(fast.Parse(fast_line));
    ASSERT_FALSE(fast.used_fallback());
    ASSERT_TRUE(slow.Parse(slow_line));
    ASSERT_TRUE(slow.used_fallback());
    std::string expected = Render(fast) + "z!=i:0;";
    // The fallback lists keys sorted; the inputs above are already in sorted order.
    EXPECT_EQ(Render(slow), expected) << body;
  }
}

TEST(FlatJsonLineTest, SyntaxErrorsHaveAColumn) {
  FlatJsonLine j;
  EXPECT_FALSE(j.Parse(R"({"a": 1, "b": [1, 2)"));
  EXPECT_EQ(j.error(), "truncated or malformed JSON: syntax error while parsing array - unexpected end of input; "
                       "expected ']'");
  EXPECT_EQ(j.error_column(), 20);
  EXPECT_FALSE(j.Parse(R"({"a": 01})"));
  EXPECT_NE(j.error().find("truncated or malformed JSON"), std::string::npos);
  EXPECT_FALSE(j.Parse("[1, 2]"));
  EXPECT_EQ(j.error(), "expected a JSON object per line, got array");
}

}  // namespace
}  // namespace fleetplan::workload_internal
