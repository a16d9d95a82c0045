#include "fleetplan/core/progress.h"

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(Progress, LineShowsBarCountsPercentAndEta) {
  EXPECT_EQ(Progress::Line("sweep", "points", 16, 64, 0, 10.0, "", 8),
            "sweep [##......] 16/64 points 25% ETA 30s");
  EXPECT_EQ(Progress::Line("sweep", "points", 64, 64, 2, 95.0, "", 8),
            "sweep [########] 64/64 points 100% in 1m35s, 2 failed");
  EXPECT_EQ(Progress::Line("sweep", "points", 0, 64, 0, 1.0, "", 4), "sweep [....] 0/64 points 0%");
}

TEST(Progress, UnknownTotalShowsCountsAndElapsed) {
  EXPECT_EQ(Progress::Line("simulate", "requests", 1200, 0, 0, 3.25, "at 41.0 s", 8),
            "simulate 1200 requests, 3.2s, at 41.0 s");
}

TEST(Progress, FormatsDurationsCompactly) {
  EXPECT_EQ(Progress::FormatSeconds(0.44), "0.4s");
  EXPECT_EQ(Progress::FormatSeconds(41), "41s");
  EXPECT_EQ(Progress::FormatSeconds(185), "3m05s");
  EXPECT_EQ(Progress::FormatSeconds(3720), "1h02m");
  EXPECT_EQ(Progress::FormatSeconds(-1), "?");
}

TEST(Progress, QuietWritesNothing) {
  std::ostringstream out;
  {
    Progress p(out, "sweep", "points", 3, ProgressFor(true));
    p.Advance();
    p.Advance(2, 1);
  }
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, PlainModeEndsWithOneFinalLine) {
  std::ostringstream out;
  ProgressOptions o;
  o.mode = ProgressMode::kPlain;
  o.plain_interval = std::chrono::hours(1);  // no intermediate lines
  o.bar_width = 4;
  {
    Progress p(out, "sweep", "points", 2, o);
    p.Advance();
    p.Update(2, 1);
    p.Update(1);  // not monotone: ignored
  }
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("sweep [####] 2/2 points 100% in ", 0), 0u) << text;
  EXPECT_TRUE(text.ends_with(", 1 failed\n")) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

}  // namespace
}  // namespace fleetplan
