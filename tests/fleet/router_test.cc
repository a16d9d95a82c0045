// Routers: the factory and the scenario keys (exact located errors), tie spreading, and
// the done-when outcomes of issue 6 read from simulations:
//   - prefix-heavy traffic: cache-aware beats round-robin on prefix hit tokens and
//     goodput;
//   - a hot tenant: pure cache affinity (weighted, prefix only) piles the tenant onto one
//     replica; cache-aware spreads it.
#include "fleetplan/fleet/router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "fleetplan/fleet/prefix_view.h"
#include "fleetplan/core/scenario_schema.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleet/fleet_scenarios.h"
#include "fleetplan/metrics/records_io.h"

namespace fleetplan {
namespace {

using testing::FleetScenario;
using testing::RunReport;

std::string Policy(const std::string& policy, const std::string& extra = "") {
  return "  policy: " + policy + "\n  telemetry_delay: 20ms\n" + extra;
}

RouterConfig Config(const std::string& policy) {
  RouterConfig c;
  c.policy = policy;
  return c;
}

int64_t MaxQueueDepth(const Json& report) {
  int64_t m = 0;
  for (const Json& r : report["replicas"]) m = std::max(m, r["max_queue_depth"].get<int64_t>());
  return m;
}

int64_t MaxRouted(const Json& report) {
  int64_t m = 0;
  for (const Json& r : report["replicas"]) m = std::max(m, r["routed"].get<int64_t>());
  return m;
}

// --- factory and keys -----------------------------------------------------------------

TEST(Router, UnknownPolicyListsTheValidOnes) {
  auto r = MakeRouter(Config("cache-awre"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "unknown router policy 'cache-awre'; did you mean 'cache-aware'? (valid: round-robin, "
            "least-outstanding, cache-aware, weighted, adapter-aware)");
}

TEST(Router, UnknownPolicyInAScenarioIsLocated) {
  auto s = LoadScenarioText(FleetScenario("  policy: wieghted\n", "  requests: 1\n", "  {}\n"), "r.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "r.yaml:13:11: router.policy: unknown router policy 'wieghted'; did you mean 'weighted'? (valid: "
            "round-robin, least-outstanding, cache-aware, weighted, adapter-aware)\n"
            "   13 |   policy: wieghted\n"
            "      |           ^\n");
}

TEST(Router, UnknownScorerIsLocatedWithDidYouMean) {
  auto s = LoadScenarioText(
      FleetScenario("  policy: weighted\n  weighted: {prefix: 3, queu: 2}\n", "  requests: 1\n", "  {}\n"), "r.yaml",
      "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "r.yaml:14:25: router.weighted: unknown field 'queu'; did you mean 'queue'? (valid: prefix, queue, kv, "
            "running, adapter)\n"
            "   14 |   weighted: {prefix: 3, queu: 2}\n"
            "      |                         ^\n");
}

TEST(Router, PolicySectionsApplyToTheirPolicyOnly) {
  auto s = LoadScenarioText(
      FleetScenario("  policy: round-robin\n  weighted: {prefix: 1}\n", "  requests: 1\n", "  {}\n"), "r.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("router.weighted: `weighted` applies to policy: weighted, not round-robin"),
            std::string::npos)
      << s.status().message();
}

TEST(Router, AdapterAwareLoadWeightMustExceedAffinity) {
  auto s = LoadScenarioText(
      FleetScenario("  policy: adapter-aware\n  adapter_aware: {load: 1, affinity: 2}\n", "  requests: 1\n", "  {}\n"),
      "r.yaml", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("router.adapter_aware.load: expected load > affinity (got load 1, "
                                      "affinity 2), so one hot adapter cannot make a hot replica"),
            std::string::npos)
      << s.status().message();
}

// --- the registry ----------------------------------------------------------------------

// Every row: builds a router of its name, its own section is a router key whose reader
// accepts an absent section, and its reads-prefixes trait is what the router does — fed
// views that differ only in the matched prefix, it prefers the replica holding it exactly
// when the trait says it reads prefixes.
TEST(RouterRegistry, EveryRowBuildsItsRouterAndItsTraitMatchesItsDecisions) {
  ASSERT_EQ(RouterNames().size(), RouterPolicies().size());
  for (const RouterPolicy& row : RouterPolicies()) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(FindRouterPolicy(row.name), &row);
    RouterConfig c = Config(std::string(row.name));
    c.weights = {{"prefix", 1.0}};
    if (!row.section.empty()) {
      const auto& keys = scenario_keys::kRouter;
      EXPECT_NE(std::find(keys.begin(), keys.end(), std::string(row.section)), keys.end());
      ASSERT_NE(row.read, nullptr);
      auto doc = YamlDocument::LoadString("{}", "r.yaml");
      ASSERT_TRUE(doc.ok());
      RouterConfig read = c;
      std::vector<std::string> derived;
      EXPECT_TRUE(row.read(doc->root()[row.section], read, derived).ok());
    }
    auto router = MakeRouter(c, RouterContext{Us(20), {}});
    ASSERT_TRUE(router.ok()) << router.status().message();
    EXPECT_EQ((*router)->name(), row.name);
    std::vector<ReplicaView> view(2);
    view[1].matched_prefix_tokens = 1000;
    Request r;
    r.prompt = {{1, 1000}};
    const int32_t chosen = (*router)->Route(r, view).replica;
    EXPECT_EQ(chosen == 1, row.reads_prefixes(c));
    EXPECT_EQ(RouterReadsPrefixes(c), row.reads_prefixes(c));
  }
  EXPECT_EQ(FindRouterPolicy("cache-awre"), nullptr);
  RouterConfig weighted_without_prefix = Config("weighted");
  weighted_without_prefix.weights = {{"queue", 1.0}};
  EXPECT_FALSE(RouterReadsPrefixes(weighted_without_prefix));
}

// --- ties -------------------------------------------------------------------------------

// Every policy, fed the same all-equal view again and again, spreads over every replica.
TEST(Router, EqualScoresRotateInsteadOfPilingOntoTheFirstReplica) {
  for (const std::string& name : RouterNames()) {
    RouterConfig c = Config(name);
    c.weights = {{"prefix", 1.0}, {"queue", 1.0}};
    auto router = MakeRouter(c, RouterContext{Ms(1) / 100, {}});
    ASSERT_TRUE(router.ok()) << name;
    std::vector<ReplicaView> view(3);
    Request r;
    r.prompt = {{1, 100}};
    std::vector<int32_t> chosen;
    for (int k = 0; k < 6; ++k) chosen.push_back((*router)->Route(r, view).replica);
    EXPECT_EQ(chosen, (std::vector<int32_t>{0, 1, 2, 0, 1, 2})) << name;
  }
}

TEST(Router, CacheAwareReportsItsComponents) {
  auto router = MakeRouter(Config("cache-aware"), RouterContext{Us(20), {}});
  ASSERT_TRUE(router.ok());
  std::vector<ReplicaView> view(2);
  view[0].telemetry.outstanding_tokens = 1000;  // busy, holds the prefix
  view[0].matched_prefix_tokens = 800;
  view[1].telemetry.outstanding_tokens = 100;  // idle, lacks it
  Request r;
  r.prompt = {{1, 800}, {2, 200}};
  const RouteDecision d = (*router)->Route(r, view);
  // replica 0: (1000 + 200) x 20us = 24 ms; replica 1: (100 + 1000) x 20us = 22 ms.
  EXPECT_EQ(d.replica, 1);
  EXPECT_EQ(d.queued_work, Ms(2));
  EXPECT_EQ(d.recompute, Ms(20));
}

// Choosing the serving replica of a disaggregated request, a missing token costs its KV
// transfer, not its recomputation: the cached replica's queue now weighs more.
TEST(Router, CacheAwarePricesMissingTokensAtTheTransferCostWhenTheyAreFetched) {
  auto router = MakeRouter(Config("cache-aware"), RouterContext{Us(20), Us(2)});
  ASSERT_TRUE(router.ok());
  std::vector<ReplicaView> view(2);
  view[0].telemetry.outstanding_tokens = 1000;
  view[0].matched_prefix_tokens = 800;
  view[1].telemetry.outstanding_tokens = 100;
  Request r;
  r.prompt = {{1, 800}, {2, 200}};
  // replica 0: 1000 x 20us + 200 x 2us = 20.4 ms; replica 1: 100 x 20us + 1000 x 2us = 4 ms.
  const RouteDecision d = (*router)->Route(r, view);
  EXPECT_EQ(d.replica, 1);
  EXPECT_EQ(d.queued_work, Ms(2));
  EXPECT_EQ(d.recompute, Ms(2));
  view[1].telemetry.outstanding_tokens = 990;  // 19.8 + 2 = 21.8 ms > 20.4 ms
  EXPECT_EQ((*router)->Route(r, view).replica, 0);
}

TEST(Router, LeastOutstandingCountsTokensOrRequests) {
  std::vector<ReplicaView> view(2);
  view[0].telemetry.running = 1;  // one long request
  view[0].telemetry.outstanding_tokens = 5000;
  view[1].telemetry.running = 3;  // three short ones
  view[1].telemetry.outstanding_tokens = 300;
  Request r;
  r.prompt = {{1, 100}};
  RouterConfig by_tokens = Config("least-outstanding");
  RouterConfig by_requests = Config("least-outstanding");
  by_requests.outstanding_by = OutstandingBy::kRequests;
  EXPECT_EQ((*MakeRouter(by_tokens))->Route(r, view).replica, 1);
  EXPECT_EQ((*MakeRouter(by_requests))->Route(r, view).replica, 0);
}

TEST(Router, ScenarioKeysReachTheConfig) {
  auto s =
      LoadScenarioText(FleetScenario("  policy: least-outstanding\n  outstanding_by: requests\n  precise: true\n",
                                     "  requests: 1\n  arrival: {process: poisson, rate: 1/s}\n  classes:\n"
                                     "    c: {share: 1.0, prompt: [{segment: unique, tokens: 10}], output_tokens: 1}\n",
                                     "  c: {}\n"),
                       "r.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->router.outstanding_by, OutstandingBy::kRequests);
  EXPECT_TRUE(s->router.precise);
  auto w =
      LoadScenarioText(FleetScenario("  policy: weighted\n",
                                     "  requests: 1\n  arrival: {process: poisson, rate: 1/s}\n  classes:\n"
                                     "    c: {share: 1.0, prompt: [{segment: unique, tokens: 10}], output_tokens: 1}\n",
                                     "  c: {}\n"),
                       "r.yaml", "");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->router.weights, (std::map<std::string, double>{{"kv", 2.0}, {"prefix", 3.0}, {"queue", 2.0}}));
  EXPECT_NE(
      std::find(w->derived.begin(), w->derived.end(), "router.weighted: {prefix: 3, queue: 2, kv: 2} (not given)"),
      w->derived.end());
}

// The router's own prefix record: leading blocks only, per replica, tails dropped first.
TEST(PrefixView, MatchesLeadingBlocksAndDropsChainTailsFirst) {
  PrefixView v(/*block_tokens=*/16, /*share_across_tenants=*/false);
  EXPECT_EQ(v.AddReplica(/*capacity_blocks=*/4), 0);
  EXPECT_EQ(v.AddReplica(/*capacity_blocks=*/4), 1);
  Request a;
  a.tenant = 0;
  a.prompt = {{1, 32}, {2, 33}};  // 65 tokens: 4 full blocks (the last token stays uncached)
  std::vector<BlockHash> ha;
  v.Hash(a, &ha);
  ASSERT_EQ(ha.size(), 4u);
  EXPECT_EQ(v.MatchedTokens(0, ha), 0);
  v.Record(0, ha);
  EXPECT_EQ(v.MatchedTokens(0, ha), 64);
  EXPECT_EQ(v.MatchedTokens(1, ha), 0);
  Request b = a;
  b.prompt = {{1, 32}, {3, 40}};  // shares the first 2 blocks
  std::vector<BlockHash> hb;
  v.Hash(b, &hb);
  EXPECT_EQ(v.MatchedTokens(0, hb), 32);
  v.Record(0, hb);  // 2 new blocks; a's two tail blocks are the least recent and go
  EXPECT_EQ(v.MatchedTokens(0, hb), 64);
  EXPECT_EQ(v.MatchedTokens(0, ha), 32);
  Request other = a;
  other.tenant = 1;  // another tenant's namespace: no match
  std::vector<BlockHash> ho;
  v.Hash(other, &ho);
  EXPECT_EQ(v.MatchedTokens(0, ho), 0);
}

// --- outcomes ---------------------------------------------------------------------------

// Shared tenant instructions and documents: 8 tenants x (1500 instruction tokens + 4
// documents of 3000) is ~108k distinct prefix tokens, more than one replica's KV pool at
// 0.3 GPU memory utilization but well within four.
std::string PrefixHeavyWorkload(const std::string& rate = "30/s") {
  return "  requests: 1200\n"
         "  arrival: {process: poisson, rate: " +
         rate +
         "}\n"
         "  tenants: {count: 8, popularity: uniform}\n"
         "  classes:\n"
         "    docs:\n"
         "      share: 1.0\n"
         "      prompt:\n"
         "        - {segment: tenant-instructions, tokens: 1500}\n"
         "        - {segment: document, tokens: 3000, pool: 4, popularity: uniform}\n"
         "        - {segment: unique, tokens: 100}\n"
         "      output_tokens: 30\n";
}

// At 60 requests/s round-robin recomputes enough prefixes to miss the TTFT objective;
// cache-aware (with the router's own prefix record, and with the replicas' true caches)
// keeps each tenant's documents on fewer replicas.
TEST(RouterOutcome, CacheAwareBeatsRoundRobinOnPrefixHeavyTraffic) {
  const std::string slo = "  docs: {ttft: 400ms}\n";
  const std::string workload = PrefixHeavyWorkload("60/s");
  auto hit = [](const Json& j) { return j["fleet"]["prefix_cache"]["hit_tokens"].get<int64_t>(); };
  auto goodput = [](const Json& j) { return j["fleet"]["goodput_rps"].get<double>(); };
  auto rr = RunReport(FleetScenario(Policy("round-robin"), workload, slo));
  ASSERT_TRUE(rr.ok()) << rr.status().message();
  auto lo = RunReport(FleetScenario(Policy("least-outstanding"), workload, slo));
  ASSERT_TRUE(lo.ok()) << lo.status().message();
  auto ca = RunReport(FleetScenario(Policy("cache-aware"), workload, slo));
  ASSERT_TRUE(ca.ok()) << ca.status().message();
  auto precise = RunReport(FleetScenario(Policy("cache-aware", "  precise: true\n"), workload, slo));
  ASSERT_TRUE(precise.ok()) << precise.status().message();
  std::printf("kv tokens per replica %lld\n",
              static_cast<long long>((*rr)["deployment"]["kv_tokens_per_replica"].get<int64_t>()));
  for (const auto& [name, j] : {std::pair{"round-robin", &*rr},
                                {"least-outstanding", &*lo},
                                {"cache-aware", &*ca},
                                {"cache-aware precise", &*precise}}) {
    std::printf("%-20s hit tokens %lld, goodput %.2f/s, attainment %.3f, max queue depth %lld\n", name,
                static_cast<long long>(hit(*j)), goodput(*j), (*j)["fleet"]["slo_attainment"].get<double>(),
                static_cast<long long>(MaxQueueDepth(*j)));
  }
  EXPECT_GT(hit(*ca), hit(*rr));
  EXPECT_GT(goodput(*ca), goodput(*rr));
  EXPECT_GT(hit(*ca), hit(*lo));
  EXPECT_GT(goodput(*ca), goodput(*lo));
  EXPECT_GT(hit(*precise), hit(*rr));
  EXPECT_GT(goodput(*precise), goodput(*rr));
}

// The hot tenant (fleet_workloads.h) at 40/s: more than one replica can serve
// (max_running 16).
std::string HotTenantWorkload() { return testing::HotTenantWorkload(1600, "40/s"); }

TEST(RouterOutcome, PureCacheAffinityMakesAHotspotThatCacheAwareAvoids) {
  const std::string slo = "  chat: {ttft: 1s}\n";
  const std::string sched = "max_running: 16";
  auto affinity =
      RunReport(FleetScenario(Policy("weighted", "  weighted: {prefix: 1}\n"), HotTenantWorkload(), slo, sched));
  ASSERT_TRUE(affinity.ok()) << affinity.status().message();
  auto ca = RunReport(FleetScenario(Policy("cache-aware"), HotTenantWorkload(), slo, sched));
  ASSERT_TRUE(ca.ok()) << ca.status().message();
  for (const auto& [name, j] : {std::pair{"prefix-affinity", &*affinity}, {"cache-aware", &*ca}}) {
    std::printf(
        "%-16s busiest replica routed %lld of 1600, max queue depth %lld, ttft p99 %.0f ms, goodput "
        "%.2f/s, hit tokens %lld\n",
        name, static_cast<long long>(MaxRouted(*j)), static_cast<long long>(MaxQueueDepth(*j)),
        (*j)["classes"]["chat"]["ttft_ms"]["p99"].get<double>(), (*j)["fleet"]["goodput_rps"].get<double>(),
        static_cast<long long>((*j)["fleet"]["prefix_cache"]["hit_tokens"].get<int64_t>()));
  }
  EXPECT_GT(MaxRouted(*affinity), 1200);  // the hot tenant's replica takes most of it
  EXPECT_LT(MaxRouted(*ca), 700);         // spread: no replica far above a quarter (400)
  EXPECT_LT(MaxQueueDepth(*ca) * 4, MaxQueueDepth(*affinity));
  EXPECT_GT((*ca)["fleet"]["goodput_rps"].get<double>(), (*affinity)["fleet"]["goodput_rps"].get<double>());
}

// requests.jsonl carries each request's routing, and the records reader accepts it.
class CollectingSink final : public RecordSink {
 public:
  Expected<ClassId> ResolveClass(std::string_view) override { return ClassId{0}; }
  bool NeedsItl(ClassId) const override { return false; }
  void Add(const RequestRecord& r) override { records.push_back(r); }
  std::vector<RequestRecord> records;
};

TEST(RouterOutcome, RecordsCarryTheRoutingAndReadBack) {
  std::string workload = PrefixHeavyWorkload();
  workload.replace(workload.find("requests: 1200"), 14, "requests: 200");
  auto s = LoadScenarioText(FleetScenario(Policy("cache-aware"), workload, "  docs: {ttft: 400ms}\n"), "r.yaml", "");
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.out_dir = ::testing::TempDir() + "/router_records";
  opt.write_requests = true;
  auto run = RunScenario(*s, opt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto reader = MakeRecordReader("fleetplan");
  ASSERT_TRUE(reader.ok());
  CollectingSink sink;
  auto info = (*reader)->Read(*opt.out_dir + "/requests.jsonl", sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  ASSERT_EQ(sink.records.size(), 200u);
  std::vector<int64_t> routed(4, 0);
  int64_t matched = 0;
  for (const RequestRecord& r : sink.records) {
    ASSERT_TRUE(r.replica && r.matched_prefix_tokens && r.queue_age_at_assignment);
    ++routed[static_cast<size_t>(*r.replica)];
    matched += *r.matched_prefix_tokens;
  }
  for (size_t i = 0; i < routed.size(); ++i) {
    EXPECT_EQ(routed[i], run->report["replicas"][i]["routed"].get<int64_t>()) << i;
  }
  EXPECT_GT(matched, 0);
}

}  // namespace
}  // namespace fleetplan
