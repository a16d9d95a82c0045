#include "fleetplan/core/units_parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

struct Unit {
  std::string_view name;
  uint64_t factor;  // resolution units (ns or B) per unit; for rates, seconds per unit
};

constexpr uint64_t kNsPerSecond = 1'000'000'000;
constexpr std::array<Unit, 7> kDurationUnits = {{{"ns", 1},
                                                 {"us", 1'000},
                                                 {"ms", 1'000'000},
                                                 {"s", kNsPerSecond},
                                                 {"m", 60 * kNsPerSecond},
                                                 {"min", 60 * kNsPerSecond},
                                                 {"h", 3'600 * kNsPerSecond}}};
constexpr std::array<Unit, 10> kByteUnits = {{{"B", 1},
                                              {"KB", 1'000},
                                              {"kB", 1'000},
                                              {"MB", 1'000'000},
                                              {"GB", 1'000'000'000},
                                              {"TB", 1'000'000'000'000},
                                              {"KiB", uint64_t{1} << 10},
                                              {"MiB", uint64_t{1} << 20},
                                              {"GiB", uint64_t{1} << 30},
                                              {"TiB", uint64_t{1} << 40}}};
constexpr std::array<Unit, 4> kRateUnits = {{{"s", 1}, {"m", 60}, {"min", 60}, {"h", 3'600}}};

// What one kind of quantity is called in messages, and its units.
struct Kind {
  std::string_view noun;      // "duration"
  std::string_view expected;  // kExpectedDuration
  std::string_view max_text;  // the largest value, in words, for overflow messages
  std::span<const Unit> units;
  bool slash;  // the unit follows a "/" (rates)
};

constexpr Kind kDuration{"duration", kExpectedDuration,
                         "at most 2562047h (64-bit nanoseconds)", kDurationUnits, false};
constexpr Kind kSize{"size", kExpectedBytes, "at most 8388607TiB (64-bit bytes)", kByteUnits,
                     false};
constexpr Kind kRate{"rate", kExpectedRate, "finite", kRateUnits, true};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// "<number> [/] <unit>" split into its parts; nullopt when the number is malformed.
struct Pieces {
  std::string_view int_digits;
  std::string_view frac_digits;
  std::string_view unit;  // may be empty or unknown; checked by the caller
};

std::optional<Pieces> Split(std::string_view s, bool slash) {
  Pieces p;
  std::size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  p.int_digits = s.substr(0, i);
  if (p.int_digits.empty()) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    const std::size_t start = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    p.frac_digits = s.substr(start, i - start);
    if (p.frac_digits.empty()) return std::nullopt;
  }
  std::string_view rest = Trim(s.substr(i));
  if (slash) {
    if (rest.empty() || rest.front() != '/') {
      p.unit = "";
      return p;
    }
    rest = Trim(rest.substr(1));
  }
  p.unit = rest;
  return p;
}

const Unit* FindUnit(const Kind& kind, std::string_view name) {
  for (const Unit& u : kind.units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

// digits * multiple, or nullopt past int64.
std::optional<int64_t> ScaleExactInt(std::string_view digits, uint64_t multiple) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  int64_t out = 0;
  if (ec != std::errc() || ptr != digits.data() + digits.size() ||
      __builtin_mul_overflow(v, static_cast<int64_t>(multiple), &out)) {
    return std::nullopt;
  }
  return out;
}

// Units past the largest one fleetplan reads, with how many of that largest unit they are.
struct LargerUnit {
  std::string_view name;
  std::string_view largest;
  uint64_t multiple;
};
constexpr std::array<LargerUnit, 6> kLargerDurationUnits = {
    {{"d", "h", 24}, {"day", "h", 24}, {"days", "h", 24}, {"w", "h", 168}, {"week", "h", 168}, {"weeks", "h", 168}}};
constexpr std::array<LargerUnit, 4> kLargerByteUnits = {
    {{"PB", "TB", 1000}, {"PiB", "TiB", 1024}, {"EB", "TB", 1'000'000}, {"EiB", "TiB", 1024 * 1024}}};

std::span<const LargerUnit> LargerUnits(const Kind& kind) {
  if (kind.units.data() == kDurationUnits.data()) return kLargerDurationUnits;
  if (kind.units.data() == kByteUnits.data()) return kLargerByteUnits;
  return {};
}

Status Malformed(const Kind& kind, std::string_view text, const std::optional<Pieces>& pieces) {
  std::string message = fmt::format("expected {}, got {}", kind.expected, QuoteValue(text));
  // Guess a unit only for a misspelt word ("msec"), not for stray characters (",5s").
  const auto is_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!pieces.has_value() || pieces->unit.empty() ||
      !std::all_of(pieces->unit.begin(), pieces->unit.end(), is_letter)) {
    return InvalidInput(message);
  }
  // The unit is the tail of the trimmed text (Split takes everything after the number).
  const std::string_view trimmed = Trim(text);
  const std::string_view number = trimmed.substr(0, trimmed.size() - pieces->unit.size());
  // "6OOms": the letter O typed for the digit 0.
  const std::size_t letters_o = pieces->unit.find_first_not_of("Oo");
  if (letters_o > 0 && letters_o != std::string_view::npos && pieces->frac_digits.empty() &&
      number == pieces->int_digits && FindUnit(kind, pieces->unit.substr(letters_o)) != nullptr) {
    message += fmt::format("; the letter 'O' is not a digit: did you mean '{}{}{}'?", number,
                           std::string(letters_o, '0'), pieces->unit.substr(letters_o));
    return InvalidInput(message);
  }
  for (const LargerUnit& u : LargerUnits(kind)) {
    if (u.name != pieces->unit) continue;
    message += fmt::format("; the largest unit is {}", u.largest);
    const std::optional<int64_t> v =
        pieces->frac_digits.empty() ? ScaleExactInt(pieces->int_digits, u.multiple)
                                    : std::nullopt;
    if (v.has_value() && *v >= 0) message += fmt::format(": write '{}{}'", *v, u.largest);
    return InvalidInput(message);
  }
  std::vector<std::string> names;
  for (const Unit& u : kind.units) names.emplace_back(u.name);
  const std::string unit = DidYouMean(pieces->unit, names);
  // A suggestion that changes the unit's first letter names another unit ("PiB" is not a
  // misspelt "KiB"), so it is left out.
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (unit.empty() || lower(unit.front()) != lower(pieces->unit.front())) return InvalidInput(message);
  message += fmt::format("; did you mean '{}{}'?", number, unit);
  return InvalidInput(message);
}

// round(D * factor / 10^k) where D is the decimal digit string int_digits ++ frac_digits
// and k = |frac_digits|, computed on decimal digit strings so it is exact for any input
// length. Halves round up. nullopt when the result exceeds int64.
std::optional<int64_t> ScaleExact(std::string_view int_digits, std::string_view frac_digits,
                                  uint64_t factor) {
  std::string digits = std::string(int_digits) + std::string(frac_digits);
  // Multiply by factor (< 2^42, so digit * factor + carry fits easily in 64 bits).
  std::string product;
  uint64_t carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    const uint64_t cur = static_cast<uint64_t>(*it - '0') * factor + carry;
    product.push_back(static_cast<char>('0' + cur % 10));
    carry = cur / 10;
  }
  for (; carry > 0; carry /= 10) product.push_back(static_cast<char>('0' + carry % 10));
  // product is least-significant first; drop the k fractional digits, rounding.
  const std::size_t k = frac_digits.size();
  while (product.size() < k + 1) product.push_back('0');
  const bool round_up = k > 0 && product[k - 1] >= '5';
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t value = 0;
  for (std::size_t i = product.size(); i-- > k;) {
    const auto d = static_cast<uint64_t>(product[i] - '0');
    if (value > (kMax - d) / 10) return std::nullopt;
    value = value * 10 + d;
  }
  if (round_up) {
    if (value == kMax) return std::nullopt;
    ++value;
  }
  return static_cast<int64_t>(value);
}

// Most arrivals per second a rate may state: one per nanosecond, the resolution of
// simulated time. A tiny rate is fine (its gaps saturate at the end of simulated time).
constexpr double kMaxRatePerSecond = 1e9;
constexpr std::string_view kRateRange = "at most 1000000000/s";

// Text written with an exponent ("1e30s") or as infinity ("inf/s"), which the grammar
// does not accept: split so the message can say what the value is instead of asking for a
// unit it has.
struct Unwritable {
  bool infinite = false;
  std::string_view int_digits, frac_digits;
  int exponent = 0;
  std::string_view unit_text;  // what follows the number, as written ("s", "/s")
  const Unit* unit = nullptr;
};

std::optional<Unwritable> SplitUnwritable(const Kind& kind, std::string_view s) {
  Unwritable u;
  std::size_t i = 0;
  const auto lower_prefix = [&](std::string_view word) {
    if (s.size() < word.size()) return false;
    for (std::size_t k = 0; k < word.size(); ++k) {
      const char c = s[k] >= 'A' && s[k] <= 'Z' ? static_cast<char>(s[k] - 'A' + 'a') : s[k];
      if (c != word[k]) return false;
    }
    return true;
  };
  if (lower_prefix("infinity")) {
    u.infinite = true;
    i = 8;
  } else if (lower_prefix("inf")) {
    u.infinite = true;
    i = 3;
  } else {
    while (i < s.size() && IsDigit(s[i])) ++i;
    u.int_digits = s.substr(0, i);
    if (u.int_digits.empty()) return std::nullopt;
    if (i < s.size() && s[i] == '.') {
      const std::size_t start = ++i;
      while (i < s.size() && IsDigit(s[i])) ++i;
      u.frac_digits = s.substr(start, i - start);
    }
    if (i >= s.size() || (s[i] != 'e' && s[i] != 'E')) return std::nullopt;
    ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    const std::size_t start = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == start) return std::nullopt;
    int e = 0;
    std::from_chars(s.data() + start, s.data() + std::min(i, start + 6), e);
    u.exponent = negative ? -e : e;
  }
  u.unit_text = s.substr(i);
  std::string_view rest = Trim(u.unit_text);
  if (kind.slash) {
    if (rest.empty() || rest.front() != '/') return std::nullopt;
    rest = Trim(rest.substr(1));
  }
  u.unit = FindUnit(kind, rest);
  if (u.unit == nullptr) return std::nullopt;
  return u;
}

// The number of an exponent form in plain digits ("1.5e3" -> "1500"), or empty when that
// would be long.
std::string PlainDecimal(const Unwritable& u) {
  if (u.exponent > 30 || u.exponent < -30) return "";
  const std::string digits = std::string(u.int_digits) + std::string(u.frac_digits);
  const long point = static_cast<long>(u.int_digits.size()) + u.exponent;
  std::string whole;
  std::string frac;
  if (point <= 0) {
    frac = std::string(static_cast<std::size_t>(-point), '0') + digits;
  } else if (static_cast<std::size_t>(point) >= digits.size()) {
    whole = digits + std::string(static_cast<std::size_t>(point) - digits.size(), '0');
  } else {
    whole = digits.substr(0, static_cast<std::size_t>(point));
    frac = digits.substr(static_cast<std::size_t>(point));
  }
  whole.erase(0, std::min(whole.find_first_not_of('0'), whole.empty() ? 0 : whole.size() - 1));
  if (whole.empty()) whole = "0";
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return frac.empty() ? whole : whole + "." + frac;
}

// The error for an exponent or infinity form: out of range (naming the range) when it
// is, else a request to write it without the exponent.
Status UnwritableError(const Kind& kind, std::string_view text, const Unwritable& u) {
  long double value = std::numeric_limits<long double>::infinity();
  if (!u.infinite) {
    const std::string mantissa = std::string(u.int_digits) + "." + std::string(u.frac_digits) + "0";
    value = std::strtold(mantissa.c_str(), nullptr) * std::pow(10.0L, std::clamp(u.exponent, -6000, 6000));
  }
  const bool rate = kind.slash;
  const long double scaled = rate ? value / static_cast<long double>(u.unit->factor)
                                  : value * static_cast<long double>(u.unit->factor);
  const bool out_of_range =
      rate ? scaled > kMaxRatePerSecond
           : scaled > static_cast<long double>(std::numeric_limits<int64_t>::max());
  if (out_of_range) {
    return InvalidInput(fmt::format("expected a {} of {}, got {} (out of range)", kind.noun,
                                    rate ? kRateRange : kind.max_text, QuoteValue(text)));
  }
  std::string message = fmt::format("expected {} written without an exponent, got {}", kind.expected, QuoteValue(text));
  const std::string plain = PlainDecimal(u);
  if (!plain.empty()) message += fmt::format("; write '{}{}'", plain, u.unit_text);
  return InvalidInput(message);
}

// Parses an exact quantity (durations, sizes) into resolution units.
Expected<int64_t> ParseExact(const Kind& kind, std::string_view text) {
  const std::string_view s = Trim(text);
  if (s == "0") return int64_t{0};
  if (!s.empty() && s.front() == '-' && Split(s.substr(1), kind.slash).has_value()) {
    return InvalidInput(
        fmt::format("expected a non-negative {}, got {}", kind.noun, QuoteValue(text)));
  }
  const std::optional<Pieces> pieces = Split(s, kind.slash);
  const Unit* unit = pieces.has_value() ? FindUnit(kind, pieces->unit) : nullptr;
  if (unit == nullptr) {
    if (const std::optional<Unwritable> u = SplitUnwritable(kind, s)) return UnwritableError(kind, text, *u);
    return Malformed(kind, text, pieces);
  }
  const std::optional<int64_t> v = ScaleExact(pieces->int_digits, pieces->frac_digits, unit->factor);
  if (!v.has_value()) {
    return InvalidInput(
        fmt::format("expected a {} of {}, got {}", kind.noun, kind.max_text, QuoteValue(text)));
  }
  return *v;
}

// "1.50" or "80": two decimals unless v is a whole number of units.
std::string FormatScaled(uint64_t magnitude, bool negative, std::span<const Unit> units) {
  std::size_t pick = 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    if (magnitude >= units[i].factor) pick = i;
  }
  // Two decimals can round up to the next unit (1023.999 KiB -> "1024.00 KiB"); move up.
  const auto rounded = [&](std::size_t i) {
    return std::round(static_cast<double>(magnitude) / static_cast<double>(units[i].factor) * 100.0) /
           100.0;
  };
  if (pick + 1 < units.size() &&
      rounded(pick) >= static_cast<double>(units[pick + 1].factor / units[pick].factor)) {
    ++pick;
  }
  const Unit& u = units[pick];
  const std::string_view sign = negative ? "-" : "";
  if (magnitude % u.factor == 0) return fmt::format("{}{} {}", sign, magnitude / u.factor, u.name);
  return fmt::format("{}{:.2f} {}", sign, rounded(pick), u.name);
}

uint64_t Magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// Units for formatting, smallest first, each a whole multiple of the one before.
constexpr std::array<Unit, 5> kFormatByteUnits = {{{"B", 1},
                                                   {"KiB", uint64_t{1} << 10},
                                                   {"MiB", uint64_t{1} << 20},
                                                   {"GiB", uint64_t{1} << 30},
                                                   {"TiB", uint64_t{1} << 40}}};
constexpr std::array<Unit, 6> kFormatDurationUnits = {{{"ns", 1},
                                                       {"us", 1'000},
                                                       {"ms", 1'000'000},
                                                       {"s", kNsPerSecond},
                                                       {"min", 60 * kNsPerSecond},
                                                       {"h", 3'600 * kNsPerSecond}}};

}  // namespace

Expected<Duration> ParseDuration(std::string_view text) {
  FP_ASSIGN_OR_RETURN(const int64_t ns, ParseExact(kDuration, text));
  return Duration::Nanos(ns);
}

Expected<Duration> ParsePositiveDuration(std::string_view text) {
  const std::string_view s = Trim(text);
  const bool negative = !s.empty() && s.front() == '-' && ParseDuration(s.substr(1)).ok();
  if (negative) return InvalidInput(fmt::format("expected a duration > 0, got {}", QuoteValue(text)));
  FP_ASSIGN_OR_RETURN(const Duration d, ParseDuration(text));
  if (d <= Duration()) return InvalidInput(fmt::format("expected a duration > 0, got {}", QuoteValue(text)));
  return d;
}

Expected<Bytes> ParseBytes(std::string_view text) {
  FP_ASSIGN_OR_RETURN(const int64_t count, ParseExact(kSize, text));
  return Bytes(count);
}

Expected<Rate> ParseRate(std::string_view text) {
  const std::string_view s = Trim(text);
  if (s == "0") return Rate{0.0};
  if (!s.empty() && s.front() == '-' && Split(s.substr(1), true).has_value()) {
    return InvalidInput(fmt::format("expected a non-negative rate, got {}", QuoteValue(text)));
  }
  const std::optional<Pieces> pieces = Split(s, true);
  const Unit* unit = pieces.has_value() ? FindUnit(kRate, pieces->unit) : nullptr;
  if (unit == nullptr) {
    if (const std::optional<Unwritable> u = SplitUnwritable(kRate, s)) return UnwritableError(kRate, text, *u);
    return Malformed(kRate, text, pieces);
  }
  // The number is validated digits[.digits], so from_chars sees exactly that text.
  const std::string_view number =
      s.substr(0, pieces->int_digits.size() +
                      (pieces->frac_digits.empty() ? 0 : pieces->frac_digits.size() + 1));
  double value = 0.0;
  const auto result = std::from_chars(number.data(), number.data() + number.size(), value);
  const double per_second = value / static_cast<double>(unit->factor);
  if (result.ec != std::errc() || !std::isfinite(value) || per_second > kMaxRatePerSecond) {
    return InvalidInput(fmt::format("expected a rate of {}, got {} (out of range)", kRateRange, QuoteValue(text)));
  }
  return Rate{per_second};
}

std::string FormatBytes(Bytes b) {
  return FormatScaled(Magnitude(b.count()), b.count() < 0, kFormatByteUnits);
}

std::string FormatDuration(Duration d) {
  return FormatScaled(Magnitude(d.ns()), d.ns() < 0, kFormatDurationUnits);
}

std::string FormatRate(Rate r) { return fmt::format("{}/s", r.per_second); }

}  // namespace fleetplan
