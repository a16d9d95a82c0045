// Fuzzes the plan's readers: the input as a plan policy, and as a plan bundle (plan.yaml)
// over the built-in Atlas bundle's files, so a bundle that names them loads them too.
// Any failure must be a located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fleetplan/core/yaml.h"
#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/decision/policy.h"
#include "fuzz_check.h"
#include "scratch.h"

namespace {

// The Atlas bundle, written once into this process's scratch folder.
const std::string& BundleDir() {
  static const std::string dir = [] {
    const std::string d = (fleetplan::fuzz::ScratchDir() / "atlas").string();
    if (!fleetplan::WriteAtlasBundle(d).ok()) std::abort();
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& bundle_dir = BundleDir();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = fleetplan::YamlDocument::LoadString(text, "policy.yaml");
  fleetplan::fuzz::CheckFailure(doc, "plan_fuzz");
  if (doc.ok()) {
    auto policy = fleetplan::ReadPolicy(std::make_shared<const fleetplan::YamlDocument>(std::move(*doc)), bundle_dir);
    fleetplan::fuzz::CheckFailure(policy, "plan_fuzz");
  }
  // Beside the Atlas files, so that a plan naming them loads them.
  const std::string path = fleetplan::fuzz::WriteScratch("atlas/fuzz-plan.yaml", text);
  auto bundle = fleetplan::LoadPlanBundle(path);
  fleetplan::fuzz::CheckFailure(bundle, "plan_fuzz");
  return 0;
}
