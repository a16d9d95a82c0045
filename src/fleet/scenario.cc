#include "fleetplan/fleet/scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "fleetplan/core/printable_name.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/core/scenario_schema.h"
#include "fleetplan/memory/fit_request.h"
#include "fleetplan/perf/aiconfigurator.h"
#include "fleetplan/perf/engine_version.h"
#include "fleetplan/perf/factory.h"
#include "fleetplan/perf/roofline.h"
#include "fleetplan/perf/step_cost.h"
#include "fleet/section_readers.h"

namespace fleetplan {
namespace {

namespace keys = scenario_keys;
using section::CheckOptionalMap;
using section::DurationText;
using section::NoteDefault;
using section::ReadChoice;

const std::vector<std::string> kAdmissionModes = {"optimistic", "reserve"};
const std::vector<std::string> kPreemptionModes = {"recompute"};
// vLLM's multi-step runs were 8 to 16 steps in practice; beyond this a run outlasts any
// arrival pattern worth modelling (and a typo such as 10000 is caught).
constexpr int64_t kMaxSchedulerSteps = 256;

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
  if (node["num_scheduler_steps"].present()) {
    FP_ASSIGN_OR_RETURN(c.num_scheduler_steps, node["num_scheduler_steps"].AsIntAtLeast(1));
    if (c.num_scheduler_steps > kMaxSchedulerSteps) {
      return node["num_scheduler_steps"].Error(
          fmt::format("expected at most {} steps per run, got {}", kMaxSchedulerSteps, c.num_scheduler_steps));
    }
  }
  FP_ASSIGN_OR_RETURN(std::string admission,
                      ReadChoice(node["admission"], "optimistic", "admission mode", kAdmissionModes));
  s.engine.admission = admission == "reserve" ? AdmissionMode::kReserve : AdmissionMode::kOptimistic;
  FP_ASSIGN_OR_RETURN(s.engine.reject_unreachable_deadline, node["reject_unreachable_deadline"].BoolOr(true));
  NoteDefault(node["policy"], c.policy, s);
  NoteDefault(node["chunk_tokens"], std::to_string(c.chunk_tokens), s);
  NoteDefault(node["max_decode_stall"], DurationText(c.max_decode_stall), s);
  NoteDefault(node["aging_per_step"], fmt::format("{:g}", c.aging_per_step), s);
  NoteDefault(node["max_waiting"], "0", s, "unbounded");
  NoteDefault(node["num_scheduler_steps"], "1", s, "every step scheduled on its own");
  NoteDefault(node["admission"], admission, s);
  NoteDefault(node["reject_unreachable_deadline"], "true", s);
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

// engine.prefix_cache. Absent, `enabled` is the version's default: vLLM's V1 engine (0.8
// on) caches prefixes unless told not to; V0 did not.
Status ReadPrefixCache(const YamlNode& cache, const EngineVersion& version, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(cache, keys::kPrefixCache));
  PrefixCacheConfig& c = s.engine.prefix_cache;
  const bool on_by_default = version.generation() != VllmGeneration::kV0;
  FP_ASSIGN_OR_RETURN(s.prefix_cache.enabled, cache["enabled"].BoolOr(on_by_default));
  c.enabled = s.prefix_cache.enabled;
  FP_ASSIGN_OR_RETURN(s.prefix_cache.eviction, ReadChoice(cache["eviction"], "lru", "eviction policy",
                                                          EvictionPolicyNames()));
  FP_ASSIGN_OR_RETURN(c.share_across_tenants, cache["share_across_tenants"].BoolOr(false));
  NoteDefault(cache["enabled"], on_by_default ? "true" : "false", s,
              fmt::format("the default of vLLM {}, {} engine", version.text, VllmGenerationName(version.generation())));
  if (c.enabled) {
    NoteDefault(cache["eviction"], s.prefix_cache.eviction, s);
    NoteDefault(cache["share_across_tenants"], "false", s);
  }
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

// The step model a scenario without `engine.step_model` gets on its (first) pool's GPU,
// model and layout.
DefaultStepModelChoice DefaultStepModelOf(const Scenario& s) {
  StepModelContext ctx;
  ctx.memory = s.fit.memory;
  return DefaultStepModel(ctx);
}

// Defaults inside engine.step_model and engine.cuda_graphs, which perf/ reads when the run
// is built: listed here so every filled-in value reaches `notes`.
void NotePerfDefaults(const YamlNode& step_model, const YamlNode& cuda_graphs, Scenario& s) {
  const bool given = step_model.present() && !step_model.IsNull();
  const Expected<std::string> kind =
      given ? step_model["kind"].StringOr("")
            : Expected<std::string>(DefaultStepModelOf(s).yaml == "{kind: roofline}"
                                        ? "roofline"
                                        : "aiconfigurator");
  if (kind.ok() && *kind == "roofline") {
    const RooflineParams d;
    const std::pair<const char*, double> efficiencies[] = {{"compute_efficiency", d.compute_efficiency},
                                                            {"attention_efficiency", d.attention_efficiency},
                                                            {"memory_efficiency", d.memory_efficiency}};
    for (const auto& [key, value] : efficiencies) {
      if (!given || !step_model[key].present()) {
        s.derived.push_back(fmt::format("engine.step_model.{}: {} (not given)", key, value));
      }
    }
  } else if (kind.ok() && *kind == "aiconfigurator") {
    const std::pair<const char*, std::string> defaults[] = {
        {"dir", fmt::format("the tables that ship for {}", s.fit.memory.gpu.name)},
        {"version", kDefaultAicVersion},
        {"moe_distribution", kDefaultAicMoeDistribution},
        {"collectives", "the measured tables under dir/comm"},
        {"other_kernels", "true"}};
    for (const auto& [key, value] : defaults) {
      if (!given || !step_model[key].present()) {
        s.derived.push_back(fmt::format("engine.step_model.{}: {} (not given)", key, value));
      }
    }
  } else if (kind.ok() && *kind == "table" && !step_model["extrapolate"].present()) {
    s.derived.push_back("engine.step_model.extrapolate: false (not given)");
  }
  if (!s.cuda_graphs.enabled()) return;
  if (!cuda_graphs["eager_fallback"].present()) s.derived.push_back("engine.cuda_graphs.eager_fallback: true (not given)");
  if (!cuda_graphs["eager_launch_per_layer"].present()) {
    s.derived.push_back(fmt::format("engine.cuda_graphs.eager_launch_per_layer: {} us (the default for tp {}; not given)",
                                    DefaultEagerLaunchPerLayer(s.fit.memory.layout.tp).micros(),
                                    s.fit.memory.layout.tp));
  }
}

// engine.version (perf/engine_version.h): the vLLM version modelled; absent, the default.
// Read before the sections whose defaults follow it; NoteEngineVersion lists the default.
Expected<EngineVersion> ReadEngineVersion(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return ParseEngineVersion(kDefaultEngineVersion);
  FP_ASSIGN_OR_RETURN(const std::string text, node.AsString());
  auto version = ParseEngineVersion(text);
  if (!version.ok()) return node.Error(version.status().message());
  return version;
}

void NoteEngineVersion(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) {
    s.derived.push_back(fmt::format("engine.version: {} (not given)", kDefaultEngineVersion));
  }
}

// Step model kinds measured end to end on a running engine: their times already hold the
// engine's CPU time per step, so no host overhead is added by default.
bool MeasuresWholeSteps(const YamlNode& step_model) {
  if (!step_model.present() || step_model.IsNull() || !step_model.IsMap()) return false;
  const Expected<std::string> kind = step_model["kind"].StringOr("");
  return kind.ok() && (*kind == "affine" || *kind == "table");
}

// engine.host_overhead (perf/host_overhead.h): a duration is the per-step term; a mapping
// states any of per_step, per_sequence and per_prefill_token (each absent one is 0).
// Absent: the version's default (perf/engine_version.h) for a step model built from
// kernels, 0 for a measured one.
Status ReadHostOverhead(const YamlNode& node, const YamlNode& step_model, const EngineVersion& version, Scenario& s) {
  if (!node.present() && MeasuresWholeSteps(step_model)) {
    s.derived.push_back("engine.host_overhead: 0 (a measured step model holds the engine's CPU time; not given)");
    return Status::Ok();
  }
  if (!node.present()) {
    const int64_t tp = std::max<int64_t>(1, s.fit.memory.layout.tp);
    const HostOverhead h = DefaultHostOverhead(version, tp);
    s.engine.host_overhead = h.per_step;
    s.derived.push_back(fmt::format(
        "engine.host_overhead: {:.3f} ms per step, the default of vLLM {} ({} engine{}; not given)",
        h.per_step.millis(), version.text, VllmGenerationName(version.generation()),
        version.generation() == VllmGeneration::kV0 ? fmt::format(", tp {}", tp) : std::string()));
    return Status::Ok();
  }
  if (node.IsNull()) return Status::Ok();
  if (!node.IsMap()) {
    FP_ASSIGN_OR_RETURN(s.engine.host_overhead, ReadStepTime(node));
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kHostOverhead));
  const std::pair<const char*, Duration*> terms[] = {{"per_step", &s.engine.host_overhead},
                                                     {"per_sequence", &s.engine.host_per_sequence},
                                                     {"per_prefill_token", &s.engine.host_per_prefill_token}};
  for (const auto& [key, out] : terms) {
    const YamlNode term = node[key];
    if (!term.present() || term.IsNull()) {
      s.derived.push_back(fmt::format("engine.host_overhead.{}: 0 (not given)", key));
      continue;
    }
    FP_ASSIGN_OR_RETURN(*out, ReadStepTime(term));
  }
  return Status::Ok();
}

Status ReadEngine(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kEngine));
  FP_RETURN_IF_ERROR(ReadScheduler(node["scheduler"], s));
  s.engine.block_tokens = s.fit.memory.block_tokens;

  FP_ASSIGN_OR_RETURN(const EngineVersion version, ReadEngineVersion(node["version"]));
  FP_RETURN_IF_ERROR(ReadPrefixCache(node["prefix_cache"], version, s));
  FP_ASSIGN_OR_RETURN(std::string preemption,
                      ReadChoice(node["preemption"], "recompute", "preemption mode", kPreemptionModes));
  (void)preemption;

  const YamlNode step_model = node["step_model"];
  if (step_model.present() && !step_model.IsNull()) {
    s.step_model = step_model;
  } else {
    s.derived.push_back(fmt::format("engine.step_model: {} (not given)",
                                    DefaultStepModelOf(s).reason));
  }
  NoteEngineVersion(node["version"], s);
  // How the version's scheduler admits under KV pressure (engine.h): V0 admits a prompt
  // only when all its blocks fit above a 1 % watermark, in any step; V1 per chunk, and in
  // no step that preempted.
  const bool v0 = version.generation() == VllmGeneration::kV0;
  s.engine.admit_in_preempting_step = v0;
  s.engine.admit_whole_prompt = v0;
  s.engine.admission_watermark = v0 ? kV0AdmissionWatermark : 0.0;
  FP_RETURN_IF_ERROR(ReadHostOverhead(node["host_overhead"], step_model, version, s));
  FP_ASSIGN_OR_RETURN(s.cuda_graphs, CudaGraphPolicy::Parse(node["cuda_graphs"]));
  NotePerfDefaults(step_model, node["cuda_graphs"], s);
  FP_RETURN_IF_ERROR(section::ReadSpeculation(node["speculation"], s));
  return section::ReadAdapters(node["adapters"], s);
}

Status ReadHardware(const YamlNode& node, Scenario& s) {
  // Keys and hardware.gpu were checked by the fit reader.
  FP_ASSIGN_OR_RETURN(s.nodes, node["nodes"].IntOr(1));
  if (s.nodes < 1) return node["nodes"].Error(fmt::format("expected an integer >= 1, got {}", s.nodes));
  FP_ASSIGN_OR_RETURN(s.gpus_per_node, node["gpus_per_node"].IntOr(8));
  if (s.gpus_per_node < 1) {
    return node["gpus_per_node"].Error(fmt::format("expected an integer >= 1, got {}", s.gpus_per_node));
  }
  NoteDefault(node["nodes"], "1", s);
  NoteDefault(node["gpus_per_node"], "8", s);
  const Catalog& catalog = *s.catalog;
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
    const Expected<ResolvedFit> fit = ResolveFitSpec(spec, *s.catalog);
    if (!fit.ok()) return fit.status();
    FP_RETURN_IF_ERROR(CheckNativeFormats(spec, fit->request));
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

Status ReadDeployment(const YamlNode& node, const YamlDocument& doc, Scenario& s) {
  if (node["pools"].present()) {
    FP_RETURN_IF_ERROR(ReadPools(node, doc, s));
  } else {
    FP_ASSIGN_OR_RETURN(s.replicas, node["replicas"].IntOr(1));
    if (s.replicas < 1) return node["replicas"].Error(fmt::format("expected an integer >= 1, got {}", s.replicas));
    NoteDefault(node["replicas"], "1", s);
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
  return section::ReadDisaggregation(node["disaggregation"], s);
}

// A policy's own section given with another policy is an error, not ignored.
Status CheckPolicySection(const YamlNode& node, std::string_view key, std::string_view policy,
                          const std::string& chosen) {
  if (!node[key].present() || chosen == policy) return Status::Ok();
  return node[key].Error(fmt::format("`{}` applies to policy: {}, not {}", key, policy, chosen));
}

Status ReadRouter(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kRouter));
  RouterConfig& r = s.router;
  FP_ASSIGN_OR_RETURN(r.policy, ReadChoice(node["policy"], "round-robin", "router policy", RouterNames()));
  FP_ASSIGN_OR_RETURN(r.telemetry_delay, node["telemetry_delay"].DurationOr(Duration()));
  FP_ASSIGN_OR_RETURN(r.precise, node["precise"].BoolOr(false));
  NoteDefault(node["policy"], r.policy, s);
  NoteDefault(node["telemetry_delay"], "0", s, "the view refreshes at every decision");
  NoteDefault(node["precise"], "false", s);
  // Each policy's own section: read by its registry row, an error under another policy.
  const RouterPolicy* chosen = FindRouterPolicy(r.policy);
  FP_ASSERT(chosen != nullptr);  // ReadChoice checked the name against the registry
  for (const RouterPolicy& p : RouterPolicies()) {
    if (p.section.empty()) continue;
    if (&p == chosen) {
      FP_RETURN_IF_ERROR(p.read(node[p.section], r, s.derived));
    } else {
      FP_RETURN_IF_ERROR(CheckPolicySection(node, p.section, p.name, r.policy));
    }
  }
  return section::ReadReplication(node["replication"], s);
}

Status ReadOutput(const YamlNode& node, Scenario& s) {
  FP_RETURN_IF_ERROR(CheckOptionalMap(node, keys::kOutput));
  FP_ASSIGN_OR_RETURN(s.output.dir, node["dir"].StringOr("out/" + s.name));
  if (s.output.dir.empty()) return node["dir"].Error("expected a non-empty folder name");
  FP_ASSIGN_OR_RETURN(s.output.requests, node["requests"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(s.output.timeline, node["timeline"].BoolOr(false));
  NoteDefault(node["dir"], s.output.dir, s);
  NoteDefault(node["requests"], "false", s);
  NoteDefault(node["timeline"], "false", s);
  FP_ASSIGN_OR_RETURN(s.output.timeseries_interval, node["timeseries_interval"].DurationOr(Ms(1000)));
  if (s.output.timeseries_interval <= Duration()) {
    return node["timeseries_interval"].Error("expected a duration > 0 (the time series window, e.g. 1s)");
  }
  NoteDefault(node["timeseries_interval"], "1s", s);
  FP_ASSIGN_OR_RETURN(s.output.html, node["html"].BoolOr(true));
  NoteDefault(node["html"], "true", s);
  return Status::Ok();
}

// A generated class whose every request is longer than the model's context window is an
// input error; one that only may be (a distribution reaching past it) is noted, and those
// requests are rejected at run time with a reason starting "context", as for traces.
Status CheckContext(const YamlNode& workload, Scenario& s) {
  const int64_t max_context = s.fit.context;  // model.max_context as given, else the catalog's
  if (max_context <= 0) return Status::Ok();
  for (const ClassSpec& c : s.workload.classes) {
    int64_t least = c.output_tokens.MinTokens();
    int64_t most = c.output_tokens.MaxTokens();
    bool bounded = c.output_tokens.HasKnownMax();
    for (const SegmentSpec& segment : c.prompt) {
      if (!segment.tokens) {  // history: the previous turns, unbounded here
        bounded = false;
        continue;
      }
      least += segment.tokens->MinTokens();
      most += segment.tokens->MaxTokens();
      bounded = bounded && segment.tokens->HasKnownMax();
    }
    const YamlNode node = workload["classes"][c.name];
    if (least > max_context) {
      return node.Error(fmt::format("every request of this class has at least {} tokens (prompt + output), more "
                                    "than model.max_context ({}); shorten the prompt or the output",
                                    least, max_context));
    }
    if (bounded && most > max_context) {
      s.derived.push_back(fmt::format("workload.classes.{}: requests of up to {} tokens can exceed "
                                      "model.max_context ({}); those are rejected (reason \"context\")",
                                      c.name, most, max_context));
    }
  }
  return Status::Ok();
}

// The catalog: built-in, then the scenario's `catalog:` files, then --catalog's.
Status ReadCatalog(const YamlNode& node, const ScenarioLoadOptions& options, Scenario& s) {
  FP_ASSIGN_OR_RETURN(std::vector<std::string> paths, Catalog::ScenarioCatalogPaths(node, s.dir));
  paths.insert(paths.end(), options.catalogs.begin(), options.catalogs.end());
  if (paths.empty()) {
    s.catalog = std::shared_ptr<const Catalog>(&Catalog::Builtin(), [](const Catalog*) {});
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(Catalog catalog, Catalog::WithUserFiles(paths));
  s.catalog = std::make_shared<const Catalog>(std::move(catalog));
  for (const std::string& path : paths) {
    FP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
    s.catalog_files.push_back(ScenarioInput{path, DigestOf(bytes)});
  }
  for (const std::string& entry : s.catalog->overridden()) {
    s.derived.push_back(fmt::format("catalog: {} overrides the built-in entry", entry));
  }
  return Status::Ok();
}

Expected<Scenario> ReadScenario(std::shared_ptr<const YamlDocument> doc, std::string dir, std::string digest,
                                const ScenarioLoadOptions& options) {
  Scenario s;
  s.document = doc;
  s.display_name = doc->display_name();
  s.dir = std::move(dir);
  s.digest = std::move(digest);
  const YamlNode root = doc->root();
  FP_RETURN_IF_ERROR(ReadCatalog(root["catalog"], options, s));
  // Model, hardware.gpu, deployment layout, memory knobs; checks the root's keys too.
  FP_ASSIGN_OR_RETURN(FitSpec fit_spec,
                      ReadFitScenario(*doc, PrimaryPoolRole(root["deployment"]), ValueOrigin::Flag("--pool")));
  // The fit reader also serves `fleetplan fit`, whose messages for absent inputs name its
  // flags; a scenario names its keys instead.
  FP_RETURN_IF_ERROR(root["model"].RequirePresent());
  FP_RETURN_IF_ERROR(root["hardware"].RequirePresent());
  FP_RETURN_IF_ERROR(root["hardware"]["gpu"].RequirePresent());
  Expected<ResolvedFit> fit = ResolveFitSpec(fit_spec, *s.catalog);
  if (!fit.ok() && fit.status().code() == StatusCode::kUsage) {
    // With model and GPU present, the only input left to miss is the context.
    return root["model"].Error("the model states no max_context: set model.max_context");
  }
  if (!fit.ok()) return fit.status();
  FP_RETURN_IF_ERROR(CheckNativeFormats(fit_spec, fit->request));
  s.fit = fit->request;
  for (const auto& d : fit->derived) s.derived.push_back(d);

  FP_ASSIGN_OR_RETURN(s.name, root["name"].StringOr("scenario"));
  if (s.name.empty()) return root["name"].Error("expected a non-empty name");
  if (Status printable = CheckPrintableName(s.name); !printable.ok()) return root["name"].Error(printable.message());
  NoteDefault(root["name"], s.name, s);
  NoteDefault(root["version"], "1", s);
  int64_t seed = 0;
  if (root["seed"].present() && !root["seed"].IsNull()) {
    FP_ASSIGN_OR_RETURN(seed, root["seed"].AsIntAtLeast(0));
  }
  if (!root["seed"].present()) s.derived.push_back("seed: 0 (not given)");
  s.seed = static_cast<uint64_t>(seed);

  FP_RETURN_IF_ERROR(ReadHardware(root["hardware"], s));
  FP_RETURN_IF_ERROR(ReadDeployment(root["deployment"], *doc, s));
  FP_RETURN_IF_ERROR(section::ReadFaults(root["faults"], s));
  FP_RETURN_IF_ERROR(ReadEngine(root["engine"], s));
  FP_RETURN_IF_ERROR(ReadRouter(root["router"], s));
  FP_ASSIGN_OR_RETURN(s.workload, ParseWorkloadSpec(root["workload"]));
  FP_RETURN_IF_ERROR(CheckContext(root["workload"], s));
  FP_RETURN_IF_ERROR(section::ReadEvents(root["workload"]["events"], s));
  if (s.workload.adapters && !s.adapters.enabled) {
    s.derived.push_back("engine.adapters: not given; adapters load instantly and take no memory");
  }
  if (root["slo"].present() && !root["slo"].IsNull()) {
    FP_ASSIGN_OR_RETURN(s.slo, ParseSlo(root["slo"]));
  }
  FP_RETURN_IF_ERROR(section::ReadAdmission(root["admission"], s));
  FP_RETURN_IF_ERROR(section::ReadAutoscaling(root["autoscaling"], s));
  FP_RETURN_IF_ERROR(ReadOutput(root["output"], s));
  return s;
}

}  // namespace

Expected<Scenario> LoadScenarioText(std::string_view text, std::string display_name, std::string dir,
                                    const ScenarioLoadOptions& options) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  return ReadScenario(std::make_shared<const YamlDocument>(std::move(doc)), std::move(dir), DigestOf(text), options);
}

Expected<Scenario> LoadScenarioDocument(std::shared_ptr<const YamlDocument> doc, std::string dir, std::string digest,
                                        const ScenarioLoadOptions& options) {
  return ReadScenario(std::move(doc), std::move(dir), std::move(digest), options);
}

Expected<Scenario> LoadScenario(const std::string& path, const ScenarioLoadOptions& options) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(YamlDocument::ReadablePath(path)));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return LoadScenarioText(text, YamlDocument::DisplayName(path), dir, options);
}

}  // namespace fleetplan
