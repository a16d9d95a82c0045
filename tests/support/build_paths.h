// Where the build put things, for tests: the source tree, the shared data beside it and the
// `fleetplan` binary. They are compiled into one file (build_paths.cc) rather than into
// every test as -D values, so the tests' object files do not depend on where the checkout
// lies and a clone elsewhere reuses a warm compiler cache.
#pragma once

namespace fleetplan::testing {

const char* SourceDir();       // absolute path of the source tree
const char* SharedDataDir();   // <source>/../shared/data
const char* FleetplanBinary(); // the built `fleetplan`

}  // namespace fleetplan::testing

#define FLEETPLAN_SOURCE_DIR (::fleetplan::testing::SourceDir())
#define FLEETPLAN_SHARED_DATA (::fleetplan::testing::SharedDataDir())
#define FLEETPLAN_BINARY (::fleetplan::testing::FleetplanBinary())
