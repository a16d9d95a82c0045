// Expert placement for expert-parallel MoE serving: which rank holds which expert, from
// observed routing counts, and what a placement update costs.
//
// Inputs: per-expert routed assignment counts of one MoE layer (a token routed to its top-k
// experts makes k assignments), either per step or as totals over `steps` steps.
// Placements (each rank holds the same number of expert slots):
//   contiguous  expert e on rank e / (experts / ranks) — what a runtime does untold;
//   balanced    greedy longest-processing-time: replicas first go to the experts with the
//               most assignments per replica (redundant slots, when given), then every
//               replica, heaviest first, goes to the least-loaded rank with a free slot
//               that does not already hold that expert (ties: lowest rank).
// An expert with r replicas splits its assignments evenly (the first count % r replicas
// take one more), so loads stay exact integers.
// Load of a rank = the assignments it serves; the MoE layer waits for the busiest rank.
// Dispatch: tokens start spread evenly over the ranks, so an assignment of an expert with r
// replicas stays local with probability r / ranks; every other one is dispatched to a rank
// holding the expert and its result combined back:
//   dispatch bytes = Σ_e count_e × (ranks − r_e) / ranks × bytes per assignment
//   combine bytes  = dispatch bytes                  (bytes per assignment = hidden × 2 B)
// counted per routed assignment, never per token.
//
// Updates carry a generation (ExpertMapRegistry): a new map is proposed, every rank loads
// its new experts and acknowledges; new batches use it only once every rank has; batches
// already running finish under the map they started with. An update is worth its
// weight-copy cost when the busiest-rank time it saves per step repays the copy within the
// horizon (PriceUpdate).
// Thread model: value types and pure functions; ExpertMapRegistry is single-threaded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

// SGLang rebalances expert placement every 1000 forward passes by default
// (--eplb-rebalance-num-iterations); an update must repay its copy within that.
inline constexpr int64_t kDefaultRebalanceSteps = 1000;
// Most experts and ranks accepted: DeepSeek-V3 has 256 routed experts; 2^16 of either is a
// typo, not a model.
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;
inline constexpr int64_t kMaxExpertRanks = int64_t{1} << 16;
// Most routed assignments the counts may hold in all (a trillion), and the largest bytes of
// one assignment (a hidden size of 2^20 in 16 bits): together they keep every byte count
// of the dispatch arithmetic below 2^62.
inline constexpr int64_t kMaxAssignments = int64_t{1} << 40;
inline constexpr int64_t kMaxAssignmentBytes = int64_t{1} << 21;

struct ExpertCounts {
  std::vector<int64_t> totals;              // per expert, over every step
  std::vector<std::vector<int64_t>> steps;  // per step, per expert; empty for the totals form
  int64_t step_count = 1;                   // steps the totals cover
  int64_t experts() const { return static_cast<int64_t>(totals.size()); }
};

// "10,7,3": totals, non-negative integers. Errors name the position: "count 3: expected a
// non-negative integer, got 'x'". Counts summing to more than kMaxAssignments are an error.
Expected<ExpertCounts> ParseExpertCounts(std::string_view text);
// A CSV file, one line per step, one count per expert ("#" lines are comments); the
// totals are the column sums. Errors are located (file:line:col).
Expected<ExpertCounts> ReadExpertCountsFile(const std::string& path);
Expected<ExpertCounts> ParseExpertCountsCsv(std::string_view text, const std::string& display_name);

struct ExpertPlacement {
  int64_t ranks = 0;
  int64_t slots_per_rank = 0;
  std::vector<std::vector<int64_t>> rank_experts;  // per rank, its experts (ascending)
  std::vector<std::vector<int64_t>> expert_ranks;  // per expert, the ranks holding it
};

// REQUIRES: ranks >= 1 and divides experts.
ExpertPlacement ContiguousPlacement(int64_t experts, int64_t ranks);
// REQUIRES: ranks >= 1, redundant >= 0, ranks divides experts + redundant, and
// redundant <= experts × (ranks − 1) (a rank holds one copy of an expert at most).
ExpertPlacement BalancedPlacement(const std::vector<int64_t>& totals, int64_t ranks, int64_t redundant);

// InvalidInput (unlocated, naming the flags) when the shapes above do not hold.
Status ValidateExpertShape(int64_t experts, int64_t ranks, int64_t redundant);

struct ExpertLoad {
  std::vector<int64_t> loads;  // per rank, over every step
  int64_t max_load = 0;
  double mean_load = 0;
  double imbalance = 0;  // max / mean (1 = perfect); 0 when nothing is routed
  // Per step: the busiest rank's load, averaged (equal to max_load / steps for totals).
  double mean_step_max_load = 0;
  Bytes dispatch_bytes;  // over every step
  Bytes combine_bytes;
};

// REQUIRES: the counts sum to at most kMaxAssignments; bytes_per_assignment in
// [0, kMaxAssignmentBytes]; placement.expert_ranks has one entry per expert.
ExpertLoad LoadOf(const ExpertPlacement& placement, const ExpertCounts& counts, Bytes bytes_per_assignment);

// What pricing an update needs: the size of one expert, the time one assignment takes on
// the busiest rank, and the link the copies use.
struct ExpertCostInputs {
  Bytes expert_bytes;        // one expert of one layer
  Duration assignment_time;  // one assignment through one expert (its FFN FLOPs)
  LinkSpec copy_link;
  int64_t horizon_steps = kDefaultRebalanceSteps;
  int64_t moe_layers = 1;  // layers the placement applies to (memory of redundant copies)
};

// Expert cost inputs from a model and GPU: expert params = (3 if gated else 2) × hidden ×
// expert_intermediate in `weight_dtype`; time per assignment = 2 × params FLOPs /
// (PeakFlops(weight_dtype) × compute_efficiency). REQUIRES: model.moe.
ExpertCostInputs ExpertCostsOf(const ModelSpec& model, const GpuSpec& gpu, DType weight_dtype,
                               const LinkSpec& copy_link, double compute_efficiency);

struct UpdatePrice {
  int64_t copies_loaded = 0;                // expert copies ranks must load that they did not hold
  Bytes copy_bytes;                         // copies × expert bytes
  Duration copy_time;                       // the rank loading the most, over the copy link
  Duration saved_per_step;                  // (mean step max before − after) × assignment time
  std::optional<int64_t> break_even_steps;  // nullopt when nothing is saved
  bool worth = false;                       // break-even within horizon_steps
};

UpdatePrice PriceUpdate(const ExpertPlacement& from, const ExpertPlacement& to, const ExpertLoad& before,
                        const ExpertLoad& after, const ExpertCostInputs& costs);

// The expert maps of a serving group and their generations.
//
//   generation:  1 (active) ── Propose(map) ──> 2 (pending) ── every rank Acknowledge(2) ──> 2 active
//   batches:     BeginBatch() takes the active generation; EndBatch releases it. A map no
//                batch holds that is neither active nor pending is dropped.
class ExpertMapRegistry {
 public:
  // Generation 1 is `initial`, active.
  explicit ExpertMapRegistry(ExpertPlacement initial);

  int64_t active() const { return active_; }
  std::optional<int64_t> pending() const { return pending_; }
  // Proposes the next map; returns its generation. Errors (kCheckFailed): an update
  // already pending; a map for another rank count.
  Expected<int64_t> Propose(ExpertPlacement next);
  // Rank `rank` has loaded `generation`. Errors: no such pending generation, rank out of
  // range. Acknowledging twice is harmless. The last acknowledgement activates it.
  Status Acknowledge(int64_t rank, int64_t generation);
  // Ranks that have not acknowledged the pending generation (ascending).
  std::vector<int64_t> Waiting() const;

  struct Batch {
    int64_t id = 0;
    int64_t generation = 0;
  };
  Batch BeginBatch();
  // REQUIRES: `batch` came from BeginBatch and was not ended.
  void EndBatch(const Batch& batch);
  // REQUIRES: `generation` is retained.
  const ExpertPlacement& Map(int64_t generation) const;
  // Generations held: the active one, the pending one, and those running batches use.
  std::vector<int64_t> Retained() const;

 private:
  void Drop();
  std::map<int64_t, ExpertPlacement> maps_;
  std::map<int64_t, int64_t> running_;  // generation -> batches using it
  std::vector<bool> acked_;
  int64_t active_ = 1;
  std::optional<int64_t> pending_;
  int64_t next_batch_ = 1;
};

}  // namespace fleetplan
