// Fuzzes the scenario reader (LoadScenarioText) and Bind: any text either loads or fails
// with a located invalid-input error, and a scenario that loads either binds into a plan
// (whose digest can be taken) or fails with invalid input or a failed check (a layout
// with no memory for KV), never an assertion or an internal error. Relative file
// references resolve against a folder that does not exist, so a scenario naming a file
// fails cleanly instead of reading the disk.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/scenario.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto scenario = fleetplan::LoadScenarioText(text, "fuzz.yaml", "/nonexistent-fleetplan-fuzz");
  fleetplan::fuzz::CheckFailure(scenario, "scenario_fuzz");
  if (!scenario.ok()) return 0;
  const auto plan = fleetplan::Bind(*scenario);
  if (!plan.ok()) {
    const fleetplan::Status& s = plan.status();
    if (s.code() == fleetplan::StatusCode::kCheckFailed) return 0;  // no memory for KV: a verdict
    fleetplan::fuzz::CheckFailure(s, "scenario_fuzz (bind)");
    return 0;
  }
  const auto digest = plan->Digest();
  fleetplan::fuzz::Require(digest.ok(), "scenario_fuzz", "a bound plan has no digest",
                           digest.ok() ? "" : digest.status().message());
  return 0;
}
