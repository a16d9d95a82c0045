#include "fleetplan/canary/simulated_canary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <vector>

#include "fleetplan/core/digest.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/traffic_split.h"
#include "fleetplan/metrics/records_io.h"

namespace fleetplan {
namespace {

// One step of a path into a parsed section: a map key or a sequence index.
struct PathStep {
  std::string key;
  size_t index = 0;
  bool is_index = false;
};

// The path to the first place `a` and `b` differ (keys in sorted order). REQUIRES: a != b.
std::vector<PathStep> FirstDifference(const Json& a, const Json& b) {
  std::vector<PathStep> path;
  const Json* x = &a;
  const Json* y = &b;
  while (true) {
    if (x->is_object() && y->is_object()) {
      std::set<std::string> keys;
      for (const auto& [k, v] : x->items()) keys.insert(k);
      for (const auto& [k, v] : y->items()) keys.insert(k);
      const auto diff = std::find_if(keys.begin(), keys.end(), [&](const std::string& k) {
        return !x->contains(k) || !y->contains(k) || (*x)[k] != (*y)[k];
      });
      path.push_back({*diff, 0, false});
      if (!x->contains(*diff) || !y->contains(*diff)) return path;
      x = &(*x)[*diff];
      y = &(*y)[*diff];
      continue;
    }
    if (x->is_array() && y->is_array() && x->size() == y->size()) {
      size_t i = 0;
      while ((*x)[i] == (*y)[i]) ++i;
      path.push_back({"", i, true});
      x = &(*x)[i];
      y = &(*y)[i];
      continue;
    }
    return path;
  }
}

// The node at `path` below `node` (as far as it goes: an absent key stays absent).
YamlNode Follow(YamlNode node, const std::vector<PathStep>& path) {
  for (const PathStep& s : path) {
    if (!s.is_index) {
      node = node[s.key];
      continue;
    }
    auto items = node.Items();
    if (!items.ok() || s.index >= items->size()) return node;
    node = (*items)[s.index];
  }
  return node;
}

std::string Shown(const YamlNode& node) {
  return node.present() ? QuoteValue(node.Text()) : "absent";
}

YamlNode RootOf(const Scenario& s, std::string_view key) {
  return s.document->root()[key];
}

constexpr std::string_view kWhy =
    "a canary compares the candidate with the baseline on one window of traffic, so both scenarios need the same";

Status CheckOpenLoop(const Scenario& s) {
  if (s.workload.mode != ArrivalMode::kClosedLoop) return Status::Ok();
  return RootOf(s, "workload")["arrival"].Error(
      "a closed loop's arrivals follow its own fleet's completions, so two fleets would not see the same requests; "
      "use an open-loop arrival process or a trace");
}

Status CheckSameTrace(const Scenario& baseline, const Scenario& candidate) {
  if (baseline.workload.mode != ArrivalMode::kTrace || candidate.workload.mode != ArrivalMode::kTrace) {
    return Status::Ok();
  }
  const std::string& a = baseline.workload.trace->file;
  const std::string& b = candidate.workload.trace->file;
  if (a == b) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::string bytes_a, ReadFile(a));
  FP_ASSIGN_OR_RETURN(std::string bytes_b, ReadFile(b));
  if (DigestOf(bytes_a) == DigestOf(bytes_b)) return Status::Ok();
  return RootOf(candidate, "workload")["trace"]["file"].Error(
      fmt::format("{} is {}, but the baseline's {} is {}: {} trace", b, DigestOf(bytes_b), a, DigestOf(bytes_a), kWhy));
}

std::string RecordsText(const std::vector<RequestRecord>& records, const WorkloadNames& names) {
  std::string text;
  for (const RequestRecord& r : records) AppendRecordJsonl(r, names, &text);
  return text;
}

// One run of the window: the records of the requests on `side` of the split, and every id.
struct SideRun {
  std::vector<RequestRecord> kept;
  std::vector<RequestId> ids;
  WorkloadNames names;
  uint64_t seed = 0;
};

Expected<SideRun> RunSide(const Scenario& s, const SimulatedCanaryOptions& o, bool candidate) {
  SideRun run;
  const SplitAssignment assign(o.seed.value_or(s.seed), o.split);
  RunOptions opt;
  opt.write_files = false;
  opt.seed = o.seed;
  opt.duration = o.duration;
  opt.on_record = [&](const RequestRecord& r) {
    run.ids.push_back(r.id);
    if (assign.ToCandidate(r.id) == candidate) run.kept.push_back(r);
  };
  FP_ASSIGN_OR_RETURN(RunResult result, RunScenario(s, opt));
  run.names = result.names;
  run.seed = o.seed.value_or(s.seed);
  std::sort(run.ids.begin(), run.ids.end());
  return run;
}

std::string Quoted(const std::string& s) {
  return Json(s).dump();
}

std::string EvidenceText(const SimulatedCanary& c, const SimulatedCanaryOptions& o) {
  std::string t =
      "# Simulated canary evidence (docs/rollout.md \"Simulated canary evidence\"): both fleets served every\n"
      "# request of the window; the split chose whose records each side reports.\n";
  t += "evidence:\n  kind: canary-metrics\n";
  t += fmt::format("  observed_at: {}\n", FormatUtcTime(o.observed_at));
  if (o.expires_at) t += fmt::format("  expires_at: {}\n", FormatUtcTime(*o.expires_at));
  t += fmt::format(
      "  source: {}\n",
      Quoted(fmt::format("fleetplan rollout simulate: baseline {} ({}), candidate {} ({})", c.baseline.scenario,
                         c.baseline.scenario_digest, c.candidate.scenario, c.candidate.scenario_digest)));
  t += "data:\n  simulated: true\n";
  t += fmt::format("  split: {}\n  seed: {}\n", FormatShare(c.split), c.seed);
  t += fmt::format("  requests: {{total: {}, candidate: {}, baseline: {}}}\n", c.requests, c.candidate.records,
                   c.baseline.records);
  for (const auto& [name, side] : {std::pair{"candidate", &c.candidate}, {"baseline", &c.baseline}}) {
    t += fmt::format("  {}: {{file: {}, digest: '{}'}}\n", name,
                     Quoted(std::filesystem::path(side->file).filename().string()), side->digest);
  }
  t += "  scenarios:\n";
  for (const auto& [name, side] : {std::pair{"candidate", &c.candidate}, {"baseline", &c.baseline}}) {
    t += fmt::format("    {}: {{file: {}, digest: '{}'}}\n", name, Quoted(side->scenario), side->scenario_digest);
  }
  return t;
}

}  // namespace

Status CheckSameWindow(const Scenario& baseline, const Scenario& candidate, std::optional<uint64_t> seed) {
  FP_RETURN_IF_ERROR(CheckOpenLoop(baseline));
  FP_RETURN_IF_ERROR(CheckOpenLoop(candidate));
  const Json& a = baseline.workload.description;
  const Json& b = candidate.workload.description;
  if (a != b) {
    const std::vector<PathStep> path = FirstDifference(b, a);
    const YamlNode here = Follow(RootOf(candidate, "workload"), path);
    const YamlNode there = Follow(RootOf(baseline, "workload"), path);
    return here.Error(fmt::format("{} here, {} in the baseline ({}): {} workload section", Shown(here), Shown(there),
                                  baseline.display_name, kWhy));
  }
  FP_RETURN_IF_ERROR(CheckSameTrace(baseline, candidate));
  if (!seed && baseline.seed != candidate.seed) {
    return RootOf(candidate, "seed")
        .Error(fmt::format("{} here, {} in the baseline ({}): {} seed (or give both one with --seed N)", candidate.seed,
                           baseline.seed, baseline.display_name, kWhy));
  }
  return Status::Ok();
}

Expected<double> ParseSplitShare(const std::string& flag, const std::string& text) {
  const auto bad = [&] {
    return UsageError(
        fmt::format("{}: expected the candidate's share as a percentage above 0% and below 100% "
                    "(e.g. 1% or 10%), got '{}'",
                    flag, text));
  };
  if (text.size() < 2 || text.back() != '%') return bad();
  try {
    size_t used = 0;
    const double v = std::stod(text.substr(0, text.size() - 1), &used);
    if (used != text.size() - 1 || !(v > 0 && v < 100) || !(v / 100 > 0 && v / 100 < 1)) return bad();
    return v / 100;
  } catch (const std::exception&) {
    return bad();
  }
}

std::string FormatShare(double share) {
  // The fewest digits that read back (as ParseSplitShare reads them) to this very share:
  // 1% stays "1%", and 99.9999999% is never rounded to a 100% the flag refuses.
  for (int digits = 6; digits < 17; ++digits) {
    const std::string text = fmt::format("{:.{}g}", share * 100, digits);
    if (std::strtod(text.c_str(), nullptr) / 100 == share) return text + "%";
  }
  return fmt::format("{:.17g}%", share * 100);
}

Expected<SimulatedCanary> SimulateCanary(const Scenario& baseline, const Scenario& candidate,
                                         const SimulatedCanaryOptions& o) {
  FP_ASSERT(o.split > 0 && o.split < 1);
  FP_RETURN_IF_ERROR(CheckSameWindow(baseline, candidate, o.seed));
  FP_ASSIGN_OR_RETURN(SideRun base, RunSide(baseline, o, /*candidate=*/false));
  FP_ASSIGN_OR_RETURN(SideRun cand, RunSide(candidate, o, /*candidate=*/true));
  if (base.ids != cand.ids) {
    return InvalidInput(
        fmt::format("{} and {} ran {} and {} requests with different ids: they did not see the "
                    "same window (a workload feature that depends on the fleet?)",
                    baseline.display_name, candidate.display_name, base.ids.size(), cand.ids.size()));
  }
  // Each side needs records: a split that leaves one empty gives evidence no ladder can
  // judge. The message names the shares that would give each side one request.
  if (!base.ids.empty() && (cand.kept.empty() || base.kept.empty())) {
    const double n = static_cast<double>(base.ids.size());
    return UsageError(fmt::format(
        "--split: a {} split of these {} requests leaves the {} no records, so the evidence could not be "
        "compared; choose a split that gives each side requests (with {} requests, between about {:.3g}% and "
        "{:.3g}%)",
        FormatShare(o.split), base.ids.size(), cand.kept.empty() ? "candidate" : "baseline", base.ids.size(),
        100 * std::min(0.5, 1 / n), 100 * std::max(0.5, 1 - 1 / n)));
  }
  SimulatedCanary c;
  c.split = o.split;
  c.seed = base.seed;
  c.requests = static_cast<int64_t>(base.ids.size());
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return InvalidInput(fmt::format("cannot create output folder '{}': {}", o.out_dir, ec.message()));
  const auto write_side = [&](SimulatedSide& side, const Scenario& s, const SideRun& run,
                              std::string_view file) -> Status {
    side.scenario = s.display_name;
    side.scenario_digest = s.digest;
    side.file = (std::filesystem::path(o.out_dir) / file).string();
    side.records = static_cast<int64_t>(run.kept.size());
    const std::string text = RecordsText(run.kept, run.names);
    side.digest = DigestOf(text);
    return WriteFileAtomic(side.file, text);
  };
  FP_RETURN_IF_ERROR(write_side(c.candidate, candidate, cand, "candidate.jsonl"));
  FP_RETURN_IF_ERROR(write_side(c.baseline, baseline, base, "baseline.jsonl"));
  c.evidence_file = (std::filesystem::path(o.out_dir) / "canary.yaml").string();
  const std::string evidence = EvidenceText(c, o);
  c.evidence_digest = DigestOf(evidence);
  FP_RETURN_IF_ERROR(WriteFileAtomic(c.evidence_file, evidence));
  return c;
}

Json SimulatedCanaryJson(const SimulatedCanary& c) {
  const auto side = [&](const SimulatedSide& s) {
    return Json{
        {"scenario", s.scenario},
        {"scenario_digest", s.scenario_digest},
        {"file", s.file},
        {"digest", s.digest},
        {"records", s.records},
        {"share",
         c.requests > 0 ? RoundForReport(static_cast<double>(s.records) / static_cast<double>(c.requests)) : 0.0}};
  };
  return Json{{"kind", "fleetplan-rollout-simulate"},
              {"simulated", true},
              {"split", c.split},
              {"seed", c.seed},
              {"requests", c.requests},
              {"candidate", side(c.candidate)},
              {"baseline", side(c.baseline)},
              {"evidence", {{"file", c.evidence_file}, {"digest", c.evidence_digest}}}};
}

}  // namespace fleetplan
