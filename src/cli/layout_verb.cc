// `fleetplan layout`: which TP × PP × EP × DP composition each replica should use on a
// cluster, ranked for prefill and decode, with every rejected composition's reason; with
// --scenario, ranked at the workload's operating points and the top K simulated on it
// (plan/workload_layout.h). Parses flags, calls plan/layout, prints. Values are taken as text and parsed here so a
// bad value is a located input error (exit 3): "--batch: expected an integer, got 'x'".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "cli/verbs.h"
#include "fleetplan/core/flag_error.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/fleet/step_model_of.h"
#include "fleetplan/memory/fit_request.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/layout.h"
#include "fleetplan/plan/layout_report.h"
#include "fleetplan/plan/workload_layout.h"
#include "fleetplan/perf/stated_error.h"

namespace fleetplan::cli {
namespace {

struct TextFlag {
  std::string text;
  CLI::Option* option = nullptr;
  bool given() const { return option != nullptr && option->count() > 0; }
};

struct LayoutFlags {
  TextFlag model, cluster, weight_dtype, kv_dtype, context, batch, prefill_tokens, microbatches, runtime, all_reduce,
      tp, pp, ep, dp, utilization, rows, close_call, scenario, simulate_top, jobs, failure_domain, model_error;
  std::vector<std::string> catalogs;
  std::vector<std::string> staging;
  CLI::Option* staging_option = nullptr;
  std::vector<std::string> without;
  bool allow_cross_node_tp = false;
  bool json = false;
  bool quiet = false;
};

Status FlagError(std::string_view flag, std::string_view message) { return FlagValueError(flag, message); }

Expected<int64_t> IntFlag(std::string_view flag, const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return FlagError(flag, fmt::format("expected an integer, got {}", QuoteValue(text)));
  }
  return v;
}

Expected<double> NumberFlag(std::string_view flag, const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
    return FlagError(flag, fmt::format("expected a number, got {}", QuoteValue(text)));
  }
  return v;
}

Status SetInt(const TextFlag& f, std::string_view name, int64_t& out) {
  if (!f.given()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(out, IntFlag(name, f.text));
  return Status::Ok();
}

Status SetOptionalInt(const TextFlag& f, std::string_view name, std::optional<int64_t>& out) {
  if (!f.given()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(const int64_t v, IntFlag(name, f.text));
  out = v;
  return Status::Ok();
}

Status SetDType(const TextFlag& f, std::string_view name, DType& out) {
  if (!f.given()) return Status::Ok();
  Expected<DType> t = ParseDType(f.text);
  if (!t.ok()) return FlagError(name, t.status().message());
  out = *t;
  return Status::Ok();
}

Expected<AllReduceAlgorithm> ParseAlgorithm(const std::string& text) {
  const std::vector<std::string> names = {std::string(AllReduceAlgorithmName(AllReduceAlgorithm::kRing)),
                                          std::string(AllReduceAlgorithmName(AllReduceAlgorithm::kTree))};
  if (text == names[0]) return AllReduceAlgorithm::kRing;
  if (text == names[1]) return AllReduceAlgorithm::kTree;
  return FlagError("--all-reduce", UnknownNameMessage("all-reduce algorithm", text, names));
}

Status FillCommon(const LayoutFlags& f, LayoutRequest& r);
void CommonDerived(const LayoutFlags& f, const LayoutRequest& r, std::vector<std::string>& derived);

Status FillModel(const LayoutFlags& f, const Catalog& catalog, LayoutRequest& r, std::vector<std::string>& derived) {
  Expected<ModelSpec> model = catalog.Model(f.model.text);
  if (!model.ok()) return FlagError("--model", model.status().message());
  r.model = std::move(model).value();
  // The formats default as fit's do: the checkpoint's weights (fp8 for deepseek-v3), KV in
  // the activation format.
  r.weight_dtype = r.model.native_dtype;
  r.kv_dtype = DefaultKvDType(r.model);
  FP_RETURN_IF_ERROR(SetDType(f.weight_dtype, "--weight-dtype", r.weight_dtype));
  FP_RETURN_IF_ERROR(SetDType(f.kv_dtype, "--kv-dtype", r.kv_dtype));
  if (!f.weight_dtype.given()) {
    derived.push_back(fmt::format("weight_dtype {}: the checkpoint's (--weight-dtype not given)",
                                  DTypeName(r.weight_dtype)));
  }
  if (!f.kv_dtype.given()) {
    derived.push_back(fmt::format("kv_dtype {}: the activation format, as fit (--kv-dtype not given)",
                                  DTypeName(r.kv_dtype)));
  }
  return Status::Ok();
}

Status FillRequest(const LayoutFlags& f, const Catalog& catalog, LayoutRequest& r, std::vector<std::string>& derived) {
  FP_RETURN_IF_ERROR(FillModel(f, catalog, r, derived));
  const bool context_capped = !f.context.given() && r.model.max_context > 0 && r.model.max_context < r.context;
  if (context_capped) r.context = r.model.max_context;
  FP_RETURN_IF_ERROR(SetInt(f.context, "--context", r.context));
  FP_RETURN_IF_ERROR(SetInt(f.batch, "--batch", r.batch));
  FP_RETURN_IF_ERROR(SetInt(f.prefill_tokens, "--prefill-tokens", r.prefill_tokens));
  FP_RETURN_IF_ERROR(FillCommon(f, r));
  r.keep_near_misses = true;
  if (!f.context.given()) {
    derived.push_back(fmt::format("context {}: {} (--context not given)", r.context,
                                  context_capped ? "the model's max_context, below the default" : "default"));
  }
  if (!f.batch.given()) derived.push_back(fmt::format("batch {}: default (--batch not given)", r.batch));
  if (!f.utilization.given()) {
    derived.push_back(fmt::format("gpu_memory_utilization {}: default, as fit (--gpu-memory-utilization not given)",
                                  r.gpu_memory_utilization));
  }
  CommonDerived(f, r, derived);
  if (!f.prefill_tokens.given()) {
    derived.push_back(fmt::format("prefill tokens {}: default (--prefill-tokens not given)", r.prefill_tokens));
  }
  return Status::Ok();
}

// Flags that apply with and without --scenario.
Status FillCommon(const LayoutFlags& f, LayoutRequest& r) {
  FP_RETURN_IF_ERROR(SetInt(f.microbatches, "--microbatches", r.microbatches));
  FP_RETURN_IF_ERROR(SetOptionalInt(f.tp, "--tp", r.tp));
  FP_RETURN_IF_ERROR(SetOptionalInt(f.pp, "--pp", r.pp));
  FP_RETURN_IF_ERROR(SetOptionalInt(f.ep, "--ep", r.ep));
  FP_RETURN_IF_ERROR(SetOptionalInt(f.dp, "--dp", r.dp));
  if (f.runtime.given()) r.runtime = f.runtime.text;
  if (f.all_reduce.given()) {
    FP_ASSIGN_OR_RETURN(r.all_reduce, ParseAlgorithm(f.all_reduce.text));
  }
  if (f.utilization.given()) {
    FP_ASSIGN_OR_RETURN(r.gpu_memory_utilization, NumberFlag("--gpu-memory-utilization", f.utilization.text));
    if (!(r.gpu_memory_utilization > 0 && r.gpu_memory_utilization <= 1)) {
      return FlagError("--gpu-memory-utilization",
                       fmt::format("expected a number in (0, 1], got {}", QuoteValue(f.utilization.text)));
    }
  }
  if (f.close_call.given()) {
    FP_ASSIGN_OR_RETURN(r.close_call_share, NumberFlag("--close-call", f.close_call.text));
  }
  r.allow_cross_node_tp = f.allow_cross_node_tp;
  return Status::Ok();
}

void CommonDerived(const LayoutFlags& f, const LayoutRequest& r, std::vector<std::string>& derived) {
  if (!f.microbatches.given()) {
    derived.push_back(fmt::format("microbatches {}: default (--microbatches not given)", r.microbatches));
  }
  if (!f.runtime.given()) derived.push_back(fmt::format("runtime {}: default (--runtime not given)", r.runtime));
  if (!f.all_reduce.given()) {
    derived.push_back(fmt::format("all-reduce {}: default (--all-reduce not given)",
                                  AllReduceAlgorithmName(r.all_reduce)));
  }
}

Expected<Catalog> LoadCatalog(const std::vector<std::string>& paths) {
  if (paths.empty()) return Catalog::Builtin();
  return Catalog::WithUserFiles(paths);
}

// The name --scenario gives the built-in Atlas scenario (`fleetplan simulate --print-scenario`).
constexpr std::string_view kBuiltinScenario = "atlas";

Expected<Scenario> LoadLayoutScenario(const LayoutFlags& f) {
  ScenarioLoadOptions load;
  load.catalogs = f.catalogs;
  if (f.scenario.text == kBuiltinScenario) return LoadAtlasScenario(load);
  Expected<Scenario> s = LoadScenario(f.scenario.text, load);
  // Errors inside the file are located there; one that is not (the file cannot be read)
  // names the flag.
  if (!s.ok() && s.status().message().rfind(f.scenario.text + ":", 0) != 0) {
    return Status(s.status().code(), "--scenario: " + s.status().message());
  }
  return s;
}

// The scenario's own hardware as a cluster short form, when --cluster is not given.
std::string ScenarioCluster(const Scenario& s) {
  return fmt::format("{}x{}x{}", s.nodes, s.gpus_per_node, s.fit.memory.gpu.name);
}

// Flags --scenario replaces with the scenario's own values.
Status CheckScenarioFlags(const LayoutFlags& f) {
  const std::pair<const TextFlag*, const char*> replaced[] = {
      {&f.model, "--model"},     {&f.weight_dtype, "--weight-dtype"}, {&f.kv_dtype, "--kv-dtype"},
      {&f.context, "--context"}, {&f.batch, "--batch"},               {&f.prefill_tokens, "--prefill-tokens"},
      {&f.dp, "--dp"},           {&f.utilization, "--gpu-memory-utilization"}};
  for (const auto& [flag, name] : replaced) {
    if (flag->given()) {
      return UsageError(fmt::format("fleetplan layout: {} cannot be combined with --scenario: the scenario gives it "
                                    "(its model, formats, memory utilization and engine limits; the operating points "
                                    "come from its workload)",
                                    name));
    }
  }
  return Status::Ok();
}

// --failure-domain, --model-error and --staging (plan/layout_choice.h).
Status FillChoice(const LayoutFlags& f, WorkloadLayoutRequest& request) {
  if (f.failure_domain.given()) {
    FP_ASSIGN_OR_RETURN(request.failure_domain, ParseLossDomain(f.failure_domain.text));
  }
  if (f.model_error.given()) {
    FP_ASSIGN_OR_RETURN(request.model_error, NumberFlag("--model-error", f.model_error.text));
    if (!(request.model_error > 0 && request.model_error < 1)) {
      return FlagError("--model-error", fmt::format("expected a share between 0 and 1 (exclusive), got {}",
                                                    QuoteValue(f.model_error.text)));
    }
  }
  for (const std::string& text : f.staging) {
    FP_ASSIGN_OR_RETURN(StagingInput in, ParseStagingSpec(text));
    request.staging.push_back(std::move(in));
  }
  return Status::Ok();
}

Status RunOnScenario(const LayoutFlags& f, std::ostream& out, std::ostream& err) {
  FP_RETURN_IF_ERROR(CheckScenarioFlags(f));
  FP_ASSIGN_OR_RETURN(const Scenario scenario, LoadLayoutScenario(f));
  const std::string cluster_text = f.cluster.given() ? f.cluster.text : ScenarioCluster(scenario);
  FP_ASSIGN_OR_RETURN(Cluster cluster, LoadCluster(cluster_text, *scenario.catalog, "--cluster"));
  FP_ASSIGN_OR_RETURN(cluster, ApplyRemovals(std::move(cluster), f.without, "--without"));
  WorkloadLayoutRequest request;
  FP_RETURN_IF_ERROR(FillCommon(f, request.base));
  FP_RETURN_IF_ERROR(SetInt(f.simulate_top, "--simulate-top", request.simulate_top));
  int64_t jobs = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  FP_RETURN_IF_ERROR(SetInt(f.jobs, "--jobs", jobs));
  if (jobs < 1 || jobs > kMaxSimulateTop) {
    return FlagError("--jobs", fmt::format("expected an integer between 1 and {}, got {}", kMaxSimulateTop, jobs));
  }
  request.jobs = static_cast<int>(jobs);
  FP_RETURN_IF_ERROR(FillChoice(f, request));
  std::string error_from;
  if (!f.model_error.given()) {
    // The band the scenario's step model states for its GPU (perf/stated_error.h).
    FP_ASSIGN_OR_RETURN(const auto model, StepModelOf(scenario, scenario.fit));
    const StatedError stated = StatedErrorOf(model->kind(), scenario.fit.memory.gpu.name);
    request.model_error = stated.step_time;
    error_from = fmt::format("model error {:.1f} %: the stated error of {} on {} ({}; --model-error not given)",
                             100 * stated.step_time, model->kind(), scenario.fit.memory.gpu.name, stated.basis);
  }
  int64_t rows = kLayoutTextRows;
  FP_RETURN_IF_ERROR(SetInt(f.rows, "--rows", rows));
  if (rows < 1) return UsageError(fmt::format("--rows: expected an integer >= 1, got {}", QuoteValue(f.rows.text)));
  // Each simulation of a candidate runs the scenario's whole workload: seconds each.
  std::mutex progress_mu;
  std::unique_ptr<Progress> progress;
  std::string stage_shown;
  request.on_simulated = [&](std::string_view stage, int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lock(progress_mu);
    if (!progress || stage != stage_shown) {
      progress.reset();
      stage_shown = std::string(stage);
      progress = std::make_unique<Progress>(err, "layout", stage_shown == "candidates" ? "simulations"
                                                                                        : "after-loss simulations",
                                            total, ProgressFor(f.quiet));
    }
    progress->Update(done);
  };
  Expected<WorkloadLayoutResult> decided = DecideLayoutOnWorkload(scenario, cluster, request);
  if (!decided.ok()) {
    if (progress) progress->Abandon();
    return decided.status();
  }
  progress.reset();
  WorkloadLayoutResult result = std::move(decided).value();
  std::vector<std::string> derived;
  if (!f.cluster.given()) derived.push_back(fmt::format("cluster {}: the scenario's hardware (--cluster not given)", cluster_text));
  CommonDerived(f, request.base, derived);
  if (!error_from.empty()) derived.push_back(error_from);
  result.derived.insert(result.derived.end(), derived.begin(), derived.end());
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(WorkloadLayoutJson(result, cluster)));
    out << text;
  } else {
    out << WorkloadLayoutText(result, cluster, rows);
  }
  if (result.choice && result.choice->basis == ChoiceBasis::kNeedsStaging) {
    std::vector<std::string> names;
    for (const size_t i : result.choice->needs_staging) {
      const SimulatedLayout& c = result.simulated[i];
      names.push_back(fmt::format("{} × dp {}", LayoutName(c.layout), c.dp));
    }
    return Status(StatusCode::kCheckFailed,
                  fmt::format("fleetplan layout: no decision without a measured staging result: the model cannot "
                              "separate {} (within its {:.0f}% error); stage them and pass --staging LAYOUT=RECORDS",
                              fmt::join(names, ", "), 100.0 * request.model_error));
  }
  if (result.decision) return Status::Ok();
  return Status(StatusCode::kCheckFailed, "fleetplan layout: no layout could be simulated on the scenario's workload "
                                          "(each candidate's reason above)");
}

Status RunLayout(const LayoutFlags& f, std::ostream& out, std::ostream& err) {
  if (f.scenario.given()) return RunOnScenario(f, out, err);
  for (const auto& [flag, name] : {std::pair{&f.simulate_top, "--simulate-top"}, std::pair{&f.jobs, "--jobs"},
                                    std::pair{&f.failure_domain, "--failure-domain"},
                                    std::pair{&f.model_error, "--model-error"}}) {
    if (flag->given()) return UsageError(fmt::format("fleetplan layout: {} needs --scenario", name));
  }
  if (!f.staging.empty()) return UsageError("fleetplan layout: --staging needs --scenario");
  if (!f.model.given() || !f.cluster.given()) {
    return UsageError("fleetplan layout: --model and --cluster are required (or --scenario FILE)\n"
                      "Run `fleetplan layout --help` for usage.");
  }
  FP_ASSIGN_OR_RETURN(const Catalog catalog, LoadCatalog(f.catalogs));
  FP_ASSIGN_OR_RETURN(Cluster cluster, LoadCluster(f.cluster.text, catalog, "--cluster"));
  FP_ASSIGN_OR_RETURN(cluster, ApplyRemovals(std::move(cluster), f.without, "--without"));
  LayoutRequest request;
  std::vector<std::string> derived;
  FP_RETURN_IF_ERROR(FillRequest(f, catalog, request, derived));
  int64_t rows = kLayoutTextRows;
  FP_RETURN_IF_ERROR(SetInt(f.rows, "--rows", rows));
  if (rows < 1) return UsageError(fmt::format("--rows: expected an integer >= 1, got {}", QuoteValue(f.rows.text)));
  // Each candidate packs replicas onto every node: thousands of nodes take seconds.
  std::unique_ptr<Progress> progress;
  const auto on_candidate = [&](int64_t done, int64_t total) {
    if (!progress) progress = std::make_unique<Progress>(err, "layout", "layouts", total, ProgressFor(f.quiet));
    progress->Update(done);
  };
  Expected<LayoutResult> searched = SearchLayouts(request, cluster, on_candidate);
  if (!searched.ok()) {
    if (progress) progress->Abandon();
    return searched.status();
  }
  progress.reset();
  LayoutResult result = std::move(searched).value();
  result.derived.insert(result.derived.end(), derived.begin(), derived.end());
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(LayoutReportJson(result, cluster)));
    out << text;
  } else {
    out << LayoutReportText(result, cluster, rows);
  }
  if (!result.feasible.empty()) return Status::Ok();
  return Status(StatusCode::kCheckFailed,
                fmt::format("fleetplan layout: no feasible layout ({} rejected; each with its reason above)",
                            result.rejected.size()));
}

void AddText(CLI::App* cmd, TextFlag& flag, const std::string& name, const std::string& help) {
  flag.option = cmd->add_option(name, flag.text, help);
}

}  // namespace

void RegisterLayoutVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd =
      app.add_subcommand("layout",
                         "Which TP x PP x EP x DP layout should each replica use on this cluster? Ranks feasible "
                         "layouts for prefill and decode separately, with memory per rank, step times, "
                         "communication and the reason for every rejected layout; with --scenario, decides on the "
                         "scenario's own workload by simulation. Exit 0 some layout is feasible (--scenario: one was "
                         "chosen), 1 none is (--scenario: none was simulated, or the choice needs a staging result), 2 "
                         "usage, 3 invalid input.");
  auto flags = std::make_shared<LayoutFlags>();
  LayoutFlags& f = *flags;
  AddText(cmd, f.model, "--model", "Model name (`fleetplan catalog models`); required without --scenario");
  AddText(cmd, f.cluster, "--cluster",
          "Cluster file (YAML) or short form [RACKS x] NODES x GPUS x GPU, e.g. 2x8xh100-sxm-80g "
          "(at most 2048 nodes: docs/limits.md); required without --scenario");
  AddText(cmd, f.scenario, "--scenario",
          "Decide on this scenario's workload (a scenario file, '-' for stdin, or 'atlas' for the built-in one): "
          "rank at batch 1, at its typical concurrency (Little's law) and at maximum throughput, then simulate the "
          "top layouts on its workload and rank them by SLO-qualified goodput per GPU. Model, formats and engine "
          "limits come from the scenario; --cluster defaults to its hardware");
  AddText(cmd, f.simulate_top, "--simulate-top", "With --scenario: layouts simulated, best static first (default 4)");
  AddText(cmd, f.jobs, "--jobs",
          "With --scenario: simulations at once (default: every hardware thread); same output for any N");
  AddText(cmd, f.failure_domain, "--failure-domain",
          "With --scenario: node|rack|zone (default node). Among candidates within --close-call of the goodput "
          "leader, the fleet left after the worst single loss of this domain is simulated too and ranks them");
  AddText(cmd, f.model_error, "--model-error",
          "With --scenario: the model's own error as a share (default: the stated error of the scenario's step model on "
          "its GPU, docs/step-models.md \"Measured error\"). Candidates within it "
          "of the pick on goodput and on goodput after the loss need a staging result before one is chosen (exit 1 "
          "until then)");
  cmd->add_option("--staging", f.staging,
                  "With --scenario: SPEC=RECORDS, a measured staging run of one layout (SPEC tp4, tp4xdp1, "
                  "tp8xpp2xep1xdp2; dp defaults to the candidate's) as per-request records in any format `fleetplan "
                  "report` reads, judged by the scenario's SLOs; repeatable");
  AddText(cmd, f.weight_dtype, "--weight-dtype", "Weight format (default: the checkpoint's, as fit)");
  AddText(cmd, f.kv_dtype, "--kv-dtype",
          "KV-cache format (default: the checkpoint's when 16 bits or wider, else bf16, as fit)");
  AddText(cmd, f.context, "--context", "Tokens per resident sequence (default 8192)");
  AddText(cmd, f.batch, "--batch", "Decode sequences per step and per replica (default 64)");
  AddText(cmd, f.prefill_tokens, "--prefill-tokens", "Tokens of the prefill step evaluated (default 8192)");
  AddText(cmd, f.microbatches, "--microbatches", "Microbatches per step for pp > 1 (default 1)");
  AddText(cmd, f.runtime, "--runtime",
          "Serving runtime whose compositions are enumerated: sglang|trtllm|vllm (default vllm)");
  AddText(cmd, f.all_reduce, "--all-reduce", "TP all-reduce algorithm: ring|tree (default ring)");
  AddText(cmd, f.tp, "--tp", "Only this tp");
  AddText(cmd, f.pp, "--pp", "Only this pp");
  AddText(cmd, f.ep, "--ep", "Only this ep");
  AddText(cmd, f.dp, "--dp", "Data-parallel replicas wanted (default: every replica that fits)");
  AddText(cmd, f.utilization, "--gpu-memory-utilization", "Share of GPU memory the engine may use (default 0.9)");
  AddText(cmd, f.close_call, "--close-call",
          "Share of the winner within which layouts are too close to call (default 0.05)");
  AddText(cmd, f.rows, "--rows", "Rows of each ranking table in the text (default 10)");
  cmd->add_option(
      "--without", f.without,
      "What if it is lost: gpu:NODE/I, node:N, rack:R, zone:Z, nvlink:NODE, network:NODE, dtype:T; repeatable");
  cmd->add_flag(
      "--allow-cross-node-tp", f.allow_cross_node_tp,
      "Allow TP groups over links slower than the GPU's NVLink (across nodes, or a node whose NVLink is down)");
  cmd->add_option("--catalog", f.catalogs, "User catalog file (YAML); repeatable");
  cmd->add_flag("--json", f.json, "Print JSON instead of text");
  cmd->add_flag("--quiet", f.quiet,
                "No progress on stderr (otherwise: a bar with ETA over the candidate layouts, or with --scenario over "
                "the simulations, on a terminal; plain lines in a log)");
  cmd->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& err) { return RunLayout(*flags, out, err); };
  });
  cmd->footer(
      "Examples:\n"
      "  fleetplan layout --model atlas-70b --cluster 2x8xh100-sxm-80g            # ranked at 64 x 8192 tokens\n"
      "  fleetplan layout --model atlas-70b --cluster 1x8xh100-sxm-80g --batch 16 --context 4096\n"
      "  fleetplan layout --scenario atlas --cluster 2x8xh100-sxm-80g --simulate-top 4\n"
      "  fleetplan layout --scenario my.yaml --simulate-top 6 --jobs 2 --json  # simulated[], decision\n"
      "  fleetplan layout --scenario atlas --failure-domain rack --staging tp8xdp1=tp8.jsonl --staging "
      "tp4xdp1=tp4.jsonl\n"
      "Without --scenario, layouts that fit one replica but fewer sequences than --batch are listed as near "
      "misses (\"fits 59 of 64 sequences\"), ranked after those that fit. docs/layout.md explains each figure.\n");
}

}  // namespace fleetplan::cli
