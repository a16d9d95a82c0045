#include "fleetplan/fleet/telemetry.h"

#include "fleetplan/core/limits.h"
#include "fleetplan/fleet/simulation.h"

namespace fleetplan {

Telemetry::Telemetry(Simulation& sim) : sim_(sim), delay_(sim.setup().router.telemetry_delay) {}

Status Telemetry::OnReplicaAdded(int32_t id) {
  (void)id;
  telemetry_.emplace_back();
  sent_requests_.push_back(0);
  sent_tokens_.push_back(0);
  return Status::Ok();
}

std::vector<ReplicaView> Telemetry::View(const std::vector<int32_t>& replicas) const {
  std::vector<ReplicaView> view(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    const auto r = static_cast<size_t>(replicas[i]);
    view[i] = ReplicaView{telemetry_[r], sent_requests_[r], sent_tokens_[r]};
  }
  return view;
}

void Telemetry::Refresh(SimTime now) {
  for (int32_t i = 0; i < sim_.replica_count(); ++i) {
    const Engine& e = sim_.replica(i);
    const auto k = static_cast<size_t>(i);
    telemetry_[k] = ReplicaTelemetry{e.waiting_count(), e.running_count(), e.outstanding_tokens(),
                                     e.pool().used_count(), e.pool().total(), now};
    sim_.ForEachComponent([&](FleetComponent& c) { c.OnTelemetryRefresh(i, telemetry_[k]); });
    sent_requests_[k] = 0;
    sent_tokens_[k] = 0;
  }
}

void Telemetry::BeforeDecision(SimTime now) {
  if (delay_ == Duration()) Refresh(now);
}

void Telemetry::StartPeriodic(SimTime now) {
  if (delay_ > Duration()) sim_.queue().Push(now, this, 0);
}

void Telemetry::OnDispatched(const Request& r, int32_t replica, int64_t tokens) {
  (void)r;
  const auto k = static_cast<size_t>(replica);
  ++sent_requests_[k];
  sent_tokens_[k] += tokens;
}

void Telemetry::OnEvent(const Event& e) {
  Refresh(e.time);
  // Keep refreshing while anything else is still to happen. The next refresh saturates at
  // the latest time a simulation represents: `e.time + delay_` at the top of the delay's
  // range (2562047h) overflowed int64 into the past, and the refresh then ran forever.
  if (sim_.queue().active_size() > 0 || sim_.has_pending_arrival()) {
    sim_.queue().Push(SaturatedAdd(e.time, delay_), this, 0);
  }
}

}  // namespace fleetplan
