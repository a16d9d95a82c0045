// Calendar arithmetic: days from a civil date and back, over four centuries of days.
#include "fleetplan/core/calendar.h"

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(Calendar, DaysAndCivilDatesRoundTripOverFourCenturies) {
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);
  EXPECT_EQ(DaysFromCivil(2026, 12, 2), 20789);  // date -u -d 2026-12-02 +%s / 86400
  CivilDate prev = CivilFromDays(-1);
  EXPECT_EQ(prev.year, 1969);
  for (int64_t days = 0; days < 146097; ++days) {  // 400 years: every leap rule
    const CivilDate c = CivilFromDays(days);
    ASSERT_EQ(DaysFromCivil(c.year, c.month, c.day), days);
    // Each day follows the one before it: the next day of the month, or the 1st of the next month.
    const bool next_day = c.year == prev.year && c.month == prev.month && c.day == prev.day + 1;
    const bool next_month = c.day == 1 && prev.day == DaysInMonth(prev.year, prev.month) &&
                            ((c.month == prev.month + 1 && c.year == prev.year) ||
                             (c.month == 1 && prev.month == 12 && c.year == prev.year + 1));
    ASSERT_TRUE(next_day || next_month) << days;
    prev = c;
  }
  EXPECT_TRUE(IsLeapYear(2000));
  EXPECT_FALSE(IsLeapYear(2100));
  EXPECT_EQ(DaysInMonth(2028, 2), 29);
  EXPECT_EQ(DaysInMonth(2026, 2), 28);
}

}  // namespace
}  // namespace fleetplan
