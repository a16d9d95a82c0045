// The step model a scenario's pool runs: `engine.step_model` when the scenario states one,
// else the default for its GPU (perf/factory.h DefaultStepModel), built for the pool's fit
// (model, formats, layout) with the scenario's links and CUDA graphs. What fleet_plan.h's
// Bind gives each pool; the decisions call it to price a layout they have not bound.
// Thread model: pure function; the model is immutable.
#pragma once

#include <memory>

#include "fleetplan/core/status.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

Expected<std::shared_ptr<const StepCostModel>> StepModelOf(const Scenario& s, const FitRequest& fit);

}  // namespace fleetplan
