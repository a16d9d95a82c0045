// Fuzzes the gate input readers: the first input byte picks the reader, the rest is its
// text. Speculation rounds (JSONL) go through ParseSpecRounds and, when they load, the
// whole gate (analysis, policy rules, the paired comparison against themselves); the
// YAML inputs (speculation policy, kernel, graphs) through their readers and, when they
// load, their gates (the kernel's workload level is left out: its scenario file does not
// exist here, so the reader reports it as a located error). Any failure must be a located
// invalid-input error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/core/yaml.h"
#include "fleetplan/gates/graphs.h"
#include "fleetplan/gates/kernel.h"
#include "fleetplan/gates/speculation.h"
#include "fuzz_check.h"

namespace {

constexpr const char* kTarget = "gates_fuzz";

void FuzzRounds(std::string_view text) {
  auto rounds = fleetplan::ParseSpecRounds(text, "rounds.jsonl");
  fleetplan::fuzz::CheckFailure(rounds, kTarget);
  if (!rounds.ok()) return;
  const fleetplan::SpecGateResult r =
      fleetplan::RunSpeculationGate({*rounds, *rounds}, 8.0, fleetplan::SpecPolicy{}, 1);
  fleetplan::fuzz::CheckFailure(fleetplan::CanonicalJson(fleetplan::ToJson(r)), kTarget);
}

template <typename Read, typename Gate>
void FuzzYaml(std::string_view text, Read read, Gate gate) {
  auto doc = fleetplan::YamlDocument::LoadString(text, "gate.yaml");
  fleetplan::fuzz::CheckFailure(doc, kTarget);
  if (!doc.ok()) return;
  auto spec = read(doc->root());
  fleetplan::fuzz::CheckFailure(spec, kTarget);
  if (spec.ok()) gate(*spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      FuzzRounds(text);
      break;
    case 1:
      FuzzYaml(text, [](const fleetplan::YamlNode& n) { return fleetplan::ReadSpecPolicy(n); },
               [](const fleetplan::SpecPolicy&) {});
      break;
    case 2:
      FuzzYaml(text,
               [](const fleetplan::YamlNode& n) {
                 return fleetplan::ReadKernelSpec(n, "kernel.yaml", "/nonexistent-fleetplan-fuzz-dir");
               },
               [](const fleetplan::KernelSpec& s) {
                 const auto r = fleetplan::RunKernelGate(s);
                 fleetplan::fuzz::CheckFailure(fleetplan::CanonicalJson(fleetplan::ToJson(r)), kTarget);
               });
      break;
    default:
      FuzzYaml(text, [](const fleetplan::YamlNode& n) { return fleetplan::ReadGraphsSpec(n, "graphs.yaml"); },
               [](const fleetplan::GraphsSpec& s) {
                 const auto r = fleetplan::RunGraphsGate(s);
                 fleetplan::fuzz::CheckFailure(fleetplan::CanonicalJson(fleetplan::ToJson(r)), kTarget);
               });
      break;
  }
  return 0;
}
