#include "metrics/json_cursor.h"

#include <fmt/format.h>

#include "fleetplan/core/limits.h"

#include <charconv>
#include <system_error>

namespace fleetplan::metrics_detail {
namespace {

constexpr std::string_view kTruncated =
    "truncated: the text ends before the JSON value is complete";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7F) return fmt::format("byte 0x{:02x}", u);
  return fmt::format("'{}'", c);
}

}  // namespace

std::string_view JsonTypeName(JsonType type) {
  switch (type) {
    case JsonType::kEnd: return "the end of the text";
    case JsonType::kNull: return "null";
    case JsonType::kBool: return "a boolean";
    case JsonType::kNumber: return "a number";
    case JsonType::kString: return "a string";
    case JsonType::kArray: return "an array";
    case JsonType::kObject: return "an object";
    case JsonType::kInvalid: return "invalid JSON";
  }
  return "invalid JSON";
}

void JsonCursor::SkipSpace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return;
    ++pos_;
  }
}

bool JsonCursor::AtEnd() {
  SkipSpace();
  return pos_ >= text_.size();
}

JsonType JsonCursor::Peek() {
  SkipSpace();
  if (pos_ >= text_.size()) return JsonType::kEnd;
  const char c = text_[pos_];
  switch (c) {
    case 'n': return JsonType::kNull;
    case 't':
    case 'f': return JsonType::kBool;
    case '"': return JsonType::kString;
    case '[': return JsonType::kArray;
    case '{': return JsonType::kObject;
    default: return (c == '-' || IsDigit(c)) ? JsonType::kNumber : JsonType::kInvalid;
  }
}

bool JsonCursor::TryConsume(char c) {
  SkipSpace();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

bool JsonCursor::Fail(size_t offset, std::string message) {
  error_offset_ = offset;
  error_ = std::move(message);
  return false;
}

bool JsonCursor::FailTruncated() { return Fail(text_.size(), std::string(kTruncated)); }

bool JsonCursor::CheckUtf8(size_t* i) {
  const size_t start = *i;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text_[k]); };
  const unsigned char b0 = byte(start);
  size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return Fail(start, fmt::format("invalid UTF-8 {} in a string", Shown(text_[start])));
  }
  if (start + need >= text_.size()) return FailTruncated();
  for (size_t k = 1; k <= need; ++k) {
    const unsigned char b = byte(start + k);
    const unsigned char min = k == 1 ? lo : 0x80;
    const unsigned char max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) {
      return Fail(start, "invalid UTF-8 sequence in a string");
    }
  }
  *i = start + need + 1;
  return true;
}

// At text_[*i] == '\\'; appends the decoded character to scratch_.
bool JsonCursor::ReadEscape(size_t* i) {
  const size_t at = *i;
  if (at + 1 >= text_.size()) return FailTruncated();
  const char e = text_[at + 1];
  auto read_hex4 = [&](size_t from, uint32_t* out) {
    if (from + 4 > text_.size()) return FailTruncated();
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int h = HexValue(text_[from + k]);
      if (h < 0) return Fail(from + k, "expected 4 hex digits after \\u");
      v = v * 16 + static_cast<uint32_t>(h);
    }
    *out = v;
    return true;
  };
  switch (e) {
    case '"': scratch_.push_back('"'); break;
    case '\\': scratch_.push_back('\\'); break;
    case '/': scratch_.push_back('/'); break;
    case 'b': scratch_.push_back('\b'); break;
    case 'f': scratch_.push_back('\f'); break;
    case 'n': scratch_.push_back('\n'); break;
    case 'r': scratch_.push_back('\r'); break;
    case 't': scratch_.push_back('\t'); break;
    case 'u': {
      uint32_t cp = 0;
      if (!read_hex4(at + 2, &cp)) return false;
      size_t next = at + 6;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail(at, "unpaired UTF-16 surrogate in \\u escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low = 0;
        if (next + 1 >= text_.size() || text_[next] != '\\' || text_[next + 1] != 'u' ||
            !read_hex4(next + 2, &low) || low < 0xDC00 || low > 0xDFFF) {
          return Fail(at, "unpaired UTF-16 surrogate in \\u escape");
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        next += 6;
      }
      AppendUtf8(&scratch_, cp);
      *i = next;
      return true;
    }
    default:
      return Fail(at, fmt::format("invalid escape '\\{}' in a string", e));
  }
  *i = at + 2;
  return true;
}

bool JsonCursor::ReadString(std::string_view* out) {
  SkipSpace();
  if (pos_ >= text_.size()) return FailTruncated();
  if (text_[pos_] != '"') return Fail(pos_, "expected a string");
  const size_t begin = pos_ + 1;
  size_t i = begin;
  bool escaped = false;
  while (true) {
    if (i >= text_.size()) return FailTruncated();
    const char c = text_[i];
    if (c == '"') break;
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20) return Fail(i, fmt::format("unescaped control {} in a string", Shown(c)));
    if (c == '\\') {
      if (!escaped) scratch_.assign(text_.substr(begin, i - begin));
      escaped = true;
      if (!ReadEscape(&i)) return false;
      continue;
    }
    if (u >= 0x80) {
      const size_t from = i;
      if (!CheckUtf8(&i)) return false;
      if (escaped) scratch_.append(text_.substr(from, i - from));
      continue;
    }
    if (escaped) scratch_.push_back(c);
    ++i;
  }
  *out = escaped ? std::string_view(scratch_) : text_.substr(begin, i - begin);
  pos_ = i + 1;
  return true;
}

bool JsonCursor::ReadNumber(JsonNumber* out) {
  SkipSpace();
  const size_t begin = pos_;
  size_t i = pos_;
  const size_t n = text_.size();
  auto digits = [&]() {
    const size_t from = i;
    while (i < n && IsDigit(text_[i])) ++i;
    return i - from;
  };
  if (i < n && text_[i] == '-') ++i;
  if (i >= n) return FailTruncated();
  if (text_[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return Fail(begin, "expected a number");
  }
  bool integral = true;
  if (i < n && text_[i] == '.') {
    ++i;
    integral = false;
    if (digits() == 0) {
      return i >= n ? FailTruncated() : Fail(i, "expected a digit after '.' in a number");
    }
  }
  if (i < n && (text_[i] == 'e' || text_[i] == 'E')) {
    ++i;
    integral = false;
    if (i < n && (text_[i] == '+' || text_[i] == '-')) ++i;
    if (digits() == 0) {
      return i >= n ? FailTruncated() : Fail(i, "expected a digit in a number's exponent");
    }
  }
  if (i < n && (IsDigit(text_[i]) || text_[i] == '.' || text_[i] == 'e' || text_[i] == 'E')) {
    return Fail(begin, fmt::format("invalid number '{}'", text_.substr(begin, i + 1 - begin)));
  }
  const char* first = text_.data() + begin;
  const char* last = text_.data() + i;
  JsonNumber num;
  num.text = text_.substr(begin, i - begin);
  const auto dres = std::from_chars(first, last, num.value);
  if (dres.ec == std::errc::result_out_of_range) {
    return Fail(begin, fmt::format("number {} is out of range", num.text));
  }
  if (integral) {
    const auto ires = std::from_chars(first, last, num.integer);
    num.is_integer = ires.ec == std::errc() && ires.ptr == last;
  }
  *out = num;
  pos_ = i;
  return true;
}

bool JsonCursor::ReadLiteral(std::string_view word) {
  const size_t avail = text_.size() - pos_;
  const std::string_view have = text_.substr(pos_, std::min(avail, word.size()));
  if (have != word) {
    if (avail < word.size() && word.substr(0, avail) == have) return FailTruncated();
    return Fail(pos_, fmt::format("expected a JSON value, got {}", Shown(text_[pos_])));
  }
  pos_ += word.size();
  return true;
}

bool JsonCursor::ReadBool(bool* out) {
  SkipSpace();
  if (pos_ >= text_.size()) return FailTruncated();
  const bool value = text_[pos_] == 't';
  if (!ReadLiteral(value ? "true" : "false")) return false;
  *out = value;
  return true;
}

bool JsonCursor::ReadNull() {
  SkipSpace();
  if (pos_ >= text_.size()) return FailTruncated();
  return ReadLiteral("null");
}

bool JsonCursor::SkipValue() { return SkipValueAt(0); }

bool JsonCursor::SkipValueAt(int depth) {
  if (depth > kMaxDepth) return Fail(pos_, JsonNestingMessage(kMaxDepth));
  std::string_view s;
  JsonNumber num;
  bool b = false;
  switch (Peek()) {
    case JsonType::kEnd: return FailTruncated();
    case JsonType::kInvalid:
      return Fail(pos_, fmt::format("expected a JSON value, got {}", Shown(text_[pos_])));
    case JsonType::kNull: return ReadNull();
    case JsonType::kBool: return ReadBool(&b);
    case JsonType::kNumber: return ReadNumber(&num);
    case JsonType::kString: return ReadString(&s);
    case JsonType::kArray: {
      ++pos_;
      if (TryConsume(']')) return true;
      do {
        if (!SkipValueAt(depth + 1)) return false;
      } while (TryConsume(','));
      if (TryConsume(']')) return true;
      return AtEnd() ? FailTruncated() : Fail(pos_, "expected ',' or ']' in an array");
    }
    case JsonType::kObject: {
      ++pos_;
      if (TryConsume('}')) return true;
      do {
        if (Peek() != JsonType::kString) {
          return AtEnd() ? FailTruncated() : Fail(pos_, "expected a field name in quotes");
        }
        if (!ReadString(&s)) return false;
        if (!TryConsume(':')) {
          return AtEnd() ? FailTruncated() : Fail(pos_, "expected ':' after a field name");
        }
        if (!SkipValueAt(depth + 1)) return false;
      } while (TryConsume(','));
      if (TryConsume('}')) return true;
      return AtEnd() ? FailTruncated() : Fail(pos_, "expected ',' or '}' in an object");
    }
  }
  return false;
}

TextPosition PositionOf(std::string_view text, size_t offset) {
  TextPosition p;
  if (offset > text.size()) offset = text.size();
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      line_start = i + 1;
    }
  }
  size_t line_end = text.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = text.size();
  p.column = static_cast<int>(offset - line_start) + 1;
  p.line_text = text.substr(line_start, line_end - line_start);
  if (!p.line_text.empty() && p.line_text.back() == '\r') p.line_text.remove_suffix(1);
  return p;
}

}  // namespace fleetplan::metrics_detail
