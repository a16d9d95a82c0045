#include "fleetplan/gates/quantization.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/catalog/quant_support.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/core/units_parse.h"
#include "gates/fit_section.h"

namespace fleetplan {
namespace {

// Most items per task: evaluation sets hold thousands; a million bounds the work.
constexpr size_t kMaxItems = 1'000'000;

Expected<QualityEvidence> ReadQuality(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"items", "scores", "score"}));
  if (!node.IsMap()) return node.Error("expected {items: [0, 1, ...]}, {scores: [...]} or {score: 0.7}");
  QualityEvidence q;
  const int given = (node["items"].present() ? 1 : 0) + (node["scores"].present() ? 1 : 0) +
                    (node["score"].present() ? 1 : 0);
  if (given != 1) return node.Error("expected exactly one of items, scores or score");
  for (const char* key : {"items", "scores"}) {
    if (!node[key].present()) continue;
    FP_ASSIGN_OR_RETURN(auto items, node[key].Items());
    if (items.empty()) return node[key].Error("expected at least one item");
    if (items.size() > kMaxItems) return node[key].Error(fmt::format("expected at most {} items", kMaxItems));
    q.binary = std::string_view(key) == "items";
    double sum = 0;
    for (const YamlNode& item : items) {
      if (q.binary) {
        FP_ASSIGN_OR_RETURN(int64_t v, item.AsInt());
        if (v != 0 && v != 1) return item.Error(fmt::format("expected 0 (failed) or 1 (passed), got {}", v));
        q.outcomes.push_back(static_cast<double>(v));
      } else {
        FP_ASSIGN_OR_RETURN(double v, item.AsDoubleInRange(0, 1));
        q.outcomes.push_back(v);
      }
      sum += q.outcomes.back();
    }
    q.score = sum / static_cast<double>(q.outcomes.size());
  }
  if (node["score"].present()) {
    FP_ASSIGN_OR_RETURN(double v, node["score"].AsDoubleInRange(0, 1));
    q.score = v;
  }
  return q;
}

Expected<std::vector<std::pair<std::string, QualityEvidence>>> ReadQualityMap(const YamlNode& node) {
  std::vector<std::pair<std::string, QualityEvidence>> out;
  if (!node.present() || node.IsNull()) return out;
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [name, value] : entries) {
    FP_ASSIGN_OR_RETURN(QualityEvidence q, ReadQuality(value));
    out.emplace_back(name, std::move(q));
  }
  return out;
}

Expected<std::optional<double>> OptionalMs(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return std::optional<double>();
  FP_ASSIGN_OR_RETURN(Duration d, node.AsDuration());
  return std::optional<double>(d.millis());
}

Expected<std::optional<double>> OptionalNumber(const YamlNode& node, double max) {
  if (!node.present() || node.IsNull()) return std::optional<double>();
  FP_ASSIGN_OR_RETURN(double v, node.AsDoubleInRange(0, max));
  return std::optional<double>(v);
}

Expected<QuantArm> ReadArm(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"name", "method", "identity", "tasks", "slices", "logprob_drift", "serving", "fit"}));
  QuantArm a;
  FP_ASSIGN_OR_RETURN(a.name, node["name"].AsString());
  FP_ASSIGN_OR_RETURN(a.method, node["method"].AsString());
  FP_ASSIGN_OR_RETURN(a.identity, ReadIdentity(node["identity"]));
  FP_ASSIGN_OR_RETURN(a.tasks, ReadQualityMap(node["tasks"]));
  FP_ASSIGN_OR_RETURN(a.slices, ReadQualityMap(node["slices"]));
  FP_ASSIGN_OR_RETURN(a.logprob_drift, OptionalNumber(node["logprob_drift"], 1e6));
  const YamlNode serving = node["serving"];
  FP_RETURN_IF_ERROR(serving.CheckKeys({"ttft", "itl", "throughput"}));
  FP_ASSIGN_OR_RETURN(a.ttft_ms, OptionalMs(serving["ttft"]));
  FP_ASSIGN_OR_RETURN(a.itl_ms, OptionalMs(serving["itl"]));
  FP_ASSIGN_OR_RETURN(a.throughput, OptionalNumber(serving["throughput"], 1e12));
  if (node["fit"].present() && !node["fit"].IsNull()) {
    FP_ASSIGN_OR_RETURN(FitResult fit, gates_detail::CheckFitSection(node["fit"]));
    a.fit = std::move(fit);
  }
  return a;
}

Expected<std::vector<std::pair<std::string, double>>> ReadThresholds(const YamlNode& node) {
  std::vector<std::pair<std::string, double>> out;
  if (!node.present() || node.IsNull()) return out;
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [name, value] : entries) {
    FP_ASSIGN_OR_RETURN(double v, value.AsDoubleInRange(0, 1));
    out.emplace_back(name, v);
  }
  return out;
}

Expected<QuantPolicy> ReadPolicy(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"target", "min_quality", "max_regression", "protected_slices",
                                     "max_logprob_drift", "max_ttft", "max_itl", "min_throughput"}));
  QuantPolicy p;
  const YamlNode target = node["target"];
  FP_RETURN_IF_ERROR(target.CheckKeys({"gpu", "runtime", "runtime_version"}));
  FP_ASSIGN_OR_RETURN(p.gpu, target["gpu"].AsString());
  FP_ASSIGN_OR_RETURN(p.runtime, target["runtime"].AsString());
  FP_ASSIGN_OR_RETURN(p.runtime_version, target["runtime_version"].AsString());
  FP_ASSIGN_OR_RETURN(p.min_quality, ReadThresholds(node["min_quality"]));
  FP_ASSIGN_OR_RETURN(p.max_regression, node["max_regression"].AsDoubleInRange(0, 1));
  FP_ASSIGN_OR_RETURN(p.protected_slices, ReadThresholds(node["protected_slices"]));
  FP_ASSIGN_OR_RETURN(p.max_logprob_drift, OptionalNumber(node["max_logprob_drift"], 1e6));
  FP_ASSIGN_OR_RETURN(p.max_ttft_ms, OptionalMs(node["max_ttft"]));
  FP_ASSIGN_OR_RETURN(p.max_itl_ms, OptionalMs(node["max_itl"]));
  FP_ASSIGN_OR_RETURN(p.min_throughput, OptionalNumber(node["min_throughput"], 1e12));
  return p;
}

const QualityEvidence* Find(const std::vector<std::pair<std::string, QualityEvidence>>& m, const std::string& name) {
  for (const auto& [n, q] : m) {
    if (n == name) return &q;
  }
  return nullptr;
}

// Exact two-sided binomial(n, 1/2) p-value of min(b, c), computed in log space.
double ExactBinomialP(int64_t b, int64_t c) {
  const int64_t n = b + c;
  const int64_t k = std::min(b, c);
  double tail = 0;
  for (int64_t i = 0; i <= k; ++i) {
    const double log_p = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                         std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * std::log(2.0);
    tail += std::exp(log_p);
  }
  return std::min(1.0, 2 * tail);
}

struct PairedDrop {
  bool paired = false;
  std::string why_not;
  double drop = 0, low = 0, high = 0;
  int64_t items = 0;
  std::optional<double> mcnemar_p;
  int64_t b = 0, c = 0;
};

// d = mean over the named evidence of (baseline - candidate), with its bootstrap interval.
PairedDrop Drop(const std::vector<std::pair<const QualityEvidence*, const QualityEvidence*>>& pairs, RngStream rng) {
  PairedDrop d;
  for (const auto& [base, cand] : pairs) {
    if (base == nullptr || cand == nullptr) {
      d.why_not = "the baseline or the candidate has no outcome for it";
      return d;
    }
    if (base->outcomes.empty() || cand->outcomes.empty()) {
      d.why_not = "only aggregate scores: a paired test needs per-item outcomes";
      return d;
    }
    if (base->outcomes.size() != cand->outcomes.size()) {
      d.why_not = fmt::format("{} baseline items vs {} candidate items: not the same items", base->outcomes.size(),
                              cand->outcomes.size());
      return d;
    }
  }
  d.paired = true;
  for (const auto& [base, cand] : pairs) {
    d.drop += *base->score - *cand->score;
    d.items += static_cast<int64_t>(base->outcomes.size());
    if (base->binary && cand->binary) {
      for (size_t i = 0; i < base->outcomes.size(); ++i) {
        if (base->outcomes[i] > cand->outcomes[i]) ++d.b;
        if (base->outcomes[i] < cand->outcomes[i]) ++d.c;
      }
    }
  }
  d.drop /= static_cast<double>(pairs.size());
  if (pairs.size() == 1 && pairs[0].first->binary && pairs[0].second->binary) d.mcnemar_p = McNemarP(d.b, d.c);
  std::vector<double> stats;
  stats.reserve(kQuantResamples);
  for (int r = 0; r < kQuantResamples; ++r) {
    double total = 0;
    for (const auto& [base, cand] : pairs) {
      const uint64_t n = base->outcomes.size();
      double sum = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t j = rng.NextBelow(n);
        sum += base->outcomes[j] - cand->outcomes[j];
      }
      total += sum / static_cast<double>(n);
    }
    stats.push_back(total / static_cast<double>(pairs.size()));
  }
  std::sort(stats.begin(), stats.end());
  d.low = NearestRank(stats, 0.025);
  d.high = NearestRank(stats, 0.975);
  return d;
}

GateCheck RegressionCheck(const std::string& name, const PairedDrop& d, double margin) {
  if (!d.paired) return HoldCheck(name, fmt::format("no paired comparison: {}", d.why_not));
  Json numbers = {{"drop", RoundForReport(d.drop)},
                  {"interval", {RoundForReport(d.low), RoundForReport(d.high)}},
                  {"margin", RoundForReport(margin)},
                  {"items", d.items}};
  std::string mc;
  if (d.mcnemar_p) {
    numbers["mcnemar"] = {{"b", d.b}, {"c", d.c}, {"p", RoundForReport(*d.mcnemar_p)},
                          {"method", d.b + d.c < 25 ? "exact" : "chi-square, continuity-corrected"}};
    mc = fmt::format("; McNemar b={} c={} p={:.3g}", d.b, d.c, *d.mcnemar_p);
  }
  const std::string reason = fmt::format("drop {:.4g} (95% interval [{:.4g}, {:.4g}]) vs margin {:.4g}{}", d.drop,
                                         d.low, d.high, margin, mc);
  if (d.high <= margin) return PassCheck(name, reason + ": within the margin", numbers);
  if (d.low > margin) {
    return FailCheck(name, reason + ": beyond the margin", numbers,
                     fmt::format("a drop whose interval ends at or below {:.4g}", margin));
  }
  return HoldCheck(name, reason + ": the interval straddles the margin (more items needed)", numbers);
}

GateCheck HardwareCheck(const QuantPolicy& p, const QuantArm& a) {
  const std::optional<std::string> gen = GpuGeneration(p.gpu);
  if (!gen) return HoldCheck("hardware", fmt::format("unknown generation of GPU '{}'", p.gpu));
  const QuantSupportRow* row = FindQuantSupport(a.method, *gen, p.runtime);
  const Json numbers = {{"method", a.method}, {"gpu", p.gpu}, {"generation", *gen}, {"runtime", p.runtime},
                        {"runtime_version", p.runtime_version}};
  if (row == nullptr) {
    return HoldCheck("hardware", fmt::format("no support row for {} on {} ({}) with {}: unknown, never assumed",
                                             a.method, p.gpu, *gen, p.runtime), numbers);
  }
  if (CompareVersions(p.runtime_version, row->min_version) < 0) {
    return HoldCheck("hardware", fmt::format("{} {} is older than the support table's {} for {} on {}", p.runtime,
                                             p.runtime_version, row->min_version, a.method, *gen), numbers);
  }
  const std::string support = row->support;
  std::vector<std::string> native;
  for (const QuantSupportRow& r : QuantSupportTable()) {
    if (r.method == a.method && std::string_view(r.support) == "native" && r.runtime == p.runtime) {
      native.push_back(r.generation);
    }
  }
  const std::string nearest = native.empty() ? "" : fmt::format("a GPU of generation {}", fmt::join(native, " or "));
  if (support == "native") {
    return PassCheck("hardware", fmt::format("{} runs natively on {} ({}): {}", a.method, p.gpu, *gen, row->note),
                     numbers);
  }
  if (support == "fallback") {
    return FailCheck("hardware", fmt::format("{} on {} ({}) falls back to {}: the measured {} path does not run there",
                                             a.method, p.gpu, *gen, row->falls_back_to, a.method),
                     numbers, nearest);
  }
  return FailCheck("hardware", fmt::format("{} is unsupported on {} ({})", a.method, p.gpu, *gen), numbers, nearest);
}

GateCheck Ceiling(const std::string& name, std::optional<double> measured, std::optional<double> limit,
                  const char* unit, bool at_most) {
  if (!limit) return PassCheck(name, "no requirement in the policy");
  if (!measured) return HoldCheck(name, "not measured");
  const bool ok = at_most ? *measured <= *limit : *measured >= *limit;
  const std::string reason = fmt::format("{:.4g}{} measured, policy {} {:.4g}{}", *measured, unit,
                                         at_most ? "<=" : ">=", *limit, unit);
  const Json numbers = {{"measured", RoundForReport(*measured)}, {"limit", RoundForReport(*limit)}};
  if (ok) return PassCheck(name, reason, numbers);
  return FailCheck(name, reason, numbers, fmt::format("{} {} {:.4g}{}", name, at_most ? "<=" : ">=", *limit, unit));
}

QuantCandidateResult Judge(const QuantSpec& spec, const QuantArm& a, uint64_t seed) {
  const QuantPolicy& p = spec.policy;
  QuantCandidateResult r;
  r.name = a.name;
  r.method = a.method;
  r.checks.push_back(IdentityCheck(a.identity, a.name));
  r.checks.push_back(HardwareCheck(p, a));
  // Absolute quality.
  std::vector<std::string> low, missing;
  for (const auto& [task, min] : p.min_quality) {
    const QualityEvidence* q = Find(a.tasks, task);
    if (q == nullptr || !q->score) {
      missing.push_back(task);
    } else if (*q->score < min) {
      low.push_back(fmt::format("{} {:.4g} < {:.4g}", task, *q->score, min));
    }
  }
  if (!low.empty()) {
    r.checks.push_back(FailCheck("quality", fmt::format("below the minimum: {}", fmt::join(low, ", "))));
  } else if (!missing.empty()) {
    r.checks.push_back(HoldCheck("quality", fmt::format("no score for: {}", fmt::join(missing, ", "))));
  } else {
    r.checks.push_back(PassCheck("quality", fmt::format("{} task(s) at or above their minimum", p.min_quality.size())));
  }
  // Regression: the aggregate over the baseline's tasks, then every protected slice.
  const RngStream root(seed, "gate.quantization.bootstrap");
  std::vector<std::pair<const QualityEvidence*, const QualityEvidence*>> tasks;
  for (const auto& [task, q] : spec.baseline.tasks) tasks.emplace_back(&q, Find(a.tasks, task));
  if (tasks.empty()) {
    r.checks.push_back(HoldCheck("regression.aggregate", "the baseline has no task outcomes"));
  } else {
    r.checks.push_back(RegressionCheck("regression.aggregate", Drop(tasks, root.Fork(a.name + "/aggregate")),
                                       p.max_regression));
  }
  for (const auto& [slice, margin] : p.protected_slices) {
    r.checks.push_back(RegressionCheck(
        "regression." + slice,
        Drop({{Find(spec.baseline.slices, slice), Find(a.slices, slice)}}, root.Fork(a.name + "/" + slice)), margin));
  }
  if (p.max_logprob_drift) r.checks.push_back(Ceiling("drift", a.logprob_drift, p.max_logprob_drift, " nats", true));
  // Memory from fit.
  if (!a.fit) {
    r.checks.push_back(HoldCheck("memory", "no fit section (the memory at the target concurrency comes from fit)"));
  } else if (a.fit->fits) {
    r.checks.push_back(PassCheck("memory", fmt::format("fits: {} sequences of {} tokens, room for {}",
                                                       a.fit->request.concurrency, a.fit->request.context,
                                                       a.fit->max_sequences)));
  } else {
    r.checks.push_back(FailCheck("memory", fmt::format("does not fit: {}", fmt::join(a.fit->reasons, "; ")),
                                 Json{{"max_sequences", a.fit->max_sequences}},
                                 a.fit->nearest.context
                                     ? fmt::format("context {}", a.fit->nearest.context->context)
                                     : ""));
  }
  // Serving figures: measured on the target hardware, or they do not count.
  const bool on_target = a.identity.hardware.empty() || a.identity.hardware == p.gpu;
  if (!on_target) {
    for (const char* name : {"ttft", "itl", "throughput"}) {
      r.checks.push_back(HoldCheck(name, fmt::format("measured on {}, the target is {}", a.identity.hardware, p.gpu)));
    }
  } else {
    r.checks.push_back(Ceiling("ttft", a.ttft_ms, p.max_ttft_ms, " ms", true));
    r.checks.push_back(Ceiling("itl", a.itl_ms, p.max_itl_ms, " ms", true));
    r.checks.push_back(Ceiling("throughput", a.throughput, p.min_throughput, " tok/s", false));
  }
  r.decision = Combine(r.checks);
  return r;
}

}  // namespace

double McNemarP(int64_t b, int64_t c) {
  if (b + c == 0) return 1.0;
  if (b + c < 25) return ExactBinomialP(b, c);
  const double diff = std::abs(static_cast<double>(b - c)) - 1;
  const double chi2 = diff * diff / static_cast<double>(b + c);
  return std::erfc(std::sqrt(chi2 / 2));  // chi-square with 1 dof: P(X > chi2)
}

Expected<QuantSpec> ReadQuantSpec(const YamlNode& root, const std::string& file) {
  FP_RETURN_IF_ERROR(root.CheckKeys({"policy", "baseline", "candidates"}));
  if (!root.IsMap()) return root.Error("expected a mapping (policy, baseline, candidates)");
  QuantSpec spec;
  spec.file = file;
  FP_ASSIGN_OR_RETURN(spec.policy, ReadPolicy(root["policy"]));
  FP_ASSIGN_OR_RETURN(spec.baseline, ReadArm(root["baseline"]));
  FP_ASSIGN_OR_RETURN(auto items, root["candidates"].Items());
  if (items.empty()) return root["candidates"].Error("expected at least one candidate");
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(QuantArm a, ReadArm(item));
    for (const QuantArm& other : spec.candidates) {
      if (other.name == a.name) return item["name"].Error(fmt::format("duplicate candidate '{}'", a.name));
    }
    spec.candidates.push_back(std::move(a));
  }
  return spec;
}

Expected<QuantSpec> LoadQuantSpec(const std::string& path) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadQuantSpec(doc.root(), path);
}

QuantGateResult RunQuantizationGate(const QuantSpec& spec, uint64_t seed) {
  QuantGateResult r;
  r.file = spec.file;
  for (const QuantArm& a : spec.candidates) {
    r.candidates.push_back(Judge(spec, a, seed));
    if (r.candidates.back().decision == GateDecision::kPass) r.advance.push_back(a.name);
  }
  return r;
}

Json ToJson(const QuantGateResult& r) {
  Json cands = Json::array();
  for (const QuantCandidateResult& c : r.candidates) {
    Json gates = Json::object();
    for (const GateCheck& g : c.checks) gates[g.name] = GateDecisionName(g.decision);
    cands.push_back({{"name", c.name}, {"method", c.method}, {"decision", GateDecisionName(c.decision)},
                     {"gates", gates}, {"checks", ToJson(c.checks)},
                     {"advance_to", c.decision == GateDecision::kPass ? Json("staging") : Json(nullptr)}});
  }
  return Json{{"gate", "quantization"}, {"file", r.file}, {"candidates", cands}, {"advance", r.advance}};
}

std::string ToText(const QuantGateResult& r) {
  std::string out = fmt::format("quantization gate ({})\n", r.file);
  for (const QuantCandidateResult& c : r.candidates) {
    out += fmt::format("candidate {} ({}): {}\n", c.name, c.method, GateDecisionName(c.decision));
    out += ChecksText(c.checks, "  ");
  }
  out += r.advance.empty() ? "no candidate advances\n"
                           : fmt::format("advance to staging: {}\n", fmt::join(r.advance, ", "));
  return out;
}

Expected<GateReport> RunQuantizationRequest(const GateRequest& request) {
  FP_ASSIGN_OR_RETURN(QuantSpec spec, LoadQuantSpec(request.files.at(0)));
  const QuantGateResult r = RunQuantizationGate(spec, request.seed);
  int exit = 0;
  for (const QuantCandidateResult& c : r.candidates) {
    if (c.decision == GateDecision::kHold) exit = 1;
  }
  return GateReport{ToJson(r), ToText(r), exit};
}

}  // namespace fleetplan
