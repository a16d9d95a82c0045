#include "fleetplan/workload/bench_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "fleetplan/workload/content.h"

namespace fleetplan {
namespace {

class BenchClientSource final : public RequestSource {
 public:
  BenchClientSource(BenchClientSpec spec, uint64_t seed) : spec_(std::move(spec)), rng_(seed, "workload.arrivals") {
    names_.classes = {"default"};
    if (spec_.warm_up) {
      warm_total_ = spec_.requests.size();
    } else {
      Start(SimTime());
    }
  }

  Expected<std::optional<SimTime>> PeekArrival() override {
    if (warm_sent_ < warm_total_) return std::optional<SimTime>(SimTime());
    return SendTime();
  }

  Expected<std::optional<Request>> Next() override {
    if (warm_sent_ < warm_total_) {  // the warm-up round: every prompt once, at 0, one token
      Request r = Make(warm_sent_, warm_sent_, SimTime());
      r.output_tokens = 1;
      ++warm_sent_;
      return std::optional<Request>(std::move(r));
    }
    const std::optional<SimTime> at = SendTime();
    if (!at) return std::optional<Request>();
    Request r = Make(warm_total_ + next_, next_, *at);
    if (spec_.max_concurrency) free_slots_.pop_front();
    ++next_;
    // The next request is due one gap after this one was due (not after it was sent: the
    // client's schedule does not wait for the semaphore).
    if (process_ && next_ < spec_.requests.size()) due_ = origin_ + (process_->Next(rng_) - SimTime());
    return std::optional<Request>(std::move(r));
  }

  void OnRequestFinished(RequestId id, SimTime finished_at) override {
    if (static_cast<uint64_t>(id) < warm_total_) {
      // The list proper starts when the warm-up round has ended.
      if (++warm_done_ == warm_total_) Start(finished_at);
      return;
    }
    if (spec_.max_concurrency) free_slots_.push_back(finished_at);
  }

  bool exhausted() const override { return next_ == spec_.requests.size(); }
  const WorkloadNames& names() const override { return names_; }

  Json Describe() const override {
    Json j = {{"source", "bench-client"},
              {"loop", spec_.max_concurrency ? "closed" : "open"},
              {"requests", static_cast<int64_t>(spec_.requests.size())}};
    j["arrival"] = spec_.arrivals ? spec_.arrivals->Describe() : Json{{"process", "all-at-once"}};
    if (spec_.max_concurrency) j["max_concurrency"] = *spec_.max_concurrency;
    if (spec_.warm_up) j["warm_up"] = true;
    return j;
  }

 private:
  // Request `id` with the prompt and answer of list entry `index` (its content is the
  // entry's, whether sent in the warm-up round or in the list proper).
  Request Make(uint64_t id, uint64_t index, SimTime at) const {
    const BenchClientRequest& q = spec_.requests[index];
    Request r;
    r.id = static_cast<RequestId>(id);
    r.arrival = at;
    r.prompt = {PromptSegment{MakeContentId(SegmentKind::kUnique, index, 0), q.prompt_tokens}};
    r.output_tokens = q.output_tokens;
    return r;
  }

  // The list proper begins at `at`: request 0 due then, every slot free then.
  void Start(SimTime at) {
    started_ = true;
    origin_ = at;
    due_ = at;
    if (spec_.arrivals) process_ = spec_.arrivals->Clone();
    if (spec_.max_concurrency) free_slots_.assign(static_cast<size_t>(*spec_.max_concurrency), at);
  }

  // When the next request is sent: when it is due and a slot is free (nullopt: not begun,
  // none left, or every slot in use).
  std::optional<SimTime> SendTime() const {
    if (!started_ || next_ == spec_.requests.size()) return std::nullopt;
    if (!spec_.max_concurrency) return due_;
    if (free_slots_.empty()) return std::nullopt;
    return std::max(due_, free_slots_.front());
  }

  BenchClientSpec spec_;
  RngStream rng_;
  std::unique_ptr<ArrivalProcess> process_;
  uint64_t next_ = 0;        // entries of the list proper sent
  uint64_t warm_total_ = 0;  // warm-up requests (0 without warm_up)
  uint64_t warm_sent_ = 0;
  uint64_t warm_done_ = 0;
  bool started_ = false;  // the list proper has begun
  SimTime origin_;        // when it began
  SimTime due_;           // the next request's due time; entry 0 is due at origin_
  // The times slots were freed, oldest first (a cap of C starts with C free at origin_).
  std::deque<SimTime> free_slots_;
  WorkloadNames names_;
};

}  // namespace

Expected<std::unique_ptr<RequestSource>> MakeBenchClientSource(const BenchClientSpec& spec, uint64_t seed) {
  if (spec.requests.empty()) return InvalidInput("a benchmark client needs at least one request");
  for (size_t i = 0; i < spec.requests.size(); ++i) {
    const BenchClientRequest& q = spec.requests[i];
    if (q.prompt_tokens < 1 || q.output_tokens < 1) {
      return InvalidInput(fmt::format("request {}: expected prompt and output tokens >= 1, got {} and {}", i,
                                      q.prompt_tokens, q.output_tokens));
    }
  }
  if (spec.max_concurrency && *spec.max_concurrency < 1) {
    return InvalidInput(fmt::format("max_concurrency: expected an integer >= 1, got {}", *spec.max_concurrency));
  }
  return std::unique_ptr<RequestSource>(std::make_unique<BenchClientSource>(spec, seed));
}

Expected<std::shared_ptr<const ArrivalProcess>> VllmClientArrivals(double rate, double burstiness) {
  if (!(rate > 0) || !std::isfinite(rate))
    return InvalidInput(fmt::format("expected a request rate > 0, got {}", rate));
  if (!(burstiness > 0) || !std::isfinite(burstiness)) {
    return InvalidInput(fmt::format("expected a burstiness > 0, got {}", burstiness));
  }
  if (burstiness == 1.0) {
    FP_ASSIGN_OR_RETURN(std::unique_ptr<ArrivalProcess> p, MakePoissonArrivals(Rate{rate}));
    return std::shared_ptr<const ArrivalProcess>(std::move(p));
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<ArrivalProcess> p, MakeGammaArrivals(Rate{rate}, 1.0 / std::sqrt(burstiness)));
  return std::shared_ptr<const ArrivalProcess>(std::move(p));
}

}  // namespace fleetplan
