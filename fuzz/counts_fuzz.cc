// Fuzzes the `fleetplan experts` and `fleetplan place` input files: routing counts (the
// plain list and the CSV form) and placement requests (YAML, against a small built-in
// cluster). Any failure must be a located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/experts.h"
#include "fleetplan/plan/placement_report.h"
#include "fuzz_check.h"

namespace {

constexpr const char* kTarget = "counts_fuzz";

const fleetplan::Cluster& SmallCluster() {
  static const fleetplan::Cluster cluster = [] {
    auto c = fleetplan::ParseClusterShortForm("2x2x8xh100-sxm-80g", fleetplan::Catalog::Builtin());
    if (!c.ok()) fleetplan::fuzz::Require(false, kTarget, "the fixture cluster does not load", c.status().message());
    return *c;
  }();
  return cluster;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fleetplan::fuzz::CheckFailure(fleetplan::ParseExpertCounts(text), kTarget);
  fleetplan::fuzz::CheckFailure(fleetplan::ParseExpertCountsCsv(text, "fuzz.csv"), kTarget);
  fleetplan::fuzz::CheckFailure(fleetplan::ParsePlacementText(text, "fuzz.yaml", SmallCluster()), kTarget);
  return 0;
}
