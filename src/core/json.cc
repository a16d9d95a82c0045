#include "fleetplan/core/json.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/utf8.h"
#include "fleetplan/core/json_keys.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/core/read_log.h"

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

// The fast check: no pointer is built (a report holds tens of thousands of numbers);
// FindUnwritable runs only to locate a failure.
bool Writable(const Json& v) {
  if (v.is_number_float()) return std::isfinite(v.get<double>());
  if (v.is_string()) return utf8::FindInvalid(v.get_ref<const std::string&>()) == std::string_view::npos;
  if (v.is_array()) {
    for (const Json& child : v) {
      if (!Writable(child)) return false;
    }
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      if (utf8::FindInvalid(key) != std::string_view::npos || !Writable(child)) return false;
    }
  }
  return true;
}

Status CheckWritable(const Json& value) {
  if (Writable(value)) return Status::Ok();
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

}  // namespace

Expected<std::string> CanonicalJson(const Json& value) {
  return Dump(value, -1);
}

Expected<std::string> PrettyJson(const Json& value) {
  FP_ASSIGN_OR_RETURN(std::string text, Dump(value, 2));
  text += '\n';
  return text;
}

Expected<std::string> PrettyJsonAtDepth(const Json& value, int depth) {
  FP_ASSERT(depth >= 0);
  FP_ASSIGN_OR_RETURN(std::string text, Dump(value, 2));
  if (depth == 0) return text;
  // A string never holds a raw newline (it is escaped), so every '\n' is nlohmann's own.
  const std::string indent(static_cast<size_t>(2 * depth), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
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
  return WriteOutputFile(path, text);
}

Expected<std::string> ReadFile(const std::string& path) {
  const auto fail = [&](int err) {
    return InvalidInput(fmt::format("cannot read '{}': {}", path, std::generic_category().message(err)));
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
  NoteFileRead(path, text);
  return text;
}

namespace {

// A SAX consumer that accepts every value and stops at a parse error: what the two below
// leave alone.
struct AcceptEverything : nlohmann::json_sax<Json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

// Keeps nothing but where the parse failed.
struct FailureOffset final : AcceptEverything {
  std::size_t offset = 0;
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    offset = position;
    return false;
  }
};

// Stops at the first key given twice in one object.
struct DuplicateKeys final : AcceptEverything {
  std::vector<std::set<std::string>> open;  // the keys of each object being read
  std::optional<std::string> duplicate;
  bool start_object(std::size_t) override {
    open.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!open.back().insert(k).second) {
      duplicate = k;
      return false;
    }
    return true;
  }
  bool end_object() override {
    open.pop_back();
    return true;
  }
};

}  // namespace

std::optional<std::string> FindDuplicateJsonKey(std::string_view text) {
  DuplicateKeys keys;
  Json::sax_parse(text, &keys, nlohmann::detail::input_format_t::json, /*strict=*/false);
  return keys.duplicate;
}

Json ParseJsonText(std::string_view text) {
  try {
    return Json::parse(text);
  } catch (const Json::out_of_range& e) {
    FailureOffset failure;
    Json::sax_parse(text, &failure);
    nlohmann::detail::position_t at;
    at.chars_read_total = std::min(failure.offset, text.size());
    for (std::size_t i = 0; i < at.chars_read_total; ++i) {
      if (text[i] == '\n') {
        ++at.lines_read;
        at.chars_read_current_line = 0;
      } else {
        ++at.chars_read_current_line;
      }
    }
    std::string what = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e999'"
    if (const std::size_t close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    throw Json::parse_error::create(101, at, what, nullptr);
  }
}

}  // namespace fleetplan
