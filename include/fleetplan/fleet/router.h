// Routers: which replica serves a request. Small strategy objects built by MakeRouter.
//
// A router decides from its own view of the fleet, not the truth: replica telemetry as
// of the last refresh (`telemetry_delay` old), plus what the router itself has sent
// since that refresh. Ties never go to "the first replica": each policy breaks them by
// rotating from where its last decision left off, so a burst of equal scores spreads.
// Thread model: single-threaded; deterministic (state is only counters).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
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

// The router's view: telemetry plus its own dispatches since the refresh.
struct ReplicaView {
  ReplicaTelemetry telemetry;
  int64_t sent_requests = 0;   // routed here since the refresh
  int64_t sent_tokens = 0;     // their prompt + output tokens
  int64_t outstanding_requests() const { return telemetry.waiting + telemetry.running + sent_requests; }
  int64_t outstanding_tokens() const { return telemetry.outstanding_tokens + sent_tokens; }
};

struct RouterConfig {
  std::string policy = "round-robin";
  Duration telemetry_delay;  // 0 = the router sees the replicas' state at every decision
};

class Router {
 public:
  virtual ~Router() = default;
  virtual std::string_view name() const = 0;
  // REQUIRES: view non-empty. Returns an index into view.
  virtual int32_t Route(const Request& request, std::span<const ReplicaView> view) = 0;
};

const std::vector<std::string>& RouterNames();
Expected<std::unique_ptr<Router>> MakeRouter(const RouterConfig& config);

}  // namespace fleetplan
