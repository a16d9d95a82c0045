// The inputs step: every bound file with its identity; evidence judged fresh at the as-of
// time and signed as the policy requires; the policy signed by the key deployment trusts.
#include <fmt/format.h>

#include "decision/steps.h"
#include "fleetplan/core/json.h"
#include "fleetplan/evidence/signing.h"

namespace fleetplan::decision {
namespace {

Json FileJson(const BoundFile& f) {
  return Json{{"name", f.name}, {"role", f.role}, {"kind", f.role}, {"revision", f.digest}, {"content_digest", f.digest}};
}

// The policy's own signature: `policy` by the key deployment trusts, which may not sign
// any evidence kind the policy trusts (a candidate pipeline cannot sign its own policy).
GateCheck PolicySignatureCheck(const PlanBundle& b, const std::string& key_pem, Json& entry) {
  const std::string sig_path = b.policy_file.path + ".sig";
  auto sig_text = ReadFile(sig_path);
  if (!sig_text.ok()) {
    return FailCheck("policy", fmt::format("{} is not signed ({} missing) and --policy-key requires it", b.policy_file.name,
                                           sig_path));
  }
  const Expected<Json> sig = ParseSignatureDocument(*sig_text);
  if (!sig.ok()) return FailCheck("policy", fmt::format("{}: {}", sig_path, sig.status().message()));
  auto check = VerifyEvidence(b.policy_file.bytes, *sig, key_pem);
  if (!check.ok()) return FailCheck("policy", fmt::format("{}: {}", sig_path, check.status().message()));
  if (!check->valid) return FailCheck("policy", fmt::format("{}'s signature is not valid: {}", b.policy_file.name, check->reason));
  if (check->kind != "policy") {
    return FailCheck("policy", fmt::format("{} is signed as {} evidence, not as policy", b.policy_file.name, check->kind));
  }
  if (b.policy.trust.Trusts(check->key_id)) {
    return FailCheck("policy", fmt::format("{} is signed by {}, a key the policy trusts to sign evidence: an evidence signer "
                                           "cannot sign the policy that judges it",
                                           b.policy_file.name, check->key_id));
  }
  entry["signed_by"] = check->key_id;
  return PassCheck("policy", fmt::format("{} signed as policy by {}", b.policy_file.name, check->key_id));
}

}  // namespace

GateCheck NotRun(std::string gate, std::string_view because) {
  return HoldCheck(std::move(gate), fmt::format("not run: {}", because));
}

Expected<InputsOutcome> JudgeInputs(const PlanBundle& b, UtcTime as_of, const std::optional<std::string>& policy_key_pem) {
  InputsOutcome out;
  out.inputs.push_back(FileJson(b.bundle_file));
  Json policy = FileJson(b.policy_file);
  if (policy_key_pem) out.checks.push_back(PolicySignatureCheck(b, *policy_key_pem, policy));
  out.inputs.push_back(policy);
  out.inputs.push_back(FileJson(b.deployment));
  int64_t stale = 0;
  for (const BoundFile& f : b.evidence) {
    const EvidenceHeader& h = *f.header;
    const FreshnessVerdict fresh = JudgeFreshness(h, as_of, b.policy.trust.MaxAgeOf(h.kind), f.name);
    Json entry = {{"name", f.name}, {"role", f.role}, {"kind", h.kind}, {"revision", h.revision},
                  {"content_digest", h.content_digest}, {"freshness", FreshnessJson(h, fresh)}};
    if (fresh.state != Freshness::kFresh) {
      ++stale;
      out.checks.push_back(FailCheck("freshness", fresh.reason,
                                     Json{{"input", f.name}, {"kind", h.kind},
                                          {"expires", fresh.expires ? Json(FormatUtcTime(*fresh.expires)) : Json()},
                                          {"as_of", FormatUtcTime(as_of)}}));
    }
    const SignatureVerdict sig = JudgeSignature(b.policy.trust, h.kind, f.bytes, f.path);
    if (!sig.signed_by.empty()) entry["signed_by"] = sig.signed_by;
    if (!sig.trusted) out.checks.push_back(FailCheck("signature", sig.reason, Json{{"input", f.name}, {"kind", h.kind}}));
    out.inputs.push_back(std::move(entry));
  }
  std::vector<std::string> missing;
  for (const std::string& kind : b.policy.required_kinds) {
    if (b.EvidenceOf(kind) == nullptr) missing.push_back(kind);
  }
  if (!missing.empty()) {
    out.checks.push_back(HoldCheck("inputs", fmt::format("the policy requires {} evidence; the bundle binds none",
                                                         fmt::join(missing, ", ")),
                                   Json{{"missing", missing}}));
  } else if (stale == 0) {
    out.checks.push_back(PassCheck("freshness", fmt::format("{} evidence files fresh at {}", b.evidence.size(),
                                                            FormatUtcTime(as_of))));
  }
  return out;
}

}  // namespace fleetplan::decision
