// Simulation: the stages of disaggregated serving (simulation.h documents the flow,
// pools.h the configuration).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/simulation.h"

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

}  // namespace

std::string_view PoolRoleName(PoolRole role) { return RoleNames()[static_cast<size_t>(role)]; }
const std::vector<std::string>& PoolRoleNames() { return RoleNames(); }

void Simulation::RouteWithPools(const Request& r, SimTime now) {
  // Colocation first (when a threshold allows it): any replica may serve a short
  // request whole; the router's belief about that replica's cache decides "short".
  if (setup_.disaggregation.colocate_below_tokens > 0) {
    const RouteDecision c = RouteAmong(*colocate_router_, all_, r);
    if (!WantsDisaggregation(r, c.matched_prefix_tokens)) {
      ++stages_.colocated;
      AfterRoute(r, c, now);
      return;
    }
  }
  const RouteDecision d = RouteAmong(*router_, serving_, r);
  (void)BookRoute(r, d, now, "decode");  // an adapter loads while the prompt is prefilled elsewhere
  StartHandoff(r, d.replica, now);
}

bool Simulation::InPrefillStage(int32_t replica, RequestId id) const {
  if (role(replica) != PoolRole::kPrefill) return false;
  const auto it = handoffs_.find(id);
  return it != handoffs_.end() && it->second.stage == Stage::kPrefill && it->second.prefill == replica;
}

bool Simulation::WantsDisaggregation(const Request& r, int64_t matched_prefix_tokens) const {
  const int64_t uncached = r.prompt_tokens() - std::min(matched_prefix_tokens, r.prompt_tokens());
  return uncached >= setup_.disaggregation.colocate_below_tokens;
}

int64_t Simulation::ImportBlocks(int32_t serving, const Request& r) const {
  const EngineConfig& e = engines_[static_cast<size_t>(serving)]->config();
  const int64_t tokens = e.admission == AdmissionMode::kReserve ? r.prompt_tokens() + r.output_tokens : r.prompt_tokens();
  return BlocksForTokens(tokens, e.block_tokens);
}

bool Simulation::DecodeSlotPredicted(int32_t serving, int64_t blocks) const {
  const Engine& e = *engines_[static_cast<size_t>(serving)];
  const auto s = static_cast<size_t>(serving);
  const int64_t requests = e.running_count() + e.importing_count() + reserved_requests_[s];
  return blocks <= e.pool().free_count() - reserved_blocks_[s] && requests < e.config().scheduler.max_running;
}

void Simulation::StartHandoff(const Request& r, int32_t serving, SimTime now) {
  ++stages_.disaggregated;
  const int64_t blocks = ImportBlocks(serving, r);
  const int64_t total = engines_[static_cast<size_t>(serving)]->pool().total();
  if (blocks > total) {
    EndInFleet(r, serving, RequestStatus::kRejected, now,
               fmt::format("needs {} KV blocks on its decode replica; the pool has {}", blocks, total));
    return;
  }
  Handoff& h = handoffs_[r.id];
  h.request = r;
  h.serving = serving;
  h.since = now;
  CountPending(h, +1);
  if (r.cancel_at) queue_.Push(std::max(*r.cancel_at, now), EventKind::kCancel, -1, r.id);
  auto& waiting = admission_queue_[static_cast<size_t>(serving)];
  if (waiting.empty() && DecodeSlotPredicted(serving, blocks)) {
    AdmitToPrefill(h, now);
    return;
  }
  waiting.push_back(r.id);
  ++stages_.admission_waits;
  if (r.deadline) queue_.Push(std::max(*r.deadline, now), EventKind::kHandoffDeadline, -1, r.id);
}

void Simulation::AdmitToPrefill(Handoff& h, SimTime now) {
  const auto s = static_cast<size_t>(h.serving);
  h.reserved_blocks = ImportBlocks(h.serving, h.request);
  reserved_blocks_[s] += h.reserved_blocks;
  ++reserved_requests_[s];
  if (prefix_view_) prefix_view_->Hash(h.request, &hashes_);
  const RouteDecision d = prefill_.size() > 1 ? RouteAmong(*prefill_router_, prefill_, h.request)
                                              : RouteDecision{prefill_[0], 0, {}, {}, 0};
  const auto p = static_cast<size_t>(d.replica);
  ++sent_requests_[p];
  sent_tokens_[p] += h.request.prompt_tokens();
  if (prefix_view_) prefix_view_->Record(d.replica, hashes_);
  ++figures_[p].routed;
  if (fleet_observer_ != nullptr) {
    fleet_observer_->OnRoute({now, h.request.id, d.replica, "prefill", d.matched_prefix_tokens, Duration()});
  }
  h.prefill = d.replica;
  h.stage = Stage::kPrefill;
  h.since = now;
  // The prefill replica computes the prompt and samples the first token: a one-token
  // answer. Cancellation is the fleet's (kCancel with no replica).
  Request prompt_only = h.request;
  prompt_only.output_tokens = 1;
  prompt_only.cancel_at.reset();
  Engine& e = *engines_[p];
  e.Submit(prompt_only, now);  // may end the handoff at once (rejected): `h` is not used after
  figures_[p].max_queue_depth = std::max(figures_[p].max_queue_depth, e.waiting_count());
  MaybeStart(d.replica, now);
}

void Simulation::DrainAdmission(int32_t serving, SimTime now) {
  auto& waiting = admission_queue_[static_cast<size_t>(serving)];
  while (!waiting.empty()) {
    Handoff& h = handoffs_.at(waiting.front());
    if (!DecodeSlotPredicted(serving, ImportBlocks(serving, h.request))) return;
    waiting.pop_front();
    stages_.admission_wait_ns.push_back((now - h.since).ns());
    AdmitToPrefill(h, now);
  }
}

void Simulation::CountPending(const Handoff& h, int sign) {
  const auto s = static_cast<size_t>(h.serving);
  pending_requests_[s] += sign;
  pending_tokens_[s] += sign * h.request.output_tokens;
}

void Simulation::ReleaseReservation(Handoff& h) {
  if (h.reserved_blocks == 0) return;
  const auto s = static_cast<size_t>(h.serving);
  reserved_blocks_[s] -= h.reserved_blocks;
  --reserved_requests_[s];
  h.reserved_blocks = 0;
}

bool Simulation::OnPrefillEnded(const RequestOutcome& o) {
  const auto it = handoffs_.find(o.id);
  FP_ASSERT(it != handoffs_.end() && it->second.stage == Stage::kPrefill);
  Handoff& h = it->second;
  const SimTime now = *o.finish;
  if (o.status != RequestStatus::kOk) {
    // Rejected, cancelled or timed out on the prefill replica: it ends there.
    const int32_t serving = h.serving;
    ReleaseReservation(h);
    CountPending(h, -1);
    handoffs_.erase(it);
    AfterRelease(serving, now);
    return false;
  }
  stages_.prefill_stage_ns.push_back((now - h.since).ns());
  ++figures_[static_cast<size_t>(o.replica)].handed_off;
  h.stage = Stage::kTransferQueue;
  h.since = now;
  transfer_queue_[static_cast<size_t>(h.serving)].push_back(o.id);
  if (h.request.deadline) queue_.Push(std::max(*h.request.deadline, now), EventKind::kHandoffDeadline, -1, o.id);
  TryStartTransfers(h.serving, now);
  return true;
}

void Simulation::TryStartTransfers(int32_t serving, SimTime now) {
  auto& waiting = transfer_queue_[static_cast<size_t>(serving)];
  Engine& e = *engines_[static_cast<size_t>(serving)];
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

double Simulation::FaultDraw(RequestId id, int32_t attempt, uint64_t salt) const {
  uint64_t x = SplitMix64(setup_.disaggregation.faults.seed ^ SplitMix64(static_cast<uint64_t>(id)));
  x = SplitMix64(x ^ (static_cast<uint64_t>(attempt) << 8) ^ salt);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

void Simulation::StartTransfer(Handoff& h, SimTime now) {
  const DisaggregationConfig& c = setup_.disaggregation;
  h.stage = Stage::kTransfer;
  h.since = now;
  CountPending(h, -1);  // the serving replica's engine counts it from here
  ++h.attempts;
  ++stages_.transfers;
  const RequestId id = h.request.id;
  h.fails = FaultDraw(id, h.attempts, 2) < c.faults.failure_probability;
  queue_.Push(now + c.timeout, EventKind::kTransferTimeout, h.attempts, id);
  if (FaultDraw(id, h.attempts, 1) < c.faults.delay_probability && c.faults.delay > Duration()) {
    queue_.Push(now + c.faults.delay, EventKind::kTransferStart, h.attempts, id);
    return;
  }
  BeginMoving(h, now);
}

void Simulation::BeginMoving(Handoff& h, SimTime now) {
  const auto p = static_cast<size_t>(h.prefill);
  AdvanceLink(h.prefill, now);
  const int64_t bytes = h.transfer_tokens * setup_.replicas[p].kv_bytes_per_token;
  h.transfer_id = links_[p]->Start(now, Bytes(bytes));
  link_owner_[p].emplace(h.transfer_id, h.request.id);
  ScheduleLink(h.prefill);
}

void Simulation::OnTransferStart(RequestId id, int32_t attempt, SimTime now) {
  const auto it = handoffs_.find(id);
  if (it == handoffs_.end() || it->second.stage != Stage::kTransfer || it->second.attempts != attempt) return;
  BeginMoving(it->second, now);
}

void Simulation::AdvanceLink(int32_t prefill, SimTime now) {
  const auto p = static_cast<size_t>(prefill);
  for (int64_t transfer : links_[p]->AdvanceTo(now)) {
    auto node = link_owner_[p].extract(transfer);
    FP_ASSERT(!node.empty());
    OnTransferArrived(node.mapped(), now);
  }
}

void Simulation::ScheduleLink(int32_t prefill) {
  const auto p = static_cast<size_t>(prefill);
  const std::optional<SimTime> next = links_[p]->NextChange();
  if (!next || (link_event_at_[p] && *link_event_at_[p] <= *next)) return;
  link_event_at_[p] = *next;
  queue_.Push(*next, EventKind::kTransferProgress, prefill);
}

void Simulation::OnTransferArrived(RequestId id, SimTime now) {
  auto it = handoffs_.find(id);
  FP_ASSERT(it != handoffs_.end() && it->second.stage == Stage::kTransfer);
  Handoff& h = it->second;
  h.transfer_id = -1;
  Engine& e = *engines_[static_cast<size_t>(h.serving)];
  ReportTransfer(h, now, h.fails ? "failed" : "completed");
  if (h.fails) {
    ++stages_.failures;
    e.AbortImport(id);
    AfterFailedAttempt(id, now);
    return;
  }
  ++stages_.transfers_completed;
  stages_.transfer_bytes += h.transfer_tokens * setup_.replicas[static_cast<size_t>(h.prefill)].kv_bytes_per_token;
  stages_.transfer_ns.push_back((now - h.since).ns());
  const int32_t serving = h.serving;
  handoffs_.erase(it);
  FP_ASSERT(in_engine_call_[static_cast<size_t>(serving)] == 0);
  e.FinishImport(id, now);  // may end the request at once (a one-token answer)
  AfterRelease(serving, now);
  MaybeStart(serving, now);
}

void Simulation::StopTransfer(Handoff& h, SimTime now) {
  const auto p = static_cast<size_t>(h.prefill);
  if (h.transfer_id >= 0) {
    const bool aborted = links_[p]->Abort(h.transfer_id, now);
    FP_ASSERT(aborted);
    link_owner_[p].erase(h.transfer_id);
    h.transfer_id = -1;
    ScheduleLink(h.prefill);
  }
  engines_[static_cast<size_t>(h.serving)]->AbortImport(h.request.id);
}

void Simulation::ReportTransfer(const Handoff& h, SimTime now, std::string_view outcome) const {
  if (fleet_observer_ == nullptr) return;
  const int64_t bytes = h.transfer_tokens * setup_.replicas[static_cast<size_t>(h.prefill)].kv_bytes_per_token;
  fleet_observer_->OnTransfer({h.request.id, h.attempts, h.prefill, h.serving, h.since, now, bytes, outcome});
}

void Simulation::OnTransferTimeout(RequestId id, int32_t attempt, SimTime now) {
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

void Simulation::AfterFailedAttempt(RequestId id, SimTime now) {
  Handoff& h = handoffs_.at(id);
  const int32_t serving = h.serving;
  const DisaggregationConfig& c = setup_.disaggregation;
  const bool in_time = !h.request.deadline || now < *h.request.deadline;
  if (h.attempts <= c.retries && in_time) {
    ++stages_.retries;
    h.stage = Stage::kTransferQueue;
    h.since = now;
    CountPending(h, +1);
    transfer_queue_[static_cast<size_t>(serving)].push_back(id);
    TryStartTransfers(serving, now);
    return;
  }
  const Request r = h.request;
  const int32_t attempts = h.attempts;
  handoffs_.erase(id);
  if (c.reject_on_failure) {
    ++stages_.rejections;
    EndInFleet(r, serving, RequestStatus::kRejected, now,
               fmt::format("KV transfer failed {} times", attempts));
  } else {
    ++stages_.recomputations;
    SubmitTo(serving, r, now, /*schedule_cancel=*/false);  // its kCancel is already queued
  }
  AfterRelease(serving, now);
}

void Simulation::OnHandoffDeadline(RequestId id, SimTime now) {
  const auto it = handoffs_.find(id);
  if (it == handoffs_.end()) return;
  Handoff& h = it->second;
  const auto s = static_cast<size_t>(h.serving);
  if (h.stage == Stage::kAdmission) {
    RemoveFrom(admission_queue_[s], id);
  } else if (h.stage == Stage::kTransferQueue) {
    RemoveFrom(transfer_queue_[s], id);
  } else {
    return;  // an engine, or the transfer's own timeout, bounds the other stages
  }
  ++stages_.timed_out_waiting;
  const Request r = h.request;
  const int32_t serving = h.serving;
  ReleaseReservation(h);
  CountPending(h, -1);
  handoffs_.erase(it);
  EndInFleet(r, serving, RequestStatus::kTimeout, now,
             "deadline passed waiting for a decode slot or a KV transfer");
  AfterRelease(serving, now);
}

void Simulation::CancelHandoff(Handoff& h, SimTime now) {
  const auto s = static_cast<size_t>(h.serving);
  switch (h.stage) {
    case Stage::kPrefill: {
      const int32_t p = h.prefill;
      {
        EngineCall call(this, p);
        engines_[static_cast<size_t>(p)]->Cancel(h.request.id, now);  // its outcome ends the handoff
      }
      MaybeStart(p, now);
      return;
    }
    case Stage::kAdmission: RemoveFrom(admission_queue_[s], h.request.id); break;
    case Stage::kTransferQueue: RemoveFrom(transfer_queue_[s], h.request.id); break;
    case Stage::kTransfer:
      ReportTransfer(h, now, "cancelled");
      StopTransfer(h, now);
      break;
  }
  const Request r = h.request;
  const int32_t serving = h.serving;
  ReleaseReservation(h);
  if (h.stage != Stage::kTransfer) CountPending(h, -1);
  handoffs_.erase(r.id);
  EndInFleet(r, serving, RequestStatus::kCancelled, now, {});
  AfterRelease(serving, now);
}

namespace {
double PercentileMs(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return RoundForReport(static_cast<double>(v[std::max<size_t>(rank, 1) - 1]) / 1e6);
}
Json Quantiles(const std::vector<int64_t>& v) {
  return Json{{"count", v.size()}, {"p50_ms", PercentileMs(v, 0.5)}, {"p99_ms", PercentileMs(v, 0.99)}};
}
}  // namespace

Json Simulation::StageReportJson(Duration span) const {
  if (prefill_.empty()) return Json();
  const double span_s = span.seconds();
  auto busy = [&](const std::vector<int32_t>& replicas) {
    Duration sum;
    for (int32_t r : replicas) sum += engines_[static_cast<size_t>(r)]->stats().busy;
    return span_s > 0 ? RoundForReport(sum.seconds() / span_s / static_cast<double>(replicas.size())) : 0.0;
  };
  Duration link_busy;
  for (int32_t p : prefill_) link_busy += links_[static_cast<size_t>(p)]->busy();
  const StageFigures& f = stages_;
  Json j;
  j["colocate_below_tokens"] = setup_.disaggregation.colocate_below_tokens;
  j["requests"] = {{"colocated", f.colocated}, {"disaggregated", f.disaggregated}};
  j["admission"] = {{"waited", f.admission_waits},
                    {"wait", Quantiles(f.admission_wait_ns)},
                    {"timed_out_waiting", f.timed_out_waiting}};
  j["prefill"] = {{"replicas", prefill_.size()}, {"busy_fraction", busy(prefill_)},
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
                    span_s > 0 ? RoundForReport(link_busy.seconds() / span_s / static_cast<double>(prefill_.size()))
                               : 0.0}};
  j["decode"] = {{"replicas", serving_.size()}, {"busy_fraction", busy(serving_)}};
  return j;
}

}  // namespace fleetplan
