// Byte figures as fit's text shows them (internal to the memory module).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/units.h"

namespace fleetplan::memory_text {

// "72.00 GiB" (two decimals, always GiB: figures in one table compare at a glance).
inline std::string Gib(Bytes b) { return fmt::format("{:.2f} GiB", b.gib()); }

// "72.00 GiB (77309411328 B)".
inline std::string GibExact(Bytes b) { return fmt::format("{} ({} B)", Gib(b), b.count()); }

// The largest binary unit that keeps the figure >= 1, with at most two decimals and no
// trailing zeros: "320 KiB", "1.25 MiB", "2.5 GiB", "512 B".
inline std::string Human(Bytes b) {
  const int64_t v = b.count() < 0 ? -b.count() : b.count();
  const char* unit = "B";
  double scaled = static_cast<double>(b.count());
  if (v >= (int64_t{1} << 30)) {
    unit = "GiB";
    scaled = b.gib();
  } else if (v >= (int64_t{1} << 20)) {
    unit = "MiB";
    scaled = b.mib();
  } else if (v >= (int64_t{1} << 10)) {
    unit = "KiB";
    scaled /= 1024.0;
  }
  std::string n = fmt::format("{:.2f}", scaled);
  n.erase(n.find_last_not_of('0') + 1);
  if (n.back() == '.') n.pop_back();
  return fmt::format("{} {}", n, unit);
}

// "1 sequence", "14 sequences" (English plural with an s).
inline std::string Count(int64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Parameter counts: "70.55 B", "262.1 M", "8.2 K", "512".
inline std::string Params(int64_t n) {
  const auto v = static_cast<double>(n);
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", v / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.1f} M", v / 1e6);
  if (n >= 1'000) return fmt::format("{:.1f} K", v / 1e3);
  return fmt::format("{}", n);
}

// Rows of cells rendered with aligned columns (two spaces between columns). A column is
// right-aligned when `right[i]` is true. Trailing spaces are trimmed.
class TextTable {
 public:
  explicit TextTable(std::vector<bool> right) : right_(std::move(right)) {}

  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  std::string Render(std::string_view indent) const {
    std::vector<size_t> width(right_.size(), 0);
    for (const auto& row : rows_) {
      for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
        width[i] = std::max(width[i], Columns(row[i]));
      }
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line(indent);
      for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
        const std::string pad(width[i] - Columns(row[i]), ' ');
        if (i > 0) line += "  ";
        line += right_[i] ? pad + row[i] : row[i] + pad;
      }
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
    return out;
  }

 private:
  // Display columns of UTF-8 text: bytes that do not continue a character.
  static size_t Columns(const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
  }

  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace fleetplan::memory_text
