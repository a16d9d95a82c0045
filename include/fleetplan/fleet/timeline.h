// TimelineWriter: a simulation as a Chrome trace event file (opens in Perfetto and
// chrome://tracing).
//
// Layout: one process track per replica ("replica N"), with
//   - one complete span ("X") per engine step on thread 1, batch composition in args;
//   - counters ("C") per step: waiting and running requests, KV blocks in use;
//   - request lifecycles as async spans ("b"/"e") in category "request": "queued+prefill"
//     from arrival to first token, then "decode" to the end, args with the outcome;
//   - with pools, the replica's role as a process label, and KV transfers on thread 2
//     ("kv transfers"): a span on the sending and on the receiving replica, joined by a
//     flow arrow ("s"/"f", category "kv"), args with bytes, attempt and outcome.
// The run's time series (timeseries.h), added at the end: a counter event "ts" per window
// (at its start) on each replica's process with every series as an arg (Perfetto draws
// one track per arg), and a "fleet" process (the pid after the last replica) with the
// fleet's series and goodput, and each class's goodput ("ts <class>").
// With autoscaling, each replica's lifecycle (pending, loading, ready, draining) as
// complete spans ("X", category "state") on thread 3 ("state") of its process.
// A "router" process (pid 0) holds one instant event per routing decision: the request,
// the chosen replica, the stage it was chosen for, the matched prefix tokens and the
// queue age at assignment.
// Timestamps are microseconds with nanosecond precision (three decimals), written from
// integer nanoseconds, so the file is byte-identical across runs.
//
// Size cap: after `max_events` events the writer samples. Request lifecycles are kept
// when SplitMix64(id) is a multiple of the sampling period, and steps when their index
// per replica is; the period doubles each time the budget is spent again. The final
// periods are written in the file's metadata, so a reader knows what was dropped.
// Thread model: single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/output_file.h"
#include "fleetplan/core/status.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/fleet/timeseries.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

class TimelineWriter {
 public:
  static constexpr int64_t kDefaultMaxEvents = 2'000'000;

  // Writes `path` (core/output_file.h: replaced atomically at Close).
  static Expected<std::unique_ptr<TimelineWriter>> Open(const std::string& path, int32_t replicas,
                                                        const WorkloadNames* names,
                                                        int64_t max_events = kDefaultMaxEvents);
  // Writes into `file`, which the caller owns and commits (an OutputFolder's file).
  // REQUIRES: `file` outlives the writer.
  static Expected<std::unique_ptr<TimelineWriter>> Open(OutputFile* file, int32_t replicas,
                                                        const WorkloadNames* names,
                                                        int64_t max_events = kDefaultMaxEvents);
  void OnStep(const StepRecord& step);
  void OnRequestDone(const RequestOutcome& outcome);
  // Pools: labels replica `replica`'s process with its role (once, before any event).
  void LabelReplica(int32_t replica, std::string_view role);
  void OnRoute(const RouteEvent& route);
  void OnTransfer(const TransferEvent& transfer);
  // The time series as counter tracks (before Close).
  void AddTimeSeries(const TimeSeriesData& series);
  // Replica lifecycle spans, in (replica, start) order (before Close).
  struct StateSpan {
    int32_t replica = 0;
    std::string_view state;
    SimTime start;
    SimTime end;
  };
  void AddReplicaStates(const std::vector<StateSpan>& spans);
  // Writes the metadata (and commits a file Open(path) opened); the first write error
  // if any. Idempotent.
  Status Close();

  int64_t events_written() const { return events_; }
  int64_t sampling_period() const { return period_; }

 private:
  TimelineWriter(OutputFile* file, const WorkloadNames* names, int64_t max_events);
  void Start(int32_t replicas);
  void Write(std::string_view text);
  void Emit(const std::string& event);
  bool KeepStep(int32_t replica);
  // Names the process (and steps thread) of every replica up to `replica`.
  void EnsureReplica(int32_t replica);
  bool KeepRequest(RequestId id) const;

  std::unique_ptr<OutputFile> owned_;  // Open(path)'s file
  OutputFile* out_;
  Status status_;  // the first write error
  const WorkloadNames* names_;
  int64_t max_events_;
  int64_t events_ = 0;
  int64_t next_budget_;
  int64_t period_ = 1;
  std::vector<int64_t> step_index_;
  bool first_ = true;
  bool closed_ = false;
};

}  // namespace fleetplan
