// `fleetplan validate RUN_DIR [--profile DIR] [--calibration FILE] [--json]`: replays a
// measured run directory (docs/validate.md) through the engine with the kernel-table step
// model and prints measured vs predicted TTFT / TPOT / E2E (fleet/fidelity.h).
// `fleetplan validate --fit OUT RUN_DIR...`: fits a calibration file on the given runs.
// `fleetplan validate RESULT.json... --setup SETUP.yaml [--json] [--html FILE]`: replays
// `vllm bench serve` result files on the setup's deployment (fleet/bench_validation.h).
// Exit 0 done, 2 usage, 3 invalid input (a missing or inconsistent run directory, result
// file or setup, located).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/fleet/bench_validation.h"
#include "fleetplan/fleet/fidelity.h"
#include "fleetplan/metrics/vllm_bench.h"
#include "fleetplan/report/validate_page.h"

namespace fleetplan::cli {
namespace {

struct ValidateFlags {
  std::vector<std::string> runs;
  std::string profile;
  std::string calibration;
  std::string fit_out;
  std::string setup;  // with result files instead of run directories
  std::string html;
  bool json = false;
  bool warm_prefix_cache = false;
  bool allow_mismatch = false;
  bool quiet = false;
  bool independent_dp_ranks = false;
  bool no_shrink = false;
};

// The queue time series in two lines: mean and max of running and waiting requests over
// the measured ticks, measured vs predicted (the per-tick rows are in --json).
void PrintQueue(const Json& series, std::ostream& out) {
  if (series.empty()) {
    out << "queue: no time series (the run directory has no timeseries.csv)\n";
    return;
  }
  for (const char* what : {"running", "waiting"}) {
    std::string line = fmt::format("queue {:<8}", what);
    for (const char* side : {"measured", "predicted"}) {
      double sum = 0;
      int64_t max = 0;
      for (const Json& row : series) {
        const int64_t v = row[std::string(side) + "_" + what].get<int64_t>();
        sum += static_cast<double>(v);
        max = std::max(max, v);
      }
      line += fmt::format("  {} mean {:.1f} max {}", side, sum / static_cast<double>(series.size()), max);
    }
    out << line << fmt::format("  ({} ticks; per tick in --json)\n", series.size());
  }
}

// The error by step kind (docs/validate.md "Error by step kind"): per span, the predicted
// time in each kind, its contribution to the span's error and the kind's fitted step error.
void PrintKinds(const Json& k, std::ostream& out) {
  out << "steps by kind:";
  for (const char* kind : {"prefill", "decode", "mixed"}) {
    out << fmt::format("  {} {} (mean {:.2f} ms)", kind, k["steps"][kind]["count"].get<int64_t>(),
                       k["steps"][kind]["mean_ms"].get<double>());
  }
  out << "\n";
  for (const char* span : {"ttft", "decode"}) {
    const Json& s = k[span];
    out << fmt::format("{:<6} span: measured mean {:.2f} ms, error {:+.1f}% =", span, s["measured_ms"].get<double>(),
                       s["total_error_pct"].get<double>());
    for (const auto& item : s.at("kinds").items()) {
      const std::string& name = item.key();
      const Json& x = item.value();
      const Json& e = x["step_error_pct"];
      out << fmt::format("  {} {:+.1f}% ({:.0f}% of time, step error {})", name, x["contribution_pct"].get<double>(),
                         x["share_pct"].get<double>(),
                         e.is_null() ? std::string("not identified") : fmt::format("{:+.1f}%", e.get<double>()));
    }
    out << "\n";
  }
}

void PrintText(const Json& j, std::ostream& out) {
  out << fmt::format("run {} ({}; tp {}, dp {}, ep {})\n", j["run"]["name"].get<std::string>(),
                     j["run"]["model"].get<std::string>(), j["run"]["tp"].get<int64_t>(), j["run"]["dp"].get<int64_t>(),
                     j["run"]["ep"].get<int64_t>());
  std::string fitted_on;
  for (const Json& r : j["calibration"]["fitted_on"]) fitted_on += (fitted_on.empty() ? "" : ", ") + r.get<std::string>();
  // The built-in zero calibration's source already states its values ("none (zero host
  // overhead, scale 1)"); a file's line gives them, and the runs it was fitted on.
  const std::string source = j["calibration"]["source"].get<std::string>();
  out << fmt::format("profile {}\n", j["profile"].get<std::string>());
  if (source.rfind("none", 0) == 0) {
    out << fmt::format("calibration {}\n", source);
  } else {
    out << fmt::format(
        "calibration {} (host overhead {} us per step + {} us per sequence + {} ns per prompt "
        "token, gpu scale {}{})\n",
        source, j["calibration"]["host_overhead_us"].get<double>(),
        j["calibration"]["host_per_sequence_us"].get<double>(),
        j["calibration"]["host_per_prefill_token_ns"].get<int64_t>(), j["calibration"]["gpu_time_scale"].get<double>(),
        fitted_on.empty() ? "" : "; fitted on: " + fitted_on);
  }
  out << fmt::format("{:<6}{:>34}{:>34}{:>34}{:>34}{:>9}\n", "metric", "mean measured/predicted ms",
                     "p50 measured/predicted ms", "p90 measured/predicted ms", "p99 measured/predicted ms", "MAPE %");
  for (const char* m : {"ttft", "tpot", "e2e"}) {
    const Json& x = j["metrics"][m];
    std::string line = fmt::format("{:<6}", m);
    for (const char* k : {"mean", "p50", "p90", "p99"}) {
      line += fmt::format("{:>34}", fmt::format("{:.2f}/{:.2f} ({:+.1f}%)", x["measured_ms"][k].get<double>(),
                                                x["predicted_ms"][k].get<double>(),
                                                x[std::string(k) + "_error_pct"].get<double>()));
    }
    out << line << fmt::format("{:>9.2f}\n", x["mape_pct"].get<double>());
  }
  PrintKinds(j["by_step_kind"], out);
  PrintQueue(j["timeseries"], out);
  out << fmt::format("steps {}, extrapolated {}\n", j["simulation"]["steps"].get<int64_t>(),
                     j["simulation"]["extrapolated_steps"].get<int64_t>());
  for (const Json& n : j["notes"]) out << "note: " << n.get<std::string>() << "\n";
}

// The --fit path is checked before the fit (tens of seconds of replays), so a path that
// cannot take the file fails at once: a folder, or a parent that is not a writable folder.
Status CheckFitOutput(const std::string& path) {
  const auto fail = [&](std::string_view why) {
    return LocatedError(SourceLocation{}, "--fit", fmt::format("cannot write '{}': {}", path, why));
  };
  if (path.empty()) return fail("no file name");
  if (Expected<OutputTarget> target = ResolveOutput(path); !target.ok()) {
    return LocatedError(SourceLocation{}, "--fit", target.status().message());
  }
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::absolute(path, ec).parent_path();
  while (!parent.empty() && !std::filesystem::exists(parent, ec) && parent != parent.parent_path()) {
    parent = parent.parent_path();
  }
  if (!std::filesystem::is_directory(parent, ec)) return fail(fmt::format("'{}' is not a folder", parent.string()));
  if (::access(parent.c_str(), W_OK) != 0) return fail(fmt::format("the folder '{}' is not writable", parent.string()));
  return Status::Ok();
}

Status RunFit(const ValidateFlags& f, std::ostream& out, std::ostream& err) {
  FP_RETURN_IF_ERROR(CheckFitOutput(f.fit_out));
  std::vector<MeasuredRun> runs;
  for (const std::string& dir : f.runs) {
    FP_ASSIGN_OR_RETURN(MeasuredRun run, LoadMeasuredRun(dir));
    runs.push_back(std::move(run));
  }
  // One replay per run and round (seconds), so a progress line over the most replays the
  // fit may take (a fit that settles early completes the line; none when it fails).
  std::unique_ptr<Progress> progress;
  int64_t most = 0;
  const auto on_point = [&](int64_t done, int64_t total) {
    if (!progress) progress = std::make_unique<Progress>(err, "validate --fit", "replays", total, ProgressFor(f.quiet));
    most = total;
    progress->Update(done);
  };
  Expected<Calibration> fitted = FitCalibration(runs, {}, on_point, /*cross_validate=*/!f.no_shrink);
  if (progress && !fitted.ok()) progress->Abandon();
  if (progress && fitted.ok()) progress->Update(most);
  progress.reset();
  FP_ASSIGN_OR_RETURN(const Calibration c, std::move(fitted));
  for (const std::string& w : CalibrationWarnings(c)) err << "warning: validate --fit: " << w << "\n";
  FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(CalibrationJson(c)));
  if (const Status written = WriteOutputFile(f.fit_out, text + "\n"); !written.ok()) {
    return LocatedError(SourceLocation{}, "--fit", written.message());
  }
  out << text << "\n";
  return Status::Ok();
}

// Result files of `vllm bench serve` on the deployment --setup describes.
Status RunBenchValidate(const ValidateFlags& f, std::ostream& out) {
  if (!f.fit_out.empty()) return UsageError("--fit fits run directories; it does not take --setup");
  if (!f.profile.empty() || !f.calibration.empty() || f.allow_mismatch || f.independent_dp_ranks) {
    return UsageError("--profile, --calibration, --allow-mismatch and --independent-dp-ranks replay run directories; "
                      "with --setup the step model is the setup's (engine.step_model)");
  }
  FP_ASSIGN_OR_RETURN(const BenchSetup setup, LoadBenchSetup(f.setup));
  std::vector<VllmBenchResult> results;
  for (const std::string& path : f.runs) {
    FP_ASSIGN_OR_RETURN(VllmBenchResult r, ReadVllmBenchResult(path));
    results.push_back(std::move(r));
  }
  BenchReplayOptions replay;
  replay.warm_prefix_cache = f.warm_prefix_cache;
  FP_ASSIGN_OR_RETURN(const BenchValidation v, ValidateBenchResults(setup, results, replay));
  if (!f.html.empty()) {
    if (const Status written = WriteFileAtomic(f.html, report::BenchValidationHtml(v.json)); !written.ok()) {
      return LocatedError(SourceLocation{}, "--html", written.message());
    }
  }
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(v.json));
    out << text;
  } else {
    out << BenchValidationText(v.json);
    if (!f.html.empty()) out << "wrote " << f.html << "\n";
  }
  return Status::Ok();
}

Status RunValidate(const ValidateFlags& f, std::ostream& out, std::ostream& err) {
  if (!f.setup.empty()) return RunBenchValidate(f, out);
  if (!f.html.empty()) return UsageError("--html draws result files against a setup: give --setup SETUP.yaml");
  if (f.warm_prefix_cache) return UsageError("--warm-prefix-cache replays result files: give --setup SETUP.yaml");
  for (const std::string& path : f.runs) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) {
      return UsageError(fmt::format("'{}' is a file: a vllm bench serve result file needs --setup SETUP.yaml (the "
                                    "deployment it ran on; docs/validate.md); a run directory is a folder",
                                    path));
    }
  }
  if (!f.fit_out.empty()) return RunFit(f, out, err);
  if (f.runs.size() != 1) return UsageError("validate takes one RUN_DIR (several only with --fit)");
  FP_ASSIGN_OR_RETURN(const MeasuredRun run, LoadMeasuredRun(f.runs[0]));
  ValidationOptions options;
  options.profile_dir = f.profile;
  options.allow_mismatch = f.allow_mismatch;
  options.independent_dp_ranks = f.independent_dp_ranks;
  if (!f.calibration.empty()) {
    FP_ASSIGN_OR_RETURN(options.calibration, LoadCalibration(f.calibration));
  }
  FP_ASSIGN_OR_RETURN(const ValidationResult res, ValidateRun(run, options));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(res.json));
    out << text;
  } else {
    PrintText(res.json, out);
  }
  return Status::Ok();
}

}  // namespace

void RegisterValidateVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Replay a measured vLLM run directory (meta.json, requests.jsonl, timeseries.csv) with the "
      "kernel-table step model and report measured vs predicted TTFT / TPOT / E2E (mean, p50, p90, "
      "p99, signed error, per-request MAPE) and the queue time series. With --fit OUT, fit a "
      "calibration file on the given runs. With --setup SETUP.yaml, the arguments are `vllm bench serve "
      "--save-result` files replayed on the setup's deployment: measured vs simulated TTFT / TPOT / E2E per "
      "rate or concurrency point. Exit 0 done, 2 usage, 3 invalid input.");
  cmd->footer(
      "Examples:\n"
      "  fleetplan validate runs/h100/llama-8b/run1\n"
      "  fleetplan validate runs/h100/llama-8b/run1 --calibration calibration.json --json\n"
      "  fleetplan validate --fit calibration.json runs/h100/llama-8b/run1 runs/h100/llama-8b/run2\n"
      "  fleetplan validate qps_1.json qps_4.json qps_inf.json --setup setup.yaml --html validate.html");
  auto flags = std::make_shared<ValidateFlags>();
  ValidateFlags& f = *flags;
  cmd->add_option("RUN_DIR", f.runs,
                  "Run directory (several with --fit), or with --setup one or more vllm bench serve result files")
      ->required();
  cmd->add_option("--setup", f.setup,
                  "The deployment the result files ran on (model, gpu, tp, pp, engine flags; docs/validate.md): the "
                  "arguments are then vllm bench serve --save-result files");
  cmd->add_option("--html", f.html, "With --setup: write a self-contained page overlaying measured and simulated "
                                    "mean TTFT and TPOT against rate or concurrency");
  cmd->add_option("--profile", f.profile,
                  "Kernel-table folder (with dense.csv), or its parent holding tp<N>/ "
                  "(default: <run>/../../../perf/<hw>/<model>/bf16/tp<N>)");
  cmd->add_option("--calibration", f.calibration, "Calibration file (fleetplan-calibration-v2 JSON; v1 is read too)");
  cmd->add_option("--fit", f.fit_out,
                  "Fit a calibration on the given runs and write it to this file; with two or more runs the fit is "
                  "shrunk toward no calibration by the share that predicts best a run held out of the others' fit");
  cmd->add_flag("--no-shrink", f.no_shrink,
                "With --fit: keep the least-squares fit whole (an in-sample look at what the runs fit; not "
                "cross-validated)");
  cmd->add_flag("--allow-mismatch", f.allow_mismatch,
                "Replay with a profile whose meta.json names another model or GPU than the run (refused "
                "otherwise, exit 3); the report's notes say so");
  cmd->add_flag("--independent-dp-ranks", f.independent_dp_ranks,
                "Replay the data-parallel ranks of an MoE model as independent replicas rather than in "
                "lock-step (an ablation: what the lock-step changes)");
  cmd->add_flag("--warm-prefix-cache", f.warm_prefix_cache,
                "With --setup: the prompts had been served before each run (runs of the same prompts one after "
                "another on one server with prefix caching on): send each file's prompts once first, so its "
                "requests find them cached");
  cmd->add_flag("--json", f.json, "Print the canonical JSON report");
  cmd->add_flag("--quiet", f.quiet, "No progress on stderr during --fit (otherwise: a bar with ETA on a terminal, "
                                    "plain lines in a log)");
  cmd->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& err) { return RunValidate(*flags, out, err); };
  });
}

}  // namespace fleetplan::cli
