// `fleetplan rollout compare`: a canary comparison of two records files, per workload
// class and pooled (rollout/records_compare.h; docs/rollout.md). Parses, calls
// libfleetplan, prints.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/rollout/records_compare.h"

namespace fleetplan::cli {
namespace {

struct RolloutFlags {
  std::string candidate;
  std::string baseline;
  std::vector<std::string> metrics;
  std::string tolerance = "5%";
  double alpha = 0.05;
  int64_t min_samples = 50;
  std::string format = "fleetplan";
  bool json = false;
};

Expected<double> Percent(const std::string& text) {
  if (text.empty() || text.back() != '%') return UsageError(fmt::format("--tolerance: expected a percentage such as 5%, got '{}'", text));
  try {
    size_t used = 0;
    const double v = std::stod(text.substr(0, text.size() - 1), &used);
    if (used != text.size() - 1 || !(v >= 0 && v < 1000)) throw std::invalid_argument("range");
    return v / 100;
  } catch (const std::exception&) {
    return UsageError(fmt::format("--tolerance: expected a percentage such as 5%, got '{}'", text));
  }
}

Status Compare(const RolloutFlags& f, std::ostream& out) {
  RecordsComparisonOptions opt;
  if (!f.metrics.empty()) opt.metrics = f.metrics;
  FP_ASSIGN_OR_RETURN(opt.tolerance, Percent(f.tolerance));
  if (!(f.alpha > 0 && f.alpha < 1)) return UsageError(fmt::format("--alpha: expected a level in (0, 1), got {}", f.alpha));
  if (f.min_samples < 1) return UsageError("--min-samples: expected at least 1");
  opt.alpha = f.alpha;
  opt.min_samples = f.min_samples;
  opt.format = f.format;
  FP_ASSIGN_OR_RETURN(Json result, CompareRecordsFiles(f.candidate, f.baseline, opt));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(result));
    out << text;
  } else {
    for (const auto& [metric, m] : result["metrics"].items()) {
      out << fmt::format("{}: {}\n", metric, m["verdict"].get<std::string>());
      out << fmt::format("  pooled: {}\n", m["aggregate"]["reason"].get<std::string>());
      for (const auto& [cls, c] : m["strata"].items()) out << fmt::format("  {}: {}\n", cls, c["reason"].get<std::string>());
      if (m["verdict"] != "pass") out << fmt::format("  => {}\n", m["reason"].get<std::string>());
    }
    out << fmt::format("verdict: {}\n", result["verdict"].get<std::string>());
  }
  if (result["verdict"] == "pass") return Status::Ok();
  return Status(StatusCode::kCheckFailed,
                fmt::format("the candidate does not pass ({}): {}", result["verdict"].get<std::string>(),
                            result["reasons"].front().get<std::string>()));
}

}  // namespace

void RegisterRolloutVerb(CLI::App& app, VerbAction& action) {
  auto f = std::make_shared<RolloutFlags>();
  CLI::App* sub = app.add_subcommand("rollout", "Rollout decisions from canary evidence (docs/rollout.md)");
  sub->require_subcommand(1);
  CLI::App* cmp = sub->add_subcommand(
      "compare",
      "Compare a candidate's per-request records with a baseline's from the same window: per metric, a\n"
      "Mann-Whitney U test and the median's relative change against a tolerance, per workload class and pooled.\n"
      "No data (empty, errored, NaN, too few samples) holds; strata that disagree with the pooled result hold.");
  cmp->add_option("--candidate", f->candidate, "Candidate records (requests.jsonl)")->required();
  cmp->add_option("--baseline", f->baseline, "Baseline records (requests.jsonl)")->required();
  cmp->add_option("--metric", f->metrics, "ttft_ms, tpot_ms, e2e_ms, itl_max_ms (repeatable; default ttft_ms e2e_ms)");
  cmp->add_option("--tolerance", f->tolerance, "Accepted slowdown of the median (default 5%)");
  cmp->add_option("--alpha", f->alpha, "Two-sided significance level (default 0.05)");
  cmp->add_option("--min-samples", f->min_samples, "Usable samples needed per side and class (default 50)");
  cmp->add_option("--format", f->format, "Records format of both files (default fleetplan)");
  cmp->add_flag("--json", f->json, "Print the comparison as JSON");
  cmp->footer(
      "Exit codes: 0 pass; 1 fail (a regression beyond the tolerance) or hold (no data, or strata that\n"
      "disagree with the pooled result); 2 usage error; 3 unreadable records.\n"
      "Example:\n"
      "  fleetplan rollout compare --candidate out/fp8/requests.jsonl --baseline out/bf16/requests.jsonl");
  cmp->callback([f, &action] { action = [f](std::ostream& out, std::ostream&) { return Compare(*f, out); }; });
}

}  // namespace fleetplan::cli
