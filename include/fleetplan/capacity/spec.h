// The capacity spec (docs/capacity.md): what `fleetplan capacity` sizes a fleet from —
// a scenario (model, layout, engine, SLOs, class mix), peak demand per region, failure
// domains and the GPUs each offers, which loss the fleet must survive, maintenance
// headroom, where per-replica capacity comes from, prices and a budget.
//
// Read strictly: unknown keys, bad units and names that do not resolve (a domain's region
// without demand, a class the scenario's slo lacks) are located errors with did-you-mean.
// Thread model: a value; holds its YAML documents alive for locating later errors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/sweep/spec.h"

namespace fleetplan {

// Which loss the fleet must carry its demand through. Values reach JSON by name.
enum class SurviveRule : int { kNone = 0, kLargestDomain = 1, kAnyOneDomain = 2, kAnyOneRegion = 3 };
std::string_view SurviveRuleName(SurviveRule rule);

struct RegionDemand {
  std::string region;
  Rate peak;  // requests per second at the region's peak
};

struct FailureDomain {
  std::string name;
  std::string region;
  int64_t gpus = 0;  // GPUs the domain offers this fleet
};

// Where one replica's request rate at the SLO comes from.
struct ReplicaCapacitySource {
  enum class Kind : int { kSearch = 0, kFile = 1, kRate = 2 };
  Kind kind = Kind::kSearch;
  // kSearch: a max-rate search on one replica of each layout (sweep/search.h).
  AttainmentTargets attainment;
  Rate low{0.05};
  Rate high{200};
  double resolution = 0.02;
  std::optional<Duration> duration;  // of each probe; the scenario's when absent
  // kFile: a sweep.json with a max-rate search; `configuration` picks one when it has several.
  std::string file;  // resolved against the spec's folder
  std::optional<int64_t> configuration;
  // kRate: declared benchmark evidence, requests per second per replica.
  Rate rate;
  std::optional<YamlNode> where;  // the replica_capacity entry
};

struct CommittedPrice {
  double per_gpu_hour = 0;
  int64_t gpus = 0;       // GPUs paid for whether used or not
  std::string term;       // as written ("1y", "3y", "6m"): reported, not priced
};

struct PriceSpec {
  double on_demand_per_gpu_hour = 0;
  std::optional<CommittedPrice> committed;
};

// A layout to size; without `layouts:` the scenario's own.
struct LayoutChoice {
  int64_t tp = 1;
  int64_t pp = 1;
  std::optional<YamlNode> where;
  std::string Name() const;  // "tp4" or "tp4-pp2"
};

struct CapacitySpec {
  std::string display_name;
  std::string dir;     // where relative paths resolve
  std::string digest;  // sha256 over the spec's bytes and the scenario's
  std::shared_ptr<const YamlDocument> document;
  // The scenario as a sweep base (sweep/spec.h), so one replica's search runs as a sweep.
  SweepSpec base;
  std::vector<RegionDemand> demand;   // as written
  std::vector<FailureDomain> domains; // as written
  SurviveRule survive = SurviveRule::kLargestDomain;
  double headroom = 0;  // fraction of every domain's replicas kept out for maintenance
  ReplicaCapacitySource replica_capacity;
  PriceSpec price;
  std::optional<double> budget_per_month;
  std::vector<LayoutChoice> layouts;  // empty: the scenario's layout
  // Verification: when the loss happens in the simulated run, and how long it runs.
  // Every request's prompt tokens times this in the requirement arithmetic (1 as written):
  // a program's perturbation (the plan's sensitivity to longer contexts), never read from
  // a spec. The SLO dimension's measured rate is not re-measured at it.
  double prompt_scale = 1;
  Duration loss_at = Sec(300);
  std::optional<Duration> verify_duration;

  Json Describe() const;
};

// Hours in a month, for prices per month (365 x 24 / 12).
inline constexpr double kHoursPerMonth = 730;

Expected<CapacitySpec> LoadCapacitySpec(const std::string& path);
Expected<CapacitySpec> LoadCapacitySpecText(std::string_view text, std::string display_name, std::string dir);
// A spec composed by a program (the plan: docs/plan.md): `doc` holds every key but the
// scenario (each value located where it was written, see YamlDocument::WithOverrides), and
// `base` is the scenario already read as a sweep base with its overrides. `digest` is the
// identity the caller gives it.
Expected<CapacitySpec> CapacitySpecOf(std::shared_ptr<const YamlDocument> doc, SweepSpec base, std::string dir,
                                      std::string digest);

}  // namespace fleetplan
