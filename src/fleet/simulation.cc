#include "fleetplan/fleet/simulation.h"

#include <fmt/format.h>

namespace fleetplan {

class Simulation::Forwarder final : public EngineObserver {
 public:
  explicit Forwarder(Simulation* sim) : sim_(sim) {}
  void OnRequestDone(const RequestOutcome& o) override {
    ++sim_->requests_done_;
    if (sim_->source_ != nullptr && o.finish) sim_->source_->OnRequestFinished(o.id, *o.finish);
    if (sim_->sink_ != nullptr) sim_->sink_->OnRequestDone(o);
  }
  void OnStep(const StepRecord& s) override {
    if (sim_->sink_ != nullptr) sim_->sink_->OnStep(s);
  }
  void OnFirstToken(int32_t replica, RequestId id, SimTime t) override {
    if (sim_->sink_ != nullptr) sim_->sink_->OnFirstToken(replica, id, t);
  }

 private:
  Simulation* sim_;
};

Expected<std::unique_ptr<Simulation>> Simulation::Create(const FleetSetup& setup, EngineObserver* sink) {
  if (setup.replicas.empty()) return InvalidInput("the fleet has no replicas");
  std::unique_ptr<Simulation> sim(new Simulation(setup, sink));
  for (size_t i = 0; i < setup.replicas.size(); ++i) {
    const ReplicaSetup& r = setup.replicas[i];
    FP_ASSERT(r.cost != nullptr);
    FP_ASSIGN_OR_RETURN(auto engine,
                        Engine::Create(static_cast<int32_t>(i), r.engine, r.cost.get(), sim->forwarder_.get()));
    sim->engines_.push_back(std::move(engine));
  }
  FP_ASSIGN_OR_RETURN(sim->router_, MakeRouter(setup.router));
  const size_t n = setup.replicas.size();
  sim->telemetry_.assign(n, ReplicaTelemetry{});
  sim->sent_requests_.assign(n, 0);
  sim->sent_tokens_.assign(n, 0);
  return sim;
}

Simulation::Simulation(const FleetSetup& setup, EngineObserver* sink)
    : setup_(setup), sink_(sink), forwarder_(std::make_unique<Forwarder>(this)) {}

Simulation::~Simulation() = default;

Status Simulation::PullArrival(RequestSource& source) {
  if (pending_arrival_) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::optional<Request> next, source.Next());
  if (!next) return Status::Ok();
  if (next->arrival < now_) {
    return InternalError(fmt::format("request {} arrives at {} ns, before the simulated time {} ns", next->id,
                                     next->arrival.ns(), now_.ns()));
  }
  if (!first_arrival_) first_arrival_ = next->arrival;
  queue_.Push(next->arrival, EventKind::kArrival);
  pending_arrival_ = std::move(next);
  return Status::Ok();
}

void Simulation::RefreshTelemetry(SimTime now) {
  for (size_t i = 0; i < engines_.size(); ++i) {
    const Engine& e = *engines_[i];
    telemetry_[i] = ReplicaTelemetry{e.waiting_count(), e.running_count(), e.outstanding_tokens(),
                                     e.pool().used_count(), e.pool().total(), now};
    sent_requests_[i] = 0;
    sent_tokens_[i] = 0;
  }
}

std::vector<ReplicaView> Simulation::BuildView() const {
  std::vector<ReplicaView> view(engines_.size());
  for (size_t i = 0; i < engines_.size(); ++i) {
    view[i] = ReplicaView{telemetry_[i], sent_requests_[i], sent_tokens_[i]};
  }
  return view;
}

void Simulation::OnArrival(SimTime now) {
  Request r = std::move(*pending_arrival_);
  pending_arrival_.reset();
  if (setup_.router.telemetry_delay == Duration()) RefreshTelemetry(now);
  int32_t target = 0;
  if (engines_.size() > 1) {
    const std::vector<ReplicaView> view = BuildView();
    target = router_->Route(r, view);
    FP_ASSERT(target >= 0 && target < replica_count());
  }
  const auto t = static_cast<size_t>(target);
  ++sent_requests_[t];
  sent_tokens_[t] += r.prompt_tokens() + r.output_tokens;
  if (r.cancel_at) queue_.Push(std::max(*r.cancel_at, now), EventKind::kCancel, target, r.id);
  engines_[t]->Submit(r, now);
  MaybeStart(target, now);
}

void Simulation::MaybeStart(int32_t replica, SimTime now) {
  Engine& e = *engines_[static_cast<size_t>(replica)];
  if (e.step_in_flight() || !e.HasWork()) return;
  if (const auto end = e.StartStep(now)) queue_.Push(*end, EventKind::kStepDone, replica);
}

bool Simulation::Drained() const {
  if (pending_arrival_ || source_ == nullptr || !source_->exhausted()) return false;
  for (const auto& engine : engines_) {
    if (engine->HasWork() || engine->step_in_flight()) return false;
  }
  return true;
}

Status Simulation::Run(RequestSource& source, const ProgressFn& progress) {
  source_ = &source;
  for (size_t i = 0; i < setup_.invalidations.size(); ++i) {
    queue_.Push(setup_.invalidations[i].at, EventKind::kInvalidate, -1, static_cast<int64_t>(i));
    ++pending_invalidations_;
  }
  FP_RETURN_IF_ERROR(PullArrival(source));
  const bool periodic_telemetry = setup_.router.telemetry_delay > Duration();
  if (periodic_telemetry) queue_.Push(now_, EventKind::kTelemetry);
  uint64_t handled = 0;
  while (!queue_.empty()) {
    const Event e = queue_.Pop();
    if (e.kind == EventKind::kInvalidate) {
      --pending_invalidations_;
      if (Drained()) continue;
    }
    now_ = e.time;
    switch (e.kind) {
      case EventKind::kArrival:
        OnArrival(now_);
        break;
      case EventKind::kStepDone:
        engines_[static_cast<size_t>(e.replica)]->FinishStep(now_);
        MaybeStart(e.replica, now_);
        break;
      case EventKind::kCancel:
        engines_[static_cast<size_t>(e.replica)]->Cancel(e.request, now_);
        MaybeStart(e.replica, now_);
        break;
      case EventKind::kTelemetry:
        RefreshTelemetry(now_);
        // Keep refreshing while anything else is still to happen.
        if (queue_.size() > pending_invalidations_ || pending_arrival_) {
          queue_.Push(now_ + setup_.router.telemetry_delay, EventKind::kTelemetry);
        }
        break;
      case EventKind::kInvalidate:
        for (auto& engine : engines_) {
          engine->Invalidate(setup_.invalidations[static_cast<size_t>(e.request)].invalidation);
        }
        break;
    }
    FP_RETURN_IF_ERROR(PullArrival(source));
    if (progress && (++handled % kProgressEvents) == 0) progress(now_, requests_done_);
  }
  source_ = nullptr;
  for (const auto& engine : engines_) {
    if (engine->HasWork() || engine->step_in_flight()) {
      return InternalError(fmt::format("replica {} still has work after the event queue drained", engine->replica()));
    }
  }
  return Status::Ok();
}

Status Simulation::CheckInvariants() const {
  for (const auto& engine : engines_) FP_RETURN_IF_ERROR(engine->CheckInvariants());
  return Status::Ok();
}

}  // namespace fleetplan
