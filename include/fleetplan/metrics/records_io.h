// Records files: reading them into a RecordSink as a stream, and writing our own format.
//
// Formats (docs/records.md), each a small reader object built by MakeRecordReader:
//   fleetplan      our JSONL, one RequestRecord per line (what `simulate` writes);
//   llmservingsim  the requests.jsonl of LLMServingSim's vLLM runs (request_id,
//                  input_toks, output_toks, arrival_time, queued_ts, scheduled_ts,
//                  first_token_ts, last_token_ts; see the two-clock note in docs);
//   vllm-bench     the JSON written by `vllm bench serve --save-result` (arrays ttfts,
//                  itls, input_lens, output_lens, errors, and when present start_times,
//                  latencies, duration).
// JSONL files are read in chunks and never held whole; each line becomes a record that
// goes straight into the sink. Every error is located (file:line:col, field, expected vs
// got, did-you-mean) and stops the read: no record is skipped silently.
// Thread model: readers are stateless after construction; Read is reentrant.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

// What a read found besides the records.
struct RecordsFileInfo {
  std::string path;
  std::string format;
  std::string digest;                    // "sha256:..." of the file's bytes
  int64_t records = 0;
  std::optional<Duration> stated_window;  // a window length the file itself states
  std::vector<std::string> notes;        // what the reader derived or assumed, in words
  std::vector<std::string> tenants;      // names behind RequestRecord::tenant
};

struct RecordReadOptions {
  // The class of every record in formats that have no classes (llmservingsim,
  // vllm-bench); `class_flag` names where it came from in errors.
  std::string default_class = "default";
  std::string class_flag = "--class";
};

class RecordReader {
 public:
  virtual ~RecordReader() = default;
  virtual std::string_view name() const = 0;
  // Streams every record of `path` into `sink`. An empty file is an error.
  virtual Expected<RecordsFileInfo> Read(const std::string& path, RecordSink& sink) const = 0;
};

// "fleetplan", "llmservingsim", "vllm-bench".
std::span<const std::string> RecordFormatNames();
// An unknown name is an error listing the valid ones (with did-you-mean).
Expected<std::unique_ptr<RecordReader>> MakeRecordReader(std::string_view format,
                                                         const RecordReadOptions& options = {});
// The format of `path`, judged from the top-level keys at its start; an error lists the
// formats when none fits.
Expected<std::string> DetectRecordFormat(const std::string& path);

// Appends `r` as one line of the fleetplan format (with '\n'). Times are seconds in
// shortest round-trip form, so reading the line back gives the same nanoseconds for
// times below 10^15 ns (11.5 days; the two roundings stay under half a nanosecond).
// REQUIRES: r.class_id names a class in `names`; the tenant, when set, one in `names`.
void AppendRecordJsonl(const RequestRecord& r, const WorkloadNames& names, std::string* out);

}  // namespace fleetplan
