// Fuzzes the run-directory readers behind `fleetplan validate`: the input is split at
// lines "----" into meta.json, requests.jsonl, timeseries.csv and sim_cluster_config.json
// (missing parts are missing files), written to a scratch folder and read with
// LoadMeasuredRun; the first part is also read as a calibration file (LoadCalibration).
// Any failure must be a located invalid-input error.
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fleetplan/fleet/fidelity.h"
#include "fuzz_check.h"

namespace {

constexpr const char* kTarget = "run_dir_fuzz";
constexpr std::array<const char*, 4> kFiles = {"meta.json", "requests.jsonl", "timeseries.csv",
                                               "sim_cluster_config.json"};

const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = "/tmp/fleetplan-run-dir-fuzz-" + std::to_string(getpid());
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::error_code ec;
  std::filesystem::remove_all(ScratchDir(), ec);
  std::filesystem::create_directories(ScratchDir(), ec);
  for (const char* name : kFiles) {
    if (rest.empty()) break;
    const size_t cut = rest.find("\n----\n");
    const std::string_view part = rest.substr(0, cut);
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 6);
    std::ofstream out(ScratchDir() / name, std::ios::binary | std::ios::trunc);
    out.write(part.data(), static_cast<std::streamsize>(part.size()));
  }
  fleetplan::fuzz::CheckFailure(fleetplan::LoadMeasuredRun(ScratchDir().string()), kTarget);
  fleetplan::fuzz::CheckFailure(fleetplan::LoadCalibration((ScratchDir() / kFiles[0]).string()), kTarget);
  return 0;
}
