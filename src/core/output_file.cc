#include "fleetplan/core/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
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

namespace fleetplan {
namespace {

std::string ErrnoText(int err) {
  return std::generic_category().message(err);
}

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

Expected<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const OutputTarget target, ResolveOutput(path));
  const auto fail = [&](const std::string& why) {
    return InvalidInput(fmt::format("cannot write '{}': {}", path, why));
  };
  int fd = -1;
  std::string temp;
  switch (target.kind) {
    case OutputTarget::Kind::kStdout:
      break;
    case OutputTarget::Kind::kWriteThrough:
      fd = ::open(target.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fd < 0) return fail(ErrnoText(errno));
      break;
    case OutputTarget::Kind::kReplace: {
      const std::filesystem::path parent = std::filesystem::path(target.path).parent_path();
      if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec) return fail(ec.message());
      }
      fd = OpenTemp(target.path, temp);
      if (fd < 0) return fail(ErrnoText(errno));
      break;
    }
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, target, fd, std::move(temp)));
}

OutputFile::OutputFile(std::string path, OutputTarget target, int fd, std::string temp)
    : path_(std::move(path)), target_(std::move(target)), fd_(fd), temp_(std::move(temp)) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

Status OutputFile::Fail(int err) {
  spent_ = true;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  return InvalidInput(fmt::format("cannot write '{}': {}", path_, ErrnoText(err)));
}

Status OutputFile::Flush() {
  if (buffer_.empty()) return Status::Ok();
  if (target_.kind == OutputTarget::Kind::kStdout) {
    std::cout.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
    if (!std::cout) return Fail(EIO);
    return Status::Ok();
  }
  const int err = WriteAll(fd_, buffer_, /*sync=*/false);
  buffer_.clear();
  if (err != 0) return Fail(err);
  return Status::Ok();
}

Status OutputFile::Write(std::string_view text) {
  FP_ASSERT(!spent_ && !finished_);
  constexpr std::size_t kBufferBytes = std::size_t{64} << 10;
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) return Flush();
  return Status::Ok();
}

Status OutputFile::Finish() {
  FP_ASSERT(!spent_ && !finished_);
  FP_RETURN_IF_ERROR(Flush());
  finished_ = true;
  if (target_.kind == OutputTarget::Kind::kStdout) {
    std::cout.flush();
    if (!std::cout) return Fail(EIO);
    return Status::Ok();
  }
  const bool replace = target_.kind == OutputTarget::Kind::kReplace;
  if (replace && ::fsync(fd_) != 0) return Fail(errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return Fail(errno);
  return Status::Ok();
}

Status OutputFile::Publish() {
  FP_ASSERT(!spent_ && finished_);
  spent_ = true;
  if (target_.kind == OutputTarget::Kind::kReplace) {
    if (::rename(temp_.c_str(), target_.path.c_str()) != 0) return Fail(errno);
    temp_.clear();
  }
  return Status::Ok();
}

Status OutputFile::Commit() {
  FP_RETURN_IF_ERROR(Finish());
  return Publish();
}

Status WriteOutputFile(const std::string& path, std::string_view text) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Open(path));
  FP_RETURN_IF_ERROR(file->Write(text));
  return file->Commit();
}

std::string ScratchPathFor(std::string_view purpose) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  return (dir / fmt::format("fleetplan-{}-{}-{}", purpose, ::getpid(), Counter().fetch_add(1))).string();
}

}  // namespace fleetplan
