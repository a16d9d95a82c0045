// Routers: which replica serves a request. Small strategy objects built by MakeRouter from
// one registry row per policy (RouterPolicies()).
//
// A router decides from its own view of the fleet, not the truth: replica telemetry as
// of the last refresh (`telemetry_delay` old), plus what the router itself has sent
// since that refresh, plus its own approximate record of which prompt prefixes it sent
// where (fleet/prefix_view.h) — or, with `router.precise: true`, the replicas' true
// prefix caches and adapter residency. The simulation fills one ReplicaView per replica
// for every decision; a router only reads it.
//
// Policies (RouterNames()):
//   round-robin         replica i, i+1, ... regardless of state
//   least-outstanding   fewest outstanding tokens (`outstanding_by: tokens`, default) or
//                       requests (`outstanding_by: requests`)
//   cache-aware         lowest estimated completion contribution, in ns:
//                         queued_work = outstanding tokens x recompute cost per token
//                         recompute   = (prompt tokens - matched prefix tokens) x the
//                                       cost of a missing token
//                       the recompute cost per token is StepCostModel::PrefillCostPerToken();
//                       a missing token costs that, or, choosing the serving replica of a
//                       disaggregated request, its KV transfer (bytes per token / link
//                       bandwidth: the prefill replica sends it). The decision carries
//                       both components (RouteDecision)
//   weighted            sum of weight x scorer over the configured scorers, highest wins;
//                       each scorer maps a replica to [0, 1] (1 = best):
//                         prefix   matched prefix tokens / prompt tokens
//                         queue    1 - waiting / (max waiting over replicas)
//                         kv       1 - KV used / KV total
//                         running  1 - running / (max running over replicas)
//                         adapter  1 when the request's adapter is (believed) resident
//   adapter-aware       load x (1 - outstanding requests / max outstanding) +
//                       affinity x adapter resident, with load > affinity (checked when
//                       read), so a hot adapter cannot make a hot replica
//
// Ties never go to "the first replica": every policy scans from the replica after its
// previous choice and keeps the first strictly best, so a burst of equal scores spreads.
// Thread model: single-threaded; deterministic (state is only counters).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

// What a replica reported at its last telemetry refresh.
struct ReplicaTelemetry {
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t outstanding_tokens = 0;  // prompt + output tokens not yet computed
  int64_t kv_used_blocks = 0;
  int64_t kv_total_blocks = 0;
  SimTime as_of;
};

// The router's view: telemetry plus its own dispatches since the refresh, plus what it
// believes about this request on this replica.
struct ReplicaView {
  ReplicaTelemetry telemetry;
  int64_t sent_requests = 0;          // routed here since the refresh
  int64_t sent_tokens = 0;            // their prompt + output tokens
  int64_t matched_prefix_tokens = 0;  // leading prompt tokens believed cached here
  bool adapter_resident = false;      // the request's adapter is believed loaded here
  bool adapter_planned = false;       // the popularity partition places the adapter here
  int64_t outstanding_requests() const { return telemetry.waiting + telemetry.running + sent_requests; }
  int64_t outstanding_tokens() const { return telemetry.outstanding_tokens + sent_tokens; }
};

enum class OutstandingBy : int { kTokens = 0, kRequests = 1 };

// `by`: history (adapters go where they were loaded: affinity to residency) or popularity
// (the partition planned from declared popularity, adapters.h PartitionByPopularity: a
// request goes to a replica its adapter is placed on, the least loaded of them).
enum class AdapterPlacementBy : int { kHistory = 0, kPopularity = 1 };
struct AdapterAwareWeights {
  double load = 2.0;  // > affinity (validated by the scenario reader)
  double affinity = 1.0;
  AdapterPlacementBy by = AdapterPlacementBy::kHistory;
  double hot = 0.5;   // popularity: the share of adapter requests the hot tier covers
  double warm = 0.3;  // ... and the warm tier after it
};

struct RouterConfig {
  std::string policy = "round-robin";
  Duration telemetry_delay;                               // 0 = the router sees the replicas' state at every decision
  bool precise = false;                                   // true: true prefix caches and adapter residency, not the
                                                          // router's own record of what it sent where
  OutstandingBy outstanding_by = OutstandingBy::kTokens;  // least-outstanding
  std::map<std::string, double> weights;                  // weighted: scorer -> weight
  AdapterAwareWeights adapter_aware;
};

// One routing decision and what decided it. Scores are the policy's own: ns for
// cache-aware (lower wins), a weighted sum for weighted and adapter-aware (higher wins),
// the load for least-outstanding, 0 for round-robin.
struct RouteDecision {
  int32_t replica = 0;
  double score = 0;
  Duration queued_work;               // cache-aware: outstanding tokens x cost per token
  Duration recompute;                 // cache-aware: missing prompt tokens x cost per token
  int64_t matched_prefix_tokens = 0;  // set by the simulation from the view
};

// What the routers may know besides the view.
struct RouterContext {
  Duration prefill_cost_per_token;  // StepCostModel::PrefillCostPerToken of the replicas
  // cache-aware: the cost of a prompt token the replica lacks. Zero: recompute it
  // (prefill_cost_per_token). With a prefill pool, the serving replica fetches it
  // instead: KV bytes per token / the transfer link's bandwidth.
  Duration missing_cost_per_token;
};

class Router {
 public:
  virtual ~Router() = default;
  virtual std::string_view name() const = 0;
  // REQUIRES: view non-empty. Returns an index into view and its components.
  virtual RouteDecision Route(const Request& request, std::span<const ReplicaView> view) = 0;
};

// The router registry: one row per policy. Validation (the scenario reader), construction
// (MakeRouter) and the simulation's questions about a policy ("does it read prefixes?")
// all read the same row, and the contract tests iterate the rows, so a new policy is one
// strategy object plus one row in router.cc.
struct RouterPolicy {
  std::string_view name;
  // The policy's own key under `router` (empty: none). Given with another policy it is a
  // located error.
  std::string_view section;
  // Reads router.<section> (absent or null: the policy's defaults, listed in `derived`).
  // REQUIRES: section non-empty.
  Status (*read)(const YamlNode& node, RouterConfig& config, std::vector<std::string>& derived) = nullptr;
  std::unique_ptr<Router> (*make)(const RouterConfig& config, const RouterContext& context) = nullptr;
  // Whether its decisions read the matched prefix of the request on each replica (the
  // simulation then tracks prefixes; hot-prefix replication needs it).
  bool (*reads_prefixes)(const RouterConfig& config) = nullptr;
};
// In documentation order.
const std::vector<RouterPolicy>& RouterPolicies();
// Null for an unknown name.
const RouterPolicy* FindRouterPolicy(std::string_view name);
const std::vector<std::string>& RouterNames();
// Scorers of the weighted router: prefix, queue, kv, running, adapter.
const std::vector<std::string>& WeightedScorerNames();
// True when config's policy reads prefixes (RouterPolicy::reads_prefixes); false for an
// unknown policy.
bool RouterReadsPrefixes(const RouterConfig& config);
// REQUIRES: config.weights names only WeightedScorerNames() (the scenario reader checks).
Expected<std::unique_ptr<Router>> MakeRouter(const RouterConfig& config, const RouterContext& context = {});

}  // namespace fleetplan
