// Simulate: a bound plan (fleet_plan.h) in, a simulated fleet's report out; RunScenario
// is Bind + Simulate.
//
// Builds the fleet the plan describes (simulation.h: replica table, routers,
// components), the request source (workload/source.h) and the report builder
// (metrics/report.h); runs the simulation; then writes, under the output folder,
//   report.json      canonical JSON: scenario identity and digest, seed, workload
//                    description, memory plan, step model parameters, per-class and
//                    fleet figures, engine statistics per replica, derived values;
//   requests.jsonl   one record per request (docs/records.md), when asked;
//   timeline.json    Chrome trace events (timeline.h), when asked.
// report.json and requests.jsonl depend only on the scenario and the seed: no wall
// clock, no host facts, no unordered iteration (test: byte-identical across runs).
// Thread model: single-threaded; no process globals (several runs may share a process).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/overload.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/fleet/timeseries.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/metrics/report.h"

namespace fleetplan {

// A further file of the run's folder, rendered from report.json (simulate's report.html).
// It is written with the run's other files, as one set (core/output_folder.h). With no
// `render` the run does not write it, and a copy an earlier run left is removed.
struct RunPage {
  std::string name;  // a file name in the output folder
  std::function<Expected<std::string>(const Json& report)> render;
};

struct RunOptions {
  std::optional<std::string> out_dir;   // overrides output.dir
  std::optional<uint64_t> seed;         // overrides the scenario's seed
  std::optional<bool> write_requests;   // overrides output.requests
  std::optional<bool> write_timeline;   // overrides output.timeline
  std::optional<int64_t> requests;      // stop the workload after this many requests
  std::optional<Duration> duration;     // stop arrivals at this time
  bool write_files = true;              // false: compute the report only (tests, sweeps)
  // Recount the fleet's invariants (Simulation::CheckInvariants) after every event; the
  // first violation fails the run (property tests; costs O(fleet state) per event).
  bool check_invariants_every_event = false;
  ProgressFn progress;                  // called during long runs (stderr progress line)
  // Ends the run early: called with each request's record as the request ends; when it
  // returns true the simulation stops there (RunResult::stopped_early). The report then
  // covers the requests ended so far; the others are left where they are. A search uses
  // it to end a probe whose verdict can no longer change.
  std::function<bool(const RequestRecord&)> stop_when;
  // Called with every request's record as the request ends, in the order requests.jsonl
  // lists them, whether or not files are written (the Python module keeps them this way).
  // Classes and tenants are handles into RunResult::names.
  std::function<void(const RequestRecord&)> on_record;
  std::vector<RunPage> pages;  // written with the run's files (when write_files)
  // The requests, in place of the plan's workload (which then only names the run): a
  // caller that replays a given list of requests (validate's benchmark client). Its
  // classes need no SLO. REQUIRES: outlives the call; a fresh source (nothing taken).
  RequestSource* source = nullptr;
};

// One replica at the end of a run.
struct ReplicaResult {
  int32_t id = 0;
  PoolRole role = PoolRole::kMixed;
  ReplicaState state = ReplicaState::kReady;
  ReplicaFigures figures;
  EngineStats engine;
  int64_t kv_blocks = 0;
  double ttft_p99_ms = 0;  // nearest rank over the requests that got a first token here
};

// A run's typed result: report.json and the text summary are both rendered from it.
struct FleetResult {
  Report report;    // per-class and fleet figures (metrics/report.h)
  Duration span;    // first arrival -> end
  EngineStats engine;  // fleet total; `completed` excludes prompts handed off to decode
  int64_t kv_blocks = 0;
  std::vector<ReplicaResult> replicas;
  std::vector<std::string> component_lines;  // each component's summary, from its figures
  OverloadDiagnosis overload;  // whether the fleet kept up with its arrivals (overload.h)
};

struct RunResult {
  FleetResult result;
  Json report;                        // what report.json holds
  std::string summary;                // the human table
  std::vector<std::string> files;     // written, in order
  WorkloadNames names;                // what records' class and tenant handles name
  int64_t requests = 0;
  uint64_t events = 0;
  SimTime simulated_end;
  bool stopped_early = false;  // stop_when ended the run
  std::string out_dir;                        // where the files went (empty: none written)
  std::optional<TimeSeriesData> timeseries;   // report.json `timeseries` (absent: none kept)
};

Expected<RunResult> Simulate(const FleetPlan& plan, const RunOptions& options);
// Removes `path` when this run does not write it and it is a regular file (an earlier
// run's output), adding it to `removed`; anything else there is left alone. Shells that
// write further files beside report.json (report.html) use it too.
Status RemoveStaleOutput(const std::string& path, bool written, std::vector<std::string>* removed);
Expected<RunResult> RunScenario(const Scenario& scenario, const RunOptions& options);

}  // namespace fleetplan
