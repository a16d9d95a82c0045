// Internals shared by the trace readers: the per-format row parser interface, the row
// context that locates errors, and name interning.
// Thread model: single-threaded state owned by one TraceSource.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/workload/request.h"
#include "fleetplan/workload/trace.h"

namespace fleetplan::workload_internal {

// The line being parsed, for located errors.
struct RowContext {
  std::string_view file;
  int64_t line_number = 0;
  std::string_view line;
  // A located InvalidInput at byte column `byte_column` (1-based) of the line.
  Status Error(int byte_column, std::string_view path, std::string_view message) const;
};

// 1-based character (code point) column of 1-based byte column `byte_column`.
int CharColumn(std::string_view line, int byte_column);

// Names met while reading, interned to dense handles in first-seen order.
class NameInterner {
 public:
  explicit NameInterner(std::vector<std::string>* names) : names_(names) {
    for (size_t i = 0; i < names->size(); ++i) index_.emplace((*names)[i], static_cast<int32_t>(i));
  }
  int32_t Intern(std::string_view name) {
    auto it = index_.find(name);
    if (it != index_.end()) return it->second;
    const auto handle = static_cast<int32_t>(names_->size());
    names_->emplace_back(name);
    index_.emplace(std::string(name), handle);
    return handle;
  }
  // -1 when unknown.
  int32_t Find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? -1 : it->second;
  }

 private:
  std::vector<std::string>* names_;
  std::map<std::string, int32_t, std::less<>> index_;
};

struct ParsedRow {
  int64_t raw_time_ns = 0;  // the row's time on the trace's own clock
  int time_column = 1;      // byte column of the time field
  bool dropped = false;     // left out (drop_failed); never silent: counted
};

class RowParser {
 public:
  virtual ~RowParser() = default;
  virtual bool has_header() const = 0;
  // Reads the header line (when has_header()); for headerless formats it is called once
  // with an empty line, before any row. Either way it declares the names it knows up
  // front (a single-class import names its class here).
  virtual Status ParseHeader(const RowContext& ctx, WorkloadNames* names) = 0;
  // Parses a data row into `out` (everything but id; arrival = raw time, adjusted by the
  // reader) and `row`.
  virtual Status ParseRow(const RowContext& ctx, WorkloadNames* names, Request* out, ParsedRow* row) = 0;
  // True when times are absolute (wall clock): arrivals are taken relative to the first row.
  virtual bool absolute_clock() const { return false; }
  // Name of the time field and a row time as the file writes it, for ordering errors.
  virtual std::string_view time_field() const = 0;
  virtual std::string FormatTime(int64_t raw_ns) const = 0;
  virtual const Json& provenance() const;
};

using RowParserFactory = std::function<Expected<std::unique_ptr<RowParser>>(const TraceReadOptions&)>;

Expected<std::unique_ptr<RowParser>> MakeFleetplanRowParser(const TraceReadOptions& options);
Expected<std::unique_ptr<RowParser>> MakeMooncakeRowParser(const TraceReadOptions& options);
Expected<std::unique_ptr<RowParser>> MakeAzureRowParser(const TraceReadOptions& options);
Expected<std::unique_ptr<RowParser>> MakeBurstGptRowParser(const TraceReadOptions& options);
Expected<std::unique_ptr<RowParser>> MakePlainCsvRowParser(const TraceReadOptions& options);

// "--drop-failed applies to burstgpt traces only" when options.drop_failed is set.
Status RejectDropFailed(const TraceReadOptions& options, std::string_view format);

// Exact decimal seconds ("12", "3.25", "0.000000001") to nanoseconds; digits past the
// ninth decimal round half up. nullopt when not a non-negative decimal or too large.
std::optional<int64_t> ParseDecimalSeconds(std::string_view text);
// "12.5 s" style rendering of nanoseconds, exact (trailing zeros dropped).
std::string FormatSecondsExact(int64_t ns);

}  // namespace fleetplan::workload_internal
