// `fleetplan experts` as a library call: contiguous vs balanced placement of observed
// routing counts, their loads and dispatch bytes, and the price of moving from one to the
// other as a generation-numbered update.
//
// JSON keys scripts rely on (stable): contiguous.{loads, max_load, placement},
// balanced.{loads, max_load, placement, replicas}, dispatch_bytes.{contiguous, balanced,
// bytes_per_assignment}, update.{generation, copies_loaded, copy_bytes, copy_ms,
// saved_ms_per_step, break_even_steps, horizon_steps, worth}.
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/plan/experts.h"

namespace fleetplan {

// Activations cross the dispatch in 16 bits (perf/roofline.h kActivationDType).
inline constexpr int64_t kAssignmentElementBytes = 2;
// Hidden size assumed for the bytes of an assignment when neither a model nor a hidden
// size is given: 4096, the width of the 7B-class and Mixtral-class models (stated in
// the output as derived).
inline constexpr int64_t kDefaultExpertsHidden = 4096;

struct ExpertsRequest {
  ExpertCounts counts;
  int64_t ranks = 1;
  int64_t redundant = 0;                  // extra expert slots in all (multiple of ranks)
  Bytes bytes_per_assignment;             // hidden × kAssignmentElementBytes
  std::optional<ExpertCostInputs> costs;  // pricing; absent = the update is not priced
  std::vector<std::string> derived;
};

struct ExpertsResult {
  ExpertsRequest request;
  ExpertPlacement contiguous;
  ExpertPlacement balanced;
  ExpertLoad contiguous_load;
  ExpertLoad balanced_load;
  int64_t update_generation = 0;  // generation the balanced map gets as an update
  int64_t ranks_to_acknowledge = 0;
  std::optional<UpdatePrice> price;
};

// Errors: ValidateExpertShape's.
Expected<ExpertsResult> AnalyzeExperts(const ExpertsRequest& request);

std::string ExpertsReportText(const ExpertsResult& result);
Json ExpertsReportJson(const ExpertsResult& result);

}  // namespace fleetplan
