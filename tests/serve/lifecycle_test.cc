// The server's life around its requests: the speed range and a clock that catches up
// without starving the I/O thread, idle and header timeouts, the connection cap, and a
// shutdown that drains live streams. Regression tests for a server wedged by its first
// request at a high speed, for idle and slowloris connections held without limit, and for
// a shutdown that cut live streams without a terminating chunk.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "serve/serve_harness.h"

namespace fleetplan::serve::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

const char* kModel = "llama-3.1-8b";

// A connected socket to the server's first port.
tcp::socket Connect(net::io_context& io, uint16_t port) {
  tcp::socket sock(io);
  sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  return sock;
}

// Everything the server sends until it closes the connection.
std::string ReadToClose(tcp::socket& sock) {
  std::string got;
  char buf[4096];
  beast::error_code ec;
  while (!ec) {
    const size_t n = sock.read_some(net::buffer(buf), ec);
    got.append(buf, n);
  }
  return got;
}

// The body of a raw chunked HTTP response and whether its last chunk (0\r\n\r\n) came.
std::pair<std::string, bool> Dechunk(const std::string& raw) {
  size_t pos = raw.find("\r\n\r\n");
  if (pos == std::string::npos) return {"", false};
  pos += 4;
  std::string body;
  while (pos < raw.size()) {
    const size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t size = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) return {body, raw.compare(eol, 4, "\r\n\r\n") == 0};
    body += raw.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return {body, false};
}

Json LongStream(int tokens) {
  return {{"model", kModel}, {"prompt", "hello"}, {"max_tokens", tokens}, {"ignore_eos", true}, {"stream", true}};
}

TEST(ServeSpeed, ASpeedTheClockCannotKeepIsAUsageError) {
  auto scenario = LoadScenarioText(SmallScenario(), "serve-test.yaml", ".");
  ASSERT_TRUE(scenario.ok());
  auto plan = Bind(*scenario);
  ASSERT_TRUE(plan.ok());
  for (const double speed : {1e7, 1e-4, 0.0}) {
    ServeOptions o;
    o.port = 0;
    o.speed = speed;
    auto server = Server::Create(*plan, o);
    ASSERT_FALSE(server.ok()) << speed;
    EXPECT_EQ(server.status().code(), StatusCode::kUsage);
    EXPECT_EQ(server.status().message().rfind("--speed: expected between 0.001 and 1000 simulated seconds per wall "
                                              "second, got ",
                                              0),
              0u)
        << server.status().message();
  }
}

// Regression: the first request after an idle spell had the fleet replay every periodic
// telemetry refresh since the start (a wedge at high speeds: no /health, no SIGTERM).
TEST(ServeSpeed, TheFirstRequestAfterAnIdleSpellDoesNotReplayIt) {
  ServeOptions o;
  o.speed = kMaxSpeed;
  RunningServer s(SmallScenario() + "router: {telemetry_delay: 10us}\n", o);
  std::this_thread::sleep_for(milliseconds(1000));  // 1000 s simulated: a hundred million refreshes
  const auto t0 = steady_clock::now();
  const Reply r = Post(s.port(), "/v1/completions", {{"model", kModel}, {"prompt", "hi"}, {"max_tokens", 5}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_LT(steady_clock::now() - t0, milliseconds(2000));
  EXPECT_EQ(Get(s.port(), "/health").status, 200);
}

TEST(ServeConnections, AConnectionThatStartsNoRequestIsClosedAfterTheIdleTimeout) {
  ServeOptions o;
  o.idle_timeout = Ms(200);
  RunningServer s(SmallScenario(), o);
  net::io_context io;
  tcp::socket idle = Connect(io, s.port());
  const auto t0 = steady_clock::now();
  EXPECT_EQ(ReadToClose(idle), "");
  EXPECT_LT(steady_clock::now() - t0, milliseconds(5000));
}

TEST(ServeConnections, ARequestThatDoesNotArriveWholeGets408) {
  ServeOptions o;
  o.header_timeout = Ms(300);
  RunningServer s(SmallScenario(), o);
  net::io_context io;
  tcp::socket slow = Connect(io, s.port());
  net::write(slow, net::buffer(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\n")));  // and no more
  const std::string got = ReadToClose(slow);
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
  EXPECT_NE(got.find("\"code\":\"request_timeout\""), std::string::npos) << got;
}

TEST(ServeConnections, OneConnectionOverTheCapGets503AndTheCapFreesAsConnectionsClose) {
  ServeOptions o;
  o.max_connections = 2;
  RunningServer s(SmallScenario(), o);
  net::io_context io;
  {
    tcp::socket a = Connect(io, s.port());
    tcp::socket b = Connect(io, s.port());
    std::this_thread::sleep_for(milliseconds(200));  // both accepted
    tcp::socket over = Connect(io, s.port());
    const std::string got = ReadToClose(over);
    EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
    EXPECT_NE(got.find("\"code\":\"too_many_connections\""), std::string::npos) << got;
    EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
  }
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    status = Get(s.port(), "/health").status;
  }
  EXPECT_EQ(status, 200);
}

// Streams a completion of `tokens` tokens, stops the server 300 ms into it (the stream
// under way), and returns everything the client read until the connection closed.
std::string StopDuringStream(RunningServer& s, int tokens) {
  std::string raw;
  std::thread reader([&] {
    net::io_context io;
    tcp::socket sock = Connect(io, s.port());
    http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
    req.set(http::field::host, "x");
    req.body() = LongStream(tokens).dump();
    req.prepare_payload();
    http::write(sock, req);
    raw = ReadToClose(sock);
  });
  std::this_thread::sleep_for(milliseconds(300));
  s.Stop();
  reader.join();
  return raw;
}

// Regression: a shutdown cut live streams: no terminating chunk, no [DONE].
TEST(ServeShutdown, ALiveStreamFinishesWithinTheGrace) {
  ServeOptions o;
  o.speed = 1;  // 100 tokens of about 10 ms each: a second of streaming
  o.shutdown_grace = Sec(30);
  RunningServer s(SmallScenario(), o);
  const std::string raw = StopDuringStream(s, 100);
  const auto [body, terminated] = Dechunk(raw);
  EXPECT_TRUE(terminated) << raw;
  const Events ev = ParseEvents(body);
  EXPECT_TRUE(ev.well_formed && ev.done) << body;
  ASSERT_FALSE(ev.chunks.empty());
  EXPECT_FALSE(ev.chunks.back().contains("error")) << body;
  EXPECT_EQ(ev.chunks.back()["choices"][0]["finish_reason"], "length") << body;
}

TEST(ServeShutdown, AStreamStillLiveAtTheEndOfTheGraceEndsWithAnErrorEvent) {
  ServeOptions o;
  o.speed = 1;
  o.shutdown_grace = Duration();
  RunningServer s(SmallScenario(), o);
  const std::string raw = StopDuringStream(s, 1000);
  const auto [body, terminated] = Dechunk(raw);
  EXPECT_TRUE(terminated) << raw;
  const Events ev = ParseEvents(body);
  EXPECT_TRUE(ev.well_formed && ev.done) << body;
  ASSERT_FALSE(ev.chunks.empty());
  EXPECT_EQ(ev.chunks.back()["error"]["code"], "shutdown") << body;
}

}  // namespace
}  // namespace fleetplan::serve::testing
