// Section readers of the scenario file (fleet/scenario.h), shared by the scenario reader
// and the components that own a section: each component's file holds the reader of its
// own section (adapter_component.cc: engine.adapters; disaggregation.cc:
// deployment.disaggregation and faults; invalidations.cc: workload.events;
// replication.cc: router.replication), so a new feature adds its reader beside its
// component, not to scenario.cc. Internal to the fleet layer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/scenario_schema.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan::section {

namespace keys = scenario_keys;

// A node that is either absent/null or a mapping with known keys.
inline Status CheckOptionalMap(const YamlNode& node, const std::vector<std::string>& allowed) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  return node.CheckKeys(allowed);
}

// Lists a value the reader filled in, when `node` is absent, in `derived` (report.json
// `notes`): "<key path>: <value> (not given)", or "<key path>: <value> (<why>; not
// given)" when the value needs a word of explanation.
inline void NoteDefault(const YamlNode& node, const std::string& value, Scenario& s, std::string_view why = {}) {
  if (node.present()) return;
  s.derived.push_back(why.empty() ? fmt::format("{}: {} (not given)", node.path(), value)
                                  : fmt::format("{}: {} ({}; not given)", node.path(), value, why));
}

inline std::string DurationText(Duration d) { return fmt::format("{:g} ms", d.millis()); }

// A string from a fixed set: located error with did-you-mean when it is not one of them.
inline Expected<std::string> ReadChoice(const YamlNode& node, const std::string& fallback, std::string_view what,
                                 const std::vector<std::string>& valid) {
  FP_ASSIGN_OR_RETURN(std::string value, node.StringOr(fallback));
  if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
    return node.Error(UnknownNameMessage(what, value, valid));
  }
  return value;
}

// The handle of `name` among a workload's `known` names (WorkloadNames' classes or
// tenants), or an error located at `node`: did-you-mean over them, or that the workload has
// none of `what` at all. Used where scenario names are resolved when the run is built.
inline Expected<int32_t> ResolveWorkloadName(const YamlNode& node, const std::string& name,
                                             const std::vector<std::string>& known, std::string_view what) {
  const auto it = std::find(known.begin(), known.end(), name);
  if (it != known.end()) return static_cast<int32_t>(it - known.begin());
  if (known.empty()) return node.Error(fmt::format("the workload has no {}s; '{}' names none", what, name));
  return node.Error(UnknownNameMessage(what, name, known));
}

inline bool HasPrefillPool(const Scenario& s) {
  for (const PoolSpec& p : s.pools) {
    if (p.role == PoolRole::kPrefill) return true;
  }
  return false;
}

// engine.speculation (speculation.cc); needs the deployment read.
Status ReadSpeculation(const YamlNode& node, Scenario& s);
// engine.adapters (adapter_component.cc).
Status ReadAdapters(const YamlNode& node, Scenario& s);
// deployment.disaggregation and faults (disaggregation.cc); both need the pools read.
Status ReadDisaggregation(const YamlNode& node, Scenario& s);
Status ReadFaults(const YamlNode& node, Scenario& s);
// workload.events (invalidations.cc).
Status ReadEvents(const YamlNode& node, Scenario& s);
// router.replication (replication.cc); needs the router and the prefix cache read.
Status ReadReplication(const YamlNode& node, Scenario& s);
// admission (admission.cc); needs the engine read.
Status ReadAdmission(const YamlNode& node, Scenario& s);
// autoscaling (autoscaling_reader.cc); needs the hardware, deployment and slo read.
Status ReadAutoscaling(const YamlNode& node, Scenario& s);

}  // namespace fleetplan::section
