#include "fleetplan/metrics/records_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/utf8.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "metrics/line_reader.h"
#include "metrics/records_common.h"
#include "metrics/records_readers.h"

namespace fleetplan {
namespace {

const std::array<std::string, 3>& FormatNames() {
  static const std::array<std::string, 3> kNames = {"fleetplan", "llmservingsim", "vllm-bench"};
  return kNames;
}

// Keys that only one format has near its start. vllm-bench files begin with run metadata
// (date, backend, model_id, num_prompts, ...) and may hold megabytes of input_lens before
// ttfts, so several of its early keys count.
struct FormatMarkers {
  std::string_view format;
  std::array<std::string_view, 6> keys;
};
constexpr std::array<FormatMarkers, 3> kMarkers = {{
    {"fleetplan", {"arrival_s", "first_token_s", "finish_s", "output_tokens", "", ""}},
    {"llmservingsim", {"queued_ts", "first_token_ts", "last_token_ts", "input_toks", "output_toks", ""}},
    {"vllm-bench", {"ttfts", "itls", "input_lens", "output_lens", "num_prompts", "endpoint_type"}},
}};

// How much of a file detection reads: enough for every marker key of a record line or of
// vLLM's leading metadata.
constexpr size_t kDetectBytes = 64 * 1024;

void AppendSeconds(std::string* out, std::string_view key, const std::optional<SimTime>& t) {
  if (t) {
    fmt::format_to(std::back_inserter(*out), ",\"{}\":{}", key, t->seconds());
  } else {
    fmt::format_to(std::back_inserter(*out), ",\"{}\":null", key);
  }
}

}  // namespace

std::span<const std::string> RecordFormatNames() { return FormatNames(); }

Expected<std::unique_ptr<RecordReader>> MakeRecordReader(std::string_view format,
                                                         const RecordReadOptions& options) {
  if (format == "fleetplan") return metrics_detail::MakeFleetplanReader();
  if (format == "llmservingsim") return metrics_detail::MakeLlmServingSimReader(options);
  if (format == "vllm-bench") return metrics_detail::MakeVllmBenchReader(options);
  return InvalidInput(UnknownNameMessage("records format", format, FormatNames()));
}

Expected<std::string> DetectRecordFormat(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidInput(fmt::format("{}: is a directory, not a records file (a run's records are its "
                                    "requests.jsonl)",
                                    path));
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return InvalidInput(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
  std::string head;
  std::string_view text;
  std::vector<std::string> keys;
  // The start of the file; while no marker shows and the first line goes on past what was
  // read, more of it, up to a records line's limit (a record may carry a long field, a
  // tenant or a prompt, before its marker keys).
  for (size_t want = kDetectBytes;; want = std::min(want * 8, metrics_detail::LineReader::kMaxLineBytes + 1)) {
    const size_t had = head.size();
    head.resize(want);
    head.resize(had + std::fread(head.data() + had, 1, want - had, file.get()));
    text = head;
    if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) text.remove_prefix(kUtf8Bom.size());
    keys = metrics_detail::LeadingKeys(text);
    for (const FormatMarkers& m : kMarkers) {
      for (const std::string& key : keys) {
        for (std::string_view marker : m.keys) {
          if (!marker.empty() && key == marker) return std::string(m.format);
        }
      }
    }
    if (head.size() < want || text.find('\n') != std::string_view::npos) break;  // the first line is whole
    if (const size_t bad = utf8::FindInvalid(text); bad != std::string_view::npos && bad + 4 < text.size()) break;
    if (head.size() > metrics_detail::LineReader::kMaxLineBytes) {
      return InvalidInput(fmt::format("{}:1: line is longer than {} MiB; is this a records file? (docs/limits.md)",
                                      path, metrics_detail::LineReader::kMaxLineBytes >> 20));
    }
  }
  // Text that is not UTF-8 is the real error, not the format (a sequence cut at the end of
  // what was read is not counted).
  const std::size_t invalid = utf8::FindInvalid(text);
  if (invalid != std::string_view::npos && (head.size() < kDetectBytes || invalid + 4 < text.size())) {
    const std::string_view before = text.substr(0, invalid);
    const auto line = static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1;
    const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
    const int column = static_cast<int>(utf8::CountCodePoints(before.substr(line_start))) + 1;
    return LocatedError(SourceLocation{path, line, column, ""}, "",
                        fmt::format("expected UTF-8 text, found the byte 0x{:02x}",
                                    static_cast<unsigned char>(text[invalid])));
  }
  std::string seen = keys.empty() ? "no JSON object keys" : fmt::format("keys {}", fmt::join(keys, ", "));
  if (keys.size() > 8) seen = fmt::format("keys {}, ...", fmt::join(keys.begin(), keys.begin() + 8, ", "));
  return InvalidInput(fmt::format("{}: cannot tell the records format from its start ({}); name it "
                                  "with --format (valid: {})",
                                  path, seen, fmt::join(FormatNames(), ", ")));
}

void AppendRecordJsonl(const RequestRecord& r, const WorkloadNames& names, std::string* out) {
  FP_ASSERT(r.class_id >= 0 && static_cast<size_t>(r.class_id) < names.classes.size());
  const Json class_name = names.classes[static_cast<size_t>(r.class_id)];  // JSON-escaped by dump
  fmt::format_to(std::back_inserter(*out), "{{\"id\":{},\"class\":{}", r.id, class_name.dump());
  if (r.tenant != kNoTenant) {
    FP_ASSERT(r.tenant >= 0 && static_cast<size_t>(r.tenant) < names.tenants.size());
    fmt::format_to(std::back_inserter(*out), ",\"tenant\":{}",
                   Json(names.tenants[static_cast<size_t>(r.tenant)]).dump());
  }
  fmt::format_to(std::back_inserter(*out), ",\"arrival_s\":{}", r.arrival.seconds());
  AppendSeconds(out, "first_token_s", r.first_token);
  AppendSeconds(out, "finish_s", r.finish);
  fmt::format_to(std::back_inserter(*out), ",\"status\":\"{}\",\"input_tokens\":{},\"output_tokens\":{}",
                 RecordStatusName(r.status), r.input_tokens, r.output_tokens);
  if (r.itl_max) fmt::format_to(std::back_inserter(*out), ",\"itl_max_ms\":{}", r.itl_max->millis());
  if (!r.valid) out->append(",\"valid\":false");
  if (r.replica) fmt::format_to(std::back_inserter(*out), ",\"replica\":{}", *r.replica);
  if (r.matched_prefix_tokens) {
    fmt::format_to(std::back_inserter(*out), ",\"matched_prefix_tokens\":{}", *r.matched_prefix_tokens);
  }
  if (r.queue_age_at_assignment) {
    fmt::format_to(std::back_inserter(*out), ",\"queue_age_at_assignment_ms\":{}",
                   r.queue_age_at_assignment->millis());
  }
  if (!r.reason.empty()) fmt::format_to(std::back_inserter(*out), ",\"reason\":{}", Json(r.reason).dump());
  if (r.retry_after) fmt::format_to(std::back_inserter(*out), ",\"retry_after_s\":{}", r.retry_after->seconds());
  out->append("}\n");
}

}  // namespace fleetplan
