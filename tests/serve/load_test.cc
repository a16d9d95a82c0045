// The emulator under load over loopback: token timing at 100 concurrent streams against
// the simulated schedule, and 10,000 cancellations mid-stream back to baseline.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "serve/serve_harness.h"
#include "serve/stream_client.h"

namespace fleetplan::serve::testing {
namespace {

const std::string kLabels = "{engine=\"0\",model_name=\"llama-3.1-8b\"";

// p99 of how late a bare 1 ms sleep wakes on this machine now: the floor under any
// real-time claim. Another process's load can push it past what the test checks.
double TimerWakeP99Seconds() {
  std::vector<double> late;
  for (int i = 0; i < 300; ++i) {
    const auto due = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    std::this_thread::sleep_until(due);
    late.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - due).count());
  }
  std::sort(late.begin(), late.end());
  return late[late.size() * 99 / 100];
}

// The smaller share of a core that each of two threads gets while both spin for 100 ms:
// the test's server and client need both cores, and other processes' work shows here
// even where a sleeping thread still wakes on time (it is scheduled first on waking).
double TwoThreadCoreShare() {
  auto spin = [] {
    const auto start = std::chrono::steady_clock::now();
    timespec cpu0{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100)) {
    }
    timespec cpu1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    const double cpu =
        static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) + 1e-9 * static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec);
    return cpu / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double other = 0;
  std::thread t([&] { other = spin(); });
  const double mine = spin();
  t.join();
  return std::min(mine, other);
}

// CPU time the machine withheld from the server: what the process's threads other than
// the main one (the client) spent runnable but waiting for a CPU (run_delay,
// /proc/self/task/*/schedstat), and what the hypervisor ran in this VM's place (steal,
// /proc/stat, counted in 10 ms ticks). Cumulative seconds; a difference spans a run.
struct WithheldCpu {
  double run_queue = 0;
  double steal = 0;

  static WithheldCpu Now() {
    WithheldCpu w;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
      if (task.path().filename() == std::to_string(getpid())) continue;
      std::ifstream in(task.path() / "schedstat");
      uint64_t on_cpu = 0, waiting = 0;
      if (in >> on_cpu >> waiting) w.run_queue += 1e-9 * static_cast<double>(waiting);
    }
    std::ifstream stat("/proc/stat");
    std::string cpu;
    uint64_t field[8] = {};  // user nice system idle iowait irq softirq steal
    if (stat >> cpu && cpu == "cpu") {
      for (uint64_t& f : field) stat >> f;
      w.steal = static_cast<double>(field[7]) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
    return w;
  }
  WithheldCpu Since(const WithheldCpu& before) const { return {run_queue - before.run_queue, steal - before.steal}; }
  // Any stolen tick, or 2 ms of waiting for a CPU: enough to put a whole step's tokens
  // past the bound. Idle here, runs show 0 steal and 0–1 ms of waiting.
  bool Noticeable() const { return steal > 0 || run_queue >= 0.002; }
};

// The real-time bound is a claim of an optimised build on CPUs it has to itself: the
// suite is named *Alone, so ctest runs it once, with nothing beside it (RUN_SERIAL,
// tests/serve/CMakeLists.txt), and it skips itself, saying why, where the claim does
// not apply: before the run when the machine is visibly busy, and after a run that
// missed the bound while the machine withheld CPU from the server. On this 2-core VM a
// run with no steal put 99.96–100% of 30,000 tokens within 2 ms (latest 1.5–2.3 ms, 9
// runs); runs that lost 20–150 ms to the hypervisor put 96.1–99.2% within (latest
// 3.6–8.1 ms, 7 runs).
// 300 steps keep one short stall (at most 100 tokens) from deciding the p99 alone.
TEST(ServeTimingAlone, HundredStreamsEmitWithin2msOfTheSimulatedScheduleAtP99) {
#if !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an unoptimised or sanitized build writes a token several times slower than a release build "
                  "(ASan: p99 6–9 ms here); the 2 ms bound is checked in the relassert and release builds";
#endif
  const double floor = TimerWakeP99Seconds();
  if (floor > 0.001) {
    GTEST_SKIP() << "the machine is too loaded to check a 2 ms bound: a bare 1 ms sleep wakes " << floor * 1000
                 << " ms late at p99 (other processes hold the CPUs)";
  }
  if (const double share = TwoThreadCoreShare(); share < 0.9) {
    GTEST_SKIP() << "the machine is too loaded to check a 2 ms bound: two busy threads got only " << share * 100
                 << "% of a core each (other processes hold the CPUs)";
  }
  constexpr int kStreams = 100;
  constexpr int kTokens = 300;
  ServeOptions o;
  o.speed = 1;
  RunningServer s(SmallScenario(), o);
  const std::string body = Json{
      {"model", "llama-3.1-8b"},
      {"prompt", "timing"},
      {"max_tokens", kTokens},
      {"ignore_eos", true},
      {"stream", true}}.dump();
  const WithheldCpu before = WithheldCpu::Now();
  const StreamLoadResult r = StreamLoad::Run(s.port(), body, kStreams, /*cancel_after_first=*/false);
  const WithheldCpu lost = WithheldCpu::Now().Since(before);
  EXPECT_EQ(r.completed, kStreams);
  EXPECT_EQ(r.failed, 0);
  const std::string m = Get(s.port(), "/metrics").body;
  const double total = MetricValue(m, "fleetplan:token_lateness_seconds_count" + kLabels + "}");
  const double within = MetricValue(m, "fleetplan:token_lateness_seconds_bucket" + kLabels + ",le=\"0.002\"}");
  EXPECT_EQ(total, kStreams * kTokens);
  const std::string measured = fmt::format(
      "{} of {} tokens within 2 ms, latest {:.2f} ms; the machine withheld {:.2f} ms of run-queue wait "
      "and {:.0f} ms of steal",
      within, total, 1e3 * MetricValue(m, "fleetplan:token_lateness_max_seconds{"), 1e3 * lost.run_queue,
      1e3 * lost.steal);
  RecordProperty("measured", measured);
  if (within / total < 0.99 && lost.Noticeable()) {
    GTEST_SKIP() << "the machine withheld CPU from the server during the run, so a missed 2 ms bound says nothing "
                    "of the emulator: "
                 << measured;
  }
  EXPECT_GE(within / total, 0.99) << "p99 token lateness above 2 ms: " << measured;
}

TEST(ServeLoad, TenThousandCancellationsMidStreamLeaveNoBlocksOrRequests) {
  ServeOptions o;
  // Every request must still be running when its client goes: 4,000 tokens at 20 ms
  // steps (512 running) take 40 s of wall time at speed 2, far more than a slow
  // (sanitized, loaded) build needs to read a first token and disconnect. At speed 20
  // (4 s) an ASan build on a busy machine let 4,576 of them finish first.
  o.speed = 2;
  RunningServer s(SmallScenario(/*max_running=*/512), o);
  const std::string body = Json{
      {"model", "llama-3.1-8b"},
      {"prompt", std::string(600, 'p')},
      {"max_tokens", 4000},
      {"ignore_eos", true},
      {"stream", true}}.dump();
  int64_t dropped = 0;
  for (int round = 0; round < 5; ++round) {
    const StreamLoadResult r = StreamLoad::Run(s.port(), body, 2000, /*cancel_after_first=*/true);
    EXPECT_EQ(r.failed, 0) << "round " << round << ": " << r.first_error;
    dropped += r.dropped;
  }
  EXPECT_EQ(dropped, 10000);
  const std::string m = WaitForBaseline(s.port(), std::chrono::seconds(30));
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_blocks_referenced{"), 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_blocks_used{"), 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:engine_live_requests{"), 0);
  EXPECT_EQ(MetricValue(m, "vllm:num_requests_running" + kLabels + "}"), 0);
  EXPECT_EQ(MetricValue(m, "vllm:num_requests_waiting" + kLabels + "}"), 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:client_disconnect_cancellations_total{"), 10000);
  EXPECT_EQ(MetricValue(m, "vllm:request_success_total" + kLabels + ",finished_reason=\"abort\"}"), 10000);
  // And it still serves.
  EXPECT_EQ(
      Post(s.port(), "/v1/completions", {{"model", "llama-3.1-8b"}, {"prompt", "after"}, {"max_tokens", 3}}).status,
      200);
}

}  // namespace
}  // namespace fleetplan::serve::testing
