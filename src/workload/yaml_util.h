// Small helpers over core/yaml.h shared by the workload parsers.
// Thread model: pure functions.
#pragma once

#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan::workload_internal {

// The node as written, as JSON: maps -> objects, sequences -> arrays, scalars -> integer,
// number, true/false or string (in that order of preference), null -> null. For
// reports, which echo the user's spec.
Json YamlToJson(const YamlNode& node);

// `relative` resolved against the directory of the YAML file `node` came from
// (unchanged when absolute or when the node has no file).
std::string ResolveAgainstYamlFile(const YamlNode& node, const std::string& relative);

}  // namespace fleetplan::workload_internal
