#include "fleetplan/evidence/trust.h"

#include <filesystem>

#include <fmt/format.h>

#include "fleetplan/core/contained_path.h"
#include "fleetplan/core/json.h"
#include "fleetplan/evidence/signing.h"

namespace fleetplan {

std::optional<int64_t> EvidenceTrust::MaxAgeOf(std::string_view kind) const {
  for (const auto& [k, age] : max_age_s) {
    if (k == kind) return age;
  }
  return std::nullopt;
}

const std::vector<TrustedKey>* EvidenceTrust::KeysOf(std::string_view kind) const {
  for (const auto& [k, list] : keys) {
    if (k == kind) return &list;
  }
  return nullptr;
}

bool EvidenceTrust::Trusts(std::string_view key_id) const {
  for (const auto& [kind, list] : keys) {
    for (const TrustedKey& k : list) {
      if (k.key_id == key_id) return true;
    }
  }
  return false;
}

Status ReadTrustedKeys(const YamlNode& node, const std::string& dir, EvidenceTrust& out, const std::string& root) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [kind, value] : entries) {
    FP_ASSIGN_OR_RETURN(std::vector<std::string> files, value.AsStringList());
    if (files.empty()) return value.Error("expected at least one public key file");
    std::vector<TrustedKey> list;
    for (const std::string& f : files) {
      if (!root.empty()) {
        auto inside = ResolveInside(root, dir, f);
        if (!inside.ok()) return value.Error(inside.status().message());
      }
      const std::string path =
          std::filesystem::path(f).is_absolute() || dir.empty() ? f : (std::filesystem::path(dir) / f).string();
      auto pem = ReadFile(path);
      if (!pem.ok()) return value.Error(pem.status().message());
      auto id = KeyIdOfPublicPem(*pem);
      if (!id.ok()) return value.Error(fmt::format("{}: {}", f, id.status().message()));
      list.push_back(TrustedKey{f, *pem, *id});
    }
    out.keys.emplace_back(kind, std::move(list));
  }
  return Status::Ok();
}

Status ReadMaxAges(const YamlNode& node, EvidenceTrust& out) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [kind, value] : entries) {
    FP_ASSIGN_OR_RETURN(Duration age, value.AsDuration());
    if (age < Sec(1)) {
      return value.Error("expected a maximum age of at least 1s (evidence times are whole seconds)");
    }
    out.max_age_s.emplace_back(kind, age.ns() / 1'000'000'000);
  }
  return Status::Ok();
}

SignatureVerdict JudgeSignature(const EvidenceTrust& trust, std::string_view kind, std::string_view bytes,
                                const std::string& path) {
  SignatureVerdict v;
  const std::vector<TrustedKey>* keys = trust.KeysOf(kind);
  if (keys == nullptr) return v;
  v.trusted = false;
  const std::string sig_path = path + ".sig";
  auto sig_text = ReadFile(sig_path);
  if (!sig_text.ok()) {
    v.reason = fmt::format("{} is not signed ({} missing); {} evidence must be signed by {}", path, sig_path, kind,
                           keys->front().file);
    return v;
  }
  const Expected<Json> sig = ParseSignatureDocument(*sig_text);
  std::string why = sig.ok() ? std::string() : sig.status().message();
  for (const TrustedKey& k : *keys) {
    if (!sig.ok()) break;
    auto check = VerifyEvidence(bytes, *sig, k.pem);
    if (!check.ok()) {
      why = check.status().message();
      break;
    }
    if (check->valid && check->kind == kind) {
      v.trusted = true;
      v.signed_by = check->key_id;
      return v;
    }
    why = check->valid ? fmt::format("signed as {} evidence", check->kind) : check->reason;
  }
  v.reason = fmt::format("{}'s signature is not trusted for {} evidence: {}", path, kind, why);
  return v;
}

}  // namespace fleetplan
