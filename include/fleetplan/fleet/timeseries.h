// TimeSeriesRecorder: the run over time, at a declared interval of simulated time (report.json
// `timeseries`; docs/records.md "Time series"), as a fleet component.
//
// Window k covers [k * interval, (k + 1) * interval) of simulated time. Each series has
// one value per window and is one of two kinds:
//   count  what happened inside the window (arrivals, completions, tokens, preemptions);
//   level  the state at the window's end (running, waiting, KV blocks, queues).
// Per replica the component reads what the kernel and the engines already count
// (cumulative counters, differenced at each boundary; levels read there) plus a level per
// stage that a component declared as one in the request ledger (request_ledger.h: the
// pools' transfer and admission queues); per
// class it counts arrivals and outcomes through the OnArrival / OnRequestDone hooks,
// judging each outcome by its class's objectives (metrics/slo.h), so `good` is the
// report's "qualified". A passive event at every boundary closes the window; it never
// keeps the simulation alive, and a boundary passed while the fleet was idle (push API)
// is closed at the next arrival, with the unchanged state.
//
// Memory: a fixed number of integers per window (9 per replica, 5 per class, one per
// component level), whatever the load. The windows are bounded by kMaxTimeSeriesWindows:
// when a run reaches it, pairs of windows merge (counts add, levels keep the later
// value) and the interval doubles, so a long run coarsens instead of growing.
// Thread model: single-threaded, owned by one Simulation; deterministic (the windows
// follow the (time, seq) order of events; an event at a boundary's exact time belongs to
// the window its handling falls in).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/component.h"
#include "fleetplan/fleet/pools.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/metrics/slo.h"

namespace fleetplan {

// Windows at most; an even number (pairs merge). 4096 windows of 1 s is over an hour.
inline constexpr int64_t kMaxTimeSeriesWindows = 4096;

struct TimeSeriesConfig {
  Duration interval;  // the declared window (> 0); a run without one has no entry
};

enum class SeriesKind : int { kCount = 0, kLevel = 1 };

// One named series: a value per window.
struct Series {
  std::string name;
  SeriesKind kind = SeriesKind::kCount;
  std::vector<int64_t> values;
};

// Series of one replica, one class or the fleet, in a fixed order.
struct SeriesTable {
  std::vector<Series> columns;
  // The column named `name`, or null.
  const Series* Find(std::string_view name) const;
};

// The typed result (what report.json `timeseries`, the timeline's counter tracks and
// the HTML report render).
struct TimeSeriesData {
  Duration interval;         // as used: the declared one times `coarsened`
  int64_t coarsened = 1;     // a power of two
  SimTime end;               // the run's end; the last window ends here
  int64_t windows = 0;
  std::vector<std::string> class_names;  // by ClassId
  std::vector<SeriesTable> classes;      // by ClassId
  std::vector<SeriesTable> replicas;     // by replica id
  std::vector<PoolRole> roles;           // by replica id
  bool pooled = false;                   // a prefill pool: roles reach the output

  SimTime window_start(int64_t k) const { return SimTime() + interval * k; }
  Duration window_length(int64_t k) const;
  // Sums over classes (flow) and replicas (work and levels); see docs/records.md.
  SeriesTable Fleet() const;
  // good / window length, per window, in requests per second.
  std::vector<double> GoodputRps(const SeriesTable& t) const;
  // report.json `timeseries`.
  Json ToJson() const;
};

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kTimeSeriesRow = "timeseries";

class TimeSeriesRecorder final : public FleetComponent {
 public:
  explicit TimeSeriesRecorder(Simulation& sim);
  std::string_view name() const override { return "timeseries"; }

  Status OnReplicaAdded(int32_t id) override;
  void OnStart(SimTime now) override;
  void OnArrival(const Request& r, SimTime now) override;
  void OnRequestDone(const RequestOutcome& o) override;
  void OnEvent(const Event& e) override;
  Status CheckInvariants() const override;
  void AddReport(Duration span, Json& report) const override;

  // The series as of `end` (REQUIRES: end >= the last boundary closed): the closed
  // windows plus the open one, which ends at `end`.
  TimeSeriesData Snapshot(SimTime end) const;

 private:
  // Per-replica columns: counts differenced from cumulative figures, then levels.
  enum ReplicaColumn : int {
    kArrivals = 0, kCompletions, kPrefillTokens, kDecodeTokens, kPreemptions,  // counts
    kRunning, kWaiting, kKvUsed, kKvCached,                                   // levels
    kReplicaColumns,
  };
  static constexpr int kReplicaCounts = kRunning;
  enum ClassColumn : int { kClassArrivals = 0, kClassCompletions, kClassFailures, kClassGood, kClassInFlight, kClassColumns };

  // What the windows hold so far; Snapshot closes a copy.
  struct State {
    Duration interval;
    int64_t coarsened = 1;
    int64_t windows = 0;  // closed windows
    std::vector<SeriesTable> replicas;
    std::vector<std::vector<int64_t>> last_counts;  // per replica: cumulative counts at the last boundary
    std::vector<SeriesTable> classes;
    std::vector<std::vector<int64_t>> open_classes;  // per class: counts of the open window; in flight
    SimTime next_boundary() const { return SimTime() + interval * (windows + 1); }
  };

  void EnsureClass(ClassId id);
  // Closes every window of `s` whose end is at or before `now`.
  void CatchUp(State& s, SimTime now) const;
  // Appends the open window to `s`'s tables (the caller counts it).
  void CloseWindow(State& s) const;
  void SampleReplica(int32_t id, SeriesTable& table, std::vector<int64_t>& last) const;
  void Schedule();

  Simulation& sim_;
  // The run's classes (FleetSetup::classes), grown by number for ids beyond them.
  FleetClasses classes_;
  State state_;
  // The request ledger's level stages (a replica's requests held in each), in declaration order.
  std::vector<std::string_view> level_names_;
  std::optional<SimTime> event_at_;  // the boundary event in the queue (it may have been dropped)
};

}  // namespace fleetplan
