#include "fleetplan/fleet/simulation.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/fleet/telemetry.h"
#include "fleetplan/metrics/percentile.h"

namespace fleetplan {

std::string_view ReplicaStateName(ReplicaState state) {
  switch (state) {
    case ReplicaState::kPending: return "pending";
    case ReplicaState::kLoading: return "loading";
    case ReplicaState::kReady: return "ready";
    case ReplicaState::kDraining: return "draining";
    case ReplicaState::kGone: return "gone";
  }
  return "unknown";
}

std::string_view DrainExpiryName(DrainExpiry expiry) {
  switch (expiry) {
    case DrainExpiry::kRequeue: return "requeue";
    case DrainExpiry::kCancel: return "cancel";
  }
  return "unknown";
}

class Simulation::Forwarder final : public EngineObserver {
 public:
  explicit Forwarder(Simulation* sim) : sim_(sim) {}
  void OnRequestDone(const RequestOutcome& o) override {
    if (!sim_->giving_up_.empty()) {
      const auto it = sim_->giving_up_.find(o.id);
      if (it != sim_->giving_up_.end() && it->second.replica == o.replica) {
        GivingUp g = std::move(it->second);
        sim_->giving_up_.erase(it);
        const SimTime now = o.finish.value_or(sim_->now_);
        if (g.expiry == DrainExpiry::kRequeue) {
          sim_->Requeue(*g.request, o.replica, now);
          return;
        }
        RequestOutcome c = o;
        c.status = RequestStatus::kCancelled;
        c.reason = "drained";
        ++sim_->table_[static_cast<size_t>(o.replica)].figures.drain_cancelled;
        sim_->Deliver(c);
        return;
      }
    }
    sim_->Deliver(o);
  }
  void OnStep(const StepRecord& s) override {
    if (sim_->sink_ != nullptr) sim_->sink_->OnStep(s);
  }
  void OnFirstToken(int32_t replica, RequestId id, SimTime t) override {
    // A component's copy (a prompt-only prefill): its token reaches the client with the
    // KV, from the serving replica.
    if (sim_->ledger_.IsCopy(replica, id)) return;
    const auto it = sim_->routes_.find(id);
    if (it != sim_->routes_.end()) {
      Replica& rep = sim_->table_[static_cast<size_t>(replica)];
      it->second.awaiting_first_token = false;
      rep.figures.ttft_ns.push_back(t.ns() - it->second.arrival_ns);
    }
    if (sim_->sink_ != nullptr) sim_->sink_->OnFirstToken(replica, id, t);
  }
  void OnToken(int32_t replica, RequestId id, int64_t index, SimTime t) override {
    if (!sim_->on_token_) return;
    if (sim_->ledger_.IsCopy(replica, id)) return;
    sim_->on_token_(TokenEvent{id, replica, index, t});
  }

 private:
  Simulation* sim_;
};

void Simulation::Deliver(const RequestOutcome& o) {
  for (const auto& c : components_) {
    if (c->ConsumeOutcome(o)) return;
  }
  ++requests_done_;
  for (const auto& c : components_) c->OnRequestDone(o);
  if (source_ != nullptr && o.finish) {
    source_->OnRequestFinished(o.id, *o.finish);
    source_told_ = true;
  }
  if (sink_ != nullptr) sink_->OnRequestDone(o);
  OnEnded(o);
}

Expected<std::unique_ptr<Simulation>> Simulation::Create(const FleetSetup& setup, EngineObserver* sink) {
  if (setup.replicas.empty()) return InvalidInput("the fleet has no replicas");
  std::unique_ptr<Simulation> sim(new Simulation(setup, sink));
  sim->roles_at_creation_.assign(3, false);
  for (const ReplicaSetup& r : setup.replicas) {
    FP_ASSERT(r.cost != nullptr);
    sim->roles_at_creation_[static_cast<size_t>(r.role)] = true;
  }
  const auto first_of = [&](bool prefill) -> const ReplicaSetup* {
    for (const ReplicaSetup& r : setup.replicas) {
      if ((r.role == PoolRole::kPrefill) == prefill) return &r;
    }
    return nullptr;
  };
  const ReplicaSetup* serving = first_of(false);
  const ReplicaSetup* prefill = first_of(true);
  if (serving == nullptr) return InvalidInput("the fleet has no mixed or decode replica to serve requests");
  RouterContext context;
  context.prefill_cost_per_token = serving->cost->PrefillCostPerToken();
  RouterContext serving_context = context;
  if (prefill != nullptr && prefill->link_bytes_per_second > 0) {
    // The serving replica of a disaggregated request fetches what it lacks from the
    // prefill replica rather than recomputing it.
    serving_context.missing_cost_per_token = Duration::Nanos(std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(prefill->kv_bytes_per_token) * 1e9 /
                                static_cast<double>(prefill->link_bytes_per_second))));
  }
  FP_ASSIGN_OR_RETURN(sim->routers_[static_cast<int>(RouterSet::kServing)], MakeRouter(setup.router, serving_context));
  if (prefill != nullptr) {
    RouterContext prefill_context;
    prefill_context.prefill_cost_per_token = prefill->cost->PrefillCostPerToken();
    FP_ASSIGN_OR_RETURN(sim->routers_[static_cast<int>(RouterSet::kPrefill)], MakeRouter(setup.router, prefill_context));
    FP_ASSIGN_OR_RETURN(sim->routers_[static_cast<int>(RouterSet::kAll)], MakeRouter(setup.router, context));
  }
  FP_RETURN_IF_ERROR(sim->AddComponents());
  for (const ReplicaSetup& r : setup.replicas) {
    const Expected<int32_t> id = sim->NewReplica(r, ReplicaState::kReady);
    if (!id.ok()) return id.status();
  }
  sim->RebuildReadyLists();
  return sim;
}

Simulation::Simulation(const FleetSetup& setup, EngineObserver* sink)
    : setup_(setup), sink_(sink), forwarder_(std::make_unique<Forwarder>(this)) {}

Simulation::~Simulation() = default;

Status Simulation::AddComponents() {
  queue_.Register(this);
  for (const FleetComponentRow& row : FleetComponents()) {
    const bool wanted = row.wanted != nullptr ? row.wanted(setup_) : setup_.components.Has(row.name);
    if (!wanted) continue;
    FP_ASSIGN_OR_RETURN(std::unique_ptr<FleetComponent> c, row.make(*this));
    queue_.Register(c.get());
    components_.push_back(std::move(c));
  }
  telemetry_ = find_component<Telemetry>();
  FP_ASSERT(telemetry_ != nullptr);  // a row that every fleet has
  return Status::Ok();
}

Expected<int32_t> Simulation::NewReplica(const ReplicaSetup& setup, ReplicaState state) {
  const auto id = static_cast<int32_t>(table_.size());
  FP_ASSIGN_OR_RETURN(auto engine, Engine::Create(id, setup.engine, setup.cost.get(), forwarder_.get()));
  if (on_token_) engine->set_token_events(true);
  Replica& rep = table_.emplace_back();
  rep.setup = setup;
  rep.engine = std::move(engine);
  rep.state = state;
  for (const auto& c : components_) FP_RETURN_IF_ERROR(c->OnReplicaAdded(id));
  return id;
}

void Simulation::RebuildReadyLists() {
  ready_all_.clear();
  ready_serving_.clear();
  ready_prefill_.clear();
  for (size_t i = 0; i < table_.size(); ++i) {
    if (table_[i].state != ReplicaState::kReady) continue;
    const auto id = static_cast<int32_t>(i);
    ready_all_.push_back(id);
    (table_[i].setup.role == PoolRole::kPrefill ? ready_prefill_ : ready_serving_).push_back(id);
  }
}

void Simulation::SetState(int32_t replica, ReplicaState state) {
  table_[static_cast<size_t>(replica)].state = state;
  RebuildReadyLists();
  for (const auto& c : components_) c->OnReplicaState(replica, state, now_);
}

Expected<int32_t> Simulation::AddReplica(const ReplicaSetup& setup, SimTime at, Duration load_time) {
  if (setup.cost == nullptr) return InvalidInput("a replica needs a step cost model");
  if (!roles_at_creation_[static_cast<size_t>(setup.role)]) {
    return InvalidInput(fmt::format("the fleet was created without a {} pool; a replica can join only a pool the "
                                    "fleet has",
                                    PoolRoleName(setup.role)));
  }
  if (at < now_) {
    return InvalidInput(fmt::format("a replica cannot join at {} ns, before the simulated time {} ns", at.ns(), now_.ns()));
  }
  if (load_time < Duration()) return InvalidInput("a replica's load time must be >= 0");
  FP_ASSIGN_OR_RETURN(int32_t id, NewReplica(setup, ReplicaState::kPending));
  queue_.Push(at, this, kReplicaLoading, id);
  queue_.Push(at + load_time, this, kReplicaReady, id);
  return id;
}

Status Simulation::DrainReplica(int32_t id, SimTime at) {
  if (id < 0 || id >= replica_count()) {
    return InvalidInput(fmt::format("no replica {} (the fleet has {})", id, replica_count()));
  }
  if (at < now_) {
    return InvalidInput(fmt::format("a replica cannot drain at {} ns, before the simulated time {} ns", at.ns(), now_.ns()));
  }
  queue_.Push(at, this, kReplicaDrain, id);
  return Status::Ok();
}

Status Simulation::DrainReplica(int32_t id, SimTime at, Duration grace, DrainExpiry expiry) {
  if (grace < Duration()) return InvalidInput("a drain's grace period must be >= 0");
  if (id >= 0 && id < replica_count() && role(id) == PoolRole::kPrefill) {
    return InvalidInput(fmt::format("replica {} is a prefill replica: it drains without a grace limit (its engine "
                                    "holds only prompt copies of requests owned by the pools)",
                                    id));
  }
  FP_RETURN_IF_ERROR(DrainReplica(id, at));
  table_[static_cast<size_t>(id)].figures.drain_limited = true;
  // Passive: a replica already gone when it fires changes nothing, and a grace longer
  // than the run must not stretch the simulated span.
  queue_.Push(at + grace, this, kReplicaLost, id, static_cast<int64_t>(expiry), /*passive=*/true);
  return Status::Ok();
}

void Simulation::LoseReplica(int32_t replica, DrainExpiry expiry) {
  Replica& rep = table_[static_cast<size_t>(replica)];
  if (rep.state == ReplicaState::kGone || rep.lost) return;
  if (rep.state != ReplicaState::kDraining) SetState(replica, ReplicaState::kDraining);
  rep.lost = expiry;
  // Components first: a handoff's import holds blocks in this engine until given up.
  std::vector<Request> given_up;
  for (const auto& c : components_) c->GiveUpHeld(replica, now_, given_up);
  // Delayed starts (a cold adapter) bound for it, in id order.
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second.first != replica) {
      ++it;
      continue;
    }
    given_up.push_back(std::move(it->second.second));
    it = delayed_.erase(it);
  }
  for (const Request& r : given_up) GiveUpRequest(r, replica, now_);
  // What its engine holds: each leaves through the engine's cancel (at once, or when the
  // step in flight ends), and the Forwarder turns that outcome into the expiry's.
  for (const RequestId id : rep.engine->LiveIds()) {
    GivingUp g;
    g.replica = replica;
    g.expiry = expiry;
    if (expiry == DrainExpiry::kRequeue) g.request = *rep.engine->live_request(id);
    giving_up_[id] = std::move(g);
    CancelOn(replica, id, now_);
  }
  MaybeGone(replica);
}

void Simulation::GiveUpRequest(const Request& r, int32_t replica, SimTime now) {
  Replica& rep = table_[static_cast<size_t>(replica)];
  FP_ASSERT(rep.lost.has_value());
  if (*rep.lost == DrainExpiry::kRequeue) {
    Requeue(r, replica, now);
    return;
  }
  ++rep.figures.drain_cancelled;
  EndInFleet(r, replica, RequestStatus::kCancelled, now, "drained");
}

void Simulation::Requeue(const Request& r, int32_t from, SimTime now) {
  Replica& rep = table_[static_cast<size_t>(from)];
  ReplicaFigures& f = rep.figures;
  if (const auto it = routes_.find(r.id); it != routes_.end()) {
    for (const auto& c : components_) c->OnRequestEnded(r.id, it->second);
    routes_.erase(it);
  }
  // Its entry on `from` must not name it once it is routed elsewhere (rare, so linear).
  auto& awaiting = rep.awaiting_first_token;
  awaiting.erase(std::remove_if(awaiting.begin(), awaiting.end(), [&](const auto& a) { return a.second == r.id; }),
                 awaiting.end());
  if (ready_serving_.empty()) {
    ++f.drain_rejected;
    EndInFleet(r, from, RequestStatus::kRejected, now, "its replica was lost and no ready replica can take it");
    return;
  }
  ++f.drain_requeued;
  telemetry_->BeforeDecision(now);
  requeuing_ = r.id;
  for (const auto& c : components_) {
    if (c->Dispatch(r, now)) {
      requeuing_.reset();
      return;
    }
  }
  requeuing_.reset();
  RouteRequest(r, now);
}

void Simulation::MaybeGone(int32_t replica) {
  Replica& rep = table_[static_cast<size_t>(replica)];
  if (rep.state != ReplicaState::kDraining) return;
  const Engine& e = *rep.engine;
  if (e.live_requests() != 0 || e.step_in_flight() || e.HasWork()) return;
  for (const auto& [id, d] : delayed_) {
    if (d.first == replica) return;
  }
  SetState(replica, ReplicaState::kGone);
}

void Simulation::SetTokenCallback(TokenFn fn) {
  on_token_ = std::move(fn);
  for (Replica& rep : table_) rep.engine->set_token_events(static_cast<bool>(on_token_));
}

Status Simulation::PullArrival() {
  // Every source request due before the earliest one held is held too: a closed-loop
  // source can announce, after a completion, a request due before the one it announced
  // earlier. An open-loop source is held one request ahead.
  // Only a completion can make a source announce an earlier request, and only an
  // arrival changes which held request is the earliest: without either since the last
  // look, everything due before the earliest held is held.
  if (!pulled_.empty() && !source_told_) return Status::Ok();
  source_told_ = false;
  while (source_ != nullptr) {
    FP_ASSIGN_OR_RETURN(std::optional<SimTime> peek, source_->PeekArrival());
    if (!peek || (!pulled_times_.empty() && peek->ns() >= pulled_times_.begin()->first)) return Status::Ok();
    FP_ASSIGN_OR_RETURN(std::optional<Request> next, source_->Next());
    FP_ASSERT(next.has_value());  // PeekArrival promised one
    if (next->arrival < now_) {
      return InternalError(fmt::format("request {} arrives at {} ns, before the simulated time {} ns", next->id,
                                       next->arrival.ns(), now_.ns()));
    }
    if (!first_arrival_ || next->arrival < *first_arrival_) first_arrival_ = next->arrival;
    const RequestId id = next->id;
    pulled_times_.insert({next->arrival.ns(), id});
    queue_.Push(next->arrival, this, kArrival, -1, id);
    pulled_.emplace(id, std::move(*next));
  }
  return Status::Ok();
}

Status Simulation::Submit(const Request& request) {
  if (!started_) return InternalError("Submit before Start");
  if (request.arrival < now_) {
    return InvalidInput(fmt::format("request {} arrives at {} ns, before the simulated time {} ns", request.id,
                                    request.arrival.ns(), now_.ns()));
  }
  if (request.output_tokens < 1 || request.prompt_tokens() < 1) {
    return InvalidInput(fmt::format("request {} needs at least one prompt and one output token", request.id));
  }
  if (!first_arrival_ || request.arrival < *first_arrival_) first_arrival_ = request.arrival;
  if (!pushed_.emplace(request.id, request).second) {
    for (const auto& c : components_) {
      if (c->ConsumeDuplicate(request, now_)) return Status::Ok();
    }
    return InvalidInput(fmt::format("request {} was already submitted", request.id));
  }
  queue_.Push(request.arrival, this, kPushedArrival, -1, request.id);
  return Status::Ok();
}

void Simulation::Cancel(RequestId id, SimTime at) {
  const auto p = pushed_.find(id);
  if (p != pushed_.end() && at < p->second.arrival) {
    // Before it arrives: it ends at its arrival, never routed.
    cancelled_before_arrival_.insert(id);
    return;
  }
  queue_.Push(std::max(at, now_), this, kCancel, -1, id);
}

std::optional<SimTime> Simulation::next_event() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.top().time;
}

void Simulation::OnArrival(Request r, SimTime now) {
  telemetry_->BeforeDecision(now);
  for (const auto& c : components_) c->OnArrival(r, now);
  for (const auto& c : components_) {
    if (c->Dispatch(r, now)) return;
  }
  RouteRequest(r, now);
}

void Simulation::RouteRequest(const Request& r, SimTime now) {
  if (ready_serving_.empty()) {
    EndInFleet(r, -1, RequestStatus::kRejected, now, "no ready replica to serve it");
    return;
  }
  std::optional<RouteDecision> d;
  const bool pinned = r.pinned_replica >= 0;  // then it is not the components' to place
  for (const auto& c : components_) {
    if (pinned) break;
    d = c->Route(r, now);
    if (d) break;
  }
  if (!d) {
    // One replica decides nothing (and its router keeps no rotation to advance).
    d = table_.size() > 1 || pinned ? RouteAmong(RouterSet::kServing, ready_serving_, r)
                                    : RouteDecision{ready_serving_[0], 0, {}, {}, 0};
  }
  AfterRoute(r, *d, now);
}

std::vector<ReplicaView> Simulation::BuildView(const std::vector<int32_t>& replicas) const {
  return telemetry_->View(replicas);
}

RouteDecision Simulation::RouteAmong(RouterSet set, const std::vector<int32_t>& replicas, const Request& r) {
  FP_ASSERT(!replicas.empty());
  std::vector<ReplicaView> view = BuildView(replicas);
  for (size_t i = 0; i < view.size(); ++i) {
    for (const auto& c : components_) c->FillView(r, replicas[i], view[i]);
  }
  RouteDecision d;
  const auto pinned = std::find(replicas.begin(), replicas.end(), r.pinned_replica);
  if (pinned != replicas.end()) {
    d.replica = static_cast<int32_t>(pinned - replicas.begin());
  } else {
    d = routers_[static_cast<int>(set)]->Route(r, view);
  }
  FP_ASSERT(d.replica >= 0 && static_cast<size_t>(d.replica) < replicas.size());
  d.matched_prefix_tokens = view[static_cast<size_t>(d.replica)].matched_prefix_tokens;
  d.replica = replicas[static_cast<size_t>(d.replica)];
  return d;
}

void Simulation::NoteDispatch(const Request& r, int32_t replica, int64_t tokens) {
  for (const auto& c : components_) c->OnDispatched(r, replica, tokens);
}

SimTime Simulation::BookRoute(const Request& r, const RouteDecision& d, SimTime now, std::string_view stage) {
  Replica& rep = table_[static_cast<size_t>(d.replica)];
  NoteDispatch(r, d.replica, r.prompt_tokens() + r.output_tokens);
  ReplicaFigures& f = rep.figures;
  ++f.routed;
  f.matched_prefix_tokens += d.matched_prefix_tokens;
  f.queued_work += d.queued_work;
  f.recompute += d.recompute;
  RouteInfo info;
  info.replica = d.replica;
  info.matched_prefix_tokens = d.matched_prefix_tokens;
  info.arrival_ns = r.arrival.ns();
  // Kept in routing order, so the front is the oldest; entries of requests that got a
  // first token or ended are dropped from the front lazily (amortized O(1)).
  auto& awaiting = rep.awaiting_first_token;
  while (!awaiting.empty()) {
    const auto it = routes_.find(awaiting.front().second);
    if (it != routes_.end() && it->second.awaiting_first_token) break;
    awaiting.pop_front();
  }
  if (!awaiting.empty()) {
    info.queue_age = now - SimTime::FromNanos(awaiting.front().first);
  }
  SimTime ready = now;
  for (const auto& c : components_) ready = std::max(ready, c->OnRouted(r, d.replica, now, info));
  routes_[r.id] = info;
  FP_ASSERT(awaiting.empty() || awaiting.back().first <= now.ns());
  awaiting.emplace_back(now.ns(), r.id);
  if (fleet_observer_ != nullptr) {
    fleet_observer_->OnRoute({now, r.id, d.replica, stage, d.matched_prefix_tokens, info.queue_age});
  }
  return ready;
}

void Simulation::AfterRoute(const Request& r, const RouteDecision& d, SimTime now) {
  const SimTime ready = BookRoute(r, d, now);
  if (ready > now) {
    delayed_.emplace(r.id, std::make_pair(d.replica, r));
    queue_.Push(ready, this, kDelayedStart, d.replica, r.id);
    return;
  }
  SubmitTo(d.replica, r, now);
}

void Simulation::ScheduleCancel(const Request& r, SimTime now) {
  if (r.cancel_at) queue_.Push(std::max(*r.cancel_at, now), this, kCancel, -1, r.id);
}

void Simulation::SubmitTo(int32_t replica, const Request& r, SimTime now, bool schedule_cancel) {
  if (r.cancel_at && schedule_cancel) queue_.Push(std::max(*r.cancel_at, now), this, kCancel, replica, r.id);
  Replica& rep = table_[static_cast<size_t>(replica)];
  rep.engine->Submit(r, now);
  rep.figures.max_queue_depth = std::max(rep.figures.max_queue_depth, rep.engine->waiting_count());
  MaybeStart(replica, now);
}

void Simulation::OnEnded(const RequestOutcome& o) {
  if (o.replica < 0) return;  // never routed (a live route of this id is another request's)
  const auto it = routes_.find(o.id);
  if (it == routes_.end()) return;
  for (const auto& c : components_) c->OnRequestEnded(o.id, it->second);
  routes_.erase(it);
}

void Simulation::OnCancelEvent(const Event& e) {
  for (const auto& c : components_) {
    if (c->ConsumeCancel(e.request, now_)) return;
  }
  int32_t replica = e.replica;
  if (replica < 0) {  // scheduled at a handoff that has since reached its serving replica, or pushed
    const auto it = routes_.find(e.request);
    if (it == routes_.end()) return;  // already ended (or never arrived)
    replica = it->second.replica;
  }
  if (const auto d = delayed_.find(e.request); d != delayed_.end()) {
    // Waiting for its start (a cold adapter): it ends without reaching the engine.
    replica = d->second.first;  // requeued from a lost replica: no longer e.replica
    const Request r = d->second.second;
    delayed_.erase(d);
    EndInFleet(r, replica, RequestStatus::kCancelled, now_, {});
    MaybeGone(replica);
    return;
  }
  CancelOn(replica, e.request, now_);
}

void Simulation::CancelOn(int32_t replica, RequestId id, SimTime now) {
  {
    EngineCall call(this, replica);
    engine(replica).Cancel(id, now);
  }
  AfterRelease(replica, now);
  MaybeStart(replica, now);
}

void Simulation::EndInFleet(const Request& r, int32_t replica, RequestStatus status, SimTime now, std::string reason,
                            std::optional<Duration> retry_after) {
  RequestOutcome o;
  o.id = r.id;
  o.class_id = r.class_id;
  o.tenant = r.tenant;
  o.replica = replica;
  o.status = status;
  o.arrival = r.arrival;
  o.finish = now;
  o.input_tokens = r.prompt_tokens();
  o.reason = std::move(reason);
  o.retry_after = retry_after;
  forwarder_->OnRequestDone(o);
}

namespace {
RecordStatus ToRecordStatus(RequestStatus s) {
  switch (s) {
    case RequestStatus::kOk: return RecordStatus::kOk;
    case RequestStatus::kRejected: return RecordStatus::kRejected;
    case RequestStatus::kCancelled: return RecordStatus::kCancelled;
    case RequestStatus::kTimeout: return RecordStatus::kTimeout;
  }
  return RecordStatus::kError;
}
}  // namespace

RequestRecord ToRequestRecord(const RequestOutcome& o) {
  RequestRecord r;
  r.id = o.id;
  r.class_id = o.class_id;
  r.tenant = o.tenant;
  r.status = ToRecordStatus(o.status);
  r.arrival = o.arrival;
  r.first_token = o.first_token;
  r.finish = o.finish;
  r.input_tokens = o.input_tokens;
  r.output_tokens = o.output_tokens;
  if (o.output_tokens >= 2) r.itl_max = o.itl_max;
  if (o.status != RequestStatus::kOk) r.reason = o.reason;
  r.retry_after = o.retry_after;
  return r;
}

const RouteInfo* Simulation::route_of(RequestId id) const {
  const auto it = routes_.find(id);
  return it == routes_.end() ? nullptr : &it->second;
}

namespace {
// Nearest-rank percentile of unsorted values, in ms; 0 when empty.
double PercentileMs(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  return static_cast<double>(NearestRankSelect(v, q)) / 1e6;
}
double MeanMs(Duration sum, int64_t n) { return n > 0 ? sum.millis() / static_cast<double>(n) : 0.0; }
}  // namespace

Json Simulation::ReplicaReportJson(Duration span, Json* engine_replicas) {
  Json out = Json::array();
  const bool lifecycle = std::any_of(table_.begin(), table_.end(),
                                     [](const Replica& r) { return r.state != ReplicaState::kReady; });
  for (size_t i = 0; i < table_.size(); ++i) {
    const ReplicaFigures& f = table_[i].figures;
    Json j{{"replica", i},
           {"routed", f.routed},
           {"max_queue_depth", f.max_queue_depth},
           // null, not 0, when no request got a first token here: an empty distribution has no p99.
           {"ttft_p99_ms", f.ttft_ns.empty() ? Json() : Json(PercentileMs(f.ttft_ns, 0.99))},
           {"mean_matched_prefix_tokens",
            f.routed > 0 ? static_cast<double>(f.matched_prefix_tokens) / static_cast<double>(f.routed) : 0.0},
           {"mean_queued_work_ms", MeanMs(f.queued_work, f.routed)},
           {"mean_recompute_ms", MeanMs(f.recompute, f.routed)}};
    if (lifecycle) j["state"] = std::string(ReplicaStateName(table_[i].state));
    if (f.drain_limited) {
      j["drain"] = Json{{"requeued", f.drain_requeued}, {"rejected", f.drain_rejected}, {"cancelled", f.drain_cancelled}};
    }
    Json scratch;
    Json& engine = engine_replicas != nullptr ? (*engine_replicas)[i] : scratch;
    for (const auto& c : components_) c->AddReplicaReport(static_cast<int32_t>(i), span, j, engine);
    out.push_back(std::move(j));
  }
  return out;
}

void Simulation::AddComponentReports(Duration span, Json& report) const {
  for (const auto& c : components_) c->AddReport(span, report);
}

void Simulation::MaybeStart(int32_t replica, SimTime now) {
  FP_ASSERT(now == now_);
  Replica& rep = table_[static_cast<size_t>(replica)];
  if (rep.start_pending) return;
  rep.start_pending = true;
  pending_starts_.push_back(replica);
}

void Simulation::StartPending() {
  // A start may ask for more (a release lets a component submit): they join the list.
  for (size_t i = 0; i < pending_starts_.size(); ++i) {
    const int32_t replica = pending_starts_[i];
    table_[static_cast<size_t>(replica)].start_pending = false;
    StartIfIdle(replica, now_);
  }
  pending_starts_.clear();
}

void Simulation::StartIfIdle(int32_t replica, SimTime now) {
  Replica& rep = table_[static_cast<size_t>(replica)];
  if (rep.setup.lockstep_group >= 0) {
    MaybeStartGroup(replica, now);
    return;
  }
  Engine& e = *rep.engine;
  if (rep.in_engine_call || e.step_in_flight() || !e.HasWork()) {
    if (!rep.in_engine_call) MaybeGone(replica);
    return;
  }
  std::optional<SimTime> end;
  {
    EngineCall call(this, replica);
    end = e.StartStep(now);
  }
  if (end) {
    queue_.Push(*end, this, kStepDone, replica);
    return;
  }
  // Planning found nothing to run (its waiting requests timed out): blocks may be free.
  AfterRelease(replica, now);
  MaybeGone(replica);
}

void Simulation::MaybeStartGroup(int32_t replica, SimTime now) {
  const int32_t group = table_[static_cast<size_t>(replica)].setup.lockstep_group;
  // Members in replica order (the table's order is stable): the group starts only when no
  // member is inside an engine call or has a step in flight.
  std::vector<int32_t> members;
  bool work = false;
  for (size_t i = 0; i < table_.size(); ++i) {
    const Replica& m = table_[i];
    if (m.setup.lockstep_group != group) continue;
    if (m.in_engine_call || m.engine->step_in_flight()) return;
    members.push_back(static_cast<int32_t>(i));
    work = work || m.engine->HasWork();
  }
  if (!work) {
    for (int32_t m : members) MaybeGone(m);
    return;
  }
  SimTime end = now;
  std::vector<int32_t> started;
  std::vector<int32_t> idle;  // no work, or planning found nothing to run
  for (int32_t m : members) {
    Engine& e = *table_[static_cast<size_t>(m)].engine;
    if (!e.HasWork()) {
      idle.push_back(m);
      continue;
    }
    std::optional<SimTime> member_end;
    {
      EngineCall call(this, m);
      member_end = e.StartStep(now);
    }
    if (member_end) {
      started.push_back(m);
      end = std::max(end, *member_end);
    } else {
      // Planning found nothing to run (its waiting requests timed out): blocks may be free.
      AfterRelease(m, now);
      idle.push_back(m);
    }
  }
  for (int32_t m : started) {
    table_[static_cast<size_t>(m)].engine->StretchStep(end);
    queue_.Push(end, this, kStepDone, m);
  }
  for (int32_t m : idle) MaybeGone(m);
}

void Simulation::AfterRelease(int32_t replica, SimTime now) {
  for (const auto& c : components_) c->AfterRelease(replica, now);
}

bool Simulation::Drained() const {
  if (!pulled_.empty() || !pushed_.empty() || !delayed_.empty() || ledger_.held() > 0) return false;
  if (source_ != nullptr && !source_->exhausted()) return false;
  for (const Replica& rep : table_) {
    if (rep.engine->HasWork() || rep.engine->step_in_flight()) return false;
  }
  return true;
}

void Simulation::OnStepDone(int32_t replica) {
  Replica& rep = table_[static_cast<size_t>(replica)];
  {
    EngineCall call(this, replica);
    rep.engine->FinishStep(now_);
  }
  rep.figures.max_queue_depth = std::max(rep.figures.max_queue_depth, rep.engine->waiting_count());
  AfterRelease(replica, now_);
  MaybeStart(replica, now_);
}

void Simulation::OnEvent(const Event& e) {
  switch (static_cast<Code>(e.code)) {
    case kArrival: {
      auto node = pulled_.extract(e.request);
      FP_ASSERT(!node.empty());
      pulled_times_.erase({node.mapped().arrival.ns(), e.request});
      source_told_ = true;  // the earliest held changed: look again
      OnArrival(std::move(node.mapped()), now_);
      break;
    }
    case kPushedArrival: {
      auto node = pushed_.extract(e.request);
      FP_ASSERT(!node.empty());
      if (cancelled_before_arrival_.erase(e.request) != 0) {
        for (const auto& c : components_) c->OnArrival(node.mapped(), now_);
        EndInFleet(node.mapped(), -1, RequestStatus::kCancelled, now_, "cancelled before it arrived");
        break;
      }
      OnArrival(std::move(node.mapped()), now_);
      break;
    }
    case kStepDone: OnStepDone(e.replica); break;
    case kCancel: OnCancelEvent(e); break;
    case kDelayedStart: {
      const auto it = delayed_.find(e.request);
      // Cancelled while it waited, or given up by a lost replica (and perhaps delayed
      // again on another).
      if (it == delayed_.end() || it->second.first != e.replica) break;
      auto node = delayed_.extract(it);
      SubmitTo(node.mapped().first, node.mapped().second, now_);
      break;
    }
    case kReplicaLoading:
      // A replica drained while pending never loads.
      if (state(e.replica) == ReplicaState::kPending) SetState(e.replica, ReplicaState::kLoading);
      break;
    case kReplicaReady:
      // A replica drained before it was ready never serves.
      if (state(e.replica) == ReplicaState::kLoading) SetState(e.replica, ReplicaState::kReady);
      break;
    case kReplicaDrain:
      if (state(e.replica) == ReplicaState::kGone || state(e.replica) == ReplicaState::kDraining) break;
      SetState(e.replica, ReplicaState::kDraining);
      MaybeGone(e.replica);
      break;
    case kReplicaLost: LoseReplica(e.replica, static_cast<DrainExpiry>(e.request)); break;
  }
}

Status Simulation::Start(RequestSource* source, const ProgressFn& progress) {
  if (started_) return InternalError("Start called twice");
  started_ = true;
  source_ = source;
  progress_ = progress;
  for (const auto& c : components_) c->OnStart(now_);
  FP_RETURN_IF_ERROR(PullArrival());
  telemetry_->StartPeriodic(now_);
  return Status::Ok();
}

Status Simulation::HandleEvents(SimTime until) {
  if (!pending_starts_.empty()) StartPending();  // asked for outside an event (Start, a push)
  while (!stop_requested_ && !queue_.empty() && queue_.top().time <= until) {
    const Event e = queue_.Pop();
    if (e.passive && Drained()) continue;
    now_ = e.time;
    queue_.handler(e.handler)->OnEvent(e);
    if (pulled_.empty() || source_told_) FP_RETURN_IF_ERROR(PullArrival());
    // The instant's last event handled: the steps asked for in it start now.
    if (!pending_starts_.empty() && (queue_.empty() || queue_.top().time > now_)) StartPending();
    if (event_hook_) event_hook_();
    if (progress_ && (++handled_ % kProgressEvents) == 0) progress_(now_, requests_done_);
  }
  return Status::Ok();
}

Status Simulation::RunUntil(SimTime t) {
  if (!started_) return InternalError("RunUntil before Start");
  FP_RETURN_IF_ERROR(HandleEvents(t));
  if (t > now_ && t != SimTime::Max()) now_ = t;
  return Status::Ok();
}

Status Simulation::Finish() {
  if (!started_) return InternalError("Finish before Start");
  FP_RETURN_IF_ERROR(HandleEvents(SimTime::Max()));
  source_ = nullptr;
  if (stop_requested_) return Status::Ok();  // stopped early: requests may still be live
  return CheckEnd();
}

Status Simulation::Run(RequestSource& source, const ProgressFn& progress) {
  FP_RETURN_IF_ERROR(Start(&source, progress));
  return Finish();
}

Status Simulation::CheckEnd() const {
  for (const auto& c : components_) {
    if (const int64_t held = ledger_.held_by(c.get()); held != 0) {
      return InternalError(fmt::format("{} requests still held by {} after the event queue drained", held, c->name()));
    }
  }
  if (ledger_.held() != 0) {
    return InternalError(fmt::format("{} requests still held in the request ledger after the event queue drained",
                                     ledger_.held()));
  }
  for (const Replica& rep : table_) {
    const Engine& engine = *rep.engine;
    if (engine.HasWork() || engine.step_in_flight()) {
      return InternalError(fmt::format("replica {} still has work after the event queue drained", engine.replica()));
    }
    if (engine.live_requests() != 0 || engine.pool().total_refs() != 0) {
      return InternalError(fmt::format("replica {} holds {} requests and {} block references after every request "
                                       "ended",
                                       engine.replica(), engine.live_requests(), engine.pool().total_refs()));
    }
  }
  if (!routes_.empty()) return InternalError(fmt::format("{} requests still routed after every request ended", routes_.size()));
  return Status::Ok();
}

Status Simulation::CheckInvariants() const {
  int64_t in_engines = 0;
  for (const Replica& rep : table_) {
    FP_RETURN_IF_ERROR(rep.engine->CheckInvariants());
    in_engines += rep.engine->live_requests();
    // The awaiting queue is in arrival order and holds every live request routed here
    // that awaits its first token (stale entries of others may remain).
    int64_t awaiting = 0;
    for (size_t k = 0; k < rep.awaiting_first_token.size(); ++k) {
      const auto& [arrival, id] = rep.awaiting_first_token[k];
      if (k > 0 && rep.awaiting_first_token[k - 1].first > arrival) {
        return InternalError(fmt::format("replica {}'s awaiting queue is out of routing order", rep.engine->replica()));
      }
      const auto it = routes_.find(id);
      if (it != routes_.end() && it->second.awaiting_first_token) {
        if (it->second.replica != rep.engine->replica()) {
          return InternalError(fmt::format("replica {} awaits a first token of request {}, routed to {}",
                                           rep.engine->replica(), id, it->second.replica));
        }
        ++awaiting;
      }
    }
    int64_t routed_awaiting = 0;
    for (const auto& [id, info] : routes_) {
      routed_awaiting += info.replica == rep.engine->replica() && info.awaiting_first_token ? 1 : 0;
    }
    if (awaiting != routed_awaiting) {
      return InternalError(fmt::format("replica {} queues {} requests awaiting a first token; {} routed there await one",
                                       rep.engine->replica(), awaiting, routed_awaiting));
    }
    if (rep.state == ReplicaState::kGone && (rep.engine->live_requests() != 0 || rep.engine->step_in_flight())) {
      return InternalError(fmt::format("replica {} is gone but holds {} requests", rep.engine->replica(),
                                       rep.engine->live_requests()));
    }
    if (rep.state != ReplicaState::kReady &&
        std::find(ready_all_.begin(), ready_all_.end(), rep.engine->replica()) != ready_all_.end()) {
      return InternalError(fmt::format("replica {} is {} but routable", rep.engine->replica(),
                                       ReplicaStateName(rep.state)));
    }
  }
  // Every routed request is in exactly one place: an engine, a delayed start, or the
  // request ledger (whose entries say which of them are also live in an engine: a
  // prompt-only copy on a prefill replica, an import in progress).
  for (const auto& c : components_) FP_RETURN_IF_ERROR(c->CheckInvariants());
  FP_RETURN_IF_ERROR(ledger_.CheckInvariants());
  const int64_t held = ledger_.routed();
  const int64_t copies = ledger_.copies();
  const int64_t routed = static_cast<int64_t>(routes_.size());
  const int64_t placed = in_engines - copies + static_cast<int64_t>(delayed_.size()) + held;
  if (routed != placed) {
    return InternalError(fmt::format("{} requests routed, but {} in engines ({} of them prefill copies), {} with a "
                                     "delayed start and {} in the request ledger",
                                     routed, in_engines, copies, delayed_.size(), held));
  }
  return Status::Ok();
}

}  // namespace fleetplan
