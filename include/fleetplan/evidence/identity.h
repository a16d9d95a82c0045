// The immutable identity a measurement was taken on: which model artifact, runtime and
// version, hardware and engine configuration. Gates (gates/gate.h) hold on evidence whose
// identity is incomplete; the simulator's empirical inputs (a speculation rounds file)
// carry the same header.
// Thread model: value types and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

// The immutable identity a measurement was taken on. All five fields are required for
// the evidence to count; a missing field makes the identity check hold.
struct EvidenceIdentity {
  std::string artifact;         // model artifact digest ("sha256:...")
  std::string runtime;          // runtime name ("vllm")
  std::string runtime_version;  // "0.6.3"
  std::string hardware;         // GPU name ("h100-sxm-80g")
  std::string engine_config;    // engine configuration digest
};

// The identity's keys, in this order: artifact, runtime, runtime_version, hardware,
// engine_config.
const std::vector<std::string>& IdentityFields();
// Reads `identity: {...}`. Absent or null is an identity with every field missing (a hold,
// not an error); unknown keys and non-string values are located errors.
Expected<EvidenceIdentity> ReadIdentity(const YamlNode& node);
// The same from a JSON object (a rounds file's header line); `where` prefixes errors.
Expected<EvidenceIdentity> IdentityFromJson(const Json& j, std::string_view where);
std::vector<std::string> MissingIdentityFields(const EvidenceIdentity& id);
Json ToJson(const EvidenceIdentity& id);  // missing fields are null

}  // namespace fleetplan
