#include "fleetplan/fleet/prefix_beliefs.h"

#include "fleetplan/fleet/simulation.h"

namespace fleetplan {
namespace {
const EngineConfig& FirstEngine(const FleetSetup& setup) { return setup.replicas[0].engine; }
}  // namespace

bool PrefixBeliefs::Wanted(const FleetSetup& setup) {
  return FirstEngine(setup).prefix_cache.enabled && RouterReadsPrefixes(setup.router);
}

PrefixBeliefs::PrefixBeliefs(Simulation& sim)
    : sim_(sim),
      precise_(sim.setup().router.precise),
      view_(FirstEngine(sim.setup()).block_tokens, FirstEngine(sim.setup()).prefix_cache.share_across_tenants) {}

Status PrefixBeliefs::OnReplicaAdded(int32_t id) {
  (void)id;
  // Each replica's record holds that replica's own pool's worth of blocks.
  view_.AddReplica(precise_ ? 0 : sim_.setup_of(id).engine.kv_blocks);
  return Status::Ok();
}

const std::vector<BlockHash>& PrefixBeliefs::HashesOf(const Request& r) {
  if (hashed_ != r.id) {
    view_.Hash(r, &hashes_);
    hashed_ = r.id;
  }
  return hashes_;
}

void PrefixBeliefs::FillView(const Request& r, int32_t replica, ReplicaView& view) {
  view.matched_prefix_tokens =
      precise_ ? sim_.replica(replica).PeekCachedPrefixTokens(r) : view_.MatchedTokens(replica, HashesOf(r));
}

void PrefixBeliefs::OnDispatched(const Request& r, int32_t replica, int64_t tokens) {
  (void)tokens;
  if (!precise_) view_.Record(replica, HashesOf(r));
}

}  // namespace fleetplan
