// `fleetplan evidence` as a user runs it: keygen, sign, verify, a tampered file, freshness.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "support/in_scratch.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::InScratch;
using testing::RunFleetplan;

class EvidenceVerb : public InScratch {};

constexpr std::string_view kPrice = R"(evidence:
  kind: price
  observed_at: 2026-11-01T00:00:00Z
  expires_at: 2026-12-01T00:00:00Z
  source: cloud price sheet
data: {h100-sxm-80g: 4.10/gpu-h}
)";

TEST_F(EvidenceVerb, KeygenSignVerifyAndATamperedFileFails) {
  std::ofstream("price.yaml") << kPrice;
  auto gen = RunFleetplan({"evidence", "keygen", "--out", "signer"});
  ASSERT_EQ(gen.code, 0) << gen.err;
  EXPECT_NE(gen.out.find("key ed25519:"), std::string::npos) << gen.out;
  EXPECT_EQ(std::filesystem::status("signer").permissions() & std::filesystem::perms::group_read,
            std::filesystem::perms::none);
  EXPECT_EQ(RunFleetplan({"evidence", "keygen", "--out", "signer"}).code, 2);  // never overwrites a key
  auto sign = RunFleetplan({"evidence", "sign", "price.yaml", "--key", "signer"});
  ASSERT_EQ(sign.code, 0) << sign.err;
  EXPECT_NE(sign.out.find("signed price.yaml as price evidence"), std::string::npos) << sign.out;
  const std::string sig = testing::FileText("price.yaml.sig");
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "price.yaml", "--key", "signer"}).code, 0);
  EXPECT_EQ(testing::FileText("price.yaml.sig"), sig);  // deterministic
  auto ok = RunFleetplan({"evidence", "verify", "price.yaml", "--pub", "signer.pub"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("valid signature by ed25519:"), std::string::npos) << ok.out;
  // Another key pair is not the trusted signer.
  ASSERT_EQ(RunFleetplan({"evidence", "keygen", "--out", "other"}).code, 0);
  auto wrong = RunFleetplan({"evidence", "verify", "price.yaml", "--pub", "other.pub"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("signature NOT valid"), std::string::npos) << wrong.err;
  // The price edited after signing.
  std::ofstream("price.yaml") << std::string(kPrice).replace(std::string(kPrice).find("4.10"), 4, "1.10");
  auto tampered = RunFleetplan({"evidence", "verify", "price.yaml", "--pub", "signer.pub"});
  EXPECT_EQ(tampered.code, 1);
  EXPECT_NE(tampered.err.find("the file changed after it was signed"), std::string::npos) << tampered.err;
  // A file without a header needs --kind.
  std::ofstream("raw.csv") << "a,b\n1,2\n";
  EXPECT_EQ(RunFleetplan({"evidence", "sign", "raw.csv", "--key", "signer"}).code, 3);
  EXPECT_EQ(RunFleetplan({"evidence", "sign", "raw.csv", "--key", "signer", "--kind", "trace"}).code, 0);
}

// Regression: `sign --kind` with a newline and a control character was printed as is and
// stored in the signature file.
TEST_F(EvidenceVerb, SignRefusesAKindWithControlCharacters) {
  std::ofstream("price.yaml") << kPrice;
  ASSERT_EQ(RunFleetplan({"evidence", "keygen", "--out", "signer"}).code, 0);
  auto sign = RunFleetplan({"evidence", "sign", "price.yaml", "--key", "signer", "--kind", "a\nb\x01", "--out", "x.sig"});
  EXPECT_EQ(sign.code, 2);
  EXPECT_EQ(sign.err, "--kind: contains the control character U+000A at byte 1: names are printed, so control and "
                      "bidirectional-formatting characters are refused\n");
  EXPECT_FALSE(std::filesystem::exists("x.sig"));
}

// Regression: `sign --kind policy` signed a file whose header says `kind: price` as policy.
TEST_F(EvidenceVerb, SignRefusesAKindThatContradictsTheHeader) {
  std::ofstream("price.yaml") << kPrice;
  ASSERT_EQ(RunFleetplan({"evidence", "keygen", "--out", "signer"}).code, 0);
  auto sign = RunFleetplan({"evidence", "sign", "price.yaml", "--key", "signer", "--kind", "policy", "--out", "x.sig"});
  EXPECT_EQ(sign.code, 2);
  EXPECT_EQ(sign.err, "--kind policy contradicts price.yaml's header (evidence.kind: price); leave --kind out to sign "
                      "it as price evidence, or correct the header\n");
  EXPECT_FALSE(std::filesystem::exists("x.sig"));
  EXPECT_EQ(RunFleetplan({"evidence", "sign", "price.yaml", "--key", "signer", "--kind", "price"}).code, 0);
}

// Regression: a private key given as --pub was blamed on the signature file, and a
// --policy-key that is not a public key was found only after the plan ran (or after the
// ladder's signature file was looked for).
TEST_F(EvidenceVerb, AKeyFlagThatIsNotAPublicKeyIsAUsageErrorNamingTheKey) {
  std::ofstream("price.yaml") << kPrice;
  ASSERT_EQ(RunFleetplan({"evidence", "keygen", "--out", "signer"}).code, 0);
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "price.yaml", "--key", "signer"}).code, 0);
  auto priv = RunFleetplan({"evidence", "verify", "price.yaml", "--pub", "signer"});
  EXPECT_EQ(priv.code, 2);
  EXPECT_EQ(priv.err, "--pub: signer is a private key; give the public one (signer.pub, from `fleetplan evidence "
                      "keygen`)\n");
  std::ofstream("garbage.pub") << "not a key\n";
  auto garbage = RunFleetplan({"rollout", "nowhere.yaml", "--as-of", "2026-12-01T00:00:00Z", "--policy-key",
                               "garbage.pub"});
  EXPECT_EQ(garbage.code, 2);
  EXPECT_EQ(garbage.err, "--policy-key: garbage.pub: expected a PEM Ed25519 public key (openssl pkey -pubout)\n");
  auto plan = RunFleetplan({"plan", "nowhere/plan.yaml", "--as-of", "2026-12-01T00:00:00Z", "--policy-key",
                            "garbage.pub"});
  EXPECT_EQ(plan.code, 2);
  EXPECT_EQ(plan.err, "--policy-key: garbage.pub: expected a PEM Ed25519 public key (openssl pkey -pubout)\n");
}

TEST_F(EvidenceVerb, CheckJudgesFreshnessAtTheAsOfTime) {
  std::ofstream("price.yaml") << kPrice;
  auto fresh = RunFleetplan({"evidence", "check", "price.yaml", "--as-of", "2026-11-15T00:00:00Z"});
  EXPECT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_NE(fresh.out.find("fresh until 2026-12-01T00:00:00Z"), std::string::npos) << fresh.out;
  auto stale = RunFleetplan({"evidence", "check", "price.yaml", "--as-of", "2026-12-02T00:00:00Z"});
  EXPECT_EQ(stale.code, 1);
  EXPECT_NE(stale.err.find("price.yaml (price) expired at 2026-12-01T00:00:00Z (its expires_at)"), std::string::npos)
      << stale.err;
  auto aged = RunFleetplan({"evidence", "check", "price.yaml", "--as-of", "2026-11-15T00:00:00Z", "--max-age", "168h"});
  EXPECT_EQ(aged.code, 1);
  EXPECT_NE(aged.err.find("the policy's maximum age"), std::string::npos) << aged.err;
  EXPECT_EQ(RunFleetplan({"evidence", "check", "price.yaml", "--as-of", "yesterday"}).code, 2);
  // S21: a maximum age under a second is refused, as a policy refuses it, not judged as 0 s.
  for (const char* age : {"0s", "1ns", "999ms"}) {
    auto r = RunFleetplan({"evidence", "check", "price.yaml", "--as-of", "2026-11-15T00:00:00Z", "--max-age", age});
    EXPECT_EQ(r.code, 2) << age;
    EXPECT_NE(r.err.find("--max-age: expected a maximum age of at least 1s"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace fleetplan
