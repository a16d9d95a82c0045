// Fuzzes the run-directory readers behind `fleetplan validate`: the input is split at
// lines "----" into meta.json, requests.jsonl, timeseries.csv and sim_cluster_config.json
// (missing parts are missing files), written to a scratch folder and read with
// LoadMeasuredRun; the first part is also read as a calibration file (LoadCalibration).
// Any failure must be a located invalid-input error.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/fleet/fidelity.h"
#include "fuzz_check.h"
#include "scratch.h"

namespace {

constexpr const char* kTarget = "run_dir_fuzz";
constexpr std::array<const char*, 4> kFiles = {"meta.json", "requests.jsonl", "timeseries.csv",
                                               "sim_cluster_config.json"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (const char* name : kFiles) {
    if (rest.empty()) {
      fleetplan::fuzz::RemoveScratch(name);  // a missing part is a missing file
      continue;
    }
    const size_t cut = rest.find("\n----\n");
    const std::string_view part = rest.substr(0, cut);
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 6);
    fleetplan::fuzz::WriteScratch(name, part);
  }
  const auto& dir = fleetplan::fuzz::ScratchDir();
  fleetplan::fuzz::CheckFailure(fleetplan::LoadMeasuredRun(dir.string()), kTarget);
  fleetplan::fuzz::CheckFailure(fleetplan::LoadCalibration((dir / kFiles[0]).string()), kTarget);
  return 0;
}
