#include "fleetplan/sweep/spool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <system_error>

#include "fleetplan/core/output_file.h"

namespace fleetplan {

Expected<std::unique_ptr<JsonSpool>> JsonSpool::Create(int64_t slots) {
  FP_ASSERT(slots >= 0);
  const std::string path = ScratchPathFor("sweep-spool");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return InvalidInput(
        fmt::format("cannot create the sweep's scratch file '{}': {}", path, std::generic_category().message(errno)));
  }
  ::unlink(path.c_str());  // the file lives as long as the descriptor
  try {
    return std::unique_ptr<JsonSpool>(new JsonSpool(fd, slots));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return InvalidInput(fmt::format("a sweep of {} points does not fit in memory (12 bytes per point)", slots));
  }
}

JsonSpool::JsonSpool(int fd, int64_t slots)
    : fd_(fd), offset_(static_cast<size_t>(slots), -1), length_(static_cast<size_t>(slots), 0) {}

JsonSpool::~JsonSpool() {
  if (fd_ >= 0) ::close(fd_);
}

bool JsonSpool::Has(int64_t slot) const {
  return slot >= 0 && slot < slots() && offset_[static_cast<size_t>(slot)] >= 0;
}

Status JsonSpool::Put(int64_t slot, const Json& value) {
  FP_ASSIGN_OR_RETURN(const std::string text, CanonicalJson(value));
  return PutText(slot, text);
}

Status JsonSpool::PutText(int64_t slot, std::string_view canonical) {
  if (canonical.size() > std::numeric_limits<uint32_t>::max()) {
    return InternalError(fmt::format("slot {}: a value of {} bytes is too large to spool", slot, canonical.size()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (slot < 0 || slot >= slots())
    return InternalError(fmt::format("slot {} is outside the spool's {}", slot, slots()));
  if (offset_[static_cast<size_t>(slot)] >= 0) return InternalError(fmt::format("slot {} is written twice", slot));
  size_t done = 0;
  while (done < canonical.size()) {
    const ssize_t n = ::pwrite(fd_, canonical.data() + done, canonical.size() - done,
                               static_cast<off_t>(end_ + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return InvalidInput(
          fmt::format("cannot write the sweep's scratch file: {}", std::generic_category().message(errno)));
    }
    done += static_cast<size_t>(n);
  }
  offset_[static_cast<size_t>(slot)] = end_;
  length_[static_cast<size_t>(slot)] = static_cast<uint32_t>(canonical.size());
  end_ += static_cast<int64_t>(canonical.size());
  ++written_;
  return Status::Ok();
}

Expected<Json> JsonSpool::Get(int64_t slot) const {
  FP_ASSERT(Has(slot));
  const auto i = static_cast<size_t>(slot);
  std::string text(length_[i], '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd_, text.data() + done, text.size() - done,
                              static_cast<off_t>(offset_[i] + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return InvalidInput(fmt::format("cannot read the sweep's scratch file: {}",
                                      n == 0 ? "it is shorter than written" : std::generic_category().message(errno)));
    }
    done += static_cast<size_t>(n);
  }
  return Json::parse(text);
}

}  // namespace fleetplan
