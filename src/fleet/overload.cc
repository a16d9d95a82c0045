#include "fleetplan/fleet/overload.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fleetplan {
namespace {

// In flight at the last arrival at least this many times what it was halfway through.
constexpr double kGrowth = 1.5;

LoadFigures Judge(std::vector<int64_t> arrivals, std::vector<int64_t> ends, int64_t margin) {
  LoadFigures f;
  f.arrived = static_cast<int64_t>(arrivals.size());
  if (arrivals.empty()) return f;
  std::sort(arrivals.begin(), arrivals.end());
  std::sort(ends.begin(), ends.end());
  auto in_flight = [&](int64_t t) {
    const auto arrived = std::upper_bound(arrivals.begin(), arrivals.end(), t) - arrivals.begin();
    const auto ended = std::upper_bound(ends.begin(), ends.end(), t) - ends.begin();
    return static_cast<int64_t>(arrived - ended);
  };
  const int64_t first = arrivals.front(), last = arrivals.back();
  f.in_flight_halfway = in_flight(first + (last - first) / 2);
  f.in_flight_at_last_arrival = in_flight(last);
  const double span_s = static_cast<double>(last - first) / 1e9;
  if (span_s > 0) {
    f.arrival_rate = static_cast<double>(arrivals.size()) / span_s;
    f.ended_rate = static_cast<double>(std::upper_bound(ends.begin(), ends.end(), last) - ends.begin()) / span_s;
  }
  f.drain_s = std::max(0.0, static_cast<double>(ends.back() - last) / 1e9);
  f.judged = f.arrived >= kOverloadMinRequests && span_s > 0;
  f.over_capacity = f.judged && static_cast<double>(f.in_flight_at_last_arrival) >=
                                    kGrowth * static_cast<double>(f.in_flight_halfway) + static_cast<double>(margin);
  return f;
}

Json FiguresJson(const LoadFigures& f) {
  return {{"arrived", f.arrived},
          {"judged", f.judged},
          {"over_capacity", f.over_capacity},
          {"arrival_rate_per_s", RoundForReport(f.arrival_rate, 6)},
          {"ended_rate_per_s", RoundForReport(f.ended_rate, 6)},
          {"in_flight_halfway", f.in_flight_halfway},
          {"in_flight_at_last_arrival", f.in_flight_at_last_arrival},
          {"drain_after_last_arrival_s", RoundForReport(f.drain_s, 6)}};
}

double Ratio(const LoadFigures& f) { return f.ended_rate > 0 ? f.arrival_rate / f.ended_rate : 0.0; }

}  // namespace

void LoadTracker::Add(const RequestRecord& r) {
  // A request that never finished (rejected, given up) counts as ended when last seen.
  const SimTime end = r.finish ? *r.finish : r.first_token ? *r.first_token : r.arrival;
  entries_.push_back(Entry{r.arrival.ns(), end.ns(), r.class_id});
}

OverloadDiagnosis LoadTracker::Diagnose(int64_t replicas, bool fixed_fleet,
                                        const std::vector<std::string>& classes) const {
  OverloadDiagnosis d;
  d.replicas = replicas;
  d.fixed_fleet = fixed_fleet;
  std::vector<std::vector<int64_t>> arrivals(classes.size()), ends(classes.size());
  std::vector<int64_t> all_arrivals, all_ends;
  for (const Entry& e : entries_) {
    all_arrivals.push_back(e.arrival);
    all_ends.push_back(e.end);
    arrivals[static_cast<size_t>(e.class_id)].push_back(e.arrival);
    ends[static_cast<size_t>(e.class_id)].push_back(e.end);
  }
  d.fleet = Judge(std::move(all_arrivals), std::move(all_ends), replicas);
  for (size_t c = 0; c < classes.size(); ++c) {
    d.classes.emplace_back(classes[c], Judge(std::move(arrivals[c]), std::move(ends[c]), replicas));
  }
  if (d.fleet.over_capacity && fixed_fleet) {
    d.replicas_to_keep_up = static_cast<int64_t>(std::ceil(static_cast<double>(replicas) * Ratio(d.fleet) - 1e-9));
  }
  return d;
}

Json OverloadJson(const OverloadDiagnosis& d) {
  Json j = FiguresJson(d.fleet);
  j["replicas"] = d.replicas;
  if (!d.fixed_fleet) j["fixed_fleet"] = false;
  if (d.fleet.over_capacity) {
    j["arrivals_per_completion"] = RoundForReport(Ratio(d.fleet), 6);
    if (d.fixed_fleet) j["replicas_to_keep_up"] = d.replicas_to_keep_up;
    j["advice"] = "size the fleet for its SLOs with `fleetplan capacity` (docs/capacity.md)";
  }
  Json classes = Json::object();
  for (const auto& [name, f] : d.classes) classes[name] = FiguresJson(f);
  j["classes"] = std::move(classes);
  return j;
}

std::string OverloadText(const OverloadDiagnosis& d) {
  if (!d.fleet.over_capacity) return "";
  const LoadFigures& f = d.fleet;
  std::string by_class;
  for (const auto& [name, c] : d.classes) {
    if (!c.over_capacity) continue;
    by_class += fmt::format("{}{} {:.2f}x", by_class.empty() ? "" : ", ", name, Ratio(c));
  }
  return fmt::format(
      "OVER CAPACITY: requests arrived at {:.2f}/s but ended at {:.2f}/s while they arrived ({:.2f}x); in flight "
      "(queued or running) grew from {} halfway through the arrivals to {} at the last arrival, and took {:.1f} s "
      "more to drain.{} Latencies and attainment measure that backlog. {}; size the fleet for its SLOs with "
      "`fleetplan capacity` (docs/capacity.md)\n",
      f.arrival_rate, f.ended_rate, Ratio(f), f.in_flight_halfway, f.in_flight_at_last_arrival, f.drain_s,
      by_class.empty() ? std::string() : fmt::format(" Classes falling behind (arrivals per completion): {}.", by_class),
      d.fixed_fleet ? fmt::format("Just keeping up needs at least {} replicas (this fleet has {})", d.replicas_to_keep_up,
                                  d.replicas)
                    : fmt::format("The fleet changed size during the run (it started with {} replicas)", d.replicas));
}

}  // namespace fleetplan
