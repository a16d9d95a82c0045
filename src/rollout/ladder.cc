#include "fleetplan/rollout/ladder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "fleetplan/core/contained_path.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/evidence/signing.h"
#include "fleetplan/rollout/records_compare.h"

namespace fleetplan {
namespace {

constexpr std::string_view kWarmup = "warmup";
constexpr std::string_view kCanary = "canary-metrics";

// A percentage such as 1% or 100%, as a fraction; `what` names it in the error.
Expected<double> ReadPercent(const YamlNode& node, std::string_view what) {
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  const bool percent = !text.empty() && text.back() == '%';
  auto doc = YamlDocument::LoadString(percent ? text.substr(0, text.size() - 1) : "x", "share");
  auto v = percent && doc.ok() ? doc->root().AsDouble() : Expected<double>(InvalidInput(""));
  if (!v.ok() || !(*v >= 0 && *v <= 100)) {
    return node.Error(fmt::format("expected {} between 0% and 100% (such as 1% or 100%), got '{}'", what, text));
  }
  return *v / 100;
}

Expected<double> ReadShare(const YamlNode& node) { return ReadPercent(node, "a traffic share"); }

Expected<Better> ReadBetter(const YamlNode& node, Better fallback) {
  if (!node.present()) return fallback;
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  if (text == "lower") return Better::kLower;
  if (text == "higher") return Better::kHigher;
  return node.Error(fmt::format("expected better: lower or better: higher, got '{}'", text));
}

// statistics: [median, p95] or {median: {}, p95: {tolerance: 10%, better: lower}}.
Expected<std::vector<StatisticPolicy>> ReadStatistics(const YamlNode& node, const MetricPolicy& metric) {
  std::vector<StatisticPolicy> out;
  auto add = [&](const YamlNode& at, std::string_view name, const YamlNode* settings) -> Status {
    auto st = ParseStatistic(name);
    if (!st.ok()) return at.Error(st.status().message());
    for (const StatisticPolicy& seen : out) {
      if (seen.statistic == *st) return at.Error(fmt::format("statistic '{}' is listed twice", name));
    }
    StatisticPolicy sp{*st, *st == Statistic::kErrorRate ? Better::kLower : metric.better, metric.tolerance};
    if (settings != nullptr && settings->present() && !settings->IsNull()) {
      const YamlNode& set = *settings;
      FP_RETURN_IF_ERROR(set.CheckKeys({"tolerance", "better"}));
      if (set["tolerance"].present()) {
        FP_ASSIGN_OR_RETURN(sp.tolerance, ReadPercent(set["tolerance"], "a tolerance"));
      }
      FP_ASSIGN_OR_RETURN(sp.better, ReadBetter(set["better"], sp.better));
      if (*st == Statistic::kErrorRate && sp.better != Better::kLower) {
        return set["better"].Error("the error rate is always lower-is-better");
      }
    }
    out.push_back(sp);
    return Status::Ok();
  };
  if (node.IsSequence()) {
    FP_ASSIGN_OR_RETURN(auto items, node.Items());
    for (const YamlNode& item : items) {
      FP_ASSIGN_OR_RETURN(std::string name, item.AsString());
      FP_RETURN_IF_ERROR(add(item, name, nullptr));
    }
  } else {
    FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
    for (const auto& [name, value] : entries) FP_RETURN_IF_ERROR(add(value, name, &value));
  }
  if (out.empty()) return node.Error("expected at least one statistic (median, p95, p99, mean, error_rate)");
  return out;
}

Expected<std::vector<MetricPolicy>> ReadMetrics(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one metric (e.g. {ttft_ms: {tolerance: 5%}})");
  std::vector<MetricPolicy> out;
  for (const auto& [name, value] : entries) {
    if (std::find(RecordMetricNames().begin(), RecordMetricNames().end(), name) == RecordMetricNames().end()) {
      return value.Error(UnknownNameMessage("metric", name, RecordMetricNames()));
    }
    MetricPolicy p;
    p.name = name;
    if (value.present() && !value.IsNull()) {
      FP_RETURN_IF_ERROR(
          value.CheckKeys({"tolerance", "better", "alpha", "min_samples", "statistics", "bootstrap"}));
      if (value["tolerance"].present()) {
        FP_ASSIGN_OR_RETURN(p.tolerance, ReadPercent(value["tolerance"], "a tolerance"));
      }
      FP_ASSIGN_OR_RETURN(p.better, ReadBetter(value["better"], p.better));
      FP_ASSIGN_OR_RETURN(p.alpha, value["alpha"].DoubleOr(p.alpha));
      if (!(p.alpha > 0 && p.alpha < 1)) return value["alpha"].Error("expected a significance level in (0, 1)");
      FP_ASSIGN_OR_RETURN(p.min_samples, value["min_samples"].IntOr(p.min_samples));
      if (p.min_samples < 1 || p.min_samples > 100'000'000) {
        return value["min_samples"].Error("expected between 1 and 100000000 samples");
      }
      const YamlNode bootstrap = value["bootstrap"];
      if (bootstrap.present()) {
        FP_RETURN_IF_ERROR(bootstrap.CheckKeys({"seed", "resamples"}));
        FP_ASSIGN_OR_RETURN(int64_t seed, bootstrap["seed"].IntOr(0));
        if (seed < 0) return bootstrap["seed"].Error("expected a seed >= 0");
        p.seed = static_cast<uint64_t>(seed);
        FP_ASSIGN_OR_RETURN(p.bootstrap_resamples, bootstrap["resamples"].IntOr(p.bootstrap_resamples));
        if (p.bootstrap_resamples < 100 || p.bootstrap_resamples > 100'000) {
          return bootstrap["resamples"].Error("expected between 100 and 100000 resamples");
        }
      }
      if (value["statistics"].present()) {
        FP_ASSIGN_OR_RETURN(p.statistics, ReadStatistics(value["statistics"], p));
      }
    }
    p.statistics = StatisticsOf(p);
    out.push_back(std::move(p));
  }
  return out;
}

// quality: {tolerance: 1%, slices: [math, code]}: protected quality slices.
Expected<QualityGate> ReadQuality(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"tolerance", "slices"}));
  FP_RETURN_IF_ERROR(node["slices"].RequirePresent());
  QualityGate q;
  if (node["tolerance"].present()) {
    FP_ASSIGN_OR_RETURN(q.tolerance, ReadPercent(node["tolerance"], "a tolerance"));
  }
  FP_ASSIGN_OR_RETURN(auto items, node["slices"].Items());
  if (items.empty()) return node["slices"].Error("expected at least one protected slice");
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(std::string name, item.AsString());
    if (std::find(q.slices.begin(), q.slices.end(), name) != q.slices.end()) {
      return item.Error(fmt::format("slice '{}' is listed twice", name));
    }
    q.slices.push_back(std::move(name));
  }
  return q;
}

Status ReadStages(const YamlNode& node, const std::string& dir, Ladder& l) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  if (items.size() < 2) return node.Error("expected at least two stages, the last one the promotion (traffic: 100%)");
  std::set<std::string> names;
  for (const YamlNode& item : items) {
    FP_RETURN_IF_ERROR(item.CheckKeys({"name", "traffic", "evidence", "metrics", "quality"}));
    for (const char* key : {"name", "traffic"}) FP_RETURN_IF_ERROR(item[key].RequirePresent());
    LadderStage s;
    s.where = item;
    FP_ASSIGN_OR_RETURN(s.name, item["name"].AsString());
    if (!names.insert(s.name).second) return item["name"].Error(fmt::format("stage '{}' is listed twice", s.name));
    FP_ASSIGN_OR_RETURN(s.traffic, ReadShare(item["traffic"]));
    if (!l.stages.empty() && s.traffic < l.stages.back().traffic) {
      return item["traffic"].Error(fmt::format("expected at least the previous stage's traffic ({:g}%)",
                                               l.stages.back().traffic * 100));
    }
    if (item["metrics"].present()) {
      FP_ASSIGN_OR_RETURN(s.metrics, ReadMetrics(item["metrics"]));
    }
    if (item["quality"].present()) {
      if (!item["metrics"].present()) return item["quality"].Error("quality slices are judged on canary evidence: give the stage metrics too");
      FP_ASSIGN_OR_RETURN(s.quality, ReadQuality(item["quality"]));
    }
    if (item["evidence"].present()) {
      FP_ASSIGN_OR_RETURN(std::string file, item["evidence"].AsString());
      s.evidence_file = std::filesystem::path(file).is_absolute() || dir.empty()
                            ? file
                            : (std::filesystem::path(dir) / file).string();
      if (!l.root.empty()) {
        auto inside = ResolveInside(l.root, dir, file);
        if (!inside.ok()) return item["evidence"].Error(inside.status().message());
        s.evidence_file = *inside;  // an absolute name, named from the bundle's folder
      }
      s.evidence_kind = std::string(s.metrics.empty() ? kWarmup : kCanary);
    } else if (!s.metrics.empty()) {
      return item.Error(fmt::format("stage '{}' compares metrics but names no evidence file", s.name));
    }
    l.stages.push_back(std::move(s));
  }
  const LadderStage& last = l.stages.back();
  if (last.traffic != 1 || !last.evidence_file.empty()) {
    return last.where->Error(fmt::format("the last stage ('{}') is the promotion: traffic: 100% and no evidence", last.name));
  }
  for (size_t i = 0; i + 1 < l.stages.size(); ++i) {
    if (l.stages[i].evidence_file.empty()) {
      return l.stages[i].where->Error(fmt::format("stage '{}' names no evidence: only the promotion may", l.stages[i].name));
    }
    if (l.stages[i].traffic == 1) {
      return l.stages[i].where->Error(fmt::format("stage '{}' already sends all traffic: only the last stage may", l.stages[i].name));
    }
  }
  // Shadow success cannot promote directly: a canary with real traffic must come between.
  for (size_t i = 0; i + 1 < l.stages.size(); ++i) {
    if (l.stages[i].traffic > 0 || l.stages[i].metrics.empty()) continue;
    const bool canary_after = std::any_of(l.stages.begin() + static_cast<std::ptrdiff_t>(i) + 1, l.stages.end() - 1,
                                          [](const LadderStage& s) { return s.traffic > 0 && !s.metrics.empty(); });
    if (!canary_after) {
      return last.where->Error(fmt::format("shadow stage '{}' cannot lead to promotion without a canary stage with "
                                           "traffic between them (e.g. {{name: canary-1, traffic: 1%, ...}})",
                                           l.stages[i].name));
    }
  }
  return Status::Ok();
}

struct StageVerdict {
  CanaryVerdict verdict = CanaryVerdict::kHold;
  std::string reason;
  Json detail = Json::object();
};

// Reads a {file, digest} entry of canary evidence and checks the digest. What holds the
// stage rather than failing the run goes to `hold` (the first reason kept): records that
// changed after they were pinned, or a records file that does not exist (as a missing
// evidence file holds). A file outside `root` (when set) is a located error.
Expected<std::string> PinnedRecords(const YamlNode& node, const std::string& dir, const std::string& root,
                                    std::string& hold) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"file", "digest"}));
  for (const char* key : {"file", "digest"}) FP_RETURN_IF_ERROR(node[key].RequirePresent());
  FP_ASSIGN_OR_RETURN(std::string file, node["file"].AsString());
  FP_ASSIGN_OR_RETURN(std::string digest, node["digest"].AsString());
  std::string path =
      std::filesystem::path(file).is_absolute() || dir.empty() ? file : (std::filesystem::path(dir) / file).string();
  if (!root.empty()) {
    auto inside = ResolveInside(root, dir, file);
    if (!inside.ok()) return node["file"].Error(inside.status().message());
    path = *inside;
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (hold.empty()) hold = fmt::format("no records: {} does not exist", path);
    return path;
  }
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return node["file"].Error(bytes.status().message());
  if (DigestOf(*bytes) != digest && hold.empty()) {
    hold = fmt::format("{} is {}, but the evidence pins {}: the records changed after they were recorded",
                       std::filesystem::path(file).is_absolute() ? path : file,
                       DigestOf(*bytes), digest);
  }
  return path;
}

// Each protected slice's score: {candidate, baseline} in [0, 1], higher is better.
Expected<StageVerdict> JudgeQuality(const QualityGate& q, const YamlNode& data, const std::string& file) {
  StageVerdict v;
  v.verdict = CanaryVerdict::kPass;
  const YamlNode scores = data["quality"];
  Json slices = Json::object();
  std::vector<std::string> failed, missing;
  for (const std::string& slice : q.slices) {
    const YamlNode at = scores[slice];
    if (!scores.present() || !at.present()) {
      missing.push_back(slice);
      continue;
    }
    FP_RETURN_IF_ERROR(at.CheckKeys({"candidate", "baseline"}));
    for (const char* key : {"candidate", "baseline"}) FP_RETURN_IF_ERROR(at[key].RequirePresent());
    FP_ASSIGN_OR_RETURN(double cand, at["candidate"].AsDoubleInRange(0, 1));
    FP_ASSIGN_OR_RETURN(double base, at["baseline"].AsDoubleInRange(0, 1));
    const double change = base > 0 ? cand / base - 1 : 0;
    const bool regressed = -change > q.tolerance;
    slices[slice] = {{"candidate", cand}, {"baseline", base}, {"change", RoundForReport(change)},
                     {"verdict", regressed ? "fail" : "pass"}};
    if (regressed) {
      failed.push_back(fmt::format("{} {:.4g} against {:.4g} ({:+.1f}%, tolerance {:.1f}%)", slice, cand, base,
                                   100 * change, 100 * q.tolerance));
    }
  }
  v.detail = {{"tolerance", q.tolerance}, {"slices", slices}};
  auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  if (!failed.empty()) {
    v.verdict = CanaryVerdict::kFail;
    v.reason = fmt::format("protected quality regressed: {}", list(failed));
  } else if (!missing.empty()) {
    v.verdict = CanaryVerdict::kHold;
    v.reason = fmt::format("no quality score for the protected slice(s) {} in {} (data.quality)", list(missing), file);
  }
  return v;
}

Expected<StageVerdict> JudgeStage(const Ladder& l, const LadderStage& s, UtcTime as_of) {
  StageVerdict v;
  if (!std::filesystem::exists(s.evidence_file)) {
    v.reason = fmt::format("{}: no evidence: {} does not exist", s.name, s.evidence_file);
    return v;
  }
  FP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(s.evidence_file));
  FP_ASSIGN_OR_RETURN(EvidenceHeader h, ReadEvidenceHeader(bytes, s.evidence_file));
  const SignatureVerdict sig = JudgeSignature(l.trust, h.kind, bytes, s.evidence_file);
  if (!sig.trusted) {
    v.reason = fmt::format("{}: {}", s.name, sig.reason);
    return v;
  }
  if (!sig.signed_by.empty()) v.detail["signed_by"] = sig.signed_by;
  const std::optional<int64_t> max_age = l.trust.MaxAgeOf(h.kind);
  const FreshnessVerdict fresh = JudgeFreshness(h, as_of, max_age, s.evidence_file);
  v.detail["evidence"] = FreshnessJson(h, fresh);
  if (h.kind != s.evidence_kind) {
    v.reason = fmt::format("{}: {} is {} evidence; the stage needs {}", s.name, s.evidence_file, h.kind, s.evidence_kind);
    return v;
  }
  if (fresh.state != Freshness::kFresh) {
    v.reason = fmt::format("{}: stale evidence: {}", s.name, fresh.reason);
    return v;
  }
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(bytes, s.evidence_file));
  const YamlNode data = doc.root()["data"];
  FP_RETURN_IF_ERROR(data.RequirePresent());
  if (s.evidence_kind == kWarmup) {
    FP_ASSIGN_OR_RETURN(bool warmed, data["warmed"].BoolOr(false));
    if (!warmed) {
      v.reason = fmt::format("{}: the candidate is not warmed ({} says warmed: false or nothing)", s.name, s.evidence_file);
      return v;
    }
    v.verdict = CanaryVerdict::kPass;
    v.reason = fmt::format("{}: warmed ({})", s.name, s.evidence_file);
    return v;
  }
  FP_ASSIGN_OR_RETURN(bool simulated, data["simulated"].BoolOr(false));
  std::string simulated_note;
  if (simulated) {
    v.detail["simulated"] = true;
    const std::string split = data["split"].present() ? fmt::format(", a {} split", data["split"].Text()) : "";
    if (!l.accept_simulated) {
      v.reason = fmt::format("{}: {} is simulated evidence{}, and the policy does not accept simulated evidence "
                             "(accept_simulated: false): measure the canary, or set accept_simulated: true",
                             s.name, s.evidence_file, split);
      return v;
    }
    // Simulated evidence stands for one split: another stage's traffic was not what ran.
    const auto ran =
        data["split"].present() ? ReadPercent(data["split"], "a split") : Expected<double>(InvalidInput(""));
    if (!ran.ok() || std::abs(*ran - s.traffic) > 1e-12) {
      v.reason = fmt::format("{}: {} is simulated evidence{}, but the stage sends {:g}% of the traffic: simulate "
                             "the stage's own split (fleetplan rollout simulate --split {:g}%)",
                             s.name, s.evidence_file, ran.ok() ? split : " of no valid split", s.traffic * 100,
                             s.traffic * 100);
      return v;
    }
    simulated_note = fmt::format(" [simulated evidence{}, accepted: accept_simulated: true]", split);
  }
  const std::string dir = std::filesystem::path(s.evidence_file).parent_path().string();
  std::string mismatch;
  FP_ASSIGN_OR_RETURN(std::string candidate, PinnedRecords(data["candidate"], dir, l.root, mismatch));
  FP_ASSIGN_OR_RETURN(std::string baseline, PinnedRecords(data["baseline"], dir, l.root, mismatch));
  if (!mismatch.empty()) {
    v.reason = fmt::format("{}: {}", s.name, mismatch);
    return v;
  }
  FP_ASSIGN_OR_RETURN(std::string format, data["format"].StringOr("fleetplan"));
  auto compared = CompareRecordsWithPolicies(candidate, baseline, s.metrics, format);
  if (!compared.ok()) {
    // Bad stage evidence holds the stage and names the file; the file's content (which
    // may be any file the evidence names) is not repeated.
    const ErrorOrigin* o = compared.status().origin();
    const std::string where = o != nullptr && !o->file.empty()
                                  ? (o->line > 0 ? fmt::format("{}:{}", o->file, o->line) : o->file)
                                  : fmt::format("{} or {}", candidate, baseline);
    v.reason = fmt::format("{}: {} is not {} records, so the stage cannot be compared (`fleetplan rollout compare` "
                           "says why)",
                           s.name, where, format);
    return v;
  }
  Json cmp = std::move(*compared);
  v.detail["comparison"] = cmp;
  const std::string verdict = cmp["verdict"].get<std::string>();
  v.verdict = verdict == "pass" ? CanaryVerdict::kPass : verdict == "fail" ? CanaryVerdict::kFail : CanaryVerdict::kHold;
  std::string why = v.verdict == CanaryVerdict::kPass ? "" : cmp["reasons"].front().get<std::string>();
  if (s.quality) {
    // A quality regression removes traffic as a latency one does; fail outranks hold.
    FP_ASSIGN_OR_RETURN(StageVerdict q, JudgeQuality(*s.quality, data, s.evidence_file));
    v.detail["quality"] = q.detail;
    if (q.verdict == CanaryVerdict::kFail && v.verdict != CanaryVerdict::kFail) {
      why = q.reason;
      v.verdict = CanaryVerdict::kFail;
    } else if (q.verdict == CanaryVerdict::kHold && v.verdict == CanaryVerdict::kPass) {
      why = q.reason;
      v.verdict = CanaryVerdict::kHold;
    }
  }
  v.reason = v.verdict == CanaryVerdict::kPass
                 ? fmt::format("{}: every metric passes per class and pooled{}{}", s.name,
                               s.quality ? ", and every protected quality slice holds" : "", simulated_note)
                 : fmt::format("{}: {}{}", s.name, why, simulated_note);
  return v;
}

}  // namespace

Expected<Ladder> LoadLadderText(std::string_view text, std::string display_name, std::string dir,
                                std::string bundle_root) {
  Ladder l;
  l.display_name = display_name;
  l.dir = dir;
  l.root = std::move(bundle_root);
  l.digest = DigestOf(text);
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, std::move(display_name)));
  l.document = std::make_shared<const YamlDocument>(std::move(doc));
  const YamlNode root = l.document->root();
  if (!root.IsMap()) return root.Error("expected a rollout ladder (version, candidate, baseline, stages): docs/rollout.md");
  FP_RETURN_IF_ERROR(
      root.CheckKeys({"version", "candidate", "baseline", "accept_simulated", "max_age", "trust", "stages"}));
  l.text = std::string(text);
  FP_RETURN_IF_ERROR(root["version"].RequirePresent());
  FP_ASSIGN_OR_RETURN(int64_t version, root["version"].AsInt());
  if (version != 1) return root["version"].Error(fmt::format("unsupported ladder version {}; this fleetplan reads version 1", version));
  for (const char* key : {"candidate", "baseline"}) {
    FP_RETURN_IF_ERROR(root[key].RequirePresent());
    FP_RETURN_IF_ERROR(root[key].CheckKeys({"revision", "namespace", "scenario"}));
    FP_RETURN_IF_ERROR(root[key]["revision"].RequirePresent());
  }
  const auto resolve = [&](const std::string& f) {
    return f.empty() || std::filesystem::path(f).is_absolute() || dir.empty() ? f
                                                                              : (std::filesystem::path(dir) / f).string();
  };
  FP_ASSIGN_OR_RETURN(std::string candidate_scenario, root["candidate"]["scenario"].StringOr(""));
  FP_ASSIGN_OR_RETURN(std::string baseline_scenario, root["baseline"]["scenario"].StringOr(""));
  for (const char* key : {"candidate", "baseline"}) {
    const YamlNode named = root[key]["scenario"];
    if (l.root.empty() || !named.present()) continue;
    FP_ASSIGN_OR_RETURN(std::string file, named.AsString());
    auto inside = ResolveInside(l.root, dir, file);
    if (!inside.ok()) return named.Error(inside.status().message());
  }
  l.candidate_scenario = resolve(candidate_scenario);
  l.baseline_scenario = resolve(baseline_scenario);
  l.candidate_where = root["candidate"];
  FP_ASSIGN_OR_RETURN(l.accept_simulated, root["accept_simulated"].BoolOr(false));
  FP_ASSIGN_OR_RETURN(l.candidate_revision, root["candidate"]["revision"].AsString());
  FP_ASSIGN_OR_RETURN(l.candidate_namespace, root["candidate"]["namespace"].StringOr(l.candidate_revision));
  FP_ASSIGN_OR_RETURN(l.baseline_revision, root["baseline"]["revision"].AsString());
  FP_RETURN_IF_ERROR(ReadMaxAges(root["max_age"], l.trust));
  FP_RETURN_IF_ERROR(ReadTrustedKeys(root["trust"], dir, l.trust, l.root));
  FP_RETURN_IF_ERROR(ReadStages(root["stages"], dir, l));
  return l;
}

Status CheckLadderSignature(const Ladder& l, const std::string& signature_path, std::string_view policy_key_pem) {
  auto sig_text = ReadFile(signature_path);
  if (!sig_text.ok()) {
    return Status(StatusCode::kCheckFailed, fmt::format("the ladder is policy and must be signed: {} ({})", signature_path,
                                                        sig_text.status().message()));
  }
  const Expected<Json> sig = ParseSignatureDocument(*sig_text);
  if (!sig.ok()) return InvalidInput(fmt::format("{}: {}", signature_path, sig.status().message()));
  FP_ASSIGN_OR_RETURN(SignatureCheck check, VerifyEvidence(l.text, *sig, policy_key_pem));
  if (!check.valid) return Status(StatusCode::kCheckFailed, fmt::format("the ladder's signature is not valid: {}", check.reason));
  if (check.kind != "policy") {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("the ladder is signed as {} evidence, not as policy", check.kind));
  }
  for (const auto& [kind, keys] : l.trust.keys) {
    for (const TrustedKey& k : keys) {
      if (k.key_id == check.key_id) {
        return Status(StatusCode::kCheckFailed,
                      fmt::format("the ladder is signed by {}, a key it trusts to sign {} evidence ({}): an evidence "
                                  "signer cannot sign the policy that judges its evidence",
                                  check.key_id, kind, k.file));
      }
    }
  }
  return Status::Ok();
}

Expected<Ladder> LoadLadder(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return LoadLadderText(text, path, std::filesystem::path(path).parent_path().string());
}

Expected<Json> EvaluateLadder(const Ladder& l, UtcTime as_of) {
  Json stages = Json::array();
  Json reasons = Json::array();
  std::string decision = "promote";
  const LadderStage* at = &l.stages.back();
  double traffic = 1;
  for (size_t i = 0; i + 1 < l.stages.size(); ++i) {
    const LadderStage& s = l.stages[i];
    FP_ASSIGN_OR_RETURN(StageVerdict v, JudgeStage(l, s, as_of));
    Json entry = {{"name", s.name},
                  {"traffic", s.traffic},
                  {"evidence_kind", s.evidence_kind},
                  {"verdict", CanaryVerdictName(v.verdict)},
                  {"reason", v.reason}};
    for (const auto& [key, value] : v.detail.items()) entry[key] = value;
    stages.push_back(std::move(entry));
    if (v.verdict == CanaryVerdict::kPass) continue;
    reasons.push_back(v.reason);
    at = &s;
    if (v.verdict == CanaryVerdict::kFail) {
      decision = "rollback";
      traffic = 0;
    } else {
      decision = "hold";
      traffic = s.traffic;  // the candidate keeps the exposure this stage gives it, no more
    }
    break;
  }
  for (size_t i = stages.size(); i + 1 < l.stages.size(); ++i) {
    stages.push_back({{"name", l.stages[i].name}, {"traffic", l.stages[i].traffic}, {"verdict", "not reached"}});
  }
  Json out = {{"kind", "fleetplan-rollout"},
              {"ladder", {{"file", l.display_name}, {"digest", l.digest}, {"accept_simulated", l.accept_simulated}}},
              {"as_of", FormatUtcTime(as_of)},
              {"candidate", l.candidate_revision},
              {"baseline", l.baseline_revision},
              {"decision", decision},
              {"stage", at->name},
              {"traffic", traffic},
              {"reasons", reasons},
              {"stages", stages}};
  if (decision == "rollback") {
    out["rollback"] = {{"candidate_traffic", 0},
                       {"serving", l.baseline_revision},
                       {"retained_namespace", l.candidate_namespace},
                       {"because", reasons.front()}};
  }
  return out;
}

}  // namespace fleetplan
