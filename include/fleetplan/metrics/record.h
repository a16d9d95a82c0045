// RequestRecord: what happened to one request, as much as a report needs.
//
// One record per request, written by the simulator (fleet layer) or read from a records
// file (metrics/records_io.h). A record is a small value type with no strings: the class
// and tenant are handles into name tables held by whoever owns the run, so a report over
// ten million requests keeps no per-request strings.
//
// Time on one request, all on the same clock:
//
//   arrival ........ first_token ....... ... ....... finish
//   |<---- TTFT ---->|<- gap ->|<- gap ->| ... |<- gap ->|
//   |<-------------------------- E2E ------------------->|
//   TPOT = (finish - first_token) / (output_tokens - 1)    (output_tokens >= 2)
//   ITL-max = the largest gap between consecutive output tokens (itl_max)
//
// TTFT, TPOT, ITL-max and E2E are derived from the times here and never stored
// separately, so they cannot disagree. TPOT is rounded *up* to the next nanosecond: for
// an integer threshold T, ceil(x) <= T exactly when x <= T, so a histogram edge at T and
// the objective check agree on every request.
//
// Invariants of a well-formed record (CheckRecord):
//   - arrival <= first_token <= finish (each when present);
//   - status ok => first_token and finish present, output_tokens >= 1;
//   - input_tokens, output_tokens >= 0;
//   - itl_max >= 0 when present; when the class has an itl_max objective, an ok record
//     with >= 2 output tokens carries it (with fewer tokens there is no gap to bound).
// Thread model: value types and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

// How a request ended. Values reach JSON by name (RecordStatusName); never renumber.
enum class RecordStatus : int {
  kOk = 0,         // answered in full
  kError = 1,      // the server failed it
  kCancelled = 2,  // the client gave up
  kRejected = 3,   // refused at admission
  kTimeout = 4,    // its deadline passed before it finished
};
inline constexpr int kRecordStatusCount = 5;

// "ok", "error", "cancelled", "rejected", "timeout".
std::string_view RecordStatusName(RecordStatus status);
std::optional<RecordStatus> ParseRecordStatus(std::string_view name);
// Every status name, in enum order (for error messages).
std::span<const std::string> RecordStatusNames();

struct RequestRecord {
  RequestId id = 0;
  ClassId class_id = 0;
  TenantId tenant = kNoTenant;
  RecordStatus status = RecordStatus::kOk;
  bool valid = true;                    // the output passed validation (e.g. schema, eval)
  SimTime arrival;
  std::optional<SimTime> first_token;   // absent when no token was ever produced
  std::optional<SimTime> finish;        // absent when the request never finished
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;            // tokens actually produced
  std::optional<Duration> itl_max;      // largest inter-token gap; absent when not recorded
  // Routing (simulated fleets; absent in measured records): the replica that served it,
  // the prompt tokens the router believed cached there, and how long the oldest request
  // at that replica still without a first token had waited when this one was assigned.
  std::optional<int64_t> replica;
  std::optional<int64_t> matched_prefix_tokens;
  std::optional<Duration> queue_age_at_assignment;
  // Why a simulated request did not finish ok, as the engine or fleet said it (empty when
  // it did, and in measured records). A rejection for length starts with "context".
  std::string reason;
  // A rejection's non-binding estimate of when a retry could be admitted (fleet
  // admission); absent otherwise.
  std::optional<Duration> retry_after;

  bool operator==(const RequestRecord&) const = default;
};

// Derived latencies; nullopt when the record lacks the times they need.
std::optional<Duration> Ttft(const RequestRecord& r);  // first_token - arrival
std::optional<Duration> E2e(const RequestRecord& r);   // finish - arrival
// ceil((finish - first_token) / (output_tokens - 1)); nullopt when output_tokens < 2.
std::optional<Duration> Tpot(const RequestRecord& r);

// The fields of a record, for locating problems. Each reader names them its own way.
enum class RecordField : int {
  kId = 0,
  kClass,
  kTenant,
  kArrival,
  kFirstToken,
  kFinish,
  kStatus,
  kInputTokens,
  kOutputTokens,
  kItl,
  kValid,
  kRecord,  // the record as a whole (e.g. a field that is missing)
};
inline constexpr int kRecordFieldCount = 12;
using RecordFieldNames = std::array<std::string_view, kRecordFieldCount>;

// The records-file key of each field (docs/records.md); kItl reads "itl_max_ms".
const RecordFieldNames& FleetplanRecordFieldNames();

struct RecordProblem {
  RecordField field = RecordField::kRecord;
  std::string message;  // unlocated; uses `names` for the fields it mentions
};

// Where records go: a report builder, or anything else that consumes them as a stream.
// The record readers (metrics/records_io.h) resolve class names through it and hand it
// only records that pass CheckRecord.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // The handle of class `name`, or an unlocated message saying why it is not accepted.
  virtual Expected<ClassId> ResolveClass(std::string_view name) = 0;
  // Whether records of class `id` must carry itl_max (the class bounds it).
  virtual bool NeedsItl(ClassId id) const = 0;
  virtual void Add(const RequestRecord& record) = 0;
};

// The first broken invariant of `r` (see the header comment), or nullopt.
// `needs_itl`: the record's class has an itl_max objective.
std::optional<RecordProblem> CheckRecord(const RequestRecord& r, bool needs_itl,
                                         const RecordFieldNames& names);

}  // namespace fleetplan
