// Overload diagnosis: whether a simulated fleet kept up with its arrivals, by how much it
// did not, and for which classes (report.json `overload`, the "over capacity" line of the
// text summary).
//
// A fleet that keeps up holds a steady number of requests in flight (arrived, not yet
// ended); one that does not accumulates a backlog that grows linearly. Over capacity: at
// the last arrival, in flight is at least 1.5x what it was halfway through the arrivals,
// plus one per replica (the margin a fleet's normal fluctuation needs), judged on runs of
// at least 100 requests. The same rule is applied to each class alone. By how much:
// arrivals per second over requests ended per second while they arrived; the fleet would
// need at least replicas x that ratio just to keep up — more to meet its SLOs, which is
// what `fleetplan capacity` sizes.
// Thread model: single-threaded value; 24 bytes per request until diagnosed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/metrics/record.h"

namespace fleetplan {

// Fewest requests (fleet, or one class) a verdict is given on.
inline constexpr int64_t kOverloadMinRequests = 100;

struct LoadFigures {
  int64_t arrived = 0;
  bool judged = false;         // at least kOverloadMinRequests arrived
  bool over_capacity = false;
  double arrival_rate = 0;     // per second, first to last arrival
  double ended_rate = 0;       // requests ended per second in that span
  int64_t in_flight_halfway = 0;
  int64_t in_flight_at_last_arrival = 0;
  double drain_s = 0;          // last end - last arrival
};

struct OverloadDiagnosis {
  LoadFigures fleet;
  std::vector<std::pair<std::string, LoadFigures>> classes;  // class-table order
  int64_t replicas = 0;
  bool fixed_fleet = true;          // no replica joined or left during the run
  int64_t replicas_to_keep_up = 0;  // ceil(replicas x arrival / ended); set when over a fixed fleet
};

class LoadTracker {
 public:
  void Add(const RequestRecord& r);
  // `replicas`: the fleet's size; `fixed_fleet`: it kept that size for the whole run (an
  // autoscaled or failing fleet did not: no "replicas to keep up" is derived from it).
  // REQUIRES: `classes` names every class handle added.
  OverloadDiagnosis Diagnose(int64_t replicas, bool fixed_fleet, const std::vector<std::string>& classes) const;

 private:
  struct Entry {
    int64_t arrival = 0;
    int64_t end = 0;
    int32_t class_id = 0;
  };
  std::vector<Entry> entries_;
};

Json OverloadJson(const OverloadDiagnosis& d);
// The summary's lines (empty when the fleet kept up).
std::string OverloadText(const OverloadDiagnosis& d);

}  // namespace fleetplan
