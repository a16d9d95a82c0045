// The comma-separated fields of one line of the measured tables (no quoting: the
// profile and collective CSVs never quote). Internal to src/perf/.
#pragma once

#include <string_view>
#include <vector>

namespace fleetplan {

// Into a vector the caller reuses from line to line (the large tables' readers).
inline void SplitCsvFieldsInto(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) return;
    start = comma + 1;
  }
}

inline std::vector<std::string_view> SplitCsvFields(std::string_view line) {
  std::vector<std::string_view> out;
  SplitCsvFieldsInto(line, out);
  return out;
}

}  // namespace fleetplan
