// Access to the shared public data (traces, measured GPU profiles, the scenario spec) that some
// tests compare against. The data lives beside the checkout, never inside it; its root is
// FLEETPLAN_SHARED_DATA from the environment when set, else the build-time default
// (<source>/../shared/data). A test that needs it starts with FP_REQUIRE_SHARED_DATA(), which
// skips the test, saying where it looked, when the data is not there.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include "support/build_paths.h"

namespace fleetplan::testing {

inline std::string SharedDataRoot() {
  const char* env = std::getenv("FLEETPLAN_SHARED_DATA");
  if (env != nullptr && env[0] != '\0') return env;
#ifdef FLEETPLAN_SHARED_DATA
  return FLEETPLAN_SHARED_DATA;
#else
  return "../shared/data";
#endif
}

// "<root>/<relative>"; the spec lives at "../spec/..." relative to the data root.
inline std::string SharedPath(std::string_view relative) {
  return SharedDataRoot() + "/" + std::string(relative);
}

inline bool HaveSharedData() {
  std::error_code ec;
  return std::filesystem::is_directory(SharedDataRoot() + "/traces", ec) &&
         std::filesystem::is_directory(SharedDataRoot() + "/../spec", ec);
}

}  // namespace fleetplan::testing

#define FP_REQUIRE_SHARED_DATA()                                                                     \
  do {                                                                                               \
    if (!::fleetplan::testing::HaveSharedData()) {                                                   \
      GTEST_SKIP() << "shared data not found at " << ::fleetplan::testing::SharedDataRoot()          \
                   << " (set FLEETPLAN_SHARED_DATA to its data/ folder)";                            \
    }                                                                                                \
  } while (false)
