// `fleetplan experts`: expert placement from observed routing counts — contiguous vs
// balanced, loads, dispatch bytes, and whether the update repays its weight copy.
// Parses flags, calls plan/experts, prints.
#include <fmt/format.h>

#include <charconv>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "cli/verbs.h"
#include "fleetplan/core/flag_error.h"
#include "fleetplan/catalog/native_dtype.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/perf/roofline.h"
#include "fleetplan/plan/experts.h"
#include "fleetplan/plan/experts_report.h"

namespace fleetplan::cli {
namespace {

struct TextFlag {
  std::string text;
  CLI::Option* option = nullptr;
  bool given() const { return option != nullptr && option->count() > 0; }
};

struct ExpertsFlags {
  TextFlag counts, counts_file, ranks, redundant, steps, model, hidden, gpu, weight_dtype, link, horizon;
  std::vector<std::string> catalogs;
  bool json = false;
};

Status FlagError(std::string_view flag, std::string_view message) { return FlagValueError(flag, message); }

Expected<int64_t> IntFlag(const TextFlag& f, std::string_view flag, int64_t min) {
  int64_t v = 0;
  const std::string& text = f.text;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return FlagError(flag, fmt::format("expected an integer, got {}", QuoteValue(text)));
  }
  if (v < min) return FlagError(flag, fmt::format("expected an integer >= {}, got {}", min, v));
  return v;
}

Expected<Catalog> LoadCatalog(const std::vector<std::string>& paths) {
  if (paths.empty()) return Catalog::Builtin();
  return Catalog::WithUserFiles(paths);
}

Expected<ExpertCounts> ReadCounts(const ExpertsFlags& f) {
  if (f.counts.given() == f.counts_file.given()) {
    return UsageError(
        "fleetplan experts: give the routing counts with exactly one of --counts LIST or --counts-file FILE");
  }
  if (f.counts_file.given()) {
    if (f.steps.given())
      return UsageError("fleetplan experts: --steps is for --counts totals; a counts file has one line per step");
    return ReadExpertCountsFile(f.counts_file.text);
  }
  Expected<ExpertCounts> c = ParseExpertCounts(f.counts.text);
  if (!c.ok()) return FlagError("--counts", c.status().message());
  if (f.steps.given()) {
    FP_ASSIGN_OR_RETURN(c->step_count, IntFlag(f.steps, "--steps", 1));
  }
  return c;
}

// The model, when given: a mixture of experts with as many experts as there are counts.
Expected<std::optional<ModelSpec>> ReadModel(const ExpertsFlags& f, const Catalog& catalog, int64_t experts) {
  if (!f.model.given()) return std::optional<ModelSpec>();
  Expected<ModelSpec> m = catalog.Model(f.model.text);
  if (!m.ok()) return FlagError("--model", m.status().message());
  if (!m->moe) {
    return FlagError("--model",
                     fmt::format("'{}' is dense; expert placement needs a mixture-of-experts model", m->name));
  }
  if (m->moe->experts != experts) {
    return FlagError(
        f.counts.given() ? "--counts" : "--counts-file",
        fmt::format("expected {} counts (one per routed expert of '{}'), got {}", m->moe->experts, m->name, experts));
  }
  return std::optional<ModelSpec>(std::move(m).value());
}

Status Price(const ExpertsFlags& f, const Catalog& catalog, const std::optional<ModelSpec>& model, ExpertsRequest& r) {
  if (!f.gpu.given() || !model) {
    r.derived.push_back("update not priced: pricing needs both --model and --gpu");
    return Status::Ok();
  }
  Expected<GpuSpec> gpu = catalog.Gpu(f.gpu.text);
  if (!gpu.ok()) return FlagError("--gpu", gpu.status().message());
  DType weights = model->native_dtype;
  if (f.weight_dtype.given()) {
    Expected<DType> t = ParseDType(f.weight_dtype.text);
    if (!t.ok()) return FlagError("--weight-dtype", t.status().message());
    weights = *t;
  } else {
    r.derived.push_back(
        fmt::format("weight dtype {}: the model's native format (--weight-dtype not given)", DTypeName(weights)));
  }
  if (const std::string gap = NativeDTypeGap(*gpu, gpu->name, weights, "weights"); !gap.empty()) {
    return FlagError(f.weight_dtype.given() ? "--weight-dtype" : "--gpu", gap);
  }
  const std::string link_name = f.link.given() ? f.link.text : gpu->default_intra_link;
  Expected<LinkSpec> link = catalog.Link(link_name);
  if (!link.ok()) return FlagError("--link", link.status().message());
  if (!f.link.given())
    r.derived.push_back(fmt::format("copy link {}: the default_intra_link of {}", link_name, gpu->name));
  ExpertCostInputs costs = ExpertCostsOf(*model, *gpu, weights, *link, kDefaultComputeEfficiency);
  if (f.horizon.given()) {
    FP_ASSIGN_OR_RETURN(costs.horizon_steps, IntFlag(f.horizon, "--horizon-steps", 1));
  }
  r.costs = costs;
  return Status::Ok();
}

Status RunExperts(const ExpertsFlags& f, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(const Catalog catalog, LoadCatalog(f.catalogs));
  ExpertsRequest r;
  FP_ASSIGN_OR_RETURN(r.counts, ReadCounts(f));
  FP_ASSIGN_OR_RETURN(r.ranks, IntFlag(f.ranks, "--ranks", 1));
  if (f.redundant.given()) {
    FP_ASSIGN_OR_RETURN(r.redundant, IntFlag(f.redundant, "--redundant-experts", 0));
  }
  FP_ASSIGN_OR_RETURN(const std::optional<ModelSpec> model, ReadModel(f, catalog, r.counts.experts()));
  int64_t hidden = kDefaultExpertsHidden;
  if (f.hidden.given()) {
    FP_ASSIGN_OR_RETURN(hidden, IntFlag(f.hidden, "--hidden", 1));
    if (hidden > kMaxAssignmentBytes / kAssignmentElementBytes) {
      return FlagError("--hidden", fmt::format("expected at most {}, got {}",
                                               kMaxAssignmentBytes / kAssignmentElementBytes, hidden));
    }
  } else if (model) {
    hidden = model->hidden;
  } else {
    r.derived.push_back(fmt::format("hidden {}: default (neither --model nor --hidden given)", hidden));
  }
  r.bytes_per_assignment = Bytes(hidden * kAssignmentElementBytes);
  if (!f.counts_file.given() && !f.steps.given())
    r.derived.push_back("steps 1: the counts are taken as one step (--steps not given)");
  FP_RETURN_IF_ERROR(Price(f, catalog, model, r));
  // Shape errors already name their flag ("--ranks: ...").
  FP_ASSIGN_OR_RETURN(const ExpertsResult result, AnalyzeExperts(r));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(ExpertsReportJson(result)));
    out << text;
  } else {
    out << ExpertsReportText(result);
  }
  return Status::Ok();
}

void AddText(CLI::App* cmd, TextFlag& flag, const std::string& name, const std::string& help) {
  flag.option = cmd->add_option(name, flag.text, help);
}

}  // namespace

void RegisterExpertsVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "experts",
      "Where should each MoE expert live? Contiguous vs balanced placement (with replicas of hot "
      "experts) from observed routing counts: per-rank load, maximum load, dispatch and combine "
      "bytes, and whether the update repays its weight copy. Exit 0 done, 2 usage, 3 invalid input.");
  cmd->footer(
      "Examples:\n"
      "  fleetplan experts --counts 100,10,10,10,50,5,5,10 --ranks 4\n"
      "  fleetplan experts --counts-file routing.csv --ranks 4 --redundant-experts 4 --model mixtral-8x7b --gpu h100-sxm-80g "
      "--json");
  auto flags = std::make_shared<ExpertsFlags>();
  ExpertsFlags& f = *flags;
  AddText(cmd, f.counts, "--counts", "Routed assignments per expert (totals), e.g. 10,7,3,1");
  AddText(cmd, f.counts_file, "--counts-file", "CSV: one line per step, one count per expert");
  AddText(cmd, f.ranks, "--ranks", "Expert-parallel ranks");
  f.ranks.option->required();
  AddText(cmd, f.redundant, "--redundant-experts", "Extra expert copies in all, a multiple of --ranks (default 0)");
  AddText(cmd, f.steps, "--steps", "Steps the --counts totals cover (default 1)");
  AddText(cmd, f.model, "--model", "MoE model (`fleetplan catalog models`): hidden size and expert size");
  AddText(cmd, f.hidden, "--hidden", "Hidden size for the bytes of one assignment (default: the model's, else 4096)");
  AddText(cmd, f.gpu, "--gpu", "GPU (with --model): prices the update");
  AddText(cmd, f.weight_dtype, "--weight-dtype", "Expert weight format (default: the model's native format)");
  AddText(cmd, f.link, "--link", "Link the expert copies use (default: the GPU's default_intra_link)");
  AddText(cmd, f.horizon, "--horizon-steps", "Steps an update must repay its copy within (default 1000)");
  cmd->add_option("--catalog", f.catalogs, "User catalog file (YAML); repeatable");
  cmd->add_flag("--json", f.json, "Print JSON instead of text");
  cmd->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& /*err*/) { return RunExperts(*flags, out); };
  });
}

}  // namespace fleetplan::cli
