// Capacity: how many replicas a demand needs, where they go so that the fleet survives
// the declared loss, what it costs, and whether it does survive when simulated
// (docs/capacity.md).
//
//   spec ─► per layout: one replica's capacity (a max-rate search, a sweep file or a
//           declared rate) and its resource limits from the bound plan
//        ─► requirements: prompt tokens, decode tokens, concurrency (KV) and the SLO's
//           measured rate, each to a replica count; the binding one named (a tie after
//           rounding is a tie)
//        ─► placement: replicas per failure domain such that every loss scenario of the
//           survive rule leaves each region's demand carried (PlaceForLosses)
//        ─► price (on-demand and committed), budget: a violation reports the unsafe
//           required fleet and never shrinks it
//        ─► verification: the chosen fleet simulated with the deciding loss mid-run
// The cheapest layout that fits wins. A price changes cost, never replica demand.
// Thread model: SizeCapacity runs layouts on its own threads; results are the same for
// any thread count. Deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/capacity/spec.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/fleet/fleet_plan.h"

namespace fleetplan {

// The workload's mean request: prompt and output tokens over the first requests the
// scenario's workload draws (its seed), as capacity sizes the prompt, decode and
// concurrency requirements. Errors (located at `where`): a closed-loop workload, none drawn.
struct WorkloadShape {
  double prompt_tokens = 0;
  double output_tokens = 0;
  int64_t sampled = 0;
};
Expected<WorkloadShape> MeasureShape(const WorkloadSpec& workload, uint64_t seed, const YamlNode& where);
Expected<WorkloadShape> MeasureShape(const FleetPlan& plan, const YamlNode& where);  // its workload and seed

// One resource's need, expressed as replicas.
struct DimensionRequirement {
  std::string name;        // "prompt" | "decode" | "concurrency" | "slo"
  std::string unit;        // of demand and per_replica
  double demand = 0;       // fleet total at peak
  double per_replica = 0;  // what one replica carries (before headroom)
  double per_replica_rps = 0;  // the same, as requests per second of the workload's mix
  double exact_replicas = 0;   // demand / (per_replica x (1 - headroom))
  int64_t replicas = 0;        // ceil(exact_replicas)
  std::string basis;           // how per_replica was derived, one sentence
};

// The requirements that bind: the largest replica count; every dimension that reaches
// the same count after rounding is named too (a tie is not a winner).
std::vector<std::string> BindingDimensions(const std::vector<DimensionRequirement>& requirements);

// One loss the fleet must survive (or the baseline with nothing lost).
struct LossScenario {
  std::string name;               // "none", "domain:us-east-a", "region:us-west"
  std::vector<std::string> lost;  // failure domains lost
  int64_t replicas_needed = 0;    // the fewest replicas that survive this loss alone
  int64_t surviving_replicas = 0; // of the chosen fleet, after the loss
  int64_t required_after = 0;     // what the surviving domains must hold to carry the demand
  bool carried = false;           // the chosen fleet carries every region's demand after it
};

// The loss scenarios of a rule over `domains`, baseline first. largest-domain: the
// domain offering the most GPUs (every domain tied for most).
std::vector<LossScenario> LossScenariosOf(SurviveRule rule, const std::vector<FailureDomain>& domains,
                                          const std::vector<RegionDemand>& demand);

// Placement input: demand per region in replica units (regions of `domains`), and the
// most replicas each domain can hold.
struct PlacementProblem {
  std::vector<std::string> regions;
  std::vector<double> need;  // per region, replica units (fractional)
  std::vector<FailureDomain> domains;
  std::vector<int64_t> max_replicas;  // per domain
};

// Whether `replicas` (per domain) carry every region's demand after losing `lost`: a
// region with a surviving domain carries its own demand there; the demand of a region
// that lost every domain moves to the surviving regions' spare capacity.
bool Carries(const PlacementProblem& p, const std::vector<int64_t>& replicas, const std::vector<std::string>& lost);

// Demand reaches a region's failure domains in proportion to the GPUs each offers; when
// domains fail, the region's survivors take its whole demand in that proportion, and the
// demand of a region that lost every domain goes to the surviving regions in proportion
// to their own. A domain needs ceil(the most demand any scenario routes to it) replicas.
// ReplicasNeeded: the fleet that carries normal traffic and survives `lost` alone (lost
// domains hold their normal share until they fail); -1 when nothing is left to carry it.
// PlaceForLosses: replicas per domain (same order) that survive every scenario; nullopt
// when a domain cannot hold its share (`why` names the domain and the scenario).
int64_t ReplicasNeeded(const PlacementProblem& p, const std::vector<std::string>& lost);
// The replicas the domains left after losing `lost` must hold to carry the demand (whole
// replicas per domain); -1 when no domain is left.
int64_t ReplicasRequiredAfter(const PlacementProblem& p, const std::vector<std::string>& lost);
std::optional<std::vector<int64_t>> PlaceForLosses(const PlacementProblem& p, const std::vector<LossScenario>& scenarios,
                                                   std::string* why);

struct FleetCost {
  double per_hour = 0;
  double per_month = 0;
  double on_demand_per_hour = 0;
  double committed_per_hour = 0;
  int64_t on_demand_gpus = 0;
  int64_t committed_gpus_used = 0;
  double unused_committed_gpu_hours_per_month = 0;
};
// Committed GPUs are paid for whether used or not; GPUs beyond them are on demand.
FleetCost PriceFleet(int64_t gpus, const PriceSpec& price);

// The sizing of one layout.
struct LayoutCapacity {
  LayoutChoice layout;
  int64_t gpus_per_replica = 0;
  bool ok = false;      // sized (a fleet exists in the domains)
  std::string reason;   // why not, when !ok
  Json replica_capacity;  // the per-replica rate and its evidence
  std::vector<DimensionRequirement> requirements;
  std::vector<std::string> binding;
  double per_replica_rps = 0;  // the binding capacity, requests/s (before headroom)
  std::vector<LossScenario> losses;
  std::vector<std::string> set_by;
  std::vector<int64_t> per_domain;  // replicas
  int64_t replicas = 0;
  int64_t gpus = 0;
  FleetCost cost;
  bool within_budget = true;
  Json simulated_after_loss;  // null until verified
  // The share of the rate per replica the fleet was finally sized at: below 1 when the
  // fleet as first sized missed its targets through the loss and was grown until it met
  // them (SizeCapacity with verify).
  double verified_share = 1;
  // null unless grown: {sized_replicas, share (null: no share down to 0.70 met them),
  // attempts: [{share, replicas, meets_targets, attainment}]}.
  Json grown_for_loss;
  // A simulated rate (search, sweep file) carries the step model's stated error: {step_model,
  // gpu, band, basis, per_replica_rps, pessimistic: {replicas, gpus, per_hour, per_month,
  // within_budget} or {reason}}, the fleet with every step 1 + band as long. null for a
  // declared rate.
  Json model_error;
};

struct CapacityResult {
  Json spec;
  std::vector<LayoutCapacity> layouts;
  std::optional<size_t> chosen;  // the cheapest sized layout (ties: fewer GPUs, then order)
  bool within_budget = true;     // of the chosen layout
  // Sized layouts the model cannot separate from the chosen one: each one whose fleet, sized
  // at the share of its rate the chosen one's loss simulation needed (verified_share), is no
  // dearer than the chosen layout's at its pessimistic edge (LayoutCapacity::model_error).
  std::vector<size_t> inside_band;
};

struct CapacityOptions {
  int jobs = 1;           // layouts searched at once
  bool verify = true;     // simulate the chosen fleet through its deciding loss
  std::function<void(std::string_view stage)> on_stage;  // progress, one call per stage
};

Expected<CapacityResult> SizeCapacity(const CapacitySpec& spec, const CapacityOptions& options = {});

// Canonical capacity.json (docs/capacity.md "Output") and the text a person reads.
Json CapacityJson(const CapacityResult& result);
std::string CapacityText(const CapacityResult& result);

}  // namespace fleetplan
