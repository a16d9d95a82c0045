// Evidence: UTC times, headers with pinned revisions, freshness at an explicit time, and
// Ed25519 signatures that bind content and kind to a trusted key.
#include "fleetplan/evidence/evidence.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/evidence/signing.h"

namespace fleetplan {
namespace {

TEST(UtcTime, ParsesRfc3339AndFormatsBackInUtc) {
  auto t = ParseUtcTime("2026-11-20T10:00:00Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->seconds, 1795168800);  // date -u -d 2026-11-20T10:00:00Z +%s
  EXPECT_EQ(FormatUtcTime(*t), "2026-11-20T10:00:00Z");
  auto offset = ParseUtcTime("2026-11-20T12:30:00+02:30");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->seconds, t->seconds);
  auto leap = ParseUtcTime("2028-02-29T23:59:59Z");
  ASSERT_TRUE(leap.ok());
  EXPECT_EQ(FormatUtcTime(*leap), "2028-02-29T23:59:59Z");
  EXPECT_EQ(FormatUtcTime(UtcTime{0}), "1970-01-01T00:00:00Z");
  for (const char* bad : {"2026-02-29T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20 10:00:00Z", "2026-11-20T10:00:00",
                          "1969-12-31T23:59:59Z", "2026-13-01T00:00:00Z", "2026-11-20T10:00:00+2:00"}) {
    auto r = ParseUtcTime(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), std::string("expected a UTC time such as 2026-11-20T10:00:00Z, got '") + bad + "'");
  }
  // B9: the two RFC 3339 forms not read say so.
  auto fraction = ParseUtcTime("2026-11-24T09:00:00.5Z");
  ASSERT_FALSE(fraction.ok());
  EXPECT_EQ(fraction.status().message(), "fractional seconds are not read: evidence times are whole seconds, such as "
                                         "2026-11-20T10:00:00Z, got '2026-11-24T09:00:00.5Z'");
  auto leap_second = ParseUtcTime("2016-12-31T23:59:60Z");
  ASSERT_FALSE(leap_second.ok());
  EXPECT_EQ(leap_second.status().message(),
            "a leap second (:60) is not read: write :59 or the next minute, got '2016-12-31T23:59:60Z'");
}

constexpr std::string_view kBench = R"(evidence:
  kind: benchmark
  observed_at: 2026-11-20T10:00:00Z
  expires_at: 2026-12-20T10:00:00Z
  source: vllm bench serve, pool a
data: {rate: 2.4/s}
)";

TEST(EvidenceHeader, ReadsKindTimesAndTheContentDigestAsRevision) {
  auto h = ReadEvidenceHeader(kBench, "bench.yaml");
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->kind, "benchmark");
  EXPECT_EQ(h->revision, DigestOf(kBench));
  EXPECT_EQ(h->content_digest, DigestOf(kBench));
  EXPECT_EQ(FormatUtcTime(h->observed_at), "2026-11-20T10:00:00Z");
  ASSERT_TRUE(h->expires_at.has_value());
  EXPECT_EQ(h->source, "vllm bench serve, pool a");
}

std::string FirstLine(const Status& s) { return s.message().substr(0, s.message().find('\n')); }

// Regression: a kind with BEL and a newline was printed as is and stored in the signature.
TEST(EvidenceHeader, AKindWithAControlCharacterIsALocatedError) {
  std::string text(kBench);
  text.replace(text.find("kind: benchmark"), 15, "kind: \"bench\\amark\"");
  EXPECT_EQ(FirstLine(ReadEvidenceHeader(text, "bench.yaml").status()),
            "bench.yaml:2:9: evidence.kind: contains the control character U+0007 at byte 5: names are printed, so "
            "control and bidirectional-formatting characters are refused");
}

TEST(EvidenceHeader, APinnedRevisionMustBeTheContentAndTimesAreLocated) {
  std::string pinned(kBench);
  pinned.insert(pinned.find("  observed_at"), "  revision: bench-2026-11@sha256:" + std::string(64, '0') + "\n");
  auto h = ReadEvidenceHeader(pinned, "bench.yaml");
  ASSERT_FALSE(h.ok());
  std::string unpinned(kBench);
  unpinned.insert(unpinned.find("  observed_at"), "  revision: bench-2026-11\n");
  EXPECT_EQ(FirstLine(h.status()), "bench.yaml:3:13: evidence.revision: revision pins sha256:" + std::string(64, '0') +
                                       " but the file without its pin ('@sha256:" + std::string(64, '0') + "') is " +
                                       DigestOf(unpinned) + ": pin the digest of the file as it is without the pin");
  std::string backwards(kBench);
  backwards.replace(backwards.find("2026-12-20"), 10, "2026-11-01");
  EXPECT_EQ(FirstLine(ReadEvidenceHeader(backwards, "bench.yaml").status()),
            "bench.yaml:4:15: evidence.expires_at: expected a time after observed_at (2026-11-20T10:00:00Z)");
  EXPECT_EQ(FirstLine(ReadEvidenceHeader("evidence: {kind: price, source: x}\n", "p.yaml").status()),
            "p.yaml:1:11: evidence: missing required field 'observed_at'");
}

// A file cannot hold its own digest: a revision pins the file as it is without the pin, so
// hashing the file and then appending `@<digest>` gives a revision that verifies.
TEST(EvidenceHeader, ARevisionPinsTheFileAsItIsWithoutThePin) {
  std::string named(kBench);
  named.insert(named.find("  observed_at"), "  revision: bench-2026-11\n");
  const std::string digest = DigestOf(named);
  std::string pinned = named;
  pinned.insert(pinned.find("bench-2026-11") + std::string("bench-2026-11").size(), "@" + digest);
  auto h = ReadEvidenceHeader(pinned, "bench.yaml");
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->revision, "bench-2026-11@" + digest);
  EXPECT_EQ(h->content_digest, DigestOf(pinned));
  // One byte changed anywhere else and the pin no longer holds.
  std::string changed = pinned;
  changed.replace(changed.find("kind: benchmark"), 15, "kind: benchmarx");
  EXPECT_FALSE(ReadEvidenceHeader(changed, "bench.yaml").ok());
}

// Regression: a named revision that pins no digest was accepted and printed as the revision.
TEST(EvidenceHeader, ANamedRevisionWithoutADigestIsALocatedError) {
  std::string named(kBench);
  named.insert(named.find("  observed_at"), "  revision: 'bench-2026-11'\n");
  EXPECT_EQ(FirstLine(ReadEvidenceHeader(named, "bench.yaml").status()),
            "bench.yaml:3:13: evidence.revision: a named revision must end in the digest it pins, such as "
            "'bench-2026-11@sha256:<64 hex digits>', got 'bench-2026-11'; without a revision, the revision is the "
            "content digest");
}

TEST(EvidenceFreshness, JudgedAtTheAsOfTimeByTheEarlierOfExpiryAndMaximumAge) {
  auto h = ReadEvidenceHeader(kBench, "bench.yaml");
  ASSERT_TRUE(h.ok());
  const UtcTime dec1 = *ParseUtcTime("2026-12-01T00:00:00Z");
  EXPECT_EQ(JudgeFreshness(*h, dec1, std::nullopt, "bench.yaml").state, Freshness::kFresh);
  const FreshnessVerdict late = JudgeFreshness(*h, *ParseUtcTime("2026-12-21T00:00:00Z"), std::nullopt, "bench.yaml");
  EXPECT_EQ(late.state, Freshness::kExpired);
  EXPECT_EQ(late.reason, "bench.yaml (benchmark) expired at 2026-12-20T10:00:00Z (its expires_at), before the as-of time "
                         "2026-12-21T00:00:00Z");
  // A policy's maximum age of 7 days ends it earlier than its own expiry.
  const FreshnessVerdict aged = JudgeFreshness(*h, dec1, 7 * 86400, "bench.yaml");
  EXPECT_EQ(aged.state, Freshness::kExpired);
  EXPECT_EQ(FormatUtcTime(*aged.expires), "2026-11-27T10:00:00Z");
  EXPECT_NE(aged.reason.find("the policy's maximum age"), std::string::npos);
  EXPECT_EQ(JudgeFreshness(*h, *ParseUtcTime("2026-11-01T00:00:00Z"), std::nullopt, "b").state, Freshness::kNotYetObserved);
}

TEST(EvidenceSigning, ASignatureBindsContentAndKindToOneKey) {
  auto signer = GenerateEd25519Key();
  auto other = GenerateEd25519Key();
  ASSERT_TRUE(signer.ok() && other.ok());
  auto sig = SignEvidence(kBench, "benchmark", signer->private_pem);
  ASSERT_TRUE(sig.ok()) << sig.status().message();
  EXPECT_EQ((*sig)["digest"], DigestOf(kBench));
  EXPECT_EQ((*sig)["key_id"], *KeyIdOfPublicPem(signer->public_pem));
  // Deterministic: the same key signs the same statement with the same bytes.
  EXPECT_EQ(*sig, *SignEvidence(kBench, "benchmark", signer->private_pem));

  auto ok = VerifyEvidence(kBench, *sig, signer->public_pem);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->valid) << ok->reason;
  // One byte changed in the file.
  std::string changed(kBench);
  changed[changed.find("2.4")] = '9';
  auto edited = VerifyEvidence(changed, *sig, signer->public_pem);
  ASSERT_TRUE(edited.ok());
  EXPECT_FALSE(edited->valid);
  EXPECT_NE(edited->reason.find("the file changed after it was signed"), std::string::npos);
  // Another key is not trusted for it.
  auto untrusted = VerifyEvidence(kBench, *sig, other->public_pem);
  ASSERT_TRUE(untrusted.ok());
  EXPECT_FALSE(untrusted->valid);
  EXPECT_NE(untrusted->reason.find("not by the trusted key"), std::string::npos);
  // The kind is part of the statement: relabelling benchmark evidence as policy fails.
  Json relabelled = *sig;
  relabelled["kind"] = "policy";
  auto kind = VerifyEvidence(kBench, relabelled, signer->public_pem);
  ASSERT_TRUE(kind.ok());
  EXPECT_FALSE(kind->valid);
  // A signature that is not 64 bytes, or a key that is not PEM, is input the user fixes.
  Json short_sig = *sig;
  short_sig["signature"] = "AAAA";
  EXPECT_FALSE(VerifyEvidence(kBench, short_sig, signer->public_pem).ok());
  EXPECT_EQ(SignEvidence(kBench, "benchmark", "not a key").status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(VerifyEvidence(kBench, Json::object(), signer->public_pem).status().code(), StatusCode::kInvalidInput);
}

// Two different signature texts verified for one signature: padding written as data
// (`AA` for `==`) and unused low bits set decode to the same 64 bytes.
TEST(EvidenceSigningRegression, OnlyTheCanonicalBase64OfASignatureVerifies) {
  auto signer = GenerateEd25519Key();
  ASSERT_TRUE(signer.ok());
  const Json sig = *SignEvidence(kBench, "benchmark", signer->private_pem);
  const std::string text = sig["signature"].get<std::string>();
  ASSERT_EQ(text.size(), 88u);
  ASSERT_EQ(text.substr(86), "==");
  Json padded = sig;
  padded["signature"] = text.substr(0, 86) + "AA";
  auto a = VerifyEvidence(kBench, padded, signer->public_pem);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "the signature is not the base64 of 64 bytes");
  // The last data character carries 4 unused bits: set one of them.
  Json low_bits = sig;
  std::string changed = text;
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  changed[85] = alphabet[alphabet.find(changed[85]) ^ 1];
  low_bits["signature"] = changed;
  EXPECT_FALSE(VerifyEvidence(kBench, low_bits, signer->public_pem).ok());
  auto ok = VerifyEvidence(kBench, sig, signer->public_pem);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->valid);
}

TEST(EvidenceSigningRegression, AnUnknownVersionIsRefused) {
  auto signer = GenerateEd25519Key();
  ASSERT_TRUE(signer.ok());
  Json sig = *SignEvidence(kBench, "benchmark", signer->private_pem);
  sig["version"] = 99;
  auto r = VerifyEvidence(kBench, sig, signer->public_pem);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unsupported signature version 99; this fleetplan reads version 1");
  sig["version"] = "1";
  EXPECT_FALSE(VerifyEvidence(kBench, sig, signer->public_pem).ok());
  sig.erase("version");
  EXPECT_FALSE(VerifyEvidence(kBench, sig, signer->public_pem).ok());
}

// {"kind": "policy", ..., "kind": "benchmark"} verified as benchmark (the last key won).
TEST(EvidenceSigningRegression, ASignatureDocumentWithAKeyGivenTwiceIsRefused) {
  auto signer = GenerateEd25519Key();
  ASSERT_TRUE(signer.ok());
  const std::string text = *CanonicalJson(*SignEvidence(kBench, "benchmark", signer->private_pem));
  ASSERT_TRUE(ParseSignatureDocument(text).ok());
  const std::string twice = R"({"kind":"policy",)" + text.substr(1);
  auto r = ParseSignatureDocument(twice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "'kind' is given twice; a signature document names each field once");
  auto deep = ParseSignatureDocument(R"({"kind": )" + std::string(10'000, '[') + std::string(10'000, ']') + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested more than 64 deep"), std::string::npos);
  EXPECT_FALSE(ParseSignatureDocument("[1]").ok());
}

// keygen wrote the private key 0644 and chmod-ed it after the rename, and replaced an
// existing KEY.pub.
TEST(EvidenceKeygenRegression, ThePrivateKeyIsOwnerOnlyAndNoKeyFileIsReplaced) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "keygen-regression";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto pair = GenerateEd25519Key();
  ASSERT_TRUE(pair.ok());
  const std::string key = (dir / "k").string();
  ASSERT_TRUE(WriteKeyPair(*pair, key).ok());
  struct stat st {};
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((key + ".pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // No temporary is left beside them.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 2);

  // An existing KEY.pub (or KEY) is kept, and no private key is written without it.
  const std::string other = (dir / "kgp").string();
  { std::ofstream(other + ".pub") << "keep\n"; }
  const Status pub_exists = WriteKeyPair(*pair, other);
  ASSERT_FALSE(pub_exists.ok());
  EXPECT_EQ(pub_exists.message(), "'" + other + ".pub' exists; a key is never overwritten");
  std::ifstream kept(other + ".pub");
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "keep");
  EXPECT_FALSE(std::filesystem::exists(other));
  const Status key_exists = WriteKeyPair(*pair, key);
  ASSERT_FALSE(key_exists.ok());
  EXPECT_EQ(key_exists.message(), "'" + key + "' exists; a key is never overwritten");
  // A dangling link in KEY's place is not followed.
  const std::string link = (dir / "dangling").string();
  std::filesystem::create_symlink(dir / "nowhere", link);
  EXPECT_FALSE(WriteKeyPair(*pair, link).ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "nowhere"));
}

}  // namespace
}  // namespace fleetplan
