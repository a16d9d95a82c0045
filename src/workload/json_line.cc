#include "workload/json_line.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fleetplan/core/limits.h"

namespace fleetplan::workload_internal {
namespace {

// Deeper nesting than trace rows use goes to the fallback (which has its own limits).
constexpr int kMaxFastDepth = 4;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

void SkipSpaces(std::string_view s, size_t* pos) {
  while (*pos < s.size() && IsSpace(s[*pos])) ++*pos;
}

// Scans a plain string (no escapes, ASCII printable) starting after its opening quote;
// on success *pos is past the closing quote.
bool ScanPlainString(std::string_view s, size_t* pos, std::string_view* out) {
  const size_t start = *pos;
  for (size_t i = start; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      *out = s.substr(start, i - start);
      *pos = i + 1;
      return true;
    }
    if (c == '\\' || c < 0x20 || c >= 0x80) return false;
  }
  return false;
}

// JSON number grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
bool ScanNumber(std::string_view s, size_t* pos, JsonNodeLite* node) {
  const size_t start = *pos;
  size_t i = start;
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size() || !IsDigit(s[i])) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  bool is_float = false;
  if (i < s.size() && s[i] == '.') {
    is_float = true;
    ++i;
    if (i >= s.size() || !IsDigit(s[i])) return false;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    is_float = true;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= s.size() || !IsDigit(s[i])) return false;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  const char* first = s.data() + start;
  const char* last = s.data() + i;
  node->text = s.substr(start, i - start);
  if (!is_float) {
    auto [p, ec] = std::from_chars(first, last, node->integer);
    if (ec == std::errc() && p == last) {
      node->kind = JsonKind::kInt;
      if (node->integer >= 0) node->uinteger = static_cast<uint64_t>(node->integer);
      *pos = i;
      return true;
    }
    auto [pu, ecu] = std::from_chars(first, last, node->uinteger);
    if (ecu == std::errc() && pu == last) {
      node->kind = JsonKind::kUInt;
      *pos = i;
      return true;
    }
  }
  auto [pd, ecd] = std::from_chars(first, last, node->number);
  if (ecd != std::errc() || pd != last || !std::isfinite(node->number)) return false;
  node->kind = JsonKind::kDouble;
  *pos = i;
  return true;
}

bool ScanWord(std::string_view s, size_t* pos, std::string_view word) {
  if (s.substr(*pos, word.size()) != word) return false;
  *pos += word.size();
  return true;
}

}  // namespace

bool FlatJsonLine::Parse(std::string_view line) {
  fields_.clear();
  nodes_.clear();
  owned_.clear();
  error_.clear();
  error_column_ = 0;
  used_fallback_ = false;
  if (FastParse(line)) return true;
  fields_.clear();
  nodes_.clear();
  used_fallback_ = true;
  return FallbackParse(line);
}

bool FlatJsonLine::FastParse(std::string_view line) {
  size_t pos = 0;
  SkipSpaces(line, &pos);
  if (pos >= line.size() || line[pos] != '{') return false;
  ++pos;
  SkipSpaces(line, &pos);
  if (pos < line.size() && line[pos] == '}') {
    ++pos;
  } else {
    while (true) {
      SkipSpaces(line, &pos);
      if (pos >= line.size() || line[pos] != '"') return false;
      ++pos;
      std::string_view key;
      if (!ScanPlainString(line, &pos, &key)) return false;
      SkipSpaces(line, &pos);
      if (pos >= line.size() || line[pos] != ':') return false;
      ++pos;
      SkipSpaces(line, &pos);
      const int column = static_cast<int>(pos) + 1;
      const auto index = static_cast<uint32_t>(nodes_.size());
      if (!FastValue(line, &pos, 1)) return false;
      fields_.push_back(JsonField{key, column, index});
      SkipSpaces(line, &pos);
      if (pos >= line.size()) return false;
      if (line[pos] == ',') {
        ++pos;
        continue;
      }
      if (line[pos] != '}') return false;
      ++pos;
      break;
    }
  }
  SkipSpaces(line, &pos);
  return pos == line.size();
}

bool FlatJsonLine::FastValue(std::string_view line, size_t* pos, int depth) {
  if (*pos >= line.size()) return false;
  const char c = line[*pos];
  JsonNodeLite node;
  node.column = static_cast<int>(*pos) + 1;
  if (c == '"') {
    ++*pos;
    node.kind = JsonKind::kString;
    if (!ScanPlainString(line, pos, &node.text)) return false;
    nodes_.push_back(node);
    return true;
  }
  if (c == '-' || IsDigit(c)) {
    if (!ScanNumber(line, pos, &node)) return false;
    nodes_.push_back(node);
    return true;
  }
  if (c == 't' || c == 'f') {
    node.kind = JsonKind::kBool;
    node.boolean = c == 't';
    nodes_.push_back(node);
    return ScanWord(line, pos, c == 't' ? "true" : "false");
  }
  if (c == 'n') {
    nodes_.push_back(node);
    return ScanWord(line, pos, "null");
  }
  if (c != '[' || depth >= kMaxFastDepth) return false;
  ++*pos;
  const size_t index = nodes_.size();
  node.kind = JsonKind::kArray;
  nodes_.push_back(node);
  SkipSpaces(line, pos);
  uint32_t children = 0;
  if (*pos < line.size() && line[*pos] == ']') {
    ++*pos;
  } else {
    while (true) {
      SkipSpaces(line, pos);
      if (!FastValue(line, pos, depth + 1)) return false;
      ++children;
      SkipSpaces(line, pos);
      if (*pos >= line.size()) return false;
      if (line[*pos] == ',') {
        ++*pos;
        continue;
      }
      if (line[*pos] != ']') return false;
      ++*pos;
      break;
    }
  }
  nodes_[index].children = children;
  nodes_[index].subtree = static_cast<uint32_t>(nodes_.size() - index - 1);
  return true;
}

void FlatJsonLine::AddDomNode(const Json& value, int column) {
  JsonNodeLite node;
  node.column = column;
  switch (value.type()) {
    case Json::value_t::null:
      break;
    case Json::value_t::boolean:
      node.kind = JsonKind::kBool;
      node.boolean = value.get<bool>();
      break;
    case Json::value_t::number_integer:
      node.kind = JsonKind::kInt;
      node.integer = value.get<int64_t>();
      if (node.integer >= 0) node.uinteger = static_cast<uint64_t>(node.integer);
      break;
    case Json::value_t::number_unsigned: {
      const auto u = value.get<uint64_t>();
      node.uinteger = u;
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        node.kind = JsonKind::kInt;
        node.integer = static_cast<int64_t>(u);
      } else {
        node.kind = JsonKind::kUInt;
      }
      break;
    }
    case Json::value_t::number_float:
      node.kind = JsonKind::kDouble;
      node.number = value.get<double>();
      break;
    case Json::value_t::string:
      node.kind = JsonKind::kString;
      node.text = owned_.emplace_back(value.get<std::string>());
      break;
    case Json::value_t::array: {
      const size_t index = nodes_.size();
      node.kind = JsonKind::kArray;
      node.children = static_cast<uint32_t>(value.size());
      nodes_.push_back(node);
      for (const Json& child : value) AddDomNode(child, column);
      nodes_[index].subtree = static_cast<uint32_t>(nodes_.size() - index - 1);
      return;
    }
    default:  // object, binary, discarded
      node.kind = JsonKind::kObject;
      break;
  }
  if (node.kind != JsonKind::kString && node.kind != JsonKind::kArray && value.is_number()) {
    node.text = owned_.emplace_back(value.dump());
  }
  nodes_.push_back(node);
}

bool FlatJsonLine::FallbackParse(std::string_view line) {
  // The tree below is built recursively: bound the depth before parsing.
  if (const size_t deep = FindJsonNestingBeyond(line); deep != std::string_view::npos) {
    error_ = JsonNestingMessage();
    error_column_ = static_cast<int>(deep) + 1;
    return false;
  }
  Json dom;
  try {
    dom = ParseJsonText(line);
  } catch (const Json::parse_error& e) {
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 57: <what>"
    std::string what = e.what();
    const size_t col = what.find("column ");
    const size_t colon = col == std::string::npos ? std::string::npos : what.find(": ", col);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    error_ = fmt::format("truncated or malformed JSON: {}", what);
    error_column_ = static_cast<int>(std::min<size_t>(e.byte, line.size() + 1));
    if (error_column_ < 1) error_column_ = 1;
    return false;
  }
  if (!dom.is_object()) {
    error_ = fmt::format("expected a JSON object per line, got {}", dom.type_name());
    error_column_ = 1;
    return false;
  }
  for (const auto& [key, value] : dom.items()) {
    const std::string& owned_key = owned_.emplace_back(key);
    // The DOM has no positions: point at the key as written (first occurrence).
    const size_t at = line.find(fmt::format("\"{}\"", key));
    const int column = at == std::string_view::npos ? 1 : static_cast<int>(at) + 1;
    const auto index = static_cast<uint32_t>(nodes_.size());
    AddDomNode(value, column);
    fields_.push_back(JsonField{owned_key, column, index});
  }
  return true;
}

std::string DescribeJsonValue(const JsonNodeLite& node) {
  switch (node.kind) {
    case JsonKind::kNull:
      return "null";
    case JsonKind::kBool:
      return node.boolean ? "true" : "false";
    case JsonKind::kInt:
    case JsonKind::kUInt:
      return std::string(node.text);
    case JsonKind::kDouble:
      // Digits alone that JSON readers keep as a double: an integer past 64 bits.
      if (node.text.find_first_of(".eE") == std::string_view::npos) {
        return fmt::format("{} (an integer out of the 64-bit range)", node.text);
      }
      return fmt::format("{} (a number with a fraction)", node.text);
    case JsonKind::kString:
      return fmt::format("a string (\"{}\")", node.text);
    case JsonKind::kArray:
      return "an array";
    case JsonKind::kObject:
      return "an object";
  }
  return "a value";
}

}  // namespace fleetplan::workload_internal
