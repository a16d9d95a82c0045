#include "fleetplan/decision/bundle.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/contained_path.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"

namespace fleetplan {
namespace {

// Reads the file a bundle value names, which must lie inside the bundle's folder `dir`
// (core/contained_path.h); errors are located at the value.
Expected<BoundFile> Bind(const YamlNode& value, const std::string& dir, std::string role) {
  FP_RETURN_IF_ERROR(value.RequirePresent());
  BoundFile f;
  f.role = std::move(role);
  FP_ASSIGN_OR_RETURN(f.name, value.AsString());
  if (f.name.empty()) return value.Error("expected a file name");
  auto path = ResolveInside(dir, dir, f.name);
  if (!path.ok()) return value.Error(path.status().message());
  f.path = std::move(*path);
  if (std::filesystem::path(f.name).is_absolute()) {  // named from the bundle's folder, as printed
    f.name = std::filesystem::path(f.path).lexically_relative(dir.empty() ? "." : dir).generic_string();
  }
  auto bytes = ReadFile(f.path);
  if (!bytes.ok()) return value.Error(bytes.status().message());
  f.bytes = std::move(*bytes);
  f.digest = DigestOf(f.bytes);
  auto doc = YamlDocument::LoadString(f.bytes, f.path);
  if (!doc.ok()) return doc.status();
  f.document = std::make_shared<const YamlDocument>(std::move(*doc));
  return f;
}

Expected<BoundFile> BindEvidence(const YamlNode& value, const std::string& dir, std::string role) {
  FP_ASSIGN_OR_RETURN(BoundFile f, Bind(value, dir, std::move(role)));
  FP_ASSIGN_OR_RETURN(f.header, ReadEvidenceHeader(f.bytes, f.path));
  return f;
}

Status ReadDeployment(const YamlNode& node, const std::string& dir, PlanBundle& b) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"scenario", "controls", "candidates"}));
  b.deployment_scenario = node["scenario"];
  FP_ASSIGN_OR_RETURN(b.deployment, Bind(node["scenario"], dir, "deployment"));
  const YamlNode controls = node["controls"];
  if (controls.present() && !controls.IsNull()) {
    FP_RETURN_IF_ERROR(controls.CheckKeys({"prompt_retention"}));
    if (controls["prompt_retention"].present()) {
      FP_ASSIGN_OR_RETURN(Duration d, controls["prompt_retention"].AsDuration());
      b.prompt_retention = d;
    }
  }
  const YamlNode cands = node["candidates"];
  if (cands.present() && !cands.IsNull()) {
    FP_ASSIGN_OR_RETURN(auto entries, cands.Entries());
    // The gates that take a candidate from the deployment (gates_step.cc).
    static const std::vector<std::string> kCandidateGates = {"quantization"};
    for (const auto& [gate, value] : entries) {
      if (std::find(kCandidateGates.begin(), kCandidateGates.end(), gate) == kCandidateGates.end()) {
        return value.Error(UnknownNameMessage("gate", gate, kCandidateGates) +
                           ": candidates name the candidate a gate judges");
      }
      FP_ASSIGN_OR_RETURN(std::string name, value.AsString());
      b.candidates.emplace_back(gate, name);
    }
  }
  return Status::Ok();
}

}  // namespace

const BoundFile* PlanBundle::EvidenceOf(std::string_view kind) const {
  for (const BoundFile& f : evidence) {
    if (f.header && f.header->kind == kind) return &f;
  }
  return nullptr;
}

std::optional<std::string> PlanBundle::CandidateFor(std::string_view gate) const {
  for (const auto& [g, candidate] : candidates) {
    if (g == gate) return candidate;
  }
  return std::nullopt;
}

Expected<PlanBundle> LoadPlanBundle(const std::string& path) {
  PlanBundle b;
  const ReadLogScope record(b.reads.get());
  b.path = path;
  b.dir = std::filesystem::path(path).parent_path().string();
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, path));
  b.document = std::make_shared<const YamlDocument>(std::move(doc));
  b.bundle_file = BoundFile{"bundle", std::filesystem::path(path).filename().string(), path, text, DigestOf(text), {},
                            b.document};
  const YamlNode root = b.document->root();
  if (!root.IsMap()) return root.Error("expected a plan bundle mapping (version, policy, deployment, evidence): docs/plan.md");
  FP_RETURN_IF_ERROR(root.CheckKeys({"version", "name", "policy", "deployment", "evidence", "rollout"}));
  FP_RETURN_IF_ERROR(root["version"].RequirePresent());
  FP_ASSIGN_OR_RETURN(int64_t version, root["version"].AsInt());
  if (version != 1) return root["version"].Error(fmt::format("unsupported plan version {}; this fleetplan reads version 1", version));
  const std::string stem = std::filesystem::path(path).stem().string();
  FP_ASSIGN_OR_RETURN(b.name, root["name"].StringOr(stem.empty() ? "plan" : stem));
  FP_ASSIGN_OR_RETURN(b.policy_file, Bind(root["policy"], b.dir, "policy"));
  FP_ASSIGN_OR_RETURN(b.policy, ReadPolicy(b.policy_file.document,
                                            std::filesystem::path(b.policy_file.path).parent_path().string(),
                                            b.dir.empty() ? "." : b.dir));
  FP_RETURN_IF_ERROR(ReadDeployment(root["deployment"], b.dir, b));
  FP_RETURN_IF_ERROR(root["evidence"].RequirePresent());
  FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, root["evidence"].Items());
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(BoundFile f, BindEvidence(item, b.dir, "evidence"));
    if (const BoundFile* other = b.EvidenceOf(f.header->kind)) {
      return item.Error(fmt::format("{} and {} are both {} evidence; bind one file per kind", other->name, f.name,
                                    f.header->kind));
    }
    b.evidence.push_back(std::move(f));
  }
  if (root["rollout"].present() && !root["rollout"].IsNull()) {
    FP_ASSIGN_OR_RETURN(BoundFile f, Bind(root["rollout"], b.dir, "rollout"));
    b.rollout = std::move(f);
  }
  return b;
}

}  // namespace fleetplan
