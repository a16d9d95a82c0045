// The scenario side of the prefix cache: `engine.prefix_cache` keys and scope,
// `workload.events` invalidations (exact error texts), and the report keys a run writes
// per class and under `fleet`.
#include <string>

#include <gtest/gtest.h>

#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

// A small scenario: one replica, two classes sharing tenant instructions. `engine` and
// `events` are spliced in at fixed lines so error locations are stable.
std::string Scenario(const std::string& cache, const std::string& events) {
  return "version: 1\n"                                            // 1
         "name: cache-test\n"                                      // 2
         "seed: 7\n"                                               // 3
         "model: {name: atlas-70b}\n"                              // 4
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 8}\n"  // 5
         "deployment: {replicas: 1, tp: 4}\n"                      // 6
         "engine:\n"                                               // 7
         "  prefix_cache:\n"                                       // 8
         + cache +                                                 // 9..
         "workload:\n"
         "  requests: 120\n"
         "  arrival: {process: poisson, rate: 4/s}\n"
         "  tenants: {count: 3}\n"
         "  classes:\n"
         "    chat:\n"
         "      share: 0.5\n"
         "      prompt:\n"
         "        - {segment: tenant-instructions, tokens: 1000}\n"
         "        - {segment: unique, tokens: 50}\n"
         "      output_tokens: 20\n"
         "    docs:\n"
         "      share: 0.5\n"
         "      prompt:\n"
         "        - {segment: tenant-instructions, tokens: 1000}\n"
         "        - {segment: document, tokens: 2000, pool: 2}\n"
         "        - {segment: unique, tokens: 30}\n"
         "      output_tokens: 10\n" +
         events;
}

const std::string kCacheOn = "    enabled: true\n";

TEST(PrefixCacheScenario, ReadsTheCacheAndItsDerivedScope) {
  auto s = LoadScenarioText(Scenario(kCacheOn + "    share_across_tenants: true\n"
                                                "    scope: {model_revision: atlas-70b@2024-06}\n",
                                     ""),
                            "s.yaml", ".");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const PrefixCacheConfig& c = s->engine.prefix_cache;
  EXPECT_TRUE(c.enabled);
  EXPECT_TRUE(c.share_across_tenants);
  EXPECT_EQ(c.scope.model_revision, "atlas-70b@2024-06");
  EXPECT_EQ(c.scope.tokenizer, "atlas-70b");
  EXPECT_EQ(c.scope.position_scheme, "rope");
  EXPECT_EQ(c.scope.kv_format, "bf16/16");
  const auto has = [&](const std::string& note) {
    return std::find(s->derived.begin(), s->derived.end(), note) != s->derived.end();
  };
  EXPECT_TRUE(has("engine.prefix_cache.scope.tokenizer: atlas-70b (the model name; not given)"));
  EXPECT_TRUE(has("engine.prefix_cache.scope.position_scheme: rope (rotary; not given)"));
  for (const auto& note : s->derived) EXPECT_EQ(note.find("not simulated"), std::string::npos) << note;
}

TEST(PrefixCacheScenario, UnknownCacheKeyIsLocatedWithDidYouMean) {
  auto s = LoadScenarioText(Scenario(kCacheOn + "    share_accross_tenants: true\n", ""), "s.yaml", ".");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "s.yaml:10:5: engine.prefix_cache: unknown field 'share_accross_tenants'; did you mean "
            "'share_across_tenants'? (valid: enabled, eviction, share_across_tenants, scope)\n"
            "   10 |     share_accross_tenants: true\n"
            "      |     ^\n");
}

TEST(PrefixCacheScenario, EventErrorsAreLocated) {
  struct Case {
    std::string event;
    std::string message;
  };
  // The events list starts on the line after the workload (line 28).
  const std::vector<Case> cases = {
      {"  - {at: 5m, invalidate: tenat, tenant: tenant-1}\n",
       "s.yaml:29:26: workload.events[0].invalidate: unknown invalidation 'tenat'; did you mean 'tenant'? (valid: "
       "model-revision, tokenizer, adapter, tenant, corpus)\n"
       "   29 |   - {at: 5m, invalidate: tenat, tenant: tenant-1}\n"
       "      |                          ^\n"},
      {"  - {at: 5m, invalidate: model-revision, tenant: tenant-1}\n",
       "s.yaml:29:50: workload.events[0].tenant: `tenant` applies to invalidate: tenant or corpus, not "
       "model-revision\n"
       "   29 |   - {at: 5m, invalidate: model-revision, tenant: tenant-1}\n"
       "      |                                                  ^\n"},
      {"  - {at: 5m, invalidate: adapter}\n",
       "s.yaml:29:5: workload.events[0]: missing required field 'adapter'\n"
       "   29 |   - {at: 5m, invalidate: adapter}\n"
       "      |     ^\n"},
      {"  - {at: 5, invalidate: tokenizer}\n",
       "s.yaml:29:10: workload.events[0].at: expected a duration with a unit (ns, us, ms, s, m, min, h), got '5'\n"
       "   29 |   - {at: 5, invalidate: tokenizer}\n"
       "      |          ^\n"},
  };
  for (const Case& c : cases) {
    auto s = LoadScenarioText(Scenario(kCacheOn, "  events:\n" + c.event), "s.yaml", ".");
    ASSERT_FALSE(s.ok()) << c.event;
    EXPECT_EQ(s.status().message(), c.message);
  }
}

TEST(PrefixCacheScenario, UnknownTenantInAnEventIsLocatedWhenTheRunIsBuilt) {
  auto s = LoadScenarioText(Scenario(kCacheOn, "  events:\n  - {at: 5s, invalidate: tenant, tenant: tenant-9}\n"),
                            "s.yaml", ".");
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunOptions opt;
  opt.write_files = false;
  auto r = RunScenario(*s, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "s.yaml:29:42: workload.events[0].tenant: unknown tenant 'tenant-9'; did you mean 'tenant-0'? (valid: "
            "tenant-0, tenant-1, tenant-2)\n"
            "   29 |   - {at: 5s, invalidate: tenant, tenant: tenant-9}\n"
            "      |                                          ^\n");
}

TEST(PrefixCacheScenario, ReportCarriesPrefixCacheFiguresPerClassAndFleet) {
  RunOptions opt;
  opt.write_files = false;
  auto on = LoadScenarioText(Scenario(kCacheOn, "  events:\n  - {at: 10s, invalidate: model-revision}\n"),
                             "s.yaml", ".");
  ASSERT_TRUE(on.ok()) << on.status().message();
  auto r = RunScenario(*on, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json& rep = r->report;
  for (const char* cls : {"chat", "docs"}) {
    const Json& pc = rep["classes"][cls]["prefix_cache"];
    for (const char* key : {"lookups", "hit_blocks", "hit_tokens", "saved_prefill_tokens", "saved_prefill_ms",
                            "hit_rate", "evictions", "invalidations"}) {
      EXPECT_TRUE(pc.contains(key)) << cls << "." << key;
    }
    EXPECT_GT(pc["hit_tokens"].get<int64_t>(), 0) << cls;  // tenant instructions are shared
  }
  const Json& fleet = rep["fleet"]["prefix_cache"];
  EXPECT_EQ(fleet["lookups"].get<int64_t>(), rep["classes"]["chat"]["prefix_cache"]["lookups"].get<int64_t>() +
                                                 rep["classes"]["docs"]["prefix_cache"]["lookups"].get<int64_t>());
  EXPECT_GT(fleet["invalidations"].get<int64_t>(), 0);  // the model-revision event at 10 s
  EXPECT_EQ(fleet, [&] {
    Json engine = rep["engine"]["prefix_cache"];
    engine.erase("mean_pool_share");
    return engine;
  }());

  // Cache off: the same requests, no lookups, later first tokens for the shared prompts.
  auto off = LoadScenarioText(Scenario("    enabled: false\n", ""), "s.yaml", ".");
  ASSERT_TRUE(off.ok());
  auto r_off = RunScenario(*off, opt);
  ASSERT_TRUE(r_off.ok()) << r_off.status().message();
  EXPECT_EQ(r_off->report["fleet"]["prefix_cache"]["lookups"].get<int64_t>(), 0);
  EXPECT_EQ(r_off->requests, r->requests);
  const double ttft_on = rep["classes"]["docs"]["ttft_ms"]["mean"].get<double>();
  const double ttft_off = r_off->report["classes"]["docs"]["ttft_ms"]["mean"].get<double>();
  std::printf("docs mean TTFT: cache on %.1f ms, off %.1f ms\n", ttft_on, ttft_off);
  EXPECT_LT(ttft_on, ttft_off);
}

TEST(PrefixCacheScenario, SameScenarioSameReport) {
  RunOptions opt;
  opt.write_files = false;
  auto s = LoadScenarioText(Scenario(kCacheOn, "  events:\n  - {at: 10s, invalidate: corpus, tenant: tenant-1}\n"),
                            "s.yaml", ".");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto a = RunScenario(*s, opt);
  auto b = RunScenario(*s, opt);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->report.dump(), b->report.dump());
}

}  // namespace
}  // namespace fleetplan
