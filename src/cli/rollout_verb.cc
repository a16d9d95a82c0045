// `fleetplan rollout compare`: a canary comparison of two records files, per workload
// class and pooled (rollout/records_compare.h; docs/rollout.md). Parses, calls
// libfleetplan, prints.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/rollout/ladder.h"
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
  std::string ladder;
  std::string as_of;
  std::string policy_key;
};

Status Ladder(const RolloutFlags& f, std::ostream& out) {
  if (f.ladder.empty()) return UsageError("rollout: a LADDER.yaml is required, or `rollout compare` (docs/rollout.md)");
  if (f.as_of.empty()) return UsageError("rollout: --as-of TIME is required (e.g. 2026-12-01T00:00:00Z): freshness is judged at it");
  auto as_of = ParseUtcTime(f.as_of);
  if (!as_of.ok()) return UsageError("--as-of: " + as_of.status().message());
  FP_ASSIGN_OR_RETURN(fleetplan::Ladder ladder, LoadLadder(f.ladder));
  if (!f.policy_key.empty()) {
    FP_ASSIGN_OR_RETURN(std::string pem, ReadFile(f.policy_key));
    FP_RETURN_IF_ERROR(CheckLadderSignature(ladder, f.ladder + ".sig", pem));
  }
  FP_ASSIGN_OR_RETURN(Json result, EvaluateLadder(ladder, *as_of));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(result));
    out << text;
  } else {
    for (const Json& s : result["stages"]) {
      out << fmt::format("  {:<12} {:>5}%  {:<11} {}\n", s["name"].get<std::string>(),
                         RoundForReport(s["traffic"].get<double>() * 100, 4), s["verdict"].get<std::string>(),
                         s.contains("reason") ? s["reason"].get<std::string>() : "");
    }
    out << fmt::format("decision: {} at {} ({:g}% of traffic to {})\n", result["decision"].get<std::string>(),
                       result["stage"].get<std::string>(), result["traffic"].get<double>() * 100,
                       result["candidate"].get<std::string>());
    if (result.contains("rollback")) {
      out << fmt::format("rollback: candidate traffic 0%, {} serves, namespace {} kept for inspection\n",
                         result["rollback"]["serving"].get<std::string>(),
                         result["rollback"]["retained_namespace"].get<std::string>());
    }
  }
  if (result["decision"] == "promote") return Status::Ok();
  return Status(StatusCode::kCheckFailed, fmt::format("rollout {}: {}", result["decision"].get<std::string>(),
                                                      result["reasons"].front().get<std::string>()));
}

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
  CLI::App* sub = app.add_subcommand(
      "rollout",
      "Walk a rollout ladder (warm-up, shadow, 1% and 10% canaries, promotion) at an explicit time: each stage's\n"
      "evidence must be of its kind and fresh, its metrics must pass per class and pooled; the first stage that\n"
      "does not pass holds or rolls back (docs/rollout.md).");
  sub->require_subcommand(0, 1);
  sub->add_option("ladder", f->ladder, "Rollout ladder YAML (version 1)");
  sub->add_option("--as-of", f->as_of, "The time evidence freshness is judged at (RFC 3339 UTC)");
  sub->add_flag("--json", f->json, "Print rollout.json instead of the stages");
  sub->add_option("--policy-key", f->policy_key,
                  "Public key of the policy owners: LADDER.yaml.sig must be its `policy` signature");
  sub->footer(
      "Exit codes: 0 promote; 1 hold (missing, stale, unwarmed or no-data evidence; strata that disagree) or\n"
      "rollback (a metric regressed), or a ladder not signed by --policy-key; 2 usage error; 3 invalid ladder\n"
      "or evidence.\n"
      "Examples:\n"
      "  fleetplan rollout ladder.yaml --as-of 2026-12-01T00:00:00Z\n"
      "  fleetplan rollout compare --candidate c/requests.jsonl --baseline b/requests.jsonl");
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
  sub->callback([f, cmp, &action] {
    if (cmp->parsed()) return;
    action = [f](std::ostream& out, std::ostream&) { return Ladder(*f, out); };
  });
}

}  // namespace fleetplan::cli
