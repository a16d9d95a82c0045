// `fleetplan capacity CAPACITY.yaml`: the fleet a peak demand needs across failure
// domains, surviving the declared loss, priced, and verified by simulation
// (capacity/capacity.h). Parses, calls libfleetplan, prints.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/capacity/capacity.h"
#include "fleetplan/capacity/spec.h"
#include "fleetplan/core/json.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/report/capacity_page.h"

namespace fleetplan::cli {
namespace {

struct CapacityFlags {
  std::string spec;
  std::string out;
  std::optional<int> jobs;  // not given: every hardware thread
  bool json = false;
  bool quiet = false;
  bool no_verify = false;
  bool no_html = false;
};

// Why the run exits 1 although it produced a result, or empty.
std::string Verdict(const Json& result) {
  if (!result["feasible"].get<bool>()) {
    return "no layout gives a fleet that survives the declared loss in these domains (see `reason` per layout)";
  }
  if (!result["within_budget"].get<bool>()) {
    return fmt::format("the fleet that survives the declared loss costs ${:.2f}/month, over the budget of ${:.2f}/month; "
                       "capacity was not reduced to fit (raise the budget, relax `survive`, or add cheaper capacity)",
                       result["cost"]["per_month"].get<double>(), result["budget"]["per_month"].get<double>());
  }
  const Json& v = result["simulated_after_loss"];
  if (v.is_object() && !v["meets_targets"].get<bool>()) {
    return fmt::format("simulated with '{}' lost at {} s, the fleet misses its attainment targets after the loss "
                       "(simulated_after_loss in capacity.json)",
                       v["scenario"].get<std::string>(), v["loss_at_s"].dump());
  }
  return "";
}

Status RunCapacity(const CapacityFlags& f, std::ostream& out, std::ostream& err) {
  if (f.jobs && *f.jobs < 1) {
    return UsageError(fmt::format("--jobs: expected a number of threads >= 1, got {}", *f.jobs));
  }
  FP_ASSIGN_OR_RETURN(CapacitySpec spec, LoadCapacitySpec(f.spec));
  const std::string stem = std::filesystem::path(f.spec).stem().string();
  const std::string dir = f.out.empty() ? fmt::format("out/capacity-{}", stem.empty() ? "spec" : stem) : f.out;
  const auto layouts = static_cast<int64_t>(std::max<size_t>(1, spec.layouts.size()));
  Progress progress(err, "capacity " + stem, "stages", layouts + (f.no_verify ? 0 : 1), ProgressFor(f.quiet));
  CapacityOptions options;
  options.jobs = f.jobs.value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  options.verify = !f.no_verify;
  int64_t stage = -1;
  options.on_stage = [&](std::string_view what) {
    progress.Update(std::max<int64_t>(0, stage));
    stage = stage < 0 ? layouts : stage + 1;
    progress.SetDetail(std::string(what));
  };
  auto result = SizeCapacity(spec, options);
  if (!result.ok()) {
    progress.Abandon();
    return result.status();
  }
  progress.Update(layouts + (f.no_verify ? 0 : 1));
  progress.Finish();
  const Json doc = CapacityJson(*result);
  FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(doc));
  const std::string path = dir + "/capacity.json";
  FP_RETURN_IF_ERROR(WriteFileAtomic(path, text));
  std::string written = path;
  FP_RETURN_IF_ERROR(WriteOrRemovePage(dir + "/capacity.html", !f.no_html, [&] { return report::CapacityHtml(doc); }, written));
  if (f.json) {
    out << text;
  } else {
    out << CapacityText(*result) << fmt::format("wrote {}\n", written);
  }
  const std::string verdict = Verdict(doc);
  if (!verdict.empty()) return Status(StatusCode::kCheckFailed, verdict);
  return Status::Ok();
}

}  // namespace

void RegisterCapacityVerb(CLI::App& app, VerbAction& action) {
  auto flags = std::make_shared<CapacityFlags>();
  CLI::App* sub = app.add_subcommand(
      "capacity",
      "Size the fleet a peak demand needs: per-replica capacity (a max-rate search on one replica, a sweep\n"
      "result or a declared rate), prompt / decode / concurrency / SLO requirements each as replicas with the\n"
      "binding one named, replicas placed across failure domains so the declared loss is survived, the cost at\n"
      "on-demand and committed prices against a budget, and the chosen fleet simulated with the deciding loss\n"
      "mid-run, grown (at 95%, 90%, ... 70% of its rate per replica) until it meets its targets there. A rate\n"
      "found by simulation also shows the fleet at the pessimistic edge of the step model's stated error\n"
      "(docs/step-models.md \"Measured error\") and names layouts that swap inside it (format: docs/capacity.md).");
  sub->add_option("spec", flags->spec, "Capacity spec YAML (version 1)");
  sub->add_option("--out", flags->out, "Output folder (default: out/capacity-<spec name>)");
  sub->add_option("--jobs", flags->jobs, "Layouts searched at once (default: every hardware thread); same output for any N");
  sub->add_flag("--json", flags->json, "Print capacity.json to stdout instead of the summary");
  sub->add_flag("--quiet", flags->quiet, "No progress line on stderr");
  sub->add_flag("--no-verify", flags->no_verify, "Skip the simulation of the chosen fleet through its deciding loss");
  sub->add_flag("--no-html", flags->no_html, "Do not write capacity.html");
  sub->footer(
      "Output: DIR/capacity.json (requirements, binding, loss_scenarios, set_by, fleet, cost, within_budget,\n"
      "simulated_after_loss, grown_for_loss, model_error, inside_band; the chosen layout at the top level,\n"
      "every layout under `layouts`) and\n"
      "DIR/capacity.html (the same figures as charts and tables; opens offline).\n"
      "Exit codes: 0 sized and verified; 1 over budget (the safe fleet is reported, never shrunk), no fleet fits\n"
      "the domains, or the simulated fleet misses its targets after the loss; 2 usage error; 3 invalid spec.\n"
      "Examples:\n"
      "  fleetplan capacity examples/capacity.yaml\n"
      "  fleetplan capacity examples/capacity.yaml --json --quiet | jq .fleet");
  sub->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& err) {
      if (flags->spec.empty()) return UsageError("capacity: a CAPACITY.yaml is required (format: docs/capacity.md)");
      return RunCapacity(*flags, out, err);
    };
  });
}

}  // namespace fleetplan::cli
