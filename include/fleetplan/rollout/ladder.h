// The rollout ladder (docs/rollout.md "The ladder"): the stages a candidate climbs —
// zero-traffic warm-up, shadow, 1% canary, 10% canary, promotion — each declaring the
// evidence it needs and its exit criteria, judged at one explicit as-of time.
//
//   LADDER.yaml ─► stages in order; each stage's evidence files (evidence/evidence.h
//   headers) must be of the kind it requires and fresh at --as-of
//     warm-up evidence   data {warmed: true|false, ...}: not warmed holds
//     canary evidence    data {candidate: {file, digest}, baseline: {file, digest}}: the
//                        records of both in the same window, each pinned by its digest;
//                        the stage's metrics are compared per class and pooled (compare.h)
//   simulated evidence (data {simulated: true}: `fleetplan rollout simulate`) holds its
//   stage unless the ladder says accept_simulated: true; then it is judged like measured
//   evidence and the stage's verdict says it was simulated
//   the first stage that does not pass decides: hold there (missing, stale, unwarmed or
//   no-data evidence; strata that disagree), or roll back (a protected metric regressed):
//   traffic to the candidate goes to 0, the baseline revision serves, the candidate's
//   namespace is kept for inspection. Every stage passing promotes.
// A ladder whose shadow (0% traffic) stage leads to promotion without a canary stage
// between them is refused: shadow success cannot promote directly.
// Thread model: pure function of the files; deterministic.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/evidence/trust.h"
#include "fleetplan/rollout/compare.h"

namespace fleetplan {

// Protected quality slices: a task score per slice (higher is better) in the canary
// evidence's data (`quality: {SLICE: {candidate: 0.71, baseline: 0.72}}`) that may not drop
// by more than `tolerance` (relative) in any listed slice; a listed slice the evidence
// lacks holds the stage.
struct QualityGate {
  double tolerance = 0.01;
  std::vector<std::string> slices;
};

struct LadderStage {
  std::string name;
  double traffic = 0;  // share of requests the candidate serves at this stage, [0, 1]
  std::string evidence_kind;  // "warmup", "canary-metrics", or empty (promotion)
  std::string evidence_file;  // resolved against the ladder's folder
  std::vector<MetricPolicy> metrics;  // canary stages: what is compared
  std::optional<QualityGate> quality;
  std::optional<YamlNode> where;
};

struct Ladder {
  std::string display_name;
  std::string dir;
  // The folder every file the ladder names (stage evidence, the records it pins) must lie
  // in, after symbolic links (core/contained_path.h): a plan bundle's folder. Empty: any.
  std::string root;
  std::string digest;
  std::shared_ptr<const YamlDocument> document;
  std::string candidate_revision;
  std::string candidate_namespace;
  std::string baseline_revision;
  // candidate.scenario and baseline.scenario: the two fleets as scenario files (resolved
  // against the ladder's folder; empty when not given), for exercising a rollback
  // (canary/rollback_exercise.h). `where` locates the `candidate` section.
  std::string candidate_scenario;
  std::string baseline_scenario;
  std::optional<YamlNode> candidate_where;
  bool accept_simulated = false;  // judge simulated canary evidence like measured evidence
  // max_age (per evidence kind) and trust (kind -> the public keys that may sign it; a
  // kind listed there needs FILE.sig by one of them): evidence/trust.h.
  EvidenceTrust trust;
  std::vector<LadderStage> stages;
  std::string text;  // the ladder's bytes (its own signature covers them)
};

Expected<Ladder> LoadLadder(const std::string& path);
// `bundle_root`: Ladder::root (a bundle passes its folder; a ladder read alone has none).
Expected<Ladder> LoadLadderText(std::string_view text, std::string display_name, std::string dir,
                                std::string bundle_root = "");

// The ladder is policy: with `policy_key_pem` (what deployment trusts, never read from the
// ladder), LADDER.sig must be a valid `policy` signature by that key, and that key may not
// be one the ladder trusts for any evidence kind (an evidence signer — the candidate's
// pipeline — cannot sign the policy that judges it). Errors: kCheckFailed with the reason.
Status CheckLadderSignature(const Ladder& ladder, const std::string& signature_path, std::string_view policy_key_pem);

// rollout.json: {"decision": "promote" | "hold" | "rollback", "stage", "traffic",
// "reasons": [...], "stages": [...each stage's verdict and evidence...], "rollback": {...}
// when rolling back, "as_of", "ladder": {...}}.
Expected<Json> EvaluateLadder(const Ladder& ladder, UtcTime as_of);

}  // namespace fleetplan
