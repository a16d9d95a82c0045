// `fleetplan rollout LADDER.yaml --as-of T [--exercise-rollback DIR]`: the ladder walked
// (rollout/ladder.h), its rollback exercised on a simulated fleet
// (canary/rollback_exercise.h); `fleetplan rollout compare`: a canary comparison of two
// records files, per workload class and pooled (rollout/records_compare.h); `fleetplan
// rollout simulate`: simulated canary evidence (canary/simulated_canary.h). docs/rollout.md.
// Parses, calls libfleetplan, prints.
#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/verbs.h"
#include "fleetplan/canary/rollback_exercise.h"
#include "fleetplan/canary/simulated_canary.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/evidence/evidence.h"
#include "fleetplan/evidence/signing.h"
#include "fleetplan/rollout/ladder.h"
#include "fleetplan/rollout/records_compare.h"

namespace fleetplan::cli {
namespace {

struct RolloutFlags {
  std::string candidate;
  std::string baseline;
  std::vector<std::string> metrics;
  std::vector<std::string> statistics;
  std::string tolerance = "5%";
  double alpha = 0.05;
  std::string min_samples = "50";
  std::string format = "fleetplan";
  bool json = false;
  std::string ladder;
  std::string as_of;
  std::string policy_key;
  std::string exercise_dir;
  std::string rollback_at;
  std::string rollback_grace = "0s";
};

struct SimulateFlags {
  std::string baseline;
  std::string candidate;
  std::string split;
  std::string observed_at;
  std::string expires_at;
  std::string out;
  std::string seed;
  std::string duration;
  bool json = false;
};

Expected<Duration> DurationFlag(std::string_view flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return UsageError(fmt::format("{}: {}", flag, d.status().message()));
  return *d;
}

Expected<UtcTime> TimeFlag(std::string_view flag, const std::string& text) {
  auto t = ParseUtcTime(text);
  if (!t.ok()) return UsageError(fmt::format("{}: {}", flag, t.status().message()));
  return *t;
}

Expected<uint64_t> SeedFlag(const std::string& text) {
  try {
    size_t used = 0;
    const unsigned long long v = std::stoull(text, &used);
    if (used == text.size() && !text.empty() && text.front() != '-') return static_cast<uint64_t>(v);
  } catch (const std::exception&) {
  }
  return UsageError(fmt::format("--seed: expected an integer >= 0, got '{}'", text));
}

void PrintExercise(const Json& x, std::ostream& out) {
  const Json& after = x["after_rollback"];
  const Json& held = x["candidate_held_at_rollback"];
  out << fmt::format("rollback exercised (simulated, {} to {} until {:g} s, grace {:g} s): after it {} requests "
                     "arrived, {} served by {}, {} by {}, {} not routed\n",
                     FormatShare(x["split"].get<double>()), x["candidate"].get<std::string>(),
                     x["rollback_at_s"].get<double>(), x["grace_s"].get<double>(), after["arrived"].get<int64_t>(),
                     after["served_by_baseline"].get<int64_t>(), x["serving"].get<std::string>(),
                     after["served_by_candidate"].get<int64_t>(), x["candidate"].get<std::string>(),
                     after["not_routed"].get<int64_t>());
  out << fmt::format("  held by {} at the rollback: {} requeued to {}, {} ended there after it, {} cancelled\n",
                     x["candidate"].get<std::string>(), held["requeued_to_baseline"].get<int64_t>(),
                     x["serving"].get<std::string>(), held["ended_on_candidate_after_rollback"].get<int64_t>(),
                     held["cancelled"].get<int64_t>());
  std::vector<std::string> states;
  for (const Json& r : x["replicas"]) {
    if (r["revision"] == x["candidate"]) {
      states.push_back(fmt::format("{} {}", r["id"].get<int64_t>(), r["state"].get<std::string>()));
    }
  }
  out << fmt::format("  {}'s replicas listed, drained: {}; namespace {} retained\n", x["candidate"].get<std::string>(),
                     fmt::format("{}", fmt::join(states, ", ")), x["retained_namespace"].get<std::string>());
  for (const char* f : {"records", "report", "evidence"}) {
    out << fmt::format("wrote {}\n", x["files"][f]["file"].get<std::string>());
  }
}

Status Ladder(const RolloutFlags& f, std::ostream& out) {
  if (f.ladder.empty()) return UsageError("rollout: a LADDER.yaml is required, or `rollout compare` (docs/rollout.md)");
  if (f.as_of.empty()) return UsageError("rollout: --as-of TIME is required (e.g. 2026-12-01T00:00:00Z): freshness is judged at it");
  auto as_of = ParseUtcTime(f.as_of);
  if (!as_of.ok()) return UsageError("--as-of: " + as_of.status().message());
  std::optional<std::string> policy_pem;
  if (!f.policy_key.empty()) {
    auto pem = ReadPublicKeyFile(f.policy_key);
    if (!pem.ok()) return UsageError(fmt::format("--policy-key: {}", pem.status().message()));
    policy_pem = std::move(*pem);
  }
  FP_ASSIGN_OR_RETURN(fleetplan::Ladder ladder, LoadLadder(f.ladder));
  if (policy_pem) FP_RETURN_IF_ERROR(CheckLadderSignature(ladder, f.ladder + ".sig", *policy_pem));
  FP_ASSIGN_OR_RETURN(Json result, EvaluateLadder(ladder, *as_of));
  if (!f.exercise_dir.empty()) {
    LadderExerciseOptions x;
    x.out_dir = f.exercise_dir;
    x.as_of = *as_of;
    if (!f.rollback_at.empty()) {
      FP_ASSIGN_OR_RETURN(x.rollback_at, DurationFlag("--rollback-at", f.rollback_at));
    }
    FP_ASSIGN_OR_RETURN(x.grace, DurationFlag("--rollback-grace", f.rollback_grace));
    FP_ASSIGN_OR_RETURN(result, ExerciseLadderRollback(ladder, std::move(result), x));
  } else if (!f.rollback_at.empty() || f.rollback_grace != "0s") {
    return UsageError("--rollback-at and --rollback-grace go with --exercise-rollback DIR");
  }
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(result));
    out << text;
  } else {
    for (const Json& s : result["stages"]) {
      const std::string verdict = s["verdict"].get<std::string>() + (s.contains("simulated") ? " (simulated)" : "");
      out << fmt::format("  {:<12} {:>5}%  {:<11} {}\n", s["name"].get<std::string>(),
                         RoundForReport(s["traffic"].get<double>() * 100, 4), verdict,
                         s.contains("reason") ? s["reason"].get<std::string>() : "");
    }
    out << fmt::format("decision: {} at {} ({:g}% of traffic to {})\n", result["decision"].get<std::string>(),
                       result["stage"].get<std::string>(), result["traffic"].get<double>() * 100,
                       result["candidate"].get<std::string>());
    if (result.contains("rollback")) {
      out << fmt::format("rollback: candidate traffic 0%, {} serves, namespace {} kept for inspection\n",
                         result["rollback"]["serving"].get<std::string>(),
                         result["rollback"]["retained_namespace"].get<std::string>());
      if (result["rollback"].contains("exercised")) PrintExercise(result["rollback"]["exercised"], out);
    } else if (!f.exercise_dir.empty()) {
      out << fmt::format("rollback exercise: not run (the decision is {}, not rollback)\n",
                         result["decision"].get<std::string>());
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
  int64_t min_samples = 0;
  const char* end = f.min_samples.data() + f.min_samples.size();
  const auto [ptr, ec] = std::from_chars(f.min_samples.data(), end, min_samples);
  if (ec != std::errc() || ptr != end || min_samples < 1 || min_samples > 100'000'000) {
    return UsageError(fmt::format("--min-samples: expected a whole number of samples between 1 and 100000000, got '{}'",
                                  f.min_samples));
  }
  opt.alpha = f.alpha;
  opt.min_samples = min_samples;
  opt.format = f.format;
  for (const std::string& name : f.statistics) {
    auto st = ParseStatistic(name);
    if (!st.ok()) return UsageError(fmt::format("--statistic: {}", st.status().message()));
    opt.statistics.push_back(*st);
  }
  FP_ASSIGN_OR_RETURN(Json result, CompareRecordsFiles(f.candidate, f.baseline, opt));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(result));
    out << text;
  } else {
    for (const auto& [metric, m] : result["metrics"].items()) {
      out << fmt::format("{}: {}\n", metric, m["verdict"].get<std::string>());
      for (const Json& statistic : result["policy"]["statistics"]) {
        const std::string name = statistic.get<std::string>();
        const Json& st = m["statistics"][name];
        out << fmt::format(" {}: {}\n", name, st["verdict"].get<std::string>());
        out << fmt::format("  pooled: {}\n", st["aggregate"]["reason"].get<std::string>());
        for (const auto& [cls, c] : st["strata"].items()) out << fmt::format("  {}: {}\n", cls, c["reason"].get<std::string>());
      }
      if (m["verdict"] != "pass") out << fmt::format("  => {}\n", m["reason"].get<std::string>());
    }
    out << fmt::format("verdict: {}\n", result["verdict"].get<std::string>());
  }
  if (result["verdict"] == "pass") return Status::Ok();
  return Status(StatusCode::kCheckFailed,
                fmt::format("the candidate does not pass ({}): {}", result["verdict"].get<std::string>(),
                            result["reasons"].front().get<std::string>()));
}

Status Simulate(const SimulateFlags& f, std::ostream& out) {
  for (const auto& [flag, value] : {std::pair{"--baseline BASE.yaml", &f.baseline}, {"--candidate CAND.yaml", &f.candidate},
                                    {"--split SHARE (e.g. 1%)", &f.split}, {"--observed-at TIME", &f.observed_at},
                                    {"--out DIR", &f.out}}) {
    if (value->empty()) return UsageError(fmt::format("rollout simulate: {} is required", flag));
  }
  SimulatedCanaryOptions o;
  FP_ASSIGN_OR_RETURN(o.split, ParseSplitShare("--split", f.split));
  FP_ASSIGN_OR_RETURN(o.observed_at, TimeFlag("--observed-at", f.observed_at));
  if (!f.expires_at.empty()) {
    FP_ASSIGN_OR_RETURN(o.expires_at, TimeFlag("--expires-at", f.expires_at));
    if (*o.expires_at <= o.observed_at) {
      return UsageError(fmt::format("--expires-at: {} is not after --observed-at {}", f.expires_at, f.observed_at));
    }
  }
  if (!f.seed.empty()) {
    FP_ASSIGN_OR_RETURN(o.seed, SeedFlag(f.seed));
  }
  if (!f.duration.empty()) {
    FP_ASSIGN_OR_RETURN(o.duration, DurationFlag("--duration", f.duration));
    if (*o.duration <= Duration()) {
      return UsageError(fmt::format("--duration: expected a duration > 0, got '{}'", f.duration));
    }
  }
  o.out_dir = f.out;
  FP_ASSIGN_OR_RETURN(Scenario baseline, LoadScenario(f.baseline));
  FP_ASSIGN_OR_RETURN(Scenario candidate, LoadScenario(f.candidate));
  FP_ASSIGN_OR_RETURN(SimulatedCanary c, SimulateCanary(baseline, candidate, o));
  const Json j = SimulatedCanaryJson(c);
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(j));
    out << text;
    return Status::Ok();
  }
  out << fmt::format("simulated canary: a {} split of {} requests (seed {}); both fleets received every request "
                     "(their records say which were served), the split chose whose records each side reports\n",
                     FormatShare(c.split), c.requests, c.seed);
  for (const char* side : {"candidate", "baseline"}) {
    const Json& s = j[side];
    out << fmt::format("  {:<9}  {}: {} records ({:.2f}%)\n", side, s["scenario"].get<std::string>(),
                       s["records"].get<int64_t>(), s["share"].get<double>() * 100);
  }
  out << fmt::format("wrote {}\nwrote {}\nwrote {} (canary-metrics evidence, simulated: true)\n", c.candidate.file,
                     c.baseline.file, c.evidence_file);
  return Status::Ok();
}

void RegisterSimulate(CLI::App* sub, VerbAction& action) {
  auto f = std::make_shared<SimulateFlags>();
  CLI::App* sim = sub->add_subcommand(
      "simulate",
      "Simulated canary evidence: the baseline and the candidate scenario run on the same arrivals; a hash of\n"
      "(seed, request id) assigns --split of the requests to the candidate, whose run's records of them go to\n"
      "DIR/candidate.jsonl, the baseline run's records of the others to DIR/baseline.jsonl, and DIR/canary.yaml\n"
      "is canary-metrics evidence (simulated: true) pinning both for a ladder's canary stage.");
  sim->add_option("--baseline", f->baseline, "The baseline's scenario file");
  sim->add_option("--candidate", f->candidate, "The candidate's scenario file (the same workload section)");
  sim->add_option("--split", f->split, "The candidate's share of requests, e.g. 1% or 10%");
  sim->add_option("--observed-at", f->observed_at, "The evidence's observed_at (RFC 3339 UTC)");
  sim->add_option("--expires-at", f->expires_at, "The evidence's expires_at (optional)");
  sim->add_option("--out", f->out, "Folder for candidate.jsonl, baseline.jsonl and canary.yaml");
  sim->add_option("--seed", f->seed, "Seed of both runs and of the split (default: the scenarios' seed)");
  sim->add_option("--duration", f->duration, "Stop arrivals at this time in both runs");
  sim->add_flag("--json", f->json, "Print what was written as JSON");
  sim->footer(
      "Exit codes: 0 written; 2 usage error; 3 invalid scenario, or two scenarios that do not make the same\n"
      "requests (workload section, seed, closed loop).\n"
      "Example:\n"
      "  fleetplan rollout simulate --baseline base.yaml --candidate cand.yaml --split 10% \\\n"
      "      --observed-at 2026-11-30T12:00:00Z --out canary-10");
  sim->callback([f, &action] { action = [f](std::ostream& out, std::ostream&) { return Simulate(*f, out); }; });
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
  sub->add_option("--exercise-rollback", f->exercise_dir,
                  "On a rollback, exercise it on the ladder's candidate.scenario and baseline.scenario as one\n"
                  "simulated fleet and write its evidence here (requests.jsonl, report.json, rollback.json)");
  sub->add_option("--rollback-at", f->rollback_at, "When the exercise rolls back (default: half the workload's duration)");
  sub->add_option("--rollback-grace", f->rollback_grace,
                  "How long the candidate's replicas may finish what they hold before it is requeued (default 0s)");
  sub->footer(
      "Exit codes: 0 promote; 1 hold (missing, stale, unwarmed or no-data evidence; strata that disagree) or\n"
      "rollback (a metric regressed), or a ladder not signed by --policy-key; 2 usage error; 3 invalid ladder\n"
      "or evidence.\n"
      "Examples:\n"
      "  fleetplan rollout ladder.yaml --as-of 2026-12-01T00:00:00Z\n"
      "  fleetplan rollout ladder.yaml --as-of 2026-12-01T00:00:00Z --exercise-rollback rollback/\n"
      "  fleetplan rollout simulate --baseline base.yaml --candidate cand.yaml --split 1% \\\n"
      "      --observed-at 2026-11-30T12:00:00Z --out canary-1\n"
      "  fleetplan rollout compare --candidate c/requests.jsonl --baseline b/requests.jsonl");
  CLI::App* cmp = sub->add_subcommand(
      "compare",
      "Compare a candidate's per-request records with a baseline's from the same window: per metric, a\n"
      "Mann-Whitney U test and the median's relative change against a tolerance, per workload class and pooled.\n"
      "No data (empty, errored, NaN, too few samples) holds; strata that disagree with the pooled result hold.");
  cmp->add_option("--candidate", f->candidate, "Candidate records (requests.jsonl)")->required();
  cmp->add_option("--baseline", f->baseline, "Baseline records (requests.jsonl)")->required();
  cmp->add_option("--metric", f->metrics, "ttft_ms, tpot_ms, e2e_ms, itl_max_ms (repeatable; default ttft_ms e2e_ms)");
  cmp->add_option("--statistic", f->statistics,
                  "median, p95, p99, mean, error_rate (repeatable; default median p95): what each metric is judged on");
  cmp->add_option("--tolerance", f->tolerance, "Accepted slowdown of each statistic (default 5%; points for error_rate)");
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
  RegisterSimulate(sub, action);
  CLI::App* sim = sub->get_subcommand("simulate");
  sub->callback([f, cmp, sim, &action] {
    if (cmp->parsed() || sim->parsed()) return;
    action = [f](std::ostream& out, std::ostream&) { return Ladder(*f, out); };
  });
}

}  // namespace fleetplan::cli
