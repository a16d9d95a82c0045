// `fleetplan plan [PLAN.yaml] --as-of TIME`: the release decision bound to its inputs
// (decision/plan.h). Parses, calls libfleetplan, prints.
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/decision/bundle.h"
#include "fleetplan/decision/plan.h"
#include "fleetplan/evidence/signing.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/report/plan_page.h"

namespace fleetplan::cli {
namespace {

struct PlanFlags {
  std::string bundle;
  std::string as_of;
  std::string out;
  std::string policy_key;
  std::string print_bundle;
  bool json = false;
  bool quiet = false;
  bool no_sensitivity = false;
  bool no_html = false;
};

Status RunPlanVerb(const PlanFlags& f, std::ostream& out, std::ostream& err) {
  if (!f.print_bundle.empty()) {
    // Only into a new or empty folder: an edited bundle is never overwritten.
    std::error_code ec;
    const std::filesystem::path dir(f.print_bundle);
    if (std::filesystem::exists(dir, ec) &&
        !(std::filesystem::is_directory(dir, ec) && std::filesystem::is_empty(dir, ec))) {
      return UsageError(fmt::format("--print-bundle: '{}' already exists and is not an empty folder; the bundle is "
                                    "written only to a new or empty folder, so edited files are never overwritten "
                                    "(pick another folder, or remove this one)",
                                    f.print_bundle));
    }
    FP_RETURN_IF_ERROR(WriteAtlasBundle(f.print_bundle));
    out << fmt::format("wrote the Atlas bundle ({} files) to {}; run `fleetplan plan {}/plan.yaml --as-of TIME`\n",
                       AtlasBundleFiles().size(), f.print_bundle, f.print_bundle);
    return Status::Ok();
  }
  if (f.as_of.empty()) {
    return UsageError("plan: --as-of TIME is required: evidence freshness is judged against one explicit time, never the "
                      "clock (e.g. --as-of 2026-12-01T00:00:00Z)");
  }
  auto as_of = ParseUtcTime(f.as_of);
  if (!as_of.ok()) return UsageError(fmt::format("--as-of: {}", as_of.status().message()));
  PlanOptions options;
  options.as_of = *as_of;
  options.sensitivity = !f.no_sensitivity;
  if (!f.policy_key.empty()) {
    auto pem = ReadPublicKeyFile(f.policy_key);
    if (!pem.ok()) return UsageError(fmt::format("--policy-key: {}", pem.status().message()));
    options.policy_key_pem = *pem;
  }
  std::string bundle_path = f.bundle;
  std::string dir = f.out;
  if (bundle_path.empty()) {
    // The built-in bundle is written beside the plan, so the bound inputs are on disk.
    if (dir.empty()) dir = "out/atlas";
    FP_RETURN_IF_ERROR(WriteAtlasBundle(dir + "/bundle"));
    bundle_path = dir + "/bundle/plan.yaml";
  }
  FP_ASSIGN_OR_RETURN(PlanBundle bundle, LoadPlanBundle(bundle_path));
  if (dir.empty()) dir = fmt::format("out/plan-{}", bundle.name);
  const auto steps = static_cast<int64_t>(PlanSteps().size());
  Progress progress(err, "plan " + bundle.name, "steps", steps, ProgressFor(f.quiet));
  int64_t done = 0;
  options.on_step = [&](std::string_view step) {
    for (int64_t i = 0; i < steps; ++i) {
      if (PlanSteps()[static_cast<size_t>(i)] == step) done = i;
    }
    progress.Update(done);
    progress.SetDetail(std::string(step));
  };
  auto result = RunPlan(bundle, options);
  if (!result.ok()) {
    progress.Abandon();
    return result.status();
  }
  progress.Update(steps);
  progress.Finish();
  FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(result->json));
  FP_RETURN_IF_ERROR(WriteFileAtomic(dir + "/plan.json", text));
  FP_RETURN_IF_ERROR(WriteFileAtomic(dir + "/plan.txt", result->text));
  std::string written = fmt::format("{0}/plan.json, {0}/plan.txt", dir);
  FP_RETURN_IF_ERROR(WriteOrRemovePage(dir + "/report.html", !f.no_html, [&] { return report::PlanHtml(result->json); }, written));
  if (f.json) {
    out << text;
  } else {
    out << result->text << fmt::format("wrote {}\n", written);
  }
  if (result->release != GateDecision::kPass) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("release {}: see the deciding reasons above (plan.json decision.reasons)",
                              GateDecisionName(result->release)));
  }
  return Status::Ok();
}

}  // namespace

void RegisterPlanVerb(CLI::App& app, VerbAction& action) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "The release decision, bound to the inputs it came from: evidence judged fresh at --as-of and signed as\n"
      "the policy requires; workload coverage and controls; layouts ranked on the inventory's GPU; the fleet\n"
      "sized across failure domains surviving the policy's loss, priced, and again at the pessimistic edge of\n"
      "the step model's stated error (which layout wins at both edges, and why, in ms of collectives per\n"
      "decode step); the chosen fleet simulated at peak through real admission and routing; the policy's\n"
      "gates; the rollout stage; and what would reopen the decision (format: docs/plan.md).");
  sub->add_option("bundle", flags->bundle, "Plan bundle YAML (default: the built-in Atlas bundle, written to OUT/bundle)");
  sub->add_option("--as-of", flags->as_of, "The time evidence freshness is judged at, RFC 3339 UTC (required)");
  sub->add_option("--out", flags->out, "Output folder (default: out/atlas for the built-in bundle, else out/plan-<name>)");
  sub->add_option("--policy-key", flags->policy_key,
                  "Public key (PEM) deployment trusts for policy: the policy and ladder must carry its `policy` signature");
  sub->add_option("--print-bundle", flags->print_bundle, "Write the built-in Atlas bundle's files to DIR and exit");
  sub->add_flag("--json", flags->json, "Print plan.json to stdout instead of plan.txt");
  sub->add_flag("--quiet", flags->quiet, "No progress line on stderr");
  sub->add_flag("--no-sensitivity", flags->no_sensitivity, "Skip the policy's perturbations (no review triggers)");
  sub->add_flag("--no-html", flags->no_html, "Do not write report.html (and remove an earlier one)");
  sub->footer(
      "Output: DIR/plan.json (digest, inputs with freshness, decision {release, summary, stage, reasons}, checks,\n"
      "coverage, controls, layout, capacity, simulation, gates, rollout, sensitivity, review_triggers),\n"
      "DIR/plan.txt (the one-screen summary) and DIR/report.html (the decision first, then its checks, inputs,\n"
      "fleet, simulation, gates, rollout stages and sensitivity as tables and charts; opens offline). Same bundle\n"
      "and --as-of: byte-identical plan.json and report.html.\n"
      "Exit codes: 0 release pass; 1 release fail or hold (the reasons name the gate and its numbers); 2 usage\n"
      "error; 3 invalid bundle, policy or evidence (located).\n"
      "Examples:\n"
      "  fleetplan plan --as-of 2026-12-01T00:00:00Z                 # the built-in Atlas bundle\n"
      "  fleetplan plan --print-bundle atlas && fleetplan plan atlas/plan.yaml --as-of 2026-12-01T00:00:00Z\n"
      "  fleetplan plan atlas/plan.yaml --as-of 2026-12-01T00:00:00Z --json --quiet | jq .decision");
  sub->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& err) { return RunPlanVerb(*flags, out, err); };
  });
}

}  // namespace fleetplan::cli
