// Fuzzes the capacity spec reader (`fleetplan capacity`), then sizes what loads with a
// declared per-replica rate and no simulation: requirements, loss scenarios, placement
// across the spec's domains and prices. Scenario files resolve against a folder that
// does not exist, so only `{builtin: atlas}` reaches the sizing. Any failure must be a
// located invalid-input error; a result must write canonical JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fleetplan/capacity/capacity.h"
#include "fleetplan/capacity/spec.h"
#include "fleetplan/core/json.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = fleetplan::LoadCapacitySpecText(text, "capacity.yaml", "/nonexistent-fuzz-dir");
  fleetplan::fuzz::CheckFailure(spec, "capacity_fuzz");
  if (!spec.ok()) return 0;
  spec->replica_capacity.kind = fleetplan::ReplicaCapacitySource::Kind::kRate;
  if (!(spec->replica_capacity.rate.per_second > 0)) spec->replica_capacity.rate = fleetplan::Rate{2.0};
  fleetplan::CapacityOptions opt;
  opt.verify = false;
  auto result = fleetplan::SizeCapacity(*spec, opt);
  // A scenario whose own layout does not fit one replica is a verdict (exit 1), not bad input.
  if (!result.ok() && result.status().code() == fleetplan::StatusCode::kCheckFailed) return 0;
  fleetplan::fuzz::CheckFailure(result, "capacity_fuzz");
  if (result.ok()) {
    auto json = fleetplan::CanonicalJson(fleetplan::CapacityJson(*result));
    fleetplan::fuzz::Require(json.ok(), "capacity_fuzz", "capacity.json does not write", json.ok() ? "" : json.status().message());
  }
  return 0;
}
