#include "workload/csv.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace fleetplan::workload_internal {
namespace {

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string SplitCsvLine(std::string_view line, std::vector<CsvField>* fields,
                         std::deque<std::string>* storage) {
  fields->clear();
  size_t quoted_used = 0;
  size_t pos = 0;
  while (true) {
    size_t start = pos;
    while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
    const int column = static_cast<int>(start) + 1;
    if (start < line.size() && line[start] == '"') {
      if (quoted_used == storage->size()) storage->emplace_back();
      std::string& text = (*storage)[quoted_used++];
      text.clear();
      size_t i = start + 1;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            text.push_back('"');
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        text.push_back(line[i++]);
      }
      if (!closed) return fmt::format("unterminated quoted field starting at column {}", column);
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && line[i] != ',') {
        return fmt::format("unexpected text after the quoted field at column {}", i + 1);
      }
      fields->push_back(CsvField{text, column});
      if (i >= line.size()) return "";
      pos = i + 1;
      continue;
    }
    const size_t comma = line.find(',', start);
    const size_t stop = comma == std::string_view::npos ? line.size() : comma;
    fields->push_back(CsvField{TrimSpaces(line.substr(start, stop - start)), column});
    if (comma == std::string_view::npos) return "";
    pos = comma + 1;
  }
}

std::optional<int64_t> ParseInt64(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || text.front() == '+') return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<double> ParseFiniteDouble(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || text.front() == '+') return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string DescribeCsvValue(std::string_view text) {
  if (text.empty()) return "an empty field";
  if (ParseInt64(text)) return fmt::format("{}", text);
  if (ParseFiniteDouble(text)) return fmt::format("{}", text);
  return fmt::format("'{}'", text);
}

}  // namespace fleetplan::workload_internal
