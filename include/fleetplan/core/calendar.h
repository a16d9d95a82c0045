// Proleptic Gregorian calendar arithmetic in days since 1970-01-01 (H. Hinnant,
// "chrono-compatible low-level date algorithms": days_from_civil, civil_from_days).
// Written out rather than taken from <chrono> or the C library so that dates read and
// print the same on every platform, with no locale or time zone database involved.
// Thread model: pure functions.
#pragma once

#include <cstdint>

namespace fleetplan {

struct CivilDate {
  int64_t year = 1970;
  int64_t month = 1;  // 1..12
  int64_t day = 1;    // 1..DaysInMonth
};

int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day);
CivilDate CivilFromDays(int64_t days);
bool IsLeapYear(int64_t year);
// REQUIRES: 1 <= month <= 12.
int64_t DaysInMonth(int64_t year, int64_t month);

}  // namespace fleetplan
