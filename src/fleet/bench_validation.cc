#include "fleetplan/fleet/bench_validation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <ranges>
#include <utility>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/fleet/fidelity.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/metrics/percentile.h"
#include "fleetplan/workload/bench_client.h"
#include "fleet/sample_stats.h"

namespace fleetplan {
namespace {

using fleet_internal::Mean;
using fleet_internal::Round4;

const std::vector<std::string> kSetupKeys = {
    "model",           "gpu",           "tp",   "pp",    "nodes", "gpus_per_node", "intra_node_link",
    "inter_node_link", "max_model_len", "seed", "engine"};
const std::vector<std::string> kEngineKeys = {"version",
                                              "max_num_seqs",
                                              "max_num_batched_tokens",
                                              "block_size",
                                              "gpu_memory_utilization",
                                              "enable_chunked_prefill",
                                              "enable_prefix_caching",
                                              "num_scheduler_steps",
                                              "weight_dtype",
                                              "kv_cache_dtype",
                                              "step_model"};

// vLLM's defaults for what a setup may leave out (vLLM EngineArgs).
constexpr int64_t kVllmMaxNumSeqs = 256;
constexpr int64_t kVllmBlockSize = 16;

// The scenario a setup fills in: every value the setup gives replaces one of these, located
// where the setup writes it. The workload only names the run: the benchmark client's
// requests replace it (RunOptions::source).
constexpr std::string_view kBaseScenario = R"(version: 1
name: validate
model:
  name: unset
hardware:
  gpu: unset
deployment:
  replicas: 1
engine:
  scheduler:
    policy: decode-first
    max_running: 256
workload:
  requests: 1
  arrival: {process: poisson, rate: 1/s}
  classes:
    default:
      share: 1
      prompt: [{segment: unique, tokens: 1}]
      output_tokens: 1
output:
  html: false
)";

// vLLM's dtype spellings -> the catalog's; "auto" -> nullopt (the checkpoint's).
std::optional<std::string> CatalogDType(const std::string& v) {
  if (v == "auto") return std::nullopt;
  if (v == "bfloat16") return "bf16";
  if (v == "float16" || v == "half") return "fp16";
  if (v == "fp8_e4m3" || v == "fp8_e5m2") return "fp8";
  return v;
}

// The scenario values a setup gives: its own nodes where a value is the setup's as written,
// and derived scalars located at the setup node they come from (a mapped model name, the
// scheduling policy chunked prefill implies), so every error points into the setup.
struct ScenarioOverrides {
  std::vector<YamlOverride> list;
  std::vector<YamlDocument> derived;

  void Set(const std::string& path, const YamlNode& value) { list.push_back(YamlOverride{path, value}); }
  void SetDerived(const std::string& path, std::string text, const YamlNode& at) {
    derived.push_back(YamlDocument::Scalar(std::move(text), at));
    list.push_back(YamlOverride{path, derived.back().root()});
  }
};

// The status of a read whose value is not kept.
template <typename T>
Status StatusOf(const Expected<T>& e) {
  return e.ok() ? Status::Ok() : e.status();
}

template <typename T>
Status CheckCatalogName(const YamlNode& node, const Expected<T>& lookup) {
  return lookup.ok() ? Status::Ok() : node.Error(lookup.status().message());
}

Expected<BenchSetup> ReadSetup(const YamlDocument& doc, const std::string& path, std::string digest) {
  BenchSetup s;
  s.path = path;
  s.digest = std::move(digest);
  ScenarioOverrides r;
  const YamlNode root = doc.root();
  if (!root.IsMap()) return root.Error("expected a mapping (a validate setup: model, gpu, tp, pp, engine, ...)");
  FP_RETURN_IF_ERROR(root.CheckKeys(kSetupKeys));
  const YamlNode engine = root["engine"];
  if (engine.present() && !engine.IsMap()) return engine.Error("expected a mapping of vLLM engine flags");
  FP_RETURN_IF_ERROR(engine.CheckKeys(kEngineKeys));
  const Catalog& catalog = Catalog::Builtin();

  // Model: a catalog name, or a Hugging Face name mapped as a run directory's is.
  FP_ASSIGN_OR_RETURN(s.model, root["model"].AsString());
  if (catalog.Model(s.model).ok()) {
    s.catalog_model = s.model;
  } else if (std::optional<std::string> mapped = CatalogModelForHfName(s.model)) {
    s.catalog_model = *mapped;
    s.notes.push_back(
        fmt::format("model {} is catalog model {} (the name after the organisation, lowercased, "
                    "shortened at '-' until the catalog knows it)",
                    s.model, s.catalog_model));
  } else {
    return root["model"].Error(
        fmt::format("'{}' is neither a catalog model nor a Hugging Face name that maps to "
                    "one (the name after the organisation, lowercased, shortened at '-'); "
                    "catalog models: {}",
                    s.model, fmt::join(catalog.models() | std::views::keys, ", ")));
  }
  r.SetDerived("model.name", s.catalog_model, root["model"]);

  FP_ASSIGN_OR_RETURN(s.gpu, root["gpu"].AsString());
  FP_RETURN_IF_ERROR(CheckCatalogName(root["gpu"], catalog.Gpu(s.gpu)));
  r.Set("hardware.gpu", root["gpu"]);

  FP_ASSIGN_OR_RETURN(s.tp, root["tp"].present() ? root["tp"].AsIntAtLeast(1) : Expected<int64_t>(int64_t{1}));
  FP_ASSIGN_OR_RETURN(s.pp, root["pp"].present() ? root["pp"].AsIntAtLeast(1) : Expected<int64_t>(int64_t{1}));
  if (root["tp"].present()) r.Set("deployment.tp", root["tp"]);
  if (root["pp"].present()) r.Set("deployment.pp", root["pp"]);
  int64_t gpus_per_node = 8;
  if (root["gpus_per_node"].present()) {
    FP_ASSIGN_OR_RETURN(gpus_per_node, root["gpus_per_node"].AsIntAtLeast(1));
    r.Set("hardware.gpus_per_node", root["gpus_per_node"]);
  }
  if (root["nodes"].present()) {
    FP_RETURN_IF_ERROR(StatusOf(root["nodes"].AsIntAtLeast(1)));
    r.Set("hardware.nodes", root["nodes"]);
  } else {
    const int64_t nodes = (s.tp * s.pp + gpus_per_node - 1) / gpus_per_node;
    r.SetDerived("hardware.nodes", std::to_string(nodes), root);
    if (nodes > 1) {
      s.notes.push_back(
          fmt::format("nodes not given: {} ({} GPUs of tp x pp over {} per node)", nodes, s.tp * s.pp, gpus_per_node));
    }
  }
  for (const char* key : {"intra_node_link", "inter_node_link"}) {
    if (!root[key].present()) continue;
    FP_ASSIGN_OR_RETURN(const std::string link, root[key].AsString());
    FP_RETURN_IF_ERROR(CheckCatalogName(root[key], catalog.Link(link)));
    r.Set(std::string("hardware.") + key, root[key]);
  }
  if (root["max_model_len"].present()) {
    FP_RETURN_IF_ERROR(StatusOf(root["max_model_len"].AsIntAtLeast(1)));
    r.Set("model.max_context", root["max_model_len"]);
  }
  if (root["seed"].present()) {
    FP_ASSIGN_OR_RETURN(const int64_t seed, root["seed"].AsIntAtLeast(0));
    s.seed = static_cast<uint64_t>(seed);
    r.Set("seed", root["seed"]);
  }

  // Engine flags, by vLLM's names.
  if (engine["version"].present()) {
    FP_ASSIGN_OR_RETURN(s.engine_version, engine["version"].AsString());
    r.Set("engine.version", engine["version"]);
  }
  FP_RETURN_IF_ERROR(StatusOf(engine["max_num_batched_tokens"].AsIntAtLeast(1)));  // required: its default varies
  r.Set("engine.scheduler.max_batched_tokens", engine["max_num_batched_tokens"]);
  if (engine["max_num_seqs"].present()) {
    FP_RETURN_IF_ERROR(StatusOf(engine["max_num_seqs"].AsIntAtLeast(1)));
    r.Set("engine.scheduler.max_running", engine["max_num_seqs"]);
  } else {
    s.notes.push_back(fmt::format("engine.max_num_seqs not given: {} (vLLM's default)", kVllmMaxNumSeqs));
  }
  if (engine["block_size"].present()) {
    FP_RETURN_IF_ERROR(StatusOf(engine["block_size"].AsIntAtLeast(1)));
    r.Set("engine.kv.block_tokens", engine["block_size"]);
  } else {
    s.notes.push_back(fmt::format("engine.block_size not given: {} (vLLM's default)", kVllmBlockSize));
  }
  if (engine["gpu_memory_utilization"].present()) {
    FP_ASSIGN_OR_RETURN(const double u, engine["gpu_memory_utilization"].AsDoubleInRange(0, 1));
    if (u <= 0) return engine["gpu_memory_utilization"].Error("expected a share in (0, 1], got 0");
    r.Set("deployment.gpu_memory_utilization", engine["gpu_memory_utilization"]);
  } else {
    s.notes.push_back("engine.gpu_memory_utilization not given: 0.9 (vLLM's default)");
  }
  if (engine["enable_chunked_prefill"].present()) {
    FP_ASSIGN_OR_RETURN(s.chunked_prefill, engine["enable_chunked_prefill"].AsBool());
  } else {
    s.notes.push_back("engine.enable_chunked_prefill not given: true (vLLM's V1 engine always chunks prefills)");
  }
  // Chunked prefill: running decodes first, the rest of max_num_batched_tokens to prompt
  // chunks (vLLM's V1 and chunked V0 schedulers). Without: prompts first, whole.
  r.SetDerived("engine.scheduler.policy", s.chunked_prefill ? "decode-first" : "prefill-first",
               engine["enable_chunked_prefill"].present() ? engine["enable_chunked_prefill"] : root);
  if (engine["enable_prefix_caching"].present()) {
    FP_RETURN_IF_ERROR(StatusOf(engine["enable_prefix_caching"].AsBool()));
    r.Set("engine.prefix_cache.enabled", engine["enable_prefix_caching"]);
  }
  if (engine["num_scheduler_steps"].present()) {
    FP_ASSIGN_OR_RETURN(s.num_scheduler_steps, engine["num_scheduler_steps"].AsIntAtLeast(1));
    // Multi-step runs are simulated (engine.scheduler.num_scheduler_steps); the host time
    // they save is not credited: the version's host overhead is per step.
    r.Set("engine.scheduler.num_scheduler_steps", engine["num_scheduler_steps"]);
    if (s.num_scheduler_steps > 1) {
      s.notes.push_back(fmt::format(
          "engine.num_scheduler_steps {}: decode runs of {} steps admit nothing until they end; the host time a run "
          "saves is not credited; compare TPOT, not ITL (a streamed chunk carries about {} tokens)",
          s.num_scheduler_steps, s.num_scheduler_steps, s.num_scheduler_steps));
    }
  }
  for (const auto& [key, target] : {std::pair<const char*, const char*>{"weight_dtype", "model.weight_dtype"},
                                    std::pair<const char*, const char*>{"kv_cache_dtype", "model.kv_dtype"}}) {
    if (!engine[key].present()) continue;
    FP_ASSIGN_OR_RETURN(const std::string v, engine[key].AsString());
    const std::optional<std::string> dtype = CatalogDType(v);
    if (!dtype) continue;  // auto: the checkpoint's
    if (!ParseDType(*dtype).ok()) {
      return engine[key].Error(fmt::format("unknown dtype '{}' (valid: auto, bfloat16, float16, fp8, fp8_e4m3, {})", v,
                                           fmt::join(DTypeNames(), ", ")));
    }
    r.SetDerived(target, *dtype, engine[key]);
  }
  if (engine["step_model"].present()) {
    r.Set("engine.step_model", engine["step_model"]);
  } else {
    s.notes.push_back("engine.step_model not given: the scenario's default step model for the GPU");
  }
  if (s.engine_version.empty()) {
    s.notes.push_back("engine.version not given: the scenario's default version (its host overhead per step)");
  } else {
    s.notes.push_back(fmt::format(
        "engine.version {}: the scenario's engine.version, which sets the host overhead per step; the setup's "
        "other flags apply as written (no other default of that version is filled in)",
        s.engine_version));
  }

  FP_ASSIGN_OR_RETURN(const YamlDocument base,
                      YamlDocument::LoadString(kBaseScenario, path + " (the scenario built from it)"));
  FP_ASSIGN_OR_RETURN(YamlDocument scenario, YamlDocument::WithOverrides(base, r.list));
  s.scenario = std::make_shared<const YamlDocument>(std::move(scenario));
  return s;
}

// ---------------------------------------------------------------------------------------
// Statistics.




Json OrNull(std::optional<double> v) {
  return v ? Json(Round4(*v)) : Json();
}

struct Stats {
  std::optional<double> mean;
  std::optional<double> median;
  std::optional<double> p99;
};

Stats Of(const std::vector<double>& v) {
  if (v.empty()) return {};
  Stats s;
  s.mean = Mean(v);
  s.median = InterpolatedPercentile(v, 50);
  s.p99 = InterpolatedPercentile(v, 99);
  return s;
}

Json StatsJson(const Stats& s) {
  return Json{{"mean", OrNull(s.mean)}, {"median", OrNull(s.median)}, {"p99", OrNull(s.p99)}};
}

std::optional<double> ErrorPct(std::optional<double> sim, std::optional<double> measured) {
  if (!sim || !measured || !(*measured > 0)) return std::nullopt;
  return 100.0 * (*sim - *measured) / *measured;
}

Json MetricJson(const Stats& measured, const Stats& sim) {
  Json j;
  j["measured_ms"] = StatsJson(measured);
  j["simulated_ms"] = StatsJson(sim);
  j["mean_error_pct"] = OrNull(ErrorPct(sim.mean, measured.mean));
  j["median_error_pct"] = OrNull(ErrorPct(sim.median, measured.median));
  j["p99_error_pct"] = OrNull(ErrorPct(sim.p99, measured.p99));
  return j;
}

// Per-request latencies in ms; TPOT over requests with 2 or more tokens; ITL pooled.
struct Latencies {
  std::vector<double> ttft, tpot, e2e, itl;
};

std::string RateText(double rate) {
  return fmt::format("{:g}/s", rate);
}

std::string PointLabel(const VllmBenchResult& r) {
  std::string label = r.request_rate ? "rate " + RateText(*r.request_rate) : "rate inf";
  if (r.max_concurrency) label = fmt::format("concurrency {}, {}", *r.max_concurrency, label);
  if (r.burstiness != 1.0) label += fmt::format(", burstiness {:g}", r.burstiness);
  return label;
}

// The requests the client sends, and the measured latencies, from one file.
struct PointInput {
  std::vector<BenchClientRequest> requests;
  Latencies measured;
  Stats measured_e2e_stated;  // aggregate-only: E2E from the file (or an estimate)
  bool detailed = false;
  std::vector<std::string> notes;
};

PointInput FromDetailed(const VllmBenchResult& r) {
  PointInput in;
  in.detailed = true;
  int64_t failed = 0, zero_output = 0;
  for (const VllmBenchRequest& q : r.requests) {
    if (q.failed) {
      ++failed;
      continue;
    }
    BenchClientRequest c;
    c.prompt_tokens = std::max<int64_t>(q.input_tokens, 1);
    c.output_tokens = std::max<int64_t>(q.output_tokens, 1);
    if (q.output_tokens < 1) ++zero_output;
    in.requests.push_back(c);
    in.measured.ttft.push_back(q.ttft.millis());
    in.measured.e2e.push_back(q.e2e.millis());
    if (q.output_tokens > 1) {
      in.measured.tpot.push_back((q.e2e - q.ttft).millis() / static_cast<double>(q.output_tokens - 1));
    }
    for (Duration gap : q.itls) in.measured.itl.push_back(gap.millis());
  }
  in.notes.push_back(
      fmt::format("{} requests replayed with their own prompt and output lengths (input_lens, "
                  "output_lens)",
                  in.requests.size()));
  if (failed > 0) {
    in.notes.push_back(
        fmt::format("{} failed requests (errors[i] non-empty) are neither replayed nor measured", failed));
  }
  if (zero_output > 0) {
    in.notes.push_back(fmt::format("{} requests with output_lens 0 replayed with 1 output token", zero_output));
  }
  // The file's own figures against the ones recomputed here (a client that computes them
  // differently would show here, not as a simulation error).
  const auto check = [&](const char* metric, const std::vector<double>& v) {
    const std::optional<double> stated = r.Stated("mean", metric);
    if (!stated || v.empty() || !(*stated > 0)) return;
    const double recomputed = Mean(v);
    if (std::abs(recomputed - *stated) > 0.01 * *stated) {
      in.notes.push_back(fmt::format("the file states mean_{}_ms {:.2f}; recomputed from its requests: {:.2f}", metric,
                                     *stated, recomputed));
    }
  };
  check("ttft", in.measured.ttft);
  check("tpot", in.measured.tpot);
  return in;
}

PointInput FromAggregates(const VllmBenchResult& r) {
  PointInput in;
  const int64_t n = *r.completed;
  const auto mean_of = [&](int64_t total) {
    return std::max<int64_t>(1,
                             static_cast<int64_t>(std::llround(static_cast<double>(total) / static_cast<double>(n))));
  };
  const int64_t input = mean_of(*r.total_input_tokens);
  const int64_t output = mean_of(*r.total_output_tokens);
  in.requests.assign(static_cast<size_t>(n), BenchClientRequest{input, output});
  in.notes.push_back(
      fmt::format("the file has no per-request lengths: lengths synthesised, {} requests (completed) "
                  "of {} prompt tokens (total_input_tokens {} / completed) and {} output tokens "
                  "(total_output_tokens {} / completed)",
                  n, input, *r.total_input_tokens, output, *r.total_output_tokens));
  in.measured_e2e_stated.mean = r.Stated("mean", "e2el");
  in.measured_e2e_stated.median = r.Stated("median", "e2el");
  in.measured_e2e_stated.p99 = r.Stated("p99", "e2el");
  if (!in.measured_e2e_stated.mean) {
    in.measured_e2e_stated.mean =
        *r.Stated("mean", "ttft") + *r.Stated("mean", "tpot") * static_cast<double>(output - 1);
    in.notes.push_back(
        fmt::format("the file states no mean_e2el_ms: measured mean E2E estimated as mean TTFT + mean "
                    "TPOT x (mean output - 1) = {:.2f} ms",
                    *in.measured_e2e_stated.mean));
  }
  return in;
}

Stats StatedStats(const VllmBenchResult& r, const char* metric) {
  Stats s;
  s.mean = r.Stated("mean", metric);
  s.median = r.Stated("median", metric);
  s.p99 = r.Stated("p99", metric);
  return s;
}

Json RequestRateJson(const VllmBenchResult& r) {
  return r.request_rate ? Json(*r.request_rate) : Json("inf");
}

}  // namespace

Expected<BenchSetup> ParseBenchSetup(std::string_view text, const std::string& path) {
  FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadString(text, path));
  return ReadSetup(doc, path, DigestOf(text));
}

Expected<BenchSetup> LoadBenchSetup(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return ParseBenchSetup(text, path);
}

Expected<BenchValidation> ValidateBenchResults(const BenchSetup& setup, const std::vector<VllmBenchResult>& results,
                                               const BenchReplayOptions& replay) {
  const std::string dir = std::filesystem::path(setup.path).parent_path().string();
  FP_ASSIGN_OR_RETURN(const Scenario scenario,
                      LoadScenarioDocument(setup.scenario, dir.empty() ? "." : dir, setup.digest));
  FP_ASSIGN_OR_RETURN(const FleetPlan plan, Bind(scenario));
  const BoundPool& pool = plan.primary_pool();
  if (replay.warm_prefix_cache && !plan.engine.prefix_cache.enabled) {
    return InvalidInput(
        fmt::format("{}: a warm prefix cache needs one: the setup's engine.enable_prefix_caching is "
                    "not true",
                    setup.path));
  }

  BenchValidation out;
  Json& j = out.json;
  j["setup"] = {{"path", setup.path},
                {"digest", setup.digest},
                {"model", setup.model},
                {"catalog_model", setup.catalog_model},
                {"gpu", setup.gpu},
                {"tp", setup.tp},
                {"pp", setup.pp},
                {"engine_version", setup.engine_version.empty() ? Json() : Json(setup.engine_version)},
                {"max_num_seqs", plan.engine.scheduler.max_running},
                {"max_num_batched_tokens", plan.engine.scheduler.max_batched_tokens},
                {"block_size", plan.engine.block_tokens},
                {"scheduler", plan.engine.scheduler.policy},
                {"kv_blocks", pool.kv.kv_blocks_per_replica},
                {"seed", plan.seed}};
  j["step_model"] = pool.cost->Describe();
  Json notes = Json::array();
  for (const std::string& n : setup.notes) notes.push_back(n);
  notes.push_back(fmt::format("KV cache: {} blocks of {} tokens ({} tokens) per replica, from the memory plan",
                              pool.kv.kv_blocks_per_replica, pool.kv.block_tokens,
                              pool.kv.kv_blocks_per_replica * pool.kv.block_tokens));
  if (replay.warm_prefix_cache) {
    notes.push_back(
        "warm prefix cache: each file's prompts were sent once (all at once, one output token) before its "
        "requests, which find them in the prefix cache; prompts are otherwise unique content (result "
        "files carry no token ids)");
  } else {
    notes.push_back("prompts replayed as unique content: no prefix-cache hits (result files carry no token ids)");
  }
  notes.push_back(
      "TTFT and E2E are simulated from the request's arrival at the engine: the client, HTTP and "
      "detokenisation time of the measured ones is not simulated");
  j["notes"] = notes;

  Json points = Json::array();
  std::map<std::string, std::vector<double>> abs_errors;
  for (const VllmBenchResult& r : results) {
    PointInput in = r.detailed() ? FromDetailed(r) : FromAggregates(r);
    if (in.requests.empty()) {
      return InvalidInput(fmt::format("{}: every request failed (errors[i] non-empty): nothing to replay", r.path));
    }
    if (!setup.model.empty() && !r.model_id.empty() && r.model_id != setup.model) {
      in.notes.push_back(fmt::format("the file's model_id is {}; the setup's model is {}", r.model_id, setup.model));
    }
    BenchClientSpec client;
    client.requests = in.requests;
    client.max_concurrency = r.max_concurrency;
    client.warm_up = replay.warm_prefix_cache;
    const int64_t warm_ids = replay.warm_prefix_cache ? static_cast<int64_t>(in.requests.size()) : 0;
    std::optional<SimTime> first_arrival;
    if (r.request_rate) {
      FP_ASSIGN_OR_RETURN(client.arrivals, VllmClientArrivals(*r.request_rate, r.burstiness));
      in.notes.push_back(
          fmt::format("arrivals: {} at {} (seed {}, stream workload.arrivals; the measured run's own "
                      "send times are not in the file)",
                      r.burstiness == 1.0 ? "Poisson" : fmt::format("gamma, shape {:g}", r.burstiness),
                      RateText(*r.request_rate), plan.seed));
    } else {
      in.notes.push_back("arrivals: every request sent at 0 s (request rate inf)");
    }
    if (r.max_concurrency) {
      in.notes.push_back(
          fmt::format("at most {} requests in flight: a request is sent when it is due and a slot is "
                      "free (closed loop)",
                      *r.max_concurrency));
    }
    FP_ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> source, MakeBenchClientSource(client, plan.seed));
    Latencies sim;
    int64_t unfinished = 0;
    double decode_ms = 0, decode_tokens = 0;
    RunOptions options;
    options.write_files = false;
    options.source = source.get();
    options.on_record = [&](const RequestRecord& rec) {
      if (rec.id < warm_ids) return;  // the warm-up round is not measured
      if (!first_arrival || rec.arrival < *first_arrival) first_arrival = rec.arrival;
      if (rec.status != RecordStatus::kOk || !rec.first_token || !rec.finish) {
        ++unfinished;
        return;
      }
      const double ttft = (*rec.first_token - rec.arrival).millis();
      const double e2e = (*rec.finish - rec.arrival).millis();
      sim.ttft.push_back(ttft);
      sim.e2e.push_back(e2e);
      if (rec.output_tokens > 1) {
        sim.tpot.push_back((e2e - ttft) / static_cast<double>(rec.output_tokens - 1));
        decode_ms += e2e - ttft;
        decode_tokens += static_cast<double>(rec.output_tokens - 1);
      }
    };
    FP_ASSIGN_OR_RETURN(const RunResult run, Simulate(plan, options));
    if (unfinished > 0) {
      return InvalidInput(
          fmt::format("{}: {} of its requests did not complete in the replay (a prompt larger than "
                      "the KV cache or max_num_batched_tokens allows?)",
                      r.path, unfinished));
    }
    Json p;
    p["file"] = r.path;
    p["digest"] = r.digest;
    p["label"] = PointLabel(r);
    p["request_rate"] = RequestRateJson(r);
    p["burstiness"] = r.burstiness;
    p["max_concurrency"] = r.max_concurrency ? Json(*r.max_concurrency) : Json();
    p["requests"] = static_cast<int64_t>(in.requests.size());
    p["detailed"] = in.detailed;
    Json& m = p["metrics"];
    if (in.detailed) {
      m["ttft"] = MetricJson(Of(in.measured.ttft), Of(sim.ttft));
      m["tpot"] = MetricJson(Of(in.measured.tpot), Of(sim.tpot));
      m["e2e"] = MetricJson(Of(in.measured.e2e), Of(sim.e2e));
    } else {
      m["ttft"] = MetricJson(StatedStats(r, "ttft"), Of(sim.ttft));
      m["tpot"] = MetricJson(StatedStats(r, "tpot"), Of(sim.tpot));
      m["e2e"] = MetricJson(in.measured_e2e_stated, Of(sim.e2e));
    }
    // ITL: the simulation's mean gap is its decode time over its decode tokens (one token
    // per step); its percentiles would need every token's time, so they are not given.
    const Stats itl_measured = in.detailed ? Of(in.measured.itl) : StatedStats(r, "itl");
    if (itl_measured.mean) {
      Stats itl_sim;
      if (decode_tokens > 0) itl_sim.mean = decode_ms / decode_tokens;
      m["itl"] = MetricJson(itl_measured, itl_sim);
    }
    // From the first measured request's arrival (after any warm-up round) to the end.
    const double span_s = (run.simulated_end - first_arrival.value_or(SimTime())).seconds();
    p["simulated_duration_s"] = Round4(span_s);
    p["measured_duration_s"] = r.duration_s ? Json(Round4(*r.duration_s)) : Json();
    p["notes"] = in.notes;
    for (const char* metric : {"ttft", "tpot", "e2e"}) {
      if (!m[metric]["mean_error_pct"].is_null())
        abs_errors[metric].push_back(std::abs(m[metric]["mean_error_pct"].get<double>()));
    }
    points.push_back(std::move(p));
  }
  j["points"] = points;
  Json summary;
  for (const char* metric : {"ttft", "tpot", "e2e"}) {
    summary[metric]["mean_abs_error_pct"] =
        abs_errors[metric].empty() ? Json() : Json(Round4(Mean(abs_errors[metric])));
    summary[metric]["points"] = static_cast<int64_t>(abs_errors[metric].size());
  }
  j["summary"] = summary;
  return out;
}

std::string BenchValidationText(const Json& report) {
  const Json& s = report["setup"];
  std::string out = fmt::format(
      "setup {}: {} on {}, tp {} pp {}, max_num_seqs {}, max_num_batched_tokens {}, {} "
      "KV blocks; step model {}\n",
      s["path"].get<std::string>(), s["catalog_model"].get<std::string>(), s["gpu"].get<std::string>(),
      s["tp"].get<int64_t>(), s["pp"].get<int64_t>(), s["max_num_seqs"].get<int64_t>(),
      s["max_num_batched_tokens"].get<int64_t>(), s["kv_blocks"].get<int64_t>(),
      report["step_model"].value("kind", "?"));
  const auto cell = [](const Json& metric, const char* stat) {
    const Json& meas = metric["measured_ms"][stat];
    const Json& sim = metric["simulated_ms"][stat];
    const Json& err = metric[std::string(stat) + "_error_pct"];
    if (meas.is_null() && sim.is_null()) return std::string("-");
    const auto num = [](const Json& v) {
      return v.is_null() ? std::string("-") : fmt::format("{:.1f}", v.get<double>());
    };
    return fmt::format("{}/{} ({})", num(meas), num(sim),
                       err.is_null() ? std::string("-") : fmt::format("{:+.1f}%", err.get<double>()));
  };
  out += fmt::format("{:<28}{:>6}  {:<26}{:<26}{:<26}{:<26}\n", "point", "reqs", "TTFT mean ms meas/sim",
                     "TPOT mean ms meas/sim", "E2E mean ms meas/sim", "TTFT p99 ms meas/sim");
  for (const Json& p : report["points"]) {
    const Json& m = p["metrics"];
    out += fmt::format("{:<28}{:>6}  {:<26}{:<26}{:<26}{:<26}\n", p["label"].get<std::string>(),
                       p["requests"].get<int64_t>(), cell(m["ttft"], "mean"), cell(m["tpot"], "mean"),
                       cell(m["e2e"], "mean"), cell(m["ttft"], "p99"));
  }
  const Json& sum = report["summary"];
  const auto avg = [&](const char* metric) {
    const Json& v = sum[metric]["mean_abs_error_pct"];
    return v.is_null() ? std::string("-") : fmt::format("{:.1f}%", v.get<double>());
  };
  out += fmt::format("mean |error| over the points: TTFT {}, TPOT {}, E2E {}\n", avg("ttft"), avg("tpot"), avg("e2e"));
  for (const Json& n : report["notes"]) out += "note: " + n.get<std::string>() + "\n";
  for (const Json& p : report["points"]) {
    for (const Json& n : p["notes"])
      out += fmt::format("note ({}): {}\n", p["label"].get<std::string>(), n.get<std::string>());
  }
  return out;
}

}  // namespace fleetplan
