// Fuzzes the scenario reader (LoadScenarioText): any text either loads or fails with a
// located invalid-input error. Relative file references resolve against a folder that
// does not exist, so a scenario naming a file fails cleanly instead of reading the disk.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fleetplan/fleet/scenario.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto scenario = fleetplan::LoadScenarioText(text, "fuzz.yaml", "/nonexistent-fleetplan-fuzz");
  fleetplan::fuzz::CheckFailure(scenario, "scenario_fuzz");
  return 0;
}
