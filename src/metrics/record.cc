#include "fleetplan/metrics/record.h"

#include <fmt/format.h>

#include <vector>

namespace fleetplan {
namespace {

const std::array<std::string, kRecordStatusCount>& StatusNameTable() {
  static const std::array<std::string, kRecordStatusCount> kNames = {
      "ok", "error", "cancelled", "rejected", "timeout"};
  return kNames;
}

std::string Seconds(SimTime t) { return fmt::format("{}", t.seconds()); }

}  // namespace

std::string_view RecordStatusName(RecordStatus status) {
  return StatusNameTable()[static_cast<size_t>(status)];
}

std::optional<RecordStatus> ParseRecordStatus(std::string_view name) {
  const auto& names = StatusNameTable();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<RecordStatus>(i);
  }
  return std::nullopt;
}

std::span<const std::string> RecordStatusNames() { return StatusNameTable(); }

std::optional<Duration> Ttft(const RequestRecord& r) {
  if (!r.first_token) return std::nullopt;
  return *r.first_token - r.arrival;
}

std::optional<Duration> E2e(const RequestRecord& r) {
  if (!r.finish) return std::nullopt;
  return *r.finish - r.arrival;
}

std::optional<Duration> Tpot(const RequestRecord& r) {
  if (!r.first_token || !r.finish || r.output_tokens < 2) return std::nullopt;
  const int64_t span = (*r.finish - *r.first_token).ns();
  const int64_t gaps = r.output_tokens - 1;
  return Duration::Nanos(span / gaps + (span % gaps != 0 ? 1 : 0));  // ceil; span >= 0
}

const RecordFieldNames& FleetplanRecordFieldNames() {
  static const RecordFieldNames kNames = {
      "id",          "class",        "tenant",        "arrival_s",
      "first_token_s", "finish_s",   "status",        "input_tokens",
      "output_tokens", "itl_max_ms", "valid",         "record"};
  return kNames;
}

std::optional<RecordProblem> CheckRecord(const RequestRecord& r, bool needs_itl,
                                         const RecordFieldNames& names) {
  auto name = [&](RecordField f) { return names[static_cast<size_t>(f)]; };
  auto problem = [](RecordField f, std::string message) {
    return std::optional<RecordProblem>(RecordProblem{f, std::move(message)});
  };
  if (r.input_tokens < 0) {
    return problem(RecordField::kInputTokens,
                   fmt::format("expected an integer >= 0, got {}", r.input_tokens));
  }
  if (r.output_tokens < 0) {
    return problem(RecordField::kOutputTokens,
                   fmt::format("expected an integer >= 0, got {}", r.output_tokens));
  }
  if (r.first_token && *r.first_token < r.arrival) {
    return problem(RecordField::kFirstToken,
                   fmt::format("{} {} is before {} {}; the first token cannot come before the "
                               "request arrives",
                               name(RecordField::kFirstToken), Seconds(*r.first_token),
                               name(RecordField::kArrival), Seconds(r.arrival)));
  }
  if (r.finish && *r.finish < r.arrival) {
    return problem(RecordField::kFinish,
                   fmt::format("{} {} is before {} {}; a request cannot finish before it arrives",
                               name(RecordField::kFinish), Seconds(*r.finish),
                               name(RecordField::kArrival), Seconds(r.arrival)));
  }
  if (r.finish && r.first_token && *r.finish < *r.first_token) {
    return problem(RecordField::kFinish,
                   fmt::format("{} {} is before {} {}; a request cannot finish before its first "
                               "token",
                               name(RecordField::kFinish), Seconds(*r.finish),
                               name(RecordField::kFirstToken), Seconds(*r.first_token)));
  }
  if (r.itl_max && *r.itl_max < Duration()) {
    return problem(RecordField::kItl, "expected a gap >= 0");
  }
  if (r.status != RecordStatus::kOk) return std::nullopt;
  if (!r.first_token) {
    return problem(RecordField::kFirstToken,
                   fmt::format("status 'ok' needs a first-token time, got null"));
  }
  if (!r.finish) {
    return problem(RecordField::kFinish, fmt::format("status 'ok' needs a finish time, got null"));
  }
  if (r.output_tokens < 1) {
    return problem(RecordField::kOutputTokens,
                   fmt::format("status 'ok' means at least one output token, got {}",
                               r.output_tokens));
  }
  if (needs_itl && r.output_tokens >= 2 && !r.itl_max) {
    return problem(RecordField::kRecord,
                   fmt::format("this record's class has an itl_max objective, but the record "
                               "has no inter-token gaps ({})",
                               name(RecordField::kItl)));
  }
  return std::nullopt;
}

}  // namespace fleetplan
