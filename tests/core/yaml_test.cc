// core/yaml.h: paths and locations of nested values, typed reads, and the exact text of
// every kind of located error (missing field, wrong type, unknown key, syntax, encoding,
// duplicates, aliases, tags).
#include "fleetplan/core/yaml.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/core/limits.h"

namespace fleetplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const char* const kScenario =
    "version: 1\n"                                   // 1
    "name: atlas\n"                                  // 2
    "workload:\n"                                    // 3
    "  classes:\n"                                   // 4
    "    interactive:\n"                             // 5
    "      share: 0.7\n"                             // 6
    "      prompt:\n"                                // 7
    "        - {segment: system, tokens: 512}\n"     // 8
    "        - segment: user\n"                      // 9
    "          tokens: 1200\n"                       // 10
    "      slo: {ttft: 600ms, tpot: 50ms}\n"         // 11
    "    research:\n"                                // 12
    "      share: 0.1\n"                             // 13
    "      prompt: []\n"                             // 14
    "engine:\n"                                      // 15
    "  scheduler:\n"                                 // 16
    "    policy: decode_frist\n"                     // 17
    "    max_batched_tokens: 8192\n"                 // 18
    "  memory: 80GiB\n"                              // 19
    "  rate: 8/s\n"                                  // 20
    "  enabled: true\n"                              // 21
    "tags: [a, \"b\", c]\n";                         // 22

YamlDocument Load(std::string_view text, std::string name = "scenario.yaml") {
  Expected<YamlDocument> doc = YamlDocument::LoadString(text, std::move(name));
  EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.status().message());
  if (!doc.ok()) std::abort();
  return std::move(doc).value();
}

std::string LoadError(std::string_view text, std::string name) {
  const Expected<YamlDocument> doc = YamlDocument::LoadString(text, std::move(name));
  EXPECT_FALSE(doc.ok());
  if (doc.ok()) return "<loaded>";
  EXPECT_EQ(doc.status().code(), StatusCode::kInvalidInput);
  return doc.status().message();
}

std::string ErrorText(const Status& s) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  return s.message();
}

template <typename T>
std::string ErrorText(const Expected<T>& e) {
  EXPECT_FALSE(e.ok());
  if (e.ok()) return "<ok>";
  return ErrorText(e.status());
}

// The first line of a located error: "<file>:<l>:<c>: <path>: <message>".
template <typename T>
std::string Headline(const T& e) {
  const std::string text = ErrorText(e);
  return text.substr(0, text.find('\n'));
}

// ---- Paths and locations -----------------------------------------------------------------

TEST(YamlPathTest, NestedMapsAndSequencesHavePathsAndLocations) {
  const YamlDocument doc = Load(kScenario);
  const YamlNode interactive = doc.root()["workload"]["classes"]["interactive"];
  EXPECT_EQ(interactive.path(), "workload.classes.interactive");
  const Expected<std::vector<YamlNode>> prompt = interactive["prompt"].Items();
  ASSERT_TRUE(prompt.ok());
  ASSERT_EQ(prompt->size(), 2u);

  const YamlNode tokens1 = (*prompt)[1]["tokens"];
  EXPECT_EQ(tokens1.path(), "workload.classes.interactive.prompt[1].tokens");
  EXPECT_EQ(tokens1.location().file, "scenario.yaml");
  EXPECT_EQ(tokens1.location().line, 10);
  EXPECT_EQ(tokens1.location().column, 19);
  EXPECT_EQ(tokens1.location().source_line, "          tokens: 1200");
  EXPECT_EQ(tokens1.AsInt().value(), 1200);

  const YamlNode tokens0 = (*prompt)[0]["tokens"];
  EXPECT_EQ(tokens0.path(), "workload.classes.interactive.prompt[0].tokens");
  EXPECT_EQ(tokens0.location().line, 8);
  EXPECT_EQ(tokens0.location().column, 37);
  EXPECT_EQ(tokens0.AsInt().value(), 512);

  EXPECT_EQ((*prompt)[1].path(), "workload.classes.interactive.prompt[1]");
  EXPECT_EQ((*prompt)[1].location().line, 9);
  EXPECT_EQ((*prompt)[1].location().column, 11);
  EXPECT_EQ(doc.root().path(), "");
  EXPECT_EQ(doc.display_name(), "scenario.yaml");
}

TEST(YamlPathTest, EntriesKeepDocumentOrder) {
  const YamlDocument doc = Load(kScenario);
  const auto entries = doc.root()["engine"].Entries();
  ASSERT_TRUE(entries.ok());
  std::vector<std::string> keys;
  for (const auto& [key, node] : *entries) keys.push_back(key + "=" + node.path());
  EXPECT_THAT(keys, ElementsAre("scheduler=engine.scheduler", "memory=engine.memory",
                                "rate=engine.rate", "enabled=engine.enabled"));
}

TEST(YamlPathTest, KindsAndPresence) {
  const YamlDocument doc = Load("m: {a: 1}\ns: [1]\nv: x\nn:\nq: \"null\"\nt: ~\nu: null\n");
  const YamlNode root = doc.root();
  EXPECT_TRUE(root.IsMap());
  EXPECT_TRUE(root["m"].IsMap());
  EXPECT_TRUE(root["s"].IsSequence());
  EXPECT_TRUE(root["v"].IsScalar());
  EXPECT_TRUE(root["n"].IsNull());
  EXPECT_TRUE(root["t"].IsNull());
  EXPECT_TRUE(root["u"].IsNull());
  EXPECT_TRUE(root["q"].IsScalar());  // a quoted "null" is a string
  EXPECT_EQ(root["q"].AsString().value(), "null");
  EXPECT_TRUE(root["n"].present());
  EXPECT_FALSE(root["missing"].present());
  EXPECT_FALSE(root["missing"].IsNull());
  EXPECT_FALSE(root["missing"].IsMap());
}

TEST(YamlPathTest, TextRendersValuesForMessages) {
  const YamlDocument doc = Load(kScenario);
  const YamlNode root = doc.root();
  EXPECT_EQ(root["engine"]["scheduler"]["policy"].Text(), "decode_frist");
  EXPECT_EQ(root["workload"]["classes"]["interactive"]["slo"].Text(), "{ttft: 600ms, tpot: 50ms}");
  EXPECT_EQ(root["tags"].Text(), "[a, b, c]");
  EXPECT_EQ(root["nope"].Text(), "");
  EXPECT_EQ(Load("a:\n").root()["a"].Text(), "null");
  std::string long_list = "x: [";
  for (int i = 0; i < 100; ++i) long_list += "item, ";
  long_list += "end]\n";
  const std::string text = Load(long_list).root()["x"].Text();
  EXPECT_EQ(text.size(), 83u);
  EXPECT_THAT(text, StartsWith("[item, item, "));
  EXPECT_THAT(text, ::testing::EndsWith("..."));
}

// ---- Typed reads -------------------------------------------------------------------------

TEST(YamlReadTest, ScalarsOfEveryType) {
  const YamlDocument doc = Load(kScenario);
  const YamlNode root = doc.root();
  EXPECT_EQ(root["version"].AsInt().value(), 1);
  EXPECT_EQ(root["name"].AsString().value(), "atlas");
  EXPECT_EQ(root["version"].AsString().value(), "1");  // a plain scalar spells a string too
  EXPECT_EQ(root["workload"]["classes"]["interactive"]["share"].AsDouble().value(), 0.7);
  EXPECT_EQ(root["engine"]["enabled"].AsBool().value(), true);
  EXPECT_EQ(root["engine"]["memory"].AsBytes().value(), GiB(80));
  EXPECT_EQ(root["engine"]["rate"].AsRate().value().per_second, 8.0);
  EXPECT_EQ(root["workload"]["classes"]["interactive"]["slo"]["ttft"].AsDuration().value(), Ms(600));
  EXPECT_THAT(root["tags"].AsStringList().value(), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(root["workload"]["classes"]["research"]["prompt"].Items().value().empty());
}

TEST(YamlReadTest, Integers) {
  const YamlDocument doc = Load(
      "a: 1.5\nb: 1e3\nc: 0x10\nd: 007\ne: 99999999999999999999\nf: \"42\"\ng: -42\nh: +7\n"
      "i: 0\nj: -9223372036854775808\nk: 9223372036854775807\nl: abc\nm: [1]\nn: ~\n",
      "i.yaml");
  const YamlNode r = doc.root();
  EXPECT_EQ(ErrorText(r["a"].AsInt()),
            "i.yaml:1:4: a: expected an integer, got '1.5'\n"
            "    1 | a: 1.5\n"
            "      |    ^\n");
  EXPECT_EQ(Headline(r["b"].AsInt()), "i.yaml:2:4: b: expected an integer, got '1e3'");
  EXPECT_EQ(Headline(r["c"].AsInt()), "i.yaml:3:4: c: expected an integer, got '0x10'");
  EXPECT_EQ(Headline(r["d"].AsInt()),
            "i.yaml:4:4: d: expected an integer without leading zeros, got '007'");
  EXPECT_EQ(Headline(r["e"].AsInt()),
            "i.yaml:5:4: e: expected an integer between -9223372036854775808 and "
            "9223372036854775807, got '99999999999999999999'");
  EXPECT_EQ(Headline(r["f"].AsInt()),
            "i.yaml:6:4: f: expected an integer, got the quoted string '42'; write it without quotes");
  EXPECT_EQ(r["g"].AsInt().value(), -42);
  EXPECT_EQ(r["h"].AsInt().value(), 7);
  EXPECT_EQ(r["i"].AsInt().value(), 0);
  EXPECT_EQ(r["j"].AsInt().value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r["k"].AsInt().value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Headline(r["l"].AsInt()), "i.yaml:12:4: l: expected an integer, got 'abc'");
  EXPECT_EQ(Headline(r["m"].AsInt()), "i.yaml:13:4: m: expected an integer, got a sequence");
  EXPECT_EQ(Headline(r["n"].AsInt()), "i.yaml:14:4: n: expected an integer, got null");
}

TEST(YamlReadTest, RangeCheckedReads) {
  const YamlDocument doc = Load("n: 0\nm: abc\nk: 5\ns: 1.5\nt: x\nu: 0.25\nv: -3\n", "r.yaml");
  const YamlNode r = doc.root();
  EXPECT_EQ(ErrorText(r["n"].AsIntAtLeast(1)),
            "r.yaml:1:4: n: expected an integer >= 1, got 0\n"
            "    1 | n: 0\n"
            "      |    ^\n");
  EXPECT_EQ(Headline(r["m"].AsIntAtLeast(1)), "r.yaml:2:4: m: expected an integer >= 1, got 'abc'");
  EXPECT_EQ(r["k"].AsIntAtLeast(1).value(), 5);
  EXPECT_EQ(r["v"].AsIntAtLeast(-3).value(), -3);
  EXPECT_EQ(Headline(r["s"].AsDoubleInRange(0, 1)),
            "r.yaml:4:4: s: expected a number between 0 and 1, got 1.5");
  EXPECT_EQ(Headline(r["t"].AsDoubleInRange(0, 1)),
            "r.yaml:5:4: t: expected a number between 0 and 1, got 'x'");
  EXPECT_EQ(Headline(r["v"].AsDoubleInRange(0.5, 2.5)),
            "r.yaml:7:4: v: expected a number between 0.5 and 2.5, got -3");
  EXPECT_EQ(r["u"].AsDoubleInRange(0, 1).value(), 0.25);
}

TEST(YamlReadTest, DoublesAreFiniteOnly) {
  const YamlDocument doc = Load(
      "a: 1.5\nb: 1e3\nc: .inf\nd: .nan\ne: abc\nf: -2.5E-3\ng: 5\nh: nan\ni: -inf\nj: \"1.5\"\n"
      "k: 1e999\nl: +-1\nm: 0x1p3\n",
      "d.yaml");
  const YamlNode r = doc.root();
  EXPECT_EQ(r["a"].AsDouble().value(), 1.5);
  EXPECT_EQ(r["b"].AsDouble().value(), 1000.0);
  EXPECT_EQ(Headline(r["c"].AsDouble()), "d.yaml:3:4: c: expected a finite number, got '.inf'");
  EXPECT_EQ(Headline(r["d"].AsDouble()), "d.yaml:4:4: d: expected a finite number, got '.nan'");
  EXPECT_EQ(Headline(r["e"].AsDouble()), "d.yaml:5:4: e: expected a finite number, got 'abc'");
  EXPECT_EQ(r["f"].AsDouble().value(), -2.5e-3);
  EXPECT_EQ(r["g"].AsDouble().value(), 5.0);
  EXPECT_EQ(Headline(r["h"].AsDouble()), "d.yaml:8:4: h: expected a finite number, got 'nan'");
  EXPECT_EQ(Headline(r["i"].AsDouble()), "d.yaml:9:4: i: expected a finite number, got '-inf'");
  EXPECT_EQ(Headline(r["j"].AsDouble()),
            "d.yaml:10:4: j: expected a finite number, got the quoted string '1.5'; write it "
            "without quotes");
  EXPECT_EQ(Headline(r["k"].AsDouble()), "d.yaml:11:4: k: expected a finite number, got '1e999'");
  EXPECT_EQ(Headline(r["l"].AsDouble()), "d.yaml:12:4: l: expected a finite number, got '+-1'");
  EXPECT_EQ(Headline(r["m"].AsDouble()), "d.yaml:13:4: m: expected a finite number, got '0x1p3'");
}

TEST(YamlReadTest, BoolsAreTrueOrFalseOnly) {
  const YamlDocument doc = Load("a: true\nb: false\nc: yes\nd: True\ne: 'true'\nf: on\n", "b.yaml");
  const YamlNode r = doc.root();
  EXPECT_TRUE(r["a"].AsBool().value());
  EXPECT_FALSE(r["b"].AsBool().value());
  EXPECT_EQ(Headline(r["c"].AsBool()), "b.yaml:3:4: c: expected true or false, got 'yes'");
  EXPECT_EQ(Headline(r["d"].AsBool()), "b.yaml:4:4: d: expected true or false, got 'True'");
  EXPECT_EQ(Headline(r["e"].AsBool()),
            "b.yaml:5:4: e: expected true or false, got the quoted string 'true'; write it "
            "without quotes");
  EXPECT_EQ(Headline(r["f"].AsBool()), "b.yaml:6:4: f: expected true or false, got 'on'");
}

TEST(YamlReadTest, UnitValuesAreLocated) {
  const YamlDocument doc = Load(
      "a: 600\nb: {x: 1}\nc: -1GiB\nd: \"600ms\"\ne: 600 msec\nf: 8\ng: 1.5s\n", "u.yaml");
  const YamlNode r = doc.root();
  EXPECT_EQ(ErrorText(r["a"].AsDuration()),
            "u.yaml:1:4: a: expected a duration with a unit (ns, us, ms, s, m, min, h), got '600'\n"
            "    1 | a: 600\n"
            "      |    ^\n");
  EXPECT_EQ(Headline(r["b"].AsDuration()),
            "u.yaml:2:4: b: expected a duration with a unit (ns, us, ms, s, m, min, h), got a "
            "mapping");
  EXPECT_EQ(Headline(r["c"].AsBytes()), "u.yaml:3:4: c: expected a non-negative size, got '-1GiB'");
  EXPECT_EQ(r["d"].AsDuration().value(), Ms(600));  // quoted unit values are fine
  EXPECT_EQ(Headline(r["e"].AsDuration()),
            "u.yaml:5:4: e: expected a duration with a unit (ns, us, ms, s, m, min, h), got "
            "'600 msec'; did you mean '600 ms'?");
  EXPECT_EQ(Headline(r["f"].AsRate()),
            "u.yaml:6:4: f: expected a rate with a unit (/s, /m, /min, /h), got '8'");
  EXPECT_EQ(r["g"].AsDuration().value(), Ms(1500));
  EXPECT_EQ(Headline(r["missing"].AsBytes()), "u.yaml:1:1: missing required field 'missing'");
}

TEST(YamlReadTest, StringsAndStringLists) {
  const YamlDocument doc = Load("a: [x, {b: 1}]\nb: x\nc: ''\nd: |\n  two\n  lines\ne: {k: v}\n",
                                "s.yaml");
  const YamlNode r = doc.root();
  EXPECT_EQ(Headline(r["a"].AsStringList()), "s.yaml:1:8: a[1]: expected a string, got a mapping");
  EXPECT_EQ(Headline(r["b"].AsStringList()),
            "s.yaml:2:4: b: expected a sequence of strings, got 'x'");
  EXPECT_EQ(r["c"].AsString().value(), "");
  EXPECT_EQ(r["d"].AsString().value(), "two\nlines\n");
  EXPECT_EQ(Headline(r["e"].AsString()), "s.yaml:7:4: e: expected a string, got a mapping");
  EXPECT_EQ(Headline(r["e"].Items()), "s.yaml:7:4: e: expected a sequence, got a mapping");
  EXPECT_EQ(Headline(r["b"].Entries()), "s.yaml:2:4: b: expected a mapping, got 'x'");
}

// ---- Missing, optional and wrong-typed parents --------------------------------------------

TEST(YamlMissingTest, MissingRequiredFieldIsLocatedAtTheParentMap) {
  const YamlDocument doc = Load(kScenario);
  const YamlNode interactive = doc.root()["workload"]["classes"]["interactive"];
  EXPECT_EQ(ErrorText(interactive["max_tokens"].AsInt()),
            "scenario.yaml:6:7: workload.classes.interactive: missing required field "
            "'max_tokens'\n"
            "    6 |       share: 0.7\n"
            "      |       ^\n");
  const YamlNode second = interactive["prompt"].Items().value()[1];
  EXPECT_EQ(ErrorText(second["role"].AsString()),
            "scenario.yaml:9:11: workload.classes.interactive.prompt[1]: missing required field "
            "'role'\n"
            "    9 |         - segment: user\n"
            "      |           ^\n");
}

TEST(YamlMissingTest, ChainsNameTheFirstAbsentKey) {
  const YamlDocument doc = Load("a: 1\n", "c.yaml");
  const YamlNode deep = doc.root()["x"]["y"]["z"];
  EXPECT_EQ(deep.path(), "x.y.z");
  EXPECT_FALSE(deep.present());
  EXPECT_EQ(ErrorText(deep.AsInt()),
            "c.yaml:1:1: missing required field 'x'\n"
            "    1 | a: 1\n"
            "      | ^\n");
  EXPECT_EQ(Headline(doc.root()["x"]["y"].Error("needed when z is set")),
            "c.yaml:1:1: x.y: needed when z is set");
  EXPECT_EQ(Headline(doc.root()["x"].Items()), "c.yaml:1:1: missing required field 'x'");
}

TEST(YamlMissingTest, OptionalFieldsFallBackWhenAbsentOrNull) {
  const YamlDocument doc = Load("n:\nm: ~\ni: 5\ns: x\nb: false\nd: 2.5\nt: 2s\nsec:\n", "o.yaml");
  const YamlNode r = doc.root();
  EXPECT_EQ(r["absent"].IntOr(3).value(), 3);
  EXPECT_EQ(r["n"].IntOr(3).value(), 3);
  EXPECT_EQ(r["m"].StringOr("dflt").value(), "dflt");
  EXPECT_EQ(r["i"].IntOr(3).value(), 5);
  EXPECT_EQ(r["s"].StringOr("dflt").value(), "x");
  EXPECT_EQ(r["b"].BoolOr(true).value(), false);
  EXPECT_EQ(r["d"].DoubleOr(1.0).value(), 2.5);
  EXPECT_EQ(r["t"].DurationOr(Sec(1)).value(), Sec(2));
  EXPECT_EQ(r["absent"].DurationOr(Sec(1)).value(), Sec(1));
  EXPECT_EQ(r["sec"]["deeper"].IntOr(9).value(), 9);  // below a null map
  EXPECT_EQ(Headline(r["s"].IntOr(3)), "o.yaml:4:4: s: expected an integer, got 'x'");
  EXPECT_EQ(Headline(r["sec"]["deeper"].AsInt()), "o.yaml:8:1: sec: missing required field 'deeper'");
}

TEST(YamlMissingTest, ChildOfAScalarReportsTheParentsType) {
  const YamlDocument doc = Load("a: 5\nb: [1, 2]\n", "p.yaml");
  const YamlNode r = doc.root();
  EXPECT_FALSE(r["a"]["x"].present());
  EXPECT_EQ(Headline(r["a"]["x"].IntOr(3)), "p.yaml:1:4: a: expected a mapping, got '5'");
  EXPECT_EQ(Headline(r["b"]["x"]["y"].AsString()), "p.yaml:2:4: b: expected a mapping, got a sequence");
  EXPECT_EQ(Headline(r["a"]["x"].CheckKeys({"k"})), "p.yaml:1:4: a: expected a mapping, got '5'");
}

// ---- Unknown keys ------------------------------------------------------------------------

TEST(YamlCheckKeysTest, UnknownKeyIsLocatedAtTheKeyWithSuggestion) {
  const YamlDocument doc = Load("engine:\n  scheduler:\n    policy: fcfs\n    polcy: fcfs\n", "k.yaml");
  const YamlNode scheduler = doc.root()["engine"]["scheduler"];
  EXPECT_EQ(ErrorText(scheduler.CheckKeys({"policy", "max_batched_tokens"})),
            "k.yaml:4:5: engine.scheduler: unknown field 'polcy'; did you mean 'policy'? (valid: "
            "policy, max_batched_tokens)\n"
            "    4 |     polcy: fcfs\n"
            "      |     ^\n");
  EXPECT_TRUE(scheduler.CheckKeys({"policy", "polcy"}).ok());
  const std::vector<std::string> allowed = {"scheduler"};
  EXPECT_TRUE(doc.root()["engine"].CheckKeys(allowed).ok());
  EXPECT_EQ(Headline(doc.root().CheckKeys({"version"})),
            "k.yaml:1:1: unknown field 'engine' (valid: version)");
}

TEST(YamlCheckKeysTest, AbsentAndNullHaveNoKeysButOtherTypesFail) {
  const YamlDocument doc = Load("n:\ns: 5\nl: [a]\n", "k.yaml");
  EXPECT_TRUE(doc.root()["absent"].CheckKeys({"a"}).ok());
  EXPECT_TRUE(doc.root()["n"].CheckKeys({"a"}).ok());
  EXPECT_EQ(Headline(doc.root()["s"].CheckKeys({"a"})), "k.yaml:2:4: s: expected a mapping, got '5'");
  EXPECT_EQ(Headline(doc.root()["l"].CheckKeys({"a"})),
            "k.yaml:3:4: l: expected a mapping, got a sequence");
}

// ---- Locations of empty values, aliases, odd characters ------------------------------------

TEST(YamlLocationTest, EmptyValuesAreLocatedAtTheirKeyOrDash) {
  const YamlDocument doc = Load("a:\nb: 2\ns:\n  -\n  - 3\n  - \n", "e.yaml");
  EXPECT_EQ(Headline(doc.root()["a"].AsInt()), "e.yaml:1:1: a: expected an integer, got null");
  const auto items = doc.root()["s"].Items().value();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(Headline(items[0].AsInt()), "e.yaml:4:3: s[0]: expected an integer, got null");
  EXPECT_EQ(Headline(items[2].AsInt()), "e.yaml:6:3: s[2]: expected an integer, got null");
  // An explicit null keeps its own place.
  EXPECT_EQ(Headline(Load("a: ~\n", "e.yaml").root()["a"].AsInt()),
            "e.yaml:1:4: a: expected an integer, got null");
  // A key that merely starts with "null" is not taken for an explicit null.
  EXPECT_EQ(Headline(Load("a:\nnullable: 1\n", "e.yaml").root()["a"].AsInt()),
            "e.yaml:1:1: a: expected an integer, got null");
}

TEST(YamlLocationTest, AliasesShareTheAnchoredValue) {
  const YamlDocument doc = Load("base: &b {x: 1}\nother: *b\nlist: [*b, *b]\n", "a.yaml");
  EXPECT_EQ(doc.root()["other"]["x"].AsInt().value(), 1);
  EXPECT_EQ(doc.root()["other"]["x"].path(), "other.x");
  EXPECT_EQ(doc.root()["list"].Items().value().size(), 2u);
  EXPECT_EQ(Headline(doc.root()["other"]["y"].AsInt()),
            "a.yaml:1:7: other: missing required field 'y'");
}

TEST(YamlLocationTest, ColumnsCountCharacters) {
  const YamlDocument doc = Load("\xE5\x90\x8D\xE5\x89\x8D: \xE5\x80\xA4\n", "u.yaml");
  EXPECT_EQ(ErrorText(doc.root()["\xE5\x90\x8D\xE5\x89\x8D"].AsInt()),
            "u.yaml:1:5: \xE5\x90\x8D\xE5\x89\x8D: expected an integer, got '\xE5\x80\xA4'\n"
            "    1 | \xE5\x90\x8D\xE5\x89\x8D: \xE5\x80\xA4\n"
            "      |     ^\n");
}

TEST(YamlLocationTest, ByteOrderMarkAndCrLfAreTransparent) {
  const YamlDocument bom = Load("\xEF\xBB\xBF" "a: 1\n", "bom.yaml");
  EXPECT_EQ(ErrorText(bom.root()["a"].Error("boom")),
            "bom.yaml:1:4: a: boom\n"
            "    1 | a: 1\n"
            "      |    ^\n");
  const YamlDocument crlf = Load("a: 1\r\nb: x\r\n", "crlf.yaml");
  EXPECT_EQ(ErrorText(crlf.root()["b"].AsInt()),
            "crlf.yaml:2:4: b: expected an integer, got 'x'\n"
            "    2 | b: x\n"
            "      |    ^\n");
}

TEST(YamlLocationTest, EmptyDocumentIsANullRoot) {
  const YamlDocument doc = Load("", "e.yaml");
  EXPECT_TRUE(doc.root().IsNull());
  EXPECT_TRUE(doc.root().CheckKeys({"version"}).ok());
  EXPECT_EQ(ErrorText(doc.root()["version"].AsInt()), "e.yaml:1:1: the file is empty: missing required field 'version'");
  EXPECT_EQ(Load("# only a comment\n").root().IsNull(), true);
}

// ---- Load errors -------------------------------------------------------------------------

TEST(YamlLoadTest, SyntaxErrorsAreLocatedWithCaret) {
  EXPECT_EQ(LoadError("a: [1, 2\nb: 3\n", "bad.yaml"),
            "bad.yaml:2:2: invalid YAML: end of sequence flow not found\n"
            "    2 | b: 3\n"
            "      |  ^\n");
  EXPECT_EQ(LoadError("a: b: c\n", "bad.yaml"),
            "bad.yaml:1:5: invalid YAML: illegal map value\n"
            "    1 | a: b: c\n"
            "      |     ^\n");
  EXPECT_EQ(LoadError("a: *nope\n", "bad.yaml"),
            "bad.yaml:1:4: invalid YAML: the referenced anchor is not defined\n"
            "    1 | a: *nope\n"
            "      |    ^\n");
}

TEST(YamlLoadTest, MissingFileSaysSo) {
  const std::string path = ::testing::TempDir() + "fleetplan_no_such_dir/scenario.yaml";
  const Expected<YamlDocument> doc = YamlDocument::LoadFile(path);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(doc.status().message(), "cannot read '" + path + "': No such file or directory");
}

TEST(YamlLoadTest, LoadFileLocatesByTheGivenPath) {
  std::string dir = ::testing::TempDir() + "fleetplan_yaml_test_XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/s.yaml";
  ASSERT_TRUE(WriteFileAtomic(path, "a: x\n").ok());
  const Expected<YamlDocument> doc = YamlDocument::LoadFile(path);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->display_name(), path);
  EXPECT_EQ(Headline(doc->root()["a"].AsInt()), path + ":1:4: a: expected an integer, got 'x'");
  std::filesystem::remove_all(dir);
}

TEST(YamlLoadTest, DuplicateKeys) {
  EXPECT_EQ(LoadError("a: 1\nb: 2\na: 3\n", "d.yaml"),
            "d.yaml:3:1: duplicate field 'a' (first given on line 1)\n"
            "    3 | a: 3\n"
            "      | ^\n");
  EXPECT_EQ(LoadError("x:\n  - {k: 1, k: 2}\n", "d.yaml"),
            "d.yaml:2:12: x[0]: duplicate field 'k' (first given on line 2)\n"
            "    2 |   - {k: 1, k: 2}\n"
            "      |            ^\n");
}

TEST(YamlLoadTest, KeysMustBeScalars) {
  EXPECT_EQ(LoadError("? [1]\n: 2\n", "k.yaml"),
            "k.yaml:1:3: expected a field name, got a sequence as a key\n"
            "    1 | ? [1]\n"
            "      |   ^\n");
}

TEST(YamlLoadTest, TagsAreRejected) {
  EXPECT_EQ(LoadError("a: !!str 5\n", "t.yaml"),
            "t.yaml:1:4: a: YAML tags are not supported, got '!!str'; write the value without a "
            "tag\n"
            "    1 | a: !!str 5\n"
            "      |    ^\n");
  EXPECT_THAT(LoadError("a:\n  - !custom {x: 1}\n", "t.yaml"),
              StartsWith("t.yaml:2:5: a[0]: YAML tags are not supported, got '!custom'"));
}

TEST(YamlLoadTest, RecursiveAliasIsRejected) {
  EXPECT_EQ(LoadError("a: &x\n  - *x\n", "r.yaml"),
            "r.yaml:2:5: a[0]: recursive alias '*x': it refers to a value that contains it\n"
            "    2 |   - *x\n"
            "      |     ^\n");
}

TEST(YamlLoadTest, AliasExpansionIsBounded) {
  // Each level holds ten aliases of the one before: level k expands to ~1.1 * 10^(k+1).
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int k = 1; k <= 6; ++k) {
    text += "l" + std::to_string(k) + ": &l" + std::to_string(k) + " [";
    for (int i = 0; i < 10; ++i) text += (i > 0 ? ", *l" : "*l") + std::to_string(k - 1);
    text += "]\n";
  }
  const std::string error = LoadError(text, "b.yaml");
  EXPECT_THAT(error, StartsWith("b.yaml:6:"));  // level 5 passes a million values
  EXPECT_THAT(error, HasSubstr(": l5["));
  EXPECT_THAT(error, HasSubstr("the document expands to more than 1000000 values (aliases count "
                               "once per use); split it or use fewer aliases"));
  // Four levels (about 111 thousand values) load fine.
  const std::string small = text.substr(0, text.find("l5:"));
  EXPECT_EQ(Load(small).root()["l4"].Items().value().size(), 10u);
}

TEST(YamlLoadTest, OneDocumentOnly) {
  EXPECT_EQ(LoadError("a: 1\n---\nb: 2\n", "m.yaml"),
            "m.yaml:2:1: expected a single YAML document, found a second one\n"
            "    2 | ---\n"
            "      | ^\n");
  EXPECT_TRUE(YamlDocument::LoadString("---\na: 1\n...\n", "m.yaml").ok());
}

TEST(YamlLoadTest, EncodingErrors) {
  EXPECT_EQ(LoadError(std::string("a: 1\nb: \0\n", 9), "n.yaml"),
            "n.yaml:2:4: expected UTF-8 text, found a NUL byte (is the file UTF-16?)\n"
            "    2 | b: ?\n"
            "      |    ^\n");
  EXPECT_EQ(LoadError("a: caf\xE9\n", "u.yaml"),
            "u.yaml:1:7: expected UTF-8 text, found the byte 0xe9\n"
            "    1 | a: caf?\n"
            "      |       ^\n");
  EXPECT_THAT(LoadError("\xFF\xFE" "a\0:\0", "u16.yaml"), StartsWith("u16.yaml:1:1: expected UTF-8"));
}

TEST(YamlLoadTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  EXPECT_THAT(LoadError(deep, "deep.yaml"),
              StartsWith("deep.yaml:1:65: [0][0][0]"));
  EXPECT_THAT(LoadError(deep, "deep.yaml"), HasSubstr("collections nested more than 64 deep (fleetplan's limit"));
  const std::string fine = std::string(kMaxNestingDepth, '[') + std::string(kMaxNestingDepth, ']');
  EXPECT_TRUE(YamlDocument::LoadString(fine, "ok.yaml").ok());
  const std::string over = std::string(kMaxNestingDepth + 1, '[') + std::string(kMaxNestingDepth + 1, ']');
  EXPECT_FALSE(YamlDocument::LoadString(over, "over.yaml").ok());
}

TEST(YamlLoadTest, NodesOutliveTheirDocumentObject) {
  YamlNode node = [] {
    const YamlDocument doc = Load("a: {b: 7}\n");
    return doc.root()["a"]["b"];
  }();
  EXPECT_EQ(node.AsInt().value(), 7);
  EXPECT_EQ(node.location().line, 1);
}

}  // namespace
}  // namespace fleetplan
