// Files a folder names, kept inside that folder: a plan bundle names its evidence, ladder,
// canary records and speculation rounds from its own folder, so a copy of the bundle plans
// to the same bytes (docs/plan.md). A name that leaves the folder — `../`, an absolute
// path, or a symbolic link whose target is elsewhere — is refused.
// Thread model: pure functions of the file system.
#pragma once

#include <string>

#include "fleetplan/core/status.h"

namespace fleetplan {

// `name` resolved from `dir` (an absolute `name` as it is), when it lies inside `root`
// after symbolic links are followed (std::filesystem::weakly_canonical of both, then a
// path-prefix check); `root` and `dir` may be relative to the working folder, and an
// empty one is ".". The path returned is `dir`/`name`, or for an absolute `name`, `root`
// joined with its place under `root` (so what prints it names it from the bundle's
// folder). Otherwise an InvalidInput whose message, without a location (callers
// locate it at the value that named the file), says
//   "'<name>' is outside the bundle's folder (<why>): a bundle names its files from its
//    own folder; copy the file into the bundle"
// where <why> is "an absolute path", "it leaves the folder" or "a symbolic link leads out".
Expected<std::string> ResolveInside(const std::string& root, const std::string& dir, const std::string& name);

}  // namespace fleetplan
