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
//   floor         the same lateness with no emulator and no HTTP: one thread writes one
//                 token's chunk (the emulator's own bytes) to each of N plain loopback
//                 TCP connections once per decode step of the lateness scenario (10 ms +
//                 5 us per stream), and the main thread reads them all. It is
//                 what the kernel's sends alone cost one thread on this machine, so no
//                 one-I/O-thread server can do better than it.
//
// Usage: serve_bench [--open N] [--throughput N] [--lateness N] [--max-running N] [--floor N]
//        (defaults 10000 2000 2000 4096 2000)
// Not a Google Benchmark: each figure is one timed scenario. Progress goes to stderr.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// One streamed token as the emulator writes it (an HTTP chunk holding one SSE event).
const std::string kTokenChunk =
    "c5\r\ndata: {\"id\":\"cmpl-000000001\",\"object\":\"text_completion\",\"created\":1796565397,"
    "\"model\":\"llama-3.1-8b\",\"choices\":[{\"index\":0,\"text\":\" will\",\"logprobs\":null,"
    "\"finish_reason\":null,\"stop_reason\":null}]}\n\n\r\n";

struct FloorResult {
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  double write_us = 0;  // mean time of one write(2), the loop's cost per token
  double cpu_us = 0;    // CPU time (user + system, both threads) per token written and read
  std::string error;
};

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// `n` connected loopback pairs: first the accepted (writing) ends, then the connecting
// (reading, non-blocking) ends. Empty on failure.
std::pair<std::vector<int>, std::vector<int>> LoopbackPairs(int n) {
  std::vector<int> writers, readers;
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 128) != 0 || getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return {};
  }
  for (int i = 0; i < n; ++i) {
    const int r = socket(AF_INET, SOCK_STREAM, 0);
    if (r < 0 || connect(r, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) break;
    const int w = accept(listener, nullptr, nullptr);
    if (w < 0) break;
    const int one = 1;
    setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as the emulator sets it
    fcntl(r, F_SETFL, fcntl(r, F_GETFL) | O_NONBLOCK);
    readers.push_back(r);
    writers.push_back(w);
  }
  close(listener);
  return {writers, readers};
}

FloorResult LoopbackFloor(int n, int rounds) {
  FloorResult out;
  auto [writers, readers] = LoopbackPairs(n);
  if (static_cast<int>(writers.size()) != n) {
    for (int fd : writers) close(fd);
    for (int fd : readers) close(fd);
    out.error = fmt::format("could open only {} of {} loopback connections", writers.size(), n);
    return out;
  }
  const int ep = epoll_create1(0);
  for (int fd : readers) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  const double cpu_before = ProcessCpuSeconds();
  std::vector<int64_t> late_ns;
  late_ns.reserve(static_cast<size_t>(n) * static_cast<size_t>(rounds));
  int64_t write_ns = 0;
  std::atomic<bool> write_failed{false}, writer_done{false};
  std::thread writer([&] {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
    const auto step =
        std::chrono::milliseconds(10) + std::chrono::microseconds(5) * n;  // the bench scenario's decode step
    for (int r = 0; r < rounds && !write_failed; ++r) {
      const Clock::time_point due = start + step * r;
      std::this_thread::sleep_until(due);
      const Clock::time_point begin = Clock::now();
      for (int fd : writers) {
        late_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - due).count());
        if (write(fd, kTokenChunk.data(), kTokenChunk.size()) != static_cast<ssize_t>(kTokenChunk.size())) {
          write_failed = true;
          break;
        }
      }
      write_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - begin).count();
    }
    writer_done = true;
  });
  const int64_t expected = static_cast<int64_t>(kTokenChunk.size()) * n * rounds;
  int64_t received = 0;
  std::vector<epoll_event> ready(1024);
  char buf[65536];
  while (received < expected && !write_failed) {
    const int k = epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 1000);
    if (k == 0 && writer_done) break;  // everything written, nothing more arrives
    for (int i = 0; i < k; ++i) {
      for (ssize_t got; (got = read(ready[static_cast<size_t>(i)].data.fd, buf, sizeof buf)) > 0;) received += got;
    }
  }
  writer.join();
  const double cpu_seconds = ProcessCpuSeconds() - cpu_before;
  if (write_failed) out.error = "a write was short or failed";
  if (received < expected && out.error.empty()) out.error = fmt::format("read {} of {} bytes", received, expected);
  close(ep);
  for (int fd : writers) close(fd);
  for (int fd : readers) close(fd);
  if (late_ns.empty()) return out;
  std::sort(late_ns.begin(), late_ns.end());
  const auto at = [&](double q) {
    return static_cast<double>(late_ns[static_cast<size_t>(q * static_cast<double>(late_ns.size() - 1))]) / 1e6;
  };
  out.p50_ms = at(0.5);
  out.p99_ms = at(0.99);
  out.max_ms = static_cast<double>(late_ns.back()) / 1e6;
  out.write_us = static_cast<double>(write_ns) / static_cast<double>(late_ns.size()) / 1e3;
  out.cpu_us = cpu_seconds / static_cast<double>(late_ns.size()) * 1e6;
  return out;
}

}  // namespace

extern char** environ;

int main(int argc, char** argv) {
  int64_t open_n = 10000, throughput_n = 2000, lateness_n = 2000, lateness_running = 4096, floor_n = 2000;
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
    else if (flag == "--floor")
      floor_n = v;
    else {
      std::cerr << "usage: serve_bench [--open N] [--throughput N] [--lateness N] [--max-running N >= 1] [--floor N]\n";
      return 2;
    }
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  const int64_t descriptors = std::max(open_n, 2 * floor_n) + 100;
  if (static_cast<int64_t>(lim.rlim_cur) < descriptors) {
    std::cerr << fmt::format("serve_bench: needs {} file descriptors, the limit is {}\n", descriptors, lim.rlim_cur);
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
  if (floor_n > 0) {
    constexpr int kRounds = 100;
    std::cerr << fmt::format("floor: {} plain loopback connections x {} rounds ...\n", floor_n, kRounds);
    const FloorResult f = LoopbackFloor(static_cast<int>(floor_n), kRounds);
    if (!f.error.empty()) {
      std::cerr << "serve_bench: floor: " << f.error << "\n";
      return 1;
    }
    std::cout << fmt::format(
        "floor            {} plain loopback connections, one {}-byte write each per {:.1f} ms "
        "step, one writing thread: write lateness p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms; {:.2f} us per write, "
        "{:.2f} us of CPU per token (writer and reader)\n",
        floor_n, kTokenChunk.size(), 10 + 0.005 * static_cast<double>(floor_n), f.p50_ms, f.p99_ms, f.max_ms,
        f.write_us, f.cpu_us);
  }
  return 0;
}
