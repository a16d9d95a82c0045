#include "support/build_paths.h"

namespace fleetplan::testing {

const char* SourceDir() { return FLEETPLAN_BUILD_SOURCE_DIR; }
const char* SharedDataDir() { return FLEETPLAN_BUILD_SHARED_DATA; }
const char* FleetplanBinary() { return FLEETPLAN_BUILD_BINARY; }

}  // namespace fleetplan::testing
