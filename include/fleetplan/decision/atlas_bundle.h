// The built-in Atlas plan bundle: the files of examples/atlas, compiled in (cmake/
// embed_files.cmake), so `fleetplan plan` runs with no bundle of one's own and
// `fleetplan plan --print-bundle DIR` writes the same readable files.
// Thread model: immutable data.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "fleetplan/core/status.h"

namespace fleetplan {

// (path relative to the bundle's folder, bytes), sorted by path; "plan.yaml" is the bundle.
std::span<const std::pair<std::string_view, std::string_view>> AtlasBundleFiles();

// Writes every file under `dir` (creating folders). Errors name the file.
Status WriteAtlasBundle(const std::string& dir);

}  // namespace fleetplan
