// Scratch files for the targets whose readers take paths (catalog, records, run
// directories). They live in one folder per fuzzer process on a RAM filesystem where the
// machine has one (/dev/shm), else in the system's temporary folder: on an ext4 /tmp,
// the mkdir and file creations of every run were about a fifth of run_dir_fuzz's time.
// The folder is removed when the fuzzer exits normally (not when it is interrupted or
// crashes: libFuzzer then leaves with _Exit).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace fleetplan::fuzz {

inline void RemoveScratchDir();

inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
    std::filesystem::path d = base / ("fleetplan-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d, ec);
    return d;
  }();
  // Registered once `dir` is built, so it runs at exit before `dir` is destroyed.
  [[maybe_unused]] static const bool removed_at_exit = std::atexit(RemoveScratchDir) == 0;
  return dir;
}

inline void RemoveScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(ScratchDir(), ec);
}

// Writes `bytes` as file `name` of the scratch folder (replacing it) and returns its path.
inline std::string WriteScratch(const std::string& name, std::string_view bytes) {
  std::string path = (ScratchDir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Removes file `name` of the scratch folder if it is there.
inline void RemoveScratch(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(ScratchDir() / name, ec);
}

}  // namespace fleetplan::fuzz
