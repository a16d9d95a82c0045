// YAML readers for catalog entries (model_reader.cc, hardware_reader.cc). Each returns a
// located error for the first problem it finds.
// Thread model: pure functions.
#pragma once

#include <map>
#include <string>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan::catalog_internal {

// `links` are the links known when the entry is read (default_intra_link must name one).
Expected<GpuSpec> ReadGpuSpec(const YamlNode& node, std::string name,
                              const std::map<std::string, LinkSpec>& links);
Expected<LinkSpec> ReadLinkSpec(const YamlNode& node, std::string name);

// "<file>:<line>" of a node, the `source` of a user entry that names none.
std::string UserSource(const YamlNode& node);

}  // namespace fleetplan::catalog_internal
