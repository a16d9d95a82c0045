// Parsing values with units, as users write them in YAML and on the command line.
//
// Grammar (surrounding spaces and tabs ignored; spaces allowed between number and unit):
//   number    := digits [ "." digits ]          (no sign, no exponent, no "inf"/"nan")
//   duration  := number unit | "0"              unit: ns us ms s m min h
//   size      := number unit | "0"              unit: B; KB (also kB) MB GB TB = 10^3..10^12;
//                                                     KiB MiB GiB TiB = 2^10..2^40
//   rate      := number "/" unit | "0"          unit: s m min h  (spaces allowed around "/")
// Examples: 600ms, 2s, 5m, 1h, 250us, 10ns, 1.5s, 80GiB, 16KiB, 1.5MiB, 4GB, 512B,
// 8/s, 120/m, 0.5/s, 3600/h. A bare number other than "0" is an error: the unit is
// required. Units are case-sensitive ("80gib" is an error that suggests "80GiB").
//
// Results are exact: the decimal text is scaled with integer arithmetic, so "600ms" is
// exactly 600'000'000 ns and "1.5MiB" exactly 1'572'864 B; a fraction finer than the
// resolution rounds to the nearest nanosecond / byte (halves away from zero). Rates are
// doubles (core/units.h), computed as the correctly rounded quotient number / seconds.
//
// Errors say what was expected and quote what was found, e.g.
//   "expected a duration with a unit (ns, us, ms, s, m, min, h), got '600 msec';
//    did you mean '600 ms'?"
//   "expected a non-negative duration, got '-5ms'"
//   "expected a duration of at most 2562047h (64-bit nanoseconds), got '9999999h'"
//   "expected a duration of at most 2562047h (64-bit nanoseconds), got '1e30s' (out of range)"
//   "expected a duration with a unit (...) written without an exponent, got '1e3s'; write '1000s'"
//   "expected a size with a unit (...), got '1PiB'; the largest unit is TiB: write '1024TiB'"
//   "expected a duration with a unit (...), got '6OOms'; the letter 'O' is not a digit: did
//    you mean '600ms'?"
// An exponent or infinity form is named for what it is (out of range, or to be written
// in digits), never as a missing unit. A unit is suggested only when it starts with the
// same letter as the one written. Rates are at most 1000000000/s (one per nanosecond);
// a tiny rate is fine.
// The messages are not located; YamlNode and the CLI add the location.
// Thread model: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

// The "expected ..." phrases of the messages, for callers that report a value of the
// wrong shape (e.g. a YAML mapping where a duration belongs).
inline constexpr std::string_view kExpectedDuration =
    "a duration with a unit (ns, us, ms, s, m, min, h)";
inline constexpr std::string_view kExpectedBytes =
    "a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
inline constexpr std::string_view kExpectedRate = "a rate with a unit (/s, /m, /min, /h)";

Expected<Duration> ParseDuration(std::string_view text);
Expected<Bytes> ParseBytes(std::string_view text);
Expected<Rate> ParseRate(std::string_view text);
// A duration that must be above 0 (a run's length, a measurement window): zero and
// negative values get one message wherever they are read: "expected a duration > 0, got
// '0s'".
Expected<Duration> ParsePositiveDuration(std::string_view text);

// Human-readable forms used in text reports. The unit is the largest one the magnitude
// reaches; exact multiples print as integers ("80 GiB", "600 ms", "5 min"), anything else
// with two decimals ("1.50 GiB", "1.23 ms"). Bytes use B, KiB, MiB, GiB, TiB; durations
// ns, us, ms, s, min, h; rates "8/s" (shortest round-trip form of the double, per second).
// Non-negative outputs parse back (to the printed precision).
std::string FormatBytes(Bytes b);
std::string FormatDuration(Duration d);
std::string FormatRate(Rate r);

}  // namespace fleetplan
