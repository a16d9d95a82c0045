#include "workload/json_fields.h"

#include <fmt/format.h>

#include "fleetplan/core/error.h"

namespace fleetplan::workload_internal {

Status JsonRowReader::ParseLine(const RowContext& ctx, FlatJsonLine* json) {
  if (json->Parse(ctx.line)) return Status::Ok();
  return ctx.Error(json->error_column(), "", json->error());
}

Expected<int64_t> JsonRowReader::Int(uint32_t index, std::string_view path, int64_t min, int64_t max) const {
  const JsonNodeLite& n = json_.node(index);
  const auto range = [&] {
    if (max == std::numeric_limits<int64_t>::max()) return fmt::format("an integer >= {}", min);
    return fmt::format("an integer in [{}, {}]", min, max);
  };
  if (n.kind == JsonKind::kInt) {
    if (n.integer >= min && n.integer <= max) return n.integer;
    return Error(index, path, fmt::format("expected {}, got {}", range(), n.text));
  }
  if (n.kind == JsonKind::kUInt) {
    return Error(index, path, fmt::format("expected {}, got {}", range(), n.text));
  }
  return Error(index, path, fmt::format("expected {}, got {}", range(), DescribeJsonValue(n)));
}

Expected<uint64_t> JsonRowReader::UInt64(uint32_t index, std::string_view path) const {
  const JsonNodeLite& n = json_.node(index);
  if (n.kind == JsonKind::kUInt || (n.kind == JsonKind::kInt && n.integer >= 0)) return n.uinteger;
  return Error(index, path,
               fmt::format("expected an integer in [0, 18446744073709551615], got {}", DescribeJsonValue(n)));
}

Expected<std::string_view> JsonRowReader::String(uint32_t index, std::string_view path) const {
  const JsonNodeLite& n = json_.node(index);
  if (n.kind == JsonKind::kString) return n.text;
  return Error(index, path, fmt::format("expected a string, got {}", DescribeJsonValue(n)));
}

Status JsonRowReader::Array(uint32_t index, std::string_view path, int64_t size) const {
  const JsonNodeLite& n = json_.node(index);
  if (n.kind != JsonKind::kArray) {
    return Error(index, path,
                 size < 0 ? fmt::format("expected an array, got {}", DescribeJsonValue(n))
                          : fmt::format("expected an array of {}, got {}", size, DescribeJsonValue(n)));
  }
  if (size >= 0 && static_cast<int64_t>(n.children) != size) {
    return Error(index, path, fmt::format("expected an array of {} values, got {}", size, n.children));
  }
  return Status::Ok();
}

Status JsonRowReader::UnknownField(const JsonField& field, const std::vector<std::string>& valid) const {
  return ctx_.Error(field.column, "", UnknownNameMessage("field", field.key, valid));
}

Status JsonRowReader::DuplicateField(const JsonField& field) const {
  return ctx_.Error(field.column, field.key, "the field appears twice in this row");
}

Status JsonRowReader::MissingField(std::string_view key) const {
  return ctx_.Error(1, key, "missing required field");
}

}  // namespace fleetplan::workload_internal
