// `fleetplan rollout LADDER.yaml --as-of`: the ladder walked on evidence files whose
// records two simulated fleets wrote. Promotion when every stage passes; a hold for
// unwarmed, stale, no-data or changed evidence, each naming its reason; a rollback that
// names the metric, removes the candidate's traffic and keeps its namespace; a ladder whose
// shadow stage leads straight to promotion is refused.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"
#include "support/in_scratch.h"
#include "support/small_scenarios.h"
#include "support/files.h"

namespace fleetplan {
namespace {

using testing::InScratch;
using testing::RunFleetplan;

class RolloutLadder : public InScratch {
 protected:
  void SetUp() override {
    InScratch::SetUp();
    for (const auto& [name, per_seq] : {std::pair{"base", "0.2ms"}, {"same", "0.2ms"}, {"slow", "0.6ms"}}) {
      std::ofstream(std::string(name) + ".yaml") << testing::CanaryScenario(per_seq);
      auto r = RunFleetplan({"simulate", std::string(name) + ".yaml", "--quiet", "--out", name});
      ASSERT_EQ(r.code, 0) << r.err;
    }
    Warmup("warmup.yaml", true, "2026-11-30T00:00:00Z");
    for (const char* stage : {"shadow", "canary-1", "canary-10"}) Canary(std::string(stage) + ".yaml", "same");
    std::ofstream("ladder.yaml") << kLadder;
  }
  static void Warmup(const std::string& path, bool warmed, const std::string& observed) {
    std::ofstream(path) << "evidence: {kind: warmup, observed_at: " << observed << ", source: warm-up job}\n"
                        << "data: {warmed: " << (warmed ? "true" : "false") << ", requests: 500}\n";
  }
  static void Canary(const std::string& path, const std::string& candidate,
                     const std::string& observed = "2026-11-30T12:00:00Z", const std::string& extra = "") {
    std::ofstream(path) << "evidence: {kind: canary-metrics, observed_at: " << observed << ", source: canary controller}\n"
                        << "data:\n  candidate: {file: " << candidate << "/requests.jsonl, digest: '"
                        << DigestOf(testing::FileText(candidate + "/requests.jsonl")) << "'}\n"
                        << "  baseline: {file: base/requests.jsonl, digest: '" << DigestOf(testing::FileText("base/requests.jsonl"))
                        << "'}\n"
                        << extra;
  }
  // `from`'s records with every time to first token at or above the 90th percentile
  // tripled (the answer shifted with it), written to DIR/requests.jsonl.
  static void TailTripled(const std::string& from, const std::string& dir) {
    std::vector<Json> records;
    std::vector<double> ttfts;
    std::istringstream in(testing::FileText(from + "/requests.jsonl"));
    for (std::string line; std::getline(in, line);) {
      records.push_back(Json::parse(line));
      const Json& r = records.back();
      if (r["status"] == "ok") ttfts.push_back(r["first_token_s"].get<double>() - r["arrival_s"].get<double>());
    }
    std::sort(ttfts.begin(), ttfts.end());
    const double p90 = ttfts[static_cast<size_t>(0.9 * static_cast<double>(ttfts.size()))];
    std::string lines;
    for (Json& r : records) {
      if (r["status"] == "ok") {
        const double ttft = r["first_token_s"].get<double>() - r["arrival_s"].get<double>();
        if (ttft >= p90) {
          r["first_token_s"] = r["first_token_s"].get<double>() + 2 * ttft;
          r["finish_s"] = r["finish_s"].get<double>() + 2 * ttft;
        }
      }
      lines += r.dump() + "\n";
    }
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/requests.jsonl") << lines;
  }
  static constexpr std::string_view kLadder = R"(version: 1
candidate: {revision: fp8-kv, namespace: atlas-fp8-kv}
baseline: {revision: bf16}
max_age: {canary-metrics: 24h}
stages:
  - {name: warm-up, traffic: 0%, evidence: warmup.yaml}
  - {name: shadow, traffic: 0%, evidence: shadow.yaml, metrics: {ttft_ms: {min_samples: 30}, e2e_ms: {min_samples: 30}}}
  - {name: canary-1, traffic: 1%, evidence: canary-1.yaml, metrics: {ttft_ms: {min_samples: 30}, e2e_ms: {min_samples: 30}}}
  - {name: canary-10, traffic: 10%, evidence: canary-10.yaml, metrics: {e2e_ms: {tolerance: 3%, min_samples: 30}}}
  - {name: promote, traffic: 100%}
)";
};

constexpr const char* kAsOf = "2026-12-01T00:00:00Z";

TEST_F(RolloutLadder, EveryStagePassingPromotes) {
  auto r = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("decision: promote at promote (100% of traffic to fp8-kv)"), std::string::npos) << r.out;
  auto j = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  const Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["stages"].size(), 4u);
  for (const Json& s : doc["stages"]) EXPECT_EQ(s["verdict"], "pass") << s.dump();
  // Same inputs, same bytes.
  EXPECT_EQ(RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"}).out, j.out);
}

TEST_F(RolloutLadder, ARegressionRollsBackNamingTheMetricAndKeepsTheNamespace) {
  Canary("canary-1.yaml", "slow");
  auto r = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(r.code, 1);
  const Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["decision"], "rollback");
  EXPECT_EQ(doc["stage"], "canary-1");
  EXPECT_EQ(doc["traffic"], 0);
  EXPECT_EQ(doc["rollback"]["serving"], "bf16");
  EXPECT_EQ(doc["rollback"]["retained_namespace"], "atlas-fp8-kv");
  // Both metrics regressed; the first in the ladder's order decides and is named.
  EXPECT_NE(doc["reasons"][0].get<std::string>().find("canary-1: ttft_ms"), std::string::npos) << doc["reasons"];
  const Json& metrics = doc["stages"][2]["comparison"]["metrics"];
  EXPECT_EQ(metrics["ttft_ms"]["verdict"], "fail");
  EXPECT_EQ(metrics["e2e_ms"]["verdict"], "fail");
  EXPECT_EQ(doc["stages"][3]["verdict"], "not reached");
}

TEST_F(RolloutLadder, ATailOnlyRegressionRollsBackNamingTheQuantile) {
  TailTripled("base", "tail");
  Canary("canary-1.yaml", "tail");
  auto r = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["decision"], "rollback");
  EXPECT_EQ(doc["stage"], "canary-1");
  const std::string reason = doc["reasons"][0].get<std::string>();
  EXPECT_NE(reason.find("ttft_ms: p95 "), std::string::npos) << reason;
  const Json& ttft = doc["stages"][2]["comparison"]["metrics"]["ttft_ms"]["statistics"];
  EXPECT_EQ(ttft["median"]["verdict"], "pass") << ttft["median"]["reason"];
  EXPECT_EQ(ttft["p95"]["verdict"], "fail");
  // A ladder that judges the median alone promotes the same evidence.
  std::string median_only(kLadder);
  for (size_t at; (at = median_only.find("min_samples: 30}")) != std::string::npos;) {
    median_only.replace(at, 16, "min_samples: 30, statistics: [median]}");
  }
  std::ofstream("median-only.yaml") << median_only;
  EXPECT_EQ(RunFleetplan({"rollout", "median-only.yaml", "--as-of", kAsOf}).code, 0);
}

TEST_F(RolloutLadder, AProtectedQualitySliceThatDropsRollsBackAndAMissingOneHolds) {
  std::string ladder(kLadder);
  const std::string canary1 = "evidence: canary-1.yaml, metrics: {ttft_ms: {min_samples: 30}, e2e_ms: {min_samples: 30}}";
  ladder.replace(ladder.find(canary1), canary1.size(), canary1 + ", quality: {tolerance: 1%, slices: [math, code]}");
  std::ofstream("ladder.yaml") << ladder;
  Canary("canary-1.yaml", "same", "2026-11-30T12:00:00Z",
         "  quality: {math: {candidate: 0.805, baseline: 0.81}, code: {candidate: 0.62, baseline: 0.70}}\n");
  auto drop = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(drop.code, 1);
  const Json doc = Json::parse(drop.out);
  EXPECT_EQ(doc["decision"], "rollback");
  EXPECT_NE(doc["reasons"][0].get<std::string>().find("protected quality regressed: code 0.62 against 0.7 (-11.4%"),
            std::string::npos)
      << doc["reasons"];
  EXPECT_EQ(doc["stages"][2]["quality"]["slices"]["math"]["verdict"], "pass");
  Canary("canary-1.yaml", "same", "2026-11-30T12:00:00Z", "  quality: {math: {candidate: 0.81, baseline: 0.81}}\n");
  auto missing = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("no quality score for the protected slice(s) code"), std::string::npos) << missing.err;
  Canary("canary-1.yaml", "same", "2026-11-30T12:00:00Z",
         "  quality: {math: {candidate: 0.81, baseline: 0.81}, code: {candidate: 0.70, baseline: 0.70}}\n");
  EXPECT_EQ(RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf}).code, 0);
}

TEST_F(RolloutLadder, UnwarmedStaleNoDataAndChangedEvidenceHold) {
  Warmup("warmup.yaml", false, "2026-11-30T00:00:00Z");
  auto unwarmed = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf});
  EXPECT_EQ(unwarmed.code, 1);
  EXPECT_NE(unwarmed.err.find("rollout hold: warm-up: the candidate is not warmed"), std::string::npos) << unwarmed.err;
  Warmup("warmup.yaml", true, "2026-11-30T00:00:00Z");

  Canary("shadow.yaml", "same", "2026-11-29T00:00:00Z");  // older than the 24 h maximum age
  auto stale = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf});
  EXPECT_EQ(stale.code, 1);
  EXPECT_NE(stale.err.find("shadow: stale evidence: "), std::string::npos) << stale.err;
  EXPECT_NE(stale.err.find("expired at 2026-11-30T00:00:00Z (the policy's maximum age)"), std::string::npos) << stale.err;
  Canary("shadow.yaml", "same");

  // The candidate's records are all errored: no data, a hold, never a pass.
  std::string lines;
  std::istringstream in(testing::FileText("same/requests.jsonl"));
  for (std::string line; std::getline(in, line);) {
    Json rec = Json::parse(line);
    rec["status"] = "error";
    rec["first_token_s"] = nullptr;
    rec["finish_s"] = nullptr;
    rec["output_tokens"] = 0;
    rec.erase("itl_max_ms");
    lines += rec.dump() + "\n";
  }
  std::filesystem::create_directories("errored");
  std::ofstream("errored/requests.jsonl") << lines;
  Canary("canary-10.yaml", "errored");
  auto nodata = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(nodata.code, 1) << nodata.err;
  const Json doc = Json::parse(nodata.out);
  EXPECT_EQ(doc["decision"], "hold");
  EXPECT_EQ(doc["stage"], "canary-10");
  EXPECT_EQ(doc["traffic"], 0.1);
  EXPECT_NE(doc["reasons"][0].get<std::string>().find("no data to decide on"), std::string::npos) << doc["reasons"];
  Canary("canary-10.yaml", "same");

  // Records edited after the evidence pinned them.
  std::ofstream("same/requests.jsonl", std::ios::app) << "\n";
  auto changed = RunFleetplan({"rollout", "ladder.yaml", "--as-of", kAsOf});
  EXPECT_EQ(changed.code, 1);
  EXPECT_NE(changed.err.find("the records changed after they were recorded"), std::string::npos) << changed.err;
}

TEST_F(RolloutLadder, AShadowStageCannotLeadStraightToPromotion) {
  std::ofstream("direct.yaml") << R"(version: 1
candidate: {revision: fp8-kv}
baseline: {revision: bf16}
stages:
  - {name: shadow, traffic: 0%, evidence: shadow.yaml, metrics: {ttft_ms: {}}}
  - {name: promote, traffic: 100%}
)";
  auto r = RunFleetplan({"rollout", "direct.yaml", "--as-of", kAsOf});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("direct.yaml:6:5: stages[1]: shadow stage 'shadow' cannot lead to promotion without a canary stage"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(RunFleetplan({"rollout", "ladder.yaml"}).code, 2);  // --as-of is required
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

// Evidence kinds the ladder trusts to named keys must be signed by one of them, and the
// ladder itself, as policy, must be signed by the policy owners' key — which may not be an
// evidence signer's.
TEST_F(RolloutLadder, TrustedKindsNeedTheirSignersAndTheLadderNeedsThePolicyKey) {
  for (const char* key : {"canary", "owners", "other"}) {
    ASSERT_EQ(RunFleetplan({"evidence", "keygen", "--out", key}).code, 0);
  }
  std::string ladder(kLadder);
  ladder.replace(ladder.find("stages:"), 7, "trust: {canary-metrics: [canary.pub]}\nstages:");
  std::ofstream("signed.yaml") << ladder;
  auto unsigned_run = RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf});
  EXPECT_EQ(unsigned_run.code, 1);
  EXPECT_NE(unsigned_run.err.find("shadow: shadow.yaml is not signed (shadow.yaml.sig missing); canary-metrics evidence "
                                  "must be signed by canary.pub"),
            std::string::npos)
      << unsigned_run.err;
  for (const char* f : {"shadow.yaml", "canary-1.yaml", "canary-10.yaml"}) {
    ASSERT_EQ(RunFleetplan({"evidence", "sign", f, "--key", "canary"}).code, 0);
  }
  auto signed_run = RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf, "--json"});
  EXPECT_EQ(signed_run.code, 0) << signed_run.err;
  EXPECT_EQ(Json::parse(signed_run.out)["stages"][1]["signed_by"].get<std::string>().rfind("ed25519:", 0), 0u);
  // Signed by a key the ladder does not trust for the kind.
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "canary-1.yaml", "--key", "other"}).code, 0);
  auto untrusted = RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf});
  EXPECT_EQ(untrusted.code, 1);
  EXPECT_NE(untrusted.err.find("canary-1: canary-1.yaml's signature is not trusted for canary-metrics evidence"),
            std::string::npos)
      << untrusted.err;
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "canary-1.yaml", "--key", "canary"}).code, 0);

  // The ladder as policy.
  auto no_sig = RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf, "--policy-key", "owners.pub"});
  EXPECT_EQ(no_sig.code, 1);
  EXPECT_NE(no_sig.err.find("the ladder is policy and must be signed"), std::string::npos) << no_sig.err;
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "signed.yaml", "--key", "owners", "--kind", "policy"}).code, 0);
  EXPECT_EQ(RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf, "--policy-key", "owners.pub"}).code, 0);
  // The canary pipeline's key signing the policy is refused, even when deployment was
  // pointed at it.
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "signed.yaml", "--key", "canary", "--kind", "policy"}).code, 0);
  auto self = RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf, "--policy-key", "canary.pub"});
  EXPECT_EQ(self.code, 1);
  EXPECT_NE(self.err.find("an evidence signer cannot sign the policy that judges its evidence"), std::string::npos)
      << self.err;
  // A looser ladder written after the owners signed is not the signed one.
  ASSERT_EQ(RunFleetplan({"evidence", "sign", "signed.yaml", "--key", "owners", "--kind", "policy"}).code, 0);
  std::ofstream("signed.yaml", std::ios::app) << "# loosened\n";
  auto edited = RunFleetplan({"rollout", "signed.yaml", "--as-of", kAsOf, "--policy-key", "owners.pub"});
  EXPECT_EQ(edited.code, 1);
  EXPECT_NE(edited.err.find("the file changed after it was signed"), std::string::npos) << edited.err;
}

}  // namespace
}  // namespace fleetplan
