// RunScenario: a scenario in, a simulated fleet's report out.
//
// Builds, in order: the memory plan of one replica (memory/plan.h: KV blocks per
// replica), the step cost model (perf/factory.h), the engines and the router
// (simulation.h), the request source (workload/source.h) and the report builder
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

#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {

struct RunOptions {
  std::optional<std::string> out_dir;   // overrides output.dir
  std::optional<uint64_t> seed;         // overrides the scenario's seed
  std::optional<bool> write_requests;   // overrides output.requests
  std::optional<bool> write_timeline;   // overrides output.timeline
  std::optional<int64_t> requests;      // stop the workload after this many requests
  std::optional<Duration> duration;     // stop arrivals at this time
  bool write_files = true;              // false: compute the report only (tests, sweeps)
  ProgressFn progress;                  // called during long runs (stderr progress line)
};

struct RunResult {
  Json report;                        // what report.json holds
  std::string summary;                // the human table
  std::vector<std::string> files;     // written, in order
  int64_t requests = 0;
  uint64_t events = 0;
  SimTime simulated_end;
};

Expected<RunResult> RunScenario(const Scenario& scenario, const RunOptions& options);

}  // namespace fleetplan
