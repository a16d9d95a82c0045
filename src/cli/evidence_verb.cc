// `fleetplan evidence keygen|sign|verify|check`: Ed25519 keys and signatures of evidence
// files, and an evidence file's freshness at an explicit time (evidence/signing.h,
// evidence/evidence.h; docs/evidence.md). Parses, calls libfleetplan, prints.
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/printable_name.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/evidence/signing.h"

namespace fleetplan::cli {
namespace {

struct EvidenceFlags {
  std::string file;
  std::string key;
  std::string pub;
  std::string sig;
  std::string kind;
  std::string out;
  std::string as_of;
  std::string max_age;
  bool json = false;
};

Status Keygen(const EvidenceFlags& f, std::ostream& out) {
  if (f.out.empty()) return UsageError("evidence keygen: --out KEY is required (KEY and KEY.pub are written)");
  for (const std::string& p : {f.out, f.out + ".pub"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(p, ec))) {
      return UsageError(fmt::format("evidence keygen: '{}' exists; a key is never overwritten", p));
    }
  }
  FP_ASSIGN_OR_RETURN(KeyPair pair, GenerateEd25519Key());
  FP_RETURN_IF_ERROR(WriteKeyPair(pair, f.out));
  FP_ASSIGN_OR_RETURN(std::string id, KeyIdOfPublicPem(pair.public_pem));
  out << fmt::format("key {}: private {} (owner-only), public {}.pub\n", id, f.out, f.out);
  return Status::Ok();
}

Status Sign(const EvidenceFlags& f, std::ostream& out) {
  if (f.key.empty()) return UsageError("evidence sign: --key KEY (a PEM Ed25519 private key) is required");
  FP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(f.file));
  std::string kind = f.kind;
  if (Status printable = CheckPrintableName(kind); !printable.ok()) {
    return UsageError(fmt::format("--kind: {}", printable.message()));
  }
  auto header = ReadEvidenceHeader(bytes, f.file);
  if (!kind.empty() && header.ok() && header->kind != kind) {
    // A signature vouches for the content as one kind: the header's kind is the file's own word.
    return UsageError(fmt::format("--kind {} contradicts {}'s header (evidence.kind: {}); leave --kind out to sign it "
                                  "as {} evidence, or correct the header",
                                  kind, f.file, header->kind, header->kind));
  }
  if (kind.empty()) {
    if (!header.ok()) {
      return InvalidInput(fmt::format("{}\nname the evidence kind with --kind, or give the file an `evidence:` header "
                                      "(docs/evidence.md)",
                                      header.status().message()));
    }
    kind = header->kind;
  }
  FP_ASSIGN_OR_RETURN(std::string pem, ReadFile(f.key));
  FP_ASSIGN_OR_RETURN(Json sig, SignEvidence(bytes, kind, pem));
  FP_ASSIGN_OR_RETURN(std::string text, CanonicalJson(sig));
  const std::string path = f.out.empty() ? f.file + ".sig" : f.out;
  FP_RETURN_IF_ERROR(WriteFileAtomic(path, text + "\n"));
  out << fmt::format("signed {} as {} evidence ({}) with {} -> {}\n", f.file, kind, sig["digest"].get<std::string>(),
                     sig["key_id"].get<std::string>(), path);
  return Status::Ok();
}

Status Verify(const EvidenceFlags& f, std::ostream& out) {
  if (f.pub.empty()) return UsageError("evidence verify: --pub KEY.pub (the trusted public key) is required");
  auto pem = ReadPublicKeyFile(f.pub);
  if (!pem.ok()) return UsageError(fmt::format("--pub: {}", pem.status().message()));
  FP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(f.file));
  const std::string sig_path = f.sig.empty() ? f.file + ".sig" : f.sig;
  FP_ASSIGN_OR_RETURN(std::string sig_text, ReadFile(sig_path));
  auto sig = ParseSignatureDocument(sig_text);
  if (!sig.ok()) return InvalidInput(fmt::format("{}: {}", sig_path, sig.status().message()));
  auto check = VerifyEvidence(bytes, *sig, *pem);
  if (!check.ok()) return InvalidInput(fmt::format("{}: {}", sig_path, check.status().message()));
  if (!check->valid) {
    return Status(StatusCode::kCheckFailed, fmt::format("{}: signature NOT valid: {}", f.file, check->reason));
  }
  out << fmt::format("{}: valid signature by {} as {} evidence\n", f.file, check->key_id, check->kind);
  return Status::Ok();
}

Status Check(const EvidenceFlags& f, std::ostream& out) {
  if (f.as_of.empty()) return UsageError("evidence check: --as-of TIME is required (e.g. 2026-12-01T00:00:00Z)");
  auto as_of = ParseUtcTime(f.as_of);
  if (!as_of.ok()) return UsageError("--as-of: " + as_of.status().message());
  std::optional<int64_t> max_age;
  if (!f.max_age.empty()) {
    auto d = ParseDuration(f.max_age);
    if (!d.ok()) return UsageError("--max-age: " + d.status().message());
    if (*d < Sec(1)) {
      return UsageError(fmt::format("--max-age: expected a maximum age of at least 1s (evidence times are whole "
                                    "seconds), got '{}'",
                                    f.max_age));
    }
    max_age = d->ns() / 1'000'000'000;
  }
  FP_ASSIGN_OR_RETURN(EvidenceHeader h, ReadEvidenceFile(f.file));
  const FreshnessVerdict v = JudgeFreshness(h, *as_of, max_age, f.file);
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(FreshnessJson(h, v)));
    out << text;
  } else {
    out << fmt::format("{}: {} evidence, revision {}, observed {}, {}\n", f.file, h.kind, h.revision,
                       FormatUtcTime(h.observed_at),
                       v.state == Freshness::kFresh
                           ? (v.expires ? "fresh until " + FormatUtcTime(*v.expires) : std::string("fresh (no expiry)"))
                           : std::string(FreshnessName(v.state)));
  }
  if (v.state != Freshness::kFresh) return Status(StatusCode::kCheckFailed, v.reason);
  return Status::Ok();
}

}  // namespace

void RegisterEvidenceVerb(CLI::App& app, VerbAction& action) {
  auto f = std::make_shared<EvidenceFlags>();
  CLI::App* sub = app.add_subcommand(
      "evidence",
      "Sign and verify evidence files with Ed25519, and judge an evidence file's freshness at an explicit time\n"
      "(docs/evidence.md).");
  sub->require_subcommand(1);
  CLI::App* keygen = sub->add_subcommand("keygen", "Write a new Ed25519 key pair: KEY (private, owner-only) and KEY.pub");
  keygen->add_option("--out", f->out, "Private key path (the public key goes to PATH.pub)")->required();
  CLI::App* sign = sub->add_subcommand("sign", "Sign FILE as evidence of its kind; writes FILE.sig (canonical JSON)");
  sign->add_option("file", f->file, "Evidence file")->required();
  sign->add_option("--key", f->key, "PEM Ed25519 private key")->required();
  sign->add_option("--kind", f->kind, "Evidence kind (default: the file's evidence.kind)");
  sign->add_option("--out", f->out, "Signature path (default: FILE.sig)");
  CLI::App* verify = sub->add_subcommand("verify", "Check FILE's signature against a trusted public key (exit 1 when not valid)");
  verify->add_option("file", f->file, "Evidence file")->required();
  verify->add_option("--pub", f->pub, "Trusted PEM Ed25519 public key")->required();
  verify->add_option("--sig", f->sig, "Signature path (default: FILE.sig)");
  CLI::App* check = sub->add_subcommand("check", "Judge FILE's freshness at --as-of (exit 1 when expired or not yet observed)");
  check->add_option("file", f->file, "Evidence file with an `evidence:` header")->required();
  check->add_option("--as-of", f->as_of, "The time freshness is judged at (RFC 3339 UTC)")->required();
  check->add_option("--max-age", f->max_age, "A maximum age (e.g. 720h) as a policy would set it");
  check->add_flag("--json", f->json, "Print the verdict as JSON");
  sub->footer(
      "Exit codes: 0 done / valid / fresh; 1 signature not valid, or evidence expired; 2 usage error;\n"
      "3 unreadable file, key or signature.\n"
      "Examples:\n"
      "  fleetplan evidence keygen --out keys/bench-signer\n"
      "  fleetplan evidence sign examples/atlas/benchmark.yaml --key keys/bench-signer\n"
      "  fleetplan evidence verify examples/atlas/benchmark.yaml --pub keys/bench-signer.pub\n"
      "  fleetplan evidence check examples/atlas/benchmark.yaml --as-of 2026-12-01T00:00:00Z");
  keygen->callback([f, &action] { action = [f](std::ostream& out, std::ostream&) { return Keygen(*f, out); }; });
  sign->callback([f, &action] { action = [f](std::ostream& out, std::ostream&) { return Sign(*f, out); }; });
  verify->callback([f, &action] { action = [f](std::ostream& out, std::ostream&) { return Verify(*f, out); }; });
  check->callback([f, &action] { action = [f](std::ostream& out, std::ostream&) { return Check(*f, out); }; });
}

}  // namespace fleetplan::cli
