#include "fleetplan/fleet/replica_loss.h"

#include <fmt/format.h>

namespace fleetplan {

void ReplicaLosses::OnStart(SimTime now) {
  const std::vector<ReplicaLoss>& losses = Losses();
  for (size_t i = 0; i < losses.size(); ++i) {
    sim_.queue().Push(std::max(now, losses[i].at), this, 0, -1, static_cast<int64_t>(i));
  }
}

void ReplicaLosses::OnEvent(const Event& e) {
  const ReplicaLoss& loss = Losses()[static_cast<size_t>(e.request)];
  for (int32_t id : loss.replicas) {
    const Status s = sim_.DrainReplica(id, e.time, Duration(), loss.expiry);
    if (!s.ok() && status_.ok()) status_ = s;
    ++lost_;
  }
}

Status ReplicaLosses::CheckInvariants() const { return status_; }

void ReplicaLosses::AddReport(Duration span, Json& report) const {
  (void)span;
  Json losses = Json::array();
  for (const ReplicaLoss& l : Losses()) {
    losses.push_back({{"at_s", RoundForReport(l.at.seconds())}, {"replicas", l.replicas},
                      {"expiry", DrainExpiryName(l.expiry)}});
  }
  report["replica_losses"] = losses;
}

void ReplicaLosses::AddSummary(Duration span, std::vector<std::string>& lines) const {
  (void)span;
  for (const ReplicaLoss& l : Losses()) {
    lines.push_back(fmt::format("replica loss at {:g} s: {} replica(s) failed, their requests {}", l.at.seconds(),
                                l.replicas.size(), l.expiry == DrainExpiry::kRequeue ? "requeued" : "cancelled"));
  }
}

}  // namespace fleetplan
