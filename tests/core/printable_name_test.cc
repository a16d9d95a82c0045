// CheckPrintableName: regression for names with control characters (ESC sequences, BEL,
// CR/LF, NUL, U+202E) that were printed raw and could forge an output line.
#include "fleetplan/core/printable_name.h"

#include <string>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(CheckPrintableName, ControlAndBidirectionalCharactersAreRefusedWithTheirPlace) {
  const auto message = [](std::string_view name) { return CheckPrintableName(name).message(); };
  EXPECT_EQ(message("atl\x1b[31mas"), "contains the control character U+001B at byte 3: names are printed, so "
                                       "control and bidirectional-formatting characters are refused");
  EXPECT_EQ(message(std::string("a\0b", 3)).substr(0, 45), "contains the control character U+0000 at byte");
  EXPECT_NE(message("x\ry").find("U+000D at byte 1"), std::string::npos);
  EXPECT_NE(message("bell\a").find("U+0007 at byte 4"), std::string::npos);
  EXPECT_NE(message("line\nFAKE LINE").find("U+000A at byte 4"), std::string::npos);
  EXPECT_NE(message("del\x7f").find("U+007F"), std::string::npos);
  EXPECT_NE(message("c1\xc2\x9b").find("U+009B at byte 2"), std::string::npos);        // CSI
  EXPECT_NE(message("rtl\xe2\x80\xae" "cba").find("U+202E at byte 3"), std::string::npos);  // RLO
  EXPECT_NE(message("iso\xe2\x81\xa6").find("U+2066"), std::string::npos);
  EXPECT_EQ(CheckPrintableName("rtl\xe2\x80\xae").code(), StatusCode::kInvalidInput);
}

TEST(CheckPrintableName, OrdinaryNamesIncludingNonAsciiPass) {
  for (const char* name : {"atlas", "llama-3.1-8b", "fp8_w8a8", "h100 sxm", "modèle", "モデル", "emoji \xf0\x9f\x9a\x80",
                           "ellipsis \xe2\x80\xa6", ""}) {
    EXPECT_TRUE(CheckPrintableName(name).ok()) << name;
  }
}

}  // namespace
}  // namespace fleetplan
