// The files a rollout ladder names: inside the bundle's folder when it has one, and what
// a stage does with pinned records that are missing or are not records. Regression tests
// for stage evidence and canary records that escaped a plan bundle (`../`, absolute
// paths, symbolic links), for a non-records file aborting the plan with its first line
// printed, for a missing records file exiting 3 where a missing evidence file holds, for
// scenario and trusted-key files that escaped, and for a ladder signature with a key given
// twice.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "fleetplan/evidence/evidence.h"
#include "fleetplan/evidence/signing.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"
#include "fleetplan/rollout/ladder.h"
#include "support/build_paths.h"
#include "support/files.h"

namespace fleetplan {
namespace {

namespace fs = std::filesystem;
using testing::FileText;

class LadderFilesTest : public testing::TempFolderTest {
 protected:
  // The Atlas ladder and its evidence in <dir>/b/rollout, the bundle being <dir>/b.
  void SetUp() override {
    TempFolderTest::SetUp();
    fs::create_directories(Path("b"));
    fs::copy(fs::path(testing::SourceDir()) / "examples/atlas/rollout", Path("b/rollout"), fs::copy_options::recursive);
  }

  // Replaces `from` (which must occur) with `to` in the file.
  void Edit(const std::string& name, const std::string& from, const std::string& to) {
    std::string text = FileText(Path(name));
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << name << " lacks: " << from;
    text.replace(at, from.size(), to);
    Write(name, text);
  }

  // Points canary-1's candidate records at `file` (named from the evidence's folder),
  // pinned to `bytes`' digest.
  void PinCandidate(const std::string& file, const std::string& bytes) {
    std::string text = FileText(Path("b/rollout/canary-1.yaml"));
    const size_t at = text.find("candidate: {file: ");
    ASSERT_NE(at, std::string::npos);
    const size_t end = text.find('}', at);
    text.replace(at, end - at + 1, "candidate: {file: " + file + ", digest: '" + DigestOf(bytes) + "'}");
    Write("b/rollout/canary-1.yaml", text);
  }

  Expected<Ladder> Load(bool in_bundle = true) {
    const std::string ladder = Path("b/rollout/ladder.yaml");
    return LoadLadderText(FileText(ladder), ladder, Path("b/rollout"), in_bundle ? Path("b") : "");
  }

  Expected<Json> Evaluate(bool in_bundle = true) {
    FP_ASSIGN_OR_RETURN(Ladder l, Load(in_bundle));
    return EvaluateLadder(l, *ParseUtcTime("2026-12-01T00:00:00Z"));
  }

  static const Json& Stage(const Json& rollout, const std::string& name) {
    for (const Json& s : rollout["stages"]) {
      if (s["name"] == name) return s;
    }
    static const Json none;
    return none;
  }
};

TEST_F(LadderFilesTest, StageEvidenceThatLeavesTheBundleIsALocatedError) {
  Write("outside/canary.yaml", FileText(Path("b/rollout/canary-1.yaml")));
  Edit("b/rollout/ladder.yaml", "evidence: canary-1.yaml", "evidence: ../../outside/canary.yaml");
  auto l = Load();
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kInvalidInput);
  const std::string& m = l.status().message();
  EXPECT_NE(m.find("ladder.yaml:10:"), std::string::npos) << m;
  EXPECT_NE(m.find("'../../outside/canary.yaml' is outside the bundle's folder (it leaves the folder): a bundle names "
                   "its files from its own folder; copy the file into the bundle"),
            std::string::npos)
      << m;
  // A ladder read on its own has no bundle folder to keep to.
  EXPECT_TRUE(Load(/*in_bundle=*/false).ok());
}

TEST_F(LadderFilesTest, StageEvidenceByAbsolutePathIsRefusedInABundle) {
  Write("outside/canary.yaml", FileText(Path("b/rollout/canary-1.yaml")));
  Edit("b/rollout/ladder.yaml", "evidence: canary-1.yaml", "evidence: " + Path("outside/canary.yaml"));
  auto l = Load();
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("is outside the bundle's folder (an absolute path)"), std::string::npos)
      << l.status().message();
}

TEST_F(LadderFilesTest, CanaryRecordsThroughASymlinkOutOfTheBundleAreRefused) {
  const std::string records = FileText(Path("b/rollout/records/canary-1-candidate.jsonl"));
  Write("outside/records.jsonl", records);
  fs::create_symlink(Path("outside/records.jsonl"), Path("b/rollout/records/linked.jsonl"));
  PinCandidate("records/linked.jsonl", records);
  auto r = Evaluate();
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("canary-1.yaml:5:"), std::string::npos) << m;
  EXPECT_NE(m.find("'records/linked.jsonl' is outside the bundle's folder (a symbolic link leads out)"),
            std::string::npos)
      << m;
}

TEST_F(LadderFilesTest, CanaryRecordsByAbsolutePathAreRefused) {
  const std::string text = "machine-name-not-to-be-printed\n";
  Write("outside/hostname", text);
  PinCandidate(Path("outside/hostname"), text);
  auto r = Evaluate();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is outside the bundle's folder (an absolute path)"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find("machine-name-not-to-be-printed"), std::string::npos) << r.status().message();
}

TEST_F(LadderFilesTest, CanaryRecordsThatAreNotRecordsHoldTheStageWithoutPrintingThem) {
  const std::string text = "machine-name-not-to-be-printed\n";
  Write("b/rollout/records/not-records.txt", text);
  PinCandidate("records/not-records.txt", text);
  auto r = Evaluate();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["decision"], "hold");
  EXPECT_EQ((*r)["stage"], "canary-1");
  const std::string reason = Stage(*r, "canary-1")["reason"].get<std::string>();
  EXPECT_NE(reason.find("not-records.txt:1 is not fleetplan records, so the stage cannot be compared"),
            std::string::npos)
      << reason;
  EXPECT_EQ(reason.find("machine-name-not-to-be-printed"), std::string::npos) << reason;
}

TEST_F(LadderFilesTest, MissingPinnedRecordsHoldTheStageLikeMissingEvidence) {
  fs::remove(Path("b/rollout/records/canary-1-candidate.jsonl"));
  for (const bool in_bundle : {true, false}) {
    auto r = Evaluate(in_bundle);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)["decision"], "hold");
    EXPECT_EQ((*r)["stage"], "canary-1");
    const std::string reason = Stage(*r, "canary-1")["reason"].get<std::string>();
    EXPECT_EQ(reason, "canary-1: no records: " + Path("b/rollout/records/canary-1-candidate.jsonl") +
                          " does not exist");
  }
}

TEST_F(LadderFilesTest, ScenarioAndTrustedKeyFilesOutsideTheBundleAreLocatedErrors) {
  Write("outside/cand.yaml", "name: x\n");
  const std::string ladder = FileText(Path("b/rollout/ladder.yaml"));
  Edit("b/rollout/ladder.yaml", "namespace: atlas-fp8-w8a8}",
       "namespace: atlas-fp8-w8a8, scenario: ../../outside/cand.yaml}");
  auto scenario = Load();
  ASSERT_FALSE(scenario.ok());
  EXPECT_NE(scenario.status().message().find("ladder.yaml:4:"), std::string::npos) << scenario.status().message();
  EXPECT_NE(scenario.status().message().find("'../../outside/cand.yaml' is outside the bundle's folder (it leaves the "
                                             "folder)"),
            std::string::npos)
      << scenario.status().message();
  EXPECT_TRUE(Load(/*in_bundle=*/false).ok());

  auto key = GenerateEd25519Key();
  ASSERT_TRUE(key.ok());
  Write("outside/k.pub", key->public_pem);
  Write("b/rollout/ladder.yaml", ladder + "trust: {canary-metrics: [" + Path("outside/k.pub") + "]}\n");
  auto trust = Load();
  ASSERT_FALSE(trust.ok());
  EXPECT_NE(trust.status().message().find("is outside the bundle's folder (an absolute path)"), std::string::npos)
      << trust.status().message();
  EXPECT_TRUE(Load(/*in_bundle=*/false).ok());
}

TEST_F(LadderFilesTest, ALadderSignatureWithAKeyGivenTwiceIsRefused) {
  auto key = GenerateEd25519Key();
  ASSERT_TRUE(key.ok());
  auto l = Load();
  ASSERT_TRUE(l.ok()) << l.status().message();
  auto sig = SignEvidence(l->text, "policy", key->private_pem);
  ASSERT_TRUE(sig.ok());
  auto text = CanonicalJson(*sig);
  ASSERT_TRUE(text.ok());
  Write("good.sig", *text + "\n");
  EXPECT_TRUE(CheckLadderSignature(*l, Path("good.sig"), key->public_pem).ok());
  // The first "kind" is read by nobody: the last one, "policy", verifies.
  Write("twice.sig", "{\"kind\":\"benchmark\"," + text->substr(1) + "\n");
  const Status twice = CheckLadderSignature(*l, Path("twice.sig"), key->public_pem);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(twice.message(), Path("twice.sig") + ": 'kind' is given twice; a signature document names each field once");
}

}  // namespace
}  // namespace fleetplan
