#include "fleetplan/fleet/disaggregation.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/metrics/percentile.h"
#include "fleet/section_readers.h"
#include "fleetplan/catalog/catalog.h"

namespace fleetplan {

namespace {

const std::vector<std::string>& RoleNames() {
  static const std::vector<std::string> names = {"mixed", "prefill", "decode"};
  return names;
}

void RemoveFrom(std::deque<RequestId>& queue, RequestId id) {
  const auto it = std::find(queue.begin(), queue.end(), id);
  if (it != queue.end()) queue.erase(it);
}

double PercentileMs(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  return RoundForReport(static_cast<double>(NearestRankSelect(v, q)) / 1e6);
}

// Count and quantiles; the quantiles are null (not 0) when there are no values.
Json Quantiles(const std::vector<int64_t>& v) {
  if (v.empty()) return Json{{"count", 0}, {"p50_ms", nullptr}, {"p99_ms", nullptr}};
  return Json{{"count", v.size()}, {"p50_ms", PercentileMs(v, 0.5)}, {"p99_ms", PercentileMs(v, 0.99)}};
}

}  // namespace

std::string_view PoolRoleName(PoolRole role) { return RoleNames()[static_cast<size_t>(role)]; }
const std::vector<std::string>& PoolRoleNames() { return RoleNames(); }

namespace {
const DisaggregationConfig& ConfigOf(const Simulation& sim) {
  static const DisaggregationConfig kDefaults;
  const DisaggregationConfig* c = sim.setup().components.Find<DisaggregationConfig>(kDisaggregationRow);
  return c != nullptr ? *c : kDefaults;
}
}  // namespace

Disaggregation::Disaggregation(Simulation& sim) : sim_(sim), config_(ConfigOf(sim)) {
  // The two fleet queues are every serving replica's time series levels, in this order.
  RequestLedger& ledger = sim_.ledger();
  stage_ids_[static_cast<size_t>(Stage::kTransferQueue)] = ledger.DeclareStage(this, "transfer_queue", /*level=*/true);
  stage_ids_[static_cast<size_t>(Stage::kAdmission)] = ledger.DeclareStage(this, "admission_queue", /*level=*/true);
  stage_ids_[static_cast<size_t>(Stage::kPrefill)] = ledger.DeclareStage(this, "prefill", /*level=*/false);
  stage_ids_[static_cast<size_t>(Stage::kTransfer)] = ledger.DeclareStage(this, "transfer", /*level=*/false);
  given_up_stage_ = ledger.DeclareStage(this, "given_up", /*level=*/false);
}

void Disaggregation::SetStage(Handoff& h, Stage stage) {
  h.stage = stage;
  // A prompt-only copy runs on the prefill replica; an import lives in the serving
  // replica's engine from the transfer's start.
  const int32_t in_engine = stage == Stage::kPrefill ? h.prefill : stage == Stage::kTransfer ? h.serving : -1;
  sim_.ledger().Move(h.request.id, stage_ids_[static_cast<size_t>(stage)], in_engine);
}

void Disaggregation::Forget(std::map<RequestId, Handoff>::iterator it) {
  sim_.ledger().Release(it->first);
  handoffs_.erase(it);
}

PoolRole Disaggregation::role(int32_t replica) const { return sim_.role(replica); }


Status Disaggregation::OnReplicaAdded(int32_t id) {
  PerReplica& p = replicas_.emplace_back();
  const ReplicaSetup& r = sim_.setup_of(id);
  if (r.role != PoolRole::kPrefill) return Status::Ok();
  if (r.link_bytes_per_second < 1 || r.kv_bytes_per_token < 1) {
    return InvalidInput(fmt::format("prefill replica {} has no KV transfer link or KV size", id));
  }
  p.link.emplace(config().setup, r.link_bytes_per_second);
  return Status::Ok();
}

bool Disaggregation::Dispatch(const Request& r, SimTime now) {
  // Without a ready replica of a stage, the kernel routes the request whole.
  if (sim_.ready_prefill().empty() || sim_.ready_serving().empty()) return false;
  // A request addressed to a prefill replica (an emulator's port) runs whole there, as a
  // vLLM prefill instance serves a request sent to it directly.
  if (r.pinned_replica >= 0 && role(r.pinned_replica) == PoolRole::kPrefill) {
    ++stages_.colocated;
    sim_.AfterRoute(r, sim_.RouteAmong(Simulation::RouterSet::kAll, sim_.ready_all(), r), now);
    return true;
  }
  // Colocation first (when a threshold allows it): any replica may serve a short
  // request whole; the router's belief about that replica's cache decides "short".
  if (config().colocate_below_tokens > 0) {
    const RouteDecision c = sim_.RouteAmong(Simulation::RouterSet::kAll, sim_.ready_all(), r);
    if (!WantsDisaggregation(r, c.matched_prefix_tokens)) {
      ++stages_.colocated;
      sim_.AfterRoute(r, c, now);
      return true;
    }
  }
  const RouteDecision d = sim_.RouteAmong(Simulation::RouterSet::kServing, sim_.ready_serving(), r);
  (void)sim_.BookRoute(r, d, now, "decode");  // an adapter loads while the prompt is prefilled elsewhere
  StartHandoff(r, d.replica, now);
  return true;
}

void Disaggregation::AddTelemetry(int32_t replica, ReplicaTelemetry& t) const {
  const PerReplica& p = replicas_[static_cast<size_t>(replica)];
  t.waiting += p.pending_requests;
  t.outstanding_tokens += p.pending_tokens;
}

bool Disaggregation::InPrefillStage(int32_t replica, RequestId id) const {
  if (replica < 0 || role(replica) != PoolRole::kPrefill) return false;
  const auto it = handoffs_.find(id);
  return it != handoffs_.end() && it->second.stage == Stage::kPrefill && it->second.prefill == replica;
}

bool Disaggregation::ConsumeOutcome(const RequestOutcome& o) {
  return InPrefillStage(o.replica, o.id) && OnPrefillEnded(o);
}

bool Disaggregation::ConsumeCancel(RequestId id, SimTime now) {
  const auto h = handoffs_.find(id);
  if (h == handoffs_.end()) return false;
  CancelHandoff(h->second, now);
  return true;
}

void Disaggregation::AfterRelease(int32_t replica, SimTime now) {
  if (role(replica) == PoolRole::kPrefill) return;
  TryStartTransfers(replica, now);
  DrainAdmission(replica, now);
}

bool Disaggregation::WantsDisaggregation(const Request& r, int64_t matched_prefix_tokens) const {
  const int64_t uncached = r.prompt_tokens() - std::min(matched_prefix_tokens, r.prompt_tokens());
  return uncached >= config().colocate_below_tokens;
}

int64_t Disaggregation::ImportBlocks(int32_t serving, const Request& r) {
  const EngineConfig& e = sim_.engine(serving).config();
  const int64_t tokens = e.admission == AdmissionMode::kReserve ? r.prompt_tokens() + r.output_tokens : r.prompt_tokens();
  return BlocksForTokens(tokens, e.block_tokens);
}

bool Disaggregation::DecodeSlotPredicted(int32_t serving, int64_t blocks) {
  const Engine& e = sim_.engine(serving);
  const PerReplica& s = at(serving);
  const int64_t requests = e.running_count() + e.importing_count() + s.reserved_requests;
  return blocks <= e.pool().free_count() - s.reserved_blocks && requests < e.config().scheduler.max_running;
}

void Disaggregation::StartHandoff(const Request& r, int32_t serving, SimTime now) {
  ++stages_.disaggregated;
  const int64_t blocks = ImportBlocks(serving, r);
  const int64_t total = sim_.engine(serving).pool().total();
  if (blocks > total) {
    sim_.EndInFleet(r, serving, RequestStatus::kRejected, now,
                    fmt::format("needs {} KV blocks on its decode replica; the pool has {}", blocks, total));
    return;
  }
  Handoff& h = handoffs_[r.id];
  h.request = r;
  h.serving = serving;
  h.since = now;
  sim_.ledger().Hold(r.id, stage_ids_[static_cast<size_t>(Stage::kAdmission)], serving);
  CountPending(h, +1);
  sim_.ScheduleCancel(r, now);
  auto& waiting = at(serving).admission_queue;
  if (waiting.empty() && DecodeSlotPredicted(serving, blocks)) {
    AdmitToPrefill(h, now);
    return;
  }
  waiting.push_back(r.id);
  ++stages_.admission_waits;
  if (r.deadline) sim_.queue().Push(std::max(*r.deadline, now), this, kHandoffDeadline, -1, r.id);
}

void Disaggregation::AdmitToPrefill(Handoff& h, SimTime now) {
  PerReplica& s = at(h.serving);
  h.reserved_blocks = ImportBlocks(h.serving, h.request);
  s.reserved_blocks += h.reserved_blocks;
  ++s.reserved_requests;
  const std::vector<int32_t>& prefill = sim_.ready_prefill();
  const RouteDecision d = prefill.size() > 1 ? sim_.RouteAmong(Simulation::RouterSet::kPrefill, prefill, h.request)
                                             : RouteDecision{prefill[0], 0, {}, {}, 0};
  sim_.NoteDispatch(h.request, d.replica, h.request.prompt_tokens());
  ++sim_.mutable_figures(d.replica).routed;
  if (FleetObserver* obs = sim_.fleet_observer()) {
    obs->OnRoute({now, h.request.id, d.replica, "prefill", d.matched_prefix_tokens, Duration()});
  }
  h.prefill = d.replica;
  SetStage(h, Stage::kPrefill);
  h.since = now;
  // The prefill replica computes the prompt and samples the first token: a one-token
  // answer. Cancellation is the fleet's (the kernel's cancel with no replica).
  Request prompt_only = h.request;
  prompt_only.output_tokens = 1;
  prompt_only.cancel_at.reset();
  Engine& e = sim_.engine(d.replica);
  e.Submit(prompt_only, now);  // may end the handoff at once (rejected): `h` is not used after
  ReplicaFigures& f = sim_.mutable_figures(d.replica);
  f.max_queue_depth = std::max(f.max_queue_depth, e.waiting_count());
  sim_.MaybeStart(d.replica, now);
}

void Disaggregation::DrainAdmission(int32_t serving, SimTime now) {
  auto& waiting = at(serving).admission_queue;
  while (!waiting.empty()) {
    Handoff& h = handoffs_.at(waiting.front());
    if (!DecodeSlotPredicted(serving, ImportBlocks(serving, h.request))) return;
    if (sim_.ready_prefill().empty()) return;  // every prefill replica drained: wait
    waiting.pop_front();
    stages_.admission_wait_ns.push_back((now - h.since).ns());
    AdmitToPrefill(h, now);
  }
}

void Disaggregation::CountPending(const Handoff& h, int sign) {
  PerReplica& s = at(h.serving);
  s.pending_requests += sign;
  s.pending_tokens += sign * h.request.output_tokens;
}

void Disaggregation::ReleaseReservation(Handoff& h) {
  if (h.reserved_blocks == 0) return;
  PerReplica& s = at(h.serving);
  s.reserved_blocks -= h.reserved_blocks;
  --s.reserved_requests;
  h.reserved_blocks = 0;
}

bool Disaggregation::OnPrefillEnded(const RequestOutcome& o) {
  const auto it = handoffs_.find(o.id);
  FP_ASSERT(it != handoffs_.end() && it->second.stage == Stage::kPrefill);
  Handoff& h = it->second;
  const SimTime now = *o.finish;
  if (o.status != RequestStatus::kOk) {
    // Rejected, cancelled or timed out on the prefill replica: it ends there.
    const int32_t serving = h.serving;
    ReleaseReservation(h);
    CountPending(h, -1);
    Forget(it);
    sim_.AfterRelease(serving, now);
    return false;
  }
  stages_.prefill_stage_ns.push_back((now - h.since).ns());
  ++sim_.mutable_figures(o.replica).handed_off;
  if (at(h.serving).lost) {
    // Its serving replica was lost while the prompt computed: the kernel requeues or
    // cancels it, from an event (this is inside the prefill replica's engine call).
    const int32_t serving = h.serving;
    ReleaseReservation(h);
    CountPending(h, -1);
    given_up_.emplace(o.id, std::make_pair(serving, std::move(h.request)));
    sim_.ledger().Move(o.id, given_up_stage_);
    handoffs_.erase(it);
    sim_.queue().Push(now, this, kGiveUp, serving, o.id);
    return true;
  }
  SetStage(h, Stage::kTransferQueue);
  h.since = now;
  at(h.serving).transfer_queue.push_back(o.id);
  if (h.request.deadline) sim_.queue().Push(std::max(*h.request.deadline, now), this, kHandoffDeadline, -1, o.id);
  TryStartTransfers(h.serving, now);
  return true;
}

void Disaggregation::TryStartTransfers(int32_t serving, SimTime now) {
  auto& waiting = at(serving).transfer_queue;
  Engine& e = sim_.engine(serving);
  while (!waiting.empty()) {
    Handoff& h = handoffs_.at(waiting.front());
    const std::optional<int64_t> moving = e.BeginImport(h.request, now);
    if (!moving) return;
    h.transfer_tokens = *moving;
    stages_.transfer_cached_tokens += h.request.prompt_tokens() - *moving;
    waiting.pop_front();
    ReleaseReservation(h);  // the prediction became an allocation
    stages_.transfer_wait_ns.push_back((now - h.since).ns());
    StartTransfer(h, now);
  }
}

double Disaggregation::FaultDraw(RequestId id, int32_t attempt, uint64_t salt) const {
  uint64_t x = SplitMix64(config().faults.seed ^ SplitMix64(static_cast<uint64_t>(id)));
  x = SplitMix64(x ^ (static_cast<uint64_t>(attempt) << 8) ^ salt);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

void Disaggregation::StartTransfer(Handoff& h, SimTime now) {
  const DisaggregationConfig& c = config();
  SetStage(h, Stage::kTransfer);
  h.since = now;
  CountPending(h, -1);  // the serving replica's engine counts it from here
  ++h.attempts;
  ++stages_.transfers;
  const RequestId id = h.request.id;
  h.fails = FaultDraw(id, h.attempts, 2) < c.faults.failure_probability;
  sim_.queue().Push(now + c.timeout, this, kTransferTimeout, h.attempts, id);
  h.delayed = FaultDraw(id, h.attempts, 1) < c.faults.delay_probability && c.faults.delay > Duration();
  if (h.delayed) {
    sim_.queue().Push(now + c.faults.delay, this, kTransferStart, h.attempts, id);
    return;
  }
  BeginMoving(h, now);
}

void Disaggregation::BeginMoving(Handoff& h, SimTime now) {
  PerReplica& p = at(h.prefill);
  AdvanceLink(h.prefill, now);
  const int64_t bytes = h.transfer_tokens * sim_.setup_of(h.prefill).kv_bytes_per_token;
  h.transfer_id = p.link->Start(now, Bytes(bytes));
  p.link_owner.emplace(h.transfer_id, h.request.id);
  ScheduleLink(h.prefill);
}

void Disaggregation::OnTransferStart(RequestId id, int32_t attempt, SimTime now) {
  const auto it = handoffs_.find(id);
  if (it == handoffs_.end() || it->second.stage != Stage::kTransfer || it->second.attempts != attempt) return;
  BeginMoving(it->second, now);
}

void Disaggregation::AdvanceLink(int32_t prefill, SimTime now) {
  PerReplica& p = at(prefill);
  for (int64_t transfer : p.link->AdvanceTo(now)) {
    auto node = p.link_owner.extract(transfer);
    FP_ASSERT(!node.empty());
    OnTransferArrived(node.mapped(), now);
  }
}

void Disaggregation::ScheduleLink(int32_t prefill) {
  PerReplica& p = at(prefill);
  const std::optional<SimTime> next = p.link->NextChange();
  if (!next || (p.link_event_at && *p.link_event_at <= *next)) return;
  p.link_event_at = *next;
  sim_.queue().Push(*next, this, kTransferProgress, prefill);
}

void Disaggregation::OnTransferArrived(RequestId id, SimTime now) {
  auto it = handoffs_.find(id);
  FP_ASSERT(it != handoffs_.end() && it->second.stage == Stage::kTransfer);
  Handoff& h = it->second;
  h.transfer_id = -1;
  Engine& e = sim_.engine(h.serving);
  ReportTransfer(h, now, h.fails ? "failed" : "completed");
  if (h.fails) {
    ++stages_.failures;
    e.AbortImport(id);
    AfterFailedAttempt(id, now);
    return;
  }
  ++stages_.transfers_completed;
  stages_.transfer_bytes += h.transfer_tokens * sim_.setup_of(h.prefill).kv_bytes_per_token;
  stages_.transfer_ns.push_back((now - h.since).ns());
  const int32_t serving = h.serving;
  Forget(it);
  FP_ASSERT(!sim_.in_engine_call(serving));
  e.FinishImport(id, now);  // may end the request at once (a one-token answer)
  sim_.AfterRelease(serving, now);
  sim_.MaybeStart(serving, now);
}

void Disaggregation::StopTransfer(Handoff& h, SimTime now) {
  PerReplica& p = at(h.prefill);
  if (h.transfer_id >= 0) {
    const bool aborted = p.link->Abort(h.transfer_id, now);
    FP_ASSERT(aborted);
    p.link_owner.erase(h.transfer_id);
    h.transfer_id = -1;
    ScheduleLink(h.prefill);
  }
  sim_.engine(h.serving).AbortImport(h.request.id);
}

void Disaggregation::ReportTransfer(const Handoff& h, SimTime now, std::string_view outcome) const {
  FleetObserver* obs = sim_.fleet_observer();
  if (obs == nullptr) return;
  const int64_t bytes = h.transfer_tokens * sim_.setup_of(h.prefill).kv_bytes_per_token;
  obs->OnTransfer({h.request.id, h.attempts, h.prefill, h.serving, h.since, now, bytes, outcome, h.delayed});
}

void Disaggregation::OnTransferTimeout(RequestId id, int32_t attempt, SimTime now) {
  auto it = handoffs_.find(id);
  if (it == handoffs_.end() || it->second.stage != Stage::kTransfer || it->second.attempts != attempt) return;
  // A transfer completing at this very nanosecond is not abandoned.
  if (it->second.transfer_id >= 0) {
    AdvanceLink(it->second.prefill, now);
    it = handoffs_.find(id);
    if (it == handoffs_.end() || it->second.stage != Stage::kTransfer || it->second.attempts != attempt) return;
  }
  ++stages_.timeouts;
  ReportTransfer(it->second, now, "timeout");
  StopTransfer(it->second, now);
  AfterFailedAttempt(id, now);
}

void Disaggregation::AfterFailedAttempt(RequestId id, SimTime now) {
  Handoff& h = handoffs_.at(id);
  const int32_t serving = h.serving;
  const DisaggregationConfig& c = config();
  const bool in_time = !h.request.deadline || now < *h.request.deadline;
  if (h.attempts <= c.retries && in_time) {
    ++stages_.retries;
    SetStage(h, Stage::kTransferQueue);
    h.since = now;
    CountPending(h, +1);
    at(serving).transfer_queue.push_back(id);
    TryStartTransfers(serving, now);
    return;
  }
  const Request r = h.request;
  const int32_t attempts = h.attempts;
  Forget(handoffs_.find(id));
  if (c.reject_on_failure) {
    ++stages_.rejections;
    sim_.EndInFleet(r, serving, RequestStatus::kRejected, now,
                    fmt::format("its KV transfer failed {} attempt{}", attempts, attempts == 1 ? "" : "s"));
  } else {
    ++stages_.recomputations;
    sim_.SubmitTo(serving, r, now, /*schedule_cancel=*/false);  // its cancel is already queued
  }
  sim_.AfterRelease(serving, now);
}

void Disaggregation::OnHandoffDeadline(RequestId id, SimTime now) {
  const auto it = handoffs_.find(id);
  if (it == handoffs_.end()) return;
  Handoff& h = it->second;
  PerReplica& s = at(h.serving);
  if (h.stage == Stage::kAdmission) {
    RemoveFrom(s.admission_queue, id);
  } else if (h.stage == Stage::kTransferQueue) {
    RemoveFrom(s.transfer_queue, id);
  } else {
    return;  // an engine, or the transfer's own timeout, bounds the other stages
  }
  ++stages_.timed_out_waiting;
  const Request r = h.request;
  const int32_t serving = h.serving;
  ReleaseReservation(h);
  CountPending(h, -1);
  Forget(it);
  sim_.EndInFleet(r, serving, RequestStatus::kTimeout, now, "deadline passed waiting for a decode slot or a KV transfer");
  sim_.AfterRelease(serving, now);
}

void Disaggregation::CancelHandoff(Handoff& h, SimTime now) {
  if (h.stage == Stage::kPrefill) {
    sim_.CancelOn(h.prefill, h.request.id, now);  // its outcome ends the handoff
    return;
  }
  const int32_t serving = h.serving;
  const Request r = Detach(h, now);
  sim_.EndInFleet(r, serving, RequestStatus::kCancelled, now, {});
  sim_.AfterRelease(serving, now);
}

Request Disaggregation::Detach(Handoff& h, SimTime now) {
  PerReplica& s = at(h.serving);
  switch (h.stage) {
    case Stage::kPrefill: FP_ASSERT(false); break;  // its copy is live on a prefill replica
    case Stage::kAdmission: RemoveFrom(s.admission_queue, h.request.id); break;
    case Stage::kTransferQueue: RemoveFrom(s.transfer_queue, h.request.id); break;
    case Stage::kTransfer:
      ReportTransfer(h, now, "cancelled");
      StopTransfer(h, now);
      break;
  }
  Request r = std::move(h.request);
  ReleaseReservation(h);
  if (h.stage != Stage::kTransfer) {
    PerReplica& p = at(h.serving);
    --p.pending_requests;
    p.pending_tokens -= r.output_tokens;
  }
  Forget(handoffs_.find(r.id));
  return r;
}

void Disaggregation::GiveUpHeld(int32_t replica, SimTime now, std::vector<Request>& given_up) {
  at(replica).lost = true;
  std::vector<RequestId> ids;
  for (const auto& [id, h] : handoffs_) {
    if (h.serving == replica && h.stage != Stage::kPrefill) ids.push_back(id);
  }
  for (const RequestId id : ids) given_up.push_back(Detach(handoffs_.at(id), now));
}

void Disaggregation::OnEvent(const Event& e) {
  switch (static_cast<Code>(e.code)) {
    case kTransferProgress: {
      PerReplica& p = at(e.replica);
      if (p.link_event_at == e.time) p.link_event_at.reset();
      AdvanceLink(e.replica, e.time);
      ScheduleLink(e.replica);
      break;
    }
    case kTransferStart: OnTransferStart(e.request, e.replica, e.time); break;
    case kTransferTimeout: OnTransferTimeout(e.request, e.replica, e.time); break;
    case kHandoffDeadline: OnHandoffDeadline(e.request, e.time); break;
    case kGiveUp: {
      auto node = given_up_.extract(e.request);
      FP_ASSERT(!node.empty());
      sim_.ledger().Release(e.request);  // before the kernel routes it again
      sim_.GiveUpRequest(node.mapped().second, node.mapped().first, e.time);
      break;
    }
  }
}

Status Disaggregation::CheckInvariants() const {
  std::vector<PerReplica> recount(replicas_.size());
  for (const auto& [id, h] : handoffs_) {
    PerReplica& s = recount[static_cast<size_t>(h.serving)];
    if (h.reserved_blocks > 0) {
      s.reserved_blocks += h.reserved_blocks;
      ++s.reserved_requests;
    }
    if (h.stage != Stage::kTransfer) {
      ++s.pending_requests;
      s.pending_tokens += h.request.output_tokens;
    }
    if (h.stage == Stage::kAdmission) s.admission_queue.push_back(id);
    if (h.stage == Stage::kTransferQueue) s.transfer_queue.push_back(id);
    if (h.stage == Stage::kPrefill && !sim_.replica(h.prefill).request(id)) {
      return InternalError(fmt::format("request {} is in the prefill stage but not on prefill replica {}", id, h.prefill));
    }
    if (h.stage == Stage::kTransfer) {
      if (!sim_.replica(h.serving).request(id)) {
        return InternalError(fmt::format("request {} is moving but holds no blocks on replica {}", id, h.serving));
      }
      if (h.transfer_id >= 0 && !replicas_[static_cast<size_t>(h.prefill)].link_owner.contains(h.transfer_id)) {
        return InternalError(fmt::format("request {}'s transfer {} is not on its link", id, h.transfer_id));
      }
    }
  }
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const PerReplica& have = replicas_[i];
    const PerReplica& want = recount[i];
    if (have.reserved_blocks != want.reserved_blocks || have.reserved_requests != want.reserved_requests ||
        have.pending_requests != want.pending_requests || have.pending_tokens != want.pending_tokens) {
      return InternalError(fmt::format("replica {}: reserved {} blocks / {} requests, pending {} requests / {} tokens; "
                                       "the handoffs give {} / {}, {} / {}",
                                       i, have.reserved_blocks, have.reserved_requests, have.pending_requests,
                                       have.pending_tokens, want.reserved_blocks, want.reserved_requests,
                                       want.pending_requests, want.pending_tokens));
    }
    std::vector<RequestId> a(have.admission_queue.begin(), have.admission_queue.end());
    std::vector<RequestId> b(want.admission_queue.begin(), want.admission_queue.end());
    std::vector<RequestId> c(have.transfer_queue.begin(), have.transfer_queue.end());
    std::vector<RequestId> d(want.transfer_queue.begin(), want.transfer_queue.end());
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    if (a != b || c != d) {
      return InternalError(fmt::format("replica {}: the admission or transfer queue does not hold exactly its "
                                       "handoffs in that stage",
                                       i));
    }
    for (const auto& [transfer, id] : have.link_owner) {
      const auto h = handoffs_.find(id);
      if (h == handoffs_.end() || h->second.stage != Stage::kTransfer || h->second.transfer_id != transfer) {
        return InternalError(fmt::format("transfer {} on replica {}'s link belongs to no moving handoff", transfer, i));
      }
    }
  }
  return Status::Ok();
}

void Disaggregation::AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) {
  (void)span;
  const std::string role_name(PoolRoleName(role(id)));
  const int64_t handed_off = sim_.figures(id).handed_off;
  figures["role"] = role_name;
  figures["prompts_handed_off"] = handed_off;
  if (engine.is_object()) {
    engine["role"] = role_name;
    engine["prompts_handed_off"] = handed_off;  // included in this replica's `completed`
  }
}

void Disaggregation::AddReport(Duration span, Json& report) const {
  const double span_s = span.seconds();
  std::vector<int32_t> prefill;
  std::vector<int32_t> serving;
  for (int32_t i = 0; i < sim_.replica_count(); ++i) (role(i) == PoolRole::kPrefill ? prefill : serving).push_back(i);
  auto busy = [&](const std::vector<int32_t>& replicas) {
    Duration sum;
    for (int32_t r : replicas) sum += sim_.replica(r).stats().busy;
    return span_s > 0 ? RoundForReport(sum.seconds() / span_s / static_cast<double>(replicas.size())) : 0.0;
  };
  Duration link_busy;
  for (int32_t p : prefill) link_busy += replicas_[static_cast<size_t>(p)].link->busy();
  const StageFigures& f = stages_;
  Json j;
  j["colocate_below_tokens"] = config().colocate_below_tokens;
  j["requests"] = {{"colocated", f.colocated}, {"disaggregated", f.disaggregated}};
  j["admission"] = {{"waited", f.admission_waits},
                    {"wait", Quantiles(f.admission_wait_ns)},
                    {"timed_out_waiting", f.timed_out_waiting}};
  j["prefill"] = {{"replicas", prefill.size()}, {"busy_fraction", busy(prefill)},
                  {"stage_time", Quantiles(f.prefill_stage_ns)}};
  j["transfer"] = {{"count", f.transfers},
                   {"completed", f.transfers_completed},
                   {"bytes", f.transfer_bytes},
                   {"cached_tokens", f.transfer_cached_tokens},
                   {"timeouts", f.timeouts},
                   {"failures", f.failures},
                   {"retries", f.retries},
                   {"recomputations", f.recomputations},
                   {"rejections", f.rejections},
                   {"queue_wait", Quantiles(f.transfer_wait_ns)},
                   {"duration", Quantiles(f.transfer_ns)},
                   {"link_busy_fraction",
                    span_s > 0 ? RoundForReport(link_busy.seconds() / span_s / static_cast<double>(prefill.size()))
                               : 0.0}};
  j["decode"] = {{"replicas", serving.size()}, {"busy_fraction", busy(serving)}};
  report["disaggregation"] = std::move(j);
}

// ---- the section reader ----------------------------------------------------------

namespace section {

const std::vector<std::string> kTransferFailureModes = {"recompute", "reject"};

Status ReadDisaggregation(const YamlNode& node, Scenario& s) {
  if (!HasPrefillPool(s)) {
    if (node.present()) return node.Error("needs a `prefill` pool in deployment.pools");
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kDisaggregation));
  DisaggregationConfig& d = s.disaggregation;
  FP_ASSIGN_OR_RETURN(d.colocate_below_tokens, node["colocate_below_tokens"].IntOr(0));
  if (d.colocate_below_tokens < 0) {
    return node["colocate_below_tokens"].Error(
        fmt::format("expected an integer >= 0, got {}", d.colocate_below_tokens));
  }
  const std::string fallback = s.inter_node_link.name;
  FP_ASSIGN_OR_RETURN(std::string link, node["link"].StringOr(fallback));
  auto spec = s.catalog->Link(link);
  if (!spec.ok()) return node["link"].Error(spec.status().message());
  s.transfer_link = *spec;
  if (!node["link"].present()) {
    s.derived.push_back(fmt::format("deployment.disaggregation.link: {} (hardware.inter_node_link; not given)", link));
  }
  FP_ASSIGN_OR_RETURN(d.setup, node["setup"].DurationOr(s.transfer_link.latency));
  if (!node["setup"].present()) {
    s.derived.push_back(fmt::format("deployment.disaggregation.setup: {:.3f} ms (the link's latency; not given)",
                                    d.setup.millis()));
  }
  FP_ASSIGN_OR_RETURN(d.timeout, node["timeout"].DurationOr(d.timeout));
  if (d.timeout <= Duration()) return node["timeout"].Error("expected a duration > 0");
  FP_ASSIGN_OR_RETURN(int64_t retries, node["retries"].IntOr(d.retries));
  if (retries < 0 || retries > 100) {
    return node["retries"].Error(fmt::format("expected an integer in [0, 100], got {}", retries));
  }
  d.retries = static_cast<int32_t>(retries);
  FP_ASSIGN_OR_RETURN(std::string on_failure, ReadChoice(node["on_failure"], "recompute", "failure handling",
                                                         kTransferFailureModes));
  d.reject_on_failure = on_failure == "reject";
  const auto note_default = [&](const char* key, const std::string& value) {
    if (!node[key].present()) s.derived.push_back(fmt::format("deployment.disaggregation.{}: {} (not given)", key, value));
  };
  note_default("colocate_below_tokens", std::to_string(d.colocate_below_tokens));
  note_default("timeout", fmt::format("{:.0f} ms", d.timeout.millis()));
  note_default("retries", std::to_string(d.retries));
  note_default("on_failure", on_failure);
  return Status::Ok();
}

// faults.serve (fleet/serve_faults.h): read here, used by the emulator only.
Status ReadServeFaults(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kServeFaults));
  ServeFaults& f = s.serve_faults;
  if (node["errors"].present()) {
    FP_ASSIGN_OR_RETURN(auto entries, node["errors"].Entries());
    double total = 0;
    for (const auto& [key, value] : entries) {
      int status = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), status);
      if (ec != std::errc() || end != key.data() + key.size() || status < 400 || status > 599) {
        return value.Error(fmt::format("expected an HTTP error status 400..599 as the key, got '{}'", key));
      }
      FP_ASSIGN_OR_RETURN(double p, value.AsDoubleInRange(0.0, 1.0));
      total += p;
      f.errors[status] = p;
    }
    if (total > 1.0 + 1e-12) return node["errors"].Error(fmt::format("the probabilities add up to {} (at most 1)", total));
  }
  if (const YamlNode spike = node["latency_spike"]; spike.present()) {
    FP_RETURN_IF_ERROR(spike.CheckKeys(keys::kServeSpike));
    FP_ASSIGN_OR_RETURN(f.spike_probability, spike["probability"].AsDoubleInRange(0.0, 1.0));
    FP_ASSIGN_OR_RETURN(f.spike_delay, spike["delay"].AsDuration());
  }
  if (const YamlNode stall = node["stall"]; stall.present()) {
    FP_RETURN_IF_ERROR(stall.CheckKeys(keys::kServeStall));
    FP_ASSIGN_OR_RETURN(f.stall_probability, stall["probability"].AsDoubleInRange(0.0, 1.0));
    FP_ASSIGN_OR_RETURN(f.stall_duration, stall["duration"].AsDuration());
  }
  f.seed = SplitMix64(s.seed ^ Fnv1a64("faults.serve"));
  return Status::Ok();
}

Status ReadFaults(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kFaults));
  FP_RETURN_IF_ERROR(ReadServeFaults(node["serve"], s));
  const YamlNode transfer = node["kv_transfer"];
  if (!transfer.present()) return Status::Ok();
  if (!HasPrefillPool(s)) return transfer.Error("KV transfer faults need a `prefill` pool in deployment.pools");
  FP_RETURN_IF_ERROR(transfer.CheckKeys(keys::kTransferFaults));
  TransferFaults& f = s.disaggregation.faults;
  FP_ASSIGN_OR_RETURN(f.delay, transfer["delay"].DurationOr(Duration()));
  // A stated delay applies to every transfer unless a probability says otherwise.
  const double default_delay_probability = transfer["delay"].present() ? 1.0 : 0.0;
  if (transfer["delay_probability"].present()) {
    FP_ASSIGN_OR_RETURN(f.delay_probability, transfer["delay_probability"].AsDoubleInRange(0.0, 1.0));
  } else {
    f.delay_probability = default_delay_probability;
    if (transfer["delay"].present()) {
      s.derived.push_back("faults.kv_transfer.delay_probability: 1 (a stated delay applies to every transfer; not given)");
    }
  }
  if (transfer["failure_probability"].present()) {
    FP_ASSIGN_OR_RETURN(f.failure_probability, transfer["failure_probability"].AsDoubleInRange(0.0, 1.0));
  }
  NoteDefault(transfer["delay"], "0", s);
  NoteDefault(transfer["failure_probability"], "0", s);
  f.seed = SplitMix64(s.seed ^ Fnv1a64("faults.kv_transfer"));
  return Status::Ok();
}

}  // namespace section

}  // namespace fleetplan
