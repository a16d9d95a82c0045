// Fidelity: replays a measured serving run (a run directory, docs/validate.md) through
// the engine with a kernel-table step model, and compares the predicted per-request
// latencies and queue time series with the measured ones.
//
// A run directory holds meta.json (engine settings), requests.jsonl (one finished
// request per line, LLMServingSim's vLLM format, read by metrics/records_io.h with its
// two-clock rule) and optionally timeseries.csv (1 s ticks of running / waiting) and
// sim_cluster_config.json (the inter-GPU link, for expert-parallel runs).
// The scenario is built from the run only: model (catalog name derived from
// meta.model), TP / DP / EP, max_num_seqs, max_num_batched_tokens, block size, the KV
// block count when meta.json states it, arrival times (engine clock) and token counts.
// Every assumption the replay makes is listed in ValidationResult::notes.
//
// Calibration (host overhead per step, a GPU time scale) is explicit: a Calibration
// value read from a file, with the runs it was fitted on; FitCalibration fits one on a
// set of runs (never the run under test when used leave-one-out).
// Thread model: pure functions over values; deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

// One measured request, times on the engine clock relative to the first arrival.
struct MeasuredRequest {
  Request request;          // id = line index, arrival, one unique prompt segment, output
  Duration ttft;
  Duration e2e;
  std::optional<Duration> tpot;  // (last - first) / (output - 1); absent for 1 token
};

struct MeasuredTick {
  double t = 0;          // seconds since the run started (the file's `t`)
  int64_t running = 0;
  int64_t waiting = 0;
};

struct MeasuredRun {
  std::string dir;
  std::string name;              // "<hw>/<model>" from the last two folder names
  std::string hf_model;          // meta.json model
  std::string gpu;               // meta.json hardware.device_name (optional): the GPU it ran on
  std::string catalog_model;     // catalog name it maps to
  int64_t tp = 1;
  int64_t dp = 1;
  int64_t ep = 1;                // tp * dp with enable_expert_parallel, else 1
  int64_t max_num_seqs = 0;
  int64_t max_num_batched_tokens = 0;
  int64_t block_size = 16;
  std::optional<int64_t> kv_blocks;  // meta.json kv_cache.num_gpu_blocks
  // The link between GPUs (EP collectives, TP all-reduces): sim_cluster_config.json
  // link_bw (GB/s) and link_latency (ns) when the run has that file, else the catalog's
  // pcie5. Read when ep > 1 or tp > 1.
  double link_bandwidth = 0;  // bytes/s
  Duration link_latency;
  std::string link_source;
  // With tp > 1: whether the GPUs reach each other's memory directly, from the catalog GPU
  // whose description begins with `gpu` (true, and noted, when none does).
  bool peer_to_peer = true;
  std::vector<MeasuredRequest> requests;
  std::vector<MeasuredTick> ticks;
  std::vector<std::string> notes;
};

// Reads and cross-checks a run directory. Missing or inconsistent files are located
// errors (exit 3): a missing meta.json field names the field, a requests.jsonl row the
// line, a count that disagrees with meta.json num_requests both.
Expected<MeasuredRun> LoadMeasuredRun(const std::string& dir);

// The default kernel-table folder of a run: <dir>/../../../perf/<hw>/<hf_model>/bf16/tp<tp>.
std::string DefaultProfileDir(const MeasuredRun& run);

struct Calibration {
  Duration host_overhead;      // CPU time per engine step the GPU waits for
  double gpu_time_scale = 1.0;  // multiplies every kernel-table step time
  std::vector<std::string> fitted_on;  // run names
  std::string source;          // file it came from, "" = built-in zero calibration
  std::string method;          // how it was fitted, in words
};
// {"schema": "fleetplan-calibration-v1", "host_overhead_us", "gpu_time_scale",
//  "fitted_on": [...], "method"}; unknown keys are errors.
Expected<Calibration> LoadCalibration(const std::string& path);
Json CalibrationJson(const Calibration& c);

// A profile whose meta.json (beside its tp folders) names another model than the run's
// meta.json, or another GPU (`gpu`) than the run's hardware.device_name when it has one, is refused (located at the
// profile's meta.json, exit 3) unless allow_mismatch, which replays it and says so in
// `notes`. Profiles measure one layer (their hf_overrides set num_hidden_layers: 1), so the
// layer count always comes from the catalog model the run's model maps to.
struct ValidationOptions {
  std::string profile_dir;  // "" = DefaultProfileDir(run); a bf16 folder gets /tp<tp>
  Calibration calibration;
  bool allow_mismatch = false;
};

struct ValidationResult {
  Json json;                       // the report (docs/validate.md has every key)
  double ttft_mean_error_pct = 0;  // signed, of the means
  double tpot_mean_error_pct = 0;
  double e2e_mean_error_pct = 0;
};

Expected<ValidationResult> ValidateRun(const MeasuredRun& run, const ValidationOptions& options);

// Fits host_overhead and gpu_time_scale on `runs` (each with its profile dir) by grid
// search minimising the mean over runs of |TPOT error| + |E2E error| of the means.
// `progress`, when set, is called after each grid point with (points done, points in all).
using FitProgressFn = std::function<void(int64_t done, int64_t total)>;
Expected<Calibration> FitCalibration(const std::vector<MeasuredRun>& runs,
                                     const std::vector<std::string>& profile_dirs,
                                     const FitProgressFn& progress = {});
// One warning per parameter of a fitted calibration that lies on the edge of the fit's
// grid (host_overhead at its largest value, gpu_time_scale at either end): the best value
// may lie beyond the grid, so the calibration is suspect. Empty when none does.
std::vector<std::string> CalibrationGridEdges(const Calibration& c);

}  // namespace fleetplan
