// FleetPlan: a scenario bound into a value — every resolved setting of the model,
// layout, memory plan, engine, policies, router, components and workload, with no YAML
// left inside, and a stable digest of its canonical form.
//
//   scenario.yaml -> Scenario (fleet/scenario.h: strict, located errors)
//                 -> Bind -> FleetPlan (memory plan: KV blocks per pool; step cost models
//                    built; invalidations resolved against the workload's names)
//                 -> Simulate (fleet/run.h) -> a typed result -> JSON, text
//
// Anything that varies a scenario (a sweep axis, a Python caller, a gate) changes plan
// fields — a pool's replicas, the router policy, the scheduler — and simulates again;
// it never edits YAML text. What Bind derives is listed in `notes` and reaches the
// report. The digest covers the canonical form (ToJson): the same plan, field by field,
// has the same digest on every machine; a changed field changes it.
// Thread model: a value; the step cost models it shares are immutable.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/fleet/traffic_split.h"
#include "fleetplan/memory/plan.h"
#include "fleetplan/perf/cuda_graphs.h"

namespace fleetplan {

// One pool, bound: its role, size, layout's fit, KV pool and step cost model.
struct BoundPool {
  PoolRole role = PoolRole::kMixed;
  int64_t replicas = 1;
  FitRequest fit;
  KvPoolSize kv;
  std::shared_ptr<const StepCostModel> cost;
  // engine.speculation with a draft model: the draft's step model and what it took from
  // the KV pool (kv above is already the pool it leaves).
  std::shared_ptr<const StepCostModel> draft_cost;
  std::optional<DraftMemory> draft_memory;
  // This pool's engine settings (kv_blocks and max_context still the pool's) when they are
  // not the plan's: set by callers that put another revision's pool beside the plan's
  // (canary); absent from a bound scenario.
  std::optional<EngineConfig> engine;
};

struct FleetPlan {
  // Provenance.
  std::string name;
  std::string source;           // the scenario file as the user named it
  std::string scenario_digest;  // sha256 of the scenario's bytes
  std::vector<ScenarioInput> catalog_files;  // user catalogs the names resolved against
  uint64_t seed = 0;

  std::vector<BoundPool> pools;  // file order; at least one serving pool
  size_t primary = 0;            // the headline pool: the first that serves requests
  EngineConfig engine;           // shared engine settings; kv_blocks is each pool's
  CudaGraphPolicy cuda_graphs;
  RouterConfig router;
  AdapterConfig adapters;
  DisaggregationConfig disaggregation;  // with a prefill pool
  ServeFaults serve_faults;             // faults.serve (the emulator only); in ToJson when set
  LinkSpec transfer_link;               // with a prefill pool
  ReplicationConfig replication;
  AdmissionConfig admission;  // resolved against the workload's names; in ToJson when enabled
  AutoscalingConfig autoscaling;  // off unless enabled; in ToJson when enabled
  std::vector<TimedInvalidation> invalidations;
  std::vector<ReplicaLoss> replica_losses;  // replicas that fail mid-run (set by callers: capacity)
  std::optional<TrafficSplitConfig> traffic_split;  // two revisions in one fleet (set by callers: canary)
  WorkloadSpec workload;
  SloSpec slo;
  OutputSpec output;
  std::vector<std::string> notes;  // what was derived or filled in, one sentence each

  const BoundPool& primary_pool() const { return pools[primary]; }
  int64_t replicas() const;
  // The fleet the kernel builds: one ReplicaSetup per replica, in pool order.
  FleetSetup Setup() const;
  // The canonical form the digest covers.
  Json ToJson() const;
  // sha256 of CanonicalJson(ToJson()).
  Expected<std::string> Digest() const;
};

// Binds a validated scenario. Errors: a pool whose layout leaves no memory for KV
// (kCheckFailed, with the arithmetic's pointer), a step model that cannot be built, an
// invalidation that names an unknown tenant or adapter (located).
Expected<FleetPlan> Bind(const Scenario& scenario);

}  // namespace fleetplan
