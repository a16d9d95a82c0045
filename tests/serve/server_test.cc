// The emulator end to end over loopback: conformance (streamed and not agree, stop
// strings, error shapes), idempotency, cancellation back to baseline, the waiting bound,
// slow clients, LoRA routes and the metric names.
#include <gtest/gtest.h>

#include <atomic>

#include "serve/serve_harness.h"

namespace fleetplan::serve::testing {
namespace {

const char* kModel = "llama-3.1-8b";

ServeOptions Fast(double speed = 50) {
  ServeOptions o;
  o.speed = speed;
  return o;
}

std::string Text(const Events& ev, bool chat) {
  std::string t;
  for (const Json& c : ev.chunks) {
    if (c["choices"].empty()) continue;
    const Json& ch = c["choices"][0];
    if (chat) {
      if (ch["delta"].contains("content")) t += ch["delta"]["content"].get<std::string>();
    } else {
      t += ch["text"].get<std::string>();
    }
  }
  return t;
}

std::string Finish(const Events& ev) {
  for (const Json& c : ev.chunks) {
    if (!c["choices"].empty() && !c["choices"][0]["finish_reason"].is_null()) return c["choices"][0]["finish_reason"];
  }
  return "";
}

TEST(ServeConformance, StreamedAndNotGiveTheSameAnswer) {
  RunningServer s(SmallScenario(), Fast());
  for (const bool chat : {false, true}) {
    Json req = {{"model", kModel}, {"max_tokens", 24}, {"seed", 11}, {"ignore_eos", true},
                {"some_unknown_field", {{"nested", 1}}}};
    if (chat) {
      req["messages"] = Json::array({{{"role", "user"}, {"content", "Tell me about KV caches."}}});
    } else {
      req["prompt"] = "Tell me about KV caches.";
    }
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    const Reply whole = Post(s.port(), path, req);
    ASSERT_EQ(whole.status, 200) << whole.body;
    const Json w = whole.json();
    req["stream"] = true;
    req["stream_options"] = {{"include_usage", true}};
    const Reply streamed = Post(s.port(), path, req);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    EXPECT_EQ(streamed.headers.at("content-type"), "text/event-stream");
    const Events ev = ParseEvents(streamed.body);
    ASSERT_TRUE(ev.well_formed) << streamed.body;
    ASSERT_TRUE(ev.done);
    const std::string text = chat ? w["choices"][0]["message"]["content"].get<std::string>()
                                  : w["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(Text(ev, chat), text);
    EXPECT_EQ(w["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(Finish(ev), "length");
    EXPECT_EQ(w["usage"]["completion_tokens"], 24);
    const Json& usage = ev.chunks.back()["usage"];
    EXPECT_EQ(usage, w["usage"]);
    EXPECT_TRUE(ev.chunks.back()["choices"].empty());
    // One event per token (plus the role event for chat and the usage event).
    EXPECT_EQ(ev.chunks.size(), 24u + 1u + (chat ? 1u : 0u));
    EXPECT_EQ(w["object"], chat ? "chat.completion" : "text_completion");
    EXPECT_EQ(ev.chunks[0]["object"], chat ? "chat.completion.chunk" : "text_completion");
    // Prompt tokens by the documented tokenizer: the same text gives the same count both ways.
    EXPECT_GT(w["usage"]["prompt_tokens"].get<int64_t>(), 5);
  }
}

TEST(ServeConformance, SameSeedSameTokensAndTokenIdPromptsCountExactly) {
  RunningServer s(SmallScenario(), Fast());
  const Json req = {{"model", kModel}, {"prompt", Json::array({1, 2, 3, 4, 5, 6, 7})}, {"max_tokens", 16}, {"seed", 3}};
  const Json a = Post(s.port(), "/v1/completions", req).json();
  const Json b = Post(s.port(), "/v1/completions", req).json();
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_EQ(a["usage"]["prompt_tokens"], 7);
  Json other = req;
  other["seed"] = 4;
  EXPECT_NE(Post(s.port(), "/v1/completions", other).json()["choices"][0]["text"], a["choices"][0]["text"]);
  // Without ignore_eos the class's output distribution (uniform 20..60) caps below max_tokens.
  const Json d = Post(s.port(), "/v1/completions", {{"model", kModel}, {"prompt", "x"}, {"max_tokens", 1000}}).json();
  const int64_t n = d["usage"]["completion_tokens"];
  EXPECT_GE(n, 20);
  EXPECT_LE(n, 60);
  EXPECT_EQ(d["choices"][0]["finish_reason"], "stop");
  // max_completion_tokens wins over max_tokens.
  const Json c = Post(s.port(), "/v1/chat/completions",
                      {{"model", kModel}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 50},
                       {"max_completion_tokens", 5}, {"ignore_eos", true}})
                     .json();
  EXPECT_EQ(c["usage"]["completion_tokens"], 5);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
}

TEST(ServeConformance, StopStringsAreExcluded) {
  RunningServer s(SmallScenario(), Fast());
  Json req = {{"model", kModel}, {"prompt", "stop test"}, {"max_tokens", 40}, {"seed", 9}, {"ignore_eos", true}};
  const std::string full = Post(s.port(), "/v1/completions", req).json()["choices"][0]["text"];
  // A stop string taken from the middle of the answer.
  const size_t cut = full.find(' ', full.size() / 2);
  ASSERT_NE(cut, std::string::npos);
  const std::string stop = full.substr(cut, 4);
  const std::string expected = full.substr(0, full.find(stop));
  req["stop"] = Json::array({"never-there", stop});
  const Json w = Post(s.port(), "/v1/completions", req).json();
  EXPECT_EQ(w["choices"][0]["text"], expected);
  EXPECT_EQ(w["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(w["choices"][0]["stop_reason"], stop);
  EXPECT_LT(w["usage"]["completion_tokens"].get<int64_t>(), 40);
  req["stream"] = true;
  const Events ev = ParseEvents(Post(s.port(), "/v1/completions", req).body);
  EXPECT_EQ(Text(ev, false), expected);
  EXPECT_EQ(Finish(ev), "stop");
}

// --echo: the answer repeats the prompt's tokens (the last message's for chat; the ids
// as " <id>" for a token-id prompt), cyclically, for as many tokens as the engine
// generates; streamed and whole agree, and a stop string still cuts it.
TEST(ServeEcho, AnswersRepeatThePromptsTokens) {
  ServeOptions o = Fast();
  o.echo = true;
  RunningServer s(SmallScenario(), o);
  const Json done = Post(s.port(), "/v1/completions",
                         {{"model", kModel}, {"prompt", "Hello KV"}, {"max_tokens", 7}, {"ignore_eos", true}})
                        .json();
  // "Hello KV" is "Hell", "o", " KV": seven tokens go round it twice and once more.
  EXPECT_EQ(done["choices"][0]["text"], "Hello KVHello KVHell");
  EXPECT_EQ(done["usage"]["completion_tokens"], 7);
  Json chat = {{"model", kModel},
               {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", " ok"}}}},
               {"max_tokens", 3},
               {"ignore_eos", true}};
  const Json c = Post(s.port(), "/v1/chat/completions", chat).json();
  EXPECT_EQ(c["choices"][0]["message"]["content"], " ok ok ok");
  chat["stream"] = true;
  EXPECT_EQ(Text(ParseEvents(Post(s.port(), "/v1/chat/completions", chat).body), true), " ok ok ok");
  const Json ids = Post(s.port(), "/v1/completions",
                        {{"model", kModel}, {"prompt", Json::array({17, 4})}, {"max_tokens", 3}, {"ignore_eos", true}})
                       .json();
  EXPECT_EQ(ids["choices"][0]["text"], " 17 4 17");
  const Json stopped = Post(s.port(), "/v1/completions",
                            {{"model", kModel}, {"prompt", "Hello KV"}, {"max_tokens", 7}, {"ignore_eos", true},
                             {"stop", " KV"}})
                           .json();
  EXPECT_EQ(stopped["choices"][0]["text"], "Hello");
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
}

void ExpectError(const Reply& r, int status, const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.body;
  Json j;
  ASSERT_NO_THROW(j = r.json()) << r.body;
  ASSERT_TRUE(j.contains("error")) << r.body;
  const Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.body;
  }
}

TEST(ServeBadInput, EveryEndpointAnswers4xxInOpenAIShapeAndKeepsServing) {
  ServeOptions o = Fast();
  o.max_body_bytes = 4096;
  RunningServer s(SmallScenario(), o);
  const uint16_t p = s.port();
  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = path == "/v1/chat/completions";
    Json good = {{"model", kModel}};
    if (chat) {
      good["messages"] = Json::array({{{"role", "user"}, {"content", "hi"}}});
    } else {
      good["prompt"] = "hi";
    }
    ExpectError(Fetch(p, http::verb::post, path, "{not json"), 400);
    ExpectError(Fetch(p, http::verb::post, path, "[1,2]"), 400);
    // A number beyond a double's range is a syntax error, not an exception that stops
    // the server.
    ExpectError(Fetch(p, http::verb::post, path, R"({"model": "x", "max_tokens": 1e999})"), 400);
    ExpectError(Fetch(p, http::verb::post, path, std::string(5000, '[')), 413);
    Json j = good;
    j["model"] = "no-such-model";
    ExpectError(Post(p, path, j), 404, "model");
    j = good;
    j["model"] = 7;
    ExpectError(Post(p, path, j), 400, "model");
    j = good;
    j["max_tokens"] = -1;
    ExpectError(Post(p, path, j), 400, "max_tokens");
    j = good;
    j["max_tokens"] = "ten";
    ExpectError(Post(p, path, j), 400, "max_tokens");
    j = good;
    j["max_tokens"] = 100000;
    ExpectError(Post(p, path, j), 400, chat ? "messages" : "prompt");
    j = good;
    j["n"] = 2;
    ExpectError(Post(p, path, j), 400, "n");
    j = good;
    j["stream"] = "yes";
    ExpectError(Post(p, path, j), 400, "stream");
    j = good;
    j["stop"] = 5;
    ExpectError(Post(p, path, j), 400, "stop");
    j = good;
    j["seed"] = 1.5;
    ExpectError(Post(p, path, j), 400, "seed");
    j = good;
    j.erase(chat ? "messages" : "prompt");
    ExpectError(Post(p, path, j), 400, chat ? "messages" : "prompt");
    ExpectError(Fetch(p, http::verb::get, path), 405);
  }
  ExpectError(Post(p, "/v1/completions", {{"model", kModel}, {"prompt", Json::array({-1})}}), 400, "prompt");
  ExpectError(Post(p, "/v1/completions", {{"model", kModel}, {"prompt", "x"}}, {{"X-Request-Id", "has space"}}), 400,
              "X-Request-Id");
  ExpectError(Fetch(p, http::verb::post, "/v1/completions",
                    "{\"model\":\"llama-3.1-8b\",\"prompt\":\"x\",\"a\":" + std::string(70, '[') + std::string(70, ']') + "}"),
              400);
  ExpectError(Post(p, "/v1/chat/completions", {{"model", kModel}, {"messages", {{{"content", "x"}}}}}), 400);
  ExpectError(Post(p, "/v1/load_lora_adapter", {{"lora_path", "/x"}}), 400, "lora_name");
  ExpectError(Fetch(p, http::verb::post, "/v1/load_lora_adapter", "nope"), 400);
  ExpectError(Fetch(p, http::verb::post, "/v1/load_lora_adapter", R"({"lora_name": "a", "lora_path": "/a", "rank": 2e999})"), 400);
  ExpectError(Post(p, "/v1/unload_lora_adapter", {{"lora_name", "absent"}}), 404);
  ExpectError(Post(p, "/v1/requests/nothing/cancel", Json::object()), 404);
  ExpectError(Fetch(p, http::verb::post, "/metrics"), 405);
  ExpectError(Fetch(p, http::verb::post, "/v1/models"), 405);
  ExpectError(Fetch(p, http::verb::post, "/health"), 405);
  ExpectError(Get(p, "/no/such/route"), 404);
  // Still serving.
  EXPECT_EQ(Get(p, "/health").status, 200);
  EXPECT_EQ(Post(p, "/v1/completions", {{"model", kModel}, {"prompt", "ok"}, {"max_tokens", 2}}).status, 200);
  const std::string m = Get(p, "/metrics").body;
  EXPECT_GT(MetricValue(m, "fleetplan:http_errors_total{engine=\"0\",model_name=\"llama-3.1-8b\",status=\"400\"}"), 10);
}

TEST(ServeIdempotency, LiveDuplicateIs409AndACompletedOneIsReplayed) {
  RunningServer s(SmallScenario(), Fast(5));
  const Json req = {{"model", kModel}, {"prompt", "idem"}, {"max_tokens", 200}, {"ignore_eos", true}};
  const std::map<std::string, std::string> key = {{"X-Request-Id", "abc-1"}};
  Reply first;
  std::thread t([&] { first = Post(s.port(), "/v1/completions", req, key); });
  // Wait until the first is live (200 tokens at 5x take about 400 ms), then duplicate it.
  for (int i = 0; i < 1000 && MetricValue(Get(s.port(), "/metrics").body, "fleetplan:live_requests{") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const Reply dup = Post(s.port(), "/v1/completions", req, key);
  t.join();
  ExpectError(dup, 409);
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.json()["id"], "cmpl-abc-1");
  const Reply again = Post(s.port(), "/v1/completions", req, key);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.headers.at("x-idempotent-replay"), "true");
  Json changed = req;
  changed["max_tokens"] = 41;
  ExpectError(Post(s.port(), "/v1/completions", changed, key), 422);
  const std::string m = Get(s.port(), "/metrics").body;
  EXPECT_EQ(MetricValue(m, "fleetplan:idempotent_replays_total{"), 1);
  EXPECT_GE(MetricValue(m, "fleetplan:duplicate_request_conflicts_total{"), 1);
}

// A streamed answer under a key is kept whole (role, tokens, usage, [DONE]) and replayed
// byte for byte; without a key nothing is kept and the same request runs again.
TEST(ServeIdempotency, AStreamedAnswerIsReplayedWholeOnlyUnderItsKey) {
  RunningServer s(SmallScenario(), Fast(20));
  const Json req = {{"model", kModel},
                    {"messages", {{{"role", "user"}, {"content", "idem"}}}},
                    {"max_tokens", 12},
                    {"ignore_eos", true},
                    {"stream", true},
                    {"stream_options", {{"include_usage", true}}}};
  const std::map<std::string, std::string> key = {{"X-Request-Id", "stream-1"}};
  const Reply first = Post(s.port(), "/v1/chat/completions", req, key);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_TRUE(ParseEvents(first.body).done);
  const Reply again = Post(s.port(), "/v1/chat/completions", req, key);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.headers.at("x-idempotent-replay"), "true");
  for (int i = 0; i < 2; ++i) {
    const Reply plain = Post(s.port(), "/v1/chat/completions", req);
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(plain.headers.count("x-idempotent-replay"), 0u);
    EXPECT_TRUE(ParseEvents(plain.body).done);
  }
  const std::string m = WaitForBaseline(s.port());
  EXPECT_EQ(MetricValue(m, "fleetplan:idempotent_replays_total{"), 1);
  EXPECT_EQ(MetricValue(m, "vllm:generation_tokens_total{"), 3 * 12);  // the replay generated nothing
}

TEST(ServeCancellation, DisconnectsAndTheCancelRouteReturnKvToBaseline) {
  RunningServer s(SmallScenario(), Fast(2));
  const Json body = {{"model", kModel}, {"prompt", std::string(2000, 'a')}, {"max_tokens", 2000}, {"ignore_eos", true},
                     {"stream", true}};
  std::vector<std::thread> clients;
  for (int i = 0; i < 20; ++i) clients.emplace_back([&] { RawStream(s.port(), body, 1); });
  for (auto& c : clients) c.join();
  // The cancel route, by X-Request-Id, while its client is still reading.
  std::string cut;
  std::thread held([&] { cut = RawStream(s.port(), body, 0, "to-cancel"); });
  Reply r;
  for (int i = 0; i < 500; ++i) {
    r = Post(s.port(), "/v1/requests/to-cancel/cancel", Json::object());
    if (r.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  held.join();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(cut.find("[DONE]"), std::string::npos);  // the stream was cut, not completed
  const std::string m = WaitForBaseline(s.port());
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_blocks_referenced{"), 0);
  EXPECT_EQ(MetricValue(m, "vllm:kv_cache_usage_perc{"), 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:live_requests{"), 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:client_disconnect_cancellations_total{"), 20);
  EXPECT_EQ(MetricValue(m, "fleetplan:cancel_route_cancellations_total{"), 1);
  EXPECT_EQ(MetricValue(m, "vllm:request_success_total{engine=\"0\",model_name=\"llama-3.1-8b\",finished_reason=\"abort\"}"), 21);
}

TEST(ServeOverload, WaitingBoundAnswers503WithRetryAfter) {
  RunningServer s(SmallScenario(/*max_running=*/1, /*max_waiting=*/1), Fast(4));
  const Json body = {{"model", kModel}, {"prompt", "busy"}, {"max_tokens", 200}, {"ignore_eos", true}};
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::string retry_after;
  std::mutex mu;
  std::vector<std::thread> clients;
  for (int i = 0; i < 6; ++i) {
    clients.emplace_back([&] {
      const Reply r = Post(s.port(), "/v1/completions", body);
      if (r.status == 200) {
        ++ok;
      } else if (r.status == 503) {
        ++busy;
        std::lock_guard<std::mutex> lock(mu);
        retry_after = r.headers.count("retry-after") ? r.headers.at("retry-after") : "";
        ExpectError(r, 503);
      } else {
        ++other;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_GE(busy.load(), 1);
  EXPECT_GE(ok.load(), 2);  // one running, one waiting
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(retry_after, "1");
  const std::string m = WaitForBaseline(s.port());
  EXPECT_EQ(MetricValue(m, "fleetplan:queue_full_rejections_total{"), busy.load());
}

TEST(ServeSlowClient, AFullBufferPausesTheStreamThenCancelsItWithoutStallingOthers) {
  ServeOptions o = Fast(1000);
  o.client_buffer_bytes = 1024;
  o.slow_client_timeout = Ms(300);
  // An answer far larger than what the kernel's socket buffers absorb (4 MiB send side).
  RunningServer s(SmallScenario(256, 0, /*max_context=*/131072), o);
  // A client that never reads, with a tiny receive buffer.
  net::io_context io;
  tcp::socket sock(io);
  sock.open(tcp::v4());
  sock.set_option(net::socket_base::receive_buffer_size(4096));
  sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
  const std::string body =
      Json{{"model", kModel}, {"prompt", "slow"}, {"max_tokens", 100000}, {"ignore_eos", true}, {"stream", true}}.dump();
  const std::string raw = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  net::write(sock, net::buffer(raw));
  // Meanwhile another client is served normally.
  const Reply other = Post(s.port(), "/v1/completions", {{"model", kModel}, {"prompt", "fine"}, {"max_tokens", 10}});
  EXPECT_EQ(other.status, 200);
  std::string m;
  for (int i = 0; i < 200; ++i) {
    m = Get(s.port(), "/metrics").body;
    if (MetricValue(m, "fleetplan:slow_client_cancellations_total{") >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_GE(MetricValue(m, "fleetplan:slow_client_pauses_total{"), 1);
  EXPECT_EQ(MetricValue(m, "fleetplan:slow_client_cancellations_total{"), 1);
  m = WaitForBaseline(s.port());
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_blocks_referenced{"), 0);
}

// Regression: a LoRA name with NUL and an escape sequence became a model id, printed raw.
TEST(ServeLora, ANameWithControlCharactersIsRefused) {
  RunningServer s(SmallScenario(), Fast());
  const std::string name("a\0\x1b[2J", 6);
  ExpectError(Post(s.port(), "/v1/load_lora_adapter", {{"lora_name", name}, {"lora_path", "/adapters/x"}}), 400,
              "lora_name");
  const Json models = Get(s.port(), "/v1/models").json();
  for (const Json& m : models["data"]) EXPECT_NE(m["id"].get<std::string>(), name);
}

TEST(ServeLora, LoadListRouteUnload) {
  RunningServer s(SmallScenario(), Fast());
  EXPECT_EQ(Post(s.port(), "/v1/load_lora_adapter", {{"lora_name", "sql"}, {"lora_path", "/adapters/sql"}}).status, 200);
  ExpectError(Post(s.port(), "/v1/load_lora_adapter", {{"lora_name", "sql"}, {"lora_path", "/adapters/sql"}}), 400);
  const Json models = Get(s.port(), "/v1/models").json();
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][0]["id"], kModel);
  EXPECT_EQ(models["data"][1]["id"], "sql");
  EXPECT_EQ(models["data"][1]["parent"], kModel);
  const Reply r = Post(s.port(), "/v1/completions", {{"model", "sql"}, {"prompt", "q"}, {"max_tokens", 3}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["model"], "sql");
  EXPECT_EQ(Post(s.port(), "/v1/unload_lora_adapter", {{"lora_name", "sql"}}).status, 200);
  ExpectError(Post(s.port(), "/v1/completions", {{"model", "sql"}, {"prompt", "q"}}), 404, "model");
}

TEST(ServeMetrics, VllmNamesLabelsAndBuckets) {
  RunningServer s(SmallScenario(), Fast());
  const Json req = {{"model", kModel}, {"prompt", std::string(400, 'z')}, {"max_tokens", 8}, {"ignore_eos", true}};
  ASSERT_EQ(Post(s.port(), "/v1/completions", req).status, 200);
  ASSERT_EQ(Post(s.port(), "/v1/completions", req).status, 200);  // a prefix-cache hit
  const std::string m = Get(s.port(), "/metrics").body;
  const std::string l = "{engine=\"0\",model_name=\"llama-3.1-8b\"";
  for (const std::string& name :
       {"vllm:num_requests_running" + l + "}", "vllm:num_requests_waiting" + l + "}", "vllm:kv_cache_usage_perc" + l + "}",
        "vllm:prefix_cache_queries_total" + l + "}", "vllm:prefix_cache_hits_total" + l + "}",
        "vllm:num_preemptions_total" + l + "}", "vllm:prompt_tokens_total" + l + "}",
        "vllm:generation_tokens_total" + l + "}", "vllm:request_success_total" + l + ",finished_reason=\"length\"}",
        "vllm:time_to_first_token_seconds_bucket" + l + ",le=\"0.001\"}",
        "vllm:time_to_first_token_seconds_bucket" + l + ",le=\"2560.0\"}",
        "vllm:inter_token_latency_seconds_bucket" + l + ",le=\"0.01\"}",
        "vllm:inter_token_latency_seconds_bucket" + l + ",le=\"80.0\"}",
        "vllm:e2e_request_latency_seconds_bucket" + l + ",le=\"7680.0\"}",
        "vllm:request_queue_time_seconds_bucket" + l + ",le=\"0.3\"}", "vllm:request_queue_time_seconds_count" + l + "}",
        std::string("vllm:lora_requests_info{max_lora=\"8\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"}"),
        std::string("vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\",engine=\"0\""),
        std::string("# TYPE vllm:request_success counter"), std::string("# TYPE vllm:time_to_first_token_seconds histogram")}) {
    EXPECT_NE(m.find("\n" + name), std::string::npos) << name;
  }
  EXPECT_EQ(MetricValue(m, "vllm:request_success_total" + l + ",finished_reason=\"length\"}"), 2);
  EXPECT_EQ(MetricValue(m, "vllm:generation_tokens_total" + l + "}"), 16);
  EXPECT_EQ(MetricValue(m, "vllm:time_to_first_token_seconds_count" + l + "}"), 2);
  EXPECT_EQ(MetricValue(m, "vllm:inter_token_latency_seconds_count" + l + "}"), 14);
  EXPECT_GT(MetricValue(m, "vllm:prefix_cache_hits_total" + l + "}"), 0);
  EXPECT_EQ(MetricValue(m, "vllm:prompt_tokens_total" + l + "}"), 2 * 100);  // 400 'z' = 100 tokens of 4
}

TEST(ServeReplicas, OnePortPerReplica) {
  ServeOptions o = Fast();
  o.replicas = 3;
  RunningServer s(SmallScenario(), o);
  ASSERT_EQ(s.replicas(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Post(s.port(i), "/v1/completions", {{"model", kModel}, {"prompt", "r"}, {"max_tokens", 3}}).status, 200);
    const std::string m = Get(s.port(i), "/metrics").body;
    EXPECT_EQ(MetricValue(m, "vllm:generation_tokens_total{"), 3);  // each replica counts only its own
  }
}

TEST(ServeFaults, InjectedErrorsSpikesAndStallsAreCountedAndStreamsStillComplete) {
  const std::string text = SmallScenario() +
                           "faults:\n"
                           "  serve:\n"
                           "    errors: {500: 0.2, 429: 0.1}\n"
                           "    latency_spike: {probability: 0.3, delay: 1s}\n"
                           "    stall: {probability: 0.3, duration: 2s}\n";
  RunningServer s(text, Fast(20));
  std::map<int, int> statuses;
  int complete = 0;
  for (int i = 0; i < 40; ++i) {
    const Json req = {{"model", kModel}, {"prompt", "fault " + std::to_string(i)}, {"max_tokens", 12},
                      {"ignore_eos", true}, {"stream", true}};
    const Reply r = Post(s.port(), "/v1/completions", req);
    ++statuses[r.status];
    if (r.status == 200) {
      const Events ev = ParseEvents(r.body);
      complete += ev.done && ev.chunks.size() == 12 ? 1 : 0;
    } else {
      ExpectError(r, r.status);
      EXPECT_EQ(r.json()["error"]["code"], "injected_fault");
      if (r.status == 429) {
        EXPECT_EQ(r.headers.count("retry-after"), 1u);
      }
    }
  }
  const std::string m = Get(s.port(), "/metrics").body;
  const std::string l = "{engine=\"0\",model_name=\"llama-3.1-8b\"";
  EXPECT_GT(statuses[500], 0);
  EXPECT_GT(statuses[429], 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:faults_injected_total" + l + ",kind=\"error_500\"}"), statuses[500]);
  EXPECT_EQ(MetricValue(m, "fleetplan:faults_injected_total" + l + ",kind=\"error_429\"}"), statuses[429]);
  EXPECT_GT(MetricValue(m, "fleetplan:faults_injected_total" + l + ",kind=\"latency_spike\"}"), 0);
  EXPECT_GT(MetricValue(m, "fleetplan:faults_injected_total" + l + ",kind=\"stall\"}"), 0);
  EXPECT_EQ(complete, statuses[200]);
  EXPECT_EQ(statuses[200] + statuses[500] + statuses[429], 40);
}

TEST(ServeFaults, BadSectionsAreLocatedErrors) {
  auto bad = LoadScenarioText(SmallScenario() + "faults:\n  serve:\n    errors: {abc: 0.1}\n", "f.yaml", ".");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("f.yaml:"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("400..599"), std::string::npos) << bad.status().message();
  auto sum = LoadScenarioText(SmallScenario() + "faults:\n  serve:\n    errors: {500: 0.7, 503: 0.6}\n", "f.yaml", ".");
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.status().message().find("at most 1"), std::string::npos) << sum.status().message();
  auto key = LoadScenarioText(SmallScenario() + "faults:\n  serve:\n    stal: {probability: 1}\n", "f.yaml", ".");
  ASSERT_FALSE(key.ok());
}

}  // namespace
}  // namespace fleetplan::serve::testing
