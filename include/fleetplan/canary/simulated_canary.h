// Simulated canary evidence (`fleetplan rollout simulate`; docs/rollout.md "Simulated
// canary evidence"): two scenarios — the baseline's fleet and the candidate's — run on
// the same arrivals, and a traffic split chooses whose measurement of each request is
// reported.
//
//   BASE.yaml ─► Bind ─► Simulate (every request) ─┐  request id ─► SplitAssignment
//   CAND.yaml ─► Bind ─► Simulate (every request) ─┤  (fleet/traffic_split.h: a hash of
//                                                  │   (seed, id), never std::hash)
//     DIR/candidate.jsonl  the candidate run's records of the requests assigned to it
//     DIR/baseline.jsonl   the baseline run's records of all the others
//     DIR/canary.yaml      canary-metrics evidence (docs/evidence.md header) pinning both
//                          files by digest as the ladder reads them, `simulated: true`, the
//                          split, and both scenarios' digests in its source
//
// What it models: the two revisions' latencies on one window of traffic, each fleet
// under the full load of that window, sampled on disjoint requests in the split's
// proportion — the sample sizes and the request mix a canary at that split would
// compare. What it does not: a candidate fleet that sees only its share of the load (its
// queueing at 1% of the traffic), interference between revisions that share hardware,
// warm-up, or anything the scenarios do not model. Records are the same format and
// writer as `fleetplan simulate` (docs/records.md).
//
// The two scenarios must generate the same requests (CheckSameWindow). Every output byte
// is a function of the inputs: no wall clock, no host facts.
// Thread model: single-threaded; no process globals.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {

// Ok when both scenarios generate the same requests: the same workload section as parsed
// (report.json `workload`), the same trace bytes for a trace replay, an open loop or a
// trace (a closed loop's arrivals follow its own fleet's completions), and the same seed
// unless `seed` overrides both. Errors (InvalidInput) are located in the candidate's file
// at the first difference and name the baseline's value:
//   "cand.yaml:13:26: workload.arrival.rate: '8/s' here, '6/s' in the baseline (base.yaml): ..."
Status CheckSameWindow(const Scenario& baseline, const Scenario& candidate, std::optional<uint64_t> seed);

// "1%" -> 0.01. Errors name `flag`: a share strictly between 0% and 100%.
Expected<double> ParseSplitShare(const std::string& flag, const std::string& text);
// 0.01 -> "1%" (shortest form).
std::string FormatShare(double share);

struct SimulatedCanaryOptions {
  double split = 0;                  // the candidate's share, (0, 1)
  std::optional<uint64_t> seed;      // both runs' seed (default: the scenarios')
  std::optional<Duration> duration;  // stop arrivals here (both runs)
  UtcTime observed_at;
  std::optional<UtcTime> expires_at;  // REQUIRES: after observed_at
  std::string out_dir;
};

struct SimulatedSide {
  std::string scenario;         // as the user named it
  std::string scenario_digest;  // sha256 of its bytes
  std::string file;             // the records file written
  std::string digest;           // of the records file's bytes
  int64_t records = 0;
};

struct SimulatedCanary {
  double split = 0;
  uint64_t seed = 0;
  int64_t requests = 0;  // every request of the window (each run saw all of them)
  SimulatedSide candidate;
  SimulatedSide baseline;
  std::string evidence_file;
  std::string evidence_digest;
};

// REQUIRES: 0 < options.split < 1. Errors: CheckSameWindow's; a scenario that does not
// bind; an output folder that cannot be written.
Expected<SimulatedCanary> SimulateCanary(const Scenario& baseline, const Scenario& candidate,
                                         const SimulatedCanaryOptions& options);
// {"kind": "fleetplan-rollout-simulate", "split", "seed", "requests", "candidate": {...},
//  "baseline": {...}, "evidence": {file, digest}}.
Json SimulatedCanaryJson(const SimulatedCanary& c);

}  // namespace fleetplan
