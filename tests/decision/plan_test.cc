// The plan on the Atlas bundle and on one failing variant of each kind (docs/plan.md):
// each variant fails for its own deciding reason, named in decision.reasons.
#include "fleetplan/decision/plan.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"
#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/evidence/signing.h"
#include "fleetplan/perf/stated_error.h"
#include "support/in_scratch.h"
#include "support/files.h"

namespace fleetplan {
namespace {

constexpr const char* kAsOf = "2026-12-01T00:00:00Z";

void Spit(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Replaces `from` (which must occur) with `to` in `path`.
void Edit(const std::string& path, const std::string& from, const std::string& to) {
  std::string text = testing::FileText(path);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << path << " lacks: " << from;
  text.replace(at, from.size(), to);
  Spit(path, text);
}

// Re-pins `evidence`'s `records` entry to the file's current digest.
void Repin(const std::string& evidence, const std::string& records_file, const std::string& records_path) {
  std::string text = testing::FileText(evidence);
  const size_t at = text.find("{file: " + records_file + ", digest: 'sha256:");
  ASSERT_NE(at, std::string::npos);
  const size_t digest_at = text.find("sha256:", at) + 7;
  text.replace(digest_at, 64, DigestOf(testing::FileText(records_path)).substr(7));
  Spit(evidence, text);
}

class PlanTest : public testing::InScratch {
 protected:
  // The Atlas bundle, written from the binary, with a canary-1 window large enough to pass
  // (so the whole ladder promotes) and shorter simulations: a plan that passes, from
  // which each test changes one input.
  void SetUp() override {
    InScratch::SetUp();
    ASSERT_TRUE(WriteAtlasBundle("b").ok());
    Edit("b/rollout/canary-1.yaml", "records/canary-1-candidate.jsonl", "records/shadow-candidate.jsonl");
    Repin("b/rollout/canary-1.yaml", "records/shadow-candidate.jsonl", "b/rollout/records/shadow-candidate.jsonl");
    // A fifth of the peak: the same decisions on a fleet a fifth the size, simulated in a
    // fifth of the time.
    Edit("b/workload.yaml", "peak: {us-east: 40/s, us-west: 25/s}", "peak: {us-east: 8/s, us-west: 5/s}");
    Edit("b/policy.yaml", "simulation: {duration: 4m}", "simulation: {duration: 2m}");
    // The benchmark's rates taken as measured: at a fifth of the peak the committed GPUs
    // price tp4 and tp8 alike, which the model's error cannot separate (the ModelError tests
    // below keep them simulated).
    Edit("b/benchmark.yaml", "method: simulated", "method: measured");
    // The one-minute windows hold 35 research requests: enough at a minimum of 20.
    Edit("b/rollout/ladder.yaml", "metrics: {ttft_ms: {min_samples: 50}, e2e_ms: {min_samples: 50}}",
         "metrics: {ttft_ms: {min_samples: 20}, e2e_ms: {min_samples: 20}}");
    Edit("b/rollout/ladder.yaml", "metrics: {ttft_ms: {tolerance: 3%}, e2e_ms: {tolerance: 3%}}",
         "metrics: {ttft_ms: {tolerance: 3%, min_samples: 20}, e2e_ms: {tolerance: 3%, min_samples: 20}}");
  }

  Json Plan(const std::optional<std::string>& policy_key = std::nullopt, const char* as_of = kAsOf) {
    auto bundle = LoadPlanBundle("b/plan.yaml");
    EXPECT_TRUE(bundle.ok()) << bundle.status().message();
    if (!bundle.ok()) return Json();
    PlanOptions o;
    o.as_of = *ParseUtcTime(as_of);
    o.policy_key_pem = policy_key;
    o.sensitivity = false;
    auto r = RunPlan(*bundle, o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->json : Json();
  }

  // The plan of the bundle as edited, or the error it stops with (no sensitivity).
  static Expected<PlanResult> TryPlan() {
    auto bundle = LoadPlanBundle("b/plan.yaml");
    if (!bundle.ok()) return bundle.status();
    PlanOptions o;
    o.as_of = *ParseUtcTime(kAsOf);
    o.sensitivity = false;
    return RunPlan(*bundle, o);
  }

  // The gates of the reasons that did not pass.
  static std::set<std::string> Deciding(const Json& plan) {
    std::set<std::string> out;
    for (const Json& r : plan["decision"]["reasons"]) {
      if (r["decision"] != "pass") out.insert(r["name"].get<std::string>());
    }
    return out;
  }

  static std::string ReasonOf(const Json& plan, const std::string& gate) {
    for (const Json& r : plan["decision"]["reasons"]) {
      if (r["name"] == gate && r["decision"] != "pass") return r["reason"].get<std::string>();
    }
    return "";
  }
};

TEST_F(PlanTest, TheBaseBundlePassesAndPromotes) {
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "pass") << plan["decision"].dump(2);
  EXPECT_EQ(plan["decision"]["stage"]["rollout"], "promote");
  // The cheapest of the sized candidates is chosen (ties: fewer GPUs).
  std::string cheapest;
  std::pair<double, int64_t> best{1e300, 0};
  for (const Json& c : plan["capacity"]["candidates"]) {
    const std::pair<double, int64_t> cost{c["per_hour"].get<double>(), c["gpus"].get<int64_t>()};
    if (c["sized"].get<bool>() && cost < best) {
      best = cost;
      cheapest = c["layout"].get<std::string>();
    }
  }
  EXPECT_EQ(plan["capacity"]["chosen_layout"], cheapest);
  EXPECT_EQ(plan["capacity"]["candidates"].size(), 2u);  // tp4 and tp8 have benchmark rates
  EXPECT_GT(plan["capacity"]["fleet"]["replicas"].get<int64_t>(), 0);
  EXPECT_EQ(plan["simulation"]["not_ok"], 0);
  EXPECT_EQ(plan["decision"]["advancing"], Json::array({"fp8-w8a8 (fp8)", "draft sha256:draft-a (speculation)"}));
}

TEST_F(PlanTest, RemovingAWorkloadClassFailsCoverage) {
  Edit("b/workload.yaml", "      research:\n", "      research_gone:\n");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "fail");
  EXPECT_EQ(Deciding(plan), (std::set<std::string>{"coverage", "fit"})) << plan["decision"].dump(2);
  EXPECT_NE(ReasonOf(plan, "coverage").find("research"), std::string::npos);
  EXPECT_EQ(plan["coverage"]["missing"], Json::array({"research"}));
}

TEST_F(PlanTest, TenantCacheIsolationOffFailsControls) {
  Edit("b/deployment.yaml", "    eviction: lru\n", "    eviction: lru\n    share_across_tenants: true\n");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "fail");
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"controls"}) << plan["decision"].dump(2);
  EXPECT_NE(ReasonOf(plan, "controls").find("share_across_tenants: true"), std::string::npos);
}

TEST_F(PlanTest, AnSloLooserThanPolicyFailsControls) {
  Edit("b/deployment.yaml", "interactive: {ttft: 600ms, itl_max: 150ms}", "interactive: {ttft: 900ms, itl_max: 150ms}");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "fail");
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"controls"});
  EXPECT_NE(ReasonOf(plan, "controls").find("interactive.ttft 900 ms is looser than the policy's 600 ms"), std::string::npos)
      << ReasonOf(plan, "controls");
}

TEST_F(PlanTest, ALongerPromptRetentionFailsControls) {
  Edit("b/plan.yaml", "controls: {prompt_retention: 168h}", "controls: {prompt_retention: 2160h}");
  const Json plan = Plan();
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"controls"});
  EXPECT_NE(ReasonOf(plan, "controls").find("2160 h"), std::string::npos);
}

TEST_F(PlanTest, ShrinkingTheGpuMemoryFailsFit) {
  Edit("b/inventory.yaml", "memory: 81559MiB", "memory: 16GiB");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "fail");
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"fit"}) << plan["decision"].dump(2);
  EXPECT_NE(ReasonOf(plan, "fit").find("no layout of atlas-70b fits"), std::string::npos);
  EXPECT_TRUE(plan["capacity"].is_null());
}

TEST_F(PlanTest, ARegressedCanaryMetricRollsBack) {
  // The candidate's time to first token three times what it measured on every request
  // (its own is 36% below the baseline's: FP8 weights prefill faster).
  std::istringstream in(testing::FileText("b/rollout/records/shadow-candidate.jsonl"));
  std::string line, out;
  while (std::getline(in, line)) {
    Json r = Json::parse(line);
    if (r.contains("first_token_s")) {
      const double ttft = r["first_token_s"].get<double>() - r["arrival_s"].get<double>();
      r["first_token_s"] = r["arrival_s"].get<double>() + ttft * 3;
      r["finish_s"] = r["finish_s"].get<double>() + ttft * 2;
    }
    out += r.dump() + "\n";
  }
  Spit("b/rollout/records/slow.jsonl", out);
  Edit("b/rollout/canary-1.yaml", "records/shadow-candidate.jsonl", "records/slow.jsonl");
  Repin("b/rollout/canary-1.yaml", "records/slow.jsonl", "b/rollout/records/slow.jsonl");
  // At the ladder's own minimum of 50 the research class (35 requests in the window) is
  // short of samples: it cannot veto the rollback the aggregate and the other classes show.
  Edit("b/rollout/ladder.yaml", "canary-1.yaml, metrics: {ttft_ms: {min_samples: 20}, e2e_ms: {min_samples: 20}}",
       "canary-1.yaml, metrics: {ttft_ms: {min_samples: 50}, e2e_ms: {min_samples: 50}}");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "fail");
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"rollout"}) << plan["decision"].dump(2);
  EXPECT_EQ(plan["rollout"]["decision"], "rollback");
  EXPECT_EQ(plan["rollout"]["rollback"]["serving"], "atlas-bf16");
  EXPECT_NE(ReasonOf(plan, "rollout").find("ttft_ms"), std::string::npos);
  EXPECT_NE(ReasonOf(plan, "rollout").find("research short of samples (cannot veto a rollback)"), std::string::npos)
      << ReasonOf(plan, "rollout");
}

TEST_F(PlanTest, StaleEvidenceFailsFreshnessNamingTheInputAndItsExpiry) {
  struct Case {
    const char* file;
    const char* from;
    const char* to;
  };
  const Case cases[] = {
      {"b/benchmark.yaml", "observed_at: 2026-11-24T09:00:00Z", "observed_at: 2026-11-01T09:00:00Z"},
      {"b/inventory.yaml", "expires_at: 2026-12-12T06:00:00Z", "expires_at: 2026-11-30T06:00:00Z"},
      {"b/prices.yaml", "expires_at: 2026-12-31T00:00:00Z", "expires_at: 2026-11-30T00:00:00Z"},
      {"b/rollout/canary-1.yaml", "observed_at: 2026-11-30T16:00:00Z", "observed_at: 2026-11-28T16:00:00Z"},
  };
  for (const Case& c : cases) {
    const std::string saved = testing::FileText(c.file);
    Edit(c.file, c.from, c.to);
    const Json plan = Plan();
    EXPECT_EQ(plan["decision"]["release"], "fail") << c.file;
    EXPECT_TRUE(Deciding(plan).contains("freshness")) << c.file << plan["decision"].dump(2);
    const std::string name = std::filesystem::path(c.file).lexically_relative("b").generic_string();
    const std::string reason = ReasonOf(plan, "freshness");
    EXPECT_NE(reason.find(name), std::string::npos) << reason;
    EXPECT_NE(reason.find("2026-"), std::string::npos) << reason;  // its expiry
    Spit(c.file, saved);
  }
}

TEST_F(PlanTest, AnAdmissionThatRejectsEverythingFails) {
  Edit("b/deployment.yaml", "tenant_quota: {max_concurrent: 400, max_tokens_in_flight: 20000000, token_rate: 5000000/s}",
       "tenant_quota: {max_concurrent: 400, max_tokens_in_flight: 100, token_rate: 5000000/s}");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "fail");
  EXPECT_TRUE(Deciding(plan).contains("admission")) << plan["decision"].dump(2);
  EXPECT_EQ(plan["simulation"]["rejected"], plan["simulation"]["requests"]);
}

TEST_F(PlanTest, SpeculationRoundsChangedAfterTheyWereRecordedHold) {
  std::ofstream("b/speculation/rounds.jsonl", std::ios::app)
      << R"({"seq": "r9", "draft": [1], "target": [1], "draft_ms": 3.0, "verify_ms": 9.0, "batch": 8})" << "\n";
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "hold");
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"speculation"}) << plan["decision"].dump(2);
  EXPECT_NE(ReasonOf(plan, "speculation").find("the rounds changed after they were recorded"), std::string::npos);
}

TEST_F(PlanTest, EvidenceWithoutItsDataIsALocatedError) {
  Edit("b/workload.yaml", "  peak: {us-east: 8/s, us-west: 5/s}\n", "");
  auto bundle = LoadPlanBundle("b/plan.yaml");
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  PlanOptions o;
  o.as_of = *ParseUtcTime(kAsOf);
  auto r = RunPlan(*bundle, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("workload.yaml:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("missing required field 'peak'"), std::string::npos) << r.status().message();
}

// Regression: a bundle bound evidence outside its folder (`../`, an absolute path, a
// symbolic link) with no note, and an absolute path landed in plan.json.
TEST_F(PlanTest, EvidenceOutsideTheBundleFolderIsALocatedError) {
  std::filesystem::create_directories("outside");
  std::filesystem::copy_file("b/benchmark.yaml", "outside/benchmark.yaml");
  const std::string absolute = std::filesystem::absolute("outside/benchmark.yaml").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"../outside/benchmark.yaml", "it leaves the folder"}, {absolute, "an absolute path"}};
  const std::string plan = testing::FileText("b/plan.yaml");
  for (const auto& [name, why] : cases) {
    Spit("b/plan.yaml", plan);
    Edit("b/plan.yaml", "  - benchmark.yaml ", "  - " + name + " ");
    auto bundle = LoadPlanBundle("b/plan.yaml");
    ASSERT_FALSE(bundle.ok()) << name;
    EXPECT_EQ(bundle.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(bundle.status().message().find("b/plan.yaml:15:"), std::string::npos) << bundle.status().message();
    EXPECT_NE(bundle.status().message().find("'" + name + "' is outside the bundle's folder (" + why +
                                             "): a bundle names its files from its own folder; copy the file "
                                             "into the bundle"),
              std::string::npos)
        << bundle.status().message();
  }
}

// Regression: an absolute path to a file inside the bundle landed in plan.json (with the
// bundle's folder cut out of its middle).
TEST_F(PlanTest, AnAbsoluteNameInsideTheBundleIsPrintedFromTheBundlesFolder) {
  const std::string absolute = std::filesystem::absolute("b").string();
  Edit("b/plan.yaml", "  - benchmark.yaml ", "  - " + absolute + "/benchmark.yaml ");
  Edit("b/rollout/ladder.yaml", "evidence: canary-1.yaml", "evidence: " + absolute + "/rollout/canary-1.yaml");
  const Json plan = Plan();
  const std::string text = plan.dump();
  EXPECT_EQ(text.find(std::filesystem::current_path().string()), std::string::npos) << text;
  std::set<std::string> names;
  for (const Json& i : plan["inputs"]) names.insert(i["name"].get<std::string>());
  EXPECT_TRUE(names.contains("benchmark.yaml")) << plan["inputs"].dump(2);
  EXPECT_TRUE(names.contains("rollout/canary-1.yaml")) << plan["inputs"].dump(2);
  EXPECT_EQ(plan["decision"]["release"], "pass") << plan["decision"].dump(2);
}

// Regression: the policy's trusted keys could be read from anywhere on the machine.
TEST_F(PlanTest, APolicyKeyOutsideTheBundleIsALocatedError) {
  std::filesystem::create_directories("outside");
  std::ofstream("outside/k.pub") << "not read\n";
  Edit("b/policy.yaml", "\nevidence:\n", "\nevidence:\n  trust: {benchmark: [../outside/k.pub]}\n");
  auto bundle = LoadPlanBundle("b/plan.yaml");
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bundle.status().message().find("policy.yaml:"), std::string::npos) << bundle.status().message();
  EXPECT_NE(bundle.status().message().find("'../outside/k.pub' is outside the bundle's folder (it leaves the folder)"),
            std::string::npos)
      << bundle.status().message();
}

TEST_F(PlanTest, EvidenceSymlinkedOutOfTheBundleIsALocatedError) {
  std::filesystem::create_directories("outside");
  std::filesystem::rename("b/benchmark.yaml", "outside/benchmark.yaml");
  std::filesystem::create_symlink("../outside/benchmark.yaml", "b/benchmark.yaml");
  auto bundle = LoadPlanBundle("b/plan.yaml");
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.status().message().find("'benchmark.yaml' is outside the bundle's folder (a symbolic link leads "
                                           "out)"),
            std::string::npos)
      << bundle.status().message();
  // A link that stays inside the folder is the bundle's own file.
  std::filesystem::remove("b/benchmark.yaml");
  std::filesystem::rename("outside/benchmark.yaml", "b/bench-data.yaml");
  std::filesystem::create_symlink("bench-data.yaml", "b/benchmark.yaml");
  auto inside = LoadPlanBundle("b/plan.yaml");
  EXPECT_TRUE(inside.ok()) << inside.status().message();
}

TEST_F(PlanTest, SpeculationRoundsOutsideTheBundleAreALocatedError) {
  std::filesystem::create_directories("outside");
  std::filesystem::copy_file("b/speculation/rounds.jsonl", "outside/rounds.jsonl");
  Edit("b/speculation.yaml", "file: speculation/rounds.jsonl", "file: ../outside/rounds.jsonl");
  auto r = TryPlan();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("speculation.yaml:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'../outside/rounds.jsonl' is outside the bundle's folder (it leaves the "
                                      "folder)"),
            std::string::npos)
      << r.status().message();
}

// Regression: an unknown gate in deployment.candidates was ignored, and the plan held
// for want of a quantization candidate.
TEST_F(PlanTest, AnUnknownCandidateGateIsALocatedErrorNamingTheKnownGates) {
  Edit("b/plan.yaml", "candidates: {quantization: fp8-w8a8}", "candidates: {warp-drive: fp8-w8a8}");
  auto bundle = LoadPlanBundle("b/plan.yaml");
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.status().code(), StatusCode::kInvalidInput);
  const std::string& m = bundle.status().message();
  EXPECT_NE(m.find("b/plan.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("deployment.candidates.warp-drive: unknown gate 'warp-drive' (valid: quantization): candidates "
                   "name the candidate a gate judges"),
            std::string::npos)
      << m;
  Edit("b/plan.yaml", "candidates: {warp-drive: fp8-w8a8}", "candidates: {quantisation: fp8-w8a8}");
  EXPECT_NE(LoadPlanBundle("b/plan.yaml").status().message().find("did you mean 'quantization'?"), std::string::npos);
}

TEST_F(PlanTest, MissingRequiredEvidenceHolds) {
  Edit("b/plan.yaml", "  - quality.yaml ", "  # - quality.yaml ");
  const Json plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "hold");
  EXPECT_NE(ReasonOf(plan, "inputs").find("quality-eval"), std::string::npos);
}

TEST_F(PlanTest, TheSameBundleTwiceIsByteIdenticalAndEveryInputMovesTheDigest) {
  const Json a = Plan();
  const Json b = Plan();
  EXPECT_EQ(*CanonicalJson(a), *CanonicalJson(b));
  std::set<std::string> digests = {a["digest"].get<std::string>()};
  // A comment changes no figure, but it changes the bytes the decision is bound to.
  for (const char* f : {"b/plan.yaml", "b/policy.yaml", "b/deployment.yaml", "b/inventory.yaml", "b/prices.yaml",
                        "b/benchmark.yaml", "b/workload.yaml", "b/quality.yaml", "b/rollout/ladder.yaml",
                        "b/rollout/shadow.yaml"}) {
    const std::string saved = testing::FileText(f);
    Spit(f, saved + "# touched\n");
    digests.insert(Plan()["digest"].get<std::string>());
    Spit(f, saved);
  }
  EXPECT_EQ(digests.size(), 11u);
}

// A catalog the deployment names redefines the inventory's GPU: the plan read it, so its
// bytes are bound like the bundle's own files, and touching it moves the digest.
TEST_F(PlanTest, ACatalogTheDeploymentNamesIsBoundAndMovesTheDigest) {
  Spit("b/cat.yaml",
       "gpus:\n  h100-sxm-80g:\n    memory: 81559MiB\n    memory_bandwidth: 3.35TB/s\n    bf16_tflops: 989.5\n"
       "    fp8_tflops: 1979\n    int8_tops: 1979\n    default_intra_link: nvlink4\n"
       "    dtypes: [bf16, fp16, fp32, fp8, int8, int4]\n");
  Edit("b/deployment.yaml", "\nseed: 42 ", "\ncatalog: cat.yaml\nseed: 42 ");
  const Json a = Plan();
  Json bound;
  for (const Json& i : a["inputs"]) {
    if (i["name"] == "cat.yaml") bound = i;
  }
  ASSERT_TRUE(bound.is_object()) << a["inputs"].dump(2);
  EXPECT_EQ(bound["role"], "read");
  EXPECT_EQ(bound["content_digest"], DigestOf(testing::FileText("b/cat.yaml")));
  // One byte of the catalog, ten times the GPU's compute: another decision, another digest.
  Edit("b/cat.yaml", "bf16_tflops: 989.5", "bf16_tflops: 9895");
  const Json b = Plan();
  EXPECT_NE(a["digest"], b["digest"]);
  // A comment alone changes no figure, but still the bytes the decision is bound to.
  Edit("b/cat.yaml", "gpus:", "# touched\ngpus:");
  const Json c = Plan();
  EXPECT_NE(b["digest"], c["digest"]);
  EXPECT_EQ(b["decision"], c["decision"]);
}

TEST_F(PlanTest, SignaturesThePolicyRequiresAreChecked) {
  auto bench = GenerateEd25519Key();
  auto policy = GenerateEd25519Key();
  ASSERT_TRUE(bench.ok() && policy.ok());
  Spit("b/bench.pub", bench->public_pem);
  Edit("b/policy.yaml", "  max_age:", "  trust: {benchmark: [bench.pub]}\n  max_age:");
  Json plan = Plan();
  EXPECT_EQ(Deciding(plan), std::set<std::string>{"signature"}) << plan["decision"].dump(2);

  const std::string bytes = testing::FileText("b/benchmark.yaml");
  Spit("b/benchmark.yaml.sig", SignEvidence(bytes, "benchmark", bench->private_pem)->dump());
  plan = Plan();
  EXPECT_EQ(plan["decision"]["release"], "pass") << plan["decision"].dump(2);

  // Deployment trusts its own policy key: the policy must carry its signature, and an
  // evidence signer's key cannot sign the policy.
  plan = Plan(policy->public_pem);
  EXPECT_TRUE(Deciding(plan).contains("policy"));
  Spit("b/policy.yaml.sig", SignEvidence(testing::FileText("b/policy.yaml"), "policy", policy->private_pem)->dump());
  Spit("b/rollout/ladder.yaml.sig", SignEvidence(testing::FileText("b/rollout/ladder.yaml"), "policy", policy->private_pem)->dump());
  plan = Plan(policy->public_pem);
  EXPECT_EQ(plan["decision"]["release"], "pass") << plan["decision"].dump(2);
  Spit("b/policy.yaml.sig", SignEvidence(testing::FileText("b/policy.yaml"), "policy", bench->private_pem)->dump());
  plan = Plan(bench->public_pem);
  EXPECT_NE(ReasonOf(plan, "policy").find("cannot sign the policy"), std::string::npos) << plan["decision"].dump(2);
}

TEST_F(PlanTest, SensitivityNamesWhatWouldReopenTheDecision) {
  auto bundle = LoadPlanBundle("b/plan.yaml");
  ASSERT_TRUE(bundle.ok());
  PlanOptions o;
  o.as_of = *ParseUtcTime(kAsOf);
  auto r = RunPlan(*bundle, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json& s = r->json["sensitivity"];
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0]["name"], "peak_traffic");
  EXPECT_TRUE(s[0]["changes"].get<bool>());  // twice the peak needs more replicas
  // The threshold found by search: just below it the fleet is unchanged, at it it grows.
  const double factor = s[0]["threshold"]["factor"].get<double>();
  EXPECT_GT(factor, 1.0);
  EXPECT_LE(factor, 2.0);
  // A 2x burst shorter than the start-up needs replicas beyond the fleet: a warm pool.
  EXPECT_EQ(s[1]["name"], "burst");
  EXPECT_GT(s[1]["warm_pool"].get<int64_t>(), 0);
  EXPECT_EQ(s[1]["replicas_needed"].get<int64_t>() - s[1]["baseline"]["replicas"].get<int64_t>(),
            s[1]["warm_pool"].get<int64_t>());
  const Json& triggers = r->json["review_triggers"];
  ASSERT_GE(triggers.size(), 3u);
  for (const Json& t : triggers) {
    EXPECT_FALSE(t["trigger"].get<std::string>().empty());
    EXPECT_FALSE(t["evidence"].get<std::string>().empty());
  }
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

// The benchmark's rates simulated (as Atlas ships them): at a fifth of the peak the committed
// GPUs price tp4 and tp8 alike, so the pick at the pessimistic edge of the model's error is
// no cheaper than the other layout as sized, and the plan holds for a measured benchmark.
TEST_F(PlanTest, ASimulatedBenchmarkTheModelsErrorCannotSeparateHolds) {
  Edit("b/benchmark.yaml", "method: measured", "method: simulated");
  const Json plan = Plan();
  EXPECT_EQ(Deciding(plan), (std::set<std::string>{"model-error"})) << plan["decision"].dump(2);
  EXPECT_EQ(plan["decision"]["release"], "hold");
  const std::string why = ReasonOf(plan, "model-error");
  EXPECT_NE(why.find("inside the model's error (aiconfigurator on h100-sxm-80g, +22.6 % step time)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("a measured benchmark of both (method: measured) decides"), std::string::npos) << why;
  const Json& e = plan["model_error"];
  EXPECT_EQ(e["benchmark_method"], "simulated");
  EXPECT_FALSE(e["inside_band"].empty());
  ASSERT_EQ(e["edges"].size(), 2u);
  EXPECT_EQ(e["edges"][0]["edge"], "nominal");
  EXPECT_EQ(e["edges"][1]["edge"], "pessimistic");
  EXPECT_DOUBLE_EQ(e["edges"][1]["step_time_scale"].get<double>(), 1 + e["band"].get<double>());
  // Each layout's rate at the pessimistic edge is its nominal one divided by 1 + band.
  for (size_t i = 0; i < e["edges"][0]["fleets"].size(); ++i) {
    const double nominal = e["edges"][0]["fleets"][i]["replica_rate_per_s"].get<double>();
    const double pessimistic = e["edges"][1]["fleets"][i]["replica_rate_per_s"].get<double>();
    EXPECT_NEAR(pessimistic, nominal / (1 + e["band"].get<double>()), 1e-3 * nominal);
  }
}

// Why the layouts differ, from the deployment's own step model on the inventory's GPU:
// each candidate's decode step at batch 1 and at its operating point, with the collectives
// split out. A measured benchmark moves no rate: both edges size the same fleets.
TEST_F(PlanTest, TheModelErrorSectionExplainsTheLayoutsDecodeSteps) {
  const Json plan = Plan();
  const Json& e = plan["model_error"];
  ASSERT_TRUE(e.is_object()) << plan.dump(2).substr(0, 2000);
  EXPECT_EQ(e["step_model"], "aiconfigurator");
  EXPECT_EQ(e["gpu"], "h100-sxm-80g");
  EXPECT_DOUBLE_EQ(e["band"].get<double>(), StatedErrorOf("aiconfigurator", "h100-sxm-80g").step_time);
  EXPECT_EQ(e["benchmark_method"], "measured");
  EXPECT_EQ(e["edges"][0]["fleets"], e["edges"][1]["fleets"]);
  EXPECT_TRUE(e["inside_band"].empty());
  ASSERT_EQ(e["layouts"].size(), 2u);
  std::map<std::string, Json> by;
  for (const Json& l : e["layouts"]) by[l["layout"].get<std::string>()] = l;
  ASSERT_TRUE(by.contains("tp4") && by.contains("tp8"));
  for (const auto& [name, l] : by) {
    for (const char* at : {"batch_1", "operating_point"}) {
      const Json& s = l[at];
      EXPECT_GT(s["collectives_ms"].get<double>(), 0) << name << " " << at;
      EXPECT_LT(s["collectives_ms"].get<double>(), s["step_ms"].get<double>()) << name << " " << at;
      EXPECT_NEAR(s["collective_share"].get<double>(), s["collectives_ms"].get<double>() / s["step_ms"].get<double>(),
                  1e-3);
    }
    EXPECT_EQ(l["batch_1"]["decodes"], 1);
    EXPECT_GE(l["operating_point"]["decodes"].get<int64_t>(), 1);
    // The operating point carries more work a step than batch 1.
    EXPECT_GT(l["operating_point"]["step_ms"].get<double>(), l["batch_1"]["step_ms"].get<double>()) << name;
  }
  // tp8 reads half the weights per GPU that tp4 does, and all-reduces across twice the ranks.
  EXPECT_LT(by["tp8"]["batch_1"]["step_ms"].get<double>(), by["tp4"]["batch_1"]["step_ms"].get<double>());
  EXPECT_GT(by["tp8"]["batch_1"]["collectives_ms"].get<double>(), by["tp4"]["batch_1"]["collectives_ms"].get<double>());
  EXPECT_EQ(e["reasoning"].size(), 3u);
  EXPECT_NE(plan.dump().find("\"name\":\"model-error\""), std::string::npos);
}

TEST_F(PlanTest, ABenchmarkMethodOtherThanMeasuredOrSimulatedIsALocatedError) {
  Edit("b/benchmark.yaml", "method: measured", "method: guessed");
  auto r = TryPlan();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("benchmark.yaml:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("expected 'measured' or 'simulated', got 'guessed'"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace fleetplan
