// Fuzzes the user catalog reader (`--catalog FILE`: models, GPUs and links in YAML) on
// top of the built-in catalog, through a scratch file (the reader takes paths). Any
// failure must be a located invalid-input error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "fleetplan/catalog/catalog.h"
#include "fuzz_check.h"

namespace {

const std::string& ScratchPath() {
  static const std::string path = "/tmp/fleetplan-catalog-fuzz-" + std::to_string(getpid()) + ".yaml";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(ScratchPath(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto catalog = fleetplan::Catalog::WithUserFiles({ScratchPath()});
  fleetplan::fuzz::CheckFailure(catalog, "catalog_fuzz");
  return 0;
}
