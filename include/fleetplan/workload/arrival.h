// Arrival processes: when the next request of an open-loop workload arrives.
//
// An ArrivalProcess is a small stateful strategy (a renewal process or an on/off
// modulation of one) that returns successive arrival times. Every process starts at
// time 0; the first arrival is one gap after it. Gaps are drawn in double seconds and
// rounded to the nearest nanosecond, except `constant`, whose k-th arrival is computed
// from k (round(k / rate) ns) so that no rounding error accumulates.
//
//   poisson    {process: poisson, rate: 8/s}                 exponential gaps, mean 1/rate
//   gamma      {process: gamma, rate: 8/s, cv: 3}            gamma gaps, mean 1/rate, CV cv
//                                                            (cv > 1 bursty, cv = 1 Poisson)
//   constant   {process: constant, rate: 8/s}                one arrival every 1/rate
//   poisson with a schedule
//              {process: poisson, rate: 8/s, schedule: [{at: 2m, rate: 30/s}, {at: 4m, rate: 8/s}]}
//              Poisson whose rate steps to each entry's rate at its time (a burst); a
//              rate of 0 pauses. The arrivals of the plain process are not those of a
//              schedule with one step at its own rate (the draws differ).
//   on-off     {process: on-off, rate: 20/s, on: 10s, off: 50s}
//              Poisson at `rate` during each `on` window, nothing during the `off` window
//              that follows; windows repeat from time 0 (on first). Mean rate is
//              rate * on / (on + off).
//
// The workload's `arrival:` section also names the closed-loop and trace modes, which
// are not ArrivalProcesses (workload_spec.h); ArrivalModeNames() lists them all.
// Thread model: a process is single-threaded state; Clone() gives a fresh one at time 0.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // The next arrival time; non-decreasing across calls. Draws only from `rng`.
  virtual SimTime Next(RngStream& rng) = 0;
  // A fresh copy of this process, positioned at time 0 (no arrivals drawn yet).
  virtual std::unique_ptr<ArrivalProcess> Clone() const = 0;
  // Long-run mean arrivals per second.
  virtual double MeanRate() const = 0;
  // {"process": "gamma", "rate_per_s": 8, "cv": 3} — for reports.
  virtual Json Describe() const = 0;
};

// Factories; each validates its parameters (plain, unlocated messages).
Expected<std::unique_ptr<ArrivalProcess>> MakePoissonArrivals(Rate rate);          // rate > 0
Expected<std::unique_ptr<ArrivalProcess>> MakeGammaArrivals(Rate rate, double cv);  // cv > 0
Expected<std::unique_ptr<ArrivalProcess>> MakeConstantArrivals(Rate rate);         // rate > 0
// A step of a rate schedule: from `at` on, the rate is `rate`.
struct RateStep {
  SimTime at;
  Rate rate;
};
// Poisson at `rate` from 0, then at each step's rate from its time on. REQUIRES of the
// caller nothing: steps must be in increasing time after 0 with rates >= 0 (else an
// error).
Expected<std::unique_ptr<ArrivalProcess>> MakeScheduledPoissonArrivals(Rate rate, std::vector<RateStep> schedule);
// on > 0, off >= 0.
Expected<std::unique_ptr<ArrivalProcess>> MakeOnOffArrivals(Rate rate, Duration on, Duration off);

// Every name `arrival.process` accepts, in documentation order:
// poisson, gamma, constant, on-off, closed-loop, trace.
const std::vector<std::string>& ArrivalModeNames();

// Parses an open-loop `arrival:` map (process + its keys; unknown keys are errors).
// REQUIRES: node["process"] names an open-loop process (not closed-loop or trace); the
// caller (ParseWorkloadSpec) dispatches those. An unknown process name is an error that
// suggests the nearest name and lists ArrivalModeNames().
Expected<std::unique_ptr<ArrivalProcess>> ParseOpenLoopArrivals(const YamlNode& arrival_node);

}  // namespace fleetplan
