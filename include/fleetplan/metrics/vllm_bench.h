// A `vllm bench serve` / `benchmark_serving.py --save-result` file as a value: how the
// client sent its requests (rate, burstiness, concurrency cap), the figures it states,
// and, when the file carries them (`--save-detailed`, or the older clients that always
// saved them), each request's lengths and times.
//
// The same file is also a records format of `fleetplan report` (records_io.h,
// `vllm-bench`): both readers share one parser of the per-request arrays
// (src/metrics/records_vllm_bench.cc), so a file reads the same way, with the same
// located errors, for both.
//
// What is read (docs/validate.md "vLLM bench result files"):
//   request_rate      a number > 0 (requests per second), or "inf" (all sent at once);
//                     required
//   burstiness        a number > 0 (absent: 1, a Poisson process)
//   max_concurrency   null or an integer >= 1 (absent: null, no cap)
//   num_prompts, completed, total_input_tokens, total_output_tokens   integers >= 0
//   duration          seconds > 0
//   model_id          a string
//   <stat>_<metric>_ms   with stat mean | median | std | p<N> and metric ttft | tpot |
//                     itl | e2el: a number >= 0 (or null: not stated)
//   per request, parallel arrays (all of ttfts, itls, input_lens, output_lens, errors,
//   or none of them): ttfts[i] and itls[i][k] in seconds, input_lens[i] and
//   output_lens[i] tokens, errors[i] "" on success; latencies[i] (seconds) when present.
// Every other key is vLLM's own and is left alone. Errors are located at the value
// (file:line:col: key[i]: message); a file without the per-request arrays must state
// completed, total_input_tokens, total_output_tokens, mean_ttft_ms and mean_tpot_ms.
// Thread model: a value; the reader is a pure function of the file's bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

// One request of a detailed file.
struct VllmBenchRequest {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  bool failed = false;         // errors[i] non-empty: its times are not measurements
  Duration ttft;               // client: sent -> first streamed chunk
  Duration e2e;                // latencies[i] when the file has them, else ttft + sum(itls[i])
  std::vector<Duration> itls;  // gaps between streamed chunks
};

struct VllmBenchResult {
  std::string path;
  std::string digest;                  // "sha256:..." of the file's bytes
  std::string model_id;                // "" when the file does not say
  std::optional<double> request_rate;  // per second; nullopt: "inf" (all at t = 0)
  double burstiness = 1.0;             // gamma shape of the gaps (1: Poisson)
  std::optional<int64_t> max_concurrency;
  std::optional<int64_t> num_prompts;
  std::optional<int64_t> completed;
  std::optional<int64_t> total_input_tokens;
  std::optional<int64_t> total_output_tokens;
  std::optional<double> duration_s;
  // The stated figures in milliseconds, by the file's key ("mean_ttft_ms", "p99_itl_ms").
  std::map<std::string, double> stated_ms;
  std::vector<VllmBenchRequest> requests;  // empty for an aggregate-only file

  bool detailed() const { return !requests.empty(); }
  std::optional<double> Stated(std::string_view stat, std::string_view metric) const;
};

Expected<VllmBenchResult> ReadVllmBenchResult(const std::string& path);
// The same from text; `path` names it in messages.
Expected<VllmBenchResult> ParseVllmBenchResult(std::string_view text, const std::string& path);

}  // namespace fleetplan
