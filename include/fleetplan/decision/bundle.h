// The plan bundle (docs/plan.md "The bundle"): one file that binds the trusted policy, the
// candidate deployment and the evidence a decision rests on, by path; the plan binds each
// by its content digest.
//
//   version: 1
//   name: atlas
//   policy: policy.yaml                  trusted (policy.h); optionally signed as policy
//   deployment:
//     scenario: deployment.yaml          the candidate: a fleetplan scenario
//     controls: {prompt_retention: 168h} what the deployment declares of itself
//     candidates: {quantization: fp8}    which candidate of each gate's evidence is proposed
//   evidence: [inventory.yaml, prices.yaml, ...]   evidence files (evidence/evidence.h)
//   rollout: ladder.yaml                 optional: the rollout ladder (rollout/ladder.h)
//
// Files resolve against the bundle's folder. Every file read while the bundle loads and
// while a plan runs on it (catalogs the deployment names, files its workload names,
// signatures, keys, rounds and records) is recorded in `reads`; the plan lists those it
// did not bind by name among its inputs, so its digest covers every byte it read. A missing or unreadable file, an evidence
// file without a valid header, or two files of one kind are located errors (invalid
// input); whether the evidence is enough is the plan's decision, not a load error.
// Thread model: a value.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetplan/core/read_log.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/decision/policy.h"
#include "fleetplan/evidence/evidence.h"

namespace fleetplan {

// One file the decision is bound to.
struct BoundFile {
  std::string role;  // "policy", "deployment", "evidence", "rollout"
  std::string name;  // as written in the bundle (relative to its folder)
  std::string path;  // as opened
  std::string bytes;
  std::string digest;  // "sha256:..." of the bytes
  std::optional<EvidenceHeader> header;  // evidence files
  std::shared_ptr<const YamlDocument> document;
  YamlNode Data() const { return document->root()["data"]; }
};

struct PlanBundle {
  std::string path;
  std::string dir;
  std::string name;
  std::shared_ptr<const YamlDocument> document;
  BoundFile bundle_file;
  BoundFile policy_file;
  Policy policy;
  BoundFile deployment;
  std::optional<YamlNode> deployment_scenario;  // the bundle's `deployment.scenario` value
  std::optional<Duration> prompt_retention;
  std::vector<std::pair<std::string, std::string>> candidates;  // gate -> candidate name
  std::vector<BoundFile> evidence;
  std::optional<BoundFile> rollout;
  // Every file read loading the bundle and planning on it (shared by copies of the value).
  std::shared_ptr<ReadLog> reads = std::make_shared<ReadLog>();

  const BoundFile* EvidenceOf(std::string_view kind) const;  // null when absent
  std::optional<std::string> CandidateFor(std::string_view gate) const;
};

Expected<PlanBundle> LoadPlanBundle(const std::string& path);

}  // namespace fleetplan
