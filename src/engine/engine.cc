#include "fleetplan/engine/engine.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "engine/engine_live.h"
#include "engine/kv_cache_manager.h"

namespace fleetplan {

std::string_view RequestStatusName(RequestStatus s) {
  switch (s) {
    case RequestStatus::kOk: return "ok";
    case RequestStatus::kRejected: return "rejected";
    case RequestStatus::kCancelled: return "cancelled";
    case RequestStatus::kTimeout: return "timeout";
  }
  return "unknown";
}

Json GraphCounters::ToJson(bool enabled) const {
  const auto rate = [](int64_t part, int64_t whole) {
    return whole > 0 ? RoundForReport(static_cast<double>(part) / static_cast<double>(whole)) : 0.0;
  };
  Json j;
  j["enabled"] = enabled;
  j["decode_only_steps"] = decode_only_steps;
  j["bucket_hit_rate"] = rate(graphed_steps, decode_only_steps);
  j["padding_ratio"] = rate(padded_slots - real_slots, padded_slots);
  j["fallback_rate"] = rate(fallback_steps, decode_only_steps);
  j["unexpected_fallbacks"] = unexpected_fallbacks;
  return j;
}

GraphCounters& GraphCounters::operator+=(const GraphCounters& o) {
  decode_only_steps += o.decode_only_steps;
  graphed_steps += o.graphed_steps;
  fallback_steps += o.fallback_steps;
  unexpected_fallbacks += o.unexpected_fallbacks;
  real_slots += o.real_slots;
  padded_slots += o.padded_slots;
  return *this;
}

EngineStats& EngineStats::operator+=(const EngineStats& o) {
  steps += o.steps;
  prefill_tokens += o.prefill_tokens;
  decode_tokens += o.decode_tokens;
  preemptions += o.preemptions;
  rejections += o.rejections;
  cancellations += o.cancellations;
  timeouts += o.timeouts;
  completed += o.completed;
  kv_peak_blocks += o.kv_peak_blocks;
  kv_block_seconds += o.kv_block_seconds;
  busy += o.busy;
  max_decode_gap = std::max(max_decode_gap, o.max_decode_gap);
  steps_over_time_cap += o.steps_over_time_cap;
  extrapolated_steps += o.extrapolated_steps;
  kv_cached_block_seconds += o.kv_cached_block_seconds;
  cuda_graphs += o.cuda_graphs;
  speculation += o.speculation;
  if (decode_batch_steps.size() < o.decode_batch_steps.size()) decode_batch_steps.resize(o.decode_batch_steps.size(), 0);
  for (size_t b = 0; b < o.decode_batch_steps.size(); ++b) decode_batch_steps[b] += o.decode_batch_steps[b];
  prefix_cache += o.prefix_cache;
  return *this;
}

Json EngineStats::ToJson(int64_t kv_blocks, Duration span, bool cuda_graphs_enabled,
                         std::optional<SpeculationBasis> speculation_basis) const {
  Json j;
  j["steps"] = steps;
  j["prefill_tokens"] = prefill_tokens;
  j["decode_tokens"] = decode_tokens;
  j["tokens_per_step"] = steps > 0 ? RoundForReport(static_cast<double>(prefill_tokens + decode_tokens) /
                                                    static_cast<double>(steps))
                                   : 0.0;
  j["preemptions"] = preemptions;
  j["rejections"] = rejections;
  j["cancellations"] = cancellations;
  j["timeouts"] = timeouts;
  j["completed"] = completed;
  j["kv_blocks"] = kv_blocks;
  j["kv_peak_utilization"] =
      kv_blocks > 0 ? RoundForReport(static_cast<double>(kv_peak_blocks) / static_cast<double>(kv_blocks)) : 0.0;
  const double span_s = span.seconds();
  j["kv_mean_utilization"] =
      (kv_blocks > 0 && span_s > 0) ? RoundForReport(kv_block_seconds / span_s / static_cast<double>(kv_blocks))
                                    : 0.0;
  j["busy_fraction"] = span_s > 0 ? RoundForReport(busy.seconds() / span_s) : 0.0;
  j["max_decode_gap_ms"] = RoundForReport(max_decode_gap.millis());
  j["steps_over_time_cap"] = steps_over_time_cap;
  j["extrapolated_steps"] = extrapolated_steps;
  Json cache = prefix_cache.ToJson();
  cache["mean_pool_share"] =
      (kv_blocks > 0 && span_s > 0) ? RoundForReport(kv_cached_block_seconds / span_s / static_cast<double>(kv_blocks))
                                    : 0.0;
  j["prefix_cache"] = std::move(cache);
  j["cuda_graphs"] = cuda_graphs.ToJson(cuda_graphs_enabled);
  if (speculation_basis) j["speculation"] = speculation.ToJson(*speculation_basis);
  Json batches = Json::array();
  for (size_t b = 0; b < decode_batch_steps.size(); ++b) {
    if (decode_batch_steps[b] > 0) batches.push_back(Json::array({static_cast<int64_t>(b), decode_batch_steps[b]}));
  }
  j["decode_batches"] = std::move(batches);
  return j;
}

int64_t StepPlan::total_tokens() const {
  int64_t total = 0;
  for (const Entry& e : entries) total += e.new_tokens;
  return total;
}

void StepPlan::clear() {
  entries.clear();
  chunks.clear();
  preempted.clear();
  verify_tokens = 0;
}

Expected<std::unique_ptr<Engine>> Engine::Create(int32_t replica, const EngineConfig& config,
                                                 const StepCostModel* cost, EngineObserver* observer) {
  FP_ASSERT(cost != nullptr);
  const auto& s = config.scheduler;
  if (s.max_batched_tokens < 1) return InvalidInput("engine.scheduler.max_batched_tokens must be >= 1");
  if (s.max_running < 1) return InvalidInput("engine.scheduler.max_running must be >= 1");
  if (s.chunk_tokens < 1) return InvalidInput("engine.scheduler.chunk_tokens must be >= 1");
  if (s.num_scheduler_steps < 1) return InvalidInput("engine.scheduler.num_scheduler_steps must be >= 1");
  if (config.block_tokens < 1) return InvalidInput("engine.kv.block_tokens must be >= 1");
  if (config.kv_blocks < 1) {
    return InvalidInput(fmt::format("the KV pool has {} blocks: the model leaves no memory for KV cache",
                                    config.kv_blocks));
  }
  if (!(config.admission_watermark >= 0.0 && config.admission_watermark < 1.0)) {
    return InvalidInput(fmt::format("the admission watermark must be in [0, 1), got {}", config.admission_watermark));
  }
  const SpeculationConfig& spec = config.speculation;
  if (spec.enabled() && static_cast<int64_t>(spec.acceptance.size()) != spec.tokens_per_round) {
    return InvalidInput(fmt::format("engine.speculation: {} acceptance probabilities for {} tokens per round",
                                    spec.acceptance.size(), spec.tokens_per_round));
  }
  FP_ASSIGN_OR_RETURN(auto policy, MakeSchedulingPolicy(s));
  return std::unique_ptr<Engine>(new Engine(replica, config, cost, std::move(policy), observer));
}

Engine::Engine(int32_t replica, const EngineConfig& config, const StepCostModel* cost,
               std::unique_ptr<SchedulingPolicy> policy, EngineObserver* observer)
    : replica_(replica),
      config_(config),
      cost_(cost),
      policy_(std::move(policy)),
      observer_(observer),
      kv_(MakeKvCacheManager(config, cost, &stats_)),
      // int(), as vLLM rounds it.
      watermark_blocks_(static_cast<int64_t>(config.admission_watermark * static_cast<double>(config.kv_blocks))) {}

Engine::~Engine() = default;

const KvBlockPool& Engine::pool() const { return kv_->pool(); }

int64_t Engine::PeekCachedPrefixTokens(const Request& r) const { return kv_->CachedPrefixTokens(r); }

// ---------------------------------------------------------------------------------------
// Request lifetime

int32_t Engine::NewSlot(const Request& r, SimTime now) {
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int32_t>(slots_.size());
    slots_.emplace_back();
  }
  Live& l = slots_[static_cast<size_t>(slot)];
  l.ResetKeepingCapacity();
  l.req = r;  // copy-assignment reuses the kept prompt capacity
  l.num_tokens = r.prompt_tokens();
  l.output_tokens = r.output_tokens;
  l.enqueued_step = step_index_;
  l.last_token = now;
  l.in_use = true;
  const bool inserted = index_.Insert(r.id, slot);
  FP_ASSERT(inserted);
  outstanding_tokens_ += l.remaining_work();
  return slot;
}

void Engine::FreeSlot(int32_t slot) {
  Live& l = slots_[static_cast<size_t>(slot)];
  const bool erased = index_.Erase(l.req.id);
  FP_ASSERT(erased);
  l.ResetKeepingCapacity();  // per-request state is dropped; vector capacity stays for reuse
  free_slots_.push_back(slot);
}

void Engine::End(int32_t slot, RequestStatus status, SimTime now, std::string reason) {
  Live& l = slots_[static_cast<size_t>(slot)];
  kv_->pool().Release(l.blocks);  // FreeSlot resets the rest
  outstanding_tokens_ -= l.remaining_work();
  RequestOutcome o;
  o.id = l.req.id;
  o.class_id = l.req.class_id;
  o.tenant = l.req.tenant;
  o.replica = replica_;
  o.status = status;
  o.arrival = l.req.arrival;
  o.first_token = l.first_token;
  o.finish = now;
  o.input_tokens = l.req.prompt_tokens();
  o.output_tokens = l.generated;
  o.itl_max = l.itl_max;
  o.preemptions = l.preemptions;
  o.cached_tokens = l.cached_tokens;
  o.reason = std::move(reason);
  switch (status) {
    case RequestStatus::kOk: ++stats_.completed; break;
    case RequestStatus::kCancelled: ++stats_.cancellations; break;
    case RequestStatus::kTimeout: ++stats_.timeouts; break;
    case RequestStatus::kRejected: ++stats_.rejections; break;
  }
  FreeSlot(slot);
  if (observer_ != nullptr) observer_->OnRequestDone(o);
}

void Engine::Reject(const Request& r, SimTime now, std::string reason) {
  ++stats_.rejections;
  if (observer_ == nullptr) return;
  RequestOutcome o;
  o.id = r.id;
  o.class_id = r.class_id;
  o.tenant = r.tenant;
  o.replica = replica_;
  o.status = RequestStatus::kRejected;
  o.arrival = r.arrival;
  o.finish = now;
  o.input_tokens = r.prompt_tokens();
  o.reason = std::move(reason);
  observer_->OnRequestDone(o);
}

bool Engine::DeadlineUnreachable(const Request& r, SimTime now) const {
  // Optimistic prediction: the prompt alone in one step, then every output token in a
  // decode step shared with everything running now. If even that misses the deadline,
  // the work is worthless and admitting it would only delay others. A prefix the cache
  // holds now is assumed still there at admission.
  const int64_t prompt = r.prompt_tokens();
  const int64_t cached = kv_->CachedPrefixTokens(r);
  const StepChunk prefill{cached, prompt - cached, false};
  const HostOverhead host = config_.host();
  Duration predicted = host.Of(Summarize({&prefill, 1})) + cost_->Cost({&prefill, 1}).gpu;
  if (r.output_tokens > 1) {
    StepShape decodes;
    decodes.decode_seqs = running_count() + 1;
    predicted += (host.Of(decodes) + PredictedDecodeStep(prompt)) * (r.output_tokens - 1);
  }
  return now + predicted > *r.deadline;
}

Duration Engine::StepHost(std::span<const StepChunk> chunks) const {
  const HostOverhead host = config_.host();
  if (host.constant()) return host.per_step;
  return host.Of(Summarize(chunks));
}

Duration Engine::PredictedDecodeStep(int64_t context) const {
  // The cost model is a pure function of the chunks, so the last answer is reused while
  // the running count and the context are the same (at saturation the running count
  // stays at max_running); a miss prices running + 1 decodes in a scratch vector.
  const int64_t seqs = running_count() + 1;
  if (seqs != predicted_decode_.seqs || context != predicted_decode_.context) {
    predicted_decode_.chunks.assign(static_cast<size_t>(seqs), StepChunk{context, 1, true});
    predicted_decode_ = {seqs, context, cost_->Cost(predicted_decode_.chunks).gpu, std::move(predicted_decode_.chunks)};
  }
  return predicted_decode_.cost;
}

void Engine::Submit(const Request& r, SimTime now) {
  FP_ASSERT(r.output_tokens >= 1 && r.prompt_tokens() >= 1);
  const auto& s = config_.scheduler;
  if (config_.max_context > 0 && r.prompt_tokens() + r.output_tokens > config_.max_context) {
    Reject(r, now, fmt::format("context: {} tokens (prompt {} + output {}) exceed the model's max_context of {}",
                               r.prompt_tokens() + r.output_tokens, r.prompt_tokens(), r.output_tokens,
                               config_.max_context));
    return;
  }
  if (s.max_waiting > 0 && waiting_count() >= s.max_waiting) {
    Reject(r, now, fmt::format("waiting queue full ({} requests)", s.max_waiting));
    return;
  }
  const int64_t need = BlocksForTokens(r.prompt_tokens() + r.output_tokens, config_.block_tokens);
  if (need > kv_->pool().total()) {
    Reject(r, now, fmt::format("needs {} KV blocks for {} tokens; the pool has {}", need,
                               r.prompt_tokens() + r.output_tokens, kv_->pool().total()));
    return;
  }
  if (r.deadline && config_.reject_unreachable_deadline && DeadlineUnreachable(r, now)) {
    Reject(r, now, "predicted completion is past the deadline");
    return;
  }
  EnqueueWaiting(NewSlot(r, now), /*front=*/false);
}

std::optional<int64_t> Engine::BeginImport(const Request& r, SimTime now) {
  FP_ASSERT(r.output_tokens >= 1 && r.prompt_tokens() >= 1 && !index_.Contains(r.id));
  const int64_t tokens = config_.admission == AdmissionMode::kReserve ? r.prompt_tokens() + r.output_tokens
                                                                       : r.prompt_tokens();
  const int32_t slot = NewSlot(r, now);
  Live& l = slots_[static_cast<size_t>(slot)];
  const CacheMatch m = kv_->FindCached(l);
  const int64_t need = BlocksForTokens(tokens, config_.block_tokens) - m.used_blocks;
  if (need > kv_->FreeAfter(m)) {
    outstanding_tokens_ -= l.remaining_work();
    FreeSlot(slot);
    return std::nullopt;
  }
  outstanding_tokens_ -= kv_->TakeImported(l, m);
  const bool allocated = kv_->pool().Allocate(need, l.blocks);
  FP_ASSERT(allocated);
  kv_->SyncCounters();
  // The prompt's KV is here or arriving: only the answer is left to compute.
  const int64_t moving = r.prompt_tokens() - l.num_computed;
  outstanding_tokens_ -= moving;
  l.num_computed = r.prompt_tokens();
  l.importing = true;
  ++importing_;
  return moving;
}

void Engine::FinishImport(RequestId id, SimTime now) {
  const int32_t slot = index_.Find(id);
  FP_ASSERT(slot >= 0);
  Live& l = slots_[static_cast<size_t>(slot)];
  FP_ASSERT(l.importing);
  l.importing = false;
  --importing_;
  kv_->FinishImported(l);  // the imported full blocks publish after the next step
  l.generated = 1;
  l.first_token = now;
  l.last_token = now;
  if (observer_ != nullptr) observer_->OnFirstToken(replica_, id, now);
  if (token_events_ && observer_ != nullptr) observer_->OnToken(replica_, id, 0, now);
  if (l.req.output_tokens == 1) {
    End(slot, RequestStatus::kOk, now);
    return;
  }
  ++l.num_tokens;
  l.enqueued_step = step_index_;
  InsertRunning(slot);
}

void Engine::AbortImport(RequestId id) {
  const int32_t slot = index_.Find(id);
  FP_ASSERT(slot >= 0);
  Live& l = slots_[static_cast<size_t>(slot)];
  FP_ASSERT(l.importing);
  --importing_;
  kv_->Release(l);  // never sealed, so never published
  outstanding_tokens_ -= l.remaining_work();
  FreeSlot(slot);
}

void Engine::Cancel(RequestId id, SimTime now) {
  const int32_t slot = index_.Find(id);
  if (slot < 0) return;  // already finished or rejected
  Live& l = slots_[static_cast<size_t>(slot)];
  if (l.cancelled) return;
  if (l.importing) {
    l.importing = false;
    --importing_;
    End(slot, RequestStatus::kCancelled, now);
    return;
  }
  if (l.waiting) {
    LeaveWaiting(slot);
    End(slot, RequestStatus::kCancelled, now);
    CompactWaiting();
    return;
  }
  RemoveRunning(slot);
  if (in_flight_ && l.scheduled_step == step_index_) {
    l.cancelled = true;  // FinishStep releases its blocks: the step in flight still uses them
    return;
  }
  End(slot, RequestStatus::kCancelled, now);
}

// ---------------------------------------------------------------------------------------
// The waiting queue

namespace {

// Stale entries tolerated beyond the current ones before a compaction: keeps small
// queues from compacting on every departure.
constexpr size_t kStaleSlack = 64;

}  // namespace

void Engine::EnqueueWaiting(int32_t slot, bool front) {
  Live& l = slots_[static_cast<size_t>(slot)];
  FP_ASSERT(!l.waiting && !l.running);
  const int64_t pos = front ? next_front_pos_-- : next_back_pos_++;
  l.waiting = true;
  l.wait_pos = pos;
  ++waiting_live_;
  if (front) {
    waiting_.push_front({pos, slot});
  } else {
    waiting_.push_back({pos, slot});
  }
  if (l.req.deadline) {
    deadlines_.Push({*l.req.deadline, pos, slot});
    ++waiting_deadlines_;
  }
  if (policy_->ReordersPrefill()) {
    PriorityGroup& g = prefill_groups_[l.req.priority];
    g.by_age.insert({l.enqueued_step, pos, slot});
    g.by_pos.emplace(pos, slot);
  }
}

void Engine::LeaveWaiting(int32_t slot) {
  Live& l = slots_[static_cast<size_t>(slot)];
  FP_ASSERT(l.waiting);
  l.waiting = false;  // its entries in waiting_ and deadlines_ are stale from now
  --waiting_live_;
  if (l.req.deadline) --waiting_deadlines_;
  if (policy_->ReordersPrefill()) {
    const auto g = prefill_groups_.find(l.req.priority);
    FP_ASSERT(g != prefill_groups_.end());
    g->second.by_age.erase({l.enqueued_step, l.wait_pos, slot});
    g->second.by_pos.erase({l.wait_pos, slot});
    if (g->second.by_pos.empty()) prefill_groups_.erase(g);
  }
}

bool Engine::IsCurrent(int32_t slot, int64_t pos) const {
  const Live& l = slots_[static_cast<size_t>(slot)];
  return l.waiting && l.wait_pos == pos;
}

void Engine::CompactWaiting() {
  const auto live = static_cast<size_t>(waiting_live_);
  if (waiting_.size() > 2 * live + kStaleSlack) {
    std::erase_if(waiting_, [&](const WaitEntry& e) { return !IsCurrent(e.slot, e.pos); });
  }
  const auto with_deadline = static_cast<size_t>(waiting_deadlines_);
  if (deadlines_.size() > 2 * with_deadline + kStaleSlack) {
    deadlines_.EraseIf([&](const DeadlineStay& e) { return !IsCurrent(e.slot, e.pos); });
  }
}

int32_t Engine::NextByPrefillKey() const {
  // Within one priority the key does not grow with enqueued_step, so a group's best
  // entries lead its by_age order: the run whose key equals its head's. The candidate is
  // the earliest-queued entry among the runs with the highest key.
  bool found = false;
  double best_key = 0;
  std::pair<int64_t, int32_t> best{0, -1};  // (pos, slot)
  for (const auto& [priority, g] : prefill_groups_) {
    const AgeEntry& head = *g.by_age.begin();
    const double key = policy_->PrefillKey(priority, step_index_ - head.enqueued_step);
    if (found && key < best_key) continue;
    std::pair<int64_t, int32_t> first{head.pos, head.slot};
    if (policy_->PrefillKey(priority, step_index_ - g.by_age.rbegin()->enqueued_step) == key) {
      first = *g.by_pos.begin();  // the whole group ties (no aging): queue order
    } else {
      // A run longer than one enqueued_step needs keys that round equal; walk it one
      // step at a time (entries of one step are in position order).
      constexpr int64_t kMaxPos = std::numeric_limits<int64_t>::max();
      constexpr int32_t kMaxSlot = std::numeric_limits<int32_t>::max();
      for (auto it = g.by_age.upper_bound({head.enqueued_step, kMaxPos, kMaxSlot}); it != g.by_age.end();
           it = g.by_age.upper_bound({it->enqueued_step, kMaxPos, kMaxSlot})) {
        const double k = policy_->PrefillKey(priority, step_index_ - it->enqueued_step);
        FP_ASSERT(k <= key);  // the policy's key must not fall with time waited
        if (k != key) break;
        if (it->pos < first.first) first = {it->pos, it->slot};
      }
    }
    if (!found || key > best_key || first.first < best.first) {
      found = true;
      best_key = key;
      best = first;
    }
  }
  return found ? best.second : -1;
}

Status Engine::CheckWaiting() const {
  int64_t waiting = 0;
  int64_t with_deadline = 0;
  for (const Live& l : slots_) {
    if (!l.in_use || !l.waiting) continue;
    ++waiting;
    if (l.req.deadline) ++with_deadline;
    if (l.running || l.importing || l.cancelled || !l.blocks.empty() || l.num_computed != 0) {
      return InternalError(fmt::format("waiting request {} holds blocks or state of a running one", l.req.id));
    }
  }
  int64_t current = 0;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    if (i > 0 && waiting_[i - 1].pos >= waiting_[i].pos) return InternalError("waiting queue out of position order");
    if (IsCurrent(waiting_[i].slot, waiting_[i].pos)) ++current;
  }
  int64_t current_deadlines = 0;
  bool agree = true;
  int32_t disagreeing = -1;
  deadlines_.ForEach([&](const DeadlineStay& d) {
    if (!IsCurrent(d.slot, d.pos)) return;
    ++current_deadlines;
    if (agree && slots_[static_cast<size_t>(d.slot)].req.deadline != d.deadline) {
      agree = false;
      disagreeing = d.slot;
    }
  });
  if (!agree) return InternalError(fmt::format("deadline entry of slot {} disagrees with its request", disagreeing));
  FP_RETURN_IF_ERROR(deadlines_.CheckInvariants());
  if (current != waiting || waiting != waiting_live_ || current_deadlines != with_deadline ||
      with_deadline != waiting_deadlines_) {
    return InternalError(fmt::format("{} waiting requests ({} with deadlines) but the queue holds {} (counted {}), "
                                     "the deadline queue {} (counted {})",
                                     waiting, with_deadline, current, waiting_live_, current_deadlines,
                                     waiting_deadlines_));
  }
  int64_t grouped = 0;
  for (const auto& [priority, g] : prefill_groups_) {
    if (g.by_pos.empty() || g.by_age.size() != g.by_pos.size()) return InternalError("prefill group out of sync");
    for (const AgeEntry& e : g.by_age) {
      const Live& l = slots_[static_cast<size_t>(e.slot)];
      if (!IsCurrent(e.slot, e.pos) || l.req.priority != priority || l.enqueued_step != e.enqueued_step ||
          !g.by_pos.contains({e.pos, e.slot})) {
        return InternalError(fmt::format("prefill group {} holds a stale entry for slot {}", priority, e.slot));
      }
    }
    grouped += static_cast<int64_t>(g.by_pos.size());
  }
  if (grouped != (policy_->ReordersPrefill() ? waiting : 0)) {
    return InternalError(fmt::format("prefill groups hold {} of {} waiting requests", grouped, waiting));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------
// Planning a step

void Engine::InsertRunning(int32_t slot) {
  const Request& r = slots_[static_cast<size_t>(slot)].req;
  auto before = [&](int32_t other) {
    const Request& o = slots_[static_cast<size_t>(other)].req;
    if (o.priority != r.priority) return o.priority < r.priority;
    return std::make_pair(o.arrival, o.id) > std::make_pair(r.arrival, r.id);
  };
  running_.insert(std::find_if(running_.begin(), running_.end(), before), slot);
  slots_[static_cast<size_t>(slot)].running = true;
  if (r.deadline) running_deadline_floor_ = std::min(running_deadline_floor_, *r.deadline);
}

void Engine::RemoveRunning(int32_t slot) {
  Live& l = slots_[static_cast<size_t>(slot)];
  if (!l.running) return;
  l.running = false;
  running_.erase(std::find(running_.begin(), running_.end(), slot));
}

void Engine::ExpireWaiting(SimTime now) {
  // Waiting requests whose deadline passed end in queue order (position order), as a
  // walk of the queue would end them.
  expired_.clear();
  deadlines_.PopUpTo(now, expired_);
  std::erase_if(expired_, [&](const DeadlineStay& d) { return !IsCurrent(d.slot, d.pos); });
  std::sort(expired_.begin(), expired_.end(), [](const DeadlineStay& a, const DeadlineStay& b) { return a.pos < b.pos; });
  for (const DeadlineStay& d : expired_) {
    LeaveWaiting(d.slot);
    End(d.slot, RequestStatus::kTimeout, now, "deadline passed while waiting");
  }
  if (running_deadline_floor_ > now) return;
  running_deadline_floor_ = SimTime::Max();
  for (size_t i = 0; i < running_.size();) {
    const Live& l = slots_[static_cast<size_t>(running_[i])];
    if (l.req.deadline && *l.req.deadline <= now) {
      const int32_t slot = running_[i];
      RemoveRunning(slot);
      End(slot, RequestStatus::kTimeout, now, "deadline passed while running");
    } else {
      if (l.req.deadline) running_deadline_floor_ = std::min(running_deadline_floor_, *l.req.deadline);
      ++i;
    }
  }
}

void Engine::Preempt(int32_t slot) {
  Live& l = slots_[static_cast<size_t>(slot)];
  kv_->Release(l);
  outstanding_tokens_ += l.num_computed;
  l.num_computed = 0;
  ++l.preemptions;
  ++stats_.preemptions;
  plan_.preempted.push_back(l.req.id);
  l.gap_spans_preemption = true;
  l.enqueued_step = step_index_;
  RemoveRunning(slot);
  EnqueueWaiting(slot, /*front=*/true);
}

bool Engine::PreemptOneAfter(int32_t keep_slot) {
  // Victim: the lowest-priority, latest-arrived running request not yet in this step.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    const int32_t victim = *it;
    if (slots_[static_cast<size_t>(victim)].scheduled_step == step_index_) continue;
    Preempt(victim);
    return victim != keep_slot;
  }
  return false;
}

// Grow and AddChunk run for every chunk of every step; inlined into the schedulers below.
[[gnu::always_inline]] inline bool Engine::Grow(int32_t slot, int64_t new_tokens) {
  const Live& l = slots_[static_cast<size_t>(slot)];
  // Most chunks fit in the blocks held: a multiply tells, where BlocksForTokens'
  // division would cost more than the rest of the call.
  if (l.num_computed + new_tokens <= static_cast<int64_t>(l.blocks.size()) * config_.block_tokens) return true;
  return GrowBlocks(slot, new_tokens);
}

bool Engine::GrowBlocks(int32_t slot, int64_t new_tokens) {
  Live& l = slots_[static_cast<size_t>(slot)];
  const int64_t need = BlocksForTokens(l.num_computed + new_tokens, config_.block_tokens) -
                       static_cast<int64_t>(l.blocks.size());
  FP_ASSERT(config_.admission == AdmissionMode::kOptimistic);  // reserve allocates up front
  while (!kv_->pool().Allocate(need, l.blocks)) {
    if (!PreemptOneAfter(slot)) return false;
  }
  return true;  // Schedule syncs the eviction counters once for the whole plan
}

[[gnu::always_inline]] inline void Engine::AddChunk(int32_t slot, int64_t new_tokens, int32_t drafted) {
  Live& l = slots_[static_cast<size_t>(slot)];
  l.scheduled_step = step_index_;
  // Fields written in place: pushing a braced temporary made the compiler store it field
  // by field and copy it back with one wide load, which the processor cannot forward from
  // the narrower stores; that stall was the largest single cost of a step (perf,
  // docs/PERFORMANCE.md "Engine").
  StepPlan::Entry& p = plan_.entries.emplace_back();
  p.slot = slot;
  p.drafted = drafted;
  p.new_tokens = new_tokens;
  StepChunk& c = plan_.chunks.emplace_back();
  c.context_tokens = l.num_computed;
  c.new_tokens = new_tokens;
  // A verification computes 1 + drafted tokens over its context: prefill-shaped work.
  c.decode = l.is_decode() && drafted == 0;
  if (drafted > 0) plan_.verify_tokens += new_tokens;
}

int64_t Engine::CapByStepTime(int64_t new_tokens, int64_t context) const {
  const auto cap = policy_->StepTimeCap();
  // A speculative round is a decoder too (its chunk is prefill-shaped). The draft model's
  // time is not in the trial: the cap bounds the target's step.
  const std::vector<StepChunk>& chunks = plan_.chunks;
  const bool decoding = plan_.verify_tokens > 0 ||
                        std::any_of(chunks.begin(), chunks.end(), [](const StepChunk& c) { return c.decode; });
  if (!cap || !decoding) return new_tokens;
  std::vector<StepChunk> trial(chunks);
  trial.push_back({context, new_tokens, false});
  auto fits = [&](int64_t n) {
    trial.back().new_tokens = n;
    return StepHost(trial) + cost_->Cost(trial).gpu <= *cap;
  };
  if (fits(new_tokens)) return new_tokens;
  int64_t lo = 0;  // largest known to fit (0 = none)
  int64_t hi = new_tokens;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid; else hi = mid;
  }
  return lo;
}

int64_t Engine::PrefillChunk(const Live& l, int64_t budget, int64_t computed) const {
  const int64_t remaining = l.num_tokens - computed;
  const int64_t n = std::min({remaining, budget, policy_->ChunkCap()});
  return n <= 0 ? 0 : CapByStepTime(n, computed);
}

void Engine::ScheduleDecodes(int64_t& budget) {
  // A copy (kept between steps for its capacity): preemption edits running_ while we
  // walk it.
  decode_order_.assign(running_.begin(), running_.end());
  const SpeculationConfig& spec = config_.speculation;
  const bool speculate =
      spec.enabled() && (!spec.disable_above_batch || running_count() <= *spec.disable_above_batch);
  // Two loops, so ordinary decoding pays nothing for speculation (the per-decode path
  // is the simulator's hottest; docs/PERFORMANCE.md "Engine").
  if (speculate) {
    ScheduleDecodeLoop<true>(budget);
  } else {
    ScheduleDecodeLoop<false>(budget);
  }
}

template <bool kSpeculate>
void Engine::ScheduleDecodeLoop(int64_t& budget) {
  for (int32_t slot : decode_order_) {
    if (budget <= 0) break;
    Live& l = slots_[static_cast<size_t>(slot)];
    if (!l.in_use || l.scheduled_step == step_index_ || !l.is_decode()) continue;
    if (!l.running) continue;  // preempted earlier in this step
    const int64_t drafted = kSpeculate ? DraftTokens(l, budget) : 0;
    if (!Grow(slot, 1 + drafted) || !l.running) continue;
    AddChunk(slot, 1 + drafted, static_cast<int32_t>(drafted));
    budget -= 1 + drafted;
  }
}

int64_t Engine::DraftTokens(const Live& l, int64_t budget) const {
  const int64_t remaining = l.output_tokens - l.generated;
  if (remaining < config_.speculation.min_remaining) return 0;
  return std::max<int64_t>(0, std::min({config_.speculation.tokens_per_round, remaining - 1, budget - 1}));
}

Duration Engine::DraftTime() {
  const SpeculationConfig& spec = config_.speculation;
  if (!spec.draft_cost) return Duration();
  Duration total;
  for (int64_t j = 0;; ++j) {
    draft_chunks_.clear();
    for (size_t i = 0; i < plan_.entries.size(); ++i) {
      if (plan_.entries[i].drafted > j) draft_chunks_.push_back({plan_.chunks[i].context_tokens + 1 + j, 1, true});
    }
    if (draft_chunks_.empty()) return total;
    total += spec.draft_cost->Cost(draft_chunks_).gpu;
  }
}

void Engine::CountOrdinaryEquivalent() {
  draft_chunks_.clear();
  for (size_t i = 0; i < plan_.entries.size(); ++i) {
    const StepChunk& c = plan_.chunks[i];
    draft_chunks_.push_back(plan_.entries[i].drafted > 0 ? StepChunk{c.context_tokens, 1, true} : c);
  }
  SpeculationCounters& c = stats_.speculation;
  c.verify_step_time += step_gpu_;
  c.ordinary_step_time += cost_->Cost(draft_chunks_).gpu;
}

void Engine::SchedulePartialPrefills(int64_t& budget) {
  std::vector<int32_t> order;
  for (int32_t slot : running_) {
    const Live& l = slots_[static_cast<size_t>(slot)];
    if (l.scheduled_step != step_index_ && !l.is_decode()) order.push_back(slot);
  }
  if (policy_->ReordersPrefill()) {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const Live& x = slots_[static_cast<size_t>(a)];
      const Live& y = slots_[static_cast<size_t>(b)];
      return policy_->PrefillKey(x.req.priority, step_index_ - x.enqueued_step) >
             policy_->PrefillKey(y.req.priority, step_index_ - y.enqueued_step);
    });
  }
  for (int32_t slot : order) {
    if (budget <= 0) break;
    Live& l = slots_[static_cast<size_t>(slot)];
    if (!l.running) continue;  // preempted earlier in this step
    const int64_t n = PrefillChunk(l, budget, l.num_computed);
    if (n <= 0) break;
    if (!Grow(slot, n) || !l.running) continue;
    AddChunk(slot, n);
    budget -= n;
  }
}

bool Engine::StepOnlyDecodes() const {
  return std::all_of(plan_.chunks.begin(), plan_.chunks.end(), [](const StepChunk& c) { return c.decode; });
}

bool Engine::Admit(int32_t slot, int64_t& budget) {
  const int64_t block = config_.block_tokens;
  Live& l = slots_[static_cast<size_t>(slot)];
  const CacheMatch m = kv_->FindCached(l);
  const int64_t start = m.used_blocks * block;  // num_computed once admitted
  const int64_t n = PrefillChunk(l, budget, start);
  if (n <= 0) return false;
  const int64_t tokens = config_.admission == AdmissionMode::kReserve ? l.req.prompt_tokens() + l.req.output_tokens
                                                                       : start + n;
  const int64_t need = BlocksForTokens(tokens, block) - m.used_blocks;
  // Head-of-line: when the first candidate's blocks are not free, nobody behind it is
  // admitted either (a request is never starved by smaller ones behind it). Hits that
  // are cached leave the free list, so they do not count as free for the rest.
  const int64_t free = kv_->FreeAfter(m);
  if (need > free) return false;
  if (config_.admit_whole_prompt) {
    const int64_t whole = BlocksForTokens(std::max(tokens, l.num_tokens), block) - m.used_blocks;
    // The watermark is waived for a prompt that could never be admitted above it, so the
    // head of the queue always fits an empty pool (Submit refused what the pool cannot hold).
    const int64_t watermark = whole + watermark_blocks_ <= config_.kv_blocks ? watermark_blocks_ : 0;
    if (whole + watermark > free) return false;
  }
  LeaveWaiting(slot);
  outstanding_tokens_ -= kv_->TakeCached(l, m);
  const bool allocated = kv_->pool().Allocate(need, l.blocks);
  FP_ASSERT(allocated);
  InsertRunning(slot);
  AddChunk(slot, n);
  budget -= n;
  return true;
}

void Engine::ScheduleWaiting(int64_t& budget) {
  // Candidates in policy order (queue order, or PrefillKey order for reordering
  // policies); the first that cannot be admitted ends admission for this step.
  if (!plan_.preempted.empty() && !config_.admit_in_preempting_step) return;
  const bool reorders = policy_->ReordersPrefill();
  while (budget > 0 && running_count() < config_.scheduler.max_running) {
    if (reorders) {
      const int32_t slot = NextByPrefillKey();
      if (slot < 0 || !Admit(slot, budget)) break;
      continue;
    }
    // Queue order: admitted requests are a prefix of the queue, so they leave from the
    // front, with the stale entries before them.
    while (!waiting_.empty() && !IsCurrent(waiting_.front().slot, waiting_.front().pos)) waiting_.pop_front();
    if (waiting_.empty() || !Admit(waiting_.front().slot, budget)) break;
    waiting_.pop_front();
  }
}

std::optional<SimTime> Engine::StartStep(SimTime now) {
  FP_ASSERT(!in_flight_);
  ++step_index_;
  ExpireWaiting(now);
  Schedule();
  if (plan_.empty()) {
    plan_.clear();  // preemptions without a step: nothing is in flight
    return std::nullopt;
  }
  return Launch(now);
}

void Engine::Schedule() {
  plan_.clear();
  int64_t budget = config_.scheduler.max_batched_tokens;
  bool in_decode_run = false;
  if (decode_run_left_ > 0) {
    // Inside a multi-step run: the same requests decode on; nothing else is scheduled.
    --decode_run_left_;
    ScheduleDecodes(budget);
    in_decode_run = !plan_.empty();
    if (!in_decode_run) decode_run_left_ = 0;  // the run's requests are all done: schedule afresh
  }
  if (!in_decode_run) {
    if (policy_->PrefillBeforeDecode()) {
      SchedulePartialPrefills(budget);
      ScheduleWaiting(budget);
      ScheduleDecodes(budget);
    } else {
      ScheduleDecodes(budget);
      SchedulePartialPrefills(budget);
      ScheduleWaiting(budget);
    }
  }
  kv_->SyncCounters();  // scheduling allocates, which evicts
  CompactWaiting();
  if (!plan_.empty() && !in_decode_run && config_.scheduler.num_scheduler_steps > 1 && StepOnlyDecodes()) {
    decode_run_left_ = config_.scheduler.num_scheduler_steps - 1;
  }
}

SimTime Engine::Launch(SimTime now) {
  const StepCost cost = cost_->Cost(plan_.chunks);
  in_flight_ = true;
  step_start_ = now;
  step_host_ = StepHost(plan_.chunks);
  step_gpu_ = cost.gpu;
  if (plan_.verify_tokens > 0) {
    const Duration draft = DraftTime();
    stats_.speculation.draft_time += draft;
    step_gpu_ += draft;
    CountOrdinaryEquivalent();
  }
  step_end_ = now + step_host_ + step_gpu_;
  if (cost.extrapolated) ++stats_.extrapolated_steps;
  return step_end_;
}

// ---------------------------------------------------------------------------------------
// Applying a step

void Engine::StretchStep(SimTime end) {
  FP_ASSERT(in_flight_ && end >= step_end_);
  step_end_ = end;
}

template <bool kTokenEvents>
void Engine::ApplyChunk(const StepPlan::Entry& p, SimTime now) {
  Live& l = slots_[static_cast<size_t>(p.slot)];
  l.num_computed += p.new_tokens;
  outstanding_tokens_ -= p.new_tokens;
  // Most chunks (decodes) fill no block, and without the prefix cache none seals: one
  // compare against the manager's threshold before calling out of line.
  if (l.num_computed >= l.seal_at) kv_->Seal(l);
  if (l.num_computed < l.num_tokens) return;  // a prefill chunk that does not finish the prompt
  SampleToken<kTokenEvents>(l, p.slot, now);
}

template <bool kTokenEvents>
void Engine::ApplyRound(const StepPlan::Entry& p, SimTime now) {
  Live& l = slots_[static_cast<size_t>(p.slot)];
  // A speculative round keeps the last token and the accepted drafts' KV (speculation.h):
  // the accepted drafts become sampled tokens, then the target's own token is sampled.
  const int64_t accepted = config_.speculation.Accepted(static_cast<uint64_t>(l.req.id), l.generated, p.drafted);
  l.num_computed += 1 + accepted;
  outstanding_tokens_ -= 1 + accepted;
  if (l.num_computed >= l.seal_at) kv_->Seal(l);
  SpeculationCounters& c = stats_.speculation;
  ++c.rounds;
  c.drafted_tokens += p.drafted;
  c.accepted_tokens += accepted;
  c.emitted_tokens += accepted + 1;
  // The accepted drafts are sampled tokens now; none ends the answer (DraftTokens drafts
  // at most remaining - 1), the target's own token may.
  for (int64_t i = 0; i < accepted; ++i) SampleToken<kTokenEvents>(l, p.slot, now);
  SampleToken<kTokenEvents>(l, p.slot, now);
}

template <bool kTokenEvents>
[[gnu::always_inline]] inline bool Engine::SampleToken(Live& l, int32_t slot, SimTime now) {
  ++l.generated;
  if (!l.first_token) {
    l.first_token = now;
    if (observer_ != nullptr) observer_->OnFirstToken(replica_, l.req.id, now);
  } else {
    const Duration gap = now - l.last_token;
    l.itl_max = std::max(l.itl_max, gap);
    if (!l.gap_spans_preemption) stats_.max_decode_gap = std::max(stats_.max_decode_gap, gap);
  }
  l.gap_spans_preemption = false;
  l.last_token = now;
  if constexpr (kTokenEvents) observer_->OnToken(replica_, l.req.id, l.generated - 1, now);
  if (l.generated == l.output_tokens) {
    RemoveRunning(slot);
    End(slot, RequestStatus::kOk, now);
    return false;
  }
  ++l.num_tokens;
  return true;
}

void Engine::CountDecodeBatch(int64_t decodes) {
  std::vector<int64_t>& h = stats_.decode_batch_steps;
  if (static_cast<int64_t>(h.size()) <= decodes) h.resize(static_cast<size_t>(decodes) + 1, 0);
  ++h[static_cast<size_t>(decodes)];
}

void Engine::CountGraphUse(const StepShape& shape) {
  if (shape.prefill_seqs > 0 || shape.decode_seqs == 0) return;
  GraphCounters& g = stats_.cuda_graphs;
  ++g.decode_only_steps;
  const GraphBucket b = config_.cuda_graphs.Bucket(shape.decode_seqs);
  if (b.graphed) {
    ++g.graphed_steps;
    g.real_slots += shape.decode_seqs;
    g.padded_slots += b.padded;
  }
  if (b.fallback) ++g.fallback_steps;
  if (b.unexpected) ++g.unexpected_fallbacks;
}

void Engine::FinishStep(SimTime now) {
  FP_ASSERT(in_flight_ && now == step_end_);
  const StepShape shape = Summarize(plan_.chunks);
  const int64_t verify_tokens = plan_.verify_tokens;
  // Verification chunks are prefill-shaped for the cost model; the counters keep them apart.
  stats_.prefill_tokens += shape.prefill_tokens - verify_tokens;
  stats_.decode_tokens += shape.decode_seqs + verify_tokens;
  if (verify_tokens > 0) ++stats_.speculation.verify_steps;
  if (config_.speculation.enabled()) stats_.speculation.ordinary_decodes += shape.decode_seqs;
  if (shape.prefill_seqs == 0 && shape.decode_seqs > 0) CountDecodeBatch(shape.decode_seqs);
  ++stats_.steps;
  stats_.busy += now - step_start_;
  const KvBlockPool& pool = kv_->pool();
  stats_.kv_peak_blocks = std::max(stats_.kv_peak_blocks, pool.used_count());
  stats_.kv_block_seconds += static_cast<double>(pool.used_count()) * (now - step_start_).seconds();
  stats_.kv_cached_block_seconds += static_cast<double>(pool.cached_count()) * (now - step_start_).seconds();
  if (config_.cuda_graphs.enabled()) CountGraphUse(shape);
  const auto cap = policy_->StepTimeCap();
  if (cap && (shape.decode_seqs > 0 || verify_tokens > 0) && now - step_start_ > *cap) ++stats_.steps_over_time_cap;
  if (observer_ != nullptr) {
    observer_->OnStep({replica_, step_start_, now, shape, step_host_, step_gpu_, pool.used_count(),
                       pool.cached_count(), pool.evictable_count(), waiting_count(), running_count()});
  }
  in_flight_ = false;
  // Token events cost nothing unless asked for: the loop is compiled twice.
  if (token_events_ && observer_ != nullptr) {
    ApplyPlan<true>(now);
  } else {
    ApplyPlan<false>(now);
  }
  plan_.clear();
}

template <bool kTokenEvents>
void Engine::ApplyPlan(SimTime now) {
  for (const StepPlan::Entry& p : plan_.entries) {
    Live& l = slots_[static_cast<size_t>(p.slot)];
    if (l.cancelled) {
      End(p.slot, RequestStatus::kCancelled, now);  // blocks released only now
      continue;
    }
    // Rounds apart, so the ordinary chunk's function is as short as before speculation.
    if (p.drafted > 0) [[unlikely]] {
      ApplyRound<kTokenEvents>(p, now);
    } else {
      ApplyChunk<kTokenEvents>(p, now);
    }
  }
}

Status Engine::CheckInvariants() const {
  FP_RETURN_IF_ERROR(kv_->pool().CheckInvariants());
  int64_t live = 0;
  int64_t work = 0;
  for (const Live& l : slots_) {
    if (!l.in_use) continue;
    ++live;
    work += l.remaining_work();
    if (l.num_computed > l.num_tokens) {
      return InternalError(fmt::format("request {} computed {} of {} tokens", l.req.id, l.num_computed, l.num_tokens));
    }
    if (l.running && l.req.deadline && *l.req.deadline < running_deadline_floor_) {
      return InternalError(fmt::format("running request {} has a deadline before the running floor", l.req.id));
    }
    if (BlocksForTokens(l.num_computed, config_.block_tokens) > static_cast<int64_t>(l.blocks.size())) {
      return InternalError(fmt::format("request {} computed {} tokens in {} blocks", l.req.id, l.num_computed,
                                       l.blocks.size()));
    }
  }
  // Sharing: each block's refcount is the number of live requests holding it.
  FP_RETURN_IF_ERROR(kv_->CheckSharing(slots_));
  FP_RETURN_IF_ERROR(CheckWaiting());
  if (live != index_.size()) return InternalError("request index out of sync");
  if (live != waiting_count() + running_count() + importing_ &&
      !(in_flight_)) {  // cancelled in-flight requests are in neither queue until the step ends
    return InternalError(fmt::format("{} live requests but {} waiting + {} running + {} importing", live,
                                     waiting_count(), running_count(), importing_));
  }
  if (work != outstanding_tokens_) {
    return InternalError(fmt::format("outstanding tokens {} but recount gives {}", outstanding_tokens_, work));
  }
  return Status::Ok();
}

}  // namespace fleetplan
