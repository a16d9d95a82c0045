// A sweep spec (version 1): a base scenario, overrides applied to every point, axes whose
// cartesian product (in the order written) gives the configurations, seeds that replicate
// every configuration, and an optional max-rate search per point (docs/sweep.md).
//
//   version: 1
//   base: atlas.yaml                      # a scenario file (relative to the spec), or {builtin: atlas}
//   overrides: {workload.duration: 5m}    # any scenario key path -> value
//   axes:
//     deployment.replicas: [2, 4, 6, 8]
//     workload.arrival.rate: {from: 2/s, to: 16/s, step: 2/s}
//   seeds: [1, 2, 3]                      # default: the base scenario's seed
//   targets: {interactive: 0.99}          # attainment that "meets the SLO" (default: the search's, else 0.99 per SLO class)
//   price: {gpu_hour: 2.50}               # cost per GPU-hour: points report cost_per_hour
//   search:
//     max_rate: {axis: workload.arrival.rate, low: 0.5/s, high: 64/s,
//                attainment: {interactive: 0.99}, resolution: 2%}
//
// Points: index = configuration * seeds + seed position; a configuration's index counts
// the axes like digits, the first axis most significant. Every key path is checked against
// the base scenario's key paths (with did-you-mean); values are checked when each point is
// bound, located where the spec writes them. The spec digest covers the spec's bytes and
// the base scenario's, so partial results of different specs are never merged.
// Thread model: a value; read-only after loading (points are built from it concurrently).
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

namespace fleetplan {

struct SweepAxis {
  std::string path;              // scenario key path
  std::vector<YamlNode> values;  // in order; each located in the spec
};

// Attainment targets, class -> fraction in (0, 1], in the order written.
using AttainmentTargets = std::vector<std::pair<std::string, double>>;

struct MaxRateSearch {
  std::string axis;  // the key path searched; a rate
  Rate low;
  Rate high;
  AttainmentTargets attainment;
  double resolution = 0.02;  // stop when high / low <= 1 + resolution
  bool early_stop = true;    // end a probe as soon as it cannot pass
  std::optional<YamlNode> where;  // the search entry, for locating derived rates
};

struct SweepSpec {
  std::string display_name;  // as the user named the spec
  std::string name;          // the spec file's stem ("sweep" for text)
  std::string digest;        // sha256 over the spec's and the base scenario's bytes
  std::shared_ptr<const YamlDocument> document;
  std::shared_ptr<const YamlDocument> base;  // the base scenario
  std::string base_source;                   // its path as resolved, or "builtin:atlas"
  std::string base_dir;                      // where the base's relative paths resolve
  std::string base_digest;
  std::vector<YamlOverride> overrides;
  std::vector<SweepAxis> axes;
  std::vector<uint64_t> seeds;  // never empty (the base seed when not given)
  bool seeds_given = false;
  std::optional<MaxRateSearch> search;
  AttainmentTargets targets;  // never empty when the base has an slo
  std::string targets_source;  // "targets", "search.max_rate.attainment" or the default's note
  std::optional<double> gpu_hour_price;

  int64_t configurations() const;
  int64_t points() const { return configurations() * static_cast<int64_t>(seeds.size()); }
  // Index of each axis' value for configuration `c`. REQUIRES: 0 <= c < configurations().
  std::vector<size_t> AxisValues(int64_t configuration) const;
  // What the sweep output records of the spec (axes with their values, seeds, search,
  // targets, price, base): enough to aggregate points without the spec file (merge).
  Json Describe() const;
};

// Loads and checks a spec. Errors are located (file:line:col, field path); an axis or
// override key that is not a key path of the base scenario gets a did-you-mean over them.
Expected<SweepSpec> LoadSweepSpec(const std::string& path);
Expected<SweepSpec> LoadSweepSpecText(std::string_view text, std::string display_name, std::string dir);
// A spec of the base alone: `base_node` read as a spec's `base` (a scenario file relative
// to `dir`, or {builtin: atlas}, errors located there), the base's seed, no axes and no
// search; for callers that run the base through the sweep layer (capacity).
Expected<SweepSpec> SweepSpecOfBase(const YamlNode& base_node, const std::string& dir, std::string display_name);

// The key paths of a scenario document (every key present, with [i] for sequence
// elements) plus the format's documented keys of its fixed sections, sorted.
std::vector<std::string> ScenarioKeyPaths(const YamlDocument& scenario);

// The class names of a scenario document's `slo`, in the order written (empty without one).
std::vector<std::string> SloClassNames(const YamlDocument& scenario);
// A mapping class -> attainment in (0, 1] (at least one), each class one of `slo_classes`;
// an unknown class is a located error with did-you-mean and `hint` in parentheses.
Expected<AttainmentTargets> ReadAttainmentTargets(const YamlNode& node, const std::vector<std::string>& slo_classes,
                                                  std::string_view hint);

// An axis value in output: an integer, number or boolean as such, other scalars as text.
Json SweepValueJson(const YamlNode& value);

// A rate as a scenario value ("12.5/s"): decimal, exact to 1e-6/s.
std::string RateText(Rate r);

}  // namespace fleetplan
