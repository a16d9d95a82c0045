// A rollback exercised (`fleetplan rollout LADDER.yaml --as-of T --exercise-rollback DIR`;
// docs/rollout.md "Rollback exercised"): the ladder's decision to roll back is carried out
// on a simulated fleet that holds both revisions, and what happened is observed.
//
//   baseline scenario's pools ─┐                        ┌─ ids [0, b): baseline replicas
//   candidate scenario's pools ┴─► one FleetPlan ───────┴─ ids [b, n): candidate replicas
//   (each pool with its own engine, KV pool and step model; each revision its own router)
//   0 ─────── split at the stage's traffic ─────── rollback_at ─── baseline only ──► end
//                                                  │ candidate replicas drained (traffic
//                                                  │ removed); what they hold after the
//                                                  │ grace is requeued to the baseline;
//                                                  │ they stay listed, gone, with figures
//
// The split and the rollback are the fleet's traffic-split component
// (fleet/traffic_split.h); this layer builds the fleet, runs it once through Simulate (so
// DIR/requests.jsonl and DIR/report.json are the simulator's own files) and observes,
// from every request's record and the replica table at the end:
//   - after the rollback: how many requests arrived, how many were served by a baseline
//     replica, by a candidate replica (0 when the rollback worked), or not routed;
//   - the requests the candidate still held: finished there after the rollback (within
//     the grace), requeued to the baseline, cancelled, rejected;
//   - every replica: its revision, its final state (the candidate's: gone, still listed:
//     the namespace retained) and its routed and completed counts.
// It writes DIR/rollback.json, evidence (kind rollback-exercise, observed at the ladder's
// as-of, simulated: true) pinning requests.jsonl and report.json by digest.
//
// What it does not model: the deployment system's own actions (traffic-weight propagation
// delays, pods terminating, connections draining at the load balancer); the fleet is the
// scenarios' model, and the candidate's replicas are mixed-role engine replicas.
// Thread model: single-threaded; deterministic (same inputs, byte-identical files).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/rollout/ladder.h"

namespace fleetplan {

struct RollbackExerciseOptions {
  std::string out_dir;
  double share = 0;                     // the candidate's share until the rollback, [0, 1]
  std::optional<Duration> rollback_at;  // default: half the workload's duration
  Duration grace;                       // what the candidate holds then is requeued (0: at once)
  std::optional<uint64_t> seed;         // default: the scenarios'
  UtcTime observed_at;                  // the evidence's observed_at
  std::string source;                   // the evidence's source (who asked, which ladder)
  std::string candidate_revision = "candidate";
  std::string candidate_namespace = "candidate";  // retained after the rollback
  std::string baseline_revision = "baseline";
  // Recount the fleet's invariants (the split's among them) after every event (tests).
  bool check_invariants_every_event = false;
};

struct ExercisedReplica {
  int32_t id = 0;
  bool candidate = false;
  ReplicaState state = ReplicaState::kReady;
  int64_t routed = 0;
  int64_t completed = 0;
  int64_t requeued = 0;  // given up by the drain and routed again (to the baseline)
  int64_t cancelled = 0;
  int64_t rejected = 0;
};

struct RollbackExercise {
  std::string candidate_revision, candidate_namespace, baseline_revision;
  double share = 0;
  uint64_t seed = 0;
  SimTime rollback_at;
  Duration grace;
  int64_t requests = 0;
  // Requests that arrived before the rollback: assigned to the candidate by the split,
  // and where they ended (a requeued one ends on the baseline).
  int64_t before = 0;
  int64_t before_assigned_candidate = 0;
  int64_t before_ended_candidate = 0;
  int64_t before_ended_baseline = 0;
  // Requests that arrived at or after it.
  int64_t after = 0;
  int64_t after_assigned_candidate = 0;
  int64_t after_served_baseline = 0;   // ended on a baseline replica (any status)
  int64_t after_served_candidate = 0;  // ended on a candidate replica: 0 when rolled back
  int64_t after_not_routed = 0;        // rejected before any replica
  int64_t after_ok = 0;
  // What the candidate held at the rollback.
  int64_t candidate_ended_after_rollback = 0;  // records on its replicas ending after it
  int64_t requeued_to_baseline = 0;
  int64_t drain_cancelled = 0;
  int64_t drain_rejected = 0;
  std::optional<SimTime> last_candidate_end;  // the last time a candidate replica ended a request
  std::vector<ExercisedReplica> replicas;     // every replica, in id order
  std::string records_file, records_digest;
  std::string report_file, report_digest;
  std::string evidence_file, evidence_digest;
};

// Runs the exercise and writes DIR/requests.jsonl, DIR/report.json, DIR/rollback.json.
// Errors (InvalidInput, located in the scenario that has it): CheckSameWindow's; a
// feature the one-fleet model does not carry (prefill/decode pools, autoscaling,
// admission, adapters, hot-prefix replication, cache invalidations); engine or router
// settings both revisions must share in one fleet (block size, prefix cache, telemetry
// delay, precise routing); a rollback time past the workload.
Expected<RollbackExercise> ExerciseRollback(const Scenario& baseline, const Scenario& candidate,
                                            const RollbackExerciseOptions& options);
// rollout.json `rollback.exercised`.
Json RollbackExerciseJson(const RollbackExercise& e);

struct LadderExerciseOptions {
  std::string out_dir;
  std::optional<Duration> rollback_at;
  Duration grace;
  UtcTime as_of;
};
// When `rollout` (EvaluateLadder's result) decides rollback: loads the ladder's
// candidate.scenario and baseline.scenario, exercises the rollback at the traffic of the
// stage that failed, and returns `rollout` with rollback.exercised added. Any other
// decision returns it unchanged. Errors: a ladder without both scenarios (kUsage,
// located at its `candidate` section), and ExerciseRollback's.
Expected<Json> ExerciseLadderRollback(const Ladder& ladder, Json rollout, const LadderExerciseOptions& options);

}  // namespace fleetplan
