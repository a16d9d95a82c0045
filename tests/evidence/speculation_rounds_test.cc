// The speculation rounds reader on hostile lines: nesting bounded before the parser's
// tree is walked, values never serialized whole into a message, each key once.
#include "fleetplan/evidence/speculation_rounds.h"

#include <gtest/gtest.h>

#include <string>

namespace fleetplan {
namespace {

std::string ParseError(const std::string& text) {
  Expected<SpecRounds> r = ParseSpecRounds(text, "rounds.jsonl");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

// A `draft` nested 100,000 deep killed the process: the parse recursed, and then the
// error path serialized the value recursively. Now it is refused at the 65th bracket.
TEST(SpecRoundsRegression, DeeplyNestedDraftIsRefusedAtTheNestingLimit) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  const std::string m =
      ParseError(R"({"seq": "a", "draft": )" + deep + R"(, "target": [1], "draft_ms": 3, "verify_ms": 9})");
  EXPECT_NE(m.find("rounds.jsonl:1:"), std::string::npos) << m;
  EXPECT_NE(m.find("arrays and objects nested more than 64 deep"), std::string::npos) << m;
  // The line's object is level 1: the 64th '[' (after 22 bytes of prefix) opens level 65.
  EXPECT_NE(m.find("rounds.jsonl:1:86:"), std::string::npos) << m;
}

TEST(SpecRoundsRegression, NestingWithinTheLimitIsReadAndNotEchoedInTheMessage) {
  // 60 levels parse; the wrong type is reported by kind, not by printing the value.
  const std::string nested = std::string(60, '[') + "1" + std::string(60, ']');
  const std::string m = ParseError(R"({"draft": [)" + nested + R"(], "target": [1], "draft_ms": 3, "verify_ms": 9})");
  EXPECT_NE(m.find("expected token ids (integers >= 0), got an array of 1"), std::string::npos) << m;
  const std::string first_line = m.substr(0, m.find('\n'));
  EXPECT_EQ(first_line.find('['), std::string::npos) << first_line;  // shown in the source line only
  // A long string is cut.
  const std::string m2 =
      ParseError(R"({"draft": [")" + std::string(5000, 'x') + R"("], "target": [1], "draft_ms": 3, "verify_ms": 9})");
  EXPECT_NE(m2.find("got \"" + std::string(39, 'x') + "..."), std::string::npos) << m2.substr(0, 300);
}

// A second `draft` silently replaced the first (nlohmann keeps the last).
TEST(SpecRoundsRegression, AKeyGivenTwiceIsRefusedAtItsSecondUse) {
  const std::string m = ParseError(R"({"draft": [1], "target": [1], "draft": [2], "draft_ms": 3, "verify_ms": 9})");
  EXPECT_NE(m.find("rounds.jsonl:1:31: draft: the field is given twice in one object"), std::string::npos) << m;
  // Nested objects keep their own keys: the identity may repeat a key the round uses.
  const std::string ident = ParseError(
      R"({"identity": {"artifact": "a", "runtime": "vllm", "runtime": "sglang", "runtime_version": "1", "hardware": "h100-sxm-80g", "engine_config": "c"}})");
  EXPECT_NE(ident.find("runtime: the field is given twice"), std::string::npos) << ident;
}

}  // namespace
}  // namespace fleetplan
