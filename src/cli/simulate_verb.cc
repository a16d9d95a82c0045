// `fleetplan simulate [SCENARIO]`: run a scenario (the built-in Atlas one by default)
// through the fleet simulator and write its report. Parses, calls fleet/run.h, prints.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/flag_error.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/report/simulation_page.h"

namespace fleetplan::cli {
namespace {

struct SimulateFlags {
  std::string scenario;
  std::vector<std::string> catalogs;
  std::optional<std::string> out;
  std::string seed;
  std::string requests;
  std::string duration;
  bool json = false;
  bool print_scenario = false;
  bool no_requests = false;
  bool no_timeline = false;
  bool no_html = false;
  bool quiet = false;
};

Expected<int64_t> ParseCount(std::string_view flag, const std::string& text, int64_t min) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ptr == end && !text.empty() && ec == std::errc::result_out_of_range) {
    return FlagValueError(flag, fmt::format("expected an integer from {} to {}, got '{}'", min,
                                            std::numeric_limits<int64_t>::max(), text));
  }
  if (ptr == end && !text.empty() && ec == std::errc() && v >= min) return v;
  return FlagValueError(flag, fmt::format("expected an integer >= {}, got '{}'", min, text));
}

// The progress line of a run: simulated time against the workload's duration when it has
// one (arrivals stop there; the rest is the drain), else requests against the request
// cap, else requests with no total (a trace replayed to its end).
class SimulateProgress {
 public:
  SimulateProgress(std::ostream& err, bool quiet, const Scenario& scenario, const RunOptions& opt) {
    const bool overridden = opt.duration || opt.requests;
    const std::optional<Duration> duration = overridden ? opt.duration : scenario.workload.duration;
    const std::optional<int64_t> requests = overridden ? opt.requests : scenario.workload.requests;
    const ProgressOptions options = ProgressFor(quiet);
    if (duration) {
      duration_ = *duration;
      total_ = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(duration->seconds())));
      progress_ = std::make_unique<Progress>(err, "simulate", "simulated s", total_, options);
    } else {
      progress_ = std::make_unique<Progress>(err, "simulate", "requests", requests.value_or(0), options);
    }
  }

  SimulateProgress(const SimulateProgress&) = delete;
  SimulateProgress& operator=(const SimulateProgress&) = delete;
  ~SimulateProgress() { progress_->Abandon(); }  // no final line for a run that failed

  ProgressFn Fn() {
    if (!progress_->drawing()) return {};
    return [this](SimTime now, int64_t done) { Update(now, done); };
  }

  void Update(SimTime now, int64_t done) {
    if (!duration_) {
      progress_->Update(done);
      return;
    }
    const bool draining = now.since_start() >= *duration_;
    progress_->SetDetail(fmt::format("{} requests done{}", done, draining ? ", arrivals over, draining" : ""));
    progress_->Update(std::min(total_, static_cast<int64_t>(now.seconds())));
  }

  // The last line states the run's end, not the last sample.
  void Finish(const RunResult& result) {
    if (duration_) {
      progress_->SetDetail(fmt::format("{} requests done, simulated to {:.1f} s", result.requests,
                                       result.simulated_end.seconds()));
      progress_->Update(total_);
    } else {
      progress_->Update(result.requests);
    }
    progress_->Finish();
  }

 private:
  std::optional<Duration> duration_;
  int64_t total_ = 0;
  std::unique_ptr<Progress> progress_;
};

Status RunSimulate(const SimulateFlags& f, std::ostream& out, std::ostream& err) {
  if (f.print_scenario) {
    if (!f.scenario.empty()) {
      return UsageError(fmt::format(
          "fleetplan simulate: --print-scenario prints the built-in Atlas scenario and takes no SCENARIO "
          "(got '{}'); the notes of `fleetplan simulate {}` (report.json `notes`) list every default filled in",
          f.scenario, f.scenario));
    }
    if (f.json) {
      return UsageError(
          "fleetplan simulate: --print-scenario prints the scenario as YAML, the format scenarios are "
          "written in; drop --json");
    }
    out << AtlasScenarioYaml();
    return Status::Ok();
  }
  ScenarioLoadOptions load;
  load.catalogs = f.catalogs;
  FP_ASSIGN_OR_RETURN(Scenario scenario, f.scenario.empty() ? LoadAtlasScenario(load) : LoadScenario(f.scenario, load));
  RunOptions opt;
  if (f.out) {
    if (f.out->empty()) return UsageError("--out: expected a folder name, got '' (leave --out out for output.dir)");
    opt.out_dir = *f.out;
  }
  if (!f.seed.empty()) {
    FP_ASSIGN_OR_RETURN(int64_t seed, ParseCount("--seed", f.seed, 0));
    opt.seed = static_cast<uint64_t>(seed);
  }
  if (!f.requests.empty()) {
    FP_ASSIGN_OR_RETURN(opt.requests, ParseCount("--requests", f.requests, 1));
  }
  if (!f.duration.empty()) {
    auto d = ParsePositiveDuration(f.duration);
    if (!d.ok()) return FlagValueError("--duration", d.status().message());
    opt.duration = *d;
  }
  if (f.no_requests) opt.write_requests = false;
  if (f.no_timeline) opt.write_timeline = false;
  SimulateProgress progress(err, f.quiet, scenario, opt);
  opt.progress = progress.Fn();
  // report.html is one of the run's files: written, or an earlier run's removed, with the others.
  RunPage page{"report.html", nullptr};
  if (scenario.output.html && !f.no_html) {
    page.render = [](const Json& report) -> Expected<std::string> { return report::SimulationHtml(report); };
  }
  opt.pages.push_back(std::move(page));
  FP_ASSIGN_OR_RETURN(RunResult result, RunScenario(scenario, opt));
  progress.Finish(result);
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(result.report));
    out << text;
  } else {
    out << result.summary;
  }
  return Status::Ok();
}

}  // namespace

void RegisterSimulateVerb(CLI::App& app, VerbAction& action) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Simulate a fleet on a workload and report per-class latency, SLO attainment and goodput.\n"
      "With no SCENARIO, runs the built-in Atlas scenario (print it with --print-scenario).");
  sub->add_option("scenario", flags->scenario, "Scenario YAML file (format: docs/scenario.md); - reads it from stdin");
  sub->add_option("--catalog", flags->catalogs,
                  "User catalog file (YAML: models, gpus, links) read after the scenario's `catalog:` files; "
                  "repeatable");
  sub->add_option("--out", flags->out, "Output folder (default: the scenario's output.dir)");
  sub->add_option("--seed", flags->seed, "Master seed (default: the scenario's seed)");
  // Exclusive, as in the trace verbs: each replaces both of the scenario's limits.
  auto* requests = sub->add_option("--requests", flags->requests,
                                   "Stop the workload after N requests (replaces the scenario's duration/requests)");
  auto* duration = sub->add_option("--duration", flags->duration,
                                   "Stop arrivals after this simulated time, e.g. 2m (replaces the scenario's "
                                   "duration/requests)");
  requests->excludes(duration);
  sub->add_flag("--json", flags->json, "Print report.json to stdout instead of the table");
  sub->add_flag("--print-scenario", flags->print_scenario, "Print the built-in Atlas scenario YAML and exit (no SCENARIO, no --json)");
  sub->add_flag("--no-requests", flags->no_requests, "Do not write requests.jsonl");
  sub->add_flag("--no-timeline", flags->no_timeline, "Do not write timeline.json");
  sub->add_flag("--no-html", flags->no_html, "Do not write report.html");
  sub->add_flag("--quiet", flags->quiet,
                "No progress on stderr (otherwise: a bar with ETA over simulated time on a terminal, plain "
                "lines in a log)");
  sub->footer(
      "Exit codes: 0 done, 1 the fleet cannot run (a pool holds no KV block), 2 usage, 3 invalid\n"
      "input (located: file:line:col).\n"
      "Outputs (under --out or output.dir): report.json (canonical, byte-identical for the same\n"
      "scenario and seed), requests.jsonl (one record per request; `fleetplan report` reads it),\n"
      "timeline.json (Chrome trace events: open in Perfetto), report.html (plots and tables of\n"
      "report.json in one self-contained file: open it in any browser, offline; docs/report.md).\n"
      "A file not written this run (--no-requests, --no-timeline, --no-html) is removed if an\n"
      "earlier run left it there.\n"
      "Limits (tokens per request, users, file sizes, nesting; how outputs are written):\n"
      "docs/limits.md.\n"
      "What a scenario can describe beyond one pool of replicas (docs/scenario.md): prefill/decode\n"
      "pools (deployment.pools, deployment.disaggregation), KV transfer fault drills\n"
      "(faults.kv_transfer), hot-prefix replication (router.replication), LoRA adapters\n"
      "(engine.adapters), prefix-cache invalidations (workload.events).\n"
      "Examples:\n"
      "  fleetplan simulate\n"
      "  fleetplan simulate --print-scenario > atlas.yaml\n"
      "  fleetplan simulate atlas.yaml --seed 7 --out out/run7 --json");
  sub->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& err) { return RunSimulate(*flags, out, err); };
  });
}

}  // namespace fleetplan::cli
