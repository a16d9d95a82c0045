#include "fleetplan/sweep/search.h"

#include <algorithm>
#include <cmath>

#include "fleetplan/core/units_parse.h"

namespace fleetplan {

double ProbeRate(double rate) {
  auto parsed = ParseRate(RateText(Rate{rate}));
  return parsed.ok() ? parsed->per_second : rate;
}

bool IsMonotone(const std::vector<RateProbe>& probes, double tolerance) {
  std::vector<const RateProbe*> sorted;
  for (const RateProbe& p : probes) {
    if (p.complete) sorted.push_back(&p);
  }
  std::sort(sorted.begin(), sorted.end(), [](const RateProbe* a, const RateProbe* b) { return a->rate < b->rate; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    for (size_t j = i + 1; j < sorted.size(); ++j) {
      if (sorted[j]->rate <= sorted[i]->rate) continue;
      for (size_t k = 0; k < sorted[i]->attainment.size() && k < sorted[j]->attainment.size(); ++k) {
        if (sorted[j]->attainment[k].second > sorted[i]->attainment[k].second + tolerance) return false;
      }
    }
  }
  return true;
}

Expected<MaxRateResult> SearchMaxRate(const MaxRateSearch& search, const ProbeFn& probe,
                                      const std::optional<RateProbe>& known) {
  MaxRateResult r;
  auto record = [&](const RateProbe& p) {
    r.probes.push_back(p);
    if (p.passed) {
      r.max_rate = std::max(r.max_rate.value_or(p.rate), p.rate);
    } else {
      r.lowest_failing = std::min(r.lowest_failing.value_or(p.rate), p.rate);
    }
  };
  auto run = [&](double rate) -> Expected<bool> {
    FP_ASSIGN_OR_RETURN(RateProbe p, probe(ProbeRate(rate)));
    record(p);
    return p.passed;
  };
  double lo = search.low.per_second;
  double hi = search.high.per_second;
  if (known && known->rate > lo && known->rate < hi) {
    record(*known);
    (known->passed ? lo : hi) = known->rate;
  }
  const double stop_ratio = 1 + search.resolution;
  while (hi / lo > stop_ratio) {
    const double mid = std::sqrt(lo * hi);
    FP_ASSIGN_OR_RETURN(bool passed, run(mid));
    (passed ? lo : hi) = ProbeRate(mid);
  }
  if (!r.max_rate) {
    FP_ASSIGN_OR_RETURN(bool low_passes, run(search.low.per_second));
    r.status = low_passes ? "found" : "below-low";
  } else if (!r.lowest_failing) {
    FP_ASSIGN_OR_RETURN(bool high_passes, run(search.high.per_second));
    r.status = high_passes ? "above-high" : "found";
  } else {
    r.status = "found";
  }
  r.monotone = IsMonotone(r.probes);
  return r;
}

Json MaxRateJson(const MaxRateResult& result) {
  Json probes = Json::array();
  for (const RateProbe& p : result.probes) {
    Json att = Json::object();
    for (const auto& [cls, a] : p.attainment) att[cls] = RoundForReport(a);
    Json j = {{"rate_per_s", RoundForReport(p.rate)},
              {"passed", p.passed},
              {"complete", p.complete},
              {"attainment", att},
              {"steps", p.steps}};
    if (!p.complete) j["stopped_at_s"] = RoundForReport(p.stopped_at_s);
    probes.push_back(std::move(j));
  }
  Json j = {{"status", result.status}, {"monotone", result.monotone}, {"probes", probes}};
  j["rate_per_s"] = result.max_rate ? Json(RoundForReport(*result.max_rate)) : Json(nullptr);
  j["bracket"] = Json::array({result.max_rate ? Json(RoundForReport(*result.max_rate)) : Json(0),
                              result.lowest_failing ? Json(RoundForReport(*result.lowest_failing)) : Json(nullptr)});
  return j;
}

}  // namespace fleetplan
