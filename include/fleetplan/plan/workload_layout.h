// A layout decided on a scenario's own workload (`fleetplan layout --scenario`): the static
// ranking of layout.h at three operating points the workload implies, then the top K
// layouts simulated on that workload (fleet/run.h), ranked by SLO-qualified goodput per GPU.
//
//   scenario ─► workload figures: mean prompt and output tokens over kWorkloadSample drawn
//               requests; the arrival rate (open loop and traces: drawn arrivals over their
//               span); closed loop: its users are the concurrency
//   operating points, each a LayoutRequest at context = mean prompt + mean output tokens:
//     batch-1         1 sequence in the fleet (ranked by its latency)
//     typical         L = λ × W sequences across the fleet (Little's law); W is the mean
//                     request's time in system on the reference layout (the scenario's own
//                     when it fits the cluster, else the batch-1 leader):
//                       W = mean prompt × prefill step / prefill tokens
//                         + mean output × decode step at ceil(L / dp) sequences per replica
//                     solved as a fixed point from L = λ × W(1)
//     max-throughput  the most sequences that fit per replica, at most max_running
//   candidates: the top K of the typical point's decode ranking (fewer when fewer fit)
//   each simulated: a copy of the scenario whose one pool is the candidate (tp, pp, ep;
//     dp replicas; the cluster's GPU and links) — plan fields, never YAML text — bound
//     (fleet_plan.h Bind) and run with the scenario's seed (files off)
//   simulated rank: goodput_rps / (dp × tp × pp) descending, then fleet attainment
//     descending, then static rank; a candidate that cannot be bound or run is ranked
//     after the others with its reason
//   the choice (layout_choice.h): within close_call of the leader, the fleet after the
//     worst single loss of the failure domain is simulated too and ranks the band; where the
//     pick and another candidate are within model_error on goodput and on goodput after the
//     loss, a staging result (records of a measured run) decides, or the decision waits
//     for one (ChoiceBasis::kNeedsStaging; `decision` is then provisional)
//   crossovers: the decision against each other candidate — the lowest fleet concurrency
//     (1 .. what the pair can hold) at which the static decode leader of the pair changes,
//     found by doubling then bisection, or none.
// Errors: a scenario with more than one pool (InvalidInput), simulate_top outside
// [1, kMaxSimulateTop], the static search's own errors; a step model that cannot be built
// for one candidate is that candidate's reason, not an error.
// Thread model: the K simulations run on `jobs` threads; the result (and its JSON) does
// not depend on `jobs`: each simulation is a pure function of (scenario, candidate, seed).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/plan/cluster.h"
#include "fleetplan/plan/layout.h"
#include "fleetplan/plan/layout_choice.h"

namespace fleetplan {

// Requests drawn from the workload to measure its mean lengths and arrival rate.
inline constexpr int64_t kWorkloadSample = 4000;
// Candidates simulated when --simulate-top is not given: enough to see the runner-up of each
// family (TP-heavy, PP-heavy) without a long run.
inline constexpr int64_t kDefaultSimulateTop = 4;
// More simulations than this is a sweep's job (fleetplan sweep).
inline constexpr int64_t kMaxSimulateTop = 64;
// Fixed-point iterations of Little's law before the last value is taken.
inline constexpr int64_t kLittleIterations = 32;

struct WorkloadLayoutRequest {
  // Flags that still apply (runtime, all-reduce, microbatches, tp/pp/ep restrictions, cross
  // node TP, close-call share). Model, formats, memory utilization, context, batch and
  // prefill tokens are taken from the scenario.
  LayoutRequest base;
  int64_t simulate_top = kDefaultSimulateTop;
  int jobs = 1;  // simulations at once
  LossDomain failure_domain = LossDomain::kNode;
  double model_error = kDefaultModelError;  // (0, 1)
  std::vector<StagingInput> staging;        // each must name one simulated candidate
  // Progress, called from the simulating threads as each run ends: the stage ("candidates",
  // then "after-loss"), the runs of that stage done, and its total. May be empty.
  std::function<void(std::string_view stage, int64_t done, int64_t total)> on_simulated;
};

struct WorkloadFigures {
  bool closed_loop = false;
  double rate_per_s = 0;  // open loop and traces
  int64_t users = 0;      // closed loop
  double prompt_tokens = 0;
  double output_tokens = 0;
  int64_t sampled = 0;
  Parallelism reference;  // the layout W was measured on
  std::string reference_basis;
  Duration time_in_system;  // W
  int64_t concurrency = 0;  // L, fleet-wide
  int64_t iterations = 0;   // of the fixed point
};

struct OperatingPointRanking {
  std::string name;   // "batch-1", "typical", "max-throughput"
  std::string basis;  // how its sequences were chosen, in words
  LayoutResult result;
};

struct SimulatedLayout {
  std::string gpu;
  Parallelism layout;
  int64_t dp = 0;
  int64_t gpus = 0;         // dp × tp × pp
  int64_t static_rank = 0;  // decode rank at the typical point
  std::map<std::string, int64_t> static_ranks;  // per operating point
  int64_t simulated_rank = 0;                   // 0: not simulated (see error)
  std::string error;                            // why it was not simulated
  double goodput_rps = 0;
  double goodput_per_gpu = 0;
  double throughput_rps = 0;
  std::optional<double> attainment;                  // fleet
  std::map<std::string, std::optional<double>> class_attainment;  // class → attainment
  int64_t requests = 0;
  DomainLoss replicas_after_loss;         // the packing's, at the typical point
  std::optional<AfterLoss> after_loss;    // simulated within the band (layout_choice.h)
  std::optional<StagingResult> staging;   // a measured staging run, when given
};

struct Crossover {
  size_t a = 0;  // indices into WorkloadLayoutResult::simulated (a: the decision)
  size_t b = 0;
  size_t leader_low = 0;               // the pair's static leader at 1 sequence
  std::optional<int64_t> concurrency;  // lowest fleet concurrency where the other leads
  int64_t searched_to = 0;             // the highest concurrency examined
};

struct WorkloadLayoutResult {
  std::string scenario;  // display name
  std::string scenario_digest;
  uint64_t seed = 0;
  WorkloadFigures workload;
  std::vector<OperatingPointRanking> points;  // batch-1, typical, max-throughput
  size_t typical = 1;                         // index of the typical point
  std::vector<SimulatedLayout> simulated;     // in simulated rank order
  std::optional<size_t> decision;             // index into simulated (choice->chosen)
  std::optional<CandidateChoice> choice;         // indices into simulated
  LossDomain failure_domain = LossDomain::kNode;
  double close_call = 0;
  double model_error = 0;
  std::vector<Crossover> crossovers;
  std::vector<std::string> derived;
};

Expected<WorkloadLayoutResult> DecideLayoutOnWorkload(const Scenario& scenario, const Cluster& cluster,
                                                      const WorkloadLayoutRequest& request);

// Renderings (workload_layout_report.cc). JSON keys scripts rely on (stable):
//   simulated[] {gpu, tp, pp, ep, dp, gpus, static_rank, static_ranks{point: rank},
//                simulated_rank, goodput_rps, goodput_per_gpu, throughput_rps, attainment
//                {class: share}, fleet_attainment, requests, error, replicas_after_loss
//                {node, rack, zone}, after_loss {domain, replicas, goodput_rps,
//                goodput_per_gpu, fleet_attainment, error} | null, staging {spec, path,
//                format, digest, dp, gpus, requests, goodput_rps, goodput_per_gpu,
//                fleet_attainment} | null}
//   decision    {layout, gpu, tp, pp, ep, dp, goodput_per_gpu, static_rank, reason,
//                runner_up_share, too_close_to_call (within the close-call share), status
//                ("chosen" | "needs-staging"), basis (layout_choice.h ChoiceBasisName),
//                failure_domain, close_call, model_error, close_band[], indistinguishable[],
//                needs_staging[] (layout names)} | null
//   operating_points[] {name, basis, operating_point, ranking[]}
//   crossovers[] {a, b, leader_at_1, crossover_concurrency | null, searched_to, text}
//   workload {...}, inputs {..., operating_point (the typical point's)}, feasible[] and
//   rejected[] of the typical point (layout_report.h's keys)
std::string WorkloadLayoutText(const WorkloadLayoutResult& result, const Cluster& cluster,
                               int64_t rows = 10);
Json WorkloadLayoutJson(const WorkloadLayoutResult& result, const Cluster& cluster);

}  // namespace fleetplan
