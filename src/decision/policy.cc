#include "fleetplan/decision/policy.h"

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "decision/sensitivity.h"

namespace fleetplan {
namespace {

const std::vector<std::string> kPolicyKeys = {"version",    "slo",      "attainment", "coverage", "controls",
                                              "capacity",   "simulation", "evidence", "gates",    "sensitivity"};
const std::vector<std::string> kGateNames = {"quantization", "speculation"};
const std::vector<std::string> kDefaultRequiredKinds = {"inventory", "price", "benchmark", "workload"};

Status ReadControls(const YamlNode& node, PolicyControls& out) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys({"tenant_cache_isolation", "max_prompt_retention"}));
  const YamlNode iso = node["tenant_cache_isolation"];
  if (iso.present()) {
    FP_ASSIGN_OR_RETURN(std::string v, iso.AsString());
    if (v != "required" && v != "not-required") {
      return iso.Error(fmt::format("expected required or not-required, got '{}'", v));
    }
    out.tenant_cache_isolation = v == "required";
  }
  if (node["max_prompt_retention"].present()) {
    FP_ASSIGN_OR_RETURN(Duration d, node["max_prompt_retention"].AsDuration());
    out.max_prompt_retention = d;
  }
  return Status::Ok();
}

Status ReadEvidenceRules(const YamlNode& node, const std::string& dir, const std::string& bundle_root, Policy& p) {
  p.required_kinds = kDefaultRequiredKinds;
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys({"required", "max_age", "trust"}));
  if (node["required"].present()) {
    FP_ASSIGN_OR_RETURN(p.required_kinds, node["required"].AsStringList());
  }
  FP_RETURN_IF_ERROR(ReadMaxAges(node["max_age"], p.trust));
  FP_RETURN_IF_ERROR(ReadTrustedKeys(node["trust"], dir, p.trust, bundle_root));
  return Status::Ok();
}

Status ReadGates(const YamlNode& node, Policy& p) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [name, value] : entries) {
    if (std::find(kGateNames.begin(), kGateNames.end(), name) == kGateNames.end()) {
      return value.Error(UnknownNameMessage("plan gate", name, kGateNames));
    }
    p.gates.emplace_back(name, value);
  }
  return Status::Ok();
}

Status ReadSensitivity(const YamlNode& node, Policy& p) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  std::vector<std::string> names;
  for (const PerturbationRow& row : PerturbationRows()) names.emplace_back(row.name);
  for (const auto& [name, value] : entries) {
    const PerturbationRow* row = FindPerturbation(name);
    if (row == nullptr) return value.Error(UnknownNameMessage("perturbation", name, names));
    FP_ASSIGN_OR_RETURN(double size, row->read_size(value));
    p.sensitivity.push_back(SensitivityAsk{name, size, value});
  }
  return Status::Ok();
}

}  // namespace

Expected<Policy> ReadPolicy(std::shared_ptr<const YamlDocument> doc, const std::string& dir,
                            const std::string& bundle_root) {
  Policy p;
  p.document = doc;
  p.file = doc->display_name();
  const YamlNode root = doc->root();
  if (!root.IsMap()) return root.Error("expected a policy mapping (version, slo, attainment, ...): docs/plan.md");
  FP_RETURN_IF_ERROR(root.CheckKeys(kPolicyKeys));
  FP_RETURN_IF_ERROR(root["version"].RequirePresent());
  FP_ASSIGN_OR_RETURN(int64_t version, root["version"].AsInt());
  if (version != 1) return root["version"].Error(fmt::format("unsupported policy version {}; this fleetplan reads version 1", version));
  FP_RETURN_IF_ERROR(root["slo"].RequirePresent());
  p.slo_node = root["slo"];
  FP_ASSIGN_OR_RETURN(p.slo, ParseSlo(root["slo"]));
  FP_RETURN_IF_ERROR(root["attainment"].RequirePresent());
  FP_ASSIGN_OR_RETURN(p.attainment, ReadAttainmentTargets(root["attainment"], p.slo.names(), "the classes of the policy's slo"));
  FP_RETURN_IF_ERROR(root["coverage"].RequirePresent());
  FP_ASSIGN_OR_RETURN(p.coverage, root["coverage"].AsStringList());
  if (p.coverage.empty()) return root["coverage"].Error("expected at least one workload class the evidence must cover");
  FP_RETURN_IF_ERROR(ReadControls(root["controls"], p.controls));
  FP_RETURN_IF_ERROR(root["capacity"].RequirePresent());
  FP_RETURN_IF_ERROR(root["capacity"].CheckKeys({"survive", "headroom", "budget", "verify"}));
  FP_RETURN_IF_ERROR(root["capacity"]["survive"].RequirePresent());
  p.capacity = root["capacity"];
  const YamlNode sim = root["simulation"];
  if (sim.present() && !sim.IsNull()) {
    FP_RETURN_IF_ERROR(sim.CheckKeys({"duration"}));
    if (sim["duration"].present()) {
      FP_ASSIGN_OR_RETURN(p.simulation_duration, sim["duration"].AsPositiveDuration());
    }
  }
  FP_RETURN_IF_ERROR(ReadEvidenceRules(root["evidence"], dir, bundle_root, p));
  FP_RETURN_IF_ERROR(ReadGates(root["gates"], p));
  FP_RETURN_IF_ERROR(ReadSensitivity(root["sensitivity"], p));
  return p;
}

}  // namespace fleetplan
