// Typed, located reads of JSONL trace fields (fleetplan and Mooncake rows).
// Messages read "expected an integer >= 1, got -3" and point at the value's column.
// Thread model: a short-lived view over one parsed line.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "workload/json_line.h"
#include "workload/trace_internal.h"

namespace fleetplan::workload_internal {

class JsonRowReader {
 public:
  JsonRowReader(const RowContext& ctx, const FlatJsonLine& json) : ctx_(ctx), json_(json) {}

  // Parses the line; a syntax error is returned located.
  static Status ParseLine(const RowContext& ctx, FlatJsonLine* json);

  const JsonNodeLite& node(uint32_t index) const { return json_.node(index); }
  Status Error(uint32_t index, std::string_view path, std::string_view message) const {
    return ctx_.Error(json_.node(index).column, path, message);
  }

  // An integer in [min, max].
  Expected<int64_t> Int(uint32_t index, std::string_view path, int64_t min,
                        int64_t max = std::numeric_limits<int64_t>::max()) const;
  // Any integer in [0, 2^64).
  Expected<uint64_t> UInt64(uint32_t index, std::string_view path) const;
  Expected<std::string_view> String(uint32_t index, std::string_view path) const;
  // OK when the node is an array (optionally of exactly `size` elements).
  Status Array(uint32_t index, std::string_view path, int64_t size = -1) const;

  // "unknown field 'x'; did you mean 'y'? (valid: ...)" at the field.
  Status UnknownField(const JsonField& field, const std::vector<std::string>& valid) const;
  Status DuplicateField(const JsonField& field) const;
  // "missing required field 'x'" at column 1.
  Status MissingField(std::string_view key) const;

 private:
  const RowContext& ctx_;
  const FlatJsonLine& json_;
};

}  // namespace fleetplan::workload_internal
