#include "fleetplan/fleet/admission.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/fleet/simulation.h"
#include "fleetplan/fleet/telemetry.h"
#include "fleetplan/metrics/percentile.h"
#include "fleet/section_readers.h"

namespace fleetplan {

namespace {

// Nearest-rank percentile of sorted values, in ms.
double SortedPercentileMs(const std::vector<int64_t>& sorted, double q) {
  return RoundForReport(static_cast<double>(NearestRankSorted(sorted, q)) / 1e6);
}

// p50, p99 and max of the waits; null (not 0) when there are none.
Json WaitJson(std::vector<int64_t> v) {
  if (v.empty()) return Json{{"p50_ms", nullptr}, {"p99_ms", nullptr}, {"max_ms", nullptr}};
  std::sort(v.begin(), v.end());
  return Json{{"p50_ms", SortedPercentileMs(v, 0.5)},
              {"p99_ms", SortedPercentileMs(v, 0.99)},
              {"max_ms", RoundForReport(static_cast<double>(v.back()) / 1e6)}};
}

std::string MsText(const std::vector<int64_t>& waits, double q) {
  std::vector<int64_t> v = waits;
  std::sort(v.begin(), v.end());
  return fmt::format("{:.1f} ms", SortedPercentileMs(v, q));
}

}  // namespace

int32_t AdmissionConfig::ClassOf(const Request& r) const {
  for (const Rule& rule : rules) {
    if (rule.by_tenant ? r.tenant == rule.handle : r.class_id == rule.handle) return rule.admission_class;
  }
  return default_class;
}

const TenantQuota& AdmissionConfig::QuotaOf(TenantId tenant) const {
  if (tenant >= 0 && static_cast<size_t>(tenant) < tenant_quotas.size() && tenant_quotas[static_cast<size_t>(tenant)]) {
    return *tenant_quotas[static_cast<size_t>(tenant)];
  }
  return default_quota;
}

Admission::Admission(Simulation& sim) : sim_(sim), config_(*sim.setup().components.Find<AdmissionConfig>(kAdmissionRow)) {
  classes_.resize(config_.classes.size());
  for (size_t i = 0; i < config_.classes.size(); ++i) by_priority_.push_back(static_cast<int32_t>(i));
  std::stable_sort(by_priority_.begin(), by_priority_.end(), [&](int32_t a, int32_t b) {
    return config_.classes[static_cast<size_t>(a)].priority > config_.classes[static_cast<size_t>(b)].priority;
  });
  queue_stage_ = sim_.ledger().DeclareStage(this, "class_queue", /*level=*/false);
}

int64_t Admission::capacity() const {
  int64_t n = 0;
  for (int32_t r : sim_.ready_serving()) {
    n += config_.max_in_flight_per_replica.value_or(sim_.setup_of(r).engine.scheduler.max_running);
  }
  return n;
}

Admission::TenantState& Admission::tenant_state(TenantId tenant) {
  const auto i = static_cast<size_t>(tenant + 1);
  if (i >= tenants_.size()) tenants_.resize(i + 1);
  return tenants_[i];
}

const Admission::TenantState* Admission::find_tenant(TenantId tenant) const {
  const auto i = static_cast<size_t>(tenant + 1);
  return i < tenants_.size() ? &tenants_[i] : nullptr;
}

int64_t Admission::tenant_concurrent(TenantId tenant) const {
  const TenantState* t = find_tenant(tenant);
  return t != nullptr ? t->concurrent : 0;
}

int64_t Admission::tenant_tokens_in_flight(TenantId tenant) const {
  const TenantState* t = find_tenant(tenant);
  return t != nullptr ? t->tokens : 0;
}

int64_t Admission::ChargeOf(const Request& r, int32_t cls) const {
  return r.prompt_tokens() + (config_.classes[static_cast<size_t>(cls)].worst_case_kv ? r.output_tokens : 0);
}

Duration Admission::RateCost(const TenantQuota& q, int64_t tokens) const {
  // Rounded up: the bucket never refills faster than token_rate.
  return Duration::Nanos(static_cast<int64_t>(std::ceil(static_cast<double>(tokens) * 1e9 / *q.token_rate)));
}

std::string_view Admission::Blocked(TenantId tenant, int64_t charge, SimTime now, std::optional<SimTime>* wake) const {
  const TenantQuota& q = config_.QuotaOf(tenant);
  const TenantState* t = find_tenant(tenant);
  const int64_t concurrent = t != nullptr ? t->concurrent : 0;
  const int64_t tokens = t != nullptr ? t->tokens : 0;
  if (q.max_concurrent && concurrent >= *q.max_concurrent) return kReasonTenantConcurrency;
  if (q.max_tokens_in_flight && tokens + charge > *q.max_tokens_in_flight) return kReasonTenantTokens;
  if (q.token_rate) {
    // GCRA: the bucket lacks max(0, tat - now) x rate tokens; `charge` fits when that
    // debt leaves room for it. The tolerance is rounded down (never more than `burst`).
    const SimTime tat = t != nullptr ? t->tat : SimTime();
    const Duration debt = tat > now ? tat - now : Duration();
    const Duration tolerance = Duration::Nanos(
        static_cast<int64_t>(std::floor(static_cast<double>(q.burst - charge) * 1e9 / *q.token_rate)));
    if (debt > tolerance) {
      const SimTime at = tat - tolerance;
      if (!*wake || at < **wake) *wake = at;
      return kReasonTenantTokenRate;
    }
  }
  return {};
}

bool Admission::Dispatch(const Request& r, SimTime now) {
  // Given back by a lost replica: admitted once already, so routed again as it is (it
  // still holds its tenant's charge), never counted again nor taken for a duplicate.
  if (sim_.requeuing(r.id) && admitted_.contains(r.id)) return false;
  if (!first_arrival_) first_arrival_ = now;
  const int32_t cls = config_.ClassOf(r);
  ClassState& c = classes_[static_cast<size_t>(cls)];
  const AdmissionClass& spec = config_.classes[static_cast<size_t>(cls)];
  ++c.figures.arrived;
  ++tenant_state(r.tenant).arrived;
  if (queued_.contains(r.id) || admitted_.contains(r.id)) {
    Reject(r, cls, kReasonDuplicate, now, /*retry=*/false);
    return true;
  }
  const int64_t charge = ChargeOf(r, cls);
  const TenantQuota& q = config_.QuotaOf(r.tenant);
  if ((q.max_tokens_in_flight && charge > *q.max_tokens_in_flight) || (q.token_rate && charge > q.burst)) {
    Reject(r, cls, kReasonExceedsQuota, now, /*retry=*/false);  // no retry can pass
    return true;
  }
  // Queued behind what waits already, then released if it may go; a request still
  // queued beyond its class's bound is taken back out and rejected.
  Queued& e = queued_[r.id];
  e.request = r;
  e.cls = cls;
  e.enqueued = now;
  e.expires = now + spec.max_wait;
  if (r.deadline && *r.deadline < e.expires) {
    e.expires = std::max(*r.deadline, now);
    e.deadline = true;
  }
  e.charge = charge;
  e.seq = seq_++;
  c.queue.insert({e.seq, r.id});
  sim_.ledger().Hold(r.id, queue_stage_, /*bound_for=*/-1);
  Pump(now);
  const auto it = queued_.find(r.id);
  if (it != queued_.end()) {
    if (static_cast<int64_t>(c.queue.size()) > spec.max_queue) {
      std::optional<SimTime> wake;
      const std::string_view why = Blocked(r.tenant, charge, now, &wake);
      c.queue.erase({it->second.seq, r.id});
      Forget(it);
      Reject(r, cls, why.empty() ? kReasonQueueFull : why, now, /*retry=*/true);
    } else {
      it->second.cancel_scheduled = r.cancel_at.has_value();
      sim_.queue().Push(it->second.expires, this, kExpire, -1, r.id, /*passive=*/true);
      sim_.ScheduleCancel(r, now);
    }
  }
  NoteQueueLength(cls);
  return true;
}

void Admission::NoteQueueLength(int32_t cls) {
  ClassState& c = classes_[static_cast<size_t>(cls)];
  c.figures.max_queue_length = std::max(c.figures.max_queue_length, static_cast<int64_t>(c.queue.size()));
}

const Admission::Queued* Admission::Pick(SimTime now, std::optional<SimTime>* wake, bool* aged) const {
  // Aged requests first, whatever their class's priority: the earliest class deadline.
  const Queued* best = nullptr;
  SimTime best_deadline;
  for (size_t k = 0; k < classes_.size(); ++k) {
    const AdmissionClass& spec = config_.classes[k];
    if (!spec.aging_margin) continue;
    const Duration aged_after = spec.max_wait - *spec.aging_margin;
    for (const auto& [seq, id] : classes_[k].queue) {
      const Queued& q = queued_.at(id);
      if (now - q.enqueued < aged_after) break;  // FIFO: the later ones waited less
      if (!Blocked(q.request.tenant, q.charge, now, wake).empty()) continue;
      const SimTime deadline = q.enqueued + spec.max_wait;
      if (best == nullptr || deadline < best_deadline || (deadline == best_deadline && q.seq < best->seq)) {
        best = &q;
        best_deadline = deadline;
      }
      break;
    }
  }
  if (best != nullptr) {
    *aged = true;
    return best;
  }
  for (int32_t k : by_priority_) {
    for (const auto& [seq, id] : classes_[static_cast<size_t>(k)].queue) {
      const Queued& q = queued_.at(id);
      if (Blocked(q.request.tenant, q.charge, now, wake).empty()) return &q;
    }
  }
  return nullptr;
}

void Admission::Pump(SimTime now) {
  if (pumping_) {
    SchedulePump(now);
    return;
  }
  pumping_ = true;
  std::optional<SimTime> wake;
  while (!queued_.empty() && in_flight() < capacity()) {
    wake.reset();
    bool aged = false;
    const Queued* q = Pick(now, &wake, &aged);
    if (q == nullptr) break;
    Request r = q->request;
    if (q->cancel_scheduled) r.cancel_at.reset();  // its client's cancel is queued already
    const int32_t cls = q->cls;
    const int64_t charge = q->charge;
    const SimTime since = q->enqueued;
    classes_[static_cast<size_t>(cls)].queue.erase({q->seq, r.id});
    Forget(queued_.find(r.id));
    if (aged) ++classes_[static_cast<size_t>(cls)].figures.aged;
    Release(r, cls, charge, since, now);
  }
  pumping_ = false;
  if (wake && !queued_.empty()) SchedulePump(std::max(*wake, now));
}

void Admission::Release(const Request& r, int32_t cls, int64_t charge, SimTime since, SimTime now) {
  admitted_[r.id] = Live{cls, r.tenant, charge};
  TenantState& t = tenant_state(r.tenant);
  ++t.concurrent;
  t.tokens += charge;
  ++t.admitted;
  t.peak_concurrent = std::max(t.peak_concurrent, t.concurrent);
  t.peak_tokens = std::max(t.peak_tokens, t.tokens);
  const TenantQuota& q = config_.QuotaOf(r.tenant);
  if (q.token_rate) t.tat = std::max(t.tat, now) + RateCost(q, charge);
  ClassState& c = classes_[static_cast<size_t>(cls)];
  ++c.figures.admitted;
  c.figures.wait_ns.push_back((now - since).ns());
  c.releases_ns.push_back(now.ns());
  while (c.releases_ns.front() <= now.ns() - kReleaseRateWindow.ns()) c.releases_ns.pop_front();
  max_in_flight_ = std::max(max_in_flight_, in_flight());
  // Routed as an arrival is: the components after this one may take it (pools), else a
  // component's route (replication) or the router decides.
  if (Telemetry* telemetry = sim_.find_component<Telemetry>()) telemetry->BeforeDecision(now);
  bool after = false;
  bool taken = false;
  sim_.ForEachComponent([&](FleetComponent& other) {
    if (taken) return;
    if (&other == this) {
      after = true;
    } else if (after && other.Dispatch(r, now)) {
      taken = true;
    }
  });
  if (taken) return;
  std::optional<RouteDecision> d;
  sim_.ForEachComponent([&](FleetComponent& other) {
    if (!d) d = other.Route(r, now);
  });
  const std::vector<int32_t>& ready = sim_.ready_serving();
  FP_ASSERT(!ready.empty());  // capacity > 0 only with a ready serving replica
  if (!d) {
    d = sim_.replica_count() > 1 ? sim_.RouteAmong(Simulation::RouterSet::kServing, ready, r)
                                 : RouteDecision{ready[0], 0, {}, {}, 0};
  }
  sim_.AfterRoute(r, *d, now);
}

void Admission::SchedulePump(SimTime at) {
  if (pumps_.insert(at.ns()).second) sim_.queue().Push(at, this, kPump, -1, 0, /*passive=*/true);
}

Duration Admission::RetryAfter(int32_t cls, SimTime now) {
  ClassState& c = classes_[static_cast<size_t>(cls)];
  const Duration max_wait = config_.classes[static_cast<size_t>(cls)].max_wait;
  while (!c.releases_ns.empty() && c.releases_ns.front() <= now.ns() - kReleaseRateWindow.ns()) c.releases_ns.pop_front();
  const int64_t elapsed = std::min(kReleaseRateWindow.ns(), (now - first_arrival_.value_or(now)).ns());
  const auto released = static_cast<int64_t>(c.releases_ns.size());
  if (released == 0 || elapsed <= 0) return max_wait;  // nothing released lately: at most its queue's turnover
  // The queued requests and the retry itself, at the observed release rate (rounded up).
  const int64_t ahead = static_cast<int64_t>(c.queue.size()) + 1;
  const int64_t ns = (ahead * elapsed + released - 1) / released;
  return std::min(Duration::Nanos(ns), max_wait);
}

void Admission::Reject(const Request& r, int32_t cls, std::string_view reason, SimTime now, bool retry) {
  ClassState& c = classes_[static_cast<size_t>(cls)];
  ++c.figures.rejected[std::string(reason)];
  ++tenant_state(r.tenant).rejected;
  const std::optional<Duration> after = retry ? std::optional<Duration>(RetryAfter(cls, now)) : std::nullopt;
  ending_ = true;
  sim_.EndInFleet(r, -1, RequestStatus::kRejected, now, std::string(reason), after);
  ending_ = false;
}

void Admission::EndQueued(std::map<RequestId, Queued>::iterator it, RequestStatus status, std::string_view reason,
                          SimTime now) {
  const Request r = it->second.request;
  const int32_t cls = it->second.cls;
  classes_[static_cast<size_t>(cls)].queue.erase({it->second.seq, r.id});
  Forget(it);
  std::optional<Duration> after;
  if (status == RequestStatus::kRejected) {
    ++tenant_state(r.tenant).rejected;
    after = RetryAfter(cls, now);
  }
  ending_ = true;
  sim_.EndInFleet(r, -1, status, now, std::string(reason), after);
  ending_ = false;
}

bool Admission::ConsumeDuplicate(const Request& r, SimTime now) {
  (void)now;
  const uint64_t serial = duplicate_serial_++;
  duplicates_.emplace(serial, r);
  sim_.ledger().HoldDuplicate();
  sim_.queue().Push(r.arrival, this, kDuplicate, -1, static_cast<int64_t>(serial), /*passive=*/true);
  return true;
}

bool Admission::ConsumeCancel(RequestId id, SimTime now) {
  const auto it = queued_.find(id);
  if (it == queued_.end()) return false;
  ++classes_[static_cast<size_t>(it->second.cls)].figures.ended_waiting;
  EndQueued(it, RequestStatus::kCancelled, {}, now);
  return true;
}

void Admission::OnRequestDone(const RequestOutcome& o) {
  if (ending_) return;  // one of ours, never admitted (a duplicate shares an admitted id)
  const auto it = admitted_.find(o.id);
  if (it == admitted_.end()) return;
  TenantState& t = tenant_state(it->second.tenant);
  --t.concurrent;
  t.tokens -= it->second.charge;
  admitted_.erase(it);
  // Inside an engine call: the release waits for an event of its own at this time.
  if (!queued_.empty()) SchedulePump(sim_.now());
}

void Admission::OnReplicaState(int32_t replica, ReplicaState state, SimTime now) {
  (void)replica;
  if (state == ReplicaState::kReady && !queued_.empty()) SchedulePump(now);
}

void Admission::Forget(std::map<RequestId, Queued>::iterator it) {
  sim_.ledger().Release(it->first);
  queued_.erase(it);
}

void Admission::OnEvent(const Event& e) {
  switch (static_cast<Code>(e.code)) {
    case kPump:
      pumps_.erase(e.time.ns());
      Pump(e.time);
      break;
    case kExpire: {
      const auto it = queued_.find(e.request);
      if (it == queued_.end() || it->second.expires != e.time) break;  // released (or a later request of that id)
      ClassFigures& f = classes_[static_cast<size_t>(it->second.cls)].figures;
      if (it->second.deadline) {
        ++f.ended_waiting;
        EndQueued(it, RequestStatus::kTimeout, "deadline passed waiting for admission", e.time);
      } else {
        ++f.expired;
        EndQueued(it, RequestStatus::kRejected, kReasonExpired, e.time);
      }
      break;
    }
    case kDuplicate: {
      auto node = duplicates_.extract(static_cast<uint64_t>(e.request));
      FP_ASSERT(!node.empty());
      sim_.ledger().ReleaseDuplicate();
      const Request& r = node.mapped();
      sim_.ForEachComponent([&](FleetComponent& c) { c.OnArrival(r, e.time); });
      const int32_t cls = config_.ClassOf(r);
      ++classes_[static_cast<size_t>(cls)].figures.arrived;
      ++tenant_state(r.tenant).arrived;
      Reject(r, cls, kReasonDuplicate, e.time, /*retry=*/false);
      break;
    }
  }
}

Status Admission::CheckInvariants() const {
  // Per tenant: concurrent requests and tokens in flight, from the live admitted requests.
  std::vector<std::pair<int64_t, int64_t>> live(tenants_.size());
  for (const auto& [id, l] : admitted_) {
    const auto i = static_cast<size_t>(l.tenant + 1);
    if (i >= live.size()) return InternalError(fmt::format("admitted request {}'s tenant {} has no state", id, l.tenant));
    ++live[i].first;
    live[i].second += l.charge;
  }
  for (size_t i = 0; i < tenants_.size(); ++i) {
    const TenantState& t = tenants_[i];
    if (t.concurrent != live[i].first || t.tokens != live[i].second) {
      return InternalError(fmt::format("tenant {}: {} concurrent / {} tokens in flight counted; the admitted requests "
                                       "give {} / {}",
                                       static_cast<int64_t>(i) - 1, t.concurrent, t.tokens, live[i].first,
                                       live[i].second));
    }
    const TenantQuota& q = config_.QuotaOf(static_cast<TenantId>(i) - 1);
    if ((q.max_concurrent && t.concurrent > *q.max_concurrent) ||
        (q.max_tokens_in_flight && t.tokens > *q.max_tokens_in_flight)) {
      return InternalError(fmt::format("tenant {}: {} concurrent / {} tokens in flight exceed its quota",
                                       static_cast<int64_t>(i) - 1, t.concurrent, t.tokens));
    }
  }
  // Per class: the queue holds exactly the queued requests of the class, within its bound.
  std::vector<int64_t> members(classes_.size(), 0);
  for (const auto& [id, q] : queued_) {
    if (q.cls < 0 || static_cast<size_t>(q.cls) >= classes_.size() ||
        !classes_[static_cast<size_t>(q.cls)].queue.contains({q.seq, id})) {
      return InternalError(fmt::format("queued request {} is not in its class queue", id));
    }
    ++members[static_cast<size_t>(q.cls)];
  }
  for (size_t k = 0; k < classes_.size(); ++k) {
    const auto length = static_cast<int64_t>(classes_[k].queue.size());
    if (length != members[k]) {
      return InternalError(fmt::format("admission class {} queues {} requests; {} are queued in it",
                                       config_.classes[k].name, length, members[k]));
    }
    if (length > config_.classes[k].max_queue) {
      return InternalError(fmt::format("admission class {} queues {} requests, above its max_queue {}",
                                       config_.classes[k].name, length, config_.classes[k].max_queue));
    }
  }
  // In flight: every live routed request was admitted, and every admitted one is live.
  int64_t routed = 0;
  bool unknown = false;
  sim_.ForEachRoute([&](RequestId id, const RouteInfo&) {
    ++routed;
    unknown = unknown || !admitted_.contains(id);
  });
  if (unknown || routed != in_flight()) {
    return InternalError(fmt::format("{} requests admitted and live; {} routed{}", in_flight(), routed,
                                     unknown ? ", some never admitted" : ""));
  }
  return Status::Ok();
}

void Admission::AddReport(Duration span, Json& report) const {
  (void)span;
  Json classes = Json::object();
  for (size_t k = 0; k < classes_.size(); ++k) {
    const AdmissionClass& spec = config_.classes[k];
    const ClassFigures& f = classes_[k].figures;
    Json rejected = Json::object();
    int64_t total = 0;
    for (const auto& [reason, n] : f.rejected) {
      rejected[reason] = n;
      total += n;
    }
    classes[spec.name] = {{"priority", spec.priority},
                          {"max_queue", spec.max_queue},
                          {"max_wait_ms", RoundForReport(spec.max_wait.millis())},
                          {"aging_margin_ms", spec.aging_margin ? Json(RoundForReport(spec.aging_margin->millis())) : Json()},
                          {"arrived", f.arrived},
                          {"admitted", f.admitted},
                          {"admitted_by_aging", f.aged},
                          {"rejected", std::move(rejected)},
                          {"rejected_total", total},
                          {"expired", f.expired},
                          {"ended_waiting", f.ended_waiting},
                          {"queue_wait", WaitJson(f.wait_ns)},
                          {"max_queue_length", f.max_queue_length}};
  }
  Json tenants = Json::object();
  for (size_t i = 0; i < tenants_.size(); ++i) {
    const TenantState& t = tenants_[i];
    if (t.arrived == 0) continue;
    const auto id = static_cast<size_t>(i) - 1;
    const std::string name = i == 0 ? "(none)" : id < config_.tenant_names.size() ? config_.tenant_names[id]
                                                                                 : fmt::format("tenant {}", id);
    tenants[name] = {{"arrived", t.arrived},
                     {"admitted", t.admitted},
                     {"rejected", t.rejected},
                     {"max_concurrent_seen", t.peak_concurrent},
                     {"max_tokens_in_flight_seen", t.peak_tokens}};
  }
  report["admission"] = {
      {"max_in_flight_per_replica",
       config_.max_in_flight_per_replica ? Json(*config_.max_in_flight_per_replica) : Json("max_running")},
      {"max_in_flight_seen", max_in_flight_},
      {"classes", std::move(classes)},
      {"tenants", std::move(tenants)}};
}

void Admission::AddSummary(Duration span, std::vector<std::string>& lines) const {
  (void)span;
  lines.push_back(fmt::format("admission: {} in flight per ready replica, at most {} in flight at once\n",
                              config_.max_in_flight_per_replica ? std::to_string(*config_.max_in_flight_per_replica)
                                                                : std::string("max_running"),
                              max_in_flight_));
  for (int32_t k : by_priority_) {
    const AdmissionClass& spec = config_.classes[static_cast<size_t>(k)];
    const ClassFigures& f = classes_[static_cast<size_t>(k)].figures;
    std::vector<std::string> reasons;
    int64_t rejected = 0;
    for (const auto& [reason, n] : f.rejected) {
      reasons.push_back(fmt::format("{} {}", reason, n));
      rejected += n;
    }
    const std::string waits = f.wait_ns.empty() ? std::string("no admitted request")
                                                : fmt::format("queue wait p50 {}, p99 {}, max {}", MsText(f.wait_ns, 0.5),
                                                              MsText(f.wait_ns, 0.99), MsText(f.wait_ns, 1.0));
    lines.push_back(fmt::format("  class {} (priority {}): {} arrived, {} admitted ({} by aging), {} rejected{}, {} "
                                "expired; {}; longest queue {} of {}\n",
                                spec.name, spec.priority, f.arrived, f.admitted, f.aged, rejected,
                                reasons.empty() ? "" : fmt::format(" ({})", fmt::join(reasons, ", ")), f.expired,
                                waits, f.max_queue_length, spec.max_queue));
  }
}

// ---- the section reader ----------------------------------------------------------

namespace section {

const std::vector<std::string> kReserveKvModes = {"prompt", "worst-case"};

// A quota: `base`'s limits where `node` gives none. `derived` notes what was filled in.
Expected<TenantQuota> ReadQuota(const YamlNode& node, const TenantQuota& base, bool note_unlimited, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kTenantQuota));
  TenantQuota q = base;
  if (node["max_concurrent"].present()) {
    FP_ASSIGN_OR_RETURN(q.max_concurrent, node["max_concurrent"].AsIntAtLeast(1));
  }
  if (node["max_tokens_in_flight"].present()) {
    FP_ASSIGN_OR_RETURN(q.max_tokens_in_flight, node["max_tokens_in_flight"].AsIntAtLeast(1));
  }
  if (node["token_rate"].present()) {
    FP_ASSIGN_OR_RETURN(Rate rate, node["token_rate"].AsRate());
    if (!(rate.per_second > 0)) return node["token_rate"].Error("expected a rate > 0 (tokens per second, e.g. 20000/s)");
    q.token_rate = rate.per_second;
    if (!node["burst"].present()) {
      q.burst = static_cast<int64_t>(std::ceil(rate.per_second));
      s.derived.push_back(fmt::format("{}: {} (one second of token_rate; not given)", node["burst"].path(), q.burst));
    }
  }
  if (node["burst"].present()) {
    if (!q.token_rate) return node["burst"].Error("`burst` needs a token_rate");
    FP_ASSIGN_OR_RETURN(q.burst, node["burst"].AsIntAtLeast(1));
  }
  if (note_unlimited) {
    NoteDefault(node["max_concurrent"], "unlimited", s);
    NoteDefault(node["max_tokens_in_flight"], "unlimited", s);
    NoteDefault(node["token_rate"], "unlimited", s);
  }
  return q;
}

Status ReadAdmission(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kAdmission));
  AdmissionSpec& a = s.admission;
  a.enabled = true;
  FP_RETURN_IF_ERROR(node["classes"].RequirePresent());
  FP_ASSIGN_OR_RETURN(auto entries, node["classes"].Entries());
  if (entries.empty()) return node["classes"].Error("expected at least one admission class");
  std::vector<std::string> names;
  for (const auto& [name, c] : entries) {
    FP_RETURN_IF_ERROR(CheckOptionalMap(c, keys::kAdmissionClass));
    AdmissionClass k;
    k.name = name;
    FP_ASSIGN_OR_RETURN(k.priority, c["priority"].IntOr(0));
    FP_ASSIGN_OR_RETURN(k.max_queue, c["max_queue"].IntOr(k.max_queue));
    if (k.max_queue < 0) return c["max_queue"].Error(fmt::format("expected an integer >= 0, got {}", k.max_queue));
    FP_ASSIGN_OR_RETURN(k.max_wait, c["max_wait"].DurationOr(k.max_wait));
    if (k.max_wait <= Duration()) return c["max_wait"].Error("expected a duration > 0");
    FP_ASSIGN_OR_RETURN(std::string reserve, ReadChoice(c["reserve_kv"], "prompt", "KV reservation", kReserveKvModes));
    k.worst_case_kv = reserve == "worst-case";
    const YamlNode margin = c["aging_margin"];
    if (margin.present() && margin.IsScalar() && margin.Text() == "off") {
      k.aging_margin.reset();
    } else if (margin.present()) {
      FP_ASSIGN_OR_RETURN(k.aging_margin, margin.AsDuration());
      if (*k.aging_margin > k.max_wait) {
        return margin.Error(fmt::format("expected `off` or a duration <= max_wait ({}), got {}",
                                        DurationText(k.max_wait), DurationText(*k.aging_margin)));
      }
    } else {
      k.aging_margin = k.max_wait / 4;
      s.derived.push_back(fmt::format("{}: {} (max_wait / 4; not given)", margin.path(), DurationText(*k.aging_margin)));
    }
    NoteDefault(c["priority"], "0", s);
    NoteDefault(c["max_queue"], std::to_string(k.max_queue), s);
    NoteDefault(c["max_wait"], DurationText(k.max_wait), s);
    NoteDefault(c["reserve_kv"], reserve, s);
    names.push_back(name);
    a.classes.push_back(std::move(k));
  }
  const auto class_index = [&](const YamlNode& n) -> Expected<int32_t> {
    FP_ASSIGN_OR_RETURN(std::string name, n.AsString());
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) return n.Error(UnknownNameMessage("admission class", name, names));
    return static_cast<int32_t>(it - names.begin());
  };
  if (node["default_class"].present()) {
    FP_ASSIGN_OR_RETURN(a.default_class, class_index(node["default_class"]));
  } else {
    a.default_class = 0;
    s.derived.push_back(fmt::format("admission.default_class: {} (the first class; not given)", names[0]));
  }
  if (node["assign"].present() && !node["assign"].IsNull()) {
    FP_ASSIGN_OR_RETURN(auto items, node["assign"].Items());
    for (const YamlNode& item : items) {
      FP_RETURN_IF_ERROR(item.CheckKeys(keys::kAdmissionRule));
      const bool tenant = item["tenant"].present();
      if (tenant == item["workload_class"].present()) {
        return item.Error("expected one of `tenant` and `workload_class` (the rule's match)");
      }
      AdmissionSpec::Rule rule;
      rule.by_tenant = tenant;
      rule.node = item[tenant ? "tenant" : "workload_class"];
      FP_ASSIGN_OR_RETURN(rule.name, rule.node->AsString());
      FP_ASSIGN_OR_RETURN(rule.admission_class, class_index(item["class"]));
      a.rules.push_back(std::move(rule));
    }
  }
  if (node["max_in_flight_per_replica"].present()) {
    FP_ASSIGN_OR_RETURN(a.max_in_flight_per_replica, node["max_in_flight_per_replica"].AsIntAtLeast(1));
  } else {
    s.derived.push_back(fmt::format("admission.max_in_flight_per_replica: {} (engine.scheduler.max_running; not given)",
                                    s.engine.scheduler.max_running));
  }
  if (node["tenant_quota"].present() && !node["tenant_quota"].IsNull()) {
    FP_ASSIGN_OR_RETURN(a.default_quota, ReadQuota(node["tenant_quota"], TenantQuota{}, /*note_unlimited=*/true, s));
  } else {
    s.derived.push_back("admission.tenant_quota: none (no tenant limits; not given)");
  }
  if (node["tenants"].present() && !node["tenants"].IsNull()) {
    FP_ASSIGN_OR_RETURN(auto tenants, node["tenants"].Entries());
    for (const auto& [tenant, q] : tenants) {
      FP_ASSIGN_OR_RETURN(TenantQuota quota, ReadQuota(q, a.default_quota, /*note_unlimited=*/false, s));
      a.overrides.push_back({tenant, quota, q});
    }
  }
  return Status::Ok();
}

}  // namespace section

Expected<AdmissionConfig> ResolveAdmission(const AdmissionSpec& spec, const WorkloadNames& names) {
  AdmissionConfig c;
  if (!spec.enabled) return c;
  c.enabled = true;
  c.classes = spec.classes;
  c.default_class = spec.default_class;
  c.max_in_flight_per_replica = spec.max_in_flight_per_replica;
  c.default_quota = spec.default_quota;
  c.tenant_names = names.tenants;
  const auto resolve = &section::ResolveWorkloadName;
  for (const AdmissionSpec::Rule& r : spec.rules) {
    FP_ASSIGN_OR_RETURN(int32_t handle, resolve(*r.node, r.name, r.by_tenant ? names.tenants : names.classes,
                                                r.by_tenant ? "tenant" : "workload class"));
    c.rules.push_back({r.by_tenant, handle, r.admission_class});
  }
  c.tenant_quotas.assign(names.tenants.size(), std::nullopt);
  for (const AdmissionSpec::Override& o : spec.overrides) {
    FP_ASSIGN_OR_RETURN(int32_t handle, resolve(*o.node, o.tenant, names.tenants, "tenant"));
    c.tenant_quotas[static_cast<size_t>(handle)] = o.quota;
  }
  return c;
}

}  // namespace fleetplan
