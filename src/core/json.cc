#include "fleetplan/core/json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "core/utf8.h"

namespace fleetplan {
namespace {

// Appends one JSON-pointer reference token (RFC 6901: "~" -> "~0", "/" -> "~1").
void AppendToken(std::string& pointer, std::string_view token) {
  pointer += '/';
  for (char c : token) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

// What makes `v` unwritable (a non-finite number, invalid UTF-8), with `pointer` left at
// the offending value; nullopt when every value can be written.
std::optional<std::string> FindUnwritable(const Json& v, std::string& pointer) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return "NaN has no JSON form";
    if (std::isinf(d)) return fmt::format("{} has no JSON form", d > 0 ? "Infinity" : "-Infinity");
    return std::nullopt;
  }
  if (v.is_string()) {
    if (utf8::FindInvalid(v.get_ref<const std::string&>()) != std::string_view::npos) {
      return "a string is not valid UTF-8";
    }
    return std::nullopt;
  }
  const std::size_t length = pointer.size();
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      AppendToken(pointer, fmt::format("{}", i));
      if (auto why = FindUnwritable(v[i], pointer)) return why;
      pointer.resize(length);
    }
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      if (utf8::FindInvalid(key) != std::string_view::npos) return "a key is not valid UTF-8";
      AppendToken(pointer, key);
      if (auto why = FindUnwritable(child, pointer)) return why;
      pointer.resize(length);
    }
  }
  return std::nullopt;
}

Status CheckWritable(const Json& value) {
  std::string pointer;
  const std::optional<std::string> why = FindUnwritable(value, pointer);
  if (!why.has_value()) return Status::Ok();
  return InternalError(fmt::format("cannot write JSON: {} (at JSON pointer '{}')", *why, pointer));
}

Expected<std::string> Dump(const Json& value, int indent) {
  FP_RETURN_IF_ERROR(CheckWritable(value));
  try {
    return value.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::strict);
  } catch (const Json::exception& e) {  // unreachable after CheckWritable; kept honest
    return InternalError(fmt::format("cannot write JSON: {}", e.what()));
  }
}

std::string ErrnoText(int err) { return std::generic_category().message(err); }

Status WriteAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return InternalError(ErrnoText(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return InternalError(ErrnoText(errno));
  return Status::Ok();
}

// Opens a fresh temp file next to `path` (O_EXCL, so concurrent writers never share one).
int OpenTemp(const std::string& path, std::string& temp) {
  static std::atomic<uint64_t> counter{0};  // unique names within the process
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter.fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

Expected<std::string> CanonicalJson(const Json& value) { return Dump(value, -1); }

Expected<std::string> PrettyJson(const Json& value) {
  FP_ASSIGN_OR_RETURN(std::string text, Dump(value, 2));
  text += '\n';
  return text;
}

double RoundForReport(double v, int digits) {
  FP_ASSERT(digits >= 1 && digits <= 17);
  if (!std::isfinite(v)) return v;
  if (v == 0.0) return 0.0;  // also turns -0 into 0
  const std::string text = fmt::format("{:.{}e}", v, digits - 1);
  double rounded = 0.0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), rounded);
  // Rounding the largest doubles up can leave the double range ("1.8e+308"): keep v.
  if (result.ec == std::errc::result_out_of_range) return v;
  FP_ASSERT(result.ec == std::errc() && result.ptr == text.data() + text.size());
  return rounded == 0.0 ? 0.0 : rounded;
}

Status WriteFileAtomic(const std::string& path, const std::string& text) {
  const auto fail = [&](std::string_view why) {
    return InvalidInput(fmt::format("cannot write '{}': {}", path, why));
  };
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return fail(ec.message());
  }
  std::string temp;
  const int fd = OpenTemp(path, temp);
  if (fd < 0) return fail(ErrnoText(errno));
  Status written = WriteAll(fd, text);
  if (::close(fd) != 0 && written.ok()) written = InternalError(ErrnoText(errno));
  if (written.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    written = InternalError(ErrnoText(errno));
  }
  if (!written.ok()) {
    ::unlink(temp.c_str());
    return fail(written.message());
  }
  return Status::Ok();
}

Expected<std::string> ReadFile(const std::string& path) {
  const auto fail = [&](int err) {
    return InvalidInput(fmt::format("cannot read '{}': {}", path, ErrnoText(err)));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace fleetplan
