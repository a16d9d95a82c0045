// Fuzzes the cluster readers of `fleetplan layout` / `place`: the full YAML form and the
// short form ("2x8xh100-sxm-80g"), against the built-in catalog. Any failure must be a
// located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/plan/cluster_file.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const fleetplan::Catalog& catalog = fleetplan::Catalog::Builtin();
  fleetplan::fuzz::CheckFailure(fleetplan::ParseClusterText(text, "fuzz.yaml", catalog), "cluster_fuzz");
  if (size < 256) fleetplan::fuzz::CheckFailure(fleetplan::ParseClusterShortForm(text, catalog), "cluster_fuzz");
  return 0;
}
