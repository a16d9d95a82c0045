// core/json.h: canonical and pretty JSON, non-finite and bad-UTF-8 rejection with a JSON
// pointer, report rounding, atomic writes and reads.
#include "fleetplan/core/json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/output_file.h"

namespace fleetplan {
namespace {

std::string Canonical(const Json& j) {
  const Expected<std::string> s = CanonicalJson(j);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.status().message());
  return s.ok() ? *s : "";
}

std::string ErrorOf(const Expected<std::string>& e) {
  EXPECT_FALSE(e.ok());
  if (e.ok()) return "<ok>";
  EXPECT_EQ(e.status().code(), StatusCode::kInternal);
  return e.status().message();
}

TEST(CanonicalJsonTest, SortedKeysNoWhitespace) {
  Json j;
  j["zeta"] = 1;
  j["alpha"] = {{"b", true}, {"a", nullptr}};
  j["mid"] = Json::array({3, "x", 2.5});
  EXPECT_EQ(Canonical(j), R"({"alpha":{"a":null,"b":true},"mid":[3,"x",2.5],"zeta":1})");
}

TEST(CanonicalJsonTest, InsertionOrderDoesNotMatter) {
  Json a;
  a["x"] = 1;
  a["y"] = 2;
  Json b;
  b["y"] = 2;
  b["x"] = 1;
  EXPECT_EQ(Canonical(a), Canonical(b));
}

TEST(CanonicalJsonTest, NumbersExactAndShortest) {
  EXPECT_EQ(Canonical(Json(std::numeric_limits<int64_t>::max())), "9223372036854775807");
  EXPECT_EQ(Canonical(Json(std::numeric_limits<int64_t>::min())), "-9223372036854775808");
  EXPECT_EQ(Canonical(Json(std::numeric_limits<uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(Canonical(Json(0.1)), "0.1");
  EXPECT_EQ(Canonical(Json(1.0)), "1.0");
  EXPECT_EQ(Canonical(Json(1e300)), "1e+300");
  EXPECT_EQ(Canonical(Json(0.1 + 0.2)), "0.30000000000000004");
}

TEST(CanonicalJsonTest, Utf8IsWrittenAsIsAndControlsEscaped) {
  EXPECT_EQ(Canonical(Json("h\xC3\xA9llo \xE2\x82\xAC")), "\"h\xC3\xA9llo \xE2\x82\xAC\"");
  EXPECT_EQ(Canonical(Json("a\"b\\c\n\x01")), R"("a\"b\\c\n\u0001")");
}

TEST(CanonicalJsonTest, NonFiniteNumbersNameTheirPointer) {
  Json j;
  j["classes"] = Json::array({Json{{"p99", 1.0}}, Json{{"p99", std::nan("")}}});
  EXPECT_EQ(ErrorOf(CanonicalJson(j)), "cannot write JSON: NaN has no JSON form (at JSON pointer '/classes/1/p99')");
  EXPECT_EQ(ErrorOf(CanonicalJson(Json(std::numeric_limits<double>::infinity()))),
            "cannot write JSON: Infinity has no JSON form (at JSON pointer '')");
  Json escaped;
  escaped["a/b"]["c~d"] = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(ErrorOf(PrettyJson(escaped)),
            "cannot write JSON: -Infinity has no JSON form (at JSON pointer '/a~1b/c~0d')");
}

TEST(CanonicalJsonTest, InvalidUtf8IsRejected) {
  Json j;
  j["ok"] = Json::array({"fine", "bad\xFF"});
  EXPECT_EQ(ErrorOf(CanonicalJson(j)), "cannot write JSON: a string is not valid UTF-8 (at JSON pointer '/ok/1')");
  Json k;
  k["x"]["bad\xC3"] = 1;
  EXPECT_EQ(ErrorOf(CanonicalJson(k)), "cannot write JSON: a key is not valid UTF-8 (at JSON pointer '/x')");
}

TEST(PrettyJsonTest, TwoSpaceIndentAndTrailingNewline) {
  Json j;
  j["b"] = Json::array({1, 2});
  j["a"] = "x";
  const Expected<std::string> s = PrettyJson(j);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    2\n  ]\n}\n");
}

TEST(PrettyJsonTest, PiecesAtTheirDepthMakeTheWholeDocument) {
  const Json inner = {{"k", Json::array({1, {{"x", "a\nb"}}})}, {"e", Json::object()}};
  const Json doc = {{"a", inner}, {"b", Json::array({inner, 2})}};
  // The document written member by member, as a streaming writer does.
  const std::string pieces = "{\n  \"a\": " + *PrettyJsonAtDepth(inner, 1) + ",\n  \"b\": [\n    " +
                             *PrettyJsonAtDepth(inner, 2) + ",\n    " + *PrettyJsonAtDepth(Json(2), 2) + "\n  ]\n}\n";
  EXPECT_EQ(pieces, *PrettyJson(doc));
  EXPECT_EQ(*PrettyJsonAtDepth(inner, 0) + "\n", *PrettyJson(inner));
  EXPECT_FALSE(PrettyJsonAtDepth(Json(std::nan("")), 3).ok());
}

TEST(RoundForReportTest, SignificantDigits) {
  EXPECT_EQ(RoundForReport(0.1 + 0.2), 0.3);
  EXPECT_EQ(RoundForReport(123456789.123), 123456789.0);
  EXPECT_EQ(RoundForReport(1.23456789012e-7), 1.23456789e-7);
  EXPECT_EQ(RoundForReport(2.0 / 3.0, 3), 0.667);
  EXPECT_EQ(RoundForReport(-2.0 / 3.0, 3), -0.667);
  EXPECT_EQ(RoundForReport(1234.5, 4), 1234.0);  // exact half: to even
  EXPECT_EQ(RoundForReport(1235.5, 4), 1236.0);
  EXPECT_EQ(RoundForReport(42.0, 17), 42.0);
}

TEST(RoundForReportTest, ZeroSignAndNonFinite) {
  EXPECT_FALSE(std::signbit(RoundForReport(-0.0)));
  EXPECT_EQ(RoundForReport(-1e-320, 2), -1e-320);  // subnormals keep their sign and size
  // Rounding DBL_MAX to 2 digits would leave the double range: the value is kept.
  EXPECT_EQ(RoundForReport(std::numeric_limits<double>::max(), 2), std::numeric_limits<double>::max());
  EXPECT_EQ(RoundForReport(-std::numeric_limits<double>::max(), 2), -std::numeric_limits<double>::max());
  EXPECT_TRUE(std::isnan(RoundForReport(std::nan(""))));
  EXPECT_EQ(RoundForReport(std::numeric_limits<double>::infinity()), std::numeric_limits<double>::infinity());
  EXPECT_EQ(Canonical(Json(RoundForReport(0.1 + 0.2))), "0.3");
}

// A fresh directory under the test temp dir, removed at the end of the test.
class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "fleetplan_json_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> Listing(const std::string& dir) const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TEST_F(FileTest, WriteThenReadRoundTripsAndLeavesNoTemp) {
  const std::string path = dir_ + "/out/nested/report.json";
  ASSERT_TRUE(WriteFileAtomic(path, "{\"a\":1}\n").ok());
  Expected<std::string> back = ReadFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "{\"a\":1}\n");
  ASSERT_TRUE(WriteFileAtomic(path, "second").ok());  // replaces
  EXPECT_EQ(*ReadFile(path), "second");
  EXPECT_EQ(Listing(dir_ + "/out/nested"), std::vector<std::string>{"report.json"});
}

TEST_F(FileTest, BinaryContentAndEmptyFiles) {
  const std::string bytes("a\0b\xFF", 4);
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/bin", bytes).ok());
  EXPECT_EQ(*ReadFile(dir_ + "/bin"), bytes);
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/empty", "").ok());
  EXPECT_EQ(*ReadFile(dir_ + "/empty"), "");
  const std::string big(300'000, 'x');  // more than one read buffer
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/big", big).ok());
  EXPECT_EQ(*ReadFile(dir_ + "/big"), big);
}

TEST_F(FileTest, ReadErrorsNameThePath) {
  const Expected<std::string> missing = ReadFile(dir_ + "/nope.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(missing.status().message(), "cannot read '" + dir_ + "/nope.yaml': No such file or directory");
  EXPECT_EQ(ReadFile(dir_).status().message(), "cannot read '" + dir_ + "': Is a directory");
}

TEST_F(FileTest, WriteErrorsNameThePath) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/file", "x").ok());
  const Status under_file = WriteFileAtomic(dir_ + "/file/report.json", "x");
  EXPECT_EQ(under_file.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(under_file.message().rfind("cannot write '" + dir_ + "/file/report.json': ", 0), 0u)
      << under_file.message();
  const Status onto_dir = WriteFileAtomic(dir_, "x");
  EXPECT_EQ(onto_dir.message(), "cannot write '" + dir_ + "': Is a directory");
  EXPECT_EQ(Listing(dir_), std::vector<std::string>{"file"});  // temp file cleaned up
}

TEST_F(FileTest, OutputFileInPiecesReplacesOnlyOnCommit) {
  const std::string path = dir_ + "/report.json";
  ASSERT_TRUE(WriteFileAtomic(path, "old").ok());
  {
    Expected<std::unique_ptr<OutputFile>> file = OutputFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status().message();
    const std::string chunk(100'000, 'y');  // more than the write buffer
    ASSERT_TRUE((*file)->Write("x").ok());
    ASSERT_TRUE((*file)->Sink()(chunk).ok());
    EXPECT_EQ(*ReadFile(path), "old");  // not replaced before Commit
    ASSERT_TRUE((*file)->Commit().ok());
    EXPECT_EQ(*ReadFile(path), "x" + chunk);
  }
  {
    Expected<std::unique_ptr<OutputFile>> abandoned = OutputFile::Open(path);
    ASSERT_TRUE(abandoned.ok());
    ASSERT_TRUE((*abandoned)->Write("never committed").ok());
  }
  EXPECT_EQ(ReadFile(path)->size(), 100'001u);                        // an abandoned writer changes nothing
  EXPECT_EQ(Listing(dir_), std::vector<std::string>{"report.json"});  // and leaves no temp file
  EXPECT_EQ(OutputFile::Open(dir_).status().message(), "cannot write '" + dir_ + "': Is a directory");
}

}  // namespace
}  // namespace fleetplan
