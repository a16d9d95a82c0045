// WorkloadSpec: the scenario's `workload:` section, validated.
//
// Either a synthetic workload (arrival + classes) or a trace replay (trace):
//
//   workload:
//     duration: 10m                 # no arrival at or after this time
//     requests: 100000              # optional cap on the number of requests
//     arrival: {process: poisson, rate: 8/s}        # see arrival.h, or:
//     # arrival: {process: closed-loop, users: 64, think_time: {exponential: {mean: 2s}}}
//     tenants: {count: 20, popularity: {zipf: 1.1}}  # popularity: {zipf: s} | uniform
//     adapters: {count: 8, popularity: {zipf: 1.0}, fraction: 0.3}
//     classes:
//       interactive:
//         share: 0.70               # shares are weights; they must sum to 1 (+-1e-6)
//         priority: 0               # optional, larger = more important
//         prompt:                   # segments, in order (kinds below)
//           - {segment: tenant-instructions, tokens: 1500}
//           - {segment: unique, tokens: {lognormal: {median: 300, p99: 2000}}}
//         output_tokens: {lognormal: {median: 150, p99: 800}}
//         deadline: 30s             # optional: arrival + draw (a duration slot)
//         cancel: {probability: 0.05, after: {exponential: {mean: 20s}}}   # optional
//         session: {turns: {uniform: [2, 6]}, think_time: {exponential: {mean: 30s}}}
//     # or: trace: {file: t.jsonl, format: mooncake, class: interactive, speed: 2}
//
// Segment kinds: `system` (one content for the whole workload), `tenant-instructions`
// (one per tenant; needs tenants), `document` (pool: N distinct documents per tenant,
// popularity: {zipf: s} (default zipf 1.0) or uniform), `unique` (fresh content), and
// `history` (sessions only, exactly once: where the conversation grows; turn k's prompt
// is turn k-1's whole prompt, then its answer, then the segments after `history`,
// drawn anew). A document's or tenant instruction's length is a property of that
// document/tenant: when `tokens` is a distribution it is drawn once per document from a
// stream forked by the document's identity, so equal content always has equal length.
// Value slots (tokens, durations) are documented in slot.h.
// Thread model: immutable value after parsing; copyable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/distributions.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/workload/arrival.h"
#include "fleetplan/workload/slot.h"
#include "fleetplan/workload/trace.h"

namespace fleetplan {

enum class SegmentSource : int {
  kSystem = 0,
  kTenantInstructions = 1,
  kDocument = 2,
  kUnique = 3,
  kHistory = 4,
};

struct SegmentSpec {
  SegmentSource source = SegmentSource::kUnique;
  std::optional<TokenSlot> tokens;     // absent only for history
  int64_t pool = 0;                    // document: distinct documents per tenant
  std::optional<Zipf> popularity;      // document: which document (rank 1 = index 0)
};

struct SessionSpec {
  TokenSlot turns = TokenSlot::Fixed(1);                 // turns per session, >= 1
  DurationSlot think_time = DurationSlot::Fixed(Duration());  // gap before the next turn (open loop: since the previous
                            // turn's arrival; closed loop: since its completion)
};

struct CancelSpec {
  double probability = 0;   // in [0, 1]
  DurationSlot after = DurationSlot::Fixed(Duration());  // cancel_at = arrival + draw
};

struct ClassSpec {
  std::string name;
  double share = 0;
  int32_t priority = 0;
  std::vector<SegmentSpec> prompt;   // non-empty
  TokenSlot output_tokens = TokenSlot::Fixed(1);
  std::optional<DurationSlot> deadline;
  std::optional<CancelSpec> cancel;
  std::optional<SessionSpec> session;
};

struct PopulationSpec {
  int64_t count = 0;  // >= 1
  Zipf popularity;    // ranks 1..count; rank r is handle r-1
};

struct AdaptersSpec {
  PopulationSpec population;
  double fraction = 1.0;  // share of requests that name an adapter, in [0, 1]
};

struct ClosedLoopSpec {
  int64_t users = 0;  // concurrent users, >= 1
  DurationSlot think_time = DurationSlot::Fixed(Duration());  // completion -> next request
};

enum class ArrivalMode : int { kOpenLoop = 0, kClosedLoop = 1, kTrace = 2 };

struct TraceReplaySpec {
  std::string file;              // resolved against the YAML file's directory
  TraceReadOptions options;      // format (nullopt = detect), class, speed
};

struct WorkloadSpec {
  std::optional<Duration> duration;
  std::optional<int64_t> requests;
  ArrivalMode mode = ArrivalMode::kOpenLoop;
  std::shared_ptr<const ArrivalProcess> open_loop;  // set iff mode == kOpenLoop
  std::optional<ClosedLoopSpec> closed_loop;         // set iff mode == kClosedLoop
  std::optional<TraceReplaySpec> trace;              // set iff mode == kTrace
  std::optional<PopulationSpec> tenants;
  std::optional<AdaptersSpec> adapters;
  std::vector<ClassSpec> classes;                    // document order; empty for traces
  Json description;                                  // the section as parsed, for reports
};

// Validates the `workload:` node. Errors are located (file:line:col: path: message).
Expected<WorkloadSpec> ParseWorkloadSpec(const YamlNode& workload_node);

// Names of the segment kinds, in SegmentSource order.
const std::vector<std::string>& SegmentSourceNames();

}  // namespace fleetplan
