// Record readers: the fleetplan JSONL (errors pinned), LLMServingSim's vLLM runs, vLLM's
// bench result file, format detection, and the writer's round trip.
#include "fleetplan/metrics/records_io.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/rng.h"
#include "metrics/test_util.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using testing_util::WriteTemp;

// Collects records; classes open unless `fixed` is set.
class CaptureSink : public RecordSink {
 public:
  std::vector<std::string> classes;
  bool fixed = false;
  bool needs_itl = false;
  std::vector<RequestRecord> records;

  Expected<ClassId> ResolveClass(std::string_view name) override {
    if (name.empty()) return InvalidInput("expected a non-empty class name");
    for (size_t i = 0; i < classes.size(); ++i) {
      if (classes[i] == name) return static_cast<ClassId>(i);
    }
    if (fixed) return InvalidInput(UnknownNameMessage("class", name, classes));
    classes.emplace_back(name);
    return static_cast<ClassId>(classes.size() - 1);
  }
  bool NeedsItl(ClassId) const override { return needs_itl; }
  void Add(const RequestRecord& r) override { records.push_back(r); }
};

Expected<RecordsFileInfo> ReadAs(const std::string& format, const std::string& path, CaptureSink& sink) {
  auto reader = MakeRecordReader(format);
  EXPECT_TRUE(reader.ok());
  return (*reader)->Read(path, sink);
}

// Reads a one-off fleetplan records file and returns the error text.
std::string FleetplanError(const std::string& text, CaptureSink sink = {}) {
  const std::string path = WriteTemp("records.jsonl", text);
  Expected<RecordsFileInfo> info = ReadAs("fleetplan", path, sink);
  EXPECT_FALSE(info.ok());
  if (info.ok()) return "";
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidInput);
  // Pin the text without the temp dir.
  std::string message = info.status().message();
  const std::string prefix = ::testing::TempDir();
  for (size_t at = message.find(prefix); at != std::string::npos; at = message.find(prefix)) {
    message.erase(at, prefix.size());
  }
  return message;
}

constexpr const char* kGood =
    R"({"id":0,"class":"chat","tenant":"acme","arrival_s":1.5,"first_token_s":1.75,"finish_s":3.25,"status":"ok","input_tokens":1200,"output_tokens":31,"itl_max_ms":80.5})"
    "\n"
    R"({"id":1,"class":"batch","arrival_s":2,"first_token_s":null,"finish_s":null,"status":"rejected","input_tokens":9000,"output_tokens":0})"
    "\n"
    R"(  { "class" : "chat", "id" : 2, "arrival_s" : 2.5, "first_token_s" : 2.6, "finish_s" : 2.9, "status" : "ok", "input_tokens" : 10, "output_tokens" : 4, "itl_ms" : [100, 50.25, 149.999999], "valid" : false })"
    "\n";

TEST(FleetplanRecords, ReadsEveryField) {
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("fleetplan", WriteTemp("good.jsonl", kGood), sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->records, 3);
  EXPECT_EQ(info->format, "fleetplan");
  EXPECT_EQ(info->tenants, std::vector<std::string>{"acme"});
  EXPECT_EQ(info->digest, DigestOf(kGood));
  ASSERT_EQ(sink.records.size(), 3u);
  const RequestRecord& a = sink.records[0];
  EXPECT_EQ(a.class_id, 0);
  EXPECT_EQ(a.tenant, 0);
  EXPECT_EQ(a.arrival, SimTime::FromNanos(1'500'000'000));
  EXPECT_EQ(Ttft(a), Ms(250));
  EXPECT_EQ(E2e(a), Ms(1'750));
  EXPECT_EQ(Tpot(a), Ms(50));
  EXPECT_EQ(a.itl_max, Us(80'500));
  EXPECT_TRUE(a.valid);
  const RequestRecord& b = sink.records[1];
  EXPECT_EQ(b.status, RecordStatus::kRejected);
  EXPECT_EQ(b.first_token, std::nullopt);
  EXPECT_EQ(b.tenant, kNoTenant);
  const RequestRecord& c = sink.records[2];
  EXPECT_EQ(c.itl_max, Ns(149'999'999));  // ms with 6 decimals are whole nanoseconds
  EXPECT_FALSE(c.valid);
  EXPECT_EQ(sink.classes, (std::vector<std::string>{"chat", "batch"}));
}

TEST(FleetplanRecords, UnknownFieldSuggestsTheNearest) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"chat","arival_s":1})"
                           "\n"),
            "records.jsonl:1:24: unknown field 'arival_s'; did you mean 'arrival_s'? (valid: id, "
            "class, tenant, arrival_s, first_token_s, finish_s, status, input_tokens, "
            "output_tokens, itl_ms, itl_max_ms, valid, replica, matched_prefix_tokens, "
            "queue_age_at_assignment_ms, reason, retry_after_s)\n"
            "    1 | {\"id\":0,\"class\":\"chat\",\"arival_s\":1}\n"
            "      |                        ^\n");
}

TEST(FleetplanRecords, EmptyClassName) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"","arrival_s":1})"
                           "\n"),
            "records.jsonl:1:17: class: expected a non-empty class name\n"
            "    1 | {\"id\":0,\"class\":\"\",\"arrival_s\":1}\n"
            "      |                 ^\n");
}

// Regression: a class with a right-to-left override reordered the `no data for ...` line.
TEST(FleetplanRecords, ClassWithAControlCharacterIsALocatedError) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"chat\u202eevil","arrival_s":1})"
                           "\n"),
            "records.jsonl:1:17: class: contains the control character U+202E at byte 4: names are printed, so "
            "control and bidirectional-formatting characters are refused\n"
            "    1 | {\"id\":0,\"class\":\"chat\\u202eevil\",\"arrival_s\":1}\n"
            "      |                 ^\n");
}

TEST(FleetplanRecords, UnknownClassNamesTheKnownOnes) {
  CaptureSink sink;
  sink.classes = {"interactive", "document"};
  sink.fixed = true;
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"interactve"})"
                           "\n",
                           sink),
            "records.jsonl:1:17: class: unknown class 'interactve'; did you mean 'interactive'? "
            "(valid: interactive, document)\n"
            "    1 | {\"id\":0,\"class\":\"interactve\"}\n"
            "      |                 ^\n");
}

constexpr const char* kLine2Prefix = R"({"id":0,"class":"c","arrival_s":1,"first_token_s":1.1,"finish_s":2,"status":"ok","input_tokens":1,"output_tokens":2})"
                                     "\n";

TEST(FleetplanRecords, FinishBeforeArrival) {
  EXPECT_EQ(FleetplanError(std::string(kLine2Prefix) +
                           R"({"id":1,"class":"c","arrival_s":5,"first_token_s":null,"finish_s":4.5,"status":"cancelled","input_tokens":1,"output_tokens":0})"
                           "\n"),
            "records.jsonl:2:67: finish_s: finish_s 4.5 is before arrival_s 5; a request cannot "
            "finish before it arrives\n"
            "    2 | {\"id\":1,\"class\":\"c\",\"arrival_s\":5,\"first_token_s\":null,\"finish_s\":4.5,"
            "\"status\":\"cancelled\",\"input_tokens\":1,\"output_tokens\":0}\n"
            "      |                                                                   ^\n");
}

TEST(FleetplanRecords, NegativeCount) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"c","arrival_s":1,"input_tokens":-3})"
                           "\n"),
            "records.jsonl:1:50: input_tokens: expected an integer >= 0, got -3\n"
            "    1 | {\"id\":0,\"class\":\"c\",\"arrival_s\":1,\"input_tokens\":-3}\n"
            "      |                                                  ^\n");
}

TEST(FleetplanRecords, FractionalCount) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"output_tokens":2.5})"
                           "\n"),
            "records.jsonl:1:25: output_tokens: expected an integer >= 0, got 2.5\n"
            "    1 | {\"id\":0,\"output_tokens\":2.5}\n"
            "      |                         ^\n");
}

TEST(FleetplanRecords, TruncatedLastLine) {
  EXPECT_EQ(FleetplanError(std::string(kLine2Prefix) + R"({"id":1,"class":"c","arrival_s":1.2,"first_tok)"),
            "records.jsonl:2:47: truncated: the text ends before the JSON value is complete (the "
            "file ends without a newline: was it cut short?)\n"
            "    2 | {\"id\":1,\"class\":\"c\",\"arrival_s\":1.2,\"first_tok\n"
            "      |                                               ^\n");
}

TEST(FleetplanRecords, TruncatedLineInTheMiddle) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"c","arrival_s":1,)"
                           "\n" +
                           std::string(kLine2Prefix)),
            "records.jsonl:1:35: truncated: the line ends inside the object\n"
            "    1 | {\"id\":0,\"class\":\"c\",\"arrival_s\":1,\n"
            "      |                                   ^\n");
}

TEST(FleetplanRecords, MissingRequiredField) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"class":"c","arrival_s":1,"first_token_s":null,"finish_s":null,"input_tokens":1,"output_tokens":0})"
                           "\n"),
            "records.jsonl:1:1: status: missing required field 'status'\n"
            "    1 | {\"id\":0,\"class\":\"c\",\"arrival_s\":1,\"first_token_s\":null,\"finish_s\":null,"
            "\"input_tokens\":1,\"output_tokens\":0}\n"
            "      | ^\n");
}

TEST(FleetplanRecords, UnknownStatus) {
  EXPECT_EQ(FleetplanError(R"({"status":"canceled"})"
                           "\n"),
            "records.jsonl:1:11: status: unknown status 'canceled'; did you mean 'cancelled'? "
            "(valid: ok, error, cancelled, rejected, timeout)\n"
            "    1 | {\"status\":\"canceled\"}\n"
            "      |           ^\n");
}

TEST(FleetplanRecords, WrongType) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"arrival_s":"1.5"})"
                           "\n"),
            "records.jsonl:1:21: arrival_s: expected a time in seconds, got a string\n"
            "    1 | {\"id\":0,\"arrival_s\":\"1.5\"}\n"
            "      |                     ^\n");
}

TEST(FleetplanRecords, DuplicateField) {
  EXPECT_EQ(FleetplanError(R"({"id":0,"id":1})"
                           "\n"),
            "records.jsonl:1:9: field 'id' is given twice\n"
            "    1 | {\"id\":0,\"id\":1}\n"
            "      |         ^\n");
}

TEST(FleetplanRecords, DuplicateId) {
  EXPECT_EQ(FleetplanError(std::string(kLine2Prefix) + kLine2Prefix),
            "records.jsonl:2:7: id: duplicate id 0 (first used on line 1)\n"
            "    2 | {\"id\":0,\"class\":\"c\",\"arrival_s\":1,\"first_token_s\":1.1,\"finish_s\":2,"
            "\"status\":\"ok\",\"input_tokens\":1,\"output_tokens\":2}\n"
            "      |       ^\n");
}

TEST(FleetplanRecords, ItlNeededButAbsent) {
  CaptureSink sink;
  sink.needs_itl = true;
  EXPECT_EQ(FleetplanError(kLine2Prefix, sink),
            "records.jsonl:1:1: this record's class has an itl_max objective, but the record has "
            "no inter-token gaps (itl_ms or itl_max_ms)\n"
            "    1 | {\"id\":0,\"class\":\"c\",\"arrival_s\":1,\"first_token_s\":1.1,\"finish_s\":2,"
            "\"status\":\"ok\",\"input_tokens\":1,\"output_tokens\":2}\n"
            "      | ^\n");
}

TEST(FleetplanRecords, MoreGapsThanTokens) {
  const std::string line =
      R"({"id":0,"class":"c","arrival_s":1,"first_token_s":1.1,"finish_s":2,"status":"ok","input_tokens":1,"output_tokens":2,"itl_ms":[1,2]})";
  EXPECT_EQ(FleetplanError(line + "\n"),
            "records.jsonl:1:126: itl_ms: 2 gaps, but 2 output tokens have at most 1\n"
            "    1 | " + line + "\n"
            "      | " + std::string(125, ' ') + "^\n");
}

TEST(FleetplanRecords, OkWithoutFinish) {
  const std::string line =
      R"({"id":0,"class":"c","arrival_s":1,"first_token_s":1.1,"finish_s":null,"status":"ok","input_tokens":1,"output_tokens":2})";
  EXPECT_EQ(FleetplanError(line + "\n"),
            "records.jsonl:1:66: finish_s: status 'ok' needs a finish time, got null\n"
            "    1 | " + line + "\n"
            "      | " + std::string(65, ' ') + "^\n");
}

TEST(FleetplanRecords, EmptyFileIsAnError) {
  CaptureSink sink;
  const std::string path = WriteTemp("empty.jsonl", "\n  \n");
  Expected<RecordsFileInfo> info = ReadAs("fleetplan", path, sink);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message(), path + ": no records (the file has no record lines)");
}

TEST(FleetplanRecords, MissingFileIsAnError) {
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("fleetplan", "no/such/records.jsonl", sink);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message(), "no/such/records.jsonl: cannot open: No such file or directory");
}

TEST(RecordWriter, RoundTripsRandomRecords) {
  RngStream rng(7, "records-roundtrip");
  WorkloadNames names;
  names.classes = {"chat", "doc \"quoted\"", "ünïcode"};
  names.tenants = {"t0", "t1"};
  std::vector<RequestRecord> written;
  std::string text;
  for (int i = 0; i < 2'000; ++i) {
    RequestRecord r;
    r.id = i;
    r.class_id = static_cast<ClassId>(rng.NextBelow(3));
    r.tenant = rng.NextBelow(3) == 0 ? kNoTenant : static_cast<TenantId>(rng.NextBelow(2));
    r.arrival = SimTime::FromNanos(static_cast<int64_t>(rng.NextBelow(1'000'000'000'000'000ULL)));
    r.status = static_cast<RecordStatus>(rng.NextBelow(kRecordStatusCount));
    r.input_tokens = static_cast<int64_t>(rng.NextBelow(100'000));
    r.output_tokens = 1 + static_cast<int64_t>(rng.NextBelow(4'000));
    r.valid = rng.NextBelow(10) != 0;
    if (r.status == RecordStatus::kOk || rng.NextBelow(2) == 0) {
      r.first_token = r.arrival + Duration::Nanos(static_cast<int64_t>(rng.NextBelow(60'000'000'000ULL)));
      r.finish = *r.first_token + Duration::Nanos(static_cast<int64_t>(rng.NextBelow(600'000'000'000ULL)));
      if (rng.NextBelow(2) == 0) r.itl_max = Duration::Nanos(static_cast<int64_t>(rng.NextBelow(2'000'000'000ULL)));
    }
    if (rng.NextBelow(2) == 0) {  // routing fields of simulated fleets
      r.replica = static_cast<int64_t>(rng.NextBelow(16));
      r.matched_prefix_tokens = static_cast<int64_t>(rng.NextBelow(100'000));
      r.queue_age_at_assignment = Duration::Nanos(static_cast<int64_t>(rng.NextBelow(2'000'000'000ULL)));
    }
    if (r.status == RecordStatus::kRejected && rng.NextBelow(2) == 0) {  // fleet admission's estimate
      r.retry_after = Duration::Nanos(static_cast<int64_t>(rng.NextBelow(600'000'000'000ULL)));
    }
    written.push_back(r);
    AppendRecordJsonl(r, names, &text);
  }
  CaptureSink sink;
  sink.classes = names.classes;
  sink.fixed = true;
  Expected<RecordsFileInfo> info = ReadAs("fleetplan", WriteTemp("roundtrip.jsonl", text), sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  ASSERT_EQ(sink.records.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    RequestRecord expected = written[i];
    if (expected.tenant != kNoTenant) {  // tenants are renumbered in order of appearance
      const auto& seen = info->tenants;
      expected.tenant = static_cast<TenantId>(
          std::find(seen.begin(), seen.end(), names.tenants[static_cast<size_t>(expected.tenant)]) - seen.begin());
    }
    ASSERT_EQ(sink.records[i], expected) << "record " << i;
  }
}

// --- LLMServingSim's real vLLM runs -------------------------------------------------------

std::string VllmRun(const std::string& run) {
  return ::fleetplan::testing::SharedDataRoot() + "/profiles/llmservingsim/vllm-runs/" + run + "/requests.jsonl";
}

TEST(LlmServingSimRecords, MeasuresFromQueuedTsBecauseTheClocksDiffer) {
  FP_REQUIRE_SHARED_DATA();
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("llmservingsim", VllmRun("RTX4090/Llama-3.1-8B"), sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->records, 300);
  ASSERT_EQ(sink.records.size(), 300u);
  EXPECT_EQ(sink.classes, std::vector<std::string>{"default"});
  // bench-0: queued_ts 27536.660701067, first_token_ts 27537.350135653,
  // last_token_ts 27554.231018618, 531 output tokens.
  const RequestRecord& r = sink.records[0];
  EXPECT_EQ(r.arrival, SimTime::FromNanos(27'536'660'701'067));
  EXPECT_EQ(Ttft(r), Ns(689'434'586));
  EXPECT_EQ(E2e(r), Ns(17'570'317'551));
  EXPECT_EQ(r.output_tokens, 531);
  EXPECT_EQ(r.input_tokens, 2358);
  EXPECT_EQ(r.itl_max, std::nullopt);
  ASSERT_EQ(info->notes.size(), 2u);
  EXPECT_EQ(info->notes[0],
            "llmservingsim: arrival = queued_ts (engine monotonic clock); arrival_time is "
            "wall-clock epoch seconds, a different clock, so TTFT and E2E run from queued_ts as "
            "LLMServingSim measures them");
}

TEST(LlmServingSimRecords, SameClockUsesArrivalTime) {
  const std::string line =
      R"({"request_id": "a", "input_toks": 10, "output_toks": 3, "arrival_time": 5.0, "queued_ts": 5.25, "scheduled_ts": 5.5, "first_token_ts": 6.0, "last_token_ts": 7.0})";
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("llmservingsim", WriteTemp("same.jsonl", line + "\n"), sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(Ttft(sink.records[0]), Sec(1));
  EXPECT_EQ(info->notes[0], "llmservingsim: arrival = arrival_time (on the same clock as queued_ts)");
}

TEST(LlmServingSimRecords, FirstTokenBeforeScheduledIsLocated) {
  const std::string line =
      R"({"request_id": "a", "input_toks": 10, "output_toks": 3, "arrival_time": 5.0, "queued_ts": 5.25, "scheduled_ts": 5.5, "first_token_ts": 5.4, "last_token_ts": 7.0})";
  CaptureSink sink;
  const std::string path = WriteTemp("bad.jsonl", line + "\n");
  Expected<RecordsFileInfo> info = ReadAs("llmservingsim", path, sink);
  ASSERT_FALSE(info.ok());
  const std::string& message = info.status().message();
  EXPECT_EQ(message.substr(0, message.find('\n')),
            path + ":1:136: first_token_ts: first_token_ts 5.4 is before scheduled_ts 5.5");
}

// --- vllm bench serve --save-result --------------------------------------------------------

TEST(VllmBenchRecords, ReadsPerRequestArrays) {
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("vllm-bench", testing_util::Fixture("vllm_bench_result.json"), sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  ASSERT_EQ(sink.records.size(), 6u);
  EXPECT_EQ(info->stated_window, std::nullopt);
  const RequestRecord& r0 = sink.records[0];
  EXPECT_EQ(r0.arrival, SimTime::Zero());
  EXPECT_EQ(Ttft(r0), Ms(100));
  EXPECT_EQ(E2e(r0), Ms(175));
  EXPECT_EQ(Tpot(r0), Ms(25));
  EXPECT_EQ(r0.itl_max, Ms(30));
  EXPECT_EQ(sink.records[1].arrival, SimTime::FromNanos(Ms(500).ns()));
  const RequestRecord& failed = sink.records[2];
  EXPECT_EQ(failed.status, RecordStatus::kError);
  EXPECT_EQ(failed.finish, std::nullopt);
  EXPECT_EQ(failed.input_tokens, 128);
  EXPECT_EQ(sink.records[5].arrival, SimTime::FromNanos(Ms(2'400).ns()));
  EXPECT_EQ(E2e(sink.records[5]), Ms(340));
}

TEST(VllmBenchRecords, OlderFileWithoutStartTimesUsesDuration) {
  CaptureSink sink;
  Expected<RecordsFileInfo> info =
      ReadAs("vllm-bench", testing_util::Fixture("vllm_bench_result_old.json"), sink);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->stated_window, Sec(3));
  EXPECT_EQ(sink.records[3].arrival, SimTime::Zero());
  EXPECT_EQ(E2e(sink.records[3]), Ms(320));  // ttft + sum(itls) = 0.12 + 0.2
  EXPECT_EQ(info->notes[1], "vllm-bench: finish = arrival + ttfts[i] + sum(itls[i]) (the file has no latencies)");
}

TEST(VllmBenchRecords, MismatchedArraysAreLocated) {
  const std::string path = WriteTemp("bench.json",
                                     "{\"ttfts\": [0.1, 0.2],\n \"itls\": [[], []],\n \"input_lens\": [1],\n"
                                     " \"output_lens\": [1, 1], \"errors\": [\"\", \"\"]}\n");
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("vllm-bench", path, sink);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message(),
            path + ":3:16: input_lens: has 1 entries but ttfts has 2; the arrays are per request and "
            "must be the same length\n"
            "    3 |  \"input_lens\": [1],\n"
            "      |                ^\n");
}

TEST(VllmBenchRecords, BadElementIsLocated) {
  const std::string path = WriteTemp("bench.json",
                                     "{\"ttfts\": [0.1, 0.2], \"itls\": [[], []], \"input_lens\": [1, -4], "
                                     "\"output_lens\": [1, 1], \"errors\": [\"\", \"\"], \"duration\": 1}");
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("vllm-bench", path, sink);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message().substr(0, info.status().message().find('\n')),
            path + ":1:59: input_lens[1]: expected an integer >= 0, got -4");
}

TEST(VllmBenchRecords, SyntaxErrorIsLocated) {
  const std::string path = WriteTemp("bench.json", "{\"ttfts\": [0.1, 0.2,\n  \"itls\" [[]]}\n");
  CaptureSink sink;
  Expected<RecordsFileInfo> info = ReadAs("vllm-bench", path, sink);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message(),
            path + ":2:10: expected ',' or ']' in an array\n"
            "    2 |   \"itls\" [[]]}\n"
            "      |          ^\n");
}

// --- format detection and the factory -------------------------------------------------------

TEST(RecordFormats, DetectsEachFormat) {
  FP_REQUIRE_SHARED_DATA();
  EXPECT_EQ(*DetectRecordFormat(WriteTemp("a.jsonl", kGood)), "fleetplan");
  EXPECT_EQ(*DetectRecordFormat(VllmRun("RTXPRO6000/Llama-3.1-8B")), "llmservingsim");
  EXPECT_EQ(*DetectRecordFormat(testing_util::Fixture("vllm_bench_result.json")), "vllm-bench");
}

TEST(RecordFormats, UndetectableFormatListsTheChoices) {
  const std::string path = WriteTemp("odd.jsonl", "{\"foo\": 1, \"bar\": 2}\n");
  Expected<std::string> format = DetectRecordFormat(path);
  ASSERT_FALSE(format.ok());
  EXPECT_EQ(format.status().message(),
            path + ": cannot tell the records format from its start (keys foo, bar); name it with "
            "--format (valid: fleetplan, llmservingsim, vllm-bench)");
}

// Regression: a valid record whose first line ran past the 64 KiB read for detection (a
// long tenant before its marker keys) could not be told apart.
TEST(RecordFormats, ALongFirstRecordIsReadWholeForDetectionUpToTheLineLimit) {
  const std::string line = "{\"id\": \"r1\", \"class\": \"chat\", \"tenant\": \"" + std::string(200 << 10, 't') +
                           "\", \"arrival_s\": 0}\n";
  EXPECT_EQ(*DetectRecordFormat(WriteTemp("long.jsonl", line)), "fleetplan");
  const std::string path = WriteTemp("huge.jsonl", "{\"tenant\": \"" + std::string(17 << 20, 't') + "\"}\n");
  Expected<std::string> huge = DetectRecordFormat(path);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(), path + ":1: line is longer than 16 MiB; is this a records file? (docs/limits.md)");
}

TEST(RecordFormats, UnknownFormatNameSuggestsTheNearest) {
  auto reader = MakeRecordReader("vllm_bench");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().message(),
            "unknown records format 'vllm_bench'; did you mean 'vllm-bench'? (valid: fleetplan, "
            "llmservingsim, vllm-bench)");
}

}  // namespace
}  // namespace fleetplan
