// The measured tables of this layer (kernel tables, aiconfigurator tables, collective
// tables) are read through these functions, from the file system or from the tables that
// ship inside the binary.
//
// A path that starts with `builtin:` names a file of data/kernels linked into the binary
// (`builtin:aiconfigurator/h100_sxm/gemm/vllm/0.24.0/gemm_perf.csv.gz`); a folder is any
// prefix of such names ending before a '/'. Every other path is the file system's.
// Built-in files are immutable; reading them never touches the disk.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"

namespace fleetplan::perf_internal {

// The prefix of the built-in tables' paths.
inline constexpr std::string_view kBuiltinPrefix = "builtin:";

bool IsBuiltinPath(std::string_view path);

// The file's bytes, decompressed when it is gzip. Errors name the path.
Expected<std::string> ReadMaybeGzip(const std::string& path);

// Whether `path` is a readable regular file / a folder (built-in or on disk).
bool IsTableFile(const std::string& path);
bool IsTableFolder(const std::string& path);

// Every regular file below the folder `dir` (recursively), sorted by path. Errors name
// the folder.
Expected<std::vector<std::string>> TableFilesBelow(const std::string& dir);

}  // namespace fleetplan::perf_internal
