// JsonCursor: a forward scanner over one JSON text held in memory, used by the record
// readers (records_*.cc). Internal to the metrics module.
//
// Why our own scanner and not nlohmann here (STYLE "Dependencies": speed and located
// errors): `fleetplan report` must read a million JSONL records in well under 3 s, and
// nlohmann's SAX parser alone took 1.7 s for 1M records (192 MB) on our build machine,
// before any field handling; it also reports no position for a value, and every record
// error must say line:col. This scanner validates what it reads against RFC 8259 (number
// grammar, string escapes incl. surrogate pairs, control characters, UTF-8), keeps the
// offset of every token, and reads numbers with std::from_chars (exact, locale-free).
// nlohmann still parses whole-document formats (vllm-bench) and writes all our JSON.
//
// Use: Peek() the next value's type, then call the matching Read*; on failure every
// method returns false and error_offset()/error_message() say where and what. A failed
// cursor must not be used further.
// Thread model: borrows the text; single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/core/limits.h"

namespace fleetplan::metrics_detail {

enum class JsonType { kEnd, kNull, kBool, kNumber, kString, kArray, kObject, kInvalid };

// "null", "a boolean", "a number", "a string", "an array", "an object", "the end of the
// line", "invalid JSON".
std::string_view JsonTypeName(JsonType type);

struct JsonNumber {
  double value = 0;
  bool is_integer = false;  // written without fraction or exponent and fits in int64
  int64_t integer = 0;      // valid when is_integer
  std::string_view text;    // as written
};

class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text) : text_(text) {}

  size_t pos() const { return pos_; }
  std::string_view text() const { return text_; }

  void SkipSpace();
  bool AtEnd();                // after whitespace, nothing is left
  JsonType Peek();             // type of the next value, after whitespace
  bool TryConsume(char c);     // after whitespace, consume `c` when it is next

  // Each reads one value of its type at the cursor (after whitespace).
  // ReadString's view points into the text, or into an internal buffer when the string
  // has escapes; it stays valid until the next ReadString.
  bool ReadString(std::string_view* out);
  bool ReadNumber(JsonNumber* out);
  bool ReadBool(bool* out);
  bool ReadNull();
  bool SkipValue();  // any value, nested at most kMaxDepth deep

  // Records an error at `offset` and returns false.
  bool Fail(size_t offset, std::string message);
  size_t error_offset() const { return error_offset_; }
  const std::string& error_message() const { return error_; }

  static constexpr int kMaxDepth = kMaxNestingDepth;  // deeper nesting is no record format of ours

 private:
  bool FailTruncated();
  bool ReadEscape(size_t* i);
  bool CheckUtf8(size_t* i);
  bool ReadLiteral(std::string_view word);
  bool SkipValueAt(int depth);

  std::string_view text_;
  size_t pos_ = 0;
  std::string scratch_;
  size_t error_offset_ = 0;
  std::string error_;
};

// 1-based line and column of byte `offset` in `text`, and the text of that line.
struct TextPosition {
  int line = 1;
  int column = 1;
  std::string_view line_text;
};
TextPosition PositionOf(std::string_view text, size_t offset);

}  // namespace fleetplan::metrics_detail
