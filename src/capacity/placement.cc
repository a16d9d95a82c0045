// The arithmetic of capacity that needs no simulation: which dimension binds, the loss
// scenarios of a rule, placing replicas across failure domains so every scenario is
// survived, and pricing.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/capacity/capacity.h"

namespace fleetplan {
namespace {

// Replica units are compared with this slack: demand / capacity is a quotient of doubles.
constexpr double kSlack = 1e-9;

size_t RegionIndex(const PlacementProblem& p, const std::string& region) {
  return static_cast<size_t>(std::find(p.regions.begin(), p.regions.end(), region) - p.regions.begin());
}

bool IsLost(const std::vector<std::string>& lost, const std::string& domain) {
  return std::find(lost.begin(), lost.end(), domain) != lost.end();
}

// Per region: replicas that survive, and whether any domain of it survives.
struct Surviving {
  std::vector<double> replicas;
  std::vector<bool> alive;
};

Surviving SurvivingOf(const PlacementProblem& p, const std::vector<int64_t>& x, const std::vector<std::string>& lost) {
  Surviving s{std::vector<double>(p.regions.size(), 0), std::vector<bool>(p.regions.size(), false)};
  for (size_t d = 0; d < p.domains.size(); ++d) {
    if (IsLost(lost, p.domains[d].name)) continue;
    const size_t r = RegionIndex(p, p.domains[d].region);
    s.alive[r] = true;
    s.replicas[r] += static_cast<double>(x[d]);
  }
  return s;
}

// Replica units routed to each domain once `lost` has failed: a region that keeps a
// domain keeps its own demand plus its share (by demand) of the regions that lost every
// domain; inside a region, demand goes to the surviving domains in proportion to the GPUs
// each offers. Lost domains get 0. nullopt when demand has nowhere to go.
std::optional<std::vector<double>> Routed(const PlacementProblem& p, const std::vector<std::string>& lost) {
  const size_t regions = p.regions.size();
  std::vector<double> weight(regions, 0);
  for (size_t d = 0; d < p.domains.size(); ++d) {
    if (!IsLost(lost, p.domains[d].name)) weight[RegionIndex(p, p.domains[d].region)] += static_cast<double>(p.domains[d].gpus);
  }
  double orphaned = 0, alive_need = 0;
  for (size_t r = 0; r < regions; ++r) (weight[r] > 0 ? alive_need : orphaned) += p.need[r];
  if (orphaned > 0 && !(alive_need > 0)) return std::nullopt;
  std::vector<double> carried(regions, 0);
  for (size_t r = 0; r < regions; ++r) {
    if (weight[r] > 0) carried[r] = p.need[r] + (orphaned > 0 ? orphaned * p.need[r] / alive_need : 0);
  }
  std::vector<double> out(p.domains.size(), 0);
  for (size_t d = 0; d < p.domains.size(); ++d) {
    if (IsLost(lost, p.domains[d].name)) continue;
    const size_t r = RegionIndex(p, p.domains[d].region);
    out[d] = carried[r] * static_cast<double>(p.domains[d].gpus) / weight[r];
  }
  return out;
}

int64_t Whole(double replicas) { return static_cast<int64_t>(std::ceil(replicas - kSlack)); }

}  // namespace

std::vector<std::string> BindingDimensions(const std::vector<DimensionRequirement>& requirements) {
  int64_t most = 0;
  for (const DimensionRequirement& r : requirements) most = std::max(most, r.replicas);
  std::vector<std::string> names;
  for (const DimensionRequirement& r : requirements) {
    if (r.replicas == most) names.push_back(r.name);
  }
  return names;
}

std::vector<LossScenario> LossScenariosOf(SurviveRule rule, const std::vector<FailureDomain>& domains,
                                          const std::vector<RegionDemand>& demand) {
  std::vector<LossScenario> out = {LossScenario{"none", {}}};
  switch (rule) {
    case SurviveRule::kNone:
      break;
    case SurviveRule::kLargestDomain: {
      int64_t most = 0;
      for (const FailureDomain& d : domains) most = std::max(most, d.gpus);
      for (const FailureDomain& d : domains) {
        if (d.gpus == most) out.push_back(LossScenario{"domain:" + d.name, {d.name}});
      }
      break;
    }
    case SurviveRule::kAnyOneDomain:
      for (const FailureDomain& d : domains) out.push_back(LossScenario{"domain:" + d.name, {d.name}});
      break;
    case SurviveRule::kAnyOneRegion:
      for (const RegionDemand& r : demand) {
        LossScenario s{"region:" + r.region, {}};
        for (const FailureDomain& d : domains) {
          if (d.region == r.region) s.lost.push_back(d.name);
        }
        out.push_back(std::move(s));
      }
      break;
  }
  return out;
}

bool Carries(const PlacementProblem& p, const std::vector<int64_t>& x, const std::vector<std::string>& lost) {
  const Surviving s = SurvivingOf(p, x, lost);
  double spare = 0, orphaned = 0;
  for (size_t r = 0; r < p.regions.size(); ++r) {
    if (!s.alive[r]) {
      orphaned += p.need[r];
      continue;
    }
    if (s.replicas[r] + kSlack < p.need[r]) return false;
    spare += s.replicas[r] - p.need[r];
  }
  return spare + kSlack >= orphaned;
}

int64_t ReplicasNeeded(const PlacementProblem& p, const std::vector<std::string>& lost) {
  const auto before = Routed(p, {});
  const auto after = Routed(p, lost);
  if (!before || !after) return -1;
  int64_t n = 0;
  for (size_t d = 0; d < p.domains.size(); ++d) {
    n += IsLost(lost, p.domains[d].name) ? Whole((*before)[d]) : Whole((*after)[d]);
  }
  return n;
}

int64_t ReplicasRequiredAfter(const PlacementProblem& p, const std::vector<std::string>& lost) {
  const auto after = Routed(p, lost);
  if (!after) return -1;
  int64_t n = 0;
  for (size_t d = 0; d < p.domains.size(); ++d) {
    if (!IsLost(lost, p.domains[d].name)) n += Whole((*after)[d]);
  }
  return n;
}

std::optional<std::vector<int64_t>> PlaceForLosses(const PlacementProblem& p, const std::vector<LossScenario>& scenarios,
                                                   std::string* why) {
  std::vector<int64_t> x(p.domains.size(), 0);
  std::vector<std::string> deciding(p.domains.size());
  for (const LossScenario& s : scenarios) {
    const auto routed = Routed(p, s.lost);
    if (!routed) {
      if (why != nullptr) *why = fmt::format("after loss '{}' no failure domain is left to carry the demand", s.name);
      return std::nullopt;
    }
    for (size_t d = 0; d < x.size(); ++d) {
      if (Whole((*routed)[d]) > x[d]) {
        x[d] = Whole((*routed)[d]);
        deciding[d] = s.name;
      }
    }
  }
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] > p.max_replicas[d]) {
      if (why != nullptr) {
        *why = fmt::format("domain '{}' must hold {} replicas (its share of {}'s demand after loss '{}') but its {} GPUs "
                           "hold {}",
                           p.domains[d].name, x[d], p.domains[d].region, deciding[d], p.domains[d].gpus, p.max_replicas[d]);
      }
      return std::nullopt;
    }
  }
  return x;
}

FleetCost PriceFleet(int64_t gpus, const PriceSpec& price) {
  FleetCost c;
  int64_t committed = 0;
  if (price.committed) {
    committed = price.committed->gpus;
    c.committed_per_hour = static_cast<double>(committed) * price.committed->per_gpu_hour;
    c.committed_gpus_used = std::min(committed, gpus);
    c.unused_committed_gpu_hours_per_month = static_cast<double>(std::max<int64_t>(0, committed - gpus)) * kHoursPerMonth;
  }
  c.on_demand_gpus = std::max<int64_t>(0, gpus - committed);
  c.on_demand_per_hour = static_cast<double>(c.on_demand_gpus) * price.on_demand_per_gpu_hour;
  c.per_hour = c.on_demand_per_hour + c.committed_per_hour;
  c.per_month = c.per_hour * kHoursPerMonth;
  return c;
}

}  // namespace fleetplan
