#include "perf/gzip_file.h"

#include <zlib.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <span>
#include <utility>

namespace fleetplan {
// The files of data/kernels, linked in by the build (cmake/embed_incbin.cmake), sorted by
// name, each named kBuiltinPrefix + its path below data/kernels.
std::span<const std::pair<std::string_view, std::string_view>> BuiltinKernelFiles();
}  // namespace fleetplan

namespace fleetplan::perf_internal {

namespace {

// Chunk size of the gzip readers.
constexpr unsigned kReadChunk = 1u << 16;
// zlib's window bits plus 32: detect a gzip or zlib header (and so inflate gzip).
constexpr int kAutoDetectHeader = 15 + 32;

std::optional<std::string_view> BuiltinFile(std::string_view path) {
  const auto files = BuiltinKernelFiles();
  const auto it = std::lower_bound(files.begin(), files.end(), path,
                                   [](const auto& entry, std::string_view p) { return entry.first < p; });
  if (it == files.end() || it->first != path) return std::nullopt;
  return it->second;
}

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

Expected<std::string> InflateGzip(std::string_view bytes, const std::string& path) {
  z_stream z{};
  if (inflateInit2(&z, kAutoDetectHeader) != Z_OK) return InvalidInput(fmt::format("{}: cannot inflate", path));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  std::string buf(kReadChunk, '\0');
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = kReadChunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return InvalidInput(fmt::format("{}: read error (corrupt gzip data?)", path));
    }
    out.append(buf.data(), kReadChunk - z.avail_out);
  }
  inflateEnd(&z);
  return out;
}

Expected<std::string> ReadFromDisk(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return InvalidInput(fmt::format("{}: cannot open", path));
  std::string out;
  std::string buf(kReadChunk, '\0');
  while (true) {
    const int n = gzread(f, buf.data(), kReadChunk);
    if (n < 0) {
      gzclose(f);
      return InvalidInput(fmt::format("{}: read error (corrupt gzip data?)", path));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

// The built-in folder `dir` with one trailing '/'.
std::string FolderPrefix(std::string_view dir) {
  std::string prefix(dir);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  prefix.push_back('/');
  return prefix;
}

}  // namespace

bool IsBuiltinPath(std::string_view path) { return path.starts_with(kBuiltinPrefix); }

Expected<std::string> ReadMaybeGzip(const std::string& path) {
  if (!IsBuiltinPath(path)) return ReadFromDisk(path);
  const std::optional<std::string_view> bytes = BuiltinFile(path);
  if (!bytes) return InvalidInput(fmt::format("{}: no such built-in table", path));
  if (IsGzip(*bytes)) return InflateGzip(*bytes, path);
  return std::string(*bytes);
}

bool IsTableFile(const std::string& path) {
  if (IsBuiltinPath(path)) return BuiltinFile(path).has_value();
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

bool IsTableFolder(const std::string& path) {
  if (!IsBuiltinPath(path)) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
  }
  const std::string prefix = FolderPrefix(path);
  return std::any_of(BuiltinKernelFiles().begin(), BuiltinKernelFiles().end(),
                     [&](const auto& entry) { return entry.first.starts_with(prefix); });
}

Expected<std::vector<std::string>> TableFilesBelow(const std::string& dir) {
  std::vector<std::string> out;
  if (IsBuiltinPath(dir)) {
    const std::string prefix = FolderPrefix(dir);
    for (const auto& [name, bytes] : BuiltinKernelFiles()) {
      if (name.starts_with(prefix)) out.emplace_back(name);
    }
    return out;
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) out.push_back(e.path().string());
  }
  if (ec) return InvalidInput(fmt::format("{}: cannot list: {}", dir, ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fleetplan::perf_internal
