#include "fleetplan/core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

namespace fleetplan {
namespace {

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// Writes all of `text`; fsyncs when `sync` (regular files only: a FIFO or a device
// cannot be synced). Returns the errno of the failure, 0 on success.
int WriteAll(int fd, std::string_view text, bool sync) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) return errno;
  return 0;
}

std::atomic<uint64_t>& Counter() {
  static std::atomic<uint64_t> counter{0};  // unique names within the process
  return counter;
}

// Opens a fresh temp file next to `path` (O_EXCL, so concurrent writers never share one).
int OpenTemp(const std::string& path, std::string& temp) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), Counter().fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

int WriteThrough(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  int err = WriteAll(fd, text, /*sync=*/false);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

int Replace(const std::string& path, std::string_view text) {
  std::string temp;
  const int fd = OpenTemp(path, temp);
  if (fd < 0) return errno;
  int err = WriteAll(fd, text, /*sync=*/true);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) ::unlink(temp.c_str());
  return err;
}

}  // namespace

Expected<OutputTarget> ResolveOutput(const std::string& path) {
  if (path == "-") return OutputTarget{OutputTarget::Kind::kStdout, path};
  OutputTarget target{OutputTarget::Kind::kReplace, path};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) {
      target.path = resolved;
    } else {
      // A dangling link: writing through it creates its target.
      target.kind = OutputTarget::Kind::kWriteThrough;
      return target;
    }
  }
  if (::stat(target.path.c_str(), &st) != 0) return target;  // a new file
  if (S_ISDIR(st.st_mode)) return InvalidInput(fmt::format("cannot write '{}': Is a directory", path));
  if (!S_ISREG(st.st_mode)) target.kind = OutputTarget::Kind::kWriteThrough;
  return target;
}

Status WriteOutputFile(const std::string& path, std::string_view text) {
  FP_ASSIGN_OR_RETURN(const OutputTarget target, ResolveOutput(path));
  int err = 0;
  switch (target.kind) {
    case OutputTarget::Kind::kStdout:
      std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
      std::cout.flush();
      if (!std::cout) err = EIO;
      break;
    case OutputTarget::Kind::kWriteThrough:
      err = WriteThrough(target.path, text);
      break;
    case OutputTarget::Kind::kReplace: {
      const std::filesystem::path parent = std::filesystem::path(target.path).parent_path();
      if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec) return InvalidInput(fmt::format("cannot write '{}': {}", path, ec.message()));
      }
      err = Replace(target.path, text);
      break;
    }
  }
  if (err != 0) return InvalidInput(fmt::format("cannot write '{}': {}", path, ErrnoText(err)));
  return Status::Ok();
}

std::string ScratchPathFor(std::string_view purpose) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  return (dir / fmt::format("fleetplan-{}-{}-{}", purpose, ::getpid(), Counter().fetch_add(1))).string();
}

}  // namespace fleetplan
