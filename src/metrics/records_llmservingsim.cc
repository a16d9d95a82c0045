// LLMServingSim's requests.jsonl (its real vLLM runs): one finished request per line.
//
// Two clocks (docs/records.md): `arrival_time` is wall-clock epoch seconds on the client,
// while queued_ts, scheduled_ts, first_token_ts and last_token_ts are the engine's
// monotonic seconds. When the first record shows them on different clocks (arrival_time
// > queued_ts, as in the published runs), arrival is taken as queued_ts, exactly as
// LLMServingSim itself measures TTFT and latency; otherwise arrival_time is used. The
// choice is stated in the report's notes.
#include <fmt/format.h>

#include <array>

#include "fleetplan/metrics/records_io.h"
#include "metrics/line_reader.h"
#include "metrics/locate.h"
#include "metrics/records_common.h"
#include "metrics/records_readers.h"

namespace fleetplan::metrics_detail {
namespace {

enum Key : size_t {
  kRequestId, kInputToks, kOutputToks, kArrivalTime, kQueuedTs, kScheduledTs, kFirstTokenTs,
  kLastTokenTs, kKeyCount
};
constexpr std::array<std::string_view, kKeyCount> kKeys = {
    "request_id", "input_toks",   "output_toks",    "arrival_time",
    "queued_ts",  "scheduled_ts", "first_token_ts", "last_token_ts"};

struct Line {
  std::array<SimTime, kKeyCount> times{};  // indexed by the time keys
  int64_t input = 0;
  int64_t output = 0;
};

bool ReadRequestId(JsonCursor& c) {
  const JsonType t = c.Peek();
  if (t == JsonType::kString) {
    std::string_view id;
    const size_t at = c.pos();
    if (!c.ReadString(&id)) return false;
    return !id.empty() || c.Fail(at, "expected a non-empty request id");
  }
  int64_t id = 0;
  if (t == JsonType::kNumber) return ReadCount(c, &id);
  return c.Fail(c.pos(), fmt::format("expected a string or integer id, got {}", JsonTypeName(t)));
}

bool ReadValue(JsonCursor& c, Key key, Line* line) {
  switch (key) {
    case kRequestId: return ReadRequestId(c);
    case kInputToks: return ReadCount(c, &line->input);
    case kOutputToks: return ReadCount(c, &line->output);
    case kArrivalTime:
    case kQueuedTs:
    case kScheduledTs:
    case kFirstTokenTs:
    case kLastTokenTs: return ReadSeconds(c, &line->times[key]);
    case kKeyCount: break;
  }
  return false;
}

class LlmServingSimReader : public RecordReader {
 public:
  explicit LlmServingSimReader(RecordReadOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "llmservingsim"; }

  Expected<RecordsFileInfo> Read(const std::string& path, RecordSink& sink) const override {
    FP_ASSIGN_OR_RETURN(ClassId class_id, ResolveDefaultClass(sink));
    FP_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
    ObjectScanner scanner(kKeys);
    RecordsFileInfo info;
    std::optional<bool> same_clock;
    std::string_view text;
    while (lines->Next(&text)) {
      if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
      auto fail = [&](size_t offset, std::string_view field, std::string_view message) {
        return ErrorAt(path, lines->line_number(), text, offset, field, message);
      };
      Line line;
      JsonCursor c(text);
      std::string_view field;
      const auto on_value = [&](size_t index) {
        field = kKeys[index];
        const bool ok = ReadValue(c, static_cast<Key>(index), &line);
        if (ok) field = {};
        return ok;
      };
      if (!scanner.Scan(c, on_value)) return fail(c.error_offset(), field, c.error_message());
      for (size_t k = 0; k < kKeyCount; ++k) {
        if (!scanner.has(k)) return fail(0, kKeys[k], fmt::format("missing required field '{}'", kKeys[k]));
      }
      const SimTime arrival_time = line.times[kArrivalTime];
      const SimTime queued = line.times[kQueuedTs];
      if (!same_clock) same_clock = arrival_time <= queued;
      if (*same_clock && arrival_time > queued) {
        return fail(scanner.value_offset(kArrivalTime), "arrival_time",
                    fmt::format("arrival_time {} is after queued_ts {}, but the first record put both "
                                "on one clock",
                                arrival_time.seconds(), queued.seconds()));
      }
      if (line.times[kScheduledTs] < queued) {
        return fail(scanner.value_offset(kScheduledTs), "scheduled_ts",
                    fmt::format("scheduled_ts {} is before queued_ts {}", line.times[kScheduledTs].seconds(),
                                queued.seconds()));
      }
      if (line.times[kFirstTokenTs] < line.times[kScheduledTs]) {
        return fail(scanner.value_offset(kFirstTokenTs), "first_token_ts",
                    fmt::format("first_token_ts {} is before scheduled_ts {}",
                                line.times[kFirstTokenTs].seconds(), line.times[kScheduledTs].seconds()));
      }
      RequestRecord r;
      r.id = info.records;
      r.class_id = class_id;
      r.arrival = *same_clock ? arrival_time : queued;
      r.first_token = line.times[kFirstTokenTs];
      r.finish = line.times[kLastTokenTs];
      r.input_tokens = line.input;
      r.output_tokens = line.output;
      const Key arrival_key = *same_clock ? kArrivalTime : kQueuedTs;
      if (auto problem = CheckRecord(r, /*needs_itl=*/false, Names(arrival_key))) {
        const Key key = KeyOf(problem->field, arrival_key);
        return fail(key == kKeyCount ? 0 : scanner.value_offset(key),
                    key == kKeyCount ? std::string_view() : kKeys[key], problem->message);
      }
      sink.Add(r);
      ++info.records;
    }
    FP_RETURN_IF_ERROR(lines->status());
    if (info.records == 0) return InvalidInput(fmt::format("{}: no records (the file has no record lines)", path));
    info.path = path;
    info.format = std::string(name());
    info.digest = lines->FinishDigest();
    info.notes.push_back(
        *same_clock
            ? "llmservingsim: arrival = arrival_time (on the same clock as queued_ts)"
            : "llmservingsim: arrival = queued_ts (engine monotonic clock); arrival_time is "
              "wall-clock epoch seconds, a different clock, so TTFT and E2E run from queued_ts "
              "as LLMServingSim measures them");
    info.notes.push_back(fmt::format("llmservingsim: every record has class '{}' ({}), status ok, valid output",
                                     options_.default_class, options_.class_flag));
    return info;
  }

 private:
  Expected<ClassId> ResolveDefaultClass(RecordSink& sink) const {
    Expected<ClassId> id = sink.ResolveClass(options_.default_class);
    if (!id.ok()) return LocatedError(SourceLocation{}, options_.class_flag, id.status().message());
    if (sink.NeedsItl(*id)) {
      return LocatedError(SourceLocation{}, options_.class_flag,
                          fmt::format("class '{}' has an itl_max objective, but the llmservingsim "
                                      "format records no inter-token gaps",
                                      options_.default_class));
    }
    return id;
  }

  RecordFieldNames Names(Key arrival_key) const {
    RecordFieldNames names = FleetplanRecordFieldNames();
    auto set = [&](RecordField f, std::string_view n) { names[static_cast<size_t>(f)] = n; };
    set(RecordField::kId, "request_id");
    set(RecordField::kClass, options_.class_flag);
    set(RecordField::kArrival, kKeys[arrival_key]);
    set(RecordField::kFirstToken, "first_token_ts");
    set(RecordField::kFinish, "last_token_ts");
    set(RecordField::kInputTokens, "input_toks");
    set(RecordField::kOutputTokens, "output_toks");
    set(RecordField::kItl, "inter-token gaps, which this format does not record");
    return names;
  }

  static Key KeyOf(RecordField f, Key arrival_key) {
    switch (f) {
      case RecordField::kArrival: return arrival_key;
      case RecordField::kFirstToken: return kFirstTokenTs;
      case RecordField::kFinish: return kLastTokenTs;
      case RecordField::kInputTokens: return kInputToks;
      case RecordField::kOutputTokens: return kOutputToks;
      case RecordField::kId: return kRequestId;
      default: return kKeyCount;
    }
  }

  RecordReadOptions options_;
};

}  // namespace

std::unique_ptr<RecordReader> MakeLlmServingSimReader(const RecordReadOptions& options) {
  return std::make_unique<LlmServingSimReader>(options);
}

}  // namespace fleetplan::metrics_detail
