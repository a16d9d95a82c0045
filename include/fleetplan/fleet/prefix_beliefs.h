// PrefixBeliefs: what the router believes each replica caches of a request's prompt
// (fleet component; only when the replicas cache prefixes and the router policy reads
// them, router.h RouterPolicy::reads_prefixes).
//
// By default the belief is the router's own record of what it sent where (prefix_view.h:
// one KV pool's worth of blocks per replica, each replica its own pool size); with
// router.precise it is the replica's true cache (Engine::PeekCachedPrefixTokens). The
// block hashes of the request being decided are computed once per request and shared
// with other components (hot-prefix replication names a prefix by them).
// Thread model: single-threaded; deterministic.
#pragma once

#include <optional>
#include <vector>

#include "fleetplan/engine/block_hash.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/prefix_view.h"

namespace fleetplan {

class PrefixBeliefs final : public FleetComponent {
 public:
  explicit PrefixBeliefs(Simulation& sim);
  std::string_view name() const override { return "prefix-beliefs"; }
  // Whether a fleet with `setup` tracks prefixes at all.
  static bool Wanted(const FleetSetup& setup);

  // The hashes of r's full prompt blocks (leaving one token uncached, as the engine
  // does). Valid until the next call for another request.
  const std::vector<BlockHash>& HashesOf(const Request& r);
  // The router's record (its replicas' capacities are their own KV pools).
  const PrefixView& view() const { return view_; }

  Status OnReplicaAdded(int32_t id) override;
  void FillView(const Request& r, int32_t replica, ReplicaView& view) override;
  void OnDispatched(const Request& r, int32_t replica, int64_t tokens) override;

 private:
  Simulation& sim_;
  bool precise_;
  PrefixView view_;  // the router's record (its replicas are unused when precise)
  std::optional<RequestId> hashed_;
  std::vector<BlockHash> hashes_;
};

}  // namespace fleetplan
