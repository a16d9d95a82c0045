#include "fleetplan/fleet/scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/core/scenario_schema.h"
#include "fleetplan/memory/fit_request.h"

namespace fleetplan {
namespace {

namespace keys = scenario_keys;

const std::vector<std::string> kAdmissionModes = {"optimistic", "reserve"};
const std::vector<std::string> kPreemptionModes = {"recompute"};
const std::vector<std::string> kEvictionPolicies = {"lru"};
const std::vector<std::string> kTransferFailureModes = {"recompute", "reject"};

// A node that is either absent/null or a mapping with known keys.
Status CheckOptionalMap(const YamlNode& node, const std::vector<std::string>& allowed) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  return node.CheckKeys(allowed);
}

// A string from a fixed set: located error with did-you-mean when it is not one of them.
Expected<std::string> ReadChoice(const YamlNode& node, const std::string& fallback, std::string_view what,
                                 const std::vector<std::string>& valid) {
  FP_ASSIGN_OR_RETURN(std::string value, node.StringOr(fallback));
  if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
    return node.Error(UnknownNameMessage(what, value, valid));
  }
  return value;
}

Status ReadScheduler(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kScheduler));
  SchedulerConfig& c = s.engine.scheduler;
  const SchedulerConfig defaults;
  FP_ASSIGN_OR_RETURN(c.policy, ReadChoice(node["policy"], defaults.policy, "scheduling policy",
                                           SchedulingPolicyNames()));
  c.max_batched_tokens = s.fit.memory.max_batched_tokens;  // read (and validated) by the fit reader
  c.max_running = s.fit.concurrency;
  if (node["chunk_tokens"].present()) {
    FP_ASSIGN_OR_RETURN(c.chunk_tokens, node["chunk_tokens"].AsIntAtLeast(1));
  }
  if (node["max_decode_stall"].present()) {
    FP_ASSIGN_OR_RETURN(c.max_decode_stall, node["max_decode_stall"].AsDuration());
    if (c.max_decode_stall <= Duration()) return node["max_decode_stall"].Error("expected a duration > 0");
  }
  if (node["aging_per_step"].present()) {
    FP_ASSIGN_OR_RETURN(c.aging_per_step, node["aging_per_step"].AsDoubleInRange(0.0, 1e9));
  }
  if (node["max_waiting"].present()) {
    FP_ASSIGN_OR_RETURN(c.max_waiting, node["max_waiting"].AsIntAtLeast(0));
  }
  FP_ASSIGN_OR_RETURN(std::string admission,
                      ReadChoice(node["admission"], "optimistic", "admission mode", kAdmissionModes));
  s.engine.admission = admission == "reserve" ? AdmissionMode::kReserve : AdmissionMode::kOptimistic;
  FP_ASSIGN_OR_RETURN(s.engine.reject_unreachable_deadline, node["reject_unreachable_deadline"].BoolOr(true));
  return Status::Ok();
}

// A non-empty string, `fallback` when absent (listed in `derived` when the cache is on).
Expected<std::string> ReadScopeName(const YamlNode& node, const std::string& fallback, std::string_view why,
                                    Scenario& s) {
  FP_ASSIGN_OR_RETURN(std::string value, node.StringOr(fallback));
  if (value.empty()) return node.Error("expected a non-empty name");
  if (!node.present() && s.engine.prefix_cache.enabled) {
    s.derived.push_back(fmt::format("{}: {} ({}; not given)", node.path(), value, why));
  }
  return value;
}

Status ReadPrefixCache(const YamlNode& cache, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(cache, keys::kPrefixCache));
  PrefixCacheConfig& c = s.engine.prefix_cache;
  FP_ASSIGN_OR_RETURN(s.prefix_cache.enabled, cache["enabled"].BoolOr(false));
  c.enabled = s.prefix_cache.enabled;
  FP_ASSIGN_OR_RETURN(s.prefix_cache.eviction, ReadChoice(cache["eviction"], "lru", "eviction policy",
                                                          kEvictionPolicies));
  FP_ASSIGN_OR_RETURN(c.share_across_tenants, cache["share_across_tenants"].BoolOr(false));
  const YamlNode scope = cache["scope"];
  FP_RETURN_IF_ERROR(CheckOptionalMap(scope, keys::kPrefixCacheScope));
  const std::string& model = s.fit.memory.model.name;
  FP_ASSIGN_OR_RETURN(c.scope.model_revision, ReadScopeName(scope["model_revision"], model, "the model name", s));
  FP_ASSIGN_OR_RETURN(c.scope.tokenizer, ReadScopeName(scope["tokenizer"], model, "the model name", s));
  FP_ASSIGN_OR_RETURN(c.scope.position_scheme, ReadScopeName(scope["position_scheme"], "rope", "rotary", s));
  // KV format: what a block's bytes mean (dtype and block size), derived, never given.
  c.scope.kv_format = fmt::format("{}/{}", DTypeName(s.fit.memory.kv_dtype), s.engine.block_tokens);
  return Status::Ok();
}

// Host-to-device bandwidth an adapter load is derived from when `load_time` is not given:
// PCIe 5.0 x16 delivers about 50 GB/s one way; half of it is a conservative effective rate.
constexpr double kAdapterLoadBytesPerSecond = 25e9;

Status ReadAdapters(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kAdapters));
  AdapterConfig& a = s.adapters;
  a.enabled = true;
  FP_ASSIGN_OR_RETURN(a.size, node["size"].AsBytes());
  if (a.size.count() < 1) return node["size"].Error("expected a size > 0");
  FP_ASSIGN_OR_RETURN(a.memory_budget, node["memory_budget"].AsBytes());
  if (a.memory_budget < a.size) {
    return node["memory_budget"].Error(fmt::format("expected at least one adapter's size ({} bytes), got {} bytes",
                                                   a.size.count(), a.memory_budget.count()));
  }
  if (node["load_time"].present()) {
    FP_ASSIGN_OR_RETURN(a.load_time, node["load_time"].AsDuration());
  } else {
    a.load_time = Duration::Nanos(static_cast<int64_t>(
        std::ceil(static_cast<double>(a.size.count()) / kAdapterLoadBytesPerSecond * 1e9)));
    s.derived.push_back(fmt::format("engine.adapters.load_time: {:.3f} ms (size / 25 GB/s host-to-device; not "
                                    "given)",
                                    a.load_time.millis()));
  }
  return Status::Ok();
}

Status ReadEngine(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kEngine));
  FP_RETURN_IF_ERROR(ReadScheduler(node["scheduler"], s));
  s.engine.block_tokens = s.fit.memory.block_tokens;

  FP_RETURN_IF_ERROR(ReadPrefixCache(node["prefix_cache"], s));
  FP_ASSIGN_OR_RETURN(std::string preemption,
                      ReadChoice(node["preemption"], "recompute", "preemption mode", kPreemptionModes));
  (void)preemption;

  const YamlNode step_model = node["step_model"];
  if (step_model.present() && !step_model.IsNull()) {
    s.step_model = step_model;
  } else {
    s.derived.push_back("engine.step_model: roofline (not given)");
  }
  FP_ASSIGN_OR_RETURN(s.engine.host_overhead, node["host_overhead"].DurationOr(Duration()));
  if (!node["host_overhead"].present()) s.derived.push_back("engine.host_overhead: 0 (not given)");
  FP_ASSIGN_OR_RETURN(s.cuda_graphs, CudaGraphPolicy::Parse(node["cuda_graphs"]));
  return ReadAdapters(node["adapters"], s);
}

Status ReadHardware(const YamlNode& node, Scenario& s) {
  // Keys and hardware.gpu were checked by the fit reader.
  FP_ASSIGN_OR_RETURN(s.nodes, node["nodes"].IntOr(1));
  if (s.nodes < 1) return node["nodes"].Error(fmt::format("expected an integer >= 1, got {}", s.nodes));
  FP_ASSIGN_OR_RETURN(s.gpus_per_node, node["gpus_per_node"].IntOr(8));
  if (s.gpus_per_node < 1) {
    return node["gpus_per_node"].Error(fmt::format("expected an integer >= 1, got {}", s.gpus_per_node));
  }
  const Catalog& catalog = Catalog::Builtin();
  auto read_link = [&](const YamlNode& link, const std::string& fallback, LinkSpec& out) -> Status {
    FP_ASSIGN_OR_RETURN(std::string name, link.StringOr(fallback));
    auto spec = catalog.Link(name);
    if (!spec.ok()) return link.Error(spec.status().message());
    out = *spec;
    if (!link.present()) s.derived.push_back(fmt::format("{}: {} (not given)", link.path(), name));
    return Status::Ok();
  };
  const std::string intra = s.fit.memory.gpu.default_intra_link.empty() ? "nvlink4" : s.fit.memory.gpu.default_intra_link;
  FP_RETURN_IF_ERROR(read_link(node["intra_node_link"], intra, s.intra_node_link));
  FP_RETURN_IF_ERROR(read_link(node["inter_node_link"], "ib-ndr-400", s.inter_node_link));
  return Status::Ok();
}

// The role of the pool whose layout is the scenario's headline `fit`: the first mixed or
// decode pool, else the only one (empty without pools). Tolerant: ReadPools reports
// malformed pools with their locations.
std::string PrimaryPoolRole(const YamlNode& deployment) {
  const YamlNode pools = deployment["pools"];
  if (!pools.present() || !pools.IsSequence()) return "";
  auto items = pools.Items();
  if (!items.ok()) return "";
  for (const YamlNode& item : *items) {
    auto role = item["role"].StringOr("");
    if (role.ok() && (*role == "mixed" || *role == "decode")) return *role;
  }
  return "";
}

Status ReadPools(const YamlNode& deployment, const YamlDocument& doc, Scenario& s) {
  const YamlNode pools = deployment["pools"];
  if (deployment["replicas"].present()) {
    return deployment["replicas"].Error("with deployment.pools, give `replicas` in each pool");
  }
  FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, pools.Items());
  if (items.empty()) return pools.Error("expected at least one pool");
  int64_t serving = 0;
  for (const YamlNode& item : items) {
    FP_RETURN_IF_ERROR(item.CheckKeys(keys::kPool));
    FP_ASSIGN_OR_RETURN(std::string name, item["role"].AsString());
    const auto& names = PoolRoleNames();
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) return item["role"].Error(UnknownNameMessage("pool role", name, names));
    PoolSpec pool;
    pool.role = static_cast<PoolRole>(it - names.begin());
    for (const PoolSpec& other : s.pools) {
      if (other.role == pool.role) return item["role"].Error(fmt::format("a second '{}' pool; give each role once", name));
    }
    // The fit reader resolves this pool's layout (deployment-level values are defaults).
    FP_ASSIGN_OR_RETURN(FitSpec spec, ReadFitScenario(doc, name, ValueOrigin::Flag("--pool")));
    const Expected<ResolvedFit> fit = ResolveFitSpec(spec, Catalog::Builtin());
    if (!fit.ok()) return fit.status();
    pool.fit = fit->request;
    FP_ASSIGN_OR_RETURN(pool.replicas, item["replicas"].IntOr(1));
    if (pool.replicas < 1) return item["replicas"].Error(fmt::format("expected an integer >= 1, got {}", pool.replicas));
    if (pool.role != PoolRole::kPrefill) ++serving;
    s.pools.push_back(std::move(pool));
  }
  if (serving == 0) return pools.Error("expected a `mixed` or `decode` pool: a prefill pool cannot answer alone");
  s.replicas = 0;
  for (const PoolSpec& p : s.pools) s.replicas += p.replicas;
  return Status::Ok();
}

bool HasPrefillPool(const Scenario& s) {
  return std::any_of(s.pools.begin(), s.pools.end(), [](const PoolSpec& p) { return p.role == PoolRole::kPrefill; });
}

Status ReadDisaggregation(const YamlNode& node, Scenario& s) {
  if (!HasPrefillPool(s)) {
    if (node.present()) return node.Error("needs a `prefill` pool in deployment.pools");
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kDisaggregation));
  DisaggregationConfig& d = s.disaggregation;
  FP_ASSIGN_OR_RETURN(d.colocate_below_tokens, node["colocate_below_tokens"].IntOr(0));
  if (d.colocate_below_tokens < 0) {
    return node["colocate_below_tokens"].Error(
        fmt::format("expected an integer >= 0, got {}", d.colocate_below_tokens));
  }
  const std::string fallback = s.inter_node_link.name;
  FP_ASSIGN_OR_RETURN(std::string link, node["link"].StringOr(fallback));
  auto spec = Catalog::Builtin().Link(link);
  if (!spec.ok()) return node["link"].Error(spec.status().message());
  s.transfer_link = *spec;
  if (!node["link"].present()) {
    s.derived.push_back(fmt::format("deployment.disaggregation.link: {} (hardware.inter_node_link; not given)", link));
  }
  FP_ASSIGN_OR_RETURN(d.setup, node["setup"].DurationOr(s.transfer_link.latency));
  if (!node["setup"].present()) {
    s.derived.push_back(fmt::format("deployment.disaggregation.setup: {:.3f} ms (the link's latency; not given)",
                                    d.setup.millis()));
  }
  FP_ASSIGN_OR_RETURN(d.timeout, node["timeout"].DurationOr(d.timeout));
  if (d.timeout <= Duration()) return node["timeout"].Error("expected a duration > 0");
  FP_ASSIGN_OR_RETURN(int64_t retries, node["retries"].IntOr(d.retries));
  if (retries < 0 || retries > 100) {
    return node["retries"].Error(fmt::format("expected an integer in [0, 100], got {}", retries));
  }
  d.retries = static_cast<int32_t>(retries);
  FP_ASSIGN_OR_RETURN(std::string on_failure, ReadChoice(node["on_failure"], "recompute", "failure handling",
                                                         kTransferFailureModes));
  d.reject_on_failure = on_failure == "reject";
  const auto note_default = [&](const char* key, const std::string& value) {
    if (!node[key].present()) s.derived.push_back(fmt::format("deployment.disaggregation.{}: {} (not given)", key, value));
  };
  note_default("colocate_below_tokens", std::to_string(d.colocate_below_tokens));
  note_default("timeout", fmt::format("{:.0f} ms", d.timeout.millis()));
  note_default("retries", std::to_string(d.retries));
  note_default("on_failure", on_failure);
  return Status::Ok();
}

Status ReadFaults(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kFaults));
  const YamlNode transfer = node["kv_transfer"];
  if (!transfer.present()) return Status::Ok();
  if (!HasPrefillPool(s)) return transfer.Error("KV transfer faults need a `prefill` pool in deployment.pools");
  FP_RETURN_IF_ERROR(transfer.CheckKeys(keys::kTransferFaults));
  TransferFaults& f = s.disaggregation.faults;
  FP_ASSIGN_OR_RETURN(f.delay, transfer["delay"].DurationOr(Duration()));
  // A stated delay applies to every transfer unless a probability says otherwise.
  const double default_delay_probability = transfer["delay"].present() ? 1.0 : 0.0;
  if (transfer["delay_probability"].present()) {
    FP_ASSIGN_OR_RETURN(f.delay_probability, transfer["delay_probability"].AsDoubleInRange(0.0, 1.0));
  } else {
    f.delay_probability = default_delay_probability;
    if (transfer["delay"].present()) {
      s.derived.push_back("faults.kv_transfer.delay_probability: 1 (a stated delay applies to every transfer; not given)");
    }
  }
  if (transfer["failure_probability"].present()) {
    FP_ASSIGN_OR_RETURN(f.failure_probability, transfer["failure_probability"].AsDoubleInRange(0.0, 1.0));
  }
  f.seed = SplitMix64(s.seed ^ Fnv1a64("faults.kv_transfer"));
  return Status::Ok();
}

Status ReadDeployment(const YamlNode& node, const YamlDocument& doc, Scenario& s) {
  if (node["pools"].present()) {
    FP_RETURN_IF_ERROR(ReadPools(node, doc, s));
  } else {
    FP_ASSIGN_OR_RETURN(s.replicas, node["replicas"].IntOr(1));
    if (s.replicas < 1) return node["replicas"].Error(fmt::format("expected an integer >= 1, got {}", s.replicas));
    s.pools.push_back(PoolSpec{PoolRole::kMixed, s.fit, s.replicas});
  }
  int64_t need = 0;
  for (const PoolSpec& p : s.pools) need += p.replicas * p.fit.memory.layout.gpus();
  const int64_t have = s.nodes * s.gpus_per_node;
  if (need > have) {
    const YamlNode at = node["pools"].present() ? node["pools"] : node["replicas"];
    if (s.pools.size() > 1) {
      return at.Error(fmt::format("the pools need {} GPUs; hardware has {} ({} nodes x {})", need, have, s.nodes,
                                  s.gpus_per_node));
    }
    return at.Error(fmt::format(
        "{} replicas of tp {} x pp {} need {} GPUs; hardware has {} ({} nodes x {}); at most {} replicas fit",
        s.replicas, s.fit.memory.layout.tp, s.fit.memory.layout.pp, need, have, s.nodes, s.gpus_per_node,
        have / s.fit.memory.layout.gpus()));
  }
  return ReadDisaggregation(node["disaggregation"], s);
}

Expected<InvalidationEventSpec> ReadEvent(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kWorkloadEvent));
  FP_ASSIGN_OR_RETURN(Duration at, node["at"].AsDuration());
  FP_ASSIGN_OR_RETURN(std::string name, node["invalidate"].AsString());
  const auto& names = InvalidationKindNames();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return node["invalidate"].Error(UnknownNameMessage("invalidation", name, names));
  const auto kind = static_cast<InvalidationKind>(it - names.begin());
  const bool takes_tenant = kind == InvalidationKind::kTenant || kind == InvalidationKind::kCorpus;
  const bool takes_adapter = kind == InvalidationKind::kAdapter;
  std::optional<std::string> tenant;
  std::optional<std::string> adapter;
  if (node["tenant"].present()) {
    if (!takes_tenant) {
      return node["tenant"].Error(fmt::format("`tenant` applies to invalidate: tenant or corpus, not {}", name));
    }
    FP_ASSIGN_OR_RETURN(tenant, node["tenant"].AsString());
  } else if (kind == InvalidationKind::kTenant) {
    return node["tenant"].AsString().status();  // "missing required field 'tenant'"
  }
  if (node["adapter"].present()) {
    if (!takes_adapter) {
      return node["adapter"].Error(fmt::format("`adapter` applies to invalidate: adapter, not {}", name));
    }
    FP_ASSIGN_OR_RETURN(adapter, node["adapter"].AsString());
  } else if (takes_adapter) {
    return node["adapter"].AsString().status();
  }
  return InvalidationEventSpec{SimTime() + at, kind, std::move(tenant), std::move(adapter), node};
}

// workload.events (the workload reader accepts the key; the cache's events are read here).
Status ReadEvents(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(InvalidationEventSpec e, ReadEvent(item));
    s.events.push_back(std::move(e));
  }
  std::stable_sort(s.events.begin(), s.events.end(),
                   [](const InvalidationEventSpec& a, const InvalidationEventSpec& b) { return a.at < b.at; });
  if (!s.events.empty() && !s.engine.prefix_cache.enabled) {
    s.derived.push_back(fmt::format("workload.events: {} invalidation(s) have no effect: engine.prefix_cache is "
                                    "disabled",
                                    s.events.size()));
  }
  return Status::Ok();
}

// A policy's own section given with another policy is an error, not ignored.
Status CheckPolicySection(const YamlNode& node, std::string_view key, std::string_view policy,
                          const std::string& chosen) {
  if (!node[key].present() || chosen == policy) return Status::Ok();
  return node[key].Error(fmt::format("`{}` applies to policy: {}, not {}", key, policy, chosen));
}

// router.weighted: scorer -> weight >= 0, at least one > 0. Default when absent.
Status ReadWeights(const YamlNode& node, Scenario& s) {
  RouterConfig& r = s.router;
  if (!node.present() || node.IsNull()) {
    r.weights = {{"prefix", 3.0}, {"queue", 2.0}, {"kv", 2.0}};
    s.derived.push_back("router.weighted: {prefix: 3, queue: 2, kv: 2} (not given)");
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(node.CheckKeys(WeightedScorerNames()));
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  double total = 0;
  for (const auto& [name, value] : entries) {
    FP_ASSIGN_OR_RETURN(double w, value.AsDoubleInRange(0.0, 1e6));
    r.weights[name] = w;
    total += w;
  }
  if (total <= 0) return node.Error("expected at least one scorer with a weight > 0");
  return Status::Ok();
}

Status ReadAdapterAware(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kRouterAdapterAware));
  AdapterAwareWeights& w = s.router.adapter_aware;
  const AdapterAwareWeights defaults;
  FP_ASSIGN_OR_RETURN(w.load, node["load"].DoubleOr(defaults.load));
  FP_ASSIGN_OR_RETURN(w.affinity, node["affinity"].DoubleOr(defaults.affinity));
  if (w.affinity < 0) return node["affinity"].Error(fmt::format("expected a number >= 0, got {}", w.affinity));
  if (w.load <= w.affinity) {
    const YamlNode at = node["load"].present() ? node["load"] : node["affinity"];
    return at.Error(fmt::format("expected load > affinity (got load {}, affinity {}), so one hot adapter "
                                "cannot make a hot replica",
                                w.load, w.affinity));
  }
  return Status::Ok();
}

Status ReadReplication(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kReplication));
  const bool tracks_prefixes = s.router.policy == "cache-aware" || s.router.policy == "weighted";
  if (!tracks_prefixes || !s.engine.prefix_cache.enabled) {
    return node.Error("hot-prefix replication needs engine.prefix_cache.enabled and a router that reads prefixes "
                      "(cache-aware or weighted)");
  }
  if (HasPrefillPool(s)) {
    return node.Error("hot-prefix replication is not simulated together with a prefill pool");
  }
  ReplicationConfig& c = s.replication;
  c.enabled = true;
  FP_ASSIGN_OR_RETURN(Rate rate, node["replica_rate"].AsRate());
  c.replica_rate = rate.per_second;
  if (!(c.replica_rate > 0)) return node["replica_rate"].Error("expected a rate > 0");
  FP_ASSIGN_OR_RETURN(c.prefix_tokens, node["prefix_tokens"].IntOr(c.prefix_tokens));
  if (c.prefix_tokens < s.engine.block_tokens) {
    return node["prefix_tokens"].Error(fmt::format("expected at least one KV block ({} tokens), got {}",
                                                   s.engine.block_tokens, c.prefix_tokens));
  }
  FP_ASSIGN_OR_RETURN(c.window, node["window"].DurationOr(c.window));
  if (c.window <= Duration()) return node["window"].Error("expected a duration > 0");
  FP_ASSIGN_OR_RETURN(c.min_hold, node["min_hold"].DurationOr(c.min_hold));
  if (node["add_above"].present()) {
    FP_ASSIGN_OR_RETURN(c.add_above, node["add_above"].AsDoubleInRange(0.0, 1e6));
  }
  if (node["remove_below"].present()) {
    FP_ASSIGN_OR_RETURN(c.remove_below, node["remove_below"].AsDoubleInRange(0.0, 1e6));
  }
  if (c.remove_below > c.add_above) {
    return node.Error(fmt::format("expected remove_below <= add_above (got {} > {}): a prefix would be added and "
                                  "removed at the same demand",
                                  c.remove_below, c.add_above));
  }
  return Status::Ok();
}

Status ReadRouter(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kRouter));
  RouterConfig& r = s.router;
  FP_ASSIGN_OR_RETURN(r.policy, ReadChoice(node["policy"], "round-robin", "router policy", RouterNames()));
  FP_ASSIGN_OR_RETURN(r.telemetry_delay, node["telemetry_delay"].DurationOr(Duration()));
  FP_ASSIGN_OR_RETURN(r.precise, node["precise"].BoolOr(false));
  FP_RETURN_IF_ERROR(CheckPolicySection(node, "outstanding_by", "least-outstanding", r.policy));
  FP_RETURN_IF_ERROR(CheckPolicySection(node, "weighted", "weighted", r.policy));
  FP_RETURN_IF_ERROR(CheckPolicySection(node, "adapter_aware", "adapter-aware", r.policy));
  static const std::vector<std::string> kOutstandingBy = {"tokens", "requests"};
  FP_ASSIGN_OR_RETURN(std::string by, ReadChoice(node["outstanding_by"], "tokens", "load measure", kOutstandingBy));
  r.outstanding_by = by == "requests" ? OutstandingBy::kRequests : OutstandingBy::kTokens;
  if (r.policy == "weighted") {
    FP_RETURN_IF_ERROR(ReadWeights(node["weighted"], s));
  }
  if (r.policy == "adapter-aware") {
    FP_RETURN_IF_ERROR(ReadAdapterAware(node["adapter_aware"], s));
  }
  return ReadReplication(node["replication"], s);
}

Status ReadOutput(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kOutput));
  FP_ASSIGN_OR_RETURN(s.output.dir, node["dir"].StringOr("out/" + s.name));
  if (s.output.dir.empty()) return node["dir"].Error("expected a non-empty folder name");
  FP_ASSIGN_OR_RETURN(s.output.requests, node["requests"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(s.output.timeline, node["timeline"].BoolOr(false));
  return Status::Ok();
}

Expected<Scenario> ReadScenario(std::shared_ptr<const YamlDocument> doc, std::string dir, std::string digest) {
  Scenario s;
  s.document = doc;
  s.display_name = doc->display_name();
  s.dir = std::move(dir);
  s.digest = std::move(digest);
  const YamlNode root = doc->root();
  // Model, hardware.gpu, deployment layout, memory knobs; checks the root's keys too.
  FP_ASSIGN_OR_RETURN(FitSpec fit_spec,
                      ReadFitScenario(*doc, PrimaryPoolRole(root["deployment"]), ValueOrigin::Flag("--pool")));
  // The fit reader also serves `fleetplan fit`, whose messages for absent inputs name its
  // flags; a scenario names its keys instead.
  FP_RETURN_IF_ERROR(root["model"].RequirePresent());
  FP_RETURN_IF_ERROR(root["hardware"].RequirePresent());
  FP_RETURN_IF_ERROR(root["hardware"]["gpu"].RequirePresent());
  Expected<ResolvedFit> fit = ResolveFitSpec(fit_spec, Catalog::Builtin());
  if (!fit.ok() && fit.status().code() == StatusCode::kUsage) {
    // With model and GPU present, the only input left to miss is the context.
    return root["model"].Error("the model states no max_context: set model.max_context");
  }
  if (!fit.ok()) return fit.status();
  s.fit = fit->request;
  for (const auto& d : fit->derived) s.derived.push_back(d);

  FP_ASSIGN_OR_RETURN(s.name, root["name"].StringOr("scenario"));
  if (s.name.empty()) return root["name"].Error("expected a non-empty name");
  FP_ASSIGN_OR_RETURN(int64_t seed, root["seed"].IntOr(0));
  if (seed < 0) return root["seed"].Error(fmt::format("expected an integer >= 0, got {}", seed));
  if (!root["seed"].present()) s.derived.push_back("seed: 0 (not given)");
  s.seed = static_cast<uint64_t>(seed);

  FP_RETURN_IF_ERROR(ReadHardware(root["hardware"], s));
  FP_RETURN_IF_ERROR(ReadDeployment(root["deployment"], *doc, s));
  FP_RETURN_IF_ERROR(ReadFaults(root["faults"], s));
  FP_RETURN_IF_ERROR(ReadEngine(root["engine"], s));
  FP_RETURN_IF_ERROR(ReadRouter(root["router"], s));
  FP_ASSIGN_OR_RETURN(s.workload, ParseWorkloadSpec(root["workload"]));
  FP_RETURN_IF_ERROR(ReadEvents(root["workload"]["events"], s));
  if (s.workload.adapters && !s.adapters.enabled) {
    s.derived.push_back("engine.adapters: not given; adapters load instantly and take no memory");
  }
  if (root["slo"].present() && !root["slo"].IsNull()) {
    FP_ASSIGN_OR_RETURN(s.slo, ParseSlo(root["slo"]));
  }
  FP_RETURN_IF_ERROR(ReadOutput(root["output"], s));
  return s;
}

}  // namespace

Expected<std::vector<TimedInvalidation>> ResolveInvalidations(const std::vector<InvalidationEventSpec>& events,
                                                             const WorkloadNames& names) {
  auto resolve = [](const YamlNode& node, const std::string& name, const std::vector<std::string>& known,
                    std::string_view what) -> Expected<int32_t> {
    const auto it = std::find(known.begin(), known.end(), name);
    if (it != known.end()) return static_cast<int32_t>(it - known.begin());
    if (known.empty()) return node.Error(fmt::format("the workload has no {}s; '{}' names none", what, name));
    return node.Error(UnknownNameMessage(what, name, known));
  };
  std::vector<TimedInvalidation> out;
  for (const InvalidationEventSpec& e : events) {
    CacheInvalidation inv{e.kind, kAllTargets};
    if (e.tenant) {
      FP_ASSIGN_OR_RETURN(inv.target, resolve((*e.node)["tenant"], *e.tenant, names.tenants, "tenant"));
    }
    if (e.adapter) {
      FP_ASSIGN_OR_RETURN(inv.target, resolve((*e.node)["adapter"], *e.adapter, names.adapters, "adapter"));
    }
    out.push_back({e.at, inv});
  }
  return out;
}

Expected<Scenario> LoadScenarioText(std::string_view text, std::string display_name, std::string dir) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  return ReadScenario(std::make_shared<const YamlDocument>(std::move(doc)), std::move(dir), DigestOf(text));
}

Expected<Scenario> LoadScenario(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return LoadScenarioText(text, path, dir);
}

}  // namespace fleetplan
