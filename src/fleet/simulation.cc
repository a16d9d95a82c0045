#include "fleetplan/fleet/simulation.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fleetplan {

class Simulation::Forwarder final : public EngineObserver {
 public:
  explicit Forwarder(Simulation* sim) : sim_(sim) {}
  void OnRequestDone(const RequestOutcome& o) override {
    if (sim_->InPrefillStage(o.replica, o.id) && sim_->OnPrefillEnded(o)) return;
    ++sim_->requests_done_;
    if (sim_->source_ != nullptr && o.finish) sim_->source_->OnRequestFinished(o.id, *o.finish);
    if (sim_->sink_ != nullptr) sim_->sink_->OnRequestDone(o);
    sim_->OnEnded(o);
  }
  void OnStep(const StepRecord& s) override {
    if (sim_->sink_ != nullptr) sim_->sink_->OnStep(s);
  }
  void OnFirstToken(int32_t replica, RequestId id, SimTime t) override {
    // A prefill replica's token reaches the client with the KV, from the serving replica.
    if (sim_->InPrefillStage(replica, id)) return;
    const auto it = sim_->routes_.find(id);
    if (it != sim_->routes_.end()) {
      auto& awaiting = sim_->awaiting_first_token_[static_cast<size_t>(replica)];
      awaiting.erase({it->second.arrival_ns, id});
      sim_->figures_[static_cast<size_t>(replica)].ttft_ns.push_back(t.ns() - it->second.arrival_ns);
    }
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
  const size_t n = setup.replicas.size();
  for (size_t i = 0; i < n; ++i) {
    (setup.replicas[i].role == PoolRole::kPrefill ? sim->prefill_ : sim->serving_).push_back(static_cast<int32_t>(i));
  }
  if (sim->serving_.empty()) return InvalidInput("the fleet has no mixed or decode replica to serve requests");
  RouterContext context;
  context.prefill_cost_per_token = setup.replicas[static_cast<size_t>(sim->serving_[0])].cost->PrefillCostPerToken();
  RouterContext serving_context = context;
  if (!sim->prefill_.empty()) {
    // The serving replica of a disaggregated request fetches what it lacks from the
    // prefill replica rather than recomputing it.
    const ReplicaSetup& p = setup.replicas[static_cast<size_t>(sim->prefill_[0])];
    if (p.link_bytes_per_second > 0) {
      serving_context.missing_cost_per_token = Duration::Nanos(std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<double>(p.kv_bytes_per_token) * 1e9 /
                                  static_cast<double>(p.link_bytes_per_second))));
    }
  }
  FP_ASSIGN_OR_RETURN(sim->router_, MakeRouter(setup.router, serving_context));
  if (!sim->prefill_.empty()) {
    RouterContext prefill_context;
    prefill_context.prefill_cost_per_token =
        setup.replicas[static_cast<size_t>(sim->prefill_[0])].cost->PrefillCostPerToken();
    FP_ASSIGN_OR_RETURN(sim->prefill_router_, MakeRouter(setup.router, prefill_context));
    FP_ASSIGN_OR_RETURN(sim->colocate_router_, MakeRouter(setup.router, context));
    for (size_t i = 0; i < n; ++i) sim->all_.push_back(static_cast<int32_t>(i));
    sim->admission_queue_.assign(n, {});
    sim->transfer_queue_.assign(n, {});
    sim->reserved_blocks_.assign(n, 0);
    sim->reserved_requests_.assign(n, 0);
    sim->pending_requests_.assign(n, 0);
    sim->pending_tokens_.assign(n, 0);
    sim->links_.resize(n);
    sim->link_owner_.assign(n, {});
    sim->link_event_at_.assign(n, std::nullopt);
    for (int32_t p : sim->prefill_) {
      const ReplicaSetup& r = setup.replicas[static_cast<size_t>(p)];
      if (r.link_bytes_per_second < 1 || r.kv_bytes_per_token < 1) {
        return InvalidInput(fmt::format("prefill replica {} has no KV transfer link or KV size", p));
      }
      sim->links_[static_cast<size_t>(p)].emplace(setup.disaggregation.setup, r.link_bytes_per_second);
    }
  }
  sim->telemetry_.assign(n, ReplicaTelemetry{});
  sim->sent_requests_.assign(n, 0);
  sim->sent_tokens_.assign(n, 0);
  const RouterConfig& rc = setup.router;
  const auto prefix_weight = rc.weights.find("prefix");
  const EngineConfig& e = setup.replicas[0].engine;
  // Prefix beliefs only where a policy reads them and the replicas cache prefixes.
  sim->tracks_prefixes_ = e.prefix_cache.enabled &&
                          (rc.policy == "cache-aware" || (rc.policy == "weighted" && prefix_weight != rc.weights.end() &&
                                                          prefix_weight->second > 0));
  if (sim->tracks_prefixes_ && !rc.precise) {
    sim->prefix_view_.emplace(static_cast<int32_t>(n), e.kv_blocks, e.block_tokens,
                              e.prefix_cache.share_across_tenants);
  }
  if (setup.replication.enabled) {
    if (!sim->tracks_prefixes_) {
      return InvalidInput("hot-prefix replication needs the prefix cache and a router that reads prefixes");
    }
    if (!sim->prefix_view_) {
      sim->hasher_.emplace(1, 0, e.block_tokens, e.prefix_cache.share_across_tenants);
    }
    const int64_t blocks = (setup.replication.prefix_tokens + e.block_tokens - 1) / e.block_tokens;
    sim->placement_.emplace(setup.replication, blocks, e.block_tokens, static_cast<int32_t>(n));
  }
  if (setup.adapters.enabled) sim->adapters_.assign(n, AdapterResidency(setup.adapters));
  sim->adapter_snapshot_.assign(n, {});
  sim->adapter_sent_.assign(n, {});
  sim->awaiting_first_token_.assign(n, {});
  sim->figures_.assign(n, ReplicaFigures{});
  sim->in_engine_call_.assign(n, 0);
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
    if (!pending_requests_.empty()) {
      telemetry_[i].waiting += pending_requests_[i];
      telemetry_[i].outstanding_tokens += pending_tokens_[i];
    }
    sent_requests_[i] = 0;
    sent_tokens_[i] = 0;
    adapter_sent_[i].clear();
    adapter_snapshot_[i].clear();
    if (!adapters_.empty()) adapters_[i].AppendResident(&adapter_snapshot_[i]);
  }
}

std::vector<ReplicaView> Simulation::BuildView(const std::vector<int32_t>& replicas) const {
  std::vector<ReplicaView> view(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    const auto r = static_cast<size_t>(replicas[i]);
    view[i] = ReplicaView{telemetry_[r], sent_requests_[r], sent_tokens_[r]};
  }
  return view;
}

bool Simulation::BelievesAdapterResident(size_t i, AdapterId a) const {
  if (setup_.router.precise) return adapters_[i].resident(a);
  const auto has = [a](const std::vector<AdapterId>& v) { return std::find(v.begin(), v.end(), a) != v.end(); };
  return std::binary_search(adapter_snapshot_[i].begin(), adapter_snapshot_[i].end(), a) || has(adapter_sent_[i]);
}

void Simulation::FillRequestView(const Request& r, const std::vector<int32_t>& replicas,
                                 std::vector<ReplicaView>& view) {
  for (size_t i = 0; i < view.size(); ++i) {
    const int32_t replica = replicas[i];
    if (tracks_prefixes_) {
      view[i].matched_prefix_tokens = prefix_view_ ? prefix_view_->MatchedTokens(replica, hashes_)
                                                   : engines_[static_cast<size_t>(replica)]->PeekCachedPrefixTokens(r);
    }
    if (r.adapter != kNoAdapter && !adapters_.empty()) {
      view[i].adapter_resident = BelievesAdapterResident(static_cast<size_t>(replica), r.adapter);
    }
  }
}

RouteDecision Simulation::RouteAmong(Router& router, const std::vector<int32_t>& replicas, const Request& r) {
  std::vector<ReplicaView> view = BuildView(replicas);
  FillRequestView(r, replicas, view);
  RouteDecision d = router.Route(r, view);
  FP_ASSERT(d.replica >= 0 && static_cast<size_t>(d.replica) < replicas.size());
  d.matched_prefix_tokens = view[static_cast<size_t>(d.replica)].matched_prefix_tokens;
  d.replica = replicas[static_cast<size_t>(d.replica)];
  return d;
}

void Simulation::OnArrival(SimTime now) {
  Request r = std::move(*pending_arrival_);
  pending_arrival_.reset();
  if (setup_.router.telemetry_delay == Duration()) RefreshTelemetry(now);
  if (prefix_view_) prefix_view_->Hash(r, &hashes_);
  if (!prefill_.empty()) {
    RouteWithPools(r, now);
    return;
  }
  RouteDecision d;
  if (placement_) {
    d = RouteWithPlacement(r, now);
  } else if (engines_.size() > 1) {
    d = RouteAmong(*router_, serving_, r);
  }
  AfterRoute(r, d, now);
}

RouteDecision Simulation::RouteWithPlacement(const Request& r, SimTime now) {
  if (hasher_) hasher_->Hash(r, &hashes_);
  const BlockHash* found = placement_->KeyOf(hashes_);
  if (found == nullptr) return RouteAmong(*router_, serving_, r);
  const BlockHash key = *found;
  const std::vector<int32_t>& members = placement_->Arrive(key, now, BuildView(serving_));
  if (!members.empty()) return RouteAmong(*router_, std::vector<int32_t>(members), r);
  const RouteDecision d = RouteAmong(*router_, serving_, r);
  placement_->Place(key, d.replica, now);
  return d;
}

SimTime Simulation::BookRoute(const Request& r, const RouteDecision& d, SimTime now, std::string_view stage) {
  const auto t = static_cast<size_t>(d.replica);
  ++sent_requests_[t];
  sent_tokens_[t] += r.prompt_tokens() + r.output_tokens;
  if (prefix_view_) prefix_view_->Record(d.replica, hashes_);
  ReplicaFigures& f = figures_[t];
  ++f.routed;
  f.matched_prefix_tokens += d.matched_prefix_tokens;
  f.queued_work += d.queued_work;
  f.recompute += d.recompute;
  RouteInfo info;
  info.replica = d.replica;
  info.matched_prefix_tokens = d.matched_prefix_tokens;
  info.arrival_ns = r.arrival.ns();
  const auto& awaiting = awaiting_first_token_[t];
  if (!awaiting.empty()) info.queue_age = now - SimTime::FromNanos(awaiting.begin()->first);
  SimTime ready = now;
  if (r.adapter != kNoAdapter && !adapters_.empty()) {
    adapter_sent_[t].push_back(r.adapter);
    info.adapter = r.adapter;
    ready = adapters_[t].Acquire(r.adapter, now);
    info.adapter_wait = ready - now;
  }
  routes_[r.id] = info;
  awaiting_first_token_[t].insert({info.arrival_ns, r.id});
  if (fleet_observer_ != nullptr) {
    fleet_observer_->OnRoute({now, r.id, d.replica, stage, d.matched_prefix_tokens, info.queue_age});
  }
  return ready;
}

// Books the decision and submits the request now, or when its adapter has loaded.
void Simulation::AfterRoute(const Request& r, const RouteDecision& d, SimTime now) {
  const SimTime ready = BookRoute(r, d, now);
  if (ready > now) {
    delayed_.emplace(r.id, std::make_pair(d.replica, r));
    queue_.Push(ready, EventKind::kAdapterReady, d.replica, r.id);
    return;
  }
  SubmitTo(d.replica, r, now);
}

void Simulation::SubmitTo(int32_t replica, const Request& r, SimTime now, bool schedule_cancel) {
  if (r.cancel_at && schedule_cancel) queue_.Push(std::max(*r.cancel_at, now), EventKind::kCancel, replica, r.id);
  Engine& e = *engines_[static_cast<size_t>(replica)];
  e.Submit(r, now);
  ReplicaFigures& f = figures_[static_cast<size_t>(replica)];
  f.max_queue_depth = std::max(f.max_queue_depth, e.waiting_count());
  MaybeStart(replica, now);
}

void Simulation::OnEnded(const RequestOutcome& o) {
  const auto it = routes_.find(o.id);
  if (it == routes_.end()) return;
  const auto t = static_cast<size_t>(it->second.replica);
  awaiting_first_token_[t].erase({it->second.arrival_ns, o.id});
  if (it->second.adapter != kNoAdapter) adapters_[t].Release(it->second.adapter);
  routes_.erase(it);
}

void Simulation::Cancel(const Event& e) {
  const auto h = handoffs_.find(e.request);
  if (h != handoffs_.end()) {
    CancelHandoff(h->second, now_);
    return;
  }
  int32_t replica = e.replica;
  if (replica < 0) {  // scheduled at a handoff that has since reached its serving replica
    const auto it = routes_.find(e.request);
    if (it == routes_.end()) return;  // already ended
    replica = it->second.replica;
  }
  {
    EngineCall call(this, replica);
    engines_[static_cast<size_t>(replica)]->Cancel(e.request, now_);
  }
  AfterRelease(replica, now_);
  MaybeStart(replica, now_);
}

void Simulation::EndInFleet(const Request& r, int32_t replica, RequestStatus status, SimTime now,
                            std::string reason) {
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
  forwarder_->OnRequestDone(o);
}

const RouteInfo* Simulation::route_of(RequestId id) const {
  const auto it = routes_.find(id);
  return it == routes_.end() ? nullptr : &it->second;
}

namespace {
// Nearest-rank percentile of unsorted values, in ms; 0 when empty.
double PercentileMs(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return static_cast<double>(v[std::max<size_t>(rank, 1) - 1]) / 1e6;
}
double MeanMs(Duration sum, int64_t n) { return n > 0 ? sum.millis() / static_cast<double>(n) : 0.0; }
}  // namespace

Json Simulation::ReplicaReportJson(Duration span) {
  Json out = Json::array();
  for (size_t i = 0; i < figures_.size(); ++i) {
    const ReplicaFigures& f = figures_[i];
    Json j{{"replica", i},
           {"routed", f.routed},
           {"max_queue_depth", f.max_queue_depth},
           {"ttft_p99_ms", PercentileMs(f.ttft_ns, 0.99)},
           {"mean_matched_prefix_tokens",
            f.routed > 0 ? static_cast<double>(f.matched_prefix_tokens) / static_cast<double>(f.routed) : 0.0},
           {"mean_queued_work_ms", MeanMs(f.queued_work, f.routed)},
           {"mean_recompute_ms", MeanMs(f.recompute, f.routed)}};
    if (!prefill_.empty()) {
      j["role"] = std::string(PoolRoleName(role(static_cast<int32_t>(i))));
      j["prompts_handed_off"] = f.handed_off;
    }
    if (!adapters_.empty()) {
      adapters_[i].Advance(now_);
      j["adapters"] = adapters_[i].stats().ToJson(span, adapters_[i].resident_count());
    }
    out.push_back(std::move(j));
  }
  return out;
}

void Simulation::MaybeStart(int32_t replica, SimTime now) {
  Engine& e = *engines_[static_cast<size_t>(replica)];
  if (in_engine_call_[static_cast<size_t>(replica)] != 0 || e.step_in_flight() || !e.HasWork()) return;
  std::optional<SimTime> end;
  {
    EngineCall call(this, replica);
    end = e.StartStep(now);
  }
  if (end) {
    queue_.Push(*end, EventKind::kStepDone, replica);
    return;
  }
  // Planning found nothing to run (its waiting requests timed out): blocks may be free.
  AfterRelease(replica, now);
}

void Simulation::AfterRelease(int32_t replica, SimTime now) {
  if (prefill_.empty() || role(replica) == PoolRole::kPrefill) return;
  TryStartTransfers(replica, now);
  DrainAdmission(replica, now);
}

bool Simulation::Drained() const {
  if (pending_arrival_ || !delayed_.empty() || !handoffs_.empty() || source_ == nullptr || !source_->exhausted()) return false;
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
      case EventKind::kStepDone: {
        Engine& engine = *engines_[static_cast<size_t>(e.replica)];
        {
          EngineCall call(this, e.replica);
          engine.FinishStep(now_);
        }
        ReplicaFigures& f = figures_[static_cast<size_t>(e.replica)];
        f.max_queue_depth = std::max(f.max_queue_depth, engine.waiting_count());
        AfterRelease(e.replica, now_);
        MaybeStart(e.replica, now_);
        break;
      }
      case EventKind::kAdapterReady: {
        auto node = delayed_.extract(e.request);
        FP_ASSERT(!node.empty());
        SubmitTo(node.mapped().first, node.mapped().second, now_);
        break;
      }
      case EventKind::kCancel:
        Cancel(e);
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
      case EventKind::kTransferProgress:
        if (link_event_at_[static_cast<size_t>(e.replica)] == now_) link_event_at_[static_cast<size_t>(e.replica)].reset();
        AdvanceLink(e.replica, now_);
        ScheduleLink(e.replica);
        break;
      case EventKind::kTransferStart:
        OnTransferStart(e.request, e.replica, now_);
        break;
      case EventKind::kTransferTimeout:
        OnTransferTimeout(e.request, e.replica, now_);
        break;
      case EventKind::kHandoffDeadline:
        OnHandoffDeadline(e.request, now_);
        break;
    }
    FP_RETURN_IF_ERROR(PullArrival(source));
    if (progress && (++handled % kProgressEvents) == 0) progress(now_, requests_done_);
  }
  source_ = nullptr;
  if (!handoffs_.empty()) {
    return InternalError(fmt::format("{} disaggregated requests still in the fleet after the event queue drained",
                                     handoffs_.size()));
  }
  for (const auto& engine : engines_) {
    if (engine->HasWork() || engine->step_in_flight()) {
      return InternalError(fmt::format("replica {} still has work after the event queue drained", engine->replica()));
    }
    if (engine->live_requests() != 0 || engine->pool().total_refs() != 0) {
      return InternalError(fmt::format("replica {} holds {} requests and {} block references after every request "
                                       "ended",
                                       engine->replica(), engine->live_requests(), engine->pool().total_refs()));
    }
  }
  return Status::Ok();
}

Status Simulation::CheckInvariants() const {
  for (const auto& engine : engines_) FP_RETURN_IF_ERROR(engine->CheckInvariants());
  return Status::Ok();
}

}  // namespace fleetplan
