// libFuzzer target: ParseDuration / ParseBytes / ParseRate on arbitrary text.
// Checks: failures are invalid-input Statuses with an "expected ..." UTF-8 message;
// successes are non-negative, agree with an independent 128-bit computation, survive
// a round trip through the "<n>ns" / "<n>B" forms, and Format -> Parse stays within the
// two printed decimals. Also drives QuoteValue, DidYouMean and FormatLocatedError.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan {
namespace {

void Require(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "units_parse_fuzz: %s (input '%.*s')\n", what,
               static_cast<int>(input.size()), input.data());
  std::abort();
}

template <typename T>
void CheckFailure(const Expected<T>& e, std::string_view input) {
  if (e.ok()) return;
  Require(e.status().code() == StatusCode::kInvalidInput, "failure is not kInvalidInput", input);
  Require(e.status().message().rfind("expected ", 0) == 0, "message does not say 'expected'", input);
  Require(utf8::FindInvalid(e.status().message()) == std::string_view::npos,
          "message is not UTF-8", input);
}

// Independent reference for short inputs "<int>[.<frac>]<unit>" (no spaces): 128-bit
// integer arithmetic, round half up. nullopt when the input is not of that simple form.
std::optional<__int128> Reference(std::string_view s, std::string_view unit, int64_t factor) {
  if (s.size() <= unit.size() || s.substr(s.size() - unit.size()) != unit) return std::nullopt;
  s.remove_suffix(unit.size());
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (whole.empty() || whole.size() > 12 || frac.size() > 12) return std::nullopt;
  if (dot != std::string_view::npos && frac.empty()) return std::nullopt;
  __int128 w = 0;
  __int128 f = 0;
  __int128 scale = 1;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    w = w * 10 + (c - '0');
  }
  for (char c : frac) {
    if (c < '0' || c > '9') return std::nullopt;
    f = f * 10 + (c - '0');
    scale *= 10;
  }
  return w * factor + (2 * f * factor + scale) / (2 * scale);
}

struct UnitCase {
  std::string_view name;
  int64_t factor;
};
constexpr UnitCase kDurationUnits[] = {
    {"ns", 1},          {"us", 1'000},          {"ms", 1'000'000},
    {"s", 1'000'000'000}, {"m", 60'000'000'000}, {"min", 60'000'000'000},
    {"h", 3'600'000'000'000}};
constexpr UnitCase kByteUnits[] = {{"B", 1},  {"KiB", 1024}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
                                   {"KB", 1000}, {"GB", 1'000'000'000}};

void CheckDuration(std::string_view text) {
  const Expected<Duration> d = ParseDuration(text);
  CheckFailure(d, text);
  for (const UnitCase& u : kDurationUnits) {
    const std::optional<__int128> ref = Reference(text, u.name, u.factor);
    if (!ref.has_value()) continue;
    if (*ref <= INT64_MAX) {
      Require(d.ok() && d->ns() == static_cast<int64_t>(*ref), "duration differs from reference", text);
    }
  }
  if (!d.ok()) return;
  Require(d->ns() >= 0, "negative duration", text);
  const Expected<Duration> again = ParseDuration(std::to_string(d->ns()) + "ns");
  Require(again.ok() && again->ns() == d->ns(), "ns round trip", text);
  const Expected<Duration> formatted = ParseDuration(FormatDuration(*d));
  Require(formatted.ok(), "FormatDuration does not parse", text);
  const double v = static_cast<double>(d->ns());
  Require(std::abs(static_cast<double>(formatted->ns()) - v) <= 0.005 * v + 0.5,
          "FormatDuration round trip too far", text);
}

void CheckBytes(std::string_view text) {
  const Expected<Bytes> b = ParseBytes(text);
  CheckFailure(b, text);
  for (const UnitCase& u : kByteUnits) {
    const std::optional<__int128> ref = Reference(text, u.name, u.factor);
    if (ref.has_value() && *ref <= INT64_MAX) {
      Require(b.ok() && b->count() == static_cast<int64_t>(*ref), "size differs from reference", text);
    }
  }
  if (!b.ok()) return;
  Require(b->count() >= 0, "negative size", text);
  const Expected<Bytes> again = ParseBytes(std::to_string(b->count()) + "B");
  Require(again.ok() && again->count() == b->count(), "B round trip", text);
  const Expected<Bytes> formatted = ParseBytes(FormatBytes(*b));
  Require(formatted.ok(), "FormatBytes does not parse", text);
  const double v = static_cast<double>(b->count());
  Require(std::abs(static_cast<double>(formatted->count()) - v) <= 0.005 * v + 0.5,
          "FormatBytes round trip too far", text);
}

void CheckRate(std::string_view text) {
  const Expected<Rate> r = ParseRate(text);
  CheckFailure(r, text);
  if (!r.ok()) return;
  Require(std::isfinite(r->per_second) && r->per_second >= 0.0, "rate not finite and >= 0", text);
}

void CheckMessages(std::string_view text) {
  const std::string quoted = QuoteValue(text);
  Require(utf8::FindInvalid(quoted) == std::string_view::npos, "QuoteValue is not UTF-8", text);
  const std::size_t half = text.size() / 2;
  const std::vector<std::string> candidates = {std::string(text.substr(0, half)), "policy",
                                               "max_batched_tokens"};
  const std::string suggestion = DidYouMean(text.substr(half), candidates);
  Require(suggestion.empty() || suggestion == candidates[0] || suggestion == candidates[1] ||
              suggestion == candidates[2],
          "DidYouMean returned a non-candidate", text);
  const SourceLocation where{"f.yaml", 1, static_cast<int>(text.size() % 300), std::string(text)};
  (void)FormatLocatedError(where, "a.b", "msg");
}

}  // namespace
}  // namespace fleetplan

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // long inputs add nothing but time
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fleetplan::CheckDuration(text);
  fleetplan::CheckBytes(text);
  fleetplan::CheckRate(text);
  fleetplan::CheckMessages(text);
  return 0;
}
