// Fuzzes the user catalog reader (`--catalog FILE`: models, GPUs and links in YAML) on
// top of the built-in catalog, through a scratch file (the reader takes paths). Any
// failure must be a located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/catalog/catalog.h"
#include "fuzz_check.h"
#include "scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      fleetplan::fuzz::WriteScratch("catalog.yaml", std::string_view(reinterpret_cast<const char*>(data), size));
  auto catalog = fleetplan::Catalog::WithUserFiles({path});
  fleetplan::fuzz::CheckFailure(catalog, "catalog_fuzz");
  return 0;
}
