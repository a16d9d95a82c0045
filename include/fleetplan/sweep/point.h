// One point of a sweep: a configuration (one value per axis) with one seed, bound from the
// base scenario plus the spec's overrides plus the point's axis values, simulated, and
// reduced to a row of figures (docs/sweep.md "Points").
//
// A row is canonical JSON with `index`, `configuration`, `values`, `seed`, `status`
// ("ok" | "invalid" | "failed"), `reason`, and for ok points `gpus`, per-class
// `attainment`, `ttft/tpot/e2e` percentiles, `goodput_rps`, and fleet `goodput_rps`,
// `goodput_per_gpu`, `cost_per_hour` (with a price), `meets_slo`; with a search, the
// `max_rate` found, its bracket and every probe. A row depends only on the spec and the
// point's index: points may run in any order, on any thread or rank.
// Thread model: pure functions of an immutable spec; safe to call concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/sweep/spec.h"

namespace fleetplan {

struct PointTask {
  int64_t index = 0;
  int64_t configuration = 0;
  size_t seed_index = 0;
  uint64_t seed = 0;
  std::vector<size_t> axis_values;  // index into each axis' values
};

// REQUIRES: 0 <= index < spec.points().
PointTask PointAt(const SweepSpec& spec, int64_t index);

// The point's bound plan: base + overrides + axis values (+ `extra`, applied last).
// Errors are the scenario reader's and Bind's, located where the spec writes the value.
Expected<FleetPlan> BindPoint(const SweepSpec& spec, const PointTask& point, const std::vector<YamlOverride>& extra = {});

// The row of a point that cannot be bound (status "invalid"), or nullopt when it binds;
// then `gpus` (when given) receives the GPUs its plan occupies, the runner's guess of its cost.
std::optional<Json> CheckPoint(const SweepSpec& spec, const PointTask& point, int64_t* gpus = nullptr);

// Binds, simulates (and searches) a point; never fails: errors become the row's status.
Json RunPoint(const SweepSpec& spec, const PointTask& point);

// GPUs a plan occupies: replicas x tp x pp over its pools.
int64_t PlanGpus(const FleetPlan& plan);

}  // namespace fleetplan
