// The emulator with prefill/decode pools: every replica listens, a request at a decode
// port prefills on the prefill pool and its KV moves over the link before the first
// token, faults.kv_transfer delay and fail those transfers (counted in /metrics), and a
// request never leaves the replica of the port it reached.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "serve/serve_harness.h"

namespace fleetplan::serve::testing {
namespace {

const char* kModel = "llama-3.1-8b";

// One prefill replica (port 0) and two decode replicas (ports 1 and 2); every request is
// disaggregated. `faults` is the body of a faults section ("" for none).
std::string PoolsScenario(const std::string& faults = "", const std::string& disaggregation = "") {
  std::string s =
      "version: 1\n"
      "name: serve-pools\n"
      "seed: 9\n"
      "model: {name: llama-3.1-8b, max_context: 8192}\n"
      "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 3, inter_node_link: ib-ndr-400}\n"
      "deployment:\n"
      "  pools:\n"
      "    - {role: prefill, replicas: 1, tp: 1}\n"
      "    - {role: decode, replicas: 2, tp: 1}\n"
      "  disaggregation: {setup: 2ms, timeout: 5s" + disaggregation + "}\n"
      "engine:\n"
      "  scheduler: {policy: bounded-chunk, max_batched_tokens: 8192, max_running: 64}\n"
      "  step_model: {kind: affine, prefill: {base: 5ms, per_token: 0.01ms}, decode: {base: 10ms, per_seq: 0.02ms}}\n"
      "workload:\n"
      "  requests: 1\n"
      "  arrival: {process: poisson, rate: 1/s}\n"
      "  classes:\n"
      "    chat: {share: 1.0, prompt: [{segment: unique, tokens: 100}], output_tokens: {uniform: [20, 60]}}\n";
  if (!faults.empty()) s += "faults:\n" + faults;
  return s;
}

ServeOptions Speed(double speed) {
  ServeOptions o;
  o.speed = speed;
  return o;
}

Json Completion(int max_tokens, bool stream = false) {
  return {{"model", kModel}, {"prompt", std::string(400, 'q')}, {"max_tokens", max_tokens}, {"stream", stream}};
}

std::string Labels() { return std::string("{engine=\"0\",model_name=\"") + kModel + "\""; }

TEST(ServePools, EveryReplicaListensWithItsRoleAndADecodePortPrefillsOnThePrefillPool) {
  RunningServer s(PoolsScenario(), Speed(20));
  ASSERT_EQ(s.replicas(), 3u);
  EXPECT_EQ(MetricValue(Get(s.port(0), "/metrics").body, "fleetplan:replica_info{replica=\"0\",role=\"prefill\"}"), 1);
  EXPECT_EQ(MetricValue(Get(s.port(1), "/metrics").body, "fleetplan:replica_info{replica=\"1\",role=\"decode\"}"), 1);
  EXPECT_EQ(MetricValue(Get(s.port(2), "/metrics").body, "fleetplan:replica_info{replica=\"2\",role=\"decode\"}"), 1);

  const Reply r = Post(s.port(2), "/v1/completions", Completion(7));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 7);
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"], 100);

  const std::string l = Labels();
  const std::string decode = WaitForBaseline(s.port(2));
  EXPECT_EQ(MetricValue(decode, "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 1);
  EXPECT_EQ(MetricValue(decode, "fleetplan:kv_transfer_seconds_count" + l + "}"), 1);
  EXPECT_GT(MetricValue(decode, "fleetplan:kv_transfer_seconds_sum" + l + "}"), 0);
  EXPECT_EQ(MetricValue(decode, "vllm:generation_tokens_total" + l + "}"), 7);
  EXPECT_EQ(MetricValue(decode, "vllm:request_success_total" + l + ",finished_reason=\"length\"}"), 1);
  // The prefill replica computed the prompt (its engine's prefix cache saw it) and holds
  // nothing now; the other decode replica never saw the request.
  const std::string prefill = WaitForBaseline(s.port(0));
  EXPECT_EQ(MetricValue(prefill, "vllm:generation_tokens_total" + l + "}"), 0);
  const std::string other = WaitForBaseline(s.port(1));
  EXPECT_EQ(MetricValue(other, "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 0);
  EXPECT_EQ(MetricValue(other, "vllm:generation_tokens_total" + l + "}"), 0);
}

TEST(ServePools, RequestsNeverLeaveTheirPortsReplica) {
  RunningServer s(PoolsScenario(), Speed(50));
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(Post(s.port(1), "/v1/completions", Completion(3)).status, 200);
  }
  const std::string l = Labels();
  EXPECT_EQ(MetricValue(WaitForBaseline(s.port(1)), "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 6);
  EXPECT_EQ(MetricValue(WaitForBaseline(s.port(2)), "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 0);
}

TEST(ServePools, ARequestAtAPrefillPortRunsWholeThere) {
  RunningServer s(PoolsScenario(), Speed(50));
  const Reply r = Post(s.port(0), "/v1/completions", Completion(5, /*stream=*/true));
  ASSERT_EQ(r.status, 200) << r.body;
  const Events ev = ParseEvents(r.body);
  EXPECT_TRUE(ev.done);
  const std::string l = Labels();
  EXPECT_EQ(MetricValue(WaitForBaseline(s.port(0)), "vllm:generation_tokens_total" + l + "}"), 5);
  for (size_t i : {1u, 2u}) {
    const std::string m = WaitForBaseline(s.port(i));
    EXPECT_EQ(MetricValue(m, "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 0);
    EXPECT_EQ(MetricValue(m, "vllm:generation_tokens_total" + l + "}"), 0);
  }
}

TEST(ServePools, KvTransferDelaysAreCountedAndHoldBackTheFirstToken) {
  // Every transfer waits 2 s of simulated time: 100 ms of wall time at speed 20. The
  // rest of a request's first token is a few ms of prefill.
  RunningServer s(PoolsScenario("  kv_transfer: {delay: 2s}\n"), Speed(20));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(Post(s.port(1), "/v1/completions", Completion(2)).status, 200);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(wall, 0.1);
  const std::string l = Labels();
  const std::string m = WaitForBaseline(s.port(1));
  EXPECT_EQ(MetricValue(m, "fleetplan:faults_injected_total" + l + ",kind=\"kv_transfer_delay\"}"), 1);
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 1);
  EXPECT_GE(MetricValue(m, "vllm:time_to_first_token_seconds_sum" + l + "}"), 0.1);
}

TEST(ServePools, FailedTransfersAreCountedRetriedThenRecomputedOnTheDecodeReplica) {
  RunningServer s(PoolsScenario("  kv_transfer: {failure_probability: 1}\n", ", retries: 1, on_failure: recompute"),
                  Speed(50));
  const Reply r = Post(s.port(2), "/v1/completions", Completion(4));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 4);
  const std::string l = Labels();
  const std::string m = WaitForBaseline(s.port(2));
  EXPECT_EQ(MetricValue(m, "fleetplan:faults_injected_total" + l + ",kind=\"kv_transfer_failure\"}"), 2);  // first + retry
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_transfers_total" + l + ",outcome=\"failed\"}"), 2);
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_transfers_total" + l + ",outcome=\"completed\"}"), 0);
  EXPECT_EQ(MetricValue(m, "vllm:generation_tokens_total" + l + "}"), 4);
}

TEST(ServePools, ATransferThatFailsItsLastAttemptUnderRejectIs503Rejected) {
  RunningServer s(PoolsScenario("  kv_transfer: {failure_probability: 1}\n", ", retries: 0, on_failure: reject"),
                  Speed(50));
  const Reply r = Post(s.port(1), "/v1/completions", Completion(4));
  ASSERT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "rejected");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("its KV transfer failed 1 attempt"), std::string::npos)
      << r.body;
  EXPECT_EQ(r.headers.count("retry-after"), 1u);
  const std::string l = Labels();
  const std::string m = WaitForBaseline(s.port(1));
  EXPECT_EQ(MetricValue(m, "fleetplan:queue_full_rejections_total{"), 0);
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_transfers_total" + l + ",outcome=\"failed\"}"), 1);
}

// Regression: a stream whose transfer failed its last attempt ended with an error event
// that said the waiting queue was full.
TEST(ServePools, AStreamWhoseTransferFailsEndsWithTheRejectionItself) {
  RunningServer s(PoolsScenario("  kv_transfer: {failure_probability: 1}\n", ", retries: 0, on_failure: reject"),
                  Speed(50));
  const Reply r = Post(s.port(1), "/v1/completions", Completion(4, /*stream=*/true));
  ASSERT_EQ(r.status, 200) << r.body;
  const Events ev = ParseEvents(r.body);
  EXPECT_TRUE(ev.well_formed) << r.body;
  EXPECT_TRUE(ev.done) << r.body;
  ASSERT_EQ(ev.chunks.size(), 1u) << r.body;
  EXPECT_EQ(ev.chunks[0]["error"]["code"], "rejected") << r.body;
  EXPECT_NE(ev.chunks[0]["error"]["message"].get<std::string>().find("its KV transfer failed 1 attempt"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(MetricValue(WaitForBaseline(s.port(1)), "fleetplan:queue_full_rejections_total{"), 0);
}

TEST(ServePools, CancellingARequestBetweenThePoolsReturnsEveryReplicaToBaseline) {
  // Its transfer waits 20 s of simulated time (2 s of wall time at speed 10): the cancel
  // comes while its KV is between the prefill and the decode replica.
  RunningServer s(PoolsScenario("  kv_transfer: {delay: 20s}\n"), Speed(10));
  std::string cut;
  std::thread held([&] { cut = RawStream(s.port(1), Completion(50, /*stream=*/true), 0, "between-pools"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Reply r = Post(s.port(1), "/v1/requests/between-pools/cancel", Json::object());
  held.join();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(cut.find("[DONE]"), std::string::npos);
  const std::string l = Labels();
  const std::string m = WaitForBaseline(s.port(1));
  EXPECT_EQ(MetricValue(m, "fleetplan:kv_transfers_total" + l + ",outcome=\"cancelled\"}"), 1);
  EXPECT_EQ(MetricValue(m, "vllm:request_success_total" + l + ",finished_reason=\"abort\"}"), 1);
  EXPECT_EQ(MetricValue(m, "vllm:generation_tokens_total" + l + "}"), 0);
  for (size_t i : {0u, 1u, 2u}) {
    const std::string b = WaitForBaseline(s.port(i));
    EXPECT_EQ(MetricValue(b, "fleetplan:kv_blocks_referenced{"), 0) << "replica " << i;
    EXPECT_EQ(MetricValue(b, "fleetplan:engine_live_requests{"), 0) << "replica " << i;
  }
}

// The pools scenario, bound.
Expected<FleetPlan> PoolsPlan() {
  FP_ASSIGN_OR_RETURN(Scenario scenario, LoadScenarioText(PoolsScenario(), "pools.yaml", "."));
  return Bind(scenario);
}

TEST(ServePools, ReplicasFlagIsRefusedWithPools) {
  auto plan = PoolsPlan();
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ServeOptions o;
  o.port = 0;
  o.replicas = 4;
  auto server = Server::Create(*plan, o);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kUsage);
  EXPECT_NE(server.status().message().find("deployment.pools"), std::string::npos) << server.status().message();
}

// B13: an IPv6 address is bracketed in the printed URL, localhost binds the loopback, and
// a name that is no address says what is accepted.
TEST(ServeHost, UrlsBracketIpv6AndLocalhostIsTheLoopback) {
  EXPECT_EQ(ReplicaUrl("::1", 8000), "http://[::1]:8000");
  EXPECT_EQ(ReplicaUrl("127.0.0.1", 8001), "http://127.0.0.1:8001");
  auto plan = PoolsPlan();
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ServeOptions o;
  o.port = 0;
  o.host = "localhost";
  auto server = Server::Create(*plan, o);
  ASSERT_TRUE(server.ok()) << server.status().message();
  o.host = "example.invalid";
  auto refused = Server::Create(*plan, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUsage);
  EXPECT_NE(refused.status().message().find("is not an IP address (such as 127.0.0.1, ::1 or 0.0.0.0) or localhost"),
            std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace fleetplan::serve::testing
