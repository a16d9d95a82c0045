#include "fleetplan/rollout/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace fleetplan {
namespace {

std::vector<double> Usable(std::span<const double> v, int64_t& dropped) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v) {
    if (std::isfinite(x)) {
      out.push_back(x);
    } else {
      ++dropped;
    }
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

MannWhitneyResult MannWhitney(std::span<const double> candidate, std::span<const double> baseline) {
  const size_t n1 = candidate.size(), n2 = baseline.size();
  // Ranks over the pooled samples, ties sharing their mean rank.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n1 + n2);
  for (double x : candidate) pooled.emplace_back(x, 0);
  for (double x : baseline) pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2;  // ranks i+1..j
    const auto t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum += mean_rank;
    }
    i = j;
  }
  const auto a = static_cast<double>(n1), b = static_cast<double>(n2), n = a + b;
  MannWhitneyResult r;
  r.u = rank_sum - a * (a + 1) / 2;
  const double mean = a * b / 2;
  const double var = a * b / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return r;  // every value equal: no evidence of a difference
  const double diff = r.u - mean;
  const double corrected = std::max(0.0, std::abs(diff) - 0.5);
  r.z = std::copysign(corrected / std::sqrt(var), diff);
  r.p_value = std::erfc(std::abs(r.z) / std::sqrt(2.0));
  return r;
}

std::string_view CanaryVerdictName(CanaryVerdict v) {
  static constexpr std::string_view kNames[] = {"pass", "fail", "hold"};
  return kNames[static_cast<int>(v)];
}

MetricComparison CompareMetric(const MetricPolicy& policy, std::span<const double> candidate,
                               std::span<const double> baseline) {
  MetricComparison c;
  const std::vector<double> cand = Usable(candidate, c.candidate_dropped);
  const std::vector<double> base = Usable(baseline, c.baseline_dropped);
  c.candidate_n = static_cast<int64_t>(cand.size());
  c.baseline_n = static_cast<int64_t>(base.size());
  if (c.candidate_n < policy.min_samples || c.baseline_n < policy.min_samples) {
    c.no_data = true;
    c.verdict = CanaryVerdict::kHold;
    c.reason = fmt::format("{}: no data to decide on: {} usable candidate and {} baseline samples ({} and {} errored or "
                           "NaN), at least {} each are required",
                           policy.name, c.candidate_n, c.baseline_n, c.candidate_dropped, c.baseline_dropped,
                           policy.min_samples);
    return c;
  }
  c.candidate_median = Median(cand);
  c.baseline_median = Median(base);
  c.effect = c.baseline_median != 0 ? c.candidate_median / c.baseline_median - 1 : 0;
  c.test = MannWhitney(cand, base);
  const double bad = policy.better == Better::kLower ? c.effect : -c.effect;
  const bool significant = c.test.p_value < policy.alpha;
  c.verdict = significant && bad > policy.tolerance ? CanaryVerdict::kFail : CanaryVerdict::kPass;
  c.reason = fmt::format("{}: median {:.6g} against {:.6g} ({:+.1f}%, {} is better, tolerance {:.1f}%), Mann-Whitney "
                         "p = {:.3g} on {} and {} samples: {}",
                         policy.name, c.candidate_median, c.baseline_median, 100 * c.effect,
                         policy.better == Better::kLower ? "lower" : "higher", 100 * policy.tolerance, c.test.p_value,
                         c.candidate_n, c.baseline_n,
                         c.verdict == CanaryVerdict::kFail ? "regressed"
                         : significant && bad > 0    ? "within tolerance"
                         : significant               ? "improved"
                                                     : "no significant difference");
  return c;
}

StratifiedComparison CompareStratified(const MetricPolicy& policy, const std::vector<StratumSamples>& strata) {
  StratifiedComparison s;
  std::vector<double> cand, base;
  for (const StratumSamples& st : strata) {
    cand.insert(cand.end(), st.candidate.begin(), st.candidate.end());
    base.insert(base.end(), st.baseline.begin(), st.baseline.end());
    MetricPolicy p = policy;
    p.name = policy.name + "[" + st.name + "]";
    s.strata.emplace_back(st.name, CompareMetric(p, st.candidate, st.baseline));
  }
  s.aggregate = CompareMetric(policy, cand, base);
  std::vector<std::string> failing, no_data;
  for (const auto& [name, c] : s.strata) {
    if (c.no_data) no_data.push_back(name);
    if (c.verdict == CanaryVerdict::kFail) failing.push_back(name);
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& x : v) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  if (s.aggregate.no_data || !no_data.empty()) {
    s.verdict = CanaryVerdict::kHold;
    s.reason = s.aggregate.no_data ? s.aggregate.reason
                                   : fmt::format("{}: no data for {}: hold until every stratum has samples", policy.name,
                                                 list(no_data));
  } else if (s.aggregate.verdict == CanaryVerdict::kPass && !failing.empty()) {
    s.verdict = CanaryVerdict::kHold;
    s.disagree = true;
    s.reason = fmt::format("{}: the aggregate passes but {} regressed: the mix hides a regression (hold)", policy.name,
                           list(failing));
  } else if (s.aggregate.verdict == CanaryVerdict::kFail && failing.empty()) {
    s.verdict = CanaryVerdict::kHold;
    s.disagree = true;
    s.reason = fmt::format("{}: the aggregate regressed but no stratum did: the workload mix shifted between candidate "
                           "and baseline (Simpson's paradox; hold)",
                           policy.name);
  } else {
    s.verdict = s.aggregate.verdict;
    s.reason = failing.empty() ? s.aggregate.reason
                               : fmt::format("{}; regressed in {}", s.aggregate.reason, list(failing));
  }
  return s;
}

Json ComparisonJson(const MetricComparison& c) {
  auto finite = [](double v) { return std::isfinite(v) ? Json(RoundForReport(v)) : Json(nullptr); };
  return {{"verdict", CanaryVerdictName(c.verdict)},
          {"no_data", c.no_data},
          {"candidate", {{"n", c.candidate_n}, {"dropped", c.candidate_dropped}, {"median", finite(c.candidate_median)}}},
          {"baseline", {{"n", c.baseline_n}, {"dropped", c.baseline_dropped}, {"median", finite(c.baseline_median)}}},
          {"effect", finite(c.effect)},
          {"mann_whitney", {{"u", finite(c.test.u)}, {"z", finite(c.test.z)}, {"p_value", finite(c.test.p_value)}}},
          {"reason", c.reason}};
}

Json StratifiedJson(const StratifiedComparison& c) {
  Json strata = Json::object();
  for (const auto& [name, m] : c.strata) strata[name] = ComparisonJson(m);
  return {{"verdict", CanaryVerdictName(c.verdict)},
          {"disagree", c.disagree},
          {"aggregate", ComparisonJson(c.aggregate)},
          {"strata", strata},
          {"reason", c.reason}};
}

}  // namespace fleetplan
