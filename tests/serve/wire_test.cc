// The emulator's pure parts: tokenizer rules, request parsing, event and metric rendering.
#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/serve/openai.h"
#include "fleetplan/serve/prometheus.h"
#include "fleetplan/serve/tokenizer.h"

namespace fleetplan::serve {
namespace {

std::vector<std::string> Pieces(std::string_view text) {
  const Tokenized t = Tokenize(text);
  std::vector<std::string> out;
  uint32_t start = 0;
  for (const uint32_t end : t.ends) {
    out.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

TEST(Tokenizer, DocumentedRules) {
  EXPECT_EQ(Pieces(" hello"), (std::vector<std::string>{" hell", "o"}));
  EXPECT_EQ(Pieces("GPU42, ok\n"), (std::vector<std::string>{"GPU4", "2", ",", " ok", "\n"}));
  EXPECT_EQ(Pieces("a  b"), (std::vector<std::string>{"a", " ", " b"}));
  EXPECT_EQ(Tokenize("").ids.size(), 0u);
  EXPECT_EQ(Tokenize("\xc3\xa9").ids.size(), 2u);  // each UTF-8 byte
  EXPECT_EQ(Tokenize(" the").ids, Tokenize(" the").ids);
  for (const int64_t id : Tokenize("some text, 123").ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, kVocabulary);
  }
}

TEST(Tokenizer, FillerRetokenizesToItsCount) {
  std::string text;
  for (int64_t i = 0; i < 500; ++i) text += FillerToken(77, i);
  EXPECT_EQ(Tokenize(text).ids.size(), 500u);
  EXPECT_EQ(FillerToken(77, 3), FillerToken(77, 3));
}

TEST(Tokenizer, LayoutSharesExactlyTheIdenticalLeadingBlocks) {
  std::vector<int64_t> a(40), b(40);
  for (int64_t i = 0; i < 40; ++i) a[static_cast<size_t>(i)] = b[static_cast<size_t>(i)] = i;
  b[20] = 999;  // differs inside the second block of 16
  const auto la = PromptLayout(a, 16), lb = PromptLayout(b, 16);
  ASSERT_EQ(la.size(), 3u);
  EXPECT_EQ(la[2].tokens, 8);
  EXPECT_EQ(la[0], lb[0]);
  EXPECT_NE(la[1], lb[1]);
}

TEST(ApiRequestParse, ReadsTheFieldsAndAcceptsUnknownOnes) {
  const auto r = ParseApiRequest(Endpoint::kCompletions,
                                 R"({"model":"m","prompt":["hi"],"stream":true,"stream_options":{"include_usage":true},
                                     "max_tokens":5,"stop":"x","seed":3,"n":1,"temperature":0.7,"whatever":{"a":[1]}})");
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->prompt_text, "hi");
  EXPECT_TRUE(r.request->stream && r.request->include_usage);
  EXPECT_EQ(r.request->max_tokens, 5);
  EXPECT_EQ(r.request->stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.request->seed, 3u);
  const auto c = ParseApiRequest(Endpoint::kChat,
                                 R"({"model":"m","messages":[{"role":"system","content":"S"},
                                     {"role":"user","content":[{"type":"text","text":"U"}]}]})");
  ASSERT_TRUE(c.request) << c.error.message;
  EXPECT_EQ(c.request->prompt_text, "<|system|>\nS\n<|user|>\nU\n<|assistant|>\n");
  const auto ids = ParseApiRequest(Endpoint::kCompletions, R"({"model":"m","prompt":[[5,6,7]]})");
  ASSERT_TRUE(ids.request);
  EXPECT_EQ(ids.request->prompt_ids, (std::vector<int64_t>{5, 6, 7}));
}

TEST(ApiRequestParse, RefusesWhatItCannotHonourWithTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model":"m","prompt":"p","n":3})", "n"},
      {R"({"model":"m","prompt":"p","best_of":2})", "best_of"},
      {R"({"model":"m","prompt":"p","echo":true})", "echo"},
      {R"({"model":"m","prompt":"p","logprobs":2})", "logprobs"},
      {R"({"model":"m","prompt":["a","b"]})", "prompt"},
      {R"({"model":"m","prompt":""})", "prompt"},
      {R"({"model":"m","prompt":"p","max_tokens":0})", "max_tokens"},
      {R"({"model":"m","prompt":"p","max_tokens":18446744073709551615})", "max_tokens"},
      {R"({"model":"m","prompt":"p","stop":[1]})", "stop"},
      {R"({"model":"m","prompt":"p","stream_options":3})", "stream_options"},
      {R"({"prompt":"p"})", "model"},
  };
  for (const auto& [body, param] : cases) {
    const auto r = ParseApiRequest(Endpoint::kCompletions, body);
    EXPECT_FALSE(r.request) << body;
    EXPECT_EQ(r.error.status, 400) << body;
    EXPECT_EQ(r.error.param, param) << body;
  }
  EXPECT_FALSE(ParseApiRequest(Endpoint::kCompletions, "{\"model\":").request);
  const auto deep = ParseApiRequest(Endpoint::kCompletions, "{\"model\":\"m\",\"prompt\":\"p\",\"x\":" + std::string(100, '[') +
                                                                std::string(100, ']') + "}");
  EXPECT_FALSE(deep.request);
  EXPECT_NE(deep.error.message.find("nested"), std::string::npos) << deep.error.message;
  EXPECT_FALSE(ParseApiRequest(Endpoint::kChat, R"({"model":"m","messages":[]})").request);
  // B14: a token id beyond 64 bits is out of range, not a prompt of the wrong type; a
  // fractional one is not an integer.
  const auto huge = ParseApiRequest(Endpoint::kCompletions, R"({"model":"m","prompt":[18446744073709551616]})");
  EXPECT_FALSE(huge.request);
  EXPECT_EQ(huge.error.message, "'prompt' token id out of range");
  EXPECT_EQ(huge.error.param, "prompt");
  const auto half = ParseApiRequest(Endpoint::kCompletions, R"({"model":"m","prompt":[1.5, 2]})");
  EXPECT_FALSE(half.request);
  EXPECT_EQ(half.error.message, "'prompt' token ids must be integers");
}

TEST(Rendering, EventsAndBodiesAreValidJsonInOpenAIShape) {
  const ResponseHead head{"cmpl-1", 1700000000, "m"};
  std::string out;
  AppendTokenEvent(out, Endpoint::kCompletions, head, " a\"b\n", "", "");
  ASSERT_EQ(out.substr(0, 6), "data: ");
  ASSERT_EQ(out.substr(out.size() - 2), "\n\n");
  const Json e = Json::parse(out.substr(6, out.size() - 8));
  EXPECT_EQ(e["choices"][0]["text"], " a\"b\n");
  EXPECT_TRUE(e["choices"][0]["finish_reason"].is_null());
  const Json body = Json::parse(CompleteBody(Endpoint::kChat, head, "t", "stop", "", Usage{3, 1}));
  EXPECT_EQ(body["choices"][0]["message"]["content"], "t");
  EXPECT_EQ(body["usage"]["total_tokens"], 4);
  const Json err = Json::parse(ErrorBody(ApiError{400, "bad", "invalid_request_error", "n"}));
  EXPECT_EQ(err["error"]["param"], "n");
  EXPECT_TRUE(err["error"]["code"].is_null());
}

TEST(Prometheus, BucketsAndRendering) {
  EXPECT_EQ(Buckets125(8192), (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 8192}));
  EXPECT_EQ(Buckets125(1000).back(), 1000);
  Histogram h({0.5, 1.0});
  h.Observe(0.25);
  h.Observe(0.5);
  h.Observe(3);
  std::string out;
  h.Render(out, "x", "a=\"1\"");
  EXPECT_EQ(out,
            "x_bucket{a=\"1\",le=\"0.5\"} 2.0\nx_bucket{a=\"1\",le=\"1.0\"} 2.0\nx_bucket{a=\"1\",le=\"+Inf\"} 3.0\n"
            "x_count{a=\"1\"} 3.0\nx_sum{a=\"1\"} 3.75\n");
  EXPECT_EQ(h.CountAtMost(0.5), 2u);
  EXPECT_EQ(PromNumber(2560), "2560.0");
  EXPECT_EQ(PromNumber(0.001), "0.001");
  EXPECT_EQ(LabelValue("a\"b"), "a\\\"b");
}

}  // namespace
}  // namespace fleetplan::serve
