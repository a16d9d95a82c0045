// Port (port.h): GET /metrics, the Prometheus text of one replica. vLLM's names, labels
// and buckets (docs/serve.md "Metrics") from the engine's state and the port's figures
// (replica_metrics.h), then the emulator's own `fleetplan:` figures: token lateness, KV
// references, live requests, cancellations, slow clients, idempotency, injected faults,
// the replica's pool role and, on a decode replica of a fleet with pools, its KV
// transfers.
#include <fmt/format.h>

#include <ctime>
#include <set>

#include "serve/port.h"

namespace fleetplan::serve::internal {

std::string Port::MetricsBody() const {
  const Engine& e = clock_.engine(index_);
  const std::string labels = fmt::format("engine=\"0\",model_name=\"{}\"", LabelValue(shared_.model));
  std::string out;
  out.reserve(16 << 10);
  auto gauge = [&](std::string_view name, std::string_view help, double v) {
    AppendHelp(out, name, "gauge", help);
    out += fmt::format("{}{{{}}} {}\n", name, labels, PromNumber(v));
  };
  auto counter = [&](std::string_view name, std::string_view help, double v) {
    AppendHelp(out, name, "counter", help);
    out += fmt::format("{}_total{{{}}} {}\n", name, labels, PromNumber(v));
  };
  auto histogram = [&](std::string_view name, std::string_view help, const Histogram& h) {
    AppendHelp(out, name, "histogram", help);
    h.Render(out, name, labels);
  };
  const EngineStats& st = e.stats();
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", static_cast<double>(e.running_count()));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        static_cast<double>(e.waiting_count() + clock_.PendingHandoffs(index_)));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        e.pool().total() > 0 ? static_cast<double>(e.pool().used_count()) / static_cast<double>(e.pool().total()) : 0.0);
  counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
          static_cast<double>(st.prefix_cache.lookup_tokens));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          static_cast<double>(st.prefix_cache.hit_tokens));
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", static_cast<double>(st.preemptions));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(metrics_.prompt_tokens));
  counter("vllm:generation_tokens", "Number of generation tokens processed.", static_cast<double>(metrics_.generation_tokens));
  AppendHelp(out, "vllm:request_success", "counter", "Count of successfully processed requests.");
  for (const auto& [reason, n] : metrics_.success) {
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels, reason,
                       PromNumber(static_cast<double>(n)));
  }
  histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", metrics_.prompt_hist);
  histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", metrics_.gen_hist);
  histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", metrics_.max_tokens_hist);
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", metrics_.ttft);
  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", metrics_.itl);
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", metrics_.e2e);
  histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", metrics_.queue);
  // LoRA: running / waiting adapters by name, as vLLM's info gauge (value: unix time).
  std::map<AdapterId, std::string> names;
  for (const auto& [name, id] : lora_ids_) names[id] = name;
  std::set<std::string> running, waiting;
  for (const auto& [id, l] : live_) {
    if (l->adapter == kNoAdapter) continue;
    auto n = names.find(l->adapter);
    if (n == names.end()) continue;
    (l->generated > 0 || l->scheduled ? running : waiting).insert(n->second);
  }
  auto join = [](const std::set<std::string>& s) {
    std::string r;
    for (const auto& x : s) r += (r.empty() ? "" : ",") + x;
    return r;
  };
  AppendHelp(out, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
  out += fmt::format("vllm:lora_requests_info{{max_lora=\"{}\",running_lora_adapters=\"{}\",waiting_lora_adapters=\"{}\"}} {}\n",
                     shared_.options.max_loras, LabelValue(join(running)), LabelValue(join(waiting)),
                     PromNumber(static_cast<double>(std::time(nullptr))));
  AppendHelp(out, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  out += fmt::format("vllm:cache_config_info{{block_size=\"{}\",enable_prefix_caching=\"{}\",engine=\"0\",num_gpu_blocks=\"{}\"}} 1.0\n",
                     block_tokens_, prefix_cache_ ? "True" : "False", kv_blocks_);
  // The emulator's own figures.
  histogram("fleetplan:token_lateness_seconds",
            "How late each output token left against the simulated schedule (wall now - wall of its simulated time).",
            metrics_.lateness);
  gauge("fleetplan:token_lateness_max_seconds", "Largest token lateness seen.", metrics_.lateness_max);
  gauge("fleetplan:kv_blocks_referenced", "KV block references held by live requests (0 at rest).",
        static_cast<double>(e.pool().total_refs()));
  gauge("fleetplan:kv_blocks_used", "KV blocks in use (held by a live request).", static_cast<double>(e.pool().used_count()));
  gauge("fleetplan:live_requests", "Requests the server holds (engine or held-back output).", static_cast<double>(live_.size()));
  gauge("fleetplan:engine_live_requests", "Requests the engine holds.", static_cast<double>(e.live_requests()));
  counter("fleetplan:client_disconnect_cancellations", "Requests cancelled because their client went away.",
          static_cast<double>(metrics_.client_cancels));
  counter("fleetplan:cancel_route_cancellations", "Requests cancelled by POST /v1/requests/{id}/cancel.",
          static_cast<double>(metrics_.route_cancels));
  counter("fleetplan:slow_client_pauses", "Streams paused because their output buffer was full.",
          static_cast<double>(metrics_.slow_pauses));
  counter("fleetplan:slow_client_cancellations", "Streams cancelled after staying paused past the slow-client timeout.",
          static_cast<double>(metrics_.slow_cancels));
  counter("fleetplan:duplicate_request_conflicts", "Requests refused with 409: their X-Request-Id was live.",
          static_cast<double>(metrics_.conflicts));
  counter("fleetplan:idempotent_replays", "Completed responses replayed for a repeated X-Request-Id.",
          static_cast<double>(metrics_.replays));
  counter("fleetplan:queue_full_rejections", "Requests answered 503: the engine's waiting bound was hit.",
          static_cast<double>(metrics_.rejected));
  AppendHelp(out, "fleetplan:faults_injected", "counter", "Faults injected from faults.serve, by kind.");
  for (const auto& [kind, n] : metrics_.faults) {
    out += fmt::format("fleetplan:faults_injected_total{{{},kind=\"{}\"}} {}\n", labels, kind, PromNumber(static_cast<double>(n)));
  }
  AppendHelp(out, "fleetplan:replica_info", "gauge", "This port's replica in the fleet: its id and pool role.");
  out += fmt::format("fleetplan:replica_info{{replica=\"{}\",role=\"{}\"}} 1\n", index_, PoolRoleName(clock_.role(index_)));
  if (clock_.role(index_) != PoolRole::kPrefill && clock_.PoolsServed()) {
    AppendHelp(out, "fleetplan:kv_transfers", "counter", "KV transfers into this replica from the prefill pool, by outcome.");
    for (const char* outcome : {"completed", "failed", "timeout", "cancelled"}) {
      const auto it = metrics_.transfers.find(outcome);
      out += fmt::format("fleetplan:kv_transfers_total{{{},outcome=\"{}\"}} {}\n", labels, outcome,
                         PromNumber(static_cast<double>(it == metrics_.transfers.end() ? 0 : it->second)));
    }
    histogram("fleetplan:kv_transfer_seconds", "Simulated time of each completed KV transfer into this replica.",
              metrics_.transfer_time);
  }
  AppendHelp(out, "fleetplan:http_errors", "counter", "Error responses by status.");
  for (const auto& [status, n] : metrics_.http_errors) {
    out += fmt::format("fleetplan:http_errors_total{{{},status=\"{}\"}} {}\n", labels, status, PromNumber(static_cast<double>(n)));
  }
  return out;
}

}  // namespace fleetplan::serve::internal
