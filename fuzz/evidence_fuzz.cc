// Fuzzes the evidence readers: the header of an evidence file (times, pinned revisions),
// freshness at a fixed as-of time, a signature document checked against a fixed key
// (the input, parsed as JSON, is the signature; its bytes are also the signed file), and
// the rollout ladder reader and walk.
// Any failure must be a located invalid-input error; a verdict must write JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/evidence/signing.h"
#include "fleetplan/rollout/ladder.h"
#include "fuzz_check.h"

namespace {

const fleetplan::KeyPair& Key() {
  static const fleetplan::KeyPair key = [] {
    auto k = fleetplan::GenerateEd25519Key();
    if (!k.ok()) std::abort();
    return *k;
  }();
  return key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto header = fleetplan::ReadEvidenceHeader(text, "evidence.yaml");
  fleetplan::fuzz::CheckFailure(header, "evidence_fuzz");
  if (header.ok()) {
    const auto v = fleetplan::JudgeFreshness(*header, fleetplan::UtcTime{1'800'000'000}, 86'400, "evidence.yaml");
    auto json = fleetplan::CanonicalJson(fleetplan::FreshnessJson(*header, v));
    fleetplan::fuzz::Require(json.ok(), "evidence_fuzz", "verdict does not write", "");
  }
  (void)fleetplan::ParseUtcTime(text);
  // The rollout ladder reader (its evidence files resolve against a folder that does not
  // exist, so a ladder that loads is evaluated to holds, never to a crash), as a bundle
  // reads it: its files kept inside that folder.
  auto ladder = fleetplan::LoadLadderText(text, "ladder.yaml", "/nonexistent-fuzz-dir", "/nonexistent-fuzz-dir");
  fleetplan::fuzz::CheckFailure(ladder, "evidence_fuzz");
  if (ladder.ok()) {
    auto verdict = fleetplan::EvaluateLadder(*ladder, fleetplan::UtcTime{1'800'000'000});
    fleetplan::fuzz::CheckFailure(verdict, "evidence_fuzz");
  }
  auto sig = fleetplan::ParseSignatureDocument(text);
  fleetplan::fuzz::CheckFailure(sig, "evidence_fuzz");
  if (sig.ok()) {
    auto check = fleetplan::VerifyEvidence(text, *sig, Key().public_pem);
    fleetplan::fuzz::CheckFailure(check, "evidence_fuzz");
    if (check.ok()) fleetplan::fuzz::Require(!check->valid, "evidence_fuzz", "a fuzzed signature verified", text);
  }
  return 0;
}
