// engine.speculation in a fleet: the reader's located errors, the draft's memory out of
// the KV pool, and the trade the section exists to show — speculation that lowers a
// lightly loaded replica's latency and lowers the goodput of the same replica under load.
#include "fleetplan/fleet/speculation.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/engine/speculation.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

// One llama-3.1-70b replica on TP4 H100 (roofline), chat traffic at `rate` for `duration`;
// `speculation` is the engine.speculation block ("" for none).
std::string Scenario70b(const std::string& rate, const std::string& duration, const std::string& speculation) {
  return "version: 1\n"
         "name: speculation\n"
         "seed: 7\n"
         "model: {name: llama-3.1-70b, max_context: 8192}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 4}\n"
         "deployment: {replicas: 1, tp: 4}\n"
         "engine:\n"
         "  scheduler: {policy: decode-first, max_batched_tokens: 8192, max_running: 256}\n"
         "  step_model: {kind: roofline}\n"
         "  host_overhead: 0.4ms\n" +
         speculation +
         "workload:\n"
         "  duration: " + duration + "\n"
         "  arrival: {process: poisson, rate: " + rate + "}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 1.0\n"
         "      prompt: [{segment: unique, tokens: {uniform: [200, 1000]}}]\n"
         "      output_tokens: {uniform: [100, 400]}\n"
         "slo:\n"
         "  chat: {ttft: 2s, tpot: 40ms}\n";
}

const char* const kDraft =
    "  speculation:\n"
    "    method: draft\n"
    "    draft: {model: llama-3.1-8b}\n"
    "    tokens_per_round: 4\n"
    "    acceptance: [0.8, 0.75, 0.7, 0.65]\n";

Expected<RunResult> RunText(const std::string& text) {
  FP_ASSIGN_OR_RETURN(Scenario s, LoadScenarioText(text, "spec.yaml", ""));
  RunOptions opt;
  opt.write_files = false;
  return RunScenario(s, opt);
}

double TpotP50Ms(const RunResult& r) {
  return r.result.report.classes.at(0).of(LatencyMetric::kTpot).p50.value().millis();
}

TEST(FleetSpeculation, LowersIsolatedLatencyButLowersGoodputUnderLoad) {
  // Lightly loaded (0.5/s): fewer, larger steps per answer.
  auto plain_light = RunText(Scenario70b("0.5/s", "120s", ""));
  auto spec_light = RunText(Scenario70b("0.5/s", "120s", kDraft));
  ASSERT_TRUE(plain_light.ok()) << plain_light.status().message();
  ASSERT_TRUE(spec_light.ok()) << spec_light.status().message();
  const double plain_tpot = TpotP50Ms(*plain_light);
  const double spec_tpot = TpotP50Ms(*spec_light);
  EXPECT_LT(spec_tpot, 0.8 * plain_tpot) << "plain " << plain_tpot << " ms, speculative " << spec_tpot << " ms";
  // Heavily loaded (16/s): verification tokens compete with decodes and prefills for
  // the step, rejected drafts are wasted work, and the draft's memory shrinks the batch.
  auto plain_heavy = RunText(Scenario70b("16/s", "120s", ""));
  auto spec_heavy = RunText(Scenario70b("16/s", "120s", kDraft));
  ASSERT_TRUE(plain_heavy.ok()) << plain_heavy.status().message();
  ASSERT_TRUE(spec_heavy.ok()) << spec_heavy.status().message();
  const double plain_goodput = plain_heavy->result.report.fleet.goodput_rps;
  const double spec_goodput = spec_heavy->result.report.fleet.goodput_rps;
  EXPECT_LT(spec_goodput, 0.9 * plain_goodput) << "plain " << plain_goodput << "/s, speculative " << spec_goodput << "/s";
  // Turning drafting off above a batch recovers most of the loss and keeps the light gain.
  const std::string guarded = std::string(kDraft) + "    disable_above_batch: 8\n";
  auto guarded_heavy = RunText(Scenario70b("16/s", "120s", guarded));
  auto guarded_light = RunText(Scenario70b("0.5/s", "120s", guarded));
  ASSERT_TRUE(guarded_heavy.ok()) << guarded_heavy.status().message();
  ASSERT_TRUE(guarded_light.ok()) << guarded_light.status().message();
  EXPECT_GT(guarded_heavy->result.report.fleet.goodput_rps, spec_goodput);
  EXPECT_LT(TpotP50Ms(*guarded_light), 0.8 * plain_tpot);
}

TEST(FleetSpeculation, TheDraftsWeightsAndKvComeOutOfTheTargetsPool) {
  auto plain = LoadScenarioText(Scenario70b("1/s", "10s", ""), "spec.yaml", "");
  auto spec = LoadScenarioText(Scenario70b("1/s", "10s", kDraft), "spec.yaml", "");
  ASSERT_TRUE(plain.ok() && spec.ok());
  auto plain_plan = Bind(*plain);
  auto spec_plan = Bind(*spec);
  ASSERT_TRUE(plain_plan.ok()) << plain_plan.status().message();
  ASSERT_TRUE(spec_plan.ok()) << spec_plan.status().message();
  const BoundPool& p = plain_plan->primary_pool();
  const BoundPool& s = spec_plan->primary_pool();
  ASSERT_TRUE(s.draft_memory.has_value());
  // llama-3.1-8b in bf16 sharded 4 ways: about 4 GB of weights per rank; its KV per
  // token per rank: 32 layers x 2 x 8 heads x 128 x 2 bytes / 4 = 32 KiB.
  EXPECT_NEAR(s.draft_memory->weights_per_rank.gb(), 16.06 / 4, 0.1);
  EXPECT_EQ(s.draft_memory->kv_per_token_per_rank.count(), 32 * 1024);
  const int64_t expected = (p.kv.kv_bytes_per_rank - s.draft_memory->weights_per_rank).count() /
                           ((p.kv.kv_bytes_per_token_per_rank + s.draft_memory->kv_per_token_per_rank) * 16).count();
  EXPECT_EQ(s.kv.kv_blocks_per_replica, expected);
  EXPECT_LT(s.kv.kv_blocks_per_replica, p.kv.kv_blocks_per_replica);
  bool noted = false;
  for (const std::string& n : spec_plan->notes) noted = noted || n.find("the draft llama-3.1-8b takes") != std::string::npos;
  EXPECT_TRUE(noted);
  // The speculation settings are part of the plan's canonical form.
  EXPECT_NE(*plain_plan->Digest(), *spec_plan->Digest());
}

TEST(FleetSpeculation, NgramDraftsCostNoMemoryAndTheReportCountsRounds) {
  const std::string ngram =
      "  speculation: {method: ngram, tokens_per_round: 3, acceptance: [0.6, 0.5, 0.4]}\n";
  auto r = RunText(Scenario70b("1/s", "30s", ngram));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json& sc = r->report["engine"]["speculation"];
  EXPECT_TRUE(sc["enabled"].get<bool>());
  EXPECT_GT(sc["rounds"].get<int64_t>(), 0);
  EXPECT_EQ(sc["emitted_tokens"].get<int64_t>(), sc["accepted_tokens"].get<int64_t>() + sc["rounds"].get<int64_t>());
  // Mean accepted tracks the declared model: 0.6 + 0.6*0.5 + 0.6*0.5*0.4 = 1.02 per full round.
  EXPECT_NEAR(sc["mean_accepted"].get<double>(), 1.02, 0.08);
  EXPECT_EQ(sc["draft_time_ms"].get<double>(), 0.0);
  EXPECT_NE(r->summary.find("speculation (ngram, 3 tokens/round)"), std::string::npos) << r->summary;
  auto plain = RunText(Scenario70b("1/s", "30s", ""));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->report["engine"].contains("speculation"));
  EXPECT_EQ(r->report["deployment"]["kv_blocks_per_replica"], plain->report["deployment"]["kv_blocks_per_replica"]);
}

// The report judges what the run's speculation cost by the gate's rule
// (JudgeSpeculationCost) on the declared basis; a low-acceptance draft that pays per
// emitted token does not per accepted token.
TEST(FleetSpeculation, TheReportJudgesTheCostByTheGatesRuleOnTheDeclaredBasis) {
  const std::string weak =
      "  speculation:\n"
      "    method: draft\n"
      "    draft: {model: llama-3.1-8b}\n"
      "    tokens_per_round: 2\n"
      "    acceptance: [0.6, 0.4]\n";
  for (const char* basis : {"emitted", "accepted"}) {
    auto r = RunText(Scenario70b("0.5/s", "30s", weak + "    basis: " + basis + "\n"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const Json& sc = r->report["engine"]["speculation"];
    const Json& cost = sc["cost"];
    ASSERT_TRUE(cost.is_object()) << sc.dump();
    EXPECT_EQ(cost["basis"], basis);
    const double round = cost["round_ms"].get<double>(), ordinary = cost["ordinary_ms"].get<double>();
    const double accepted = cost["mean_accepted"].get<double>();
    EXPECT_NEAR(accepted, sc["mean_accepted"].get<double>(), 1e-6);
    EXPECT_GT(ordinary, 0.0);
    EXPECT_GT(round, ordinary);  // the draft's steps and the larger verify chunks add time
    EXPECT_NEAR(cost["cost_per_emitted_ms"].get<double>(), round / (accepted + 1), 1e-3 * round);
    EXPECT_NEAR(cost["cost_per_accepted_ms"].get<double>(), round / accepted, 1e-3 * round);
    const SpeculationEconomics rule = JudgeSpeculationCost(
        std::string(basis) == "emitted" ? SpeculationBasis::kEmitted : SpeculationBasis::kAccepted, round, accepted,
        ordinary);
    EXPECT_EQ(cost["pays"].get<bool>(), rule.pays);
    EXPECT_NE(r->summary.find(fmt::format("speculation cost ({} basis)", basis)), std::string::npos) << r->summary;
  }
}

TEST(FleetSpeculation, AcceptanceFromAMeasuredRoundsFile) {
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream f(dir + "/rounds.jsonl");
    // Position 1 accepted in 3 of 4 rounds; position 2 in 1 of the 3 that got there.
    f << R"({"draft": [1, 2], "target": [1, 2], "draft_ms": 1, "verify_ms": 5})" << "\n"
      << R"({"draft": [1, 2], "target": [1, 9], "draft_ms": 1, "verify_ms": 5})" << "\n"
      << R"({"draft": [1, 2], "target": [1, 9], "draft_ms": 1, "verify_ms": 5})" << "\n"
      << R"({"draft": [1, 2], "target": [9, 9], "draft_ms": 1, "verify_ms": 5})" << "\n";
  }
  const std::string block = "  speculation: {method: ngram, tokens_per_round: 2, acceptance: {rounds: rounds.jsonl}}\n";
  auto s = LoadScenarioText(Scenario70b("1/s", "10s", block), dir + "/spec.yaml", dir);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->speculation.config.acceptance.size(), 2u);
  EXPECT_DOUBLE_EQ(s->speculation.config.acceptance[0], 0.75);
  EXPECT_DOUBLE_EQ(s->speculation.config.acceptance[1], 1.0 / 3.0);
  EXPECT_EQ(s->speculation.config.acceptance_source, "rounds.jsonl");
  // Three tokens per round ask for a position the file never drafted.
  const std::string three = "  speculation: {method: ngram, tokens_per_round: 3, acceptance: {rounds: rounds.jsonl}}\n";
  auto bad = LoadScenarioText(Scenario70b("1/s", "10s", three), dir + "/spec.yaml", dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the rounds drafted at most 2 tokens"), std::string::npos)
      << bad.status().message();
}

// Every bad section is a located error naming the key.
TEST(FleetSpeculation, BadSectionsAreLocatedErrors) {
  struct Case {
    std::string block;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"  speculation: {method: eagle, tokens_per_round: 2, acceptance: [0.5, 0.5]}\n", "unknown speculation method 'eagle'"},
      {"  speculation: {method: ngram, tokens_per_round: 0, acceptance: []}\n", "expected an integer >= 1"},
      {"  speculation: {method: ngram, tokens_per_round: 65, acceptance: [0.5]}\n", "at most 64 tokens per round"},
      {"  speculation: {method: ngram, tokens_per_round: 2, acceptance: [0.5]}\n", "expected 2 conditional acceptance"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: [1.5]}\n", "between 0 and 1"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: 0.5}\n", "{rounds: FILE}"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: [0.5], min_remaining: 1}\n", "expected an integer >= 2"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: [0.5], draft: {model: llama-3.1-8b}}\n",
       "takes no draft model"},
      {"  speculation: {method: draft, tokens_per_round: 1, acceptance: [0.5], draft: {model: llama-9b}}\n",
       "engine.speculation.draft.model"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: [0.5], batch: 3}\n", "unknown field 'batch'"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: [0.5], basis: tokens}\n", "emitted"},
      {"  speculation: {method: ngram, tokens_per_round: 1, acceptance: {rounds: missing.jsonl}}\n", "missing.jsonl"},
  };
  for (const Case& c : cases) {
    auto s = LoadScenarioText(Scenario70b("1/s", "10s", c.block), "spec.yaml", "");
    ASSERT_FALSE(s.ok()) << c.block;
    const std::string& m = s.status().message();
    EXPECT_NE(m.find("spec.yaml:"), std::string::npos) << m;
    EXPECT_NE(m.find(c.message), std::string::npos) << m;
  }
  // Speculation runs on one pipeline stage.
  std::string with_pp = Scenario70b("1/s", "10s", kDraft);
  with_pp.replace(with_pp.find("deployment: {replicas: 1, tp: 4}"), 32, "deployment: {replicas: 1, tp: 2, pp: 2}");
  auto s = LoadScenarioText(with_pp, "spec.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("one pipeline stage"), std::string::npos) << s.status().message();
}

TEST(FleetSpeculation, SameSeedSameBytes) {
  auto a = RunText(Scenario70b("4/s", "20s", kDraft));
  auto b = RunText(Scenario70b("4/s", "20s", kDraft));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*CanonicalJson(a->report), *CanonicalJson(b->report));
  std::string other_seed = Scenario70b("4/s", "20s", kDraft);
  other_seed.replace(other_seed.find("seed: 7"), 7, "seed: 8");
  auto c = RunText(other_seed);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->report["engine"]["speculation"]["accepted_tokens"], c->report["engine"]["speculation"]["accepted_tokens"]);
}

}  // namespace
}  // namespace fleetplan
