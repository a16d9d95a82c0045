#include "fleetplan/core/output_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>


namespace fleetplan {
namespace {

namespace fs = std::filesystem;

// Removes NAME.tmp.* in `dir`: the temp files of a run killed before its Commit.
void RemoveLeftoverTemps(const std::string& dir, const std::string& name) {
  const std::string prefix = name + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    std::error_code type_ec;
    if (file.rfind(prefix, 0) == 0 && it->is_regular_file(type_ec)) {
      std::error_code rm_ec;
      fs::remove(it->path(), rm_ec);
    }
  }
}

}  // namespace

Expected<std::unique_ptr<OutputFolder>> OutputFolder::Lock(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InvalidInput(fmt::format("cannot create output folder '{}': {}", dir, ec.message()));
  const std::string lock = dir + "/" + kLockName;
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) {
    return InvalidInput(fmt::format("cannot lock output folder '{}': {}: {}", dir, lock,
                                    std::generic_category().message(errno)));
  }
  int rc = 0;
  while ((rc = ::flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Busy(fmt::format("cannot write to '{}': another fleetplan run is writing there (it holds {}); "
                                      "wait for it to finish or pick another --out",
                                      dir, lock));
    }
    return InvalidInput(fmt::format("cannot lock output folder '{}': {}: {}", dir, lock,
                                    std::generic_category().message(err)));
  }
  return std::unique_ptr<OutputFolder>(new OutputFolder(dir, fd));
}

OutputFolder::~OutputFolder() {
  files_.clear();  // an uncommitted OutputFile removes its temp file
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Expected<OutputFile*> OutputFolder::Add(const std::string& name) {
  FP_ASSERT(!committed_);
  FP_ASSERT(std::none_of(files_.begin(), files_.end(), [&](const auto& f) { return f.first == name; }));
  RemoveLeftoverTemps(dir_, name);
  FP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Open(PathOf(name)));
  files_.emplace_back(name, std::move(file));
  return files_.back().second.get();
}

Status OutputFolder::Commit(const std::vector<std::string>& owned, std::vector<std::string>* removed) {
  FP_ASSERT(!committed_);
  committed_ = true;
  // Every file complete and on disk before the first rename: a failure here leaves the
  // earlier run's files untouched.
  for (auto& [name, file] : files_) FP_RETURN_IF_ERROR(file->Finish());
  for (auto& [name, file] : files_) FP_RETURN_IF_ERROR(file->Publish());
  for (const std::string& name : owned) {
    if (std::any_of(files_.begin(), files_.end(), [&](const auto& f) { return f.first == name; })) continue;
    RemoveLeftoverTemps(dir_, name);
    const std::string path = PathOf(name);
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(path, ec))) continue;
    if (!fs::remove(path, ec) || ec) {
      return InvalidInput(fmt::format("cannot remove '{}' from an earlier run: {}", path, ec.message()));
    }
    removed->push_back(path);
  }
  return Status::Ok();
}

}  // namespace fleetplan
