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
// Calibration (host overhead per step as a function of the batch, a GPU time scale) is
// explicit: a Calibration value read from a file, with the runs it was fitted on;
// FitCalibration fits one on a set of runs (never the run under test when used
// leave-one-out). The report splits the error by step kind (DecomposeByStepKind).
// Thread model: pure functions over values; deterministic.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/perf/host_overhead.h"
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
  bool moe = false;              // the catalog model is a mixture of experts (its DP ranks step together)
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

// The catalog model a Hugging Face name maps to: the lowercased name after the
// organisation, shortened at '-' until the built-in catalog knows it
// ("Qwen/Qwen3-30B-A3B-Instruct-2507" -> "qwen3-30b-a3b"); nullopt when no prefix is known.
std::optional<std::string> CatalogModelForHfName(std::string_view hf);

// The default kernel-table folder of a run: <dir>/../../../perf/<hw>/<hf_model>/bf16/tp<tp>.
std::string DefaultProfileDir(const MeasuredRun& run);

struct Calibration {
  // CPU time per engine step the GPU waits for, a function of the step's batch
  // (perf/host_overhead.h: per step + per sequence + per prompt token).
  HostOverhead host;
  double gpu_time_scale = 1.0;  // multiplies every kernel-table step time
  std::vector<std::string> fitted_on;  // run names
  std::string source;          // file it came from, "" = built-in zero calibration
  std::string method;          // how it was fitted, in words
};
// Version 2 (what CalibrationJson writes):
//   {"schema": "fleetplan-calibration-v2", "host_overhead_us" (per step),
//    "host_per_sequence_us", "host_per_prefill_token_ns", "gpu_time_scale",
//    "fitted_on": [...], "method"}
// Version 1 ("fleetplan-calibration-v1") is read too: it has host_overhead_us alone (a
// constant host overhead); the batch terms in a v1 file are an error naming v2. Unknown
// keys and schemas are errors located at the file and the key.
Expected<Calibration> LoadCalibration(const std::string& path);
Json CalibrationJson(const Calibration& c);

// ---------------------------------------------------------------------------------------
// Error by step kind (docs/validate.md "Error by step kind")
//
// A step of the replay is prefill-only (no decode chunk), decode-only (no prefill chunk)
// or mixed. Values reach JSON by name (StepKindName): explicit, never renumber.
enum class StepKind : int { kPrefill = 0, kDecode = 1, kMixed = 2 };
inline constexpr size_t kStepKinds = 3;
StepKind ClassifyStep(const StepShape& shape);
std::string_view StepKindName(StepKind kind);  // "prefill", "decode", "mixed"

// One request of a replay, for the attribution: its replica, arrival, first token and
// finish in the replay, and the measured durations of its two spans.
struct KindRequest {
  int32_t replica = 0;
  SimTime arrival;
  SimTime first_token;
  SimTime finish;
  Duration measured_ttft;                   // arrival -> first token, measured
  std::optional<Duration> measured_decode;  // first -> last token, measured (output >= 2)
};

// A span of every request is cut by the steps of its replica that ended inside it:
//   TTFT span   (arrival, first_token]: each such step contributes
//               min(step end, first token) - max(step start, arrival) to its kind; the
//               rest of the span (no step in flight) is "idle".
//   decode span (first_token, finish]: the same with the span's bounds.
// Per span and kind:
//   predicted_ms    mean over requests of the predicted time in steps of that kind;
//   share_pct       that time over all predicted time of the span;
//   contribution_pct  each request's error (predicted - measured) split over the kinds in
//                   proportion to its predicted time in each, summed over requests and
//                   divided by the sum of measured spans: the kinds' contributions add
//                   up to the span's total mean error (total_error_pct);
//   step_error_pct  the error (predicted - measured) / measured of that kind's steps
//                   that best explains the measured spans: least squares over requests
//                   of (measured - sum_k u_k predicted_k) / measured, solved for u_k,
//                   error = 1 / u_k - 1 (null when the kind has under 1 % of the
//                   measured time, or is collinear with the others).
// Idle time is only in the TTFT span (the decode span has a step in flight throughout).
struct KindSpanFigures {
  std::array<double, kStepKinds + 1> predicted_ms{};  // index kStepKinds = idle
  std::array<double, kStepKinds + 1> contribution_pct{};
  std::array<std::optional<double>, kStepKinds + 1> step_error_pct{};
  std::array<int64_t, kStepKinds> steps{};  // steps of each kind touching a span
  double measured_ms = 0;                   // mean measured span
  double total_error_pct = 0;               // of the mean span
  int64_t requests = 0;
};
struct KindDecomposition {
  std::array<int64_t, kStepKinds> steps{};        // replay steps of each kind
  std::array<double, kStepKinds> step_mean_ms{};  // their mean duration (host + GPU)
  KindSpanFigures ttft;
  KindSpanFigures decode;
  Json ToJson() const;
};
// REQUIRES: `steps` in order of start per replica; each request's replica has steps
// covering its decode span.
KindDecomposition DecomposeByStepKind(const std::vector<StepRecord>& steps, const std::vector<KindRequest>& requests);

// A profile whose meta.json (beside its tp folders) names another model than the run's
// meta.json, or another GPU (`gpu`) than the run's hardware.device_name when it has one, is refused (located at the
// profile's meta.json, exit 3) unless allow_mismatch, which replays it and says so in
// `notes`. Profiles measure one layer (their hf_overrides set num_hidden_layers: 1), so the
// layer count always comes from the catalog model the run's model maps to.
struct ValidationOptions {
  std::string profile_dir;  // "" = DefaultProfileDir(run); a bf16 folder gets /tp<tp>
  Calibration calibration;
  bool allow_mismatch = false;
  // Replays the DP ranks of an MoE model as independent replicas instead of in lock-step
  // (an ablation: what the lock-step changes).
  bool independent_dp_ranks = false;
};

struct ValidationResult {
  Json json;                       // the report (docs/validate.md has every key)
  double ttft_mean_error_pct = 0;  // signed, of the means
  double tpot_mean_error_pct = 0;
  double e2e_mean_error_pct = 0;
  KindDecomposition kinds;  // json["by_step_kind"]
};

Expected<ValidationResult> ValidateRun(const MeasuredRun& run, const ValidationOptions& options);

// Fits the host overhead's three terms and gpu_time_scale on `runs` (each with its
// profile dir; "" = DefaultProfileDir), never on a run it is then used to predict.
// Method (docs/validate.md "Calibration"): given a replay's schedule, a request's
// predicted TPOT is linear in the parameters,
//
//   TPOT_i = (1 / (n_i - 1)) * sum over the steps j of its decode span of
//            (per_step + per_sequence * S_j + per_prefill_token * P_j + scale * G_j)
//
// (S_j sequences, P_j prompt tokens, G_j kernel-table GPU time of step j), so the fit
// solves a least-squares problem with every parameter >= 0 (each run weighted equally,
// each request by its run's mean measured TPOT), replays every run with the result and
// solves again (after kFitFullRounds rounds, moving only halfway to each new solution, so
// the schedule can settle), until the solution differs from the parameters it was replayed with
// by at most kFitTolerance of their value (at most kFitRounds rounds). When it does not
// settle (a replay's schedule is not smooth in the parameters), the result is the mean of
// the last kFitAveraged rounds' solutions and `method` states their spread.
// With two or more runs the fit is then shrunk toward no calibration (per-term host
// overhead 0, scale 1) by the share of kShrinkShares that carries best to a run it was not
// fitted on: each run in turn is held out, the others are fitted the same way, and the
// share whose held-out mean TPOT errors have the least sum of squares is kept (ties: the
// smaller). What the runs agree on is kept; what one run teaches and another contradicts
// is not. `method` states the share and every held-out error; `cross_validate` false
// keeps the fit whole. `progress` is called after each replay with (replays done, the most
// replays the fit may take).
using FitProgressFn = std::function<void(int64_t done, int64_t total)>;
Expected<Calibration> FitCalibration(const std::vector<MeasuredRun>& runs,
                                     const std::vector<std::string>& profile_dirs,
                                     const FitProgressFn& progress = {}, bool cross_validate = true);
inline constexpr int64_t kFitRounds = 24;
inline constexpr int64_t kFitFullRounds = 8;
inline constexpr int64_t kFitAveraged = 12;
inline constexpr double kFitTolerance = 1e-3;
// Shares of the fit tried by the cross-validation (0: no calibration, 1: the fit whole).
inline constexpr std::array<double, 5> kShrinkShares = {0.0, 0.25, 0.5, 0.75, 1.0};
// A fitted gpu_time_scale outside this range says the tables do not describe the runs'
// GPU (a profile of another GPU or model?).
inline constexpr double kPlausibleScaleLo = 0.70;
inline constexpr double kPlausibleScaleHi = 1.30;
// One warning per fitted value that deserves a look before the file is used: a
// gpu_time_scale outside [kPlausibleScaleLo, kPlausibleScaleHi], and a fit that had not
// settled after kFitRounds rounds (`converged` false, or its method says so). Empty when
// none.
std::vector<std::string> CalibrationWarnings(const Calibration& c, bool converged = true);

// The run as the model predicts it under `truth`: `like`'s requests (arrivals, token
// counts) with their measured TTFT, E2E and TPOT replaced by the replay's. A run whose
// true calibration is known, for testing the fit. Its ticks are dropped.
Expected<MeasuredRun> SyntheticRun(const MeasuredRun& like, const std::string& profile_dir, const Calibration& truth);

}  // namespace fleetplan
