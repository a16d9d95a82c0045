// Pieces shared by the record readers. Internal to the metrics module.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/units.h"
#include "metrics/json_cursor.h"

namespace fleetplan::metrics_detail {

inline constexpr size_t kAbsent = static_cast<size_t>(-1);

// Walks the members of the one JSON object that `c` holds (nothing may follow it).
// For each key it finds the key's index in `keys` and calls `on_value(index)` with the
// cursor at the value, which must consume it or fail the cursor. Records, per index,
// the offset of the key and of its value (kAbsent when the key did not occur).
// Errors (on the cursor): not an object, an unknown key (with did-you-mean), a key given
// twice, a line that ends early ("truncated"), text after the object.
class ObjectScanner {
 public:
  explicit ObjectScanner(std::span<const std::string_view> keys);

  bool Scan(JsonCursor& c, const std::function<bool(size_t index)>& on_value);
  bool has(size_t index) const { return value_offset_[index] != kAbsent; }
  size_t key_offset(size_t index) const { return key_offset_[index]; }
  size_t value_offset(size_t index) const { return value_offset_[index]; }

 private:
  size_t Find(std::string_view key);

  std::span<const std::string_view> keys_;
  std::vector<size_t> key_offset_;
  std::vector<size_t> value_offset_;
  size_t next_guess_ = 0;  // writers usually emit keys in one order: try the next one first
};

// Seconds as written in a records file -> SimTime, rounded to the nearest nanosecond.
// nullopt unless 0 <= s < kMaxSeconds.
// Half the int64 nanosecond range (9.22e9 s): a time plus a duration, each below this,
// cannot overflow.
inline constexpr double kMaxSeconds = 4.6e9;
std::optional<SimTime> SecondsToTime(double seconds);

// Typed value reads with the messages every reader shares ("expected X, got Y"). Each
// fails the cursor at the value.
bool ReadCount(JsonCursor& c, int64_t* out);             // integer >= 0
bool ReadSeconds(JsonCursor& c, SimTime* out);           // number >= 0 (seconds)
bool ReadOptionalSeconds(JsonCursor& c, std::optional<SimTime>* out);  // or null
bool ReadNonNegativeNumber(JsonCursor& c, double* out);
bool ReadMillis(JsonCursor& c, Duration* out);            // number of ms, 0 <= ms < kMaxSeconds * 1e3
bool ReadText(JsonCursor& c, std::string_view* out);     // a string

// The offset of the value of top-level `key` in the JSON object `text`, if it is there.
std::optional<size_t> FindTopLevelValue(std::string_view text, std::string_view key);

// The offset of element `index` of the array that starts at `array_offset` of `text`.
std::optional<size_t> FindArrayElement(std::string_view text, size_t array_offset, size_t index);

// The top-level keys at the start of `text` (a prefix of a JSON object may be enough:
// scanning stops quietly at the first problem).
std::vector<std::string> LeadingKeys(std::string_view text);

}  // namespace fleetplan::metrics_detail
