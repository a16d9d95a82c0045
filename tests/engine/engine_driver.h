// A minimal event loop over one Engine for unit tests: arrivals, cancellations and step
// completions in (time, seq) order. The fleet simulation is the real loop; this driver
// keeps engine tests independent of routing and reporting.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/engine/engine.h"

namespace fleetplan::testing {

// Affine test cost: base + per_prefill_token * prefill tokens + per_decode * decodes.
class TestCostModel final : public StepCostModel {
 public:
  TestCostModel(Duration base, Duration per_prefill_token, Duration per_decode)
      : base_(base), per_token_(per_prefill_token), per_decode_(per_decode) {}
  StepCost Cost(std::span<const StepChunk> chunks) const override {
    const StepShape s = Summarize(chunks);
    return {base_ + per_token_ * s.prefill_tokens + per_decode_ * s.decode_seqs, Duration(), false};
  }
  std::string kind() const override { return "test"; }
  Json Describe() const override { return Json::object(); }

 private:
  Duration base_, per_token_, per_decode_;
};

class RecordingObserver final : public EngineObserver {
 public:
  void OnRequestDone(const RequestOutcome& o) override { outcomes[o.id] = o; }
  void OnStep(const StepRecord& s) override { steps.push_back(s); }
  std::map<RequestId, RequestOutcome> outcomes;
  std::vector<StepRecord> steps;
};

struct DriverOptions {
  bool check_invariants_every_step = true;
  SimTime stop_at = SimTime::Max();
};

// Runs `requests` (any order; sorted by arrival, then id) through `engine`. Cancel times
// come from Request::cancel_at. Checks the engine's invariants after every event.
inline void RunEngine(Engine& engine, std::vector<Request> requests, DriverOptions opt = {}) {
  std::stable_sort(requests.begin(), requests.end(),
                   [](const Request& a, const Request& b) { return std::tie(a.arrival, a.id) < std::tie(b.arrival, b.id); });
  // kind: 0 = step done, 1 = arrival, 2 = cancel. Step completions at the same time go
  // first, so a request arriving exactly when a step ends joins the next step.
  std::multimap<std::tuple<SimTime, int, int64_t>, size_t> events;
  for (size_t i = 0; i < requests.size(); ++i) {
    events.emplace(std::make_tuple(requests[i].arrival, 1, static_cast<int64_t>(i)), i);
    if (requests[i].cancel_at) events.emplace(std::make_tuple(*requests[i].cancel_at, 2, static_cast<int64_t>(i)), i);
  }
  std::optional<SimTime> step_end;
  auto maybe_start = [&](SimTime now) {
    if (!engine.step_in_flight() && engine.HasWork()) {
      step_end = engine.StartStep(now);
      if (step_end) events.emplace(std::make_tuple(*step_end, 0, int64_t{0}), 0);
    }
  };
  while (!events.empty()) {
    auto it = events.begin();
    const auto [now, kind, key] = it->first;
    const size_t idx = it->second;
    events.erase(it);
    if (now > opt.stop_at) break;
    if (kind == 0) {
      engine.FinishStep(now);
    } else if (kind == 1) {
      engine.Submit(requests[idx], now);
    } else {
      engine.Cancel(requests[idx].id, now);
    }
    maybe_start(now);
    if (opt.check_invariants_every_step) {
      const Status st = engine.CheckInvariants();
      ASSERT_TRUE(st.ok()) << st.message();
    }
  }
}

// Engine 0 with `c`, failing the test when the config is refused.
inline std::unique_ptr<Engine> MakeEngine(const EngineConfig& c, const StepCostModel& cost, EngineObserver* obs) {
  auto e = Engine::Create(0, c, &cost, obs);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

// Runs steps back to back from `now` until the engine is idle, checking its invariants
// after each; returns the end time.
inline SimTime DrainEngine(Engine& e, SimTime now) {
  while (e.HasWork()) {
    const auto end = e.StartStep(now);
    if (!end) break;
    now = *end;
    e.FinishStep(now);
    const Status st = e.CheckInvariants();
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return now;
}

// No live request, no block reference, every block free (cached ones included), no
// outstanding work, invariants hold.
inline void ExpectPoolAtBaseline(const Engine& e) {
  EXPECT_EQ(e.pool().total_refs(), 0);
  EXPECT_EQ(e.pool().free_count(), e.pool().total());
  EXPECT_EQ(e.live_requests(), 0);
  EXPECT_EQ(e.importing_count(), 0);
  EXPECT_EQ(e.outstanding_tokens(), 0);
  const Status st = e.CheckInvariants();
  EXPECT_TRUE(st.ok()) << st.message();
}

inline Request MakeRequest(RequestId id, SimTime arrival, int64_t prompt, int64_t output, int32_t priority = 0) {
  Request r;
  r.id = id;
  r.arrival = arrival;
  r.prompt = {PromptSegment{static_cast<ContentId>(1000 + id), prompt}};
  r.output_tokens = output;
  r.priority = priority;
  return r;
}

}  // namespace fleetplan::testing
