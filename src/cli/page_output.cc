#include <vector>

#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"

namespace fleetplan::cli {

Status WriteOrRemovePage(const std::string& path, bool write, const std::function<std::string()>& page,
                         std::string& written) {
  if (!write) {
    std::vector<std::string> removed;
    return RemoveStaleOutput(path, false, &removed);
  }
  FP_RETURN_IF_ERROR(WriteFileAtomic(path, page()));
  written += ", " + path;
  return Status::Ok();
}

}  // namespace fleetplan::cli
