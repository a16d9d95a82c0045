// The fleetplan records format: JSONL, one RequestRecord per line (docs/records.md).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fleetplan/core/printable_name.h"
#include "fleetplan/metrics/records_io.h"
#include "metrics/line_reader.h"
#include "metrics/locate.h"
#include "metrics/records_common.h"
#include "metrics/records_readers.h"

namespace fleetplan::metrics_detail {
namespace {

// The keys of a record line, in the order AppendRecordJsonl writes them.
enum Key : size_t {
  kId, kClass, kTenant, kArrival, kFirstToken, kFinish, kStatus,
  kInputTokens, kOutputTokens, kItlMs, kItlMaxMs, kValid, kReplica, kMatchedPrefixTokens,
  kQueueAgeAtAssignment, kReason, kRetryAfter, kKeyCount
};
constexpr std::array<std::string_view, kKeyCount> kKeys = {
    "id",           "class",        "tenant",        "arrival_s",  "first_token_s", "finish_s",
    "status",       "input_tokens", "output_tokens", "itl_ms",     "itl_max_ms",    "valid",
    "replica",      "matched_prefix_tokens",         "queue_age_at_assignment_ms", "reason",
    "retry_after_s"};
constexpr std::array<Key, 8> kRequired = {kId,     kClass,       kArrival,     kFirstToken,
                                          kFinish, kStatus,      kInputTokens, kOutputTokens};

// The key that holds each RecordField (kItl: see ItlKey).
constexpr std::array<Key, kRecordFieldCount> kKeyOfField = {
    kId, kClass, kTenant, kArrival, kFirstToken, kFinish, kStatus,
    kInputTokens, kOutputTokens, kItlMaxMs, kValid, kKeyCount};

// Tenant names -> handles, in order of first appearance.
class TenantTable {
 public:
  TenantId Intern(std::string_view name) {
    if (last_ >= 0 && names_[static_cast<size_t>(last_)] == name) return last_;
    auto it = ids_.find(name);
    if (it == ids_.end()) {
      it = ids_.emplace(std::string(name), static_cast<TenantId>(names_.size())).first;
      names_.emplace_back(name);
    }
    last_ = it->second;
    return last_;
  }
  std::vector<std::string> take_names() { return std::move(names_); }

 private:
  std::map<std::string, TenantId, std::less<>> ids_;
  std::vector<std::string> names_;
  TenantId last_ = -1;
};

// A request id: a non-empty string or an integer >= 0. `text` is what identifies it —
// the string, or the integer's decimal digits, so "17" and 17 are the same id (a log
// that writes both means one request); `number` is set for an integer.
bool ReadIdText(JsonCursor& c, std::string* text, std::optional<int64_t>* number) {
  const JsonType type = c.Peek();
  if (type == JsonType::kString) {
    const size_t at = c.pos();
    std::string_view id;
    if (!c.ReadString(&id)) return false;
    if (id.empty()) return c.Fail(at, "expected a non-empty string or an integer >= 0");
    *text = std::string(id);
    return true;
  }
  if (type != JsonType::kNumber) {
    return c.Fail(c.pos(), fmt::format("expected a string or an integer >= 0, got {}", JsonTypeName(type)));
  }
  int64_t id = 0;
  if (!ReadCount(c, &id)) return false;
  *text = std::to_string(id);
  *number = id;
  return true;
}

// The id of a record line that parsed before (error path only): its text, and how to
// show it (a string quoted, an integer bare).
std::pair<std::string, std::string> IdOf(std::string_view line) {
  const std::optional<size_t> offset = FindTopLevelValue(line, "id");
  if (!offset) return {};
  JsonCursor c(line.substr(*offset));
  std::string text;
  std::optional<int64_t> number;
  if (!ReadIdText(c, &text, &number)) return {};
  return {text, number ? text : Json(text).dump()};
}

class LineParser {
 public:
  LineParser(RecordSink& sink, TenantTable& tenants) : sink_(sink), tenants_(tenants), scanner_(kKeys) {}

  // Parses `line` into record(); false with cursor-style error (offset, field, message).
  bool Parse(std::string_view line, int64_t ordinal) {
    record_ = RequestRecord{};
    ordinal_ = ordinal;
    id_hash_ = 0;
    itl_gaps_ = -1;
    error_field_ = {};
    JsonCursor c(line);
    const auto on_value = [&](size_t index) {
      error_field_ = kKeys[index];
      const bool ok = ReadValue(c, static_cast<Key>(index));
      if (ok) error_field_ = {};
      return ok;
    };
    if (!scanner_.Scan(c, on_value)) {
      error_offset_ = c.error_offset();
      error_message_ = c.error_message();
      return false;
    }
    return CheckWhole();
  }

  const RequestRecord& record() const { return record_; }
  // XXH3-64 of the id's text (IdText), for the uniqueness check.
  uint64_t id_hash() const { return id_hash_; }
  size_t error_offset() const { return error_offset_; }
  std::string_view error_field() const { return error_field_; }
  const std::string& error_message() const { return error_message_; }

 private:
  bool ReadValue(JsonCursor& c, Key key) {
    switch (key) {
      case kId: return ReadId(c);
      case kClass: return ReadClass(c);
      case kTenant: return ReadTenant(c);
      case kArrival: return ReadSeconds(c, &record_.arrival);
      case kFirstToken: return ReadOptionalSeconds(c, &record_.first_token);
      case kFinish: return ReadOptionalSeconds(c, &record_.finish);
      case kStatus: return ReadStatus(c);
      case kInputTokens: return ReadCount(c, &record_.input_tokens);
      case kOutputTokens: return ReadCount(c, &record_.output_tokens);
      case kItlMs: return ReadItlList(c);
      case kItlMaxMs: return ReadItlMax(c);
      case kValid: return ReadValid(c);
      case kReplica: return ReadOptionalCount(c, &record_.replica);
      case kMatchedPrefixTokens: return ReadOptionalCount(c, &record_.matched_prefix_tokens);
      case kQueueAgeAtAssignment: {
        Duration age;
        if (!ReadMillis(c, &age)) return false;
        record_.queue_age_at_assignment = age;
        return true;
      }
      case kReason: {
        std::string_view reason;
        if (!ReadText(c, &reason)) return false;
        record_.reason = std::string(reason);
        return true;
      }
      case kRetryAfter: {
        SimTime after;
        if (!ReadSeconds(c, &after)) return false;
        record_.retry_after = after - SimTime();
        return true;
      }
      case kKeyCount: break;
    }
    return false;
  }

  // A string id is not kept (records hold no strings): the record's numeric id is then
  // its position in the file.
  bool ReadId(JsonCursor& c) {
    std::string text;
    std::optional<int64_t> number;
    if (!ReadIdText(c, &text, &number)) return false;
    record_.id = number.value_or(ordinal_);
    id_hash_ = XXH3_64bits(text.data(), text.size());
    return true;
  }

  bool ReadClass(JsonCursor& c) {
    const size_t at = c.pos();
    std::string_view name;
    if (!ReadText(c, &name)) return false;
    if (Status printable = CheckPrintableName(name); !printable.ok()) return c.Fail(at, printable.message());
    Expected<ClassId> id = sink_.ResolveClass(name);
    if (!id.ok()) return c.Fail(at, id.status().message());
    record_.class_id = *id;
    return true;
  }

  bool ReadTenant(JsonCursor& c) {
    const size_t at = c.pos();
    std::string_view name;
    if (!ReadText(c, &name)) return false;
    if (name.empty()) return c.Fail(at, "expected a non-empty tenant name (leave the field out for none)");
    record_.tenant = tenants_.Intern(name);
    return true;
  }

  bool ReadStatus(JsonCursor& c) {
    const size_t at = c.pos();
    std::string_view name;
    if (!ReadText(c, &name)) return false;
    const std::optional<RecordStatus> status = ParseRecordStatus(name);
    if (!status) return c.Fail(at, UnknownNameMessage("status", name, RecordStatusNames()));
    record_.status = *status;
    return true;
  }

  bool ReadItlList(JsonCursor& c) {
    if (scanner_.has(kItlMaxMs)) return c.Fail(c.pos(), "give itl_ms or itl_max_ms, not both");
    if (c.Peek() != JsonType::kArray) {
      return c.Fail(c.pos(), fmt::format("expected an array of gaps in ms, got {}", JsonTypeName(c.Peek())));
    }
    c.TryConsume('[');
    Duration max;
    itl_gaps_ = 0;
    if (!c.TryConsume(']')) {
      do {
        Duration gap;
        if (!ReadMillis(c, &gap)) return false;
        max = std::max(max, gap);
        ++itl_gaps_;
      } while (c.TryConsume(','));
      if (!c.TryConsume(']')) {
        if (c.AtEnd()) return c.Fail(c.pos(), "truncated: the line ends inside the itl_ms array");
        return c.Fail(c.pos(), "expected ',' or ']' in the itl_ms array");
      }
    }
    if (itl_gaps_ > 0) record_.itl_max = max;
    return true;
  }

  bool ReadItlMax(JsonCursor& c) {
    if (scanner_.has(kItlMs)) return c.Fail(c.pos(), "give itl_ms or itl_max_ms, not both");
    if (c.Peek() == JsonType::kNull) return c.ReadNull();
    Duration gap;
    if (!ReadMillis(c, &gap)) return false;
    record_.itl_max = gap;
    return true;
  }

  bool ReadOptionalCount(JsonCursor& c, std::optional<int64_t>* out) {
    int64_t v = 0;
    if (!ReadCount(c, &v)) return false;
    *out = v;
    return true;
  }

  bool ReadValid(JsonCursor& c) {
    if (c.Peek() != JsonType::kBool) {
      return c.Fail(c.pos(), fmt::format("expected true or false, got {}", JsonTypeName(c.Peek())));
    }
    return c.ReadBool(&record_.valid);
  }

  bool FailAt(Key key, std::string message) {
    error_field_ = key == kKeyCount ? std::string_view() : kKeys[key];
    error_offset_ = key == kKeyCount ? 0 : scanner_.value_offset(key);
    error_message_ = std::move(message);
    return false;
  }

  // Checks that need the whole line: required fields, then the record's invariants.
  bool CheckWhole() {
    for (Key key : kRequired) {
      if (!scanner_.has(key)) {
        error_field_ = kKeys[key];
        error_offset_ = 0;
        error_message_ = fmt::format("missing required field '{}'", kKeys[key]);
        return false;
      }
    }
    const Key itl_key = scanner_.has(kItlMs) ? kItlMs : kItlMaxMs;
    RecordFieldNames names = FleetplanRecordFieldNames();
    names[static_cast<size_t>(RecordField::kItl)] =
        scanner_.has(itl_key) ? kKeys[itl_key] : std::string_view("itl_ms or itl_max_ms");
    if (auto problem = CheckRecord(record_, sink_.NeedsItl(record_.class_id), names)) {
      Key key = kKeyOfField[static_cast<size_t>(problem->field)];
      if (problem->field == RecordField::kItl) key = itl_key;
      if (key != kKeyCount && !scanner_.has(key)) key = kKeyCount;
      return FailAt(key, std::move(problem->message));
    }
    if (itl_gaps_ > std::max<int64_t>(0, record_.output_tokens - 1)) {
      return FailAt(kItlMs, fmt::format("{} gaps, but {} output tokens have at most {}", itl_gaps_,
                                        record_.output_tokens,
                                        std::max<int64_t>(0, record_.output_tokens - 1)));
    }
    return true;
  }

  RecordSink& sink_;
  TenantTable& tenants_;
  int64_t ordinal_ = 0;
  uint64_t id_hash_ = 0;
  ObjectScanner scanner_;
  RequestRecord record_;
  int64_t itl_gaps_ = -1;
  size_t error_offset_ = 0;
  std::string_view error_field_;
  std::string error_message_;
};

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

// The text of line `number` of `path` (only on the error path).
std::string LineOf(const std::string& path, int64_t number) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return "";
  std::string_view line;
  while ((*reader)->Next(&line)) {
    if ((*reader)->line_number() == number) return std::string(line);
  }
  return "";
}

// Ids must be unique: a record given twice would count twice. `hash_lines` holds
// (hash of the id text, line); equal hashes are confirmed on the ids themselves.
Status CheckUniqueIds(std::vector<std::pair<uint64_t, int64_t>>& hash_lines, const std::string& path) {
  std::sort(hash_lines.begin(), hash_lines.end());
  for (size_t i = 1; i < hash_lines.size(); ++i) {
    if (hash_lines[i].first != hash_lines[i - 1].first) continue;
    for (size_t j = i; j-- > 0 && hash_lines[j].first == hash_lines[i].first;) {
      const std::string line = LineOf(path, hash_lines[i].second);
      const auto [id, shown] = IdOf(line);
      if (id != IdOf(LineOf(path, hash_lines[j].second)).first) continue;  // a hash collision
      const size_t offset = FindTopLevelValue(line, "id").value_or(0);
      return ErrorAt(path, hash_lines[i].second, line, offset, "id",
                     fmt::format("duplicate id {} (first used on line {})", shown, hash_lines[j].second));
    }
  }
  return Status::Ok();
}

class FleetplanReader : public RecordReader {
 public:
  std::string_view name() const override { return "fleetplan"; }

  Expected<RecordsFileInfo> Read(const std::string& path, RecordSink& sink) const override {
    FP_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
    TenantTable tenants;
    LineParser parser(sink, tenants);
    std::vector<std::pair<uint64_t, int64_t>> id_lines;  // (id hash, line) for the uniqueness check
    RecordsFileInfo info;
    std::string_view line;
    while (lines->Next(&line)) {
      if (IsBlank(line)) continue;
      if (!parser.Parse(line, info.records)) {
        std::string message = parser.error_message();
        if (lines->last_line_unterminated() && message.starts_with("truncated")) {
          message += " (the file ends without a newline: was it cut short?)";
        }
        return ErrorAt(path, lines->line_number(), line, parser.error_offset(), parser.error_field(),
                       message);
      }
      id_lines.emplace_back(parser.id_hash(), lines->line_number());
      sink.Add(parser.record());
      ++info.records;
    }
    FP_RETURN_IF_ERROR(lines->status());
    if (info.records == 0) return InvalidInput(fmt::format("{}: no records (the file has no record lines)", path));
    FP_RETURN_IF_ERROR(CheckUniqueIds(id_lines, path));
    info.path = path;
    info.format = std::string(name());
    info.digest = lines->FinishDigest();
    info.tenants = tenants.take_names();
    return info;
  }
};

}  // namespace

std::unique_ptr<RecordReader> MakeFleetplanReader() { return std::make_unique<FleetplanReader>(); }

}  // namespace fleetplan::metrics_detail
