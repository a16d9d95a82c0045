// Splitting CSV records (RFC 4180 without line breaks inside quoted fields) and parsing
// their numbers strictly. Hand-written because the traces need nothing more and the
// importers must run at tens of millions of fields per second.
// Thread model: pure functions over caller-owned buffers.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fleetplan::workload_internal {

struct CsvField {
  std::string_view text;  // unquoted, surrounding spaces trimmed
  int column = 1;         // 1-based byte column where the field starts in the line
};

// Splits `line` into `fields` (cleared first). Quoted fields with doubled quotes are
// unescaped into `storage` (reused across calls; a deque, so views into earlier
// elements survive its growth). Returns an
// empty string on success, else what is wrong ("unterminated quoted field").
std::string SplitCsvLine(std::string_view line, std::vector<CsvField>* fields,
                         std::deque<std::string>* storage);

// Strict numbers: the whole text must be the number (no spaces, no trailing junk).
std::optional<int64_t> ParseInt64(std::string_view text);
std::optional<double> ParseFiniteDouble(std::string_view text);

// A field's value as messages quote it: 12, 1.5, 'abc', or "an empty field".
std::string DescribeCsvValue(std::string_view text);

}  // namespace fleetplan::workload_internal
