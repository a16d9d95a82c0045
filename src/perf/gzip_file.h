// Reads a whole file that may be gzip-compressed (zlib passes plain files through), for
// the measured-table readers of this layer (kernel tables, collective tables).
#pragma once

#include <string>

#include "fleetplan/core/status.h"

namespace fleetplan::perf_internal {

// The file's bytes, decompressed when it is gzip. Errors name the path.
Expected<std::string> ReadMaybeGzip(const std::string& path);

}  // namespace fleetplan::perf_internal
