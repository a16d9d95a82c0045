#include "serve/engine_clock.h"

#include <algorithm>
#include <cmath>

#include "serve/port.h"

namespace fleetplan::serve::internal {
namespace {

// A pump handles at most this many event times, then yields the I/O thread (sockets,
// timers, signals) and continues: a clock far behind the wall catches up in slices.
constexpr int kMaxEventTimesPerPump = 1000;
constexpr double kMaxClockNs = 4e18;  // about 127 years: below int64's range on either clock

}  // namespace

Status EngineClock::Init(const FleetSetup& setup) {
  ports_.assign(setup.replicas.size(), nullptr);
  FP_ASSIGN_OR_RETURN(sim_, Simulation::Create(setup, this));
  sim_->SetFleetObserver(this);
  sim_->SetTokenCallback([this](const TokenEvent& ev) {
    if (auto it = owner_.find(ev.id); it != owner_.end()) it->second->HandleToken(ev);
  });
  return sim_->Start(nullptr);
}

// Both conversions saturate at kMaxClockNs rather than overflow int64.
SimTime EngineClock::SimOf(Clock::time_point t) const {
  const double ns = static_cast<double>((t - origin_).count()) * shared_.options.speed;
  return SimTime::FromNanos(static_cast<int64_t>(std::min(ns, kMaxClockNs)));
}

Clock::time_point EngineClock::WallOf(SimTime t) const {
  const double ns = std::ceil(static_cast<double>(t.ns()) / shared_.options.speed);
  return origin_ + std::chrono::nanoseconds(static_cast<int64_t>(std::min(ns, kMaxClockNs)));
}

AdapterId EngineClock::AdapterIdOf(const std::string& name) {
  const auto [it, added] = adapter_ids_.emplace(name, static_cast<AdapterId>(adapter_ids_.size()));
  return it->second;
}

Status EngineClock::Submit(const Request& r, Port* port) {
  owner_[r.id] = port;
  Status s = sim_->Submit(r);
  if (!s.ok()) owner_.erase(r.id);
  return s;
}

void EngineClock::Cancel(RequestId id) { sim_->Cancel(id, std::max(SimOf(Clock::now()), sim_->now())); }

void EngineClock::Pump(std::optional<SimTime> limit) {
  if (stopped_ || in_pump_) return;
  in_pump_ = true;
  const Clock::time_point now = Clock::now();
  SimTime t = std::max(SimOf(now), sim_->now());
  if (auto next = sim_->next_event(); next && WallOf(*next) <= now) t = std::max(t, *next);
  if (limit) t = std::max(*limit, sim_->now());
  // Event time by event time, a bounded slice per call: the rest is posted behind what
  // the I/O thread already has to do (a /health, a signal, --exit-after).
  Status s = Status::Ok();
  bool more = false;
  for (int handled = 0; s.ok(); ++handled) {
    const std::optional<SimTime> next = sim_->next_event();
    if (!next || *next > t) {
      s = sim_->RunUntil(t);
      break;
    }
    if (handled == kMaxEventTimesPerPump) {
      more = true;
      break;
    }
    s = sim_->RunUntil(*next);
  }
  in_pump_ = false;
  if (!s.ok()) {
    shared_.failure = InternalError(s.message());
    shared_.io.stop();
    return;
  }
  for (Port* p : ports_) p->AfterPump(now);
  if (more) {
    net::post(shared_.io, [this] { Pump(); });
  } else {
    ArmTimer();
  }
}

void EngineClock::ArmTimer() {
  auto next = sim_->next_event();
  if (!next) return;
  timer_.expires_at(WallOf(*next));
  timer_.async_wait([this](beast::error_code ec) {
    if (!ec) Pump();
  });
}

bool EngineClock::Scheduled(RequestId id, int32_t replica) const {
  auto started = [&](int32_t r) {
    const auto view = sim_->replica(r).request(id);
    return view && (view->running || view->num_computed > 0);
  };
  if (started(replica)) return true;
  if (role(replica) == PoolRole::kPrefill) return false;
  for (int32_t r = 0; r < sim_->replica_count(); ++r) {
    if (role(r) == PoolRole::kPrefill && started(r)) return true;
  }
  return false;
}

int64_t EngineClock::PendingHandoffs(int32_t replica) const {
  const auto* pools = sim_->component<Disaggregation>();
  if (pools == nullptr) return 0;
  ReplicaTelemetry t;
  pools->AddTelemetry(replica, t);
  return t.waiting;
}

void EngineClock::OnRequestDone(const RequestOutcome& o) {
  const auto it = owner_.find(o.id);
  if (it == owner_.end()) return;
  Port* port = it->second;
  owner_.erase(it);
  port->OnRequestDone(o);
}

void EngineClock::OnTransfer(const TransferEvent& e) { ports_[static_cast<size_t>(e.to)]->OnTransfer(e); }

}  // namespace fleetplan::serve::internal
