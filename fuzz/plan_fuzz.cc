// Fuzzes the plan's readers: the input as a plan policy, and as a plan bundle (plan.yaml)
// over the built-in Atlas bundle's files, so a bundle that names them loads them too.
// Any failure must be a located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "fleetplan/core/yaml.h"
#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/decision/policy.h"
#include "fuzz_check.h"

namespace {

const std::string& BundleDir() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::temp_directory_path() / "fleetplan_plan_fuzz").string();
    if (!fleetplan::WriteAtlasBundle(d).ok()) std::abort();
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = fleetplan::YamlDocument::LoadString(text, "policy.yaml");
  fleetplan::fuzz::CheckFailure(doc, "plan_fuzz");
  if (doc.ok()) {
    auto policy = fleetplan::ReadPolicy(std::make_shared<const fleetplan::YamlDocument>(std::move(*doc)), BundleDir());
    fleetplan::fuzz::CheckFailure(policy, "plan_fuzz");
  }
  const std::string path = BundleDir() + "/fuzz-plan.yaml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  auto bundle = fleetplan::LoadPlanBundle(path);
  fleetplan::fuzz::CheckFailure(bundle, "plan_fuzz");
  return 0;
}
