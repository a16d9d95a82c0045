// Open-loop generators: deterministic, each component on its own stream, shares and
// popularity as declared, shared content with stable identity and length, sessions
// that extend the previous prompt, limits that hold.
#include "fleetplan/workload/generator.h"

#include <cmath>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "fleetplan/workload/content.h"
#include "fleetplan/workload/trace.h"
#include "workload/test_util.h"

namespace fleetplan {
namespace {

using testing::Drain;
using testing::SpecFromYaml;

constexpr const char* kAtlas = R"(workload:
  duration: 10m
  arrival: {process: poisson, rate: 8/s}
  tenants: {count: 20, popularity: {zipf: 1.1}}
  classes:
    interactive:
      share: 0.70
      prompt:
        - {segment: tenant-instructions, tokens: 1500}
        - {segment: unique, tokens: {lognormal: {median: 300, p99: 2000}}}
      output_tokens: {lognormal: {median: 150, p99: 800}}
    document:
      share: 0.20
      prompt:
        - {segment: tenant-instructions, tokens: 1500}
        - {segment: document, tokens: {uniform: [1000, 8000]}, pool: 200}
        - {segment: unique, tokens: 500}
      output_tokens: {lognormal: {median: 200, p99: 300}, max: 300}
    research:
      share: 0.10
      prompt:
        - {segment: unique, tokens: {uniform: [8000, 30000]}}
      output_tokens: {uniform: [1000, 4000]}
)";

WorkloadSpec Spec(const std::string& yaml) {
  auto spec = SpecFromYaml(yaml);
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return *spec;
}

std::vector<Request> Generate(const std::string& yaml, uint64_t seed, SourceLimits limits = {}) {
  auto gen = MakeGenerator(Spec(yaml), seed, limits);
  EXPECT_TRUE(gen.ok()) << (gen.ok() ? "" : gen.status().message());
  return Drain(**gen);
}

TEST(GeneratorTest, SameSeedSameRequestsOtherSeedOthers) {
  const auto a = Generate(kAtlas, 42, testing::Until(Minutes(1)));
  const auto b = Generate(kAtlas, 42, testing::Until(Minutes(1)));
  const auto c = Generate(kAtlas, 43, testing::Until(Minutes(1)));
  ASSERT_GT(a.size(), 300u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].id, static_cast<RequestId>(i));
    if (i > 0) {
      ASSERT_GE(a[i].arrival, a[i - 1].arrival);
    }
    ASSERT_LT(a[i].arrival, SimTime::Zero() + Minutes(1));
  }
}

TEST(GeneratorTest, GoldenFirstRequests) {
  // Pins the stream layout: a change here changes every generated workload.
  const auto r = Generate(kAtlas, 42, testing::Requests(3));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].arrival.ns(), 78515906);
  EXPECT_EQ(r[0].class_id, 1);
  EXPECT_EQ(r[0].output_tokens, 153);
  EXPECT_EQ(r[2].arrival.ns(), 222052953);
  EXPECT_EQ(r[2].prompt_tokens(), 1982);
}

TEST(GeneratorTest, ArrivalsComeFromTheirOwnNamedStream) {
  const auto requests = Generate(kAtlas, 42, testing::Requests(500));
  auto process = MakePoissonArrivals(Rate{8});
  ASSERT_TRUE(process.ok());
  RngStream arrivals(42, "workload.arrivals");
  for (const Request& r : requests) ASSERT_EQ(r.arrival, (*process)->Next(arrivals));
}

TEST(GeneratorTest, ChangingOneClassLeavesEveryOtherDrawAlone) {
  std::string changed = kAtlas;
  const std::string from = "output_tokens: {uniform: [1000, 4000]}";
  changed.replace(changed.find(from), from.size(), "output_tokens: {exponential: {mean: 50}}");
  const auto a = Generate(kAtlas, 7, testing::Requests(2000));
  const auto b = Generate(changed, 7, testing::Requests(2000));
  ASSERT_EQ(a.size(), b.size());
  int research = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].arrival, b[i].arrival);
    ASSERT_EQ(a[i].class_id, b[i].class_id);
    ASSERT_EQ(a[i].tenant, b[i].tenant);
    ASSERT_EQ(a[i].prompt, b[i].prompt);
    if (a[i].class_id == 2) {
      ++research;
    } else {
      ASSERT_EQ(a[i].output_tokens, b[i].output_tokens);
    }
  }
  EXPECT_GT(research, 100);
}

TEST(GeneratorTest, ClassSharesAndTenantPopularityMatchTheSpec) {
  constexpr int kN = 20000;
  const auto requests = Generate(kAtlas, 5, testing::Limits(Minutes(600), kN));
  ASSERT_EQ(requests.size(), static_cast<size_t>(kN));
  std::map<ClassId, int> classes;
  std::map<TenantId, int> tenants;
  for (const Request& r : requests) {
    ++classes[r.class_id];
    ++tenants[r.tenant];
  }
  const double shares[] = {0.70, 0.20, 0.10};
  for (int c = 0; c < 3; ++c) {
    const double sigma = std::sqrt(shares[c] * (1 - shares[c]) / kN);
    EXPECT_NEAR(classes[c] / static_cast<double>(kN), shares[c], 4.5 * sigma) << c;
  }
  auto zipf = Zipf::Make(20, 1.1);
  ASSERT_TRUE(zipf.ok());
  for (TenantId t = 0; t < 20; ++t) {
    const double p = zipf->Probability(t + 1);
    const double sigma = std::sqrt(p * (1 - p) / kN);
    EXPECT_NEAR(tenants[t] / static_cast<double>(kN), p, 4.5 * sigma) << t;
  }
}

TEST(GeneratorTest, SharedContentHasOneIdentityAndOneLength) {
  const auto requests = Generate(kAtlas, 9, testing::Requests(5000));
  std::map<ContentId, int64_t> length_of;
  std::map<TenantId, ContentId> instructions_of;
  std::set<ContentId> documents, uniques;
  for (const Request& r : requests) {
    if (r.class_id == 2) continue;
    const PromptSegment& head = r.prompt[0];
    EXPECT_EQ(head.content, MakeContentId(SegmentKind::kTenantInstructions, static_cast<uint64_t>(r.tenant)));
    EXPECT_EQ(head.tokens, 1500);
    if (r.class_id == 1) {
      const PromptSegment& doc = r.prompt[1];
      auto [it, inserted] = length_of.emplace(doc.content, doc.tokens);
      EXPECT_EQ(it->second, doc.tokens) << "a document changed length";
      documents.insert(doc.content);
      EXPECT_TRUE(uniques.insert(r.prompt[2].content).second);
    } else {
      EXPECT_TRUE(uniques.insert(r.prompt[1].content).second) << "a unique segment repeated";
    }
  }
  // ~1000 document requests over 20 tenants x 200 Zipf-popular documents: many repeats.
  EXPECT_LT(documents.size(), 800u);
  EXPECT_GT(documents.size(), 100u);
  std::set<int64_t> doc_lengths;
  for (const auto& [id, len] : length_of) doc_lengths.insert(len);
  EXPECT_GT(doc_lengths.size(), 50u);  // lengths vary between documents
}

TEST(GeneratorTest, CapsAreCountedInAdjustments) {
  auto gen = MakeGenerator(Spec(kAtlas), 3, testing::Limits(Minutes(600), 20000));
  ASSERT_TRUE(gen.ok());
  const auto requests = Drain(**gen);
  int64_t at_cap = 0;
  for (const Request& r : requests) {
    if (r.class_id == 1) {
      EXPECT_LE(r.output_tokens, 300);
    }
  }
  const auto& capped = (*gen)->adjustments().capped_draws;
  ASSERT_EQ(capped.count("workload.classes.document.output_tokens"), 1u);
  at_cap = capped.at("workload.classes.document.output_tokens");
  // The cap is the p99: ~1% of ~4000 document requests.
  EXPECT_GT(at_cap, 15);
  EXPECT_LT(at_cap, 80);
}

constexpr const char* kChat = R"(workload:
  duration: 30m
  arrival: {process: poisson, rate: 1/s}
  tenants: {count: 2}
  adapters: {count: 4, fraction: 0.25}
  classes:
    chat:
      share: 1
      prompt:
        - {segment: system, tokens: 64}
        - {segment: history}
        - {segment: unique, tokens: {uniform: [10, 50]}}
      output_tokens: {uniform: [5, 40]}
      deadline: 20s
      cancel: {probability: 0.2, after: {uniform: [1s, 3s]}}
      session: {turns: {uniform: [1, 5]}, think_time: 7s}
)";

TEST(GeneratorTest, SessionTurnsExtendThePreviousPromptAndAnswer) {
  const auto requests = Generate(kChat, 4, testing::Requests(3000));
  std::map<int64_t, const Request*> last_turn;
  int continued = 0;
  for (const Request& r : requests) {
    ASSERT_GE(r.session, 0);
    auto it = last_turn.find(r.session);
    if (it == last_turn.end()) {
      EXPECT_EQ(r.turn, 0);
      ASSERT_EQ(r.prompt.size(), 2u);
      EXPECT_EQ(r.prompt[0], (PromptSegment{MakeContentId(SegmentKind::kSystem, 0), 64}));
    } else {
      const Request& prev = *it->second;
      ++continued;
      EXPECT_EQ(r.turn, prev.turn + 1);
      EXPECT_EQ(r.arrival, prev.arrival + Sec(7));
      EXPECT_EQ(r.tenant, prev.tenant);
      EXPECT_EQ(r.adapter, prev.adapter);
      ASSERT_EQ(r.prompt.size(), prev.prompt.size() + 2);
      for (size_t i = 0; i < prev.prompt.size(); ++i) ASSERT_EQ(r.prompt[i], prev.prompt[i]);
      EXPECT_EQ(r.prompt[prev.prompt.size()],
                (PromptSegment{MakeContentId(SegmentKind::kAnswer, static_cast<uint64_t>(prev.id)), prev.output_tokens}));
    }
    last_turn[r.session] = &r;
  }
  // Turns ~ uniform{1..5}: 2 follow-up turns per session on average.
  EXPECT_GT(continued, 1500);
}

TEST(GeneratorTest, CancellationsDeadlinesAndAdaptersFollowTheSpec) {
  constexpr int kN = 10000;
  const auto requests = Generate(kChat, 8, testing::Limits(Minutes(600), kN));
  ASSERT_EQ(requests.size(), static_cast<size_t>(kN));
  int cancelled = 0, with_adapter = 0;
  for (const Request& r : requests) {
    ASSERT_TRUE(r.deadline.has_value());
    EXPECT_EQ(*r.deadline, r.arrival + Sec(20));
    if (r.cancel_at) {
      ++cancelled;
      const Duration after = *r.cancel_at - r.arrival;
      EXPECT_GE(after, Sec(1));
      EXPECT_LT(after, Sec(3));
    }
    if (r.adapter != kNoAdapter) {
      ++with_adapter;
      EXPECT_LT(r.adapter, 4);
    }
  }
  EXPECT_NEAR(cancelled / static_cast<double>(kN), 0.2, 4.5 * std::sqrt(0.2 * 0.8 / kN));
  // Adapters are drawn per session (turns inherit), so fewer independent draws: wider band.
  EXPECT_NEAR(with_adapter / static_cast<double>(kN), 0.25, 0.04);
}

TEST(GeneratorTest, DurationCutsSessionsAndCountsThem) {
  auto gen = MakeGenerator(Spec(kChat), 2, testing::Until(Minutes(2)));
  ASSERT_TRUE(gen.ok());
  const auto requests = Drain(**gen);
  for (const Request& r : requests) ASSERT_LT(r.arrival, SimTime::Zero() + Minutes(2));
  EXPECT_GT((*gen)->adjustments().sessions_cut, 0);
  EXPECT_TRUE((*gen)->exhausted());
  const Json d = (*gen)->Describe();
  EXPECT_EQ(d["loop"], "open");
  EXPECT_EQ(d["arrival"]["process"], "poisson");
  EXPECT_EQ(d["limits"]["duration"], "2 min");
}

TEST(GeneratorTest, LimitOverridesReplaceTheSpecsEnd) {
  // kAtlas says 10m (~4800 requests at 8/s); --requests 6000 replaces that end entirely.
  EXPECT_EQ(Generate(kAtlas, 1, testing::Requests(6000)).size(), 6000u);
  const auto short_run = Generate(kAtlas, 1, testing::Until(Sec(30)));
  EXPECT_GT(short_run.size(), 150u);
  EXPECT_LT(short_run.size(), 350u);
}

TEST(GeneratorTest, NeedsAnEnd) {
  std::string endless = kAtlas;
  endless.erase(endless.find("  duration: 10m\n"), std::string("  duration: 10m\n").size());
  auto gen = MakeGenerator(Spec(endless), 1);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().message(),
            "workload: a synthetic workload needs an end: set `workload.duration` or `workload.requests` (or pass "
            "--duration / --requests)");
}

TEST(GeneratorTest, PeekDoesNotConsume) {
  auto gen = MakeGenerator(Spec(kChat), 2, testing::Requests(50));
  ASSERT_TRUE(gen.ok());
  for (int i = 0; i < 50; ++i) {
    auto peek = (*gen)->PeekArrival();
    ASSERT_TRUE(peek.ok() && peek->has_value());
    auto again = (*gen)->PeekArrival();
    ASSERT_EQ(**peek, **again);
    auto next = (*gen)->Next();
    ASSERT_TRUE(next.ok() && next->has_value());
    EXPECT_EQ((*next)->arrival, **peek);
  }
  auto end = (*gen)->PeekArrival();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(GeneratorTest, JsonlIsByteIdenticalAcrossRuns) {
  testing::TempDir dir;
  std::vector<std::string> digests;
  for (int run = 0; run < 2; ++run) {
    auto gen = MakeGenerator(Spec(kAtlas), 42, testing::Requests(2000));
    ASSERT_TRUE(gen.ok());
    auto writer = TraceWriter::Create(dir.File("t.jsonl"));
    ASSERT_TRUE(writer.ok());
    for (const Request& r : Drain(**gen)) ASSERT_TRUE((*writer)->Write(r, (*gen)->names()).ok());
    auto digest = (*writer)->Finish((*gen)->names(), (*gen)->Describe());
    ASSERT_TRUE(digest.ok());
    digests.push_back(*digest);
  }
  EXPECT_EQ(digests[0], digests[1]);
}

}  // namespace
}  // namespace fleetplan
