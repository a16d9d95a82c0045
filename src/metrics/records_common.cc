#include "metrics/records_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fleetplan/core/error.h"

namespace fleetplan::metrics_detail {
namespace {

bool FailType(JsonCursor& c, std::string_view expected) {
  const JsonType got = c.Peek();
  if (got == JsonType::kEnd) return c.Fail(c.pos(), "truncated: the line ends before the value");
  return c.Fail(c.pos(), fmt::format("expected {}, got {}", expected, JsonTypeName(got)));
}

}  // namespace

ObjectScanner::ObjectScanner(std::span<const std::string_view> keys)
    : keys_(keys), key_offset_(keys.size(), kAbsent), value_offset_(keys.size(), kAbsent) {}

size_t ObjectScanner::Find(std::string_view key) {
  const size_t n = keys_.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (next_guess_ + k) % n;
    if (keys_[i] == key) {
      next_guess_ = i + 1;
      return i;
    }
  }
  return kAbsent;
}

bool ObjectScanner::Scan(JsonCursor& c, const std::function<bool(size_t index)>& on_value) {
  std::fill(key_offset_.begin(), key_offset_.end(), kAbsent);
  std::fill(value_offset_.begin(), value_offset_.end(), kAbsent);
  next_guess_ = 0;
  if (!c.TryConsume('{')) {
    return c.Fail(c.pos(), fmt::format("expected a JSON object '{{...}}', got {}",
                                       JsonTypeName(c.Peek())));
  }
  if (c.TryConsume('}')) return c.AtEnd() || c.Fail(c.pos(), "unexpected text after the object");
  while (true) {
    if (c.Peek() != JsonType::kString) {
      if (c.AtEnd()) return c.Fail(c.pos(), "truncated: the line ends inside the object");
      return c.Fail(c.pos(), "expected a field name in double quotes");
    }
    const size_t key_at = c.pos();
    std::string_view key;
    if (!c.ReadString(&key)) return false;
    const size_t index = Find(key);
    if (index == kAbsent) {
      std::vector<std::string> names(keys_.begin(), keys_.end());
      return c.Fail(key_at, UnknownNameMessage("field", key, names));
    }
    if (value_offset_[index] != kAbsent) {
      return c.Fail(key_at, fmt::format("field '{}' is given twice", keys_[index]));
    }
    if (!c.TryConsume(':')) {
      if (c.AtEnd()) return c.Fail(c.pos(), "truncated: the line ends after a field name");
      return c.Fail(c.pos(), "expected ':' after the field name");
    }
    c.SkipSpace();
    key_offset_[index] = key_at;
    value_offset_[index] = c.pos();
    if (!on_value(index)) return false;
    if (c.TryConsume(',')) continue;
    if (c.TryConsume('}')) break;
    if (c.AtEnd()) return c.Fail(c.pos(), "truncated: the line ends before the object's '}'");
    return c.Fail(c.pos(), "expected ',' or '}' after a field's value");
  }
  if (!c.AtEnd()) return c.Fail(c.pos(), "unexpected text after the object");
  return true;
}

std::optional<SimTime> SecondsToTime(double seconds) {
  if (!(seconds >= 0.0 && seconds < kMaxSeconds)) return std::nullopt;
  return SimTime::FromNanos(std::llround(seconds * 1e9));
}

bool ReadCount(JsonCursor& c, int64_t* out) {
  if (c.Peek() != JsonType::kNumber) return FailType(c, "an integer >= 0");
  const size_t at = c.pos();
  JsonNumber n;
  if (!c.ReadNumber(&n)) return false;
  if (!n.is_integer || n.integer < 0) {
    return c.Fail(at, fmt::format("expected an integer >= 0, got {}", n.text));
  }
  *out = n.integer;
  return true;
}

bool ReadNonNegativeNumber(JsonCursor& c, double* out) {
  if (c.Peek() != JsonType::kNumber) return FailType(c, "a number >= 0");
  const size_t at = c.pos();
  JsonNumber n;
  if (!c.ReadNumber(&n)) return false;
  if (n.value < 0) return c.Fail(at, fmt::format("expected a number >= 0, got {}", n.text));
  *out = n.value;
  return true;
}

bool ReadMillis(JsonCursor& c, Duration* out) {
  if (c.Peek() != JsonType::kNumber) return FailType(c, "a duration in ms");
  const size_t at = c.pos();
  JsonNumber n;
  if (!c.ReadNumber(&n)) return false;
  if (!(n.value >= 0 && n.value < kMaxSeconds * 1e3)) {
    return c.Fail(at, fmt::format("expected a duration in ms, 0 <= ms < {:g}, got {}", kMaxSeconds * 1e3,
                                  n.text));
  }
  *out = Duration::FromMillisRounded(n.value);
  return true;
}

bool ReadSeconds(JsonCursor& c, SimTime* out) {
  if (c.Peek() != JsonType::kNumber) return FailType(c, "a time in seconds");
  const size_t at = c.pos();
  JsonNumber n;
  if (!c.ReadNumber(&n)) return false;
  const std::optional<SimTime> t = SecondsToTime(n.value);
  if (!t) {
    return c.Fail(at, fmt::format("expected a time in seconds, 0 <= t < {:g}, got {}", kMaxSeconds,
                                  n.text));
  }
  *out = *t;
  return true;
}

bool ReadOptionalSeconds(JsonCursor& c, std::optional<SimTime>* out) {
  if (c.Peek() == JsonType::kNull) {
    *out = std::nullopt;
    return c.ReadNull();
  }
  if (c.Peek() != JsonType::kNumber) return FailType(c, "a time in seconds or null");
  SimTime t;
  if (!ReadSeconds(c, &t)) return false;
  *out = t;
  return true;
}

bool ReadText(JsonCursor& c, std::string_view* out) {
  if (c.Peek() != JsonType::kString) return FailType(c, "a string");
  return c.ReadString(out);
}

std::optional<size_t> FindTopLevelValue(std::string_view text, std::string_view key) {
  JsonCursor c(text);
  if (!c.TryConsume('{')) return std::nullopt;
  if (c.TryConsume('}')) return std::nullopt;
  do {
    std::string_view k;
    if (c.Peek() != JsonType::kString || !c.ReadString(&k)) return std::nullopt;
    const bool match = k == key;
    if (!c.TryConsume(':')) return std::nullopt;
    c.SkipSpace();
    if (match) return c.pos();
    if (!c.SkipValue()) return std::nullopt;
  } while (c.TryConsume(','));
  return std::nullopt;
}

std::optional<size_t> FindArrayElement(std::string_view text, size_t array_offset, size_t index) {
  JsonCursor c(text.substr(array_offset));
  if (!c.TryConsume('[')) return std::nullopt;
  for (size_t i = 0; i < index; ++i) {
    if (!c.SkipValue() || !c.TryConsume(',')) return std::nullopt;
  }
  c.SkipSpace();
  return array_offset + c.pos();
}

std::vector<std::string> LeadingKeys(std::string_view text) {
  std::vector<std::string> keys;
  JsonCursor c(text);
  if (!c.TryConsume('{')) return keys;
  do {
    std::string_view k;
    if (c.Peek() != JsonType::kString || !c.ReadString(&k)) break;
    keys.emplace_back(k);
    if (!c.TryConsume(':') || !c.SkipValue()) break;
  } while (c.TryConsume(','));
  return keys;
}

}  // namespace fleetplan::metrics_detail
