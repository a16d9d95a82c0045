// `fleetplan fit`: does a model fit on a GPU layout at a context and concurrency, and why.
// Parses flags (and optionally a scenario), calls memory/fit, prints the report. Values are
// taken as text and parsed here, so that a bad value is a located input error (exit 3)
// rather than a usage error: "--tp: expected an integer, got 'four'".
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/memory/fit.h"
#include "fleetplan/memory/fit_report.h"
#include "fleetplan/memory/fit_request.h"

namespace fleetplan::cli {
namespace {

// A flag whose value is parsed by the verb; `option` tells whether it was given.
struct TextFlag {
  std::string text;
  CLI::Option* option = nullptr;
  bool given() const { return option != nullptr && option->count() > 0; }
};

struct FitFlags {
  TextFlag scenario, pool, model, gpu, gpu_memory, tp, pp, ep, weight_dtype, kv_dtype, kv_window,
      context, concurrency, utilization, block_tokens, max_batched_tokens;
  std::vector<std::string> catalogs;
  bool json = false;
};

Status FlagError(std::string_view flag, std::string_view message) {
  return ErrorAt(ValueOrigin::Flag(std::string(flag)), message);
}

Expected<int64_t> ParseInt(std::string_view flag, const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range) {
    return FlagError(flag, fmt::format("expected an integer, got '{}' (out of range)", text));
  }
  if (ec != std::errc() || ptr != end || text.empty()) {
    return FlagError(flag, fmt::format("expected an integer, got '{}'", text));
  }
  return v;
}

Expected<double> ParseNumber(std::string_view flag, const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty() || !std::isfinite(v)) {
    return FlagError(flag, fmt::format("expected a number, got '{}'", text));
  }
  return v;
}

// Sets `out` from `flag` when it was given; the parse error is located at the flag. A flag
// that replaces a scenario's value says so in `notes` (fit's `derived`).
template <typename T, typename Parse>
Status Overlay(const TextFlag& flag, std::string_view name, Sourced<T>& out, Parse parse,
               std::vector<std::string>& notes) {
  if (!flag.given()) return Status::Ok();
  Expected<T> v = parse(flag.text);
  if (!v.ok()) return std::move(v).take_status();
  if (out.value && !out.origin.path.empty() && out.origin.path[0] != '-') {
    notes.push_back(fmt::format("{} {} (flag, overrides the scenario's {})", name, flag.text, out.origin.path));
  }
  out.Set(std::move(v).value(), ValueOrigin::Flag(std::string(name)));
  return Status::Ok();
}

// The integer flags and the spec field each one sets.
struct IntFlag {
  const TextFlag* flag;
  std::string_view name;
  Sourced<int64_t>* target;
};

Status OverlayInts(const FitFlags& f, FitSpec& spec, std::vector<std::string>& notes) {
  const IntFlag ints[] = {
      {&f.tp, "--tp", &spec.tp},
      {&f.pp, "--pp", &spec.pp},
      {&f.ep, "--ep", &spec.ep},
      {&f.context, "--context", &spec.context},
      {&f.concurrency, "--concurrency", &spec.concurrency},
      {&f.block_tokens, "--block-tokens", &spec.block_tokens},
      {&f.max_batched_tokens, "--max-batched-tokens", &spec.max_batched_tokens},
  };
  for (const IntFlag& i : ints) {
    FP_RETURN_IF_ERROR(Overlay(*i.flag, i.name, *i.target,
                               [&](const std::string& t) { return ParseInt(i.name, t); }, notes));
  }
  return Status::Ok();
}

Expected<DType> ParseDTypeFlag(std::string_view flag, const std::string& text) {
  Expected<DType> t = ParseDType(text);
  if (!t.ok()) return FlagError(flag, t.status().message());
  return t;
}

Status OverlayOthers(const FitFlags& f, FitSpec& spec, std::vector<std::string>& notes) {
  auto text = [](const std::string& t) { return Expected<std::string>(t); };
  FP_RETURN_IF_ERROR(Overlay(f.model, "--model", spec.model_name, text, notes));
  if (f.model.given()) spec.model_spec.value.reset();  // the flag wins over an inline spec
  FP_RETURN_IF_ERROR(Overlay(f.gpu, "--gpu", spec.gpu_name, text, notes));
  FP_RETURN_IF_ERROR(Overlay(f.gpu_memory, "--gpu-memory", spec.gpu_memory, [](const std::string& t) {
    Expected<Bytes> b = ParseBytes(t);
    if (!b.ok()) return Expected<Bytes>(FlagError("--gpu-memory", b.status().message()));
    return b;
  }, notes));
  FP_RETURN_IF_ERROR(Overlay(f.weight_dtype, "--weight-dtype", spec.weight_dtype,
                             [](const std::string& t) { return ParseDTypeFlag("--weight-dtype", t); }, notes));
  FP_RETURN_IF_ERROR(Overlay(f.kv_dtype, "--kv-dtype", spec.kv_dtype,
                             [](const std::string& t) { return ParseDTypeFlag("--kv-dtype", t); }, notes));
  FP_RETURN_IF_ERROR(Overlay(f.kv_window, "--kv-window", spec.kv_window, [](const std::string& t) {
    if (t == "none") return Expected<std::optional<int64_t>>(std::optional<int64_t>());
    Expected<int64_t> v = ParseInt("--kv-window", t);
    if (!v.ok()) return Expected<std::optional<int64_t>>(std::move(v).take_status());
    return Expected<std::optional<int64_t>>(std::optional<int64_t>(*v));
  }, notes));
  return Overlay(f.utilization, "--gpu-memory-utilization", spec.gpu_memory_utilization,
                 [](const std::string& t) { return ParseNumber("--gpu-memory-utilization", t); }, notes);
}

Expected<Catalog> LoadCatalog(const std::vector<std::string>& paths) {
  if (paths.empty()) return Catalog::Builtin();
  return Catalog::WithUserFiles(paths);
}

Status RunFit(const FitFlags& f, std::ostream& out) {
  FitSpec spec;
  std::vector<std::string> catalogs;  // the scenario's `catalog:` files, then --catalog's
  if (f.scenario.given()) {
    FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadFile(f.scenario.text));
    const std::string dir = std::filesystem::path(f.scenario.text).parent_path().string();
    FP_ASSIGN_OR_RETURN(catalogs, Catalog::ScenarioCatalogPaths(doc.root()["catalog"], dir));
    FP_ASSIGN_OR_RETURN(spec, ReadFitScenario(doc, f.pool.text, ValueOrigin::Flag("--pool")));
  } else if (f.pool.given()) {
    return UsageError("--pool selects a pool of a scenario; it needs --scenario FILE");
  }
  catalogs.insert(catalogs.end(), f.catalogs.begin(), f.catalogs.end());
  std::vector<std::string> flag_notes;
  FP_RETURN_IF_ERROR(OverlayInts(f, spec, flag_notes));
  FP_RETURN_IF_ERROR(OverlayOthers(f, spec, flag_notes));
  FP_ASSIGN_OR_RETURN(Catalog catalog, LoadCatalog(catalogs));
  FP_ASSIGN_OR_RETURN(ResolvedFit resolved, ResolveFitSpec(spec, catalog));
  FP_RETURN_IF_ERROR(CheckNativeFormats(spec, resolved.request));
  // What the flags set comes first in `derived`, then the catalog's overrides, then what
  // was filled in.
  for (const std::string& entry : catalog.overridden()) {
    flag_notes.push_back(fmt::format("catalog: {} overrides the built-in entry", entry));
  }
  resolved.derived.insert(resolved.derived.begin(), flag_notes.begin(), flag_notes.end());
  FP_ASSIGN_OR_RETURN(FitResult result, CheckFit(resolved.request));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(FitReportJson(result, resolved.derived)));
    out << text;
  } else {
    out << FitReportText(result, resolved.derived);
  }
  if (result.fits) return Status::Ok();
  return Status(StatusCode::kCheckFailed,
                fmt::format("fleetplan fit: does not fit (binding constraint: {})",
                            BindingConstraintName(result.binding)));
}

// A repeated flag takes its last value, so a later flag overrides an earlier one (e.g. in a
// shell alias).
void AddText(CLI::App* cmd, TextFlag& flag, const std::string& name, const std::string& help) {
  flag.option = cmd->add_option(name, flag.text, help)
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

}  // namespace

void RegisterFitVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Does the model fit? Weights, KV and workspace per GPU, KV capacity, the most concurrent "
      "sequences, and the nearest passing values when it does not fit. Exit 0 fits, 1 does not "
      "fit, 2 usage, 3 invalid input.");
  cmd->footer(
      "Examples:\n"
      "  fleetplan fit --model atlas-70b --gpu h100-sxm-80g --tp 4 --context 32768 --concurrency 64\n"
      "  fleetplan fit --scenario scenario.yaml --json\n"
      "  fleetplan fit --scenario scenario.yaml --pool decode --weight-dtype fp8");
  auto flags = std::make_shared<FitFlags>();
  FitFlags& f = *flags;
  AddText(cmd, f.scenario, "--scenario",
          "Scenario file (YAML; - reads stdin); flags override its values, its `catalog:` files are read");
  AddText(cmd, f.pool, "--pool", "Role of the deployment.pools entry to check (with --scenario)");
  AddText(cmd, f.model, "--model", "Model name (`fleetplan catalog models`)");
  AddText(cmd, f.gpu, "--gpu", "GPU name (`fleetplan catalog gpus`)");
  AddText(cmd, f.gpu_memory, "--gpu-memory", "Override the GPU's memory, with a unit (e.g. 40GiB)");
  AddText(cmd, f.tp, "--tp", "Tensor-parallel ranks per stage (default 1)");
  AddText(cmd, f.pp, "--pp", "Pipeline stages (default 1)");
  AddText(cmd, f.ep, "--ep", "Expert-parallel groups within tp, MoE only (default 1)");
  AddText(cmd, f.weight_dtype, "--weight-dtype", "Weight format: bf16|fp16|fp8|int8|int4|fp4|fp32 (default: the checkpoint's)");
  AddText(cmd, f.kv_dtype, "--kv-dtype", "KV-cache format, independent of weights (default bf16, or the checkpoint's if wider)");
  AddText(cmd, f.kv_window, "--kv-window", "Tokens each layer keeps per sequence, or none (default none)");
  AddText(cmd, f.context, "--context", "Tokens per sequence (default: the model's max_context)");
  AddText(cmd, f.concurrency, "--concurrency", "Sequences resident at once (default 1; with --scenario, its engine.scheduler.max_running, 256 when not stated)");
  AddText(cmd, f.utilization, "--gpu-memory-utilization", "Share of GPU memory the engine may use (default 0.9)");
  AddText(cmd, f.block_tokens, "--block-tokens", "Tokens per KV block (default 16)");
  AddText(cmd, f.max_batched_tokens, "--max-batched-tokens",
          "Tokens per step; sizes the activation workspace (default 8192)");
  cmd->add_option("--catalog", f.catalogs,
                  "User catalog file (YAML: models, gpus, links); adds entries or overrides built-in ones "
                  "of the same name (e.g. a fine-tuned llama-3.1-8b); repeatable, later files win");
  cmd->add_flag("--json", f.json, "Print JSON instead of text");
  cmd->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& /*err*/) { return RunFit(*flags, out); };
  });
}

}  // namespace fleetplan::cli
