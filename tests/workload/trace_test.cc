// Trace reading and writing: the fleetplan JSONL round trip, every importer's mapping,
// the shared public traces, the common policies (order, speed, limits, digest) and the
// located errors for each kind of bad input.
#include "fleetplan/workload/trace.h"

#include <sstream>

#include <gtest/gtest.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/workload/content.h"
#include "fleetplan/workload/generator.h"
#include "fleetplan/workload/trace_stats.h"
#include "workload/test_util.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using testing::Drain;
using testing::DrainError;
using testing::ReadAll;
using testing::SharedData;
using testing::TempDir;

std::unique_ptr<TraceSource> Open(const std::string& text, const std::string& name, TraceReadOptions options = {}) {
  auto source = OpenTraceStream(std::make_unique<std::istringstream>(text), name, options);
  EXPECT_TRUE(source.ok()) << (source.ok() ? "" : source.status().message());
  return source.ok() ? std::move(source).value() : nullptr;
}

std::string OpenError(const std::string& text, const std::string& name, TraceReadOptions options = {}) {
  auto source = OpenTraceStream(std::make_unique<std::istringstream>(text), name, options);
  if (!source.ok()) return source.status().message();
  return DrainError(**source);
}

// ---- fleetplan JSONL ---------------------------------------------------------------

constexpr const char* kSessions = R"(workload:
  requests: 300
  arrival: {process: gamma, rate: 5/s, cv: 2}
  tenants: {count: 3, popularity: {zipf: 1.0}}
  adapters: {count: 2, fraction: 0.5}
  classes:
    "chat \"quoted\"":
      share: 0.6
      prompt:
        - {segment: tenant-instructions, tokens: 100}
        - {segment: history}
        - {segment: unique, tokens: {uniform: [1, 30]}}
      output_tokens: {uniform: [1, 30]}
      deadline: 5s
      cancel: {probability: 0.3, after: 2s}
      session: {turns: {uniform: [1, 4]}, think_time: 3s}
    docs:
      share: 0.4
      priority: -3
      prompt:
        - {segment: document, tokens: 700, pool: 5}
        - {segment: unique, tokens: 20}
      output_tokens: 9
)";

TEST(FleetplanTraceTest, RecordIsCanonicalJson) {
  auto spec = testing::SpecFromYaml(kSessions);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto gen = MakeGenerator(*spec, 3);
  ASSERT_TRUE(gen.ok());
  for (const Request& r : Drain(**gen)) {
    const WorkloadNames& n = (*gen)->names();
    Json j = {{"arrival_ns", r.arrival.ns()}, {"class", n.classes[static_cast<size_t>(r.class_id)]},
              {"id", r.id}, {"output_tokens", r.output_tokens}, {"priority", r.priority}};
    Json prompt = Json::array();
    for (const auto& s : r.prompt) prompt.push_back({s.content, s.tokens});
    j["prompt"] = prompt;
    if (r.tenant != kNoTenant) j["tenant"] = n.tenants[static_cast<size_t>(r.tenant)];
    if (r.adapter != kNoAdapter) j["adapter"] = n.adapters[static_cast<size_t>(r.adapter)];
    if (r.deadline) j["deadline_ns"] = r.deadline->ns();
    if (r.cancel_at) j["cancel_at_ns"] = r.cancel_at->ns();
    if (r.session >= 0) {
      j["session"] = r.session;
      j["turn"] = r.turn;
    }
    auto canonical = CanonicalJson(j);
    ASSERT_TRUE(canonical.ok());
    ASSERT_EQ(FormatTraceRecord(r, n), *canonical + "\n");
  }
}

TEST(FleetplanTraceTest, RoundTripIsLosslessAndByteIdentical) {
  TempDir dir;
  auto spec = testing::SpecFromYaml(kSessions);
  ASSERT_TRUE(spec.ok());
  auto gen = MakeGenerator(*spec, 11);
  ASSERT_TRUE(gen.ok());
  const std::vector<Request> original = Drain(**gen);
  auto writer = TraceWriter::Create(dir.File("a.jsonl"));
  ASSERT_TRUE(writer.ok());
  for (const Request& r : original) ASSERT_TRUE((*writer)->Write(r, (*gen)->names()).ok());
  auto digest_a = (*writer)->Finish((*gen)->names(), (*gen)->Describe());
  ASSERT_TRUE(digest_a.ok()) << digest_a.status().message();
  EXPECT_EQ(*digest_a, DigestOf(ReadAll(dir.File("a.jsonl"))));

  auto source = OpenTrace(dir.File("a.jsonl"), {});
  ASSERT_TRUE(source.ok()) << source.status().message();
  EXPECT_EQ((*source)->format(), TraceFormat::kFleetplan);
  const std::vector<Request> read = Drain(**source);
  EXPECT_EQ(read, original);
  EXPECT_EQ((*source)->names().classes, (*gen)->names().classes);
  EXPECT_EQ(*(*source)->FinishDigest(), *digest_a);
  EXPECT_EQ((*source)->provenance(), (*gen)->Describe());

  auto rewriter = TraceWriter::Create(dir.File("b.jsonl"));
  ASSERT_TRUE(rewriter.ok());
  for (const Request& r : read) ASSERT_TRUE((*rewriter)->Write(r, (*source)->names()).ok());
  auto digest_b = (*rewriter)->Finish((*source)->names(), (*source)->provenance());
  ASSERT_TRUE(digest_b.ok());
  EXPECT_EQ(*digest_b, *digest_a);
  EXPECT_EQ(ReadAll(dir.File("b.jsonl")), ReadAll(dir.File("a.jsonl")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("a.jsonl.body.tmp")));
}

constexpr const char* kHeader =
    R"({"adapters":[],"classes":["interactive","document"],"format":"fleetplan-trace","source":{},"tenants":["t0"],"version":1})"
    "\n";

TEST(FleetplanTraceTest, BadRowsAreLocated) {
  const auto row = [](const std::string& body) { return std::string(kHeader) + body + "\n"; };
  EXPECT_EQ(OpenError(row(R"({"arrival_ns":5,"class":"interactive","id":0,"output_tokens":3,"prompt":[[1,2]])"),
                      "t.jsonl"),
            "t.jsonl:2:80: truncated or malformed JSON: syntax error while parsing object - unexpected end of input; "
            "expected '}'\n"
            "    2 | {\"arrival_ns\":5,\"class\":\"interactive\",\"id\":0,\"output_tokens\":3,\"prompt\":[[1,2]]\n"
            "      |                                                                                ^\n");
  EXPECT_EQ(OpenError(row(R"({"arrival_ns":5,"class":"interactve","id":0,"output_tokens":3,"prompt":[[1,2]]})"),
                      "t.jsonl"),
            "t.jsonl:2:25: class: unknown class 'interactve'; did you mean 'interactive'? (valid: interactive, "
            "document) — names must be declared in the header\n"
            "    2 | {\"arrival_ns\":5,\"class\":\"interactve\",\"id\":0,\"output_tokens\":3,\"prompt\":[[1,2]]}\n"
            "      |                         ^\n");
  EXPECT_EQ(OpenError(row(R"({"arrival_ns":5,"class":"document","id":0,"output_tokens":-3,"prompt":[[1,2]]})"),
                      "t.jsonl"),
            "t.jsonl:2:59: output_tokens: expected an integer in [1, 16777216], got -3\n"
            "    2 | {\"arrival_ns\":5,\"class\":\"document\",\"id\":0,\"output_tokens\":-3,\"prompt\":[[1,2]]}\n"
            "      |                                                           ^\n");
  EXPECT_NE(OpenError(row(R"({"arrival_ns":"5","class":"document","id":0,"output_tokens":3,"prompt":[[1,2]]})"),
                      "t.jsonl")
                .find("t.jsonl:2:15: arrival_ns: expected an integer >= 0, got a string (\"5\")"),
            std::string::npos);
  EXPECT_NE(OpenError(row(R"({"arrival_ns":5,"class":"document","id":0,"output_tokens":3,"prompt":[[1,0]]})"),
                      "t.jsonl")
                .find("prompt[0][1]: expected an integer in [1, 16777216], got 0"),
            std::string::npos);
  EXPECT_NE(OpenError(row(R"({"arrival_ns":5,"class":"document","id":1,"output_tokens":3,"prompt":[[1,2]]})"),
                      "t.jsonl")
                .find("id: expected 0 (ids count 0, 1, 2, ... in file order), got 1"),
            std::string::npos);
  EXPECT_NE(OpenError(row(R"({"arrival_ns":5,"clas":"document","id":0,"output_tokens":3,"prompt":[[1,2]]})"),
                      "t.jsonl")
                .find("unknown field 'clas'; did you mean 'class'?"),
            std::string::npos);
  EXPECT_NE(OpenError(row(R"({"arrival_ns":5,"id":0,"output_tokens":3,"prompt":[[1,2]]})"), "t.jsonl")
                .find("t.jsonl:2:1: class: missing required field"),
            std::string::npos);
  EXPECT_NE(OpenError(row(R"({"arrival_ns":5,"class":"document","id":0,"output_tokens":3,"prompt":[[1,2]],"session":1})"),
                      "t.jsonl")
                .find("session and turn come together"),
            std::string::npos);
  EXPECT_EQ(OpenError(kHeader, "t.jsonl"), "t.jsonl: the trace has no requests");
  EXPECT_NE(OpenError(R"({"classes":["a"],"format":"fleetplan-trace","version":2})", "t.jsonl")
                .find("unsupported trace version 2 (this fleetplan reads version 1)"),
            std::string::npos);
}

TEST(FleetplanTraceTest, OutOfOrderRowsAreAnErrorNotResorted) {
  const std::string text = std::string(kHeader) +
                           R"({"arrival_ns":50,"class":"document","id":0,"output_tokens":3,"prompt":[[1,2]]})" "\n"
                           R"({"arrival_ns":50,"class":"document","id":1,"output_tokens":3,"prompt":[[1,2]]})" "\n"
                           R"({"arrival_ns":40,"class":"document","id":2,"output_tokens":3,"prompt":[[1,2]]})" "\n";
  EXPECT_EQ(OpenError(text, "t.jsonl"),
            "t.jsonl:4:15: arrival_ns: 40 ns is earlier than the previous row's 50 ns (line 3); trace rows must be in "
            "arrival order (fleetplan never re-sorts them: sort the file first)\n"
            "    4 | {\"arrival_ns\":40,\"class\":\"document\",\"id\":2,\"output_tokens\":3,\"prompt\":[[1,2]]}\n"
            "      |               ^\n");
}

// ---- Mooncake ----------------------------------------------------------------------

TEST(MooncakeTraceTest, HashIdsBecome512TokenBlocks) {
  auto source = Open(
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [0, 1, 2]}\n"
      "{\"timestamp\": 15, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [0]}\n",
      "m.jsonl", testing::ClassOpt("chat"));
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->format(), TraceFormat::kMooncake);
  // Single-class imports name their class on opening, before any row is read.
  EXPECT_EQ(source->names().classes, std::vector<std::string>{"chat"});
  const auto r = Drain(*source);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(source->names().classes, std::vector<std::string>{"chat"});
  EXPECT_EQ(r[0].prompt, (std::vector<PromptSegment>{{MakeContentId(SegmentKind::kTraceBlock, 0), 512},
                                                     {MakeContentId(SegmentKind::kTraceBlock, 1), 512},
                                                     {MakeContentId(SegmentKind::kTraceBlock, 2), 76}}));
  EXPECT_EQ(r[0].output_tokens, 7);
  EXPECT_EQ(r[1].arrival, SimTime::Zero() + Ms(15));
  EXPECT_EQ(r[1].prompt[0].content, r[0].prompt[0].content);
}

TEST(MooncakeTraceTest, BadRowsAreLocated) {
  EXPECT_EQ(OpenError("{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [0, 1]}\n",
                      "m.jsonl"),
            "m.jsonl:1:72: hash_ids: expected ceil(input_length / 512) = 3 ids, got 2\n"
            "    1 | {\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [0, 1]}\n"
            "      |                                                                        ^\n");
  EXPECT_NE(OpenError("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 7, \"hash_ids\": [-4]}\n",
                      "m.jsonl")
                .find("hash_ids[0]: expected an integer >= 0, got -4"),
            std::string::npos);
  EXPECT_NE(OpenError("{\"timestamp\": 1.5, \"input_length\": 10, \"output_length\": 7, \"hash_ids\": [4]}\n",
                      "m.jsonl")
                .find("timestamp: expected an integer in [0, 9223372036854], got 1.5 (a number with a fraction)"),
            std::string::npos);
  EXPECT_NE(OpenError("{\"timestamp\": 9, \"input_length\": 10, \"output_length\": 7, \"hash_ids\": [4]}\n"
                      "{\"timestamp\": 3, \"input_length\": 10, \"output_length\": 7, \"hash_ids\": [4]}\n",
                      "m.jsonl")
                .find("m.jsonl:2:15: timestamp: 3 ms is earlier than the previous row's 9 ms (line 1)"),
            std::string::npos);
  EXPECT_NE(OpenError("{\"timestamp\": 9, \"input_length\": 10, \"output_length\": 7, \"hash_ids\": [4]}\n\n",
                      "m.jsonl")
                .find("m.jsonl:2:1: empty line: a trace has one request per line"),
            std::string::npos);
  EXPECT_NE(OpenError("{\"timestamp\": 9, \"input_length\": 10, \"output_length\": 7, \"hash_ids\": [4]}\n",
                      "m.jsonl", testing::DropFailedOpt())
                .find("--drop-failed: applies to burstgpt traces only (this is mooncake)"),
            std::string::npos);
}

TEST(MooncakeTraceTest, SharedConversationTrace) {
  FP_REQUIRE_SHARED_DATA();
  // DoneWhen: 12,031 requests; distinct blocks equal the distinct hash ids (data README).
  auto source = OpenTrace(SharedData("traces/mooncake/conversation_trace.jsonl"), {});
  ASSERT_TRUE(source.ok()) << source.status().message();
  TraceStatsAccumulator stats;
  int64_t n = 0;
  while (true) {
    auto next = (*source)->Next();
    ASSERT_TRUE(next.ok()) << next.status().message();
    if (!next->has_value()) break;
    stats.Add(**next);
    ++n;
  }
  const TraceStats s = stats.Finish((*source)->names());
  EXPECT_EQ(s.requests, 12031);
  EXPECT_EQ(s.blocks_distinct, 182790);
  EXPECT_EQ(s.blocks_total, 288500);
  EXPECT_EQ(s.last_arrival, SimTime::Zero() + Ms(3536999));
  EXPECT_EQ(s.prompt_tokens.max, 126195);
  EXPECT_EQ(s.output_tokens.max, 2000);
  EXPECT_EQ(*(*source)->FinishDigest(), DigestOf(ReadAll(SharedData("traces/mooncake/conversation_trace.jsonl"))));
}

// ---- Azure -------------------------------------------------------------------------

TEST(AzureTraceTest, WallClockBecomesRelativeArrivals) {
  auto source = Open(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 23:59:59.9799600,4808,10\n"
      "2023-11-17 00:00:00.0319600,3180,8\n"
      "2023-11-17 00:00:01,5,1",
      "a.csv");
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->format(), TraceFormat::kAzure);
  const auto r = Drain(*source);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].arrival, SimTime::Zero());
  EXPECT_EQ(r[1].arrival.ns(), 52'000'000);
  EXPECT_EQ(r[2].arrival.ns(), 1'020'040'000);
  EXPECT_EQ(r[0].prompt_tokens(), 4808);
  EXPECT_EQ(r[1].output_tokens, 8);
  EXPECT_NE(r[0].prompt[0].content, r[1].prompt[0].content);
  EXPECT_EQ(source->names().classes, std::vector<std::string>{"default"});
}

TEST(AzureTraceTest, BadRowsAreLocated) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  EXPECT_EQ(OpenError(header + "2023-11-16 18:17:03.9799600,48x8,10\n", "a.csv"),
            "a.csv:2:29: ContextTokens: expected an integer >= 1, got '48x8'\n"
            "    2 | 2023-11-16 18:17:03.9799600,48x8,10\n"
            "      |                             ^\n");
  EXPECT_EQ(OpenError(header + "2023-11-16 18:17:03.9799600,4808\n", "a.csv"),
            "a.csv:2:33: expected 3 fields (as in the header), got 2 (truncated line?)\n"
            "    2 | 2023-11-16 18:17:03.9799600,4808\n"
            "      |                                 ^\n");
  EXPECT_NE(OpenError(header + "2023-11-16 18:17:03.9799600,4808,-1\n", "a.csv")
                .find("GeneratedTokens: expected an integer >= 1, got -1"),
            std::string::npos);
  EXPECT_NE(OpenError(header + "2023-13-16 18:17:03,4808,1\n", "a.csv")
                .find("TIMESTAMP: expected a time like 2023-11-16 18:17:03.9799600, got '2023-13-16 18:17:03'"),
            std::string::npos);
  EXPECT_NE(OpenError(header + "2023-11-16 18:17:03.5,1,1\n2023-11-16 18:17:03.25,1,1\n", "a.csv")
                .find("TIMESTAMP: 2023-11-16 18:17:03.2500000 is earlier than the previous row's 2023-11-16 "
                      "18:17:03.5000000 (line 2)"),
            std::string::npos);
  EXPECT_NE(OpenError("TIMESTAMP,ContextTokens,GeneratedTokns\n1,1,1\n", "a.csv", testing::FormatOpt(TraceFormat::kAzure))
                .find("unknown column 'GeneratedTokns'; did you mean 'GeneratedTokens'?"),
            std::string::npos);
  EXPECT_EQ(OpenError(header, "a.csv"), "a.csv: the trace has no requests");
}

TEST(AzureTraceTest, SharedCodeTrace) {
  FP_REQUIRE_SHARED_DATA();
  auto source = OpenTrace(SharedData("traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv"), {});
  ASSERT_TRUE(source.ok()) << source.status().message();
  const auto r = Drain(**source);
  ASSERT_EQ(r.size(), 8819u);
  EXPECT_EQ(r.front().prompt_tokens(), 4808);
  EXPECT_EQ(r.back().prompt_tokens(), 549);
  EXPECT_EQ(r.back().output_tokens, 173);
  // 18:17:03.9799600 to 19:14:19.9280160 (the last row has no trailing newline).
  EXPECT_EQ(r.back().arrival.ns(), 3435'948'056'000);
}

// ---- BurstGPT (test data written here, columns as the BurstGPT authors document) ------

constexpr const char* kBurst =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,0,1087,API log\n"
    "118,GPT-4,417,276,693,Conversation log\n"
    "118.5,\"ChatGPT\",42,10,52,API log\n";

TEST(BurstGptTraceTest, ModelIsTheClassLogTypeTheTenant) {
  auto source = Open(kBurst, "b.csv", testing::DropFailedOpt());
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->format(), TraceFormat::kBurstGpt);
  const auto r = Drain(*source);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(source->dropped_rows(), 1);
  EXPECT_EQ(source->names().classes, (std::vector<std::string>{"ChatGPT", "GPT-4"}));
  EXPECT_EQ(source->names().tenants, (std::vector<std::string>{"Conversation log", "API log"}));
  EXPECT_EQ(r[0].arrival, SimTime::Zero() + Sec(5));
  EXPECT_EQ(r[1].class_id, 1);
  EXPECT_EQ(r[1].prompt_tokens(), 417);
  EXPECT_EQ(r[2].arrival.ns(), 118'500'000'000);
  EXPECT_EQ(r[2].class_id, 0);
  EXPECT_EQ(r[2].tenant, 1);
  EXPECT_EQ(source->Describe()["dropped_rows"], 1);
}

TEST(BurstGptTraceTest, FailedRowsAreAnErrorUnlessDropped) {
  EXPECT_EQ(OpenError(kBurst, "b.csv"),
            "b.csv:3:17: Response tokens: expected an integer >= 1, got 0 (BurstGPT logs failed requests with 0 "
            "response tokens; pass --drop-failed to leave them out, counted in the output)\n"
            "    3 | 45,ChatGPT,1087,0,1087,API log\n"
            "      |                 ^\n");
  EXPECT_NE(OpenError("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                      "5,ChatGPT,472,18,491,Conversation log\n",
                      "b.csv")
                .find("Total tokens: expected Request tokens + Response tokens = 472 + 18 = 490, got 491"),
            std::string::npos);
  EXPECT_NE(OpenError(kBurst, "b.csv", testing::ClassOpt("x")).find("names each row's class (its Model column)"),
            std::string::npos);
}

// ---- plain CSV ---------------------------------------------------------------------

TEST(PlainCsvTraceTest, ArrivalSecondsAreExact) {
  auto source = Open("arrival_s,prompt_tokens,output_tokens,class\n0.1,10,2,a\n0.300000001,20,3,b\n2,5,1,a\n",
                     "p.csv");
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->format(), TraceFormat::kCsv);
  const auto r = Drain(*source);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].arrival.ns(), 100'000'000);
  EXPECT_EQ(r[1].arrival.ns(), 300'000'001);
  EXPECT_EQ(r[1].class_id, 1);
  EXPECT_EQ(source->names().classes, (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(OpenError("arrival_s,prompt_tokens,output_tokens\n-1,5,1\n", "p.csv")
                .find("arrival_s: expected non-negative seconds such as 12 or 3.25, got -1"),
            std::string::npos);
}

// ---- shared policies ---------------------------------------------------------------

TEST(TracePolicyTest, SpeedScalesArrivalsAndKeepsPairing) {
  const std::string text = std::string(kHeader) +
      R"({"arrival_ns":1000,"class":"document","deadline_ns":5000,"id":0,"output_tokens":3,"prompt":[[1,2]]})" "\n"
      R"({"arrival_ns":3000,"class":"document","id":1,"output_tokens":4,"prompt":[[1,7]]})" "\n"
      R"({"arrival_ns":3000,"cancel_at_ns":3500,"class":"document","id":2,"output_tokens":5,"prompt":[[1,9]]})" "\n";
  auto normal = Open(text, "t.jsonl");
  auto fast = Open(text, "t.jsonl", testing::SpeedOpt(2.0));
  ASSERT_NE(normal, nullptr);
  ASSERT_NE(fast, nullptr);
  const auto a = Drain(*normal);
  const auto b = Drain(*fast);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b[i].arrival.ns(), a[i].arrival.ns() / 2);
    EXPECT_EQ(b[i].prompt, a[i].prompt);
    EXPECT_EQ(b[i].output_tokens, a[i].output_tokens);
  }
  EXPECT_EQ(*b[0].deadline, b[0].arrival + Ns(4000));  // the client's patience is unchanged
  EXPECT_EQ(*b[2].cancel_at, b[2].arrival + Ns(500));
}

TEST(TracePolicyTest, LimitsStopEarlyButTheDigestCoversTheFile) {
  FP_REQUIRE_SHARED_DATA();
  const std::string path = SharedData("traces/mooncake/synthetic_trace.jsonl");
  auto source = OpenTrace(path, testing::LimitOpt(Sec(60), 100000));
  ASSERT_TRUE(source.ok());
  const auto r = Drain(**source);
  ASSERT_FALSE(r.empty());
  EXPECT_LT(r.back().arrival, SimTime::Zero() + Sec(60));
  EXPECT_LT(r.size(), 3993u);
  EXPECT_EQ(*(*source)->FinishDigest(), DigestOf(ReadAll(path)));
  auto capped = OpenTrace(path, testing::LimitOpt(std::nullopt, 10));
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(Drain(**capped).size(), 10u);
}

TEST(TracePolicyTest, CrlfLinesAndAMissingFinalNewline) {
  auto source = Open("arrival_s,prompt_tokens,output_tokens\r\n1,5,1\r\n2,6,1", "p.csv");
  ASSERT_NE(source, nullptr);
  const auto r = Drain(*source);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].prompt_tokens(), 6);
}

// Defect: detection read and parsed a 30 MB first line whole (7.3 s, 1.1 GB) before the
// reader refused it; with --format the same file was refused at once. Detection now reads
// at most the line limit.
TEST(TraceDetectTest, AnOverLongFirstLineIsRefusedBeforeDetection) {
  const std::string huge = std::string(R"({"timestamp": 0, "input_length": 1, "output_length": 1, "pad": ")") +
                           std::string((size_t{16} << 20) + 10, 'a') + "\"}\n";
  for (const char* name : {"t.jsonl", "t"}) {
    auto source = OpenTraceStream(std::make_unique<std::istringstream>(huge), name, {});
    ASSERT_FALSE(source.ok()) << name;
    EXPECT_EQ(source.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(source.status().message().find(std::string(name) + ":1:"), std::string::npos) << source.status().message();
    EXPECT_NE(source.status().message().find("line is longer than 16 MiB; is this a trace file?"), std::string::npos)
        << source.status().message();
  }
  // The same message with the format named, where the reader's line limit applies, and
  // exactly: the chunk that brings a longer line's newline in does not let it through.
  TraceReadOptions mooncake;
  mooncake.format = TraceFormat::kMooncake;
  EXPECT_NE(OpenError(huge, "t.jsonl", mooncake).find("line is longer than 16 MiB"), std::string::npos);
  // A long first line within the limit is still read whole: detection decides Mooncake,
  // whose reader then names the row's unknown field.
  const std::string long_ok = std::string(R"({"timestamp": 0, "input_length": 1, "output_length": 1, "pad": ")") +
                              std::string(size_t{15} << 20, 'a') + "\"}\n";
  EXPECT_NE(OpenError(long_ok, "t.jsonl").find("t.jsonl:1:64: unknown field 'pad'"), std::string::npos);
}

TEST(TraceDetectTest, ContentDecidesAndContradictionsAreErrors) {
  EXPECT_EQ(*DetectTraceFormat("x.jsonl", kHeader), TraceFormat::kFleetplan);
  EXPECT_EQ(*DetectTraceFormat("x", R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]})"),
            TraceFormat::kMooncake);
  EXPECT_EQ(*DetectTraceFormat("x.txt", "TIMESTAMP,ContextTokens,GeneratedTokens"), TraceFormat::kAzure);
  EXPECT_EQ(*DetectTraceFormat("x.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"),
            TraceFormat::kBurstGpt);
  EXPECT_EQ(*DetectTraceFormat("x.csv", "arrival_s,prompt_tokens,output_tokens"), TraceFormat::kCsv);
  auto contradiction = DetectTraceFormat("x.csv", R"({"timestamp": 0})");
  ASSERT_FALSE(contradiction.ok());
  EXPECT_EQ(contradiction.status().message(),
            "x.csv: cannot tell the trace format: the name ends in .csv but the first line looks like JSON; pass "
            "--format (valid: fleetplan, mooncake, azure, burstgpt, csv)");
  auto unknown = DetectTraceFormat("x.csv", "time,len");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("the header columns (time, len) match no known CSV format"),
            std::string::npos);
  auto json = DetectTraceFormat("x.jsonl", R"({"t": 1})");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("a JSON object with keys t, which is neither"), std::string::npos);
  EXPECT_EQ(OpenError("", "e.jsonl"), "e.jsonl: the file is empty: a trace needs at least one request");
  auto missing = OpenTrace("/nonexistent/t.jsonl", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/t.jsonl: cannot open the trace file (missing or unreadable)");
}

}  // namespace
}  // namespace fleetplan
