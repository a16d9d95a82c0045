// Fuzzes the cluster readers of `fleetplan layout` / `place`: the full YAML form and the
// short form ("2x8xh100-sxm-80g"), against the built-in catalog, and the layout choice's
// flag readers (`--staging SPEC=FILE`, `--failure-domain`). Any failure must be a located
// invalid-input error; a staging spec that reads has tp, pp, ep >= 1 and a path.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/layout_choice.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const fleetplan::Catalog& catalog = fleetplan::Catalog::Builtin();
  fleetplan::fuzz::CheckFailure(fleetplan::ParseClusterText(text, "fuzz.yaml", catalog), "cluster_fuzz");
  if (size < 256) fleetplan::fuzz::CheckFailure(fleetplan::ParseClusterShortForm(text, catalog), "cluster_fuzz");
  if (size < 256) {
    const fleetplan::Expected<fleetplan::StagingInput> spec = fleetplan::ParseStagingSpec(text);
    fleetplan::fuzz::CheckFailure(spec, "cluster_fuzz");
    if (spec.ok()) {
      fleetplan::fuzz::Require(spec->layout.tp >= 1 && spec->layout.pp >= 1 && spec->layout.ep >= 1 && !spec->path.empty(),
                               "cluster_fuzz", "staging spec read without a layout or path", std::string(text));
    }
    fleetplan::fuzz::CheckFailure(fleetplan::ParseLossDomain(text), "cluster_fuzz");
  }
  return 0;
}
