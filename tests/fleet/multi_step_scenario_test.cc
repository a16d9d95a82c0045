// engine.scheduler.num_scheduler_steps from a scenario: read with located errors, and a
// multi-step run that holds arrivals back until it ends (vLLM V0's --num-scheduler-steps).
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {
namespace {

std::string MultiStepScenario(const std::string& steps) {
  return fmt::format(R"(version: 1
name: multi-step
seed: 3
model: {{name: llama-3.1-70b, max_context: 4096}}
hardware: {{gpu: h100-sxm-80g}}
deployment: {{tp: 4}}
engine:
  version: "0.6.0"
  scheduler: {{policy: prefill-first, max_batched_tokens: 4096{}}}
workload:
  duration: 60s
  arrival: {{process: poisson, rate: 4/s}}
  classes:
    chat: {{share: 1, prompt: [{{segment: unique, tokens: 300}}], output_tokens: 200}}
)",
                     steps.empty() ? "" : ", num_scheduler_steps: " + steps);
}

std::string ErrorOf(const std::string& steps) {
  const Expected<Scenario> s = LoadScenarioText(MultiStepScenario(steps), "ms.yaml", ".");
  if (s.ok()) return "(loaded)";
  const std::string& m = s.status().message();
  return m.substr(0, m.find('\n'));  // the located line, without the source excerpt
}

TEST(MultiStepScenario, BadStepCountsAreLocated) {
  EXPECT_EQ(ErrorOf("0"), "ms.yaml:9:85: engine.scheduler.num_scheduler_steps: expected an integer >= 1, got 0");
  EXPECT_EQ(ErrorOf("300"), "ms.yaml:9:85: engine.scheduler.num_scheduler_steps: expected at most 256 steps per run, got 300");
  EXPECT_EQ(ErrorOf("ten"), "ms.yaml:9:85: engine.scheduler.num_scheduler_steps: expected an integer >= 1, got 'ten'");
}

double TtftP50(const std::string& steps) {
  const Expected<Scenario> s = LoadScenarioText(MultiStepScenario(steps), "ms.yaml", ".");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return 0;
  EXPECT_EQ(s->engine.scheduler.num_scheduler_steps, steps.empty() ? 1 : std::stoll(steps));
  RunOptions opt;
  opt.write_files = false;
  const Expected<RunResult> r = RunScenario(*s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->report["classes"]["chat"]["ttft_ms"]["p50"].get<double>() : 0;
}

TEST(MultiStepScenario, ArrivalsWaitForTheDecodeRunToEnd) {
  // A 10-step run of 70B TP4 decodes lasts about 200 ms: an arrival waits about half of
  // it on average before its prompt is scheduled.
  const double single = TtftP50("");
  const double runs_of_10 = TtftP50("10");
  EXPECT_GT(runs_of_10, single + 50.0) << single << " ms against " << runs_of_10 << " ms";
  EXPECT_DOUBLE_EQ(TtftP50("1"), single);
}

}  // namespace
}  // namespace fleetplan
