#include "fleetplan/fleet/replication.h"

#include "fleetplan/fleet/prefix_beliefs.h"
#include "fleetplan/fleet/simulation.h"
#include "fleet/section_readers.h"

namespace fleetplan {
namespace {
const ReplicationConfig& ConfigOf(const Simulation& sim) {
  return *sim.setup().components.Find<ReplicationConfig>(kReplicationRow);
}
int64_t PrefixBlocks(const Simulation& sim) {
  const int64_t block = sim.setup().replicas[0].engine.block_tokens;
  return (ConfigOf(sim).prefix_tokens + block - 1) / block;
}
}  // namespace

Replication::Replication(Simulation& sim, PrefixBeliefs& beliefs, int32_t replicas)
    : sim_(sim),
      beliefs_(beliefs),
      placement_(ConfigOf(sim), PrefixBlocks(sim), sim.setup().replicas[0].engine.block_tokens,
                 replicas),
      replicas_(replicas) {}

std::optional<RouteDecision> Replication::Route(const Request& r, SimTime now) {
  const BlockHash* found = placement_.KeyOf(beliefs_.HashesOf(r));
  const std::vector<int32_t>& ready = sim_.ready_serving();
  if (found == nullptr) return sim_.RouteAmong(Simulation::RouterSet::kServing, ready, r);
  const BlockHash key = *found;
  // The placement indexes replicas by id over the fleet it was sized for; a replica
  // that is not ready has no room to join (its view says so).
  std::vector<int32_t> indexed(static_cast<size_t>(replicas_));
  for (int32_t i = 0; i < replicas_; ++i) indexed[static_cast<size_t>(i)] = i;
  std::vector<ReplicaView> view = sim_.BuildView(indexed);
  for (int32_t i = 0; i < replicas_; ++i) {
    if (sim_.state(i) != ReplicaState::kReady) view[static_cast<size_t>(i)].telemetry.kv_total_blocks = 0;
  }
  std::vector<int32_t> members;
  for (int32_t m : placement_.Arrive(key, now, view)) {
    if (sim_.state(m) == ReplicaState::kReady) members.push_back(m);
  }
  if (!members.empty()) return sim_.RouteAmong(Simulation::RouterSet::kServing, members, r);
  const RouteDecision d = sim_.RouteAmong(Simulation::RouterSet::kServing, ready, r);
  if (d.replica < replicas_) placement_.Place(key, d.replica, now);
  return d;
}

void Replication::AddReport(Duration span, Json& report) const {
  (void)span;
  report["prefix_replication"] = placement_.stats().ToJson();
}

// ---- the section reader ----------------------------------------------------------

namespace section {

Status ReadReplication(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kReplication));
  if (!RouterReadsPrefixes(s.router) || !s.engine.prefix_cache.enabled) {
    std::vector<std::string> readers;
    for (const RouterPolicy& p : RouterPolicies()) {
      RouterConfig probe;  // a policy that can read prefixes, configured to
      probe.policy = std::string(p.name);
      probe.weights = {{"prefix", 1.0}};
      if (p.reads_prefixes(probe)) readers.emplace_back(p.name);
    }
    return node.Error(fmt::format("hot-prefix replication needs engine.prefix_cache.enabled and a router that reads "
                                  "prefixes ({}; weighted with a `prefix` weight > 0), got policy {}{}",
                                  fmt::join(readers, ", "), s.router.policy,
                                  s.engine.prefix_cache.enabled ? "" : " with the prefix cache off"));
  }
  if (HasPrefillPool(s)) {
    return node.Error("hot-prefix replication is not simulated together with a prefill pool");
  }
  ReplicationConfig& c = s.replication;
  c.enabled = true;
  FP_ASSIGN_OR_RETURN(Rate rate, node["replica_rate"].AsRate());
  c.replica_rate = rate.per_second;
  if (!(c.replica_rate > 0)) return node["replica_rate"].Error("expected a rate > 0");
  FP_ASSIGN_OR_RETURN(c.prefix_tokens, node["prefix_tokens"].IntOr(c.prefix_tokens));
  if (c.prefix_tokens < s.engine.block_tokens) {
    return node["prefix_tokens"].Error(fmt::format("expected at least one KV block ({} tokens), got {}",
                                                   s.engine.block_tokens, c.prefix_tokens));
  }
  FP_ASSIGN_OR_RETURN(c.window, node["window"].DurationOr(c.window));
  if (c.window <= Duration()) return node["window"].Error("expected a duration > 0");
  FP_ASSIGN_OR_RETURN(c.min_hold, node["min_hold"].DurationOr(c.min_hold));
  if (node["add_above"].present()) {
    FP_ASSIGN_OR_RETURN(c.add_above, node["add_above"].AsDoubleInRange(0.0, 1e6));
  }
  if (node["remove_below"].present()) {
    FP_ASSIGN_OR_RETURN(c.remove_below, node["remove_below"].AsDoubleInRange(0.0, 1e6));
  }
  NoteDefault(node["prefix_tokens"], std::to_string(c.prefix_tokens), s);
  NoteDefault(node["add_above"], fmt::format("{:g}", c.add_above), s);
  NoteDefault(node["remove_below"], fmt::format("{:g}", c.remove_below), s);
  NoteDefault(node["window"], DurationText(c.window), s);
  NoteDefault(node["min_hold"], DurationText(c.min_hold), s);
  if (c.remove_below > c.add_above) {
    return node.Error(fmt::format("expected remove_below <= add_above (got {} > {}): a prefix would be added and "
                                  "removed at the same demand",
                                  c.remove_below, c.add_above));
  }
  return Status::Ok();
}

}  // namespace section

}  // namespace fleetplan
