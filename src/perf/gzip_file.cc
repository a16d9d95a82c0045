#include "perf/gzip_file.h"

#include <zlib.h>

#include <fmt/format.h>

namespace fleetplan::perf_internal {

namespace {
// Chunk size of the gzip reader.
constexpr unsigned kReadChunk = 1u << 16;
}  // namespace

Expected<std::string> ReadMaybeGzip(const std::string& path) {
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

}  // namespace fleetplan::perf_internal
