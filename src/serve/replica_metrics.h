// The Prometheus figures of one replica's port (vLLM's names; docs/serve.md "Metrics"),
// rendered by Port::MetricsBody (metrics_endpoint.cc). Counters only grow; histograms
// observe wall seconds (token lateness, TTFT, ITL, E2E, queue time) or token counts,
// except `transfer_time`, which observes simulated seconds.
// Thread model: the I/O thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "fleetplan/serve/prometheus.h"

namespace fleetplan::serve::internal {

// Prometheus state of one replica (vLLM's names; docs/serve.md "Metrics").
struct ReplicaMetrics {
  Histogram ttft{TtftBuckets()};
  Histogram itl{InterTokenBuckets()};
  Histogram e2e{RequestLatencyBuckets()};
  Histogram queue{RequestLatencyBuckets()};
  Histogram prompt_hist;
  Histogram gen_hist;
  Histogram max_tokens_hist;
  Histogram lateness{LatenessBuckets()};
  double lateness_max = 0;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  std::map<std::string, int64_t> success;  // finished_reason -> count
  int64_t client_cancels = 0;
  int64_t route_cancels = 0;
  int64_t slow_pauses = 0;
  int64_t slow_cancels = 0;
  int64_t conflicts = 0;
  int64_t replays = 0;
  int64_t rejected = 0;
  std::map<int, int64_t> http_errors;  // status -> count
  std::map<std::string, int64_t> faults;  // kind -> count (faults.serve, faults.kv_transfer)
  std::map<std::string, int64_t> transfers;  // KV transfers into this replica, by outcome
  Histogram transfer_time{TtftBuckets()};  // simulated, completed transfers (ms to s)
  explicit ReplicaMetrics(int64_t max_len)
      : prompt_hist(Buckets125(max_len)), gen_hist(Buckets125(max_len)), max_tokens_hist(Buckets125(max_len)) {
    for (const char* r : {"stop", "length", "abort"}) success[r] = 0;
  }
};

}  // namespace fleetplan::serve::internal
