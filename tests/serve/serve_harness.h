// Test harness for the emulator: a Server on ephemeral loopback ports, run on its own
// thread, and a small synchronous Beast client. Every test stops its server itself.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "fleetplan/core/json.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/serve/server.h"

namespace fleetplan::serve::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// A small engine: affine step costs, prefix cache on. `max_running`, `max_waiting` and
// the context vary per test.
inline std::string SmallScenario(int max_running = 256, int max_waiting = 0, int max_context = 8192) {
  return "version: 1\n"
         "name: serve-test\n"
         "seed: 5\n"
         "model: {name: llama-3.1-8b, max_context: " + std::to_string(max_context) + "}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 1}\n"
         "deployment: {replicas: 1, tp: 1}\n"
         "engine:\n"
         "  prefix_cache: {enabled: true}\n"
         "  scheduler: {policy: bounded-chunk, max_batched_tokens: 8192, max_running: " + std::to_string(max_running) +
         ", max_waiting: " + std::to_string(max_waiting) + "}\n"
         "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.01ms}, decode: {base: 10ms, per_seq: 0.02ms}}\n"
         "workload:\n"
         "  requests: 1\n"
         "  arrival: {process: poisson, rate: 1/s}\n"
         "  classes:\n"
         "    chat: {share: 1.0, prompt: [{segment: unique, tokens: 100}], output_tokens: {uniform: [20, 60]}}\n";
}

class RunningServer {
 public:
  explicit RunningServer(const std::string& scenario_text, ServeOptions options = {}) {
    options.port = 0;
    if (!options.exit_after) options.exit_after = Sec(120);  // never outlives a hung test
    auto scenario = LoadScenarioText(scenario_text, "serve-test.yaml", ".");
    EXPECT_TRUE(scenario.ok()) << scenario.status().message();
    auto plan = Bind(*scenario);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    auto server = Server::Create(*plan, options);
    EXPECT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    thread_ = std::thread([this] { status_ = server_->Run(); });
  }
  ~RunningServer() {
    server_->Stop();
    thread_.join();
    EXPECT_TRUE(status_.ok()) << status_.message();
  }
  // Begins the server's shutdown (the destructor waits for its end).
  void Stop() { server_->Stop(); }
  uint16_t port(size_t i = 0) const { return server_->ports()[i]; }
  size_t replicas() const { return server_->ports().size(); }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
  Status status_ = Status::Ok();
};

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  Json json() const { return Json::parse(body); }
};

inline Reply Fetch(uint16_t port, http::verb method, const std::string& target, const std::string& body = "",
                   const std::map<std::string, std::string>& headers = {}) {
  net::io_context io;
  tcp::socket sock(io);
  sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(sock, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(sock, buf, parser);
  Reply r;
  r.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) {
    std::string name(f.name_string());
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    r.headers[name] = std::string(f.value());
  }
  r.body = parser.get().body();
  return r;
}

inline Reply Post(uint16_t port, const std::string& target, const Json& body, const std::map<std::string, std::string>& h = {}) {
  return Fetch(port, http::verb::post, target, body.dump(), h);
}
inline Reply Get(uint16_t port, const std::string& target) { return Fetch(port, http::verb::get, target); }

// The value of one /metrics sample (first line whose name and labels start as `prefix`).
inline double MetricValue(const std::string& metrics, const std::string& prefix) {
  size_t pos = 0;
  while ((pos = metrics.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || metrics[pos - 1] == '\n') {
      const size_t eol = metrics.find('\n', pos);
      const std::string line = metrics.substr(pos, eol - pos);
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    pos += prefix.size();
  }
  ADD_FAILURE() << "no metric " << prefix;
  return -1;
}

// Polls /metrics until the engine holds nothing (or the deadline): returns the text.
inline std::string WaitForBaseline(uint16_t port, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string m;
  while (std::chrono::steady_clock::now() < deadline) {
    m = Get(port, "/metrics").body;
    if (MetricValue(m, "vllm:num_requests_running{") == 0 && MetricValue(m, "vllm:num_requests_waiting{") == 0 &&
        MetricValue(m, "fleetplan:kv_blocks_referenced{") == 0 && MetricValue(m, "fleetplan:live_requests{") == 0) {
      return m;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return m;
}

// The events of an SSE body: the JSON of each `data: ` line; `done` set by [DONE].
struct Events {
  std::vector<Json> chunks;
  bool done = false;
  bool well_formed = true;  // every event is "data: ...\n\n" and [DONE] is last
};
inline Events ParseEvents(const std::string& body) {
  Events ev;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos || body.compare(pos, 6, "data: ") != 0 || ev.done) {
      ev.well_formed = false;
      break;
    }
    const std::string data = body.substr(pos + 6, end - pos - 6);
    if (data == "[DONE]") {
      ev.done = true;
    } else {
      ev.chunks.push_back(Json::parse(data));
    }
    pos = end + 2;
  }
  return ev;
}

// Streams a completion on a raw socket until it holds a first event and `stop_after`
// bytes (0: until the server closes it), then closes: a disconnect mid-stream.
inline std::string RawStream(uint16_t port, const Json& body, size_t stop_after, const std::string& request_id = "") {
  net::io_context io;
  tcp::socket sock(io);
  sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, "x");
  if (!request_id.empty()) req.set("X-Request-Id", request_id);
  req.body() = body.dump();
  req.prepare_payload();
  http::write(sock, req);
  std::string got;
  char buf[4096];
  beast::error_code ec;
  while (stop_after == 0 || got.find("data: ") == std::string::npos || got.size() < stop_after) {
    const size_t n = sock.read_some(net::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
  }
  return got;
}

}  // namespace fleetplan::serve::testing
