// The gates the policy requires (on the evidence the bundle binds) and the rollout ladder.
#include <filesystem>

#include <fmt/format.h>

#include "decision/steps.h"
#include "fleetplan/core/contained_path.h"
#include "fleetplan/core/json.h"
#include "fleetplan/gates/quantization.h"
#include "fleetplan/gates/speculation.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/rollout/ladder.h"

namespace fleetplan::decision {
namespace {

// The quantization gate: the policy's thresholds over the quality-eval evidence.
Expected<std::pair<Json, GateCheck>> QuantizationGate(const PlanBundle& b, const YamlNode& gate_policy,
                                                       std::vector<std::string>& advancing) {
  const BoundFile* eval = b.EvidenceOf("quality-eval");
  if (eval == nullptr) {
    return std::make_pair(Json(nullptr), HoldCheck("quantization", "the policy requires the quantization gate; the bundle "
                                                                   "binds no quality-eval evidence"));
  }
  const std::optional<std::string> proposed = b.CandidateFor("quantization");
  if (!proposed) {
    return std::make_pair(Json(nullptr), HoldCheck("quantization", "the bundle proposes no quantization candidate "
                                                                   "(deployment.candidates.quantization)"));
  }
  FP_ASSIGN_OR_RETURN(YamlDocument head, YamlDocument::LoadString("{}", eval->name));
  FP_ASSIGN_OR_RETURN(YamlDocument doc,
                      YamlDocument::WithOverrides(head, {{"policy", gate_policy},
                                                         {"baseline", eval->Data()["baseline"]},
                                                         {"candidates", eval->Data()["candidates"]}}));
  FP_ASSIGN_OR_RETURN(QuantSpec spec, ReadQuantSpec(doc.root(), eval->name));
  const QuantGateResult r = RunQuantizationGate(spec, 1);
  Json json = ToJson(r);
  json["proposed"] = *proposed;
  for (const QuantCandidateResult& c : r.candidates) {
    if (c.name != *proposed) continue;
    if (c.decision == GateDecision::kPass) {
      advancing.push_back(fmt::format("{} ({})", c.name, c.method));
      return std::make_pair(json, PassCheck("quantization", fmt::format("{} passes every check: it advances to staging", c.name)));
    }
    for (const GateCheck& k : c.checks) {
      if (k.decision != c.decision) continue;
      GateCheck out = c.decision == GateDecision::kFail ? FailCheck("quantization", fmt::format("{}: {}: {}", c.name, k.name, k.reason), k.numbers)
                                                         : HoldCheck("quantization", fmt::format("{}: {}: {}", c.name, k.name, k.reason), k.numbers);
      return std::make_pair(json, out);
    }
  }
  return std::make_pair(json, HoldCheck("quantization", fmt::format("the evidence has no candidate named '{}'", *proposed)));
}

// The speculation gate: the policy's rules over the speculation-rounds evidence, whose
// data pins the draft's rounds file by digest and gives the ordinary decode time measured
// beside it.
Expected<std::pair<Json, GateCheck>> SpeculationGate(const PlanBundle& b, const YamlNode& gate_policy,
                                                      std::vector<std::string>& advancing) {
  const BoundFile* ev = b.EvidenceOf("speculation-rounds");
  if (ev == nullptr) {
    return std::make_pair(Json(nullptr), HoldCheck("speculation", "the policy requires the speculation gate; the bundle "
                                                                  "binds no speculation-rounds evidence"));
  }
  const YamlNode data = ev->Data();
  FP_RETURN_IF_ERROR(data.CheckKeys({"ordinary", "rounds"}));
  for (const char* key : {"ordinary", "rounds"}) FP_RETURN_IF_ERROR(data[key].RequirePresent());
  FP_RETURN_IF_ERROR(data["rounds"].CheckKeys({"file", "digest"}));
  FP_ASSIGN_OR_RETURN(Duration ordinary, data["ordinary"].AsDuration());
  if (ordinary <= Duration()) return data["ordinary"].Error("expected the ordinary decode time per token, > 0");
  FP_ASSIGN_OR_RETURN(std::string file, data["rounds"]["file"].AsString());
  FP_ASSIGN_OR_RETURN(std::string digest, data["rounds"]["digest"].AsString());
  auto inside = ResolveInside(b.dir, std::filesystem::path(ev->path).parent_path().string(), file);
  if (!inside.ok()) return data["rounds"]["file"].Error(inside.status().message());
  const std::string path = (std::filesystem::path(ev->path).parent_path() / file).string();
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return data["rounds"]["file"].Error(bytes.status().message());
  if (DigestOf(*bytes) != digest) {
    return std::make_pair(Json(nullptr),
                          HoldCheck("speculation", fmt::format("{} is {}, but {} pins {}: the rounds changed after they "
                                                               "were recorded",
                                                               file, DigestOf(*bytes), ev->name, digest)));
  }
  FP_ASSIGN_OR_RETURN(SpecPolicy policy, ReadSpecPolicy(gate_policy));
  FP_ASSIGN_OR_RETURN(SpecRounds rounds, ParseSpecRounds(*bytes, file));
  const SpecGateResult r = RunSpeculationGate({rounds}, ordinary.millis(), policy, 1);
  Json json = ToJson(r);
  const SpecDraftResult& d = r.drafts.front();
  const std::string name = d.identity.artifact.empty() ? file : d.identity.artifact;
  if (d.decision == GateDecision::kPass) {
    advancing.push_back(fmt::format("draft {} (speculation)", name));
    return std::make_pair(json, PassCheck("speculation", fmt::format("draft {}: {}; it advances to staging", name, d.verdict)));
  }
  for (const GateCheck& k : d.checks) {
    if (k.decision != d.decision) continue;
    const std::string reason = fmt::format("draft {}: {}: {}", name, k.name, k.reason);
    return std::make_pair(json, d.decision == GateDecision::kFail ? FailCheck("speculation", reason, k.numbers)
                                                                   : HoldCheck("speculation", reason, k.numbers));
  }
  return std::make_pair(json, HoldCheck("speculation", fmt::format("draft {}: no decision", name)));
}

// Binds the ladder's stage evidence up to the deciding stage, and judges its freshness.
void BindStageEvidence(const PlanBundle& b, const Ladder& l, const Json& walked, UtcTime as_of, Json& inputs,
                       Checks& checks) {
  for (size_t i = 0; i < walked["stages"].size() && i < l.stages.size(); ++i) {
    const LadderStage& s = l.stages[i];
    if (walked["stages"][i]["verdict"] == "not reached") break;
    auto bytes = ReadFile(s.evidence_file);
    if (!bytes.ok()) continue;  // the ladder holds, naming the missing file
    auto h = ReadEvidenceHeader(*bytes, s.evidence_file);
    if (!h.ok()) continue;
    const std::optional<int64_t> max_age = l.trust.MaxAgeOf(h->kind);
    // Named as from the bundle's folder, like the bundle's own files.
    const std::string name =
        std::filesystem::path(s.evidence_file).lexically_relative(b.dir.empty() ? "." : b.dir).generic_string();
    const FreshnessVerdict fresh = JudgeFreshness(*h, as_of, max_age, name);
    inputs.push_back({{"name", name}, {"role", "rollout"}, {"kind", h->kind}, {"revision", h->revision},
                      {"content_digest", h->content_digest}, {"freshness", FreshnessJson(*h, fresh)}});
    if (fresh.state != Freshness::kFresh) {
      checks.push_back(FailCheck("freshness", fresh.reason,
                                 Json{{"input", name}, {"kind", h->kind}, {"stage", s.name},
                                      {"expires", fresh.expires ? Json(FormatUtcTime(*fresh.expires)) : Json()},
                                      {"as_of", FormatUtcTime(as_of)}}));
    }
  }
}

}  // namespace

Expected<GatesOutcome> RunGates(const PlanBundle& b) {
  GatesOutcome out;
  for (const auto& [name, node] : b.policy.gates) {
    // The policy reader admits only these gates.
    FP_ASSIGN_OR_RETURN(auto result, name == "quantization" ? QuantizationGate(b, node, out.advancing)
                                                            : SpeculationGate(b, node, out.advancing));
    out.json[name] = result.first;
    out.checks.push_back(result.second);
  }
  return out;
}

Expected<RolloutOutcome> RunRollout(const PlanBundle& b, UtcTime as_of, const std::optional<std::string>& policy_key_pem,
                                    Json& inputs, Checks& input_checks) {
  RolloutOutcome out;
  out.decision = "none";
  if (!b.rollout) return out;
  const BoundFile& f = *b.rollout;
  FP_ASSIGN_OR_RETURN(Ladder ladder, LoadLadderText(f.bytes, f.path, std::filesystem::path(f.path).parent_path().string(), b.dir.empty() ? "." : b.dir));
  inputs.push_back({{"name", f.name}, {"role", "rollout"}, {"kind", "ladder"}, {"revision", f.digest},
                    {"content_digest", f.digest}});
  if (policy_key_pem) {
    const Status signed_ok = CheckLadderSignature(ladder, f.path + ".sig", *policy_key_pem);
    if (!signed_ok.ok()) input_checks.push_back(FailCheck("policy", fmt::format("{}: {}", f.name, signed_ok.message())));
  }
  FP_ASSIGN_OR_RETURN(out.json, EvaluateLadder(ladder, as_of));
  BindStageEvidence(b, ladder, out.json, as_of, inputs, input_checks);
  out.decision = out.json["decision"].get<std::string>();
  out.stage = out.json["stage"].get<std::string>();
  out.traffic = out.json["traffic"].get<double>();
  const std::string reason =
      out.json["reasons"].empty() ? std::string("every stage passes") : out.json["reasons"].front().get<std::string>();
  const Json numbers = {{"stage", out.stage}, {"traffic", out.traffic}, {"decision", out.decision}};
  if (out.decision == "promote") {
    out.checks.push_back(PassCheck("rollout", fmt::format("every stage passes: promote ({})", reason), numbers));
  } else if (out.decision == "rollback") {
    out.checks.push_back(FailCheck("rollout", fmt::format("roll back at {}: {}", out.stage, reason), numbers));
  } else {
    out.checks.push_back(HoldCheck("rollout", fmt::format("hold at {} ({:g}% traffic): {}", out.stage, out.traffic * 100, reason),
                                   numbers));
  }
  return out;
}

}  // namespace fleetplan::decision
