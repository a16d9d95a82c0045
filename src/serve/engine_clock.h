// The engine clock: the fleet every port shares, stepped in real time. One fleet kernel
// (fleet/simulation.h, push API) holds every replica, so prefill/decode pools hand
// requests over as in `simulate`; one timer is armed at the wall time of its next event.
//
// Time: sim = (wall - origin) * options.speed, both conversions saturating below int64's
// range. A pump runs the kernel up to the simulated now (or a given limit) in slices of at
// most a bounded number of event times, so a clock far behind the wall never holds the
// I/O thread; the rest is posted behind what the thread already has to do.
// Invariants: a request the engines hold is owned by exactly one port (the one whose
// replica it is pinned to, Request::pinned_replica); its tokens, transfers and outcome
// go back to that port. A kernel error stops the I/O thread with an internal error.
// Thread model: the I/O thread only.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleetplan/fleet/disaggregation.h"
#include "fleetplan/fleet/simulation.h"
#include "serve/io.h"

namespace fleetplan::serve::internal {

class Port;

class EngineClock final : public EngineObserver, public FleetObserver {
 public:
  explicit EngineClock(Shared& shared) : shared_(shared), timer_(shared.io) {}
  Status Init(const FleetSetup& setup);
  void Attach(int32_t replica, Port* port) { ports_[static_cast<size_t>(replica)] = port; }
  void Start() { origin_ = Clock::now(); }
  void Stop() {
    stopped_ = true;
    timer_.cancel();
  }

  SimTime SimOf(Clock::time_point t) const;
  Clock::time_point WallOf(SimTime t) const;
  SimTime now() const { return sim_->now(); }
  RequestId NextId() { return next_id_++; }
  // One id per adapter name for the whole fleet: the same name is the same adapter on
  // every replica (its residency is still per replica).
  AdapterId AdapterIdOf(const std::string& name);
  // Submits `r` (pinned to `port`'s replica) at its arrival.
  Status Submit(const Request& r, Port* port);
  void Cancel(RequestId id);
  // Runs the simulation up to now (or only up to `limit`) and rearms the clock.
  void Pump(std::optional<SimTime> limit = std::nullopt);
  // True once an engine has scheduled `id`: the serving replica's, or a prefill
  // replica's computing its prompt.
  bool Scheduled(RequestId id, int32_t replica) const;
  const Engine& engine(int32_t replica) const { return sim_->replica(replica); }
  PoolRole role(int32_t replica) const { return sim_->role(replica); }
  // True when the fleet has a prefill pool (requests are handed over).
  bool PoolsServed() const { return sim_->component<Disaggregation>() != nullptr; }
  // Disaggregated requests bound for `replica` that its engine does not hold yet (they
  // wait for a decode slot, a prefill or their KV): vLLM counts them as waiting.
  int64_t PendingHandoffs(int32_t replica) const;

  void OnRequestDone(const RequestOutcome& o) override;
  void OnRoute(const RouteEvent&) override {}
  void OnTransfer(const TransferEvent& e) override;

 private:
  void ArmTimer();

  Shared& shared_;
  net::steady_timer timer_;
  std::unique_ptr<Simulation> sim_;
  Clock::time_point origin_;
  std::vector<Port*> ports_;                      // by replica id
  std::unordered_map<RequestId, Port*> owner_;    // requests the engines hold (lookup only)
  std::map<std::string, AdapterId> adapter_ids_;
  RequestId next_id_ = 0;
  bool stopped_ = false;
  bool in_pump_ = false;
};

}  // namespace fleetplan::serve::internal
