#include "fleetplan/core/contained_path.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace fleetplan {
namespace {

namespace fs = std::filesystem;

// Whether `path` equals `root` or lies below it (both normal, absolute).
bool Within(const fs::path& root, const fs::path& path) {
  auto r = root.begin();
  auto p = path.begin();
  for (; r != root.end(); ++r, ++p) {
    if (r->empty() && std::next(r) == root.end()) return true;  // a trailing separator
    if (p == path.end() || *r != *p) return false;
  }
  return true;
}

}  // namespace

Expected<std::string> ResolveInside(const std::string& root, const std::string& dir, const std::string& name) {
  const fs::path joined = fs::path(name).is_absolute() || dir.empty() ? fs::path(name) : fs::path(dir) / name;
  std::error_code ec;
  const fs::path top = fs::weakly_canonical(fs::absolute(root.empty() ? fs::path(".") : fs::path(root), ec), ec);
  const fs::path real = fs::weakly_canonical(fs::absolute(joined, ec), ec);
  if (!ec && Within(top, real)) {
    // An absolute name inside the folder is named from `root`, as a relative one is: the
    // machine's path never reaches what a plan prints.
    if (!fs::path(name).is_absolute()) return joined.string();
    const fs::path base = root.empty() ? fs::path(".") : fs::path(root);
    const fs::path rel =
        fs::absolute(joined, ec).lexically_normal().lexically_relative(fs::absolute(base, ec).lexically_normal());
    if (ec || rel.empty() || *rel.begin() == "..") return joined.string();  // inside only through a link
    return (base / rel).lexically_normal().string();
  }
  // The wording: a name that climbs out before any link is followed "leaves the folder".
  const fs::path rel = joined.lexically_normal().lexically_relative(
      (root.empty() ? fs::path(".") : fs::path(root)).lexically_normal());
  const bool climbs = rel.empty() || *rel.begin() == "..";
  const std::string why = fs::path(name).is_absolute() ? "an absolute path"
                          : climbs                     ? "it leaves the folder"
                                                       : "a symbolic link leads out";
  return InvalidInput(fmt::format("'{}' is outside the bundle's folder ({}): a bundle names its files from its own "
                                  "folder; copy the file into the bundle",
                                  name, why));
}

}  // namespace fleetplan
