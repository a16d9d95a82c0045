// Trace files: reading (replay and import) and writing fleetplan's own JSONL.
//
// Formats (docs/traces.md documents each field mapping):
//   fleetplan  fleetplan JSONL: a header line, then one request per line; lossless
//   mooncake   Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids
//              (one trace-block segment per 512-token hash id)
//   azure      Azure LLM inference CSV: TIMESTAMP, ContextTokens, GeneratedTokens
//   burstgpt   BurstGPT CSV: Timestamp, Model, Request tokens, Response tokens,
//              Total tokens, Log Type
//   csv        plain CSV: arrival_s, prompt_tokens, output_tokens [, class]
//
// Reading is a stream (a TraceSource is a RequestSource): one line at a time, never the
// whole file in memory. Every byte read feeds a SHA-256 digest of the file.
// Policies, the same for every format:
//  - rows must be in arrival order; equal times keep file order; an earlier time than
//    the previous row's is an error (never re-sorted, never skipped);
//  - every malformed line is a located error "file:line:col: field: ..." (truncated
//    JSON, wrong types, negative or zero counts, unknown class names, missing columns);
//  - an empty trace (no requests) is an error;
//  - `speed` s > 0 replays at s times the rate: arrival' = round(arrival / s); order and
//    the pairing of lengths with arrivals are kept exactly;
//  - a line ending in CR LF is read as if it ended in LF (the digest covers the bytes).
// Thread model: a source or writer is single-threaded state.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/workload/request.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {

// Reaches JSON (trace headers, stats): explicit values, never renumber.
enum class TraceFormat : int {
  kFleetplan = 0,
  kMooncake = 1,
  kAzure = 2,
  kBurstGpt = 3,
  kCsv = 4,
};

// "fleetplan", "mooncake", "azure", "burstgpt", "csv" (index = enum value).
const std::vector<std::string>& TraceFormatNames();
std::string_view TraceFormatName(TraceFormat format);
// Unknown names: "unknown trace format 'x'; did you mean ...? (valid: ...)".
Expected<TraceFormat> ParseTraceFormat(std::string_view name);

// Tells the format from the first line (the CSV header, or the first JSON object) and
// checks the file extension agrees (.jsonl/.json for JSON formats, .csv for CSV ones;
// other extensions defer to the content). Unrecognisable or contradictory input is an
// error that says what was seen and asks for --format.
Expected<TraceFormat> DetectTraceFormat(std::string_view display_name, std::string_view first_line);

// Mooncake's block size: tokens per hash id.
inline constexpr int64_t kMooncakeBlockTokens = 512;

struct TraceReadOptions {
  std::optional<TraceFormat> format;     // nullopt: DetectTraceFormat
  // Class of imported requests for formats that have none (mooncake, azure, csv without
  // a class column); "default" when unset. Setting it for a format whose rows name their
  // class (fleetplan, burstgpt, csv with a class column) is an error.
  std::optional<std::string> class_name;
  double speed = 1.0;                    // > 0
  std::optional<Duration> until;         // stop before the first arrival >= until
  std::optional<int64_t> max_requests;   // stop after this many requests
  bool drop_failed = false;              // burstgpt: leave out rows with 0 response tokens
                                         // (counted in dropped_rows(), never silent)
};

class TraceSource : public RequestSource {
 public:
  virtual TraceFormat format() const = 0;
  // "sha256:<hex>" of every byte of the file. Reads (without parsing) whatever the
  // replay did not, so it is the file's digest even when `until`/`max_requests` stopped
  // the replay early. Call once, after the last Next().
  virtual Expected<std::string> FinishDigest() = 0;
  // Rows left out by drop_failed.
  virtual int64_t dropped_rows() const = 0;
  // fleetplan traces: the header's "source" object (provenance); null for imports.
  virtual const Json& provenance() const = 0;
};

// Opens a trace file. A missing file, an unknown format or a bad header is an error
// here; bad rows are errors from Next().
Expected<std::unique_ptr<TraceSource>> OpenTrace(const std::string& path,
                                                 const TraceReadOptions& options);
// The same over any stream (tests, benchmarks); `display_name` is used in errors.
Expected<std::unique_ptr<TraceSource>> OpenTraceStream(std::unique_ptr<std::istream> in,
                                                       std::string display_name,
                                                       const TraceReadOptions& options);

// --- fleetplan JSONL -------------------------------------------------------------
//
// Line 1 (header), then one record per request; every line is canonical JSON (sorted
// keys, no spaces), so a file written twice is byte-identical:
//   {"adapters":[],"classes":["interactive"],"format":"fleetplan-trace",
//    "source":{...},"tenants":["tenant-0"],"version":1}
//   {"arrival_ns":125000000,"class":"interactive","id":0,"output_tokens":150,
//    "priority":0,"prompt":[[8410952167347125041,1500],[4417713221075402114,300]],
//    "tenant":"tenant-0"}
// Optional record keys (omitted when absent): tenant, adapter, deadline_ns,
// cancel_at_ns, session + turn.

inline constexpr std::string_view kFleetplanTraceFormatTag = "fleetplan-trace";
inline constexpr int64_t kFleetplanTraceVersion = 1;

std::string FormatTraceHeader(const WorkloadNames& names, const Json& source);
// REQUIRES: the request's handles are valid indices into `names`.
std::string FormatTraceRecord(const Request& request, const WorkloadNames& names);

// Writes a fleetplan JSONL trace. Records stream to a temporary file beside `path`;
// Finish() writes the header (whose name tables are only complete at the end, for
// importers that meet names as they go) followed by the records to `path`, replacing
// it atomically, and returns the digest of the bytes written.
class TraceWriter {
 public:
  static Expected<std::unique_ptr<TraceWriter>> Create(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // REQUIRES: request.id == requests written so far; arrivals non-decreasing.
  Status Write(const Request& request, const WorkloadNames& names);
  Expected<std::string> Finish(const WorkloadNames& names, const Json& source);
  int64_t written() const { return written_; }

 private:
  struct Scratch;  // escaped names and the output buffer (trace_fleetplan.cc)
  TraceWriter(std::string path, std::string body_path, std::unique_ptr<std::ostream> body);
  Status Flush();
  std::string path_;
  std::string body_path_;
  std::unique_ptr<std::ostream> body_;
  std::unique_ptr<Scratch> scratch_;
  int64_t written_ = 0;
  SimTime last_arrival_;
  bool finished_ = false;
};

}  // namespace fleetplan
