// The keys of the scenario format (version 1), one list per mapping.
//
// Several readers interpret parts of a scenario (fit reads model/hardware/deployment,
// the simulator reads everything); all of them check keys against these lists, so a key
// is valid for every verb or for none, and "did you mean" suggests the same names.
// Adding a key here is a format extension: document it in docs/scenario.md.
#pragma once

#include <string>
#include <vector>

namespace fleetplan::scenario_keys {

// The scenario format version these lists describe.
inline constexpr int64_t kVersion = 1;

// `catalog`: user catalog file(s) (catalog/catalog.h), paths relative to the scenario.
inline const std::vector<std::string> kRoot = {"version", "name",     "seed",     "model", "hardware", "deployment",
                                               "engine",  "router",   "workload", "slo",   "output",   "faults",
                                               "catalog", "admission", "autoscaling"};
inline const std::vector<std::string> kModel = {"name", "spec", "weight_dtype", "kv_dtype", "kv_window", "max_context"};
inline const std::vector<std::string> kHardware = {"gpu", "gpu_memory", "nodes", "gpus_per_node",
                                                   "intra_node_link", "inter_node_link"};
inline const std::vector<std::string> kDeployment = {"replicas", "tp",    "pp",
                                                     "ep",       "gpu_memory_utilization", "pools",
                                                     "disaggregation"};
// deployment.disaggregation: prefill/decode hand-off (fleet/pools.h).
inline const std::vector<std::string> kDisaggregation = {"colocate_below_tokens", "link", "setup", "timeout",
                                                         "retries", "on_failure"};
// faults: injected failures (fleet/pools.h).
inline const std::vector<std::string> kFaults = {"kv_transfer", "serve"};
inline const std::vector<std::string> kServeFaults = {"errors", "latency_spike", "stall"};
inline const std::vector<std::string> kServeSpike = {"probability", "delay"};
inline const std::vector<std::string> kServeStall = {"probability", "duration"};
inline const std::vector<std::string> kTransferFaults = {"delay", "delay_probability", "failure_probability"};
inline const std::vector<std::string> kPool = {"role", "replicas", "tp", "pp", "ep", "gpu_memory_utilization"};
inline const std::vector<std::string> kEngine = {"scheduler",  "kv",         "prefix_cache", "preemption",
                                                 "step_model", "host_overhead", "cuda_graphs", "adapters",
                                                 "speculation", "version"};
// engine.host_overhead as a mapping (perf/host_overhead.h); a bare duration is per_step.
inline const std::vector<std::string> kHostOverhead = {"per_step", "per_sequence", "per_prefill_token"};
// engine.speculation: speculative decoding (fleet/speculation.h).
inline const std::vector<std::string> kSpeculation = {"method", "draft", "tokens_per_round", "acceptance",
                                                      "disable_above_batch", "min_remaining", "basis"};
inline const std::vector<std::string> kSpeculationDraft = {"model", "weight_dtype", "step_model"};
inline const std::vector<std::string> kSpeculationAcceptance = {"rounds"};
// engine.adapters: LoRA residency per replica (fleet/adapters.h).
inline const std::vector<std::string> kAdapters = {"size", "load_time", "memory_budget"};
inline const std::vector<std::string> kScheduler = {"policy",           "max_batched_tokens", "max_running",
                                                    "chunk_tokens",     "max_decode_stall",   "aging_per_step",
                                                    "max_waiting",      "admission",          "reject_unreachable_deadline",
                                                    "num_scheduler_steps"};
inline const std::vector<std::string> kKv = {"block_tokens"};
inline const std::vector<std::string> kPrefixCache = {"enabled", "eviction", "share_across_tenants", "scope"};
inline const std::vector<std::string> kPrefixCacheScope = {"model_revision", "tokenizer", "position_scheme"};
// workload.events[i]: a prefix-cache invalidation at a time.
inline const std::vector<std::string> kWorkloadEvent = {"at", "invalidate", "tenant", "adapter"};
inline const std::vector<std::string> kRouter = {"policy",         "telemetry_delay", "precise",
                                                 "outstanding_by", "weighted",        "adapter_aware",
                                                 "replication"};
// router.replication: hot-prefix placement (fleet/prefix_placement.h).
inline const std::vector<std::string> kReplication = {"replica_rate", "prefix_tokens", "window",
                                                      "add_above",    "remove_below",  "min_hold"};
// router.adapter_aware: the adapter-aware router's weights.
inline const std::vector<std::string> kRouterAdapterAware = {"load", "affinity", "by", "hot", "warm"};
// admission: classes, tenant quotas and bounded queues in front of the router (fleet/admission.h).
inline const std::vector<std::string> kAdmission = {"classes", "assign", "default_class", "max_in_flight_per_replica",
                                                    "tenant_quota", "tenants"};
inline const std::vector<std::string> kAdmissionClass = {"priority", "max_queue", "max_wait", "reserve_kv",
                                                         "aging_margin"};
inline const std::vector<std::string> kAdmissionRule = {"tenant", "workload_class", "class"};
inline const std::vector<std::string> kTenantQuota = {"max_concurrent", "max_tokens_in_flight", "token_rate", "burst"};
// autoscaling: the pod and node loops (fleet/autoscaler.h).
inline const std::vector<std::string> kAutoscaling = {
    "interval",    "metric", "target",    "window",         "tolerance",    "min_replicas", "max_replicas",
    "scale_up",    "scale_down", "panic", "nodes",          "load_bandwidth", "engine_start", "drain",
    "price",       "forecast"};
inline const std::vector<std::string> kAutoscalingRules = {"stabilization", "policies"};
inline const std::vector<std::string> kAutoscalingPolicy = {"pods", "percent", "period"};
inline const std::vector<std::string> kAutoscalingPanic = {"stable_window", "panic_window", "threshold"};
inline const std::vector<std::string> kAutoscalingNodes = {"gpus_per_node", "initial", "max_nodes",
                                                           "provisioning_delay"};
inline const std::vector<std::string> kAutoscalingDrain = {"grace", "expiry"};
inline const std::vector<std::string> kAutoscalingForecast = {"schedule", "lead", "window", "horizon",
                                                              "replica_rate"};
inline const std::vector<std::string> kAutoscalingForecastStep = {"at", "replicas"};
inline const std::vector<std::string> kOutput = {"dir", "requests", "timeline", "timeseries_interval", "html"};

}  // namespace fleetplan::scenario_keys
