// Synthetic request generators (generator.h): open loop and closed loop over one
// request builder that owns every named stream.
#include "fleetplan/workload/generator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/units_parse.h"
#include "fleetplan/workload/content.h"

namespace fleetplan {
namespace {

// A session's carried state between turns: what the next turn's prompt starts with.
struct SessionState {
  ClassId class_id = 0;
  TenantId tenant = kNoTenant;
  AdapterId adapter = kNoAdapter;
  int64_t session = -1;
  int32_t next_turn = 1;
  int64_t turns = 1;                    // total turns of this session
  std::vector<PromptSegment> prompt;    // the previous turn's prompt + its answer
};

struct SegmentRuntime {
  SegmentSpec spec;
  RngStream stream;
  std::string slot_path;
};

// Slot paths of a class, precomputed: they key GeneratorAdjustments::capped_draws.
struct ClassPaths {
  std::string output, turns, think, deadline, cancel_after;
  explicit ClassPaths(const std::string& base)
      : output(base + ".output_tokens"),
        turns(base + ".session.turns"),
        think(base + ".session.think_time"),
        deadline(base + ".deadline"),
        cancel_after(base + ".cancel.after") {}
};

struct ClassRuntime {
  ClassSpec spec;
  ClassPaths paths;
  std::vector<SegmentRuntime> segments;
  size_t history = std::string::npos;   // index of the history segment
  RngStream output, session, deadline, cancel;
};

std::vector<std::string> NumberedNames(std::string_view prefix, int64_t count) {
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) names.push_back(fmt::format("{}-{}", prefix, i));
  return names;
}

// Builds request bodies: everything except the arrival process. Owns the named streams.
class RequestBuilder {
 public:
  RequestBuilder(const WorkloadSpec& spec, uint64_t seed)
      : spec_(spec),
        class_stream_(seed, "workload.class"),
        tenant_stream_(seed, "workload.tenant"),
        adapter_stream_(seed, "workload.adapter") {
    for (const ClassSpec& c : spec.classes) {
      const std::string path = fmt::format("workload.classes.{}", c.name);
      ClassRuntime rt{.spec = c,
                      .paths = ClassPaths(path),
                      .segments = {},
                      .history = std::string::npos,
                      .output = RngStream(seed, path + ".output_tokens"),
                      .session = RngStream(seed, path + ".session"),
                      .deadline = RngStream(seed, path + ".deadline"),
                      .cancel = RngStream(seed, path + ".cancel")};
      for (size_t i = 0; i < c.prompt.size(); ++i) {
        const std::string seg_path = fmt::format("{}.prompt[{}]", path, i);
        rt.segments.push_back(SegmentRuntime{c.prompt[i], RngStream(seed, seg_path), seg_path + ".tokens"});
        if (c.prompt[i].source == SegmentSource::kHistory) rt.history = i;
      }
      classes_.push_back(std::move(rt));
      share_total_ += c.share;
      cumulative_.push_back(share_total_);
      names_.classes.push_back(c.name);
    }
    if (spec.tenants) names_.tenants = NumberedNames("tenant", spec.tenants->count);
    if (spec.adapters) names_.adapters = NumberedNames("adapter", spec.adapters->population.count);
  }

  const WorkloadNames& names() const { return names_; }
  GeneratorAdjustments& adjustments() { return adjustments_; }
  const GeneratorAdjustments& adjustments() const { return adjustments_; }

  // A first request: draws the class, tenant and adapter, then the class's streams.
  // `session_out` receives the session's state when the request starts a session with
  // more turns to come.
  Request Fresh(RequestId id, SimTime arrival, std::optional<SessionState>* session_out) {
    Request r;
    r.id = id;
    r.arrival = arrival;
    r.class_id = DrawClass();
    if (spec_.tenants) {
      r.tenant = static_cast<TenantId>(spec_.tenants->popularity.Sample(tenant_stream_) - 1);
    }
    if (spec_.adapters && adapter_stream_.NextDouble() < spec_.adapters->fraction) {
      r.adapter = static_cast<AdapterId>(spec_.adapters->population.popularity.Sample(adapter_stream_) - 1);
    }
    ClassRuntime& c = classes_[static_cast<size_t>(r.class_id)];
    for (size_t i = 0; i < c.segments.size(); ++i) {
      if (i != c.history) AppendSegment(c, i, r);
    }
    FinishBody(c, r);
    session_out->reset();
    if (c.spec.session) {
      const int64_t turns = SampleTokens(c.spec.session->turns, c.session, c.paths.turns);
      r.session = next_session_++;
      r.turn = 0;
      if (turns > 1) {
        SessionState s{r.class_id, r.tenant, r.adapter, r.session, 1, turns, {}};
        s.prompt = r.prompt;
        *session_out = std::move(s);
      }
    }
    return r;
  }

  // The next turn of `state`; updates `state` for the turn after (when there is one).
  Request Turn(RequestId id, SimTime arrival, SessionState& state) {
    Request r;
    r.id = id;
    r.arrival = arrival;
    r.class_id = state.class_id;
    r.tenant = state.tenant;
    r.adapter = state.adapter;
    r.session = state.session;
    r.turn = state.next_turn;
    ClassRuntime& c = classes_[static_cast<size_t>(r.class_id)];
    r.prompt = std::move(state.prompt);
    for (size_t i = c.history + 1; i < c.segments.size(); ++i) AppendSegment(c, i, r);
    FinishBody(c, r);
    ++state.next_turn;
    state.prompt = r.prompt;
    return r;
  }

  // After request `r` of a session is emitted: extends the carried prompt by its answer.
  static void AddAnswer(const Request& r, SessionState& state) {
    state.prompt.push_back(PromptSegment{MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(r.id)),
                                         r.output_tokens});
  }

  Duration SessionThink(ClassId class_id) {
    ClassRuntime& c = classes_[static_cast<size_t>(class_id)];
    bool capped = false;
    const Duration d = c.spec.session->think_time.Sample(c.session, &capped);
    if (capped) ++adjustments_.capped_draws[c.paths.think];
    return d;
  }

 private:
  ClassId DrawClass() {
    const double u = class_stream_.NextDouble() * share_total_;
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    const auto index = std::min<ptrdiff_t>(it - cumulative_.begin(), static_cast<ptrdiff_t>(cumulative_.size()) - 1);
    return static_cast<ClassId>(index);
  }

  int64_t SampleTokens(const TokenSlot& slot, RngStream& stream, const std::string& path) {
    bool capped = false;
    const int64_t v = slot.Sample(stream, &capped);
    if (capped) ++adjustments_.capped_draws[path];
    return v;
  }

  // The length of shared content (a tenant's instructions, a document): a property of
  // the content, drawn from a stream forked by its identity.
  int64_t SharedLength(SegmentRuntime& seg, const std::string& identity) {
    if (seg.spec.tokens->is_fixed()) return seg.spec.tokens->Sample(seg.stream);
    RngStream own = seg.stream.Fork(identity);
    return SampleTokens(*seg.spec.tokens, own, seg.slot_path);
  }

  void AppendSegment(ClassRuntime& c, size_t i, Request& r) {
    SegmentRuntime& seg = c.segments[i];
    PromptSegment out;
    const auto tenant_key = static_cast<uint64_t>(static_cast<int64_t>(r.tenant));
    switch (seg.spec.source) {
      case SegmentSource::kSystem:
        out.content = MakeContentId(SegmentKind::kSystem, 0);
        out.tokens = SharedLength(seg, "system");
        break;
      case SegmentSource::kTenantInstructions:
        out.content = MakeContentId(SegmentKind::kTenantInstructions, tenant_key);
        out.tokens = SharedLength(seg, fmt::format("tenant-{}", r.tenant));
        break;
      case SegmentSource::kDocument: {
        const int64_t doc = seg.spec.popularity->Sample(seg.stream) - 1;
        out.content = MakeContentId(SegmentKind::kDocument, tenant_key, static_cast<uint64_t>(doc));
        out.tokens = SharedLength(seg, fmt::format("document-{}-{}", r.tenant, doc));
        break;
      }
      case SegmentSource::kUnique:
        out.content = MakeContentId(SegmentKind::kUnique, static_cast<uint64_t>(r.id), i);
        out.tokens = SampleTokens(*seg.spec.tokens, seg.stream, seg.slot_path);
        break;
      case SegmentSource::kHistory:
        FP_ASSERT(false);  // callers skip the history segment
    }
    r.prompt.push_back(out);
  }

  void FinishBody(ClassRuntime& c, Request& r) {
    r.priority = c.spec.priority;
    r.output_tokens = SampleTokens(c.spec.output_tokens, c.output, c.paths.output);
    if (c.spec.deadline) {
      bool capped = false;
      r.deadline = r.arrival + c.spec.deadline->Sample(c.deadline, &capped);
      if (capped) ++adjustments_.capped_draws[c.paths.deadline];
    }
    if (c.spec.cancel && c.cancel.NextDouble() < c.spec.cancel->probability) {
      bool capped = false;
      r.cancel_at = r.arrival + c.spec.cancel->after.Sample(c.cancel, &capped);
      if (capped) ++adjustments_.capped_draws[c.paths.cancel_after];
    }
  }

  const WorkloadSpec& spec_;
  std::vector<ClassRuntime> classes_;
  std::vector<double> cumulative_;
  double share_total_ = 0;
  RngStream class_stream_, tenant_stream_, adapter_stream_;
  WorkloadNames names_;
  GeneratorAdjustments adjustments_;
  int64_t next_session_ = 0;
};

// A queued request: a session's next turn (open loop), or a user's next request
// (closed loop). Ordered by (arrival, seq); seq is the queueing order.
struct Pending {
  SimTime arrival;
  int64_t seq = 0;
  int64_t user = -1;                   // closed loop only
  std::optional<SessionState> session; // continue this session, else a fresh request
};

struct PendingLater {
  bool operator()(const Pending& a, const Pending& b) const {
    return a.arrival != b.arrival ? a.arrival > b.arrival : a.seq > b.seq;
  }
};

using PendingQueue = std::priority_queue<Pending, std::vector<Pending>, PendingLater>;

Json LimitsJson(const SourceLimits& limits) {
  Json out = Json::object();
  if (limits.duration) out["duration"] = FormatDuration(*limits.duration);
  if (limits.requests) out["requests"] = *limits.requests;
  return out;
}

class GeneratorBase : public GeneratorSource {
 public:
  GeneratorBase(const WorkloadSpec& spec, uint64_t seed, SourceLimits limits)
      : spec_(spec), seed_(seed), limits_(limits), builder_(spec_, seed) {}
  const WorkloadNames& names() const override { return builder_.names(); }
  const GeneratorAdjustments& adjustments() const override { return builder_.adjustments(); }

 protected:
  bool BeforeEnd(SimTime t) const { return !limits_.duration || t < SimTime::Zero() + *limits_.duration; }
  bool CountLeft() const { return !limits_.requests || emitted_ < *limits_.requests; }
  Json DescribeCommon(std::string_view loop, Json arrival) const {
    return {{"source", "generator"}, {"loop", std::string(loop)},        {"arrival", std::move(arrival)},
            {"seed", seed_},         {"limits", LimitsJson(limits_)}, {"workload", spec_.description}};
  }

  WorkloadSpec spec_;  // owned copy: the builder refers to it
  uint64_t seed_;
  SourceLimits limits_;
  RequestBuilder builder_;
  int64_t emitted_ = 0;
  int64_t seq_ = 0;
};

// Open loop: fresh arrivals from the process, merged with queued session turns.
class OpenLoopGenerator final : public GeneratorBase {
 public:
  OpenLoopGenerator(const WorkloadSpec& spec, uint64_t seed, SourceLimits limits)
      : GeneratorBase(spec, seed, limits),
        process_(spec.open_loop->Clone()),
        arrivals_(seed, "workload.arrivals") {}

  Expected<std::optional<SimTime>> PeekArrival() override { return Peek(); }

  Expected<std::optional<Request>> Next() override {
    const std::optional<SimTime> at = Peek();
    if (!at) return std::optional<Request>();
    const RequestId id = emitted_++;
    std::optional<SessionState> session;
    Request r;
    if (!turns_.empty() && turns_.top().arrival == *at) {
      Pending p = turns_.top();
      turns_.pop();
      session = std::move(p.session);
      r = builder_.Turn(id, *at, *session);
      if (session->next_turn >= session->turns) session.reset();
    } else {
      fresh_.reset();
      r = builder_.Fresh(id, *at, &session);
    }
    if (session) QueueNextTurn(r, std::move(*session));
    return std::optional<Request>(std::move(r));
  }

  bool exhausted() const override {
    return !CountLeft() || (fresh_done_ && turns_.empty());
  }

  Json Describe() const override { return DescribeCommon("open", process_->Describe()); }

 private:
  std::optional<SimTime> Peek() {
    if (!CountLeft()) {
      CutRemaining();
      return std::nullopt;
    }
    if (!fresh_ && !fresh_done_) {
      const SimTime t = process_->Next(arrivals_);
      if (BeforeEnd(t)) {
        fresh_ = t;
      } else {
        fresh_done_ = true;
      }
    }
    std::optional<SimTime> best = fresh_;
    if (!turns_.empty() && (!best || turns_.top().arrival <= *best)) best = turns_.top().arrival;
    return best;
  }

  void QueueNextTurn(const Request& r, SessionState state) {
    RequestBuilder::AddAnswer(r, state);
    const SimTime next = r.arrival + builder_.SessionThink(r.class_id);
    if (!BeforeEnd(next)) {
      ++builder_.adjustments().sessions_cut;
      return;
    }
    turns_.push(Pending{next, seq_++, -1, std::move(state)});
  }

  // Sessions still waiting when the request limit ends the stream are cut.
  void CutRemaining() {
    builder_.adjustments().sessions_cut += static_cast<int64_t>(turns_.size());
    turns_ = PendingQueue();
  }

  std::unique_ptr<ArrivalProcess> process_;
  RngStream arrivals_;
  std::optional<SimTime> fresh_;
  bool fresh_done_ = false;
  PendingQueue turns_;
};

// Closed loop: `users` users, each with at most one request outstanding.
class ClosedLoopGenerator final : public GeneratorBase {
 public:
  ClosedLoopGenerator(const WorkloadSpec& spec, uint64_t seed, SourceLimits limits)
      : GeneratorBase(spec, seed, limits), users_stream_(seed, "workload.users") {
    for (int64_t u = 0; u < spec_.closed_loop->users; ++u) Schedule(SimTime::Zero(), u, std::nullopt);
  }

  Expected<std::optional<SimTime>> PeekArrival() override { return Peek(); }

  Expected<std::optional<Request>> Next() override {
    const std::optional<SimTime> at = Peek();
    if (!at) return std::optional<Request>();
    Pending p = queue_.top();
    queue_.pop();
    const RequestId id = emitted_++;
    std::optional<SessionState> session;
    Request r;
    if (p.session) {
      session = std::move(p.session);
      r = builder_.Turn(id, *at, *session);
      if (session->next_turn >= session->turns) session.reset();
    } else {
      r = builder_.Fresh(id, *at, &session);
    }
    if (session) RequestBuilder::AddAnswer(r, *session);
    outstanding_.emplace(id, Outstanding{p.user, r.class_id, std::move(session)});
    return std::optional<Request>(std::move(r));
  }

  void OnRequestFinished(RequestId id, SimTime finished_at) override {
    auto it = outstanding_.find(id);
    FP_ASSERT(it != outstanding_.end());
    Outstanding done = std::move(it->second);
    outstanding_.erase(it);
    if (done.session) {
      Schedule(finished_at + builder_.SessionThink(done.class_id), done.user, std::move(done.session));
    } else {
      Schedule(finished_at, done.user, std::nullopt);
    }
  }

  bool exhausted() const override {
    return !CountLeft() || (queue_.empty() && outstanding_.empty());
  }

  Json DescribeArrival() const {
    return {{"process", "closed-loop"},
            {"users", spec_.closed_loop->users},
            {"think_time", spec_.closed_loop->think_time.Describe()}};
  }
  Json Describe() const override { return DescribeCommon("closed", DescribeArrival()); }

 private:
  struct Outstanding {
    int64_t user;
    ClassId class_id;
    std::optional<SessionState> session;  // with the answer appended, when turns remain
  };

  // A fresh request waits the users' think time; a session turn was given its arrival.
  void Schedule(SimTime from, int64_t user, std::optional<SessionState> session) {
    SimTime at = from;
    if (!session) {
      bool capped = false;
      at = from + spec_.closed_loop->think_time.Sample(users_stream_, &capped);
      if (capped) ++builder_.adjustments().capped_draws["workload.arrival.think_time"];
    }
    if (!BeforeEnd(at)) {
      if (session) ++builder_.adjustments().sessions_cut;
      return;  // the user retires
    }
    queue_.push(Pending{at, seq_++, user, std::move(session)});
  }

  std::optional<SimTime> Peek() const {
    if (!CountLeft() || queue_.empty()) return std::nullopt;
    return queue_.top().arrival;
  }

  RngStream users_stream_;
  PendingQueue queue_;
  std::map<RequestId, Outstanding> outstanding_;
};

}  // namespace

Expected<std::unique_ptr<GeneratorSource>> MakeGenerator(const WorkloadSpec& spec, uint64_t seed,
                                                         const SourceLimits& overrides) {
  FP_ASSERT(spec.mode != ArrivalMode::kTrace);
  const bool overridden = overrides.duration || overrides.requests;
  SourceLimits limits = overridden ? overrides : SourceLimits{spec.duration, spec.requests};
  if (!limits.duration && !limits.requests) {
    return InvalidInput(
        "workload: a synthetic workload needs an end: set `workload.duration` or `workload.requests` "
        "(or pass --duration / --requests)");
  }
  if (spec.classes.empty()) return InvalidInput("workload.classes: expected at least one class");
  if (spec.mode == ArrivalMode::kClosedLoop) {
    FP_ASSERT(spec.closed_loop.has_value());
    return std::unique_ptr<GeneratorSource>(std::make_unique<ClosedLoopGenerator>(spec, seed, limits));
  }
  FP_ASSERT(spec.open_loop != nullptr);
  return std::unique_ptr<GeneratorSource>(std::make_unique<OpenLoopGenerator>(spec, seed, limits));
}

}  // namespace fleetplan
