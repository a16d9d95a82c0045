// core/units_parse.h: exact parsing of durations, sizes and rates; pinned error texts;
// formatting and parse(format(x)) round trips.
#include "fleetplan/core/units_parse.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

int64_t NsOf(std::string_view text) {
  const Expected<Duration> d = ParseDuration(text);
  EXPECT_TRUE(d.ok()) << text << ": " << (d.ok() ? "" : d.status().message());
  return d.ok() ? d->ns() : -1;
}

int64_t BytesOf(std::string_view text) {
  const Expected<Bytes> b = ParseBytes(text);
  EXPECT_TRUE(b.ok()) << text << ": " << (b.ok() ? "" : b.status().message());
  return b.ok() ? b->count() : -1;
}

double PerSecondOf(std::string_view text) {
  const Expected<Rate> r = ParseRate(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.status().message());
  return r.ok() ? r->per_second : -1.0;
}

template <typename T>
std::string ErrorOf(const Expected<T>& e) {
  EXPECT_FALSE(e.ok());
  if (e.ok()) return "<ok>";
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
  return e.status().message();
}

TEST(ParseDurationTest, EveryUnitIsExact) {
  EXPECT_EQ(NsOf("10ns"), 10);
  EXPECT_EQ(NsOf("250us"), 250'000);
  EXPECT_EQ(NsOf("600ms"), 600'000'000);
  EXPECT_EQ(NsOf("2s"), 2'000'000'000);
  EXPECT_EQ(NsOf("5m"), 300'000'000'000);
  EXPECT_EQ(NsOf("5min"), 300'000'000'000);
  EXPECT_EQ(NsOf("1h"), 3'600'000'000'000);
  EXPECT_EQ(NsOf("0"), 0);
  EXPECT_EQ(NsOf("0ms"), 0);
}

TEST(ParseDurationTest, FractionsAreScaledExactlyThenRounded) {
  EXPECT_EQ(NsOf("1.5s"), 1'500'000'000);
  EXPECT_EQ(NsOf("0.1s"), 100'000'000);  // no binary-double error
  EXPECT_EQ(NsOf("0.3ms"), 300'000);
  EXPECT_EQ(NsOf("1.25h"), 4'500'000'000'000);
  EXPECT_EQ(NsOf("1.4ns"), 1);
  EXPECT_EQ(NsOf("1.5ns"), 2);  // halves round up
  EXPECT_EQ(NsOf("0.0000000014s"), 1);
  EXPECT_EQ(NsOf("0.0000000005s"), 1);
  EXPECT_EQ(NsOf("0.00000000049999999999999999999999s"), 0);
  // 1 ns in hours has a non-terminating decimal expansion; exact arithmetic still rounds right.
  EXPECT_EQ(NsOf("0.000000000000138888888888888888h"), 0);  // 0.49999.. ns
  EXPECT_EQ(NsOf("0.000000000000138888888888888889h"), 1);  // 0.50000.. ns
  EXPECT_EQ(NsOf("007s"), 7'000'000'000);
}

TEST(ParseDurationTest, SpacesAroundAndBetweenAreAllowed) {
  EXPECT_EQ(NsOf(" 600 ms "), 600'000'000);
  EXPECT_EQ(NsOf("\t2\ts"), 2'000'000'000);
}

TEST(ParseDurationTest, LargestValues) {
  EXPECT_EQ(NsOf("9223372036854775807ns"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(NsOf("2562047h"), int64_t{2562047} * 3'600'000'000'000);
  EXPECT_EQ(ErrorOf(ParseDuration("9223372036854775808ns")),
            "expected a duration of at most 2562047h (64-bit nanoseconds), got "
            "'9223372036854775808ns'");
  EXPECT_EQ(ErrorOf(ParseDuration("9999999h")),
            "expected a duration of at most 2562047h (64-bit nanoseconds), got '9999999h'");
  EXPECT_EQ(ErrorOf(ParseDuration("9223372036854775807.5ns")),
            "expected a duration of at most 2562047h (64-bit nanoseconds), got "
            "'9223372036854775807.5ns'");
}

TEST(ParseDurationTest, ErrorsSayWhatWasExpected) {
  const std::string expected = "expected a duration with a unit (ns, us, ms, s, m, min, h), got ";
  EXPECT_EQ(ErrorOf(ParseDuration("")), expected + "''");
  EXPECT_EQ(ErrorOf(ParseDuration("600")), expected + "'600'");
  EXPECT_EQ(ErrorOf(ParseDuration("ms")), expected + "'ms'");
  EXPECT_EQ(ErrorOf(ParseDuration("NaN")), expected + "'NaN'");
  EXPECT_EQ(ErrorOf(ParseDuration("inf")), expected + "'inf'");
  EXPECT_EQ(ErrorOf(ParseDuration("1e3s")),
            "expected a duration with a unit (ns, us, ms, s, m, min, h) written without an exponent, got '1e3s'; "
            "write '1000s'");
  EXPECT_EQ(ErrorOf(ParseDuration(".5s")), expected + "'.5s'");
  EXPECT_EQ(ErrorOf(ParseDuration("5.s")), expected + "'5.s'");
  EXPECT_EQ(ErrorOf(ParseDuration("+5s")), expected + "'+5s'");
  EXPECT_EQ(ErrorOf(ParseDuration("1,5s")), expected + "'1,5s'");  // no unit guess for ",5s"
  EXPECT_EQ(ErrorOf(ParseDuration("5 parsecs")), expected + "'5 parsecs'");
  EXPECT_EQ(ErrorOf(ParseDuration("600 msec")), expected + "'600 msec'; did you mean '600 ms'?");
  EXPECT_EQ(ErrorOf(ParseDuration("2mins")), expected + "'2mins'; did you mean '2min'?");
  EXPECT_EQ(ErrorOf(ParseDuration("3MS")), expected + "'3MS'; did you mean '3ms'?");
  EXPECT_EQ(ErrorOf(ParseDuration("-5ms")), "expected a non-negative duration, got '-5ms'");
  EXPECT_EQ(ErrorOf(ParseDuration("-x")), expected + "'-x'");
}

TEST(ParseBytesTest, DecimalAndBinaryUnitsAreExact) {
  EXPECT_EQ(BytesOf("512B"), 512);
  EXPECT_EQ(BytesOf("16KiB"), 16 * 1024);
  EXPECT_EQ(BytesOf("1.5MiB"), 1'572'864);
  EXPECT_EQ(BytesOf("80GiB"), int64_t{80} << 30);
  EXPECT_EQ(BytesOf("1TiB"), int64_t{1} << 40);
  EXPECT_EQ(BytesOf("2KB"), 2'000);
  EXPECT_EQ(BytesOf("2kB"), 2'000);
  EXPECT_EQ(BytesOf("3MB"), 3'000'000);
  EXPECT_EQ(BytesOf("4GB"), 4'000'000'000);
  EXPECT_EQ(BytesOf("1.5TB"), 1'500'000'000'000);
  EXPECT_EQ(BytesOf("0.1KiB"), 102);  // 102.4 rounds to nearest
  EXPECT_EQ(BytesOf("0.5B"), 1);
  EXPECT_EQ(BytesOf("0"), 0);
  EXPECT_EQ(BytesOf("8388607TiB"), int64_t{8388607} << 40);
}

TEST(ParseBytesTest, Errors) {
  const std::string expected =
      "expected a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got ";
  EXPECT_EQ(ErrorOf(ParseBytes("80")), expected + "'80'");
  EXPECT_EQ(ErrorOf(ParseBytes("80gib")), expected + "'80gib'; did you mean '80GiB'?");
  EXPECT_EQ(ErrorOf(ParseBytes("80 GiBs")), expected + "'80 GiBs'; did you mean '80 GiB'?");
  EXPECT_EQ(ErrorOf(ParseBytes("80 bytes")), expected + "'80 bytes'");
  EXPECT_EQ(ErrorOf(ParseBytes("-1GiB")), "expected a non-negative size, got '-1GiB'");
  EXPECT_EQ(ErrorOf(ParseBytes("8388608TiB")),
            "expected a size of at most 8388607TiB (64-bit bytes), got '8388608TiB'");
}

TEST(ParseRateTest, UnitsConvertToPerSecond) {
  EXPECT_EQ(PerSecondOf("8/s"), 8.0);
  EXPECT_EQ(PerSecondOf("0.5/s"), 0.5);
  EXPECT_EQ(PerSecondOf("120/m"), 2.0);
  EXPECT_EQ(PerSecondOf("120/min"), 2.0);
  EXPECT_EQ(PerSecondOf("3600/h"), 1.0);
  EXPECT_EQ(PerSecondOf("1/h"), 1.0 / 3600.0);
  EXPECT_EQ(PerSecondOf(" 8 / s "), 8.0);
  EXPECT_EQ(PerSecondOf("0"), 0.0);
}

TEST(ParseRateTest, Errors) {
  const std::string expected = "expected a rate with a unit (/s, /m, /min, /h), got ";
  EXPECT_EQ(ErrorOf(ParseRate("8")), expected + "'8'");
  EXPECT_EQ(ErrorOf(ParseRate("8s")), expected + "'8s'");
  EXPECT_EQ(ErrorOf(ParseRate("8/sec")), expected + "'8/sec'; did you mean '8/s'?");
  EXPECT_EQ(ErrorOf(ParseRate("8/day")), expected + "'8/day'");
  EXPECT_EQ(ErrorOf(ParseRate("-1/s")), "expected a non-negative rate, got '-1/s'");
  EXPECT_EQ(ErrorOf(ParseRate("1" + std::string(400, '0') + "/s")),
            "expected a rate of at most 1000000000/s, got '1" + std::string(79, '0') + "...' (out of range)");
}

TEST(FormatTest, BytesPickTheLargestUnitReached) {
  EXPECT_EQ(FormatBytes(Bytes(0)), "0 B");
  EXPECT_EQ(FormatBytes(Bytes(512)), "512 B");
  EXPECT_EQ(FormatBytes(KiB(16)), "16 KiB");
  EXPECT_EQ(FormatBytes(GiB(80)), "80 GiB");
  EXPECT_EQ(FormatBytes(MiB(1536)), "1.50 GiB");
  EXPECT_EQ(FormatBytes(Bytes(1'048'575)), "1.00 MiB");  // 1023.999 KiB moves up
  EXPECT_EQ(FormatBytes(Bytes(int64_t{3} << 40)), "3 TiB");
  EXPECT_EQ(FormatBytes(GiB(-2) - MiB(512)), "-2.50 GiB");
  EXPECT_EQ(FormatBytes(Bytes(std::numeric_limits<int64_t>::min())), "-8388608 TiB");
}

TEST(FormatTest, DurationsPickTheLargestUnitReached) {
  EXPECT_EQ(FormatDuration(Duration()), "0 ns");
  EXPECT_EQ(FormatDuration(Ns(999)), "999 ns");
  EXPECT_EQ(FormatDuration(Ms(600)), "600 ms");
  EXPECT_EQ(FormatDuration(Ns(1'234'567)), "1.23 ms");
  EXPECT_EQ(FormatDuration(Ms(1500)), "1.50 s");
  EXPECT_EQ(FormatDuration(Minutes(5)), "5 min");
  EXPECT_EQ(FormatDuration(Sec(5400)), "1.50 h");
  EXPECT_EQ(FormatDuration(Ms(59'999)), "1.00 min");  // 59.999 s moves up
  EXPECT_EQ(FormatDuration(-Us(250)), "-250 us");
}

TEST(FormatTest, RatesPerSecond) {
  EXPECT_EQ(FormatRate(Rate{8.0}), "8/s");
  EXPECT_EQ(FormatRate(Rate{0.5}), "0.5/s");
}

// Random values (fixed seed) round-trip to the two printed decimals (relative error
// below 0.5%); a whole number of the unit that FormatX picks round-trips exactly.
TEST(FormatTest, ParseOfFormatRoundTrips) {
  RngStream rng(7, "units_parse_test");
  for (int i = 0; i < 2000; ++i) {
    const int shift = static_cast<int>(rng.NextBelow(50));
    const auto v = static_cast<int64_t>(rng.NextU64() >> (14 + shift));
    const Expected<Bytes> b = ParseBytes(FormatBytes(Bytes(v)));
    const Expected<Duration> d = ParseDuration(FormatDuration(Ns(v)));
    ASSERT_TRUE(b.ok() && d.ok()) << v;
    const double tolerance = 0.005 * static_cast<double>(v) + 0.5;
    EXPECT_LE(std::abs(static_cast<double>(b->count() - v)), tolerance) << FormatBytes(Bytes(v));
    EXPECT_LE(std::abs(static_cast<double>(d->ns() - v)), tolerance) << FormatDuration(Ns(v));
  }
  // (unit, how many of it before the next unit takes over)
  const std::pair<Bytes, int64_t> byte_units[] = {
      {Bytes(1), 1024}, {KiB(1), 1024}, {MiB(1), 1024}, {GiB(1), 1024}, {GiB(1024), 8'000'000}};
  const std::pair<Duration, int64_t> duration_units[] = {{Ns(1), 1000}, {Us(1), 1000},
                                                         {Ms(1), 1000}, {Sec(1), 60},
                                                         {Minutes(1), 60}, {Minutes(60), 2'000'000}};
  for (int i = 0; i < 500; ++i) {
    const auto& [byte_unit, byte_max] = byte_units[rng.NextBelow(5)];
    const Bytes b = byte_unit * static_cast<int64_t>(rng.NextBelow(static_cast<uint64_t>(byte_max)));
    EXPECT_EQ(ParseBytes(FormatBytes(b))->count(), b.count()) << FormatBytes(b);
    const auto& [unit, max] = duration_units[rng.NextBelow(6)];
    const Duration d = unit * static_cast<int64_t>(rng.NextBelow(static_cast<uint64_t>(max)));
    EXPECT_EQ(ParseDuration(FormatDuration(d))->ns(), d.ns()) << FormatDuration(d);
  }
}

}  // namespace
}  // namespace fleetplan
