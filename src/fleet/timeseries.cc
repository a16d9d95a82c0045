#include "fleetplan/fleet/timeseries.h"

#include <algorithm>

#include <fmt/format.h>

#include "fleetplan/fleet/simulation.h"

namespace fleetplan {
namespace {

// Column names as they reach report.json (docs/records.md "Time series"), in the
// components' column order.
constexpr std::string_view kReplicaColumnNames[] = {"arrivals", "completions", "prefill_tokens", "decode_tokens",
                                                    "preemptions", "running", "waiting", "kv_used_blocks",
                                                    "kv_cached_blocks"};
constexpr std::string_view kClassColumnNames[] = {"arrivals", "completions", "failures", "good", "in_flight"};

SeriesTable MakeTable(std::span<const std::string_view> names, int counts, int64_t windows) {
  SeriesTable t;
  for (size_t i = 0; i < names.size(); ++i) {
    t.columns.push_back(Series{std::string(names[i]),
                               static_cast<int>(i) < counts ? SeriesKind::kCount : SeriesKind::kLevel,
                               std::vector<int64_t>(static_cast<size_t>(windows), 0)});
  }
  return t;
}

// Merges pairs of values: counts add, levels keep the later one.
void MergeSeries(Series& s) {
  const size_t half = s.values.size() / 2;
  for (size_t k = 0; k < half; ++k) {
    const int64_t a = s.values[2 * k];
    const int64_t b = s.values[2 * k + 1];
    s.values[k] = s.kind == SeriesKind::kCount ? a + b : b;
  }
  s.values.resize(half);
}

Json TableJson(const SeriesTable& t) {
  Json j = Json::object();
  for (const Series& s : t.columns) j[s.name] = s.values;
  return j;
}

}  // namespace

const Series* SeriesTable::Find(std::string_view name) const {
  for (const Series& s : columns) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Duration TimeSeriesData::window_length(int64_t k) const {
  const SimTime start = window_start(k);
  return k + 1 == windows ? end - start : interval;
}

SeriesTable TimeSeriesData::Fleet() const {
  SeriesTable fleet;
  // Accumulates every column of `from` named in `names` (or all when empty) into fleet.
  const auto add = [&](const SeriesTable& from, std::span<const std::string_view> skip) {
    for (const Series& s : from.columns) {
      if (std::find(skip.begin(), skip.end(), s.name) != skip.end()) continue;
      auto it = std::find_if(fleet.columns.begin(), fleet.columns.end(),
                             [&](const Series& f) { return f.name == s.name; });
      if (it == fleet.columns.end()) {
        fleet.columns.push_back(Series{s.name, s.kind, std::vector<int64_t>(static_cast<size_t>(windows), 0)});
        it = fleet.columns.end() - 1;
      }
      for (size_t k = 0; k < s.values.size(); ++k) it->values[k] += s.values[k];
    }
  };
  // Flow from the classes (every request once), work and levels from the replicas
  // (whose arrivals and completions count a disaggregated request on two replicas).
  for (const SeriesTable& c : classes) add(c, {});
  constexpr std::string_view kFlow[] = {"arrivals", "completions"};
  for (const SeriesTable& r : replicas) add(r, kFlow);
  return fleet;
}

std::vector<double> TimeSeriesData::GoodputRps(const SeriesTable& t) const {
  std::vector<double> out(static_cast<size_t>(windows), 0.0);
  const Series* good = t.Find("good");
  if (good == nullptr) return out;
  for (int64_t k = 0; k < windows; ++k) {
    const double s = window_length(k).seconds();
    out[static_cast<size_t>(k)] = s > 0 ? RoundForReport(static_cast<double>(good->values[static_cast<size_t>(k)]) / s) : 0.0;
  }
  return out;
}

Json TimeSeriesData::ToJson() const {
  Json j;
  j["interval_s"] = interval.seconds();
  j["coarsened"] = coarsened;
  j["max_windows"] = kMaxTimeSeriesWindows;
  j["windows"] = windows;
  j["end_s"] = end.seconds();
  std::vector<double> starts;
  for (int64_t k = 0; k < windows; ++k) starts.push_back(window_start(k).seconds());
  j["window_start_s"] = starts;
  Json cls = Json::object();
  for (size_t c = 0; c < classes.size(); ++c) {
    Json t = TableJson(classes[c]);
    t["goodput_rps"] = GoodputRps(classes[c]);
    cls[class_names[c]] = std::move(t);
  }
  j["classes"] = std::move(cls);
  const SeriesTable fleet = Fleet();
  Json f = TableJson(fleet);
  f["goodput_rps"] = GoodputRps(fleet);
  j["fleet"] = std::move(f);
  Json reps = Json::array();
  for (size_t r = 0; r < replicas.size(); ++r) {
    Json t = TableJson(replicas[r]);
    t["replica"] = r;
    if (pooled) t["role"] = std::string(PoolRoleName(roles[r]));
    reps.push_back(std::move(t));
  }
  j["replicas"] = std::move(reps);
  return j;
}

TimeSeriesRecorder::TimeSeriesRecorder(Simulation& sim) : sim_(sim), classes_(sim.setup().classes) {
  state_.interval = sim.setup().components.Find<TimeSeriesConfig>(kTimeSeriesRow)->interval;
  FP_ASSERT(state_.interval > Duration());  // Bind sets an entry only for a window
  for (size_t c = 0; c < classes_.names.size(); ++c) EnsureClass(static_cast<ClassId>(c));
}


void TimeSeriesRecorder::EnsureClass(ClassId id) {
  FP_ASSERT(id >= 0);
  while (state_.classes.size() <= static_cast<size_t>(id)) {
    const size_t c = state_.classes.size();
    if (classes_.names.size() <= c) classes_.names.push_back(std::to_string(c));
    if (classes_.objectives.size() <= c) classes_.objectives.emplace_back();
    state_.classes.push_back(MakeTable(kClassColumnNames, kClassInFlight, state_.windows));
    state_.open_classes.emplace_back(kClassColumns, 0);
  }
}

Status TimeSeriesRecorder::OnReplicaAdded(int32_t id) {
  FP_ASSERT(static_cast<size_t>(id) == state_.replicas.size());
  if (id == 0) {
    // Every component exists by now (they are built before the first replica), and with
    // it every stage declared in the request ledger.
    level_names_ = sim_.ledger().LevelNames();
  }
  std::vector<std::string_view> names(std::begin(kReplicaColumnNames), std::end(kReplicaColumnNames));
  names.insert(names.end(), level_names_.begin(), level_names_.end());
  // A replica that joins mid-run has zeros for the windows before it.
  state_.replicas.push_back(MakeTable(names, kReplicaCounts, state_.windows));
  state_.last_counts.emplace_back(kReplicaCounts, 0);
  return Status::Ok();
}

void TimeSeriesRecorder::Schedule() {
  event_at_ = state_.next_boundary();
  sim_.queue().Push(*event_at_, this, 0, -1, -1, /*passive=*/true);
}

void TimeSeriesRecorder::OnStart(SimTime now) {
  CatchUp(state_, now);
  Schedule();
}

void TimeSeriesRecorder::OnArrival(const Request& r, SimTime now) {
  if (event_at_ && now > *event_at_) {
    // The boundary event was dropped while nothing could happen (push API, idle fleet):
    // the state is unchanged since, so the windows close now with it.
    CatchUp(state_, now);
    Schedule();
  }
  EnsureClass(r.class_id);
  std::vector<int64_t>& open = state_.open_classes[static_cast<size_t>(r.class_id)];
  ++open[kClassArrivals];
  ++open[kClassInFlight];
}

void TimeSeriesRecorder::OnRequestDone(const RequestOutcome& o) {
  EnsureClass(o.class_id);
  const auto c = static_cast<size_t>(o.class_id);
  std::vector<int64_t>& open = state_.open_classes[c];
  --open[kClassInFlight];
  if (o.status != RequestStatus::kOk) {
    ++open[kClassFailures];
    return;
  }
  ++open[kClassCompletions];
  if (Evaluate(ToRequestRecord(o), classes_.objectives[c]).qualified) ++open[kClassGood];
}

void TimeSeriesRecorder::OnEvent(const Event& e) {
  (void)e;
  CatchUp(state_, sim_.now());
  Schedule();
}

void TimeSeriesRecorder::CatchUp(State& s, SimTime now) const {
  while (s.next_boundary() <= now) {
    CloseWindow(s);
    for (std::vector<int64_t>& open : s.open_classes) std::fill(open.begin(), open.begin() + kClassInFlight, 0);
    ++s.windows;
    if (s.windows == kMaxTimeSeriesWindows) {
      for (SeriesTable& t : s.replicas) {
        for (Series& col : t.columns) MergeSeries(col);
      }
      for (SeriesTable& t : s.classes) {
        for (Series& col : t.columns) MergeSeries(col);
      }
      s.windows /= 2;
      s.interval = s.interval * 2;
      s.coarsened *= 2;
    }
  }
}

void TimeSeriesRecorder::SampleReplica(int32_t id, SeriesTable& table, std::vector<int64_t>& last) const {
  const Engine& e = sim_.replica(id);
  const EngineStats& st = e.stats();
  const int64_t cumulative[kReplicaCounts] = {sim_.figures(id).routed, st.completed, st.prefill_tokens,
                                              st.decode_tokens, st.preemptions};
  for (size_t k = 0; k < static_cast<size_t>(kReplicaCounts); ++k) {
    table.columns[k].values.push_back(cumulative[k] - last[k]);
    last[k] = cumulative[k];
  }
  table.columns[kRunning].values.push_back(e.running_count());
  table.columns[kWaiting].values.push_back(e.waiting_count());
  table.columns[kKvUsed].values.push_back(e.pool().used_count());
  table.columns[kKvCached].values.push_back(e.pool().cached_count());
  if (level_names_.empty()) return;
  std::vector<int64_t> levels(level_names_.size(), 0);
  sim_.ledger().SampleLevels(id, levels);
  for (size_t k = 0; k < levels.size(); ++k) table.columns[kReplicaColumns + k].values.push_back(levels[k]);
}

void TimeSeriesRecorder::CloseWindow(State& s) const {
  for (size_t r = 0; r < s.replicas.size(); ++r) SampleReplica(static_cast<int32_t>(r), s.replicas[r], s.last_counts[r]);
  for (size_t c = 0; c < s.classes.size(); ++c) {
    for (size_t k = 0; k < static_cast<size_t>(kClassColumns); ++k) {
      s.classes[c].columns[k].values.push_back(s.open_classes[c][k]);
    }
  }
}

TimeSeriesData TimeSeriesRecorder::Snapshot(SimTime end) const {
  State s = state_;
  CatchUp(s, end);
  // The open window, up to `end` (also the only window of a run that ends at once).
  const SimTime open_start = SimTime() + s.interval * s.windows;
  if (end > open_start || s.windows == 0) {
    CloseWindow(s);
    ++s.windows;
  }
  TimeSeriesData d;
  d.interval = s.interval;
  d.coarsened = s.coarsened;
  d.end = end;
  d.windows = s.windows;
  d.class_names = classes_.names;
  d.classes = std::move(s.classes);
  d.replicas = std::move(s.replicas);
  for (int32_t i = 0; i < sim_.replica_count(); ++i) {
    d.roles.push_back(sim_.role(i));
    d.pooled = d.pooled || sim_.role(i) == PoolRole::kPrefill;
  }
  return d;
}

Status TimeSeriesRecorder::CheckInvariants() const {
  for (size_t r = 0; r < state_.replicas.size(); ++r) {
    for (const Series& s : state_.replicas[r].columns) {
      if (s.values.size() != static_cast<size_t>(state_.windows)) {
        return InternalError(fmt::format("time series: replica {}'s {} has {} windows, not {}", r, s.name,
                                         s.values.size(), state_.windows));
      }
    }
  }
  int64_t in_flight = 0;
  for (size_t c = 0; c < state_.classes.size(); ++c) {
    for (const Series& s : state_.classes[c].columns) {
      if (s.values.size() != static_cast<size_t>(state_.windows)) {
        return InternalError(fmt::format("time series: class {}'s {} has {} windows, not {}", classes_.names[c],
                                         s.name, s.values.size(), state_.windows));
      }
    }
    if (state_.open_classes[c][kClassInFlight] < 0) {
      return InternalError(fmt::format("time series: class {} has {} requests in flight", classes_.names[c],
                                       state_.open_classes[c][kClassInFlight]));
    }
    in_flight += state_.open_classes[c][kClassInFlight];
  }
  // Every request that arrived and has not ended is routed, or held before routing.
  int64_t routed = 0;
  sim_.ForEachRoute([&](RequestId, const RouteInfo&) { ++routed; });
  if (in_flight < routed) {
    return InternalError(fmt::format("time series: {} requests in flight, but {} routed", in_flight, routed));
  }
  return Status::Ok();
}

void TimeSeriesRecorder::AddReport(Duration span, Json& report) const {
  (void)span;
  const TimeSeriesData d = Snapshot(sim_.end_time());
  report["timeseries"] = d.ToJson();
  if (d.coarsened > 1) {
    report["notes"].push_back(fmt::format("timeseries: interval {} s ({} x output.timeseries_interval) so that the "
                                          "run fits in {} windows",
                                          d.interval.seconds(), d.coarsened, kMaxTimeSeriesWindows));
  }
}

}  // namespace fleetplan
