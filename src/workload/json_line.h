// FlatJsonLine: one JSON object per line (JSONL), parsed into a small flat tree.
//
// Why hand-written: nlohmann::json (DOM or SAX) parses a 250-byte Mooncake row in
// 1.8-3.6 us, so importing a million rows would take several seconds; this scanner
// accepts the strict subset real trace rows use (objects of numbers, plain strings,
// booleans, null and nested arrays) at several hundred MB/s. Anything outside that
// subset — escapes, non-ASCII strings, nested objects, and every syntax error — is
// handed to nlohmann::json, which either parses it (converted to the same tree) or
// reports the syntax error; so the accepted language is exactly JSON.
//
// Tree: nodes in pre-order; an array node is followed by its descendants, and
// `subtree` says how many there are, so children are walked by skipping subtrees.
// Views into the line stay valid while the line does; strings the fallback decoded live
// in this object until the next Parse().
// Thread model: single-threaded state, reused across lines.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"

namespace fleetplan::workload_internal {

enum class JsonKind : uint8_t { kNull, kBool, kInt, kUInt, kDouble, kString, kArray, kObject };

struct JsonNodeLite {
  JsonKind kind = JsonKind::kNull;
  bool boolean = false;
  int64_t integer = 0;    // kInt
  uint64_t uinteger = 0;  // kUInt (above INT64_MAX); also set for kInt >= 0
  double number = 0;      // kDouble
  std::string_view text;  // kString; for numbers, the literal as written
  uint32_t subtree = 0;   // kArray: number of descendant nodes
  uint32_t children = 0;  // kArray: number of direct children
  int column = 1;         // 1-based byte column where the value starts (the fallback
                          // knows only its field's column and uses that)
};

struct JsonField {
  std::string_view key;
  int column = 1;   // 1-based byte column of the value
  uint32_t node = 0;
};

class FlatJsonLine {
 public:
  // Parses `line`. On a syntax error returns false and sets error()/error_column().
  bool Parse(std::string_view line);
  const std::string& error() const { return error_; }
  int error_column() const { return error_column_; }

  const std::vector<JsonField>& fields() const { return fields_; }
  const JsonNodeLite& node(uint32_t i) const { return nodes_[i]; }
  // The index of the child after child `i` of an array (i = array + 1 is the first).
  uint32_t NextSibling(uint32_t i) const { return i + 1 + nodes_[i].subtree; }
  // True when the last Parse() needed the nlohmann fallback (tests, benchmarks).
  bool used_fallback() const { return used_fallback_; }

 private:
  bool FastParse(std::string_view line);
  bool FastValue(std::string_view line, size_t* pos, int depth);
  bool FallbackParse(std::string_view line);
  void AddDomNode(const Json& value, int column);

  std::vector<JsonField> fields_;
  std::vector<JsonNodeLite> nodes_;
  std::deque<std::string> owned_;
  std::string error_;
  int error_column_ = 0;
  bool used_fallback_ = false;
};

// A value as "expected X, got Y" messages show it: -3, 1.5 (a number with a fraction),
// a string ("abc"), an array, an object, null, true.
std::string DescribeJsonValue(const JsonNodeLite& node);

}  // namespace fleetplan::workload_internal
