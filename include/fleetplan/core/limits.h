// The sizes fleetplan accepts from its inputs, in one place (docs/limits.md lists them for
// users). Each is checked where the input is read, before any memory or time is spent on
// it, and the error names the limit; nothing beyond a limit is silently cut.
//
// Why limits at all: a single hostile or mistyped value (a 10^12-token row, a 10^9-user
// closed loop, a 50 MB single-line YAML file, arrays nested 50,000 deep) must give a
// located error in milliseconds, not a crash, a hang or gigabytes of memory. Each limit is
// far above anything real: a factor of 10 or more over the largest public model, trace or
// cluster we know of.
// Also here: the checks that go with the limits (JSON nesting, checked time arithmetic).
// Thread model: constants and pure functions.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fleetplan/core/units.h"

namespace fleetplan {

// Collections nested inside each other in any JSON or YAML input (trace rows, records,
// scenario, catalog, cluster, run directory files). Real inputs nest fewer than 10 deep.
inline constexpr int kMaxNestingDepth = 64;

// Bytes of a YAML input file (scenario, catalog, cluster, placement, SLO, fit file).
inline constexpr std::size_t kMaxYamlFileBytes = std::size_t{16} << 20;  // 16 MiB
// Bytes of one line of a YAML input; longer lines are rejected before parsing, so a
// one-line megabyte-sized flow collection cannot make the parser crawl.
inline constexpr std::size_t kMaxYamlLineBytes = std::size_t{1} << 20;  // 1 MiB
// Bytes of a whole-document JSON input (vllm-bench results, run-directory files, kernel
// tables). Line-oriented files (traces, JSONL records) limit each line instead (16 MiB).
inline constexpr std::size_t kMaxJsonFileBytes = std::size_t{256} << 20;  // 256 MiB

// Tokens in one count of an input: a prompt segment, a prompt length, an output length,
// in every trace format and generated workload (draws saturate here and are reported as
// capped). The longest context window of a public model is 10M tokens.
inline constexpr int64_t kMaxRequestTokens = int64_t{1} << 24;  // 16,777,216

// Users of a closed-loop workload (each one is live state for the whole run).
inline constexpr int64_t kMaxClosedLoopUsers = 1'000'000;

// Nodes of a cluster (layout, place). GPUs per node and per cluster: cluster_file.h.
inline constexpr int64_t kMaxClusterNodes = 2048;

// Latest time a simulation represents: 2^62 ns, about 146 years after its start. Arrivals
// (after replay speed scaling), deadlines and durations beyond it are input errors, so the
// sums the simulator forms from them (arrival + latency) stay far from int64 overflow.
inline constexpr int64_t kMaxTimeNs = int64_t{1} << 62;

// Byte offset of the first '[' or '{' that opens a collection nested deeper than
// `max_depth` in JSON text (brackets inside strings do not count), or npos. Every reader
// that hands text to nlohmann::json calls it first: depth is then bounded explicitly,
// not by the stack of whatever walks the parsed tree.
std::size_t FindJsonNestingBeyond(std::string_view text, int max_depth = kMaxNestingDepth);
// "arrays and objects nested more than 64 deep (fleetplan's limit; ...)".
std::string JsonNestingMessage(int max_depth = kMaxNestingDepth);

// ---- Checked time arithmetic for inputs ------------------------------------------------
// Times read from inputs and then scaled (replay speed) or summed (arrival gaps, a
// deadline moved with its arrival) go through these, so an overflow is an input error the
// caller locates, never int64 wrap-around or an llround of infinity. nullopt when the
// result is not finite or its magnitude exceeds kMaxTimeNs (core/limits.h).

// `ns / divisor`, rounded to the nearest nanosecond. REQUIRES: divisor > 0.
inline std::optional<int64_t> CheckedScaleNs(int64_t ns, double divisor) {
  const double scaled = static_cast<double>(ns) / divisor;
  if (!std::isfinite(scaled) || std::fabs(scaled) > static_cast<double>(kMaxTimeNs)) return std::nullopt;
  return std::llround(scaled);
}
// `a + b`.
inline std::optional<int64_t> CheckedAddNs(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum) || sum > kMaxTimeNs || sum < -kMaxTimeNs) return std::nullopt;
  return sum;
}
// Seconds to a Duration, rounded to the nearest nanosecond.
inline std::optional<Duration> CheckedSeconds(double s) {
  const double ns = s * 1e9;
  if (!std::isfinite(ns) || std::fabs(ns) > static_cast<double>(kMaxTimeNs)) return std::nullopt;
  return Duration::Nanos(std::llround(ns));
}
// Seconds to a Duration for a quantity that may legitimately be "never" (a gap drawn
// from a distribution with a vanishing rate): saturates at kMaxTimeNs instead of failing.
// NaN and negative values give 0.
inline Duration SaturatedSeconds(double s) {
  if (!(s > 0)) return Duration();
  const double ns = s * 1e9;
  if (!(ns < static_cast<double>(kMaxTimeNs))) return Duration::Nanos(kMaxTimeNs);
  return Duration::Nanos(std::llround(ns));
}
// `t + d` saturating at kMaxTimeNs (for "never" times built from SaturatedSeconds).
inline SimTime SaturatedAdd(SimTime t, Duration d) {
  const std::optional<int64_t> sum = CheckedAddNs(t.ns(), d.ns());
  return SimTime::FromNanos(sum ? *sum : (d.ns() < 0 ? -kMaxTimeNs : kMaxTimeNs));
}

}  // namespace fleetplan
