#include "fleetplan/fleet/fleet_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/fleet/adapter_component.h"
#include "fleetplan/fleet/admission.h"
#include "fleetplan/fleet/autoscaler.h"
#include "fleetplan/fleet/disaggregation.h"
#include "fleetplan/fleet/invalidations.h"
#include "fleetplan/fleet/replica_loss.h"
#include "fleetplan/fleet/replication.h"
#include "fleetplan/fleet/step_model_of.h"
#include "fleetplan/fleet/timeseries.h"
#include "fleetplan/fleet/traffic_split.h"
#include "fleetplan/perf/factory.h"

namespace fleetplan {
namespace {

StepModelContext CostContext(const Scenario& s, const FitRequest& fit) {
  StepModelContext ctx;
  ctx.memory = fit.memory;
  ctx.tp_link = s.intra_node_link;
  ctx.pp_link = fit.memory.layout.gpus() <= s.gpus_per_node ? s.intra_node_link : s.inter_node_link;
  ctx.scenario_dir = s.dir;
  ctx.cuda_graphs = s.cuda_graphs;
  return ctx;
}

std::string Gb(Bytes b) { return fmt::format("{:.1f} GB", static_cast<double>(b.count()) / 1e9); }

// The pool that cannot hold one KV block, located in the scenario: at engine.kv.block_tokens
// when one block alone is larger than the usable memory, else at the model.
Status NoKvBlockError(const Scenario& s, const PoolSpec& pool, const KvPoolSize& kv) {
  const MemoryInputs& m = pool.fit.memory;
  const std::string which =
      pool.role != PoolRole::kMixed ? fmt::format("the {} pool: ", PoolRoleName(pool.role)) : "";
  const bool block_too_big = kv.kv_bytes_per_rank.count() > 0 && kv.block_bytes_per_rank > kv.kv_bytes_per_rank;
  std::string message;
  if (block_too_big) {
    message = fmt::format(
        "{}one KV block of {} tokens needs {} per rank, more than the {} usable for KV per rank ({} on {} with tp {} "
        "pp {}); use a smaller engine.kv.block_tokens (vLLM uses 16)",
        which, kv.block_tokens, Gb(kv.block_bytes_per_rank), Gb(kv.kv_bytes_per_rank), m.model.name, m.gpu.name,
        m.layout.tp, m.layout.pp);
  } else {
    message = fmt::format("{}{} on {} with tp {} pp {} leaves no memory for KV cache (usable KV per rank: {}); run "
                          "`fleetplan fit` on this scenario for the arithmetic",
                          which, m.model.name, m.gpu.name, m.layout.tp, m.layout.pp, Gb(kv.kv_bytes_per_rank));
  }
  if (s.document == nullptr) return Status(StatusCode::kCheckFailed, message);
  const YamlNode root = s.document->root();
  const YamlNode block_tokens = root["engine"]["kv"]["block_tokens"];
  const YamlNode at = block_too_big && block_tokens.present() ? block_tokens : root["model"];
  if (!at.present()) return Status(StatusCode::kCheckFailed, message);
  return Status(StatusCode::kCheckFailed, FormatLocatedError(at.location(), at.path(), message));
}

Expected<BoundPool> BindPool(const Scenario& s, const PoolSpec& pool) {
  const MemoryInputs& m = pool.fit.memory;
  FP_ASSIGN_OR_RETURN(KvPoolSize kv, SizeKvPool(m));
  if (kv.kv_blocks_per_replica < 1) return NoKvBlockError(s, pool, kv);
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const StepCostModel> cost, StepModelOf(s, pool.fit));
  BoundPool bound{pool.role, pool.replicas, pool.fit, kv, std::move(cost), nullptr, std::nullopt, std::nullopt};
  if (s.speculation.enabled() && s.speculation.draft) {
    FP_ASSIGN_OR_RETURN(BoundDraft draft, BindDraft(s.speculation, m, kv, CostContext(s, pool.fit)));
    bound.kv.kv_blocks_per_replica = draft.memory.kv_blocks_after;
    bound.kv.kv_bytes_per_rank = kv.kv_bytes_per_rank - draft.memory.weights_per_rank;
    bound.draft_cost = std::move(draft.cost);
    bound.draft_memory = draft.memory;
  }
  return bound;
}

Json RouterJson(const RouterConfig& r) {
  Json weights = Json::object();
  for (const auto& [name, w] : r.weights) weights[name] = w;
  return Json{{"policy", r.policy},
              {"telemetry_delay_ns", r.telemetry_delay.ns()},
              {"precise", r.precise},
              {"outstanding_by", r.outstanding_by == OutstandingBy::kRequests ? "requests" : "tokens"},
              {"weights", std::move(weights)},
              {"adapter_aware",
               {{"load", r.adapter_aware.load},
                {"affinity", r.adapter_aware.affinity},
                {"by", r.adapter_aware.by == AdapterPlacementBy::kPopularity ? "popularity" : "history"},
                {"hot", r.adapter_aware.hot},
                {"warm", r.adapter_aware.warm}}}};
}

Json EngineSettingsJson(const EngineConfig& e) {
  const SchedulerConfig& s = e.scheduler;
  Json j{{"scheduler",
          {{"policy", s.policy},
           {"max_batched_tokens", s.max_batched_tokens},
           {"max_running", s.max_running},
           {"chunk_tokens", s.chunk_tokens},
           {"max_decode_stall_ns", s.max_decode_stall.ns()},
           {"aging_per_step", s.aging_per_step},
           {"max_waiting", s.max_waiting}}},
         {"admission", e.admission == AdmissionMode::kReserve ? "reserve" : "optimistic"},
         {"block_tokens", e.block_tokens},
         {"host_overhead_ns", e.host_overhead.ns()},
         {"reject_unreachable_deadline", e.reject_unreachable_deadline},
         {"prefix_cache",
          {{"enabled", e.prefix_cache.enabled},
           {"share_across_tenants", e.prefix_cache.share_across_tenants},
           {"scope",
            {{"model_revision", e.prefix_cache.scope.model_revision},
             {"tokenizer", e.prefix_cache.scope.tokenizer},
             {"position_scheme", e.prefix_cache.scope.position_scheme},
             {"kv_format", e.prefix_cache.scope.kv_format}}}}},
         {"speculation", e.speculation.Describe()}};
  // The batch terms of the host overhead only when set, so plans without them keep their
  // digests.
  if (!e.host().constant()) {
    j["host_per_sequence_ns"] = e.host_per_sequence.ns();
    j["host_per_prefill_token_ns"] = e.host_per_prefill_token.ns();
  }
  return j;
}

Json PoolJson(const BoundPool& p) {
  const MemoryInputs& m = p.fit.memory;
  Json j{{"role", std::string(PoolRoleName(p.role))},
              {"replicas", p.replicas},
              {"model", m.model.name},
              {"gpu", m.gpu.name},
              {"tp", m.layout.tp},
              {"pp", m.layout.pp},
              {"ep", m.layout.ep},
              {"weight_dtype", std::string(DTypeName(m.weight_dtype))},
              {"kv_dtype", std::string(DTypeName(m.kv_dtype))},
              {"gpu_memory_utilization", m.gpu_memory_utilization},
              {"concurrency", p.fit.concurrency},
              {"context", p.fit.context},
              {"kv_blocks_per_replica", p.kv.kv_blocks_per_replica},
              {"kv_bytes_per_token_per_rank", p.kv.kv_bytes_per_token_per_rank.count()},
              {"step_model", p.cost->Describe()}};
  if (p.draft_cost) {
    j["draft_step_model"] = p.draft_cost->Describe();
    j["draft_weights_per_rank"] = p.draft_memory->weights_per_rank.count();
    j["draft_kv_bytes_per_token_per_rank"] = p.draft_memory->kv_per_token_per_rank.count();
  }
  return j;
}

Json QuotaJson(const TenantQuota& q) {
  Json j = Json::object();
  if (q.max_concurrent) j["max_concurrent"] = *q.max_concurrent;
  if (q.max_tokens_in_flight) j["max_tokens_in_flight"] = *q.max_tokens_in_flight;
  if (q.token_rate) {
    j["token_rate"] = *q.token_rate;
    j["burst"] = q.burst;
  }
  return j;
}

Json AdmissionJson(const AdmissionConfig& a) {
  Json classes = Json::array();
  for (const AdmissionClass& c : a.classes) {
    classes.push_back({{"name", c.name},
                       {"priority", c.priority},
                       {"max_queue", c.max_queue},
                       {"max_wait_ns", c.max_wait.ns()},
                       {"reserve_kv", c.worst_case_kv ? "worst-case" : "prompt"},
                       {"aging_margin_ns", c.aging_margin ? Json(c.aging_margin->ns()) : Json()}});
  }
  Json rules = Json::array();
  for (const AdmissionConfig::Rule& r : a.rules) {
    rules.push_back({{r.by_tenant ? "tenant" : "workload_class", r.handle}, {"class", r.admission_class}});
  }
  Json tenants = Json::object();
  for (size_t t = 0; t < a.tenant_quotas.size(); ++t) {
    if (a.tenant_quotas[t]) tenants[a.tenant_names[t]] = QuotaJson(*a.tenant_quotas[t]);
  }
  return Json{{"classes", std::move(classes)},
              {"rules", std::move(rules)},
              {"default_class", a.default_class},
              {"max_in_flight_per_replica",
               a.max_in_flight_per_replica ? Json(*a.max_in_flight_per_replica) : Json()},
              {"tenant_quota", QuotaJson(a.default_quota)},
              {"tenants", std::move(tenants)}};
}

}  // namespace

Expected<std::shared_ptr<const StepCostModel>> StepModelOf(const Scenario& s, const FitRequest& fit) {
  const StepModelContext ctx = CostContext(s, fit);
  if (s.step_model) {
    FP_ASSIGN_OR_RETURN(auto model, MakeStepCostModel(*s.step_model, ctx));
    return std::shared_ptr<const StepCostModel>(std::move(model));
  }
  FP_ASSIGN_OR_RETURN(auto model, MakeDefaultStepCostModel(ctx));
  return std::shared_ptr<const StepCostModel>(std::move(model));
}


int64_t FleetPlan::replicas() const {
  int64_t n = 0;
  for (const BoundPool& p : pools) n += p.replicas;
  return n;
}

FleetSetup FleetPlan::Setup() const {
  FleetSetup setup;
  for (const BoundPool& p : pools) {
    EngineConfig e = p.engine.value_or(engine);
    e.kv_blocks = p.kv.kv_blocks_per_replica;
    e.max_context = p.fit.context;  // model.max_context, as the scenario gives or defaults it
    if (!p.engine) e.cuda_graphs = cuda_graphs;
    if (e.speculation.enabled()) {
      e.speculation.draft_cost = p.draft_cost;
      e.speculation.stream = RngStream(seed, "engine.speculation").seed();
    }
    const int64_t gpus = p.fit.memory.layout.gpus();
    ReplicaSetup r{e, p.cost, p.role, p.kv.kv_bytes_per_token_per_rank.count() * gpus, 0};
    // Every rank sends its shard of the KV over its own NIC.
    if (p.role == PoolRole::kPrefill) {
      r.link_bytes_per_second = std::max<int64_t>(1, static_cast<int64_t>(transfer_link.bandwidth) * gpus);
    }
    setup.replicas.insert(setup.replicas.end(), static_cast<size_t>(p.replicas), r);
  }
  setup.router = router;
  // One entry per component the plan turns on (component.h rows read their own).
  if (adapters.enabled) {
    AdapterConfig a = adapters;
    if (workload.adapters) {
      // Each adapter's share of adapter requests: its rank's probability.
      const Zipf& z = workload.adapters->population.popularity;
      for (int64_t rank = 1; rank <= z.n(); ++rank) a.popularity.push_back(z.Probability(rank));
    }
    setup.components.Set(kAdaptersRow, std::move(a));
  }
  if (replication.enabled) setup.components.Set(kReplicationRow, replication);
  if (!invalidations.empty()) setup.components.Set(kInvalidationsRow, invalidations);
  if (admission.enabled) setup.components.Set(kAdmissionRow, admission);
  setup.components.Set(kDisaggregationRow, disaggregation);  // read only with a prefill pool
  if (output.timeseries_interval > Duration()) {
    setup.components.Set(kTimeSeriesRow, TimeSeriesConfig{output.timeseries_interval});
  }
  if (!replica_losses.empty()) setup.components.Set(kReplicaLossesRow, replica_losses);
  if (autoscaling.enabled) setup.components.Set(kAutoscalerRow, autoscaling);
  if (traffic_split) setup.components.Set(kTrafficSplitRow, *traffic_split);
  return setup;
}

Json FleetPlan::ToJson() const {
  Json pools_json = Json::array();
  for (const BoundPool& p : pools) {
    Json pool = PoolJson(p);
    if (p.engine) {
      pool["engine"] = EngineSettingsJson(*p.engine);
      pool["engine"]["cuda_graphs"] = p.engine->cuda_graphs.Describe();
    }
    pools_json.push_back(std::move(pool));
  }
  Json invalidations_json = Json::array();
  for (const TimedInvalidation& t : invalidations) {
    invalidations_json.push_back({{"at_ns", t.at.ns()},
                                  {"kind", std::string(InvalidationKindName(t.invalidation.kind))},
                                  {"target", t.invalidation.target}});
  }
  Json j{{"name", name},
         {"scenario_digest", scenario_digest},
         {"seed", seed},
         {"pools", std::move(pools_json)},
         {"engine", EngineSettingsJson(engine)},
         {"cuda_graphs", cuda_graphs.Describe()},
         {"router", RouterJson(router)},
         {"invalidations", std::move(invalidations_json)},
         {"workload", workload.description}};
  if (adapters.enabled) {
    j["adapters"] = {{"size", adapters.size.count()},
                     {"memory_budget", adapters.memory_budget.count()},
                     {"load_time_ns", adapters.load_time.ns()}};
  }
  if (replication.enabled) {
    const ReplicationConfig& r = replication;
    j["replication"] = {{"replica_rate", r.replica_rate}, {"prefix_tokens", r.prefix_tokens},
                        {"add_above", r.add_above},       {"remove_below", r.remove_below},
                        {"window_ns", r.window.ns()},     {"min_hold_ns", r.min_hold.ns()}};
  }
  const bool pooled = std::any_of(pools.begin(), pools.end(), [](const BoundPool& p) { return p.role == PoolRole::kPrefill; });
  if (pooled) {
    const DisaggregationConfig& d = disaggregation;
    j["disaggregation"] = {{"colocate_below_tokens", d.colocate_below_tokens},
                           {"link", transfer_link.name},
                           {"setup_ns", d.setup.ns()},
                           {"timeout_ns", d.timeout.ns()},
                           {"retries", d.retries},
                           {"on_failure", d.reject_on_failure ? "reject" : "recompute"},
                           {"faults",
                            {{"delay_ns", d.faults.delay.ns()},
                             {"delay_probability", d.faults.delay_probability},
                             {"failure_probability", d.faults.failure_probability}}}};
  }
  if (admission.enabled) j["admission"] = AdmissionJson(admission);
  if (autoscaling.enabled) j["autoscaling"] = autoscaling.ToJson();
  if (serve_faults.any()) {
    Json errors = Json::object();
    for (const auto& [status, p] : serve_faults.errors) errors[std::to_string(status)] = p;
    j["serve_faults"] = {{"errors", errors},
                         {"spike_probability", serve_faults.spike_probability},
                         {"spike_delay_ns", serve_faults.spike_delay.ns()},
                         {"stall_probability", serve_faults.stall_probability},
                         {"stall_duration_ns", serve_faults.stall_duration.ns()}};
  }
  if (!replica_losses.empty()) {
    Json losses = Json::array();
    for (const ReplicaLoss& l : replica_losses) {
      losses.push_back({{"at_ns", l.at.ns()}, {"replicas", l.replicas}, {"expiry", DrainExpiryName(l.expiry)}});
    }
    j["replica_losses"] = std::move(losses);
  }
  if (traffic_split) j["traffic_split"] = traffic_split->ToJson();
  return j;
}

Expected<std::string> FleetPlan::Digest() const { return DigestOfJson(ToJson()); }

Expected<FleetPlan> Bind(const Scenario& s) {
  FleetPlan plan;
  plan.name = s.name;
  plan.source = s.display_name;
  plan.scenario_digest = s.digest;
  plan.catalog_files = s.catalog_files;
  plan.seed = s.seed;
  // A scenario built in code may leave `pools` empty: one mixed pool of `replicas` x `fit`.
  const std::vector<PoolSpec> specs =
      s.pools.empty() ? std::vector<PoolSpec>{{PoolRole::kMixed, s.fit, s.replicas}} : s.pools;
  for (const PoolSpec& p : specs) {
    FP_ASSIGN_OR_RETURN(BoundPool bound, BindPool(s, p));
    plan.pools.push_back(std::move(bound));
  }
  const auto primary = std::find_if(plan.pools.begin(), plan.pools.end(),
                                    [](const BoundPool& p) { return p.role != PoolRole::kPrefill; });
  FP_ASSERT(primary != plan.pools.end());  // the scenario reader requires a serving pool
  plan.primary = static_cast<size_t>(primary - plan.pools.begin());
  plan.engine = s.engine;
  plan.cuda_graphs = s.cuda_graphs;
  plan.router = s.router;
  plan.adapters = s.adapters;
  plan.disaggregation = s.disaggregation;
  plan.serve_faults = s.serve_faults;
  plan.transfer_link = s.transfer_link;
  plan.replication = s.replication;
  plan.autoscaling = s.autoscaling;
  plan.workload = s.workload;
  plan.slo = s.slo;
  plan.output = s.output;
  plan.notes = s.derived;
  if (s.speculation.enabled()) {
    plan.engine.speculation = s.speculation.config;
    for (const BoundPool& p : plan.pools) {
      if (!p.draft_memory) continue;
      plan.notes.push_back(fmt::format(
          "engine.speculation: the draft {} takes {:.2f} GiB of weights and {} bytes of KV per token per rank "
          "from the KV pool of the {} pool: {} -> {} blocks per replica",
          s.speculation.config.draft_model, p.draft_memory->weights_per_rank.gib(),
          p.draft_memory->kv_per_token_per_rank.count(), PoolRoleName(p.role), p.draft_memory->kv_blocks_before,
          p.draft_memory->kv_blocks_after));
    }
  }
  // Invalidations name tenants and adapters: resolve them against the workload's names
  // (a probe of the source; generators know every name up front).
  FP_ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> probe, MakeRequestSource(s.workload, s.seed));
  FP_ASSIGN_OR_RETURN(plan.invalidations, ResolveInvalidations(s.events, probe->names()));
  FP_ASSIGN_OR_RETURN(plan.admission, ResolveAdmission(s.admission, probe->names()));
  return plan;
}

}  // namespace fleetplan
