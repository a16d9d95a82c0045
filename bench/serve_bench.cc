// The emulator's performance figures (docs/PERFORMANCE.md "serve"): a server and a load
// client in one process over loopback, the server on its own thread (its one I/O thread),
// the client on the main thread.
//
//   open streams  N streaming requests held open at once (most waiting in the engine's
//                 queue) by a client in a child process: the server's RSS growth per
//                 open stream
//   throughput    N streams read to their end at a high --speed: streamed tokens per
//                 second of wall time (the I/O path, not the simulated engine, bounds it)
//   lateness      N streams at speed 1: token lateness against the simulated schedule,
//                 p50/p99 as bucket bounds of fleetplan:token_lateness_seconds and the
//                 share of tokens within 2 ms and 5 ms. The engine's max_running
//                 (--max-running, default 4096: every stream in one decode step) sets
//                 how many tokens one step emits at once.
//
// Usage: serve_bench [--open N] [--throughput N] [--lateness N] [--max-running N]
//        (defaults 10000 2000 2000 4096)
// Not a Google Benchmark: each figure is one timed scenario. Progress goes to stderr.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "../tests/serve/stream_client.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/serve/server.h"

namespace fs = fleetplan::serve;
using fleetplan::Json;

namespace {

std::string Scenario(int max_running) {
  return "version: 1\nname: serve-bench\nseed: 5\nmodel: {name: llama-3.1-8b, max_context: 8192}\n"
         "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 1}\ndeployment: {replicas: 1, tp: 1}\n"
         "engine:\n  prefix_cache: {enabled: true}\n"
         "  scheduler: {policy: bounded-chunk, max_batched_tokens: 16384, max_running: " + std::to_string(max_running) +
         "}\n  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.01ms}, decode: {base: 10ms, per_seq: 0.005ms}}\n"
         "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1/s}\n"
         "  classes:\n    chat: {share: 1.0, prompt: [{segment: unique, tokens: 100}], output_tokens: 50}\n";
}

int64_t RssKiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

struct Running {
  std::unique_ptr<fs::Server> server;
  std::thread thread;
  Running(int max_running, double speed) {
    auto scenario = fleetplan::LoadScenarioText(Scenario(max_running), "serve-bench.yaml", ".");
    auto plan = fleetplan::Bind(*scenario);
    fs::ServeOptions o;
    o.port = 0;
    o.speed = speed;
    server = fs::Server::Create(*plan, o).value();
    thread = std::thread([this] { (void)server->Run(); });
  }
  ~Running() {
    server->Stop();
    thread.join();
  }
  uint16_t port() const { return server->ports()[0]; }
};

std::string Metrics(uint16_t port) {
  namespace net = boost::asio;
  net::io_context io;
  net::ip::tcp::socket s(io);
  s.connect({net::ip::make_address("127.0.0.1"), port});
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  net::write(s, net::buffer(req));
  std::string out;
  boost::system::error_code ec;
  char buf[65536];
  for (;;) {
    const size_t n = s.read_some(net::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
  }
  return out;
}

double Value(const std::string& m, const std::string& prefix) {
  const size_t p = m.find("\n" + prefix);
  if (p == std::string::npos) return -1;
  const size_t eol = m.find('\n', p + 1);
  const std::string line = m.substr(p + 1, eol - p - 1);
  return std::stod(line.substr(line.rfind(' ') + 1));
}

const char* kLatenessBucket = "fleetplan:token_lateness_seconds_bucket{engine=\"0\",model_name=\"llama-3.1-8b\",le=\"";

// The share of tokens no later than bucket bound `le` (as /metrics writes it).
double LatenessShareWithin(const std::string& m, const std::string& le) {
  return Value(m, kLatenessBucket + le + "\"}") / Value(m, "fleetplan:token_lateness_seconds_count{");
}

// The smallest bucket bound holding quantile q of the lateness histogram.
double LatenessQuantile(const std::string& m, double q) {
  for (const char* b : {"0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1.0"}) {
    if (LatenessShareWithin(m, b) >= q) return std::stod(b);
  }
  return 1e9;
}

std::string Body(int max_tokens) {
  return Json{{"model", "llama-3.1-8b"}, {"prompt", "benchmark prompt"}, {"max_tokens", max_tokens},
              {"ignore_eos", true}, {"stream", true}}
      .dump();
}

}  // namespace

extern char** environ;

int main(int argc, char** argv) {
  int64_t open_n = 10000, throughput_n = 2000, lateness_n = 2000, lateness_running = 4096;
  if (argc == 5 && std::strcmp(argv[1], "--client-hold") == 0) {  // the child of the open-streams figure
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
    const auto r = fs::testing::StreamLoad::Run(static_cast<uint16_t>(std::stoi(argv[2])), Body(4000), std::stoll(argv[3]),
                                                false, std::chrono::milliseconds(std::stoll(argv[4])));
    return r.failed == 0 ? 0 : 1;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t v = std::stoll(argv[i + 1]);
    if (flag == "--open") open_n = v;
    else if (flag == "--throughput") throughput_n = v;
    else if (flag == "--lateness") lateness_n = v;
    else if (flag == "--max-running" && v >= 1) lateness_running = v;
    else {
      std::cerr << "usage: serve_bench [--open N] [--throughput N] [--lateness N] [--max-running N >= 1]\n";
      return 2;
    }
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  if (static_cast<int64_t>(lim.rlim_cur) < open_n + 100) {
    std::cerr << fmt::format("serve_bench: needs {} file descriptors, the limit is {}\n", open_n + 100, lim.rlim_cur);
    return 1;
  }
  if (open_n > 0) {
    Running s(/*max_running=*/256, /*speed=*/1);
    std::cerr << fmt::format("open streams: {} ...\n", open_n);
    (void)Metrics(s.port());  // warm the allocator and the metrics path
    const int64_t before = RssKiB();
    const std::string port = std::to_string(s.port()), n = std::to_string(open_n), hold = "12000";
    const char* args[] = {"/proc/self/exe", "--client-hold", port.c_str(), n.c_str(), hold.c_str(), nullptr};
    pid_t child = 0;
    if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, const_cast<char**>(args), environ) != 0) {
      std::cerr << "serve_bench: cannot start the client process\n";
      return 1;
    }
    int64_t live = 0, rss = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double seconds = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
      live = static_cast<int64_t>(Value(Metrics(s.port()), "fleetplan:live_requests{"));
      rss = RssKiB();
      if (live >= open_n) {
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string m = Metrics(s.port());
    int status = 0;
    waitpid(child, &status, 0);
    std::cout << fmt::format("open streams     {} open at once after {:.2f} s ({} running, {} waiting); server RSS +{} KiB = "
                             "{:.1f} KiB per open stream; client exit {}\n",
                             live, seconds, Value(m, "vllm:num_requests_running{"), Value(m, "vllm:num_requests_waiting{"),
                             rss - before, static_cast<double>(rss - before) / static_cast<double>(std::max<int64_t>(live, 1)),
                             WEXITSTATUS(status));
  }
  if (throughput_n > 0) {
    Running s(/*max_running=*/4096, /*speed=*/20);
    std::cerr << fmt::format("throughput: {} streams x 500 tokens ...\n", throughput_n);
    const auto r = fs::testing::StreamLoad::Run(s.port(), Body(500), throughput_n, false);
    const std::string m = Metrics(s.port());
    const double tokens = Value(m, "vllm:generation_tokens_total{");
    std::cout << fmt::format("throughput       {} streams, {} completed, {:.0f} tokens in {:.2f} s = {:.0f} tokens/s\n",
                             throughput_n, r.completed, tokens, r.seconds, tokens / r.seconds);
  }
  if (lateness_n > 0) {
    Running s(static_cast<int>(lateness_running), /*speed=*/1);
    std::cerr << fmt::format("lateness: {} streams x 100 tokens at speed 1, max_running {} ...\n", lateness_n,
                             lateness_running);
    const auto r = fs::testing::StreamLoad::Run(s.port(), Body(100), lateness_n, false);
    const std::string m = Metrics(s.port());
    std::cout << fmt::format("lateness         {} streams (max_running {}), {} completed in {:.2f} s; token lateness "
                             "p50 <= {} ms, p99 <= {} ms, max {:.2f} ms; within 2 ms {:.2f}%, within 5 ms {:.2f}%\n",
                             lateness_n, lateness_running, r.completed, r.seconds, LatenessQuantile(m, 0.5) * 1000,
                             LatenessQuantile(m, 0.99) * 1000, Value(m, "fleetplan:token_lateness_max_seconds{") * 1000,
                             LatenessShareWithin(m, "0.002") * 100, LatenessShareWithin(m, "0.005") * 100);
  }
  return 0;
}
