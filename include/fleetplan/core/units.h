// Strong unit types: simulated time, durations, byte sizes, token counts, rates.
//
// Contract:
//  - Duration and SimTime are int64 nanoseconds. SimTime is a point on the simulated
//    clock (0 = start of the run); Duration is a signed span. SimTime + Duration ->
//    SimTime, SimTime - SimTime -> Duration. No implicit conversion to or from double:
//    doubles appear only at the YAML/JSON edge (seconds(), millis(), FromSecondsRounded).
//  - Bytes and Tokens are int64 counts; arithmetic is exact. Negative values are legal
//    intermediate results (e.g. "usable memory" before a fit check) and are never clamped.
//  - Rate is events per second as a double: it is only ever an input parameter of a
//    distribution, never accumulated on the hot path.
// Thread model: value types; trivially copyable.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace fleetplan {

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration Nanos(int64_t ns) { return Duration(ns); }
  // Rounds to the nearest nanosecond. REQUIRES: finite, within int64 range.
  static Duration FromSecondsRounded(double s) { return Duration(std::llround(s * 1e9)); }
  static Duration FromMillisRounded(double ms) { return Duration(std::llround(ms * 1e6)); }
  static constexpr Duration Max() { return Duration(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) / 1e9; }
  constexpr double millis() const { return static_cast<double>(ns_) / 1e6; }
  constexpr double micros() const { return static_cast<double>(ns_) / 1e3; }

  constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
  constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
  constexpr Duration operator-() const { return Duration(-ns_); }
  constexpr Duration operator*(int64_t k) const { return Duration(ns_ * k); }
  constexpr Duration operator/(int64_t k) const { return Duration(ns_ / k); }
  constexpr Duration& operator+=(Duration o) { ns_ += o.ns_; return *this; }
  constexpr Duration& operator-=(Duration o) { ns_ -= o.ns_; return *this; }
  constexpr auto operator<=>(const Duration&) const = default;

 private:
  constexpr explicit Duration(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

constexpr Duration Ns(int64_t v) { return Duration::Nanos(v); }
constexpr Duration Us(int64_t v) { return Duration::Nanos(v * 1'000); }
constexpr Duration Ms(int64_t v) { return Duration::Nanos(v * 1'000'000); }
constexpr Duration Sec(int64_t v) { return Duration::Nanos(v * 1'000'000'000); }
constexpr Duration Minutes(int64_t v) { return Sec(v * 60); }

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime Zero() { return SimTime(); }
  static constexpr SimTime FromNanos(int64_t ns) { return SimTime(ns); }
  static constexpr SimTime Max() { return SimTime(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) / 1e9; }
  constexpr double millis() const { return static_cast<double>(ns_) / 1e6; }
  constexpr Duration since_start() const { return Duration::Nanos(ns_); }

  constexpr SimTime operator+(Duration d) const { return SimTime(ns_ + d.ns()); }
  constexpr SimTime operator-(Duration d) const { return SimTime(ns_ - d.ns()); }
  constexpr Duration operator-(SimTime o) const { return Duration::Nanos(ns_ - o.ns_); }
  constexpr SimTime& operator+=(Duration d) { ns_ += d.ns(); return *this; }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t v) : v_(v) {}
  constexpr int64_t count() const { return v_; }
  constexpr double gib() const { return static_cast<double>(v_) / (1024.0 * 1024.0 * 1024.0); }
  constexpr double mib() const { return static_cast<double>(v_) / (1024.0 * 1024.0); }
  constexpr double gb() const { return static_cast<double>(v_) / 1e9; }

  constexpr Bytes operator+(Bytes o) const { return Bytes(v_ + o.v_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(v_ - o.v_); }
  constexpr Bytes operator*(int64_t k) const { return Bytes(v_ * k); }
  constexpr Bytes operator/(int64_t k) const { return Bytes(v_ / k); }
  constexpr Bytes& operator+=(Bytes o) { v_ += o.v_; return *this; }
  constexpr Bytes& operator-=(Bytes o) { v_ -= o.v_; return *this; }
  constexpr auto operator<=>(const Bytes&) const = default;

 private:
  int64_t v_ = 0;
};

constexpr Bytes KiB(int64_t v) { return Bytes(v * 1024); }
constexpr Bytes MiB(int64_t v) { return Bytes(v * 1024 * 1024); }
constexpr Bytes GiB(int64_t v) { return Bytes(v * 1024 * 1024 * 1024); }

class Tokens {
 public:
  constexpr Tokens() = default;
  constexpr explicit Tokens(int64_t v) : v_(v) {}
  constexpr int64_t count() const { return v_; }
  constexpr Tokens operator+(Tokens o) const { return Tokens(v_ + o.v_); }
  constexpr Tokens operator-(Tokens o) const { return Tokens(v_ - o.v_); }
  constexpr Tokens operator*(int64_t k) const { return Tokens(v_ * k); }
  constexpr Tokens& operator+=(Tokens o) { v_ += o.v_; return *this; }
  constexpr Tokens& operator-=(Tokens o) { v_ -= o.v_; return *this; }
  constexpr auto operator<=>(const Tokens&) const = default;

 private:
  int64_t v_ = 0;
};

// Events per second. Only an input parameter (arrival rates); never accumulated.
struct Rate {
  double per_second = 0.0;
  constexpr auto operator<=>(const Rate&) const = default;
};

}  // namespace fleetplan
