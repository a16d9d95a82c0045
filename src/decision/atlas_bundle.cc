#include "fleetplan/decision/atlas_bundle.h"

#include <filesystem>

#include <fmt/format.h>

#include "fleetplan/core/json.h"

namespace fleetplan {

Status WriteAtlasBundle(const std::string& dir) {
  for (const auto& [name, bytes] : AtlasBundleFiles()) {
    const std::filesystem::path path = std::filesystem::path(dir) / std::string(name);
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return Status(StatusCode::kInvalidInput, fmt::format("cannot create '{}': {}", path.parent_path().string(), ec.message()));
    FP_RETURN_IF_ERROR(WriteFileAtomic(path.string(), std::string(bytes)));
  }
  return Status::Ok();
}

}  // namespace fleetplan
