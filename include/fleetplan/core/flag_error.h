// The error for a command-line flag whose value cannot be read or is out of its range.
//
// The rule every verb follows (docs/cli.md "Exit codes"): what is wrong on the command
// line itself — an unknown flag, a missing one, or a flag's value that does not parse or is
// out of range (`--tp -4`, `--speed 0`, `--jobs -1`) — is a usage error, exit 2; what is
// wrong inside a file a flag names (a scenario, a records file, a spec) is an input error,
// exit 3, located in that file.
// Thread model: pure functions.
#pragma once

#include <string_view>

#include "fleetplan/core/status.h"

namespace fleetplan {

// Status(kUsage) "FLAG: MESSAGE", with the flag and message as its origin() (as
// LocatedError gives a file's error).
Status FlagValueError(std::string_view flag, std::string_view message);

}  // namespace fleetplan
