// Mooncake JSONL import: {"timestamp": ms, "input_length": n, "output_length": n,
// "hash_ids": [ids]}. Each hash id becomes one trace-block segment of 512 tokens (the
// last holds the remainder), so the prefix cache sees exactly Mooncake's block sharing.
#include <limits>

#include <fmt/format.h>

#include "fleetplan/core/limits.h"
#include "fleetplan/workload/content.h"
#include "workload/json_fields.h"
#include "workload/json_line.h"
#include "workload/trace_internal.h"

namespace fleetplan::workload_internal {
namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;
// Largest millisecond timestamp whose nanoseconds fit in int64 (~292 years).
constexpr int64_t kMaxTimestampMs = std::numeric_limits<int64_t>::max() / kNanosPerMilli;

enum Key : int { kTimestamp = 0, kInputLength = 1, kOutputLength = 2, kHashIds = 3, kKeyCount = 4 };

const std::vector<std::string>& KeyNames() {
  static const std::vector<std::string> names = {"timestamp", "input_length", "output_length", "hash_ids"};
  return names;
}

int KeyIndex(std::string_view key) {
  const auto& names = KeyNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == key) return static_cast<int>(i);
  }
  return -1;
}

class MooncakeRowParser final : public RowParser {
 public:
  explicit MooncakeRowParser(std::string class_name) : class_name_(std::move(class_name)) {}

  bool has_header() const override { return false; }
  Status ParseHeader(const RowContext&, WorkloadNames* names) override {
    names->classes = {class_name_};
    return Status::Ok();
  }

  Status ParseRow(const RowContext& ctx, WorkloadNames*, Request* out, ParsedRow* row) override {
    FP_RETURN_IF_ERROR(JsonRowReader::ParseLine(ctx, &json_));
    const JsonRowReader reader(ctx, json_);
    uint32_t node[kKeyCount] = {};
    bool seen[kKeyCount] = {};
    for (const JsonField& f : json_.fields()) {
      const int k = KeyIndex(f.key);
      if (k < 0) return reader.UnknownField(f, KeyNames());
      if (seen[k]) return reader.DuplicateField(f);
      seen[k] = true;
      node[k] = f.node;
    }
    for (int k = 0; k < kKeyCount; ++k) {
      if (!seen[k]) return reader.MissingField(KeyNames()[static_cast<size_t>(k)]);
    }
    FP_ASSIGN_OR_RETURN(int64_t ms, reader.Int(node[kTimestamp], "timestamp", 0, kMaxTimestampMs));
    FP_ASSIGN_OR_RETURN(int64_t input, reader.Int(node[kInputLength], "input_length", 1, kMaxRequestTokens));
    FP_ASSIGN_OR_RETURN(out->output_tokens, reader.Int(node[kOutputLength], "output_length", 1, kMaxRequestTokens));
    const int64_t blocks = (input + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
    FP_RETURN_IF_ERROR(reader.Array(node[kHashIds], "hash_ids"));
    const JsonNodeLite& ids = reader.node(node[kHashIds]);
    if (static_cast<int64_t>(ids.children) != blocks) {
      return reader.Error(node[kHashIds], "hash_ids",
                          fmt::format("expected ceil(input_length / {}) = {} ids, got {}", kMooncakeBlockTokens,
                                      blocks, ids.children));
    }
    out->prompt.reserve(static_cast<size_t>(blocks));
    uint32_t child = node[kHashIds] + 1;
    for (int64_t b = 0; b < blocks; ++b, child = json_.NextSibling(child)) {
      const JsonNodeLite& id_node = json_.node(child);
      if (id_node.kind != JsonKind::kInt || id_node.integer < 0) {  // the path is built only on error
        return reader.Int(child, fmt::format("hash_ids[{}]", b), 0).status();
      }
      const int64_t id = id_node.integer;
      const int64_t tokens = b + 1 < blocks ? kMooncakeBlockTokens : input - kMooncakeBlockTokens * (blocks - 1);
      out->prompt.push_back(
          PromptSegment{MakeContentId(SegmentKind::kTraceBlock, static_cast<uint64_t>(id)), tokens});
    }
    out->class_id = 0;
    row->raw_time_ns = ms * kNanosPerMilli;
    row->time_column = reader.node(node[kTimestamp]).column;
    return Status::Ok();
  }

  std::string_view time_field() const override { return "timestamp"; }
  std::string FormatTime(int64_t raw_ns) const override {
    return fmt::format("{} ms", raw_ns / kNanosPerMilli);
  }

 private:
  std::string class_name_;
  FlatJsonLine json_;
};

}  // namespace

Expected<std::unique_ptr<RowParser>> MakeMooncakeRowParser(const TraceReadOptions& options) {
  FP_RETURN_IF_ERROR(RejectDropFailed(options, "mooncake"));
  return std::unique_ptr<RowParser>(std::make_unique<MooncakeRowParser>(options.class_name.value_or("default")));
}

}  // namespace fleetplan::workload_internal
