#include "fleetplan/rollout/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/metrics/percentile.h"

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

// The statistic of a usable sample (not the error rate); reorders `v`.
double ValueOf(Statistic s, std::vector<double>& v) {
  switch (s) {
    case Statistic::kMedian: return Median(v);
    case Statistic::kP95: return NearestRankSelect(v, 0.95);  // the reports' definition
    case Statistic::kP99: return NearestRankSelect(v, 0.99);
    case Statistic::kMean: return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    case Statistic::kErrorRate: break;
  }
  FP_ASSERT(false);
  return 0;
}

double RelativeChange(double candidate, double baseline) { return baseline != 0 ? candidate / baseline - 1 : 0; }

struct BootstrapResult {
  double lo = 0, hi = 0, p_value = 1;
};

// Percentile bootstrap of the statistic's relative change: both sides resampled with
// replacement, `resamples` times; the interval at alpha/2 and 1 - alpha/2 and the
// two-sided p from the share of resampled effects on either side of 0.
BootstrapResult Bootstrap(Statistic s, const std::vector<double>& candidate, const std::vector<double>& baseline,
                          double alpha, int64_t resamples, RngStream rng) {
  std::vector<double> effects;
  effects.reserve(static_cast<size_t>(resamples));
  std::vector<double> c(candidate.size()), b(baseline.size());
  auto resample = [&rng](const std::vector<double>& from, std::vector<double>& into) {
    for (double& x : into) x = from[rng.NextBelow(from.size())];
  };
  for (int64_t i = 0; i < resamples; ++i) {
    resample(candidate, c);
    resample(baseline, b);
    effects.push_back(RelativeChange(ValueOf(s, c), ValueOf(s, b)));
  }
  std::sort(effects.begin(), effects.end());
  const auto last = static_cast<double>(effects.size() - 1);
  BootstrapResult r;
  r.lo = effects[static_cast<size_t>(std::floor(alpha / 2 * last))];
  r.hi = effects[static_cast<size_t>(std::ceil((1 - alpha / 2) * last))];
  const auto at_or_below = std::upper_bound(effects.begin(), effects.end(), 0.0) - effects.begin();
  const auto at_or_above = effects.end() - std::lower_bound(effects.begin(), effects.end(), 0.0);
  r.p_value = std::min(1.0, 2.0 * static_cast<double>(std::min(at_or_below, at_or_above)) / (last + 1));
  return r;
}

std::string Label(const MetricPolicy& policy, Statistic s) {
  return s == Statistic::kMedian ? policy.name : fmt::format("{} {}", policy.name, StatisticName(s));
}

std::string_view Outcome(CanaryVerdict verdict, bool significant, double bad) {
  return verdict == CanaryVerdict::kFail ? "regressed"
         : significant && bad > 0        ? "within tolerance"
         : significant                   ? "improved"
                                         : "no significant difference";
}

// The error rate: errored samples over all samples, a two-proportion z test.
void CompareErrorRate(const MetricPolicy& policy, const StatisticPolicy& sp, MetricComparison& c) {
  const int64_t cand_total = c.candidate_n + c.candidate_dropped, base_total = c.baseline_n + c.baseline_dropped;
  if (cand_total < policy.min_samples || base_total < policy.min_samples) {
    c.no_data = true;
    c.reason = fmt::format("{}: no data to decide on: {} candidate and {} baseline requests, at least {} each are required",
                           Label(policy, sp.statistic), cand_total, base_total, policy.min_samples);
    return;
  }
  const auto tc = static_cast<double>(cand_total), tb = static_cast<double>(base_total);
  c.candidate_value = static_cast<double>(c.candidate_dropped) / tc;
  c.baseline_value = static_cast<double>(c.baseline_dropped) / tb;
  c.effect = c.candidate_value - c.baseline_value;
  const double pooled = static_cast<double>(c.candidate_dropped + c.baseline_dropped) / (tc + tb);
  const double se = std::sqrt(pooled * (1 - pooled) * (1 / tc + 1 / tb));
  if (se > 0) {
    c.test.z = c.effect / se;
    c.test.p_value = std::erfc(std::abs(c.test.z) / std::sqrt(2.0));
  }
  const bool significant = c.test.p_value < policy.alpha;
  c.verdict = significant && c.effect > sp.tolerance ? CanaryVerdict::kFail : CanaryVerdict::kPass;
  c.reason = fmt::format("{}: {:.4g}% against {:.4g}% ({:+.2f} points, lower is better, tolerance {:.2f} points), "
                         "two-proportion p = {:.3g} on {} and {} requests: {}",
                         Label(policy, sp.statistic), 100 * c.candidate_value, 100 * c.baseline_value, 100 * c.effect,
                         100 * sp.tolerance, c.test.p_value, cand_total, base_total,
                         Outcome(c.verdict, significant, c.effect));
}

int64_t FiniteCount(std::span<const double> v) {
  return std::count_if(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// Enough samples on both sides for the statistic: usable ones, or every one for the error rate.
bool HasSamples(const MetricPolicy& policy, const StatisticPolicy& sp, std::span<const double> candidate,
                std::span<const double> baseline) {
  if (sp.statistic == Statistic::kErrorRate) {
    return static_cast<int64_t>(candidate.size()) >= policy.min_samples &&
           static_cast<int64_t>(baseline.size()) >= policy.min_samples;
  }
  return FiniteCount(candidate) >= policy.min_samples && FiniteCount(baseline) >= policy.min_samples;
}

std::string List(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

}  // namespace

std::string_view StatisticName(Statistic s) {
  static constexpr std::string_view kNames[] = {"median", "p95", "p99", "mean", "error_rate"};
  return kNames[static_cast<int>(s)];
}

const std::vector<std::string>& StatisticNames() {
  static const std::vector<std::string> names = {"median", "p95", "p99", "mean", "error_rate"};
  return names;
}

Expected<Statistic> ParseStatistic(std::string_view name) {
  const auto& names = StatisticNames();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return InvalidInput(UnknownNameMessage("statistic", name, names));
  return static_cast<Statistic>(it - names.begin());
}

std::vector<StatisticPolicy> StatisticsOf(const MetricPolicy& policy) {
  if (!policy.statistics.empty()) return policy.statistics;
  return {StatisticPolicy{Statistic::kMedian, policy.better, policy.tolerance},
          StatisticPolicy{Statistic::kP95, policy.better, policy.tolerance}};
}

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

MetricComparison CompareStatistic(const MetricPolicy& policy, const StatisticPolicy& sp,
                                  std::span<const double> candidate, std::span<const double> baseline,
                                  std::string_view stream) {
  MetricComparison c;
  c.statistic = sp.statistic;
  std::vector<double> cand = Usable(candidate, c.candidate_dropped);
  std::vector<double> base = Usable(baseline, c.baseline_dropped);
  c.candidate_n = static_cast<int64_t>(cand.size());
  c.baseline_n = static_cast<int64_t>(base.size());
  if (sp.statistic == Statistic::kErrorRate) {
    CompareErrorRate(policy, sp, c);
    return c;
  }
  if (c.candidate_n < policy.min_samples || c.baseline_n < policy.min_samples) {
    c.no_data = true;
    c.reason = fmt::format("{}: no data to decide on: {} usable candidate and {} baseline samples ({} and {} errored or "
                           "NaN), at least {} each are required",
                           policy.name, c.candidate_n, c.baseline_n, c.candidate_dropped, c.baseline_dropped,
                           policy.min_samples);
    return c;
  }
  c.candidate_value = ValueOf(sp.statistic, cand);
  c.baseline_value = ValueOf(sp.statistic, base);
  c.effect = RelativeChange(c.candidate_value, c.baseline_value);
  std::string test;
  if (sp.statistic == Statistic::kMedian) {
    c.test = MannWhitney(cand, base);
    test = fmt::format("Mann-Whitney p = {:.3g}", c.test.p_value);
  } else {
    const RngStream rng = RngStream(policy.seed, "rollout.bootstrap")
                              .Fork(policy.name)
                              .Fork(StatisticName(sp.statistic))
                              .Fork(stream);
    const BootstrapResult b = Bootstrap(sp.statistic, cand, base, policy.alpha, policy.bootstrap_resamples, rng);
    c.test.p_value = b.p_value;
    c.interval = std::pair{b.lo, b.hi};
    test = fmt::format("bootstrap {:.3g}% interval [{:+.1f}%, {:+.1f}%]", 100 * (1 - policy.alpha), 100 * b.lo, 100 * b.hi);
  }
  const double bad = sp.better == Better::kLower ? c.effect : -c.effect;
  // The bootstrap is significant when its interval excludes 0; its p says the same.
  const bool significant = c.interval ? (c.interval->first > 0 || c.interval->second < 0) : c.test.p_value < policy.alpha;
  c.verdict = significant && bad > sp.tolerance ? CanaryVerdict::kFail : CanaryVerdict::kPass;
  c.reason = fmt::format("{}: {} {:.6g} against {:.6g} ({:+.1f}%, {} is better, tolerance {:.1f}%), {} on {} and {} "
                         "samples: {}",
                         policy.name, StatisticName(sp.statistic), c.candidate_value, c.baseline_value, 100 * c.effect,
                         sp.better == Better::kLower ? "lower" : "higher", 100 * sp.tolerance, test, c.candidate_n,
                         c.baseline_n, Outcome(c.verdict, significant, bad));
  return c;
}

MetricComparison CompareMetric(const MetricPolicy& policy, std::span<const double> candidate,
                               std::span<const double> baseline) {
  return CompareStatistic(policy, StatisticPolicy{Statistic::kMedian, policy.better, policy.tolerance}, candidate,
                          baseline);
}

StratifiedComparison CompareStratified(const MetricPolicy& policy, const StatisticPolicy& sp,
                                       const std::vector<StratumSamples>& strata) {
  StratifiedComparison s;
  s.statistic = sp.statistic;
  // Strata are tested at alpha / m (Bonferroni over the m strata with enough samples), so
  // any one of them can roll back while the chance that one does by accident stays alpha.
  const auto with_data = static_cast<double>(std::count_if(strata.begin(), strata.end(), [&](const StratumSamples& st) {
    return HasSamples(policy, sp, st.candidate, st.baseline);
  }));
  std::vector<double> cand, base;
  for (const StratumSamples& st : strata) {
    cand.insert(cand.end(), st.candidate.begin(), st.candidate.end());
    base.insert(base.end(), st.baseline.begin(), st.baseline.end());
    MetricPolicy p = policy;
    p.name = policy.name + "[" + st.name + "]";
    if (with_data > 1) p.alpha = policy.alpha / with_data;
    s.strata.emplace_back(st.name, CompareStatistic(p, sp, st.candidate, st.baseline, st.name));
  }
  s.aggregate = CompareStatistic(policy, sp, cand, base);
  std::vector<std::string> failing, short_of_samples;
  const MetricComparison* first_failing = nullptr;
  for (const auto& [name, c] : s.strata) {
    if (c.no_data) short_of_samples.push_back(name);
    if (c.verdict == CanaryVerdict::kFail) {
      failing.push_back(name);
      if (first_failing == nullptr) first_failing = &c;
    }
  }
  const std::string label = Label(policy, sp.statistic);
  const std::string short_note =
      short_of_samples.empty()
          ? ""
          : fmt::format("; {} short of samples (cannot veto a rollback)", List(short_of_samples));
  if (s.aggregate.no_data) {
    s.verdict = CanaryVerdict::kHold;
    s.reason = s.aggregate.reason;
  } else if (!failing.empty() && s.aggregate.verdict == CanaryVerdict::kFail) {
    s.verdict = CanaryVerdict::kFail;
    s.reason = fmt::format("{}; regressed in {}{}", s.aggregate.reason, List(failing), short_note);
  } else if (!failing.empty()) {
    // A class's own comparison is not confounded by the mix: its regression stands, though
    // the pooled samples hide it.
    s.verdict = CanaryVerdict::kFail;
    s.disagree = true;
    s.reason = fmt::format("{}: regressed in {}, which the pooled samples hide: {}{}", label, List(failing),
                           first_failing->reason, short_note);
  } else if (s.aggregate.verdict == CanaryVerdict::kFail && short_of_samples.empty()) {
    s.verdict = CanaryVerdict::kHold;
    s.disagree = true;
    s.reason = fmt::format("{}: the aggregate regressed but no stratum did: the workload mix shifted between candidate "
                           "and baseline (Simpson's paradox; hold)",
                           label);
  } else if (s.aggregate.verdict == CanaryVerdict::kFail) {
    s.verdict = CanaryVerdict::kHold;
    s.reason = fmt::format("{}: the aggregate regressed but no stratum with enough samples did ({} short of samples): "
                           "hold until they confirm it",
                           label, List(short_of_samples));
  } else if (!short_of_samples.empty()) {
    s.verdict = CanaryVerdict::kHold;
    s.reason = fmt::format("{}: no data for {}: hold until every stratum has samples", label, List(short_of_samples));
  } else {
    s.verdict = CanaryVerdict::kPass;
    s.reason = s.aggregate.reason;
  }
  return s;
}

StratifiedComparison CompareStratified(const MetricPolicy& policy, const std::vector<StratumSamples>& strata) {
  return CompareStratified(policy, StatisticPolicy{Statistic::kMedian, policy.better, policy.tolerance}, strata);
}

MetricVerdict CompareMetricStratified(const MetricPolicy& policy, const std::vector<StratumSamples>& strata) {
  MetricVerdict v;
  for (const StatisticPolicy& sp : StatisticsOf(policy)) v.statistics.push_back(CompareStratified(policy, sp, strata));
  const auto first = [&](CanaryVerdict verdict) {
    return std::find_if(v.statistics.begin(), v.statistics.end(),
                        [&](const StratifiedComparison& s) { return s.verdict == verdict; });
  };
  if (auto it = first(CanaryVerdict::kFail); it != v.statistics.end()) {
    v.verdict = CanaryVerdict::kFail;
    v.reason = it->reason;
  } else if (auto held = first(CanaryVerdict::kHold); held != v.statistics.end()) {
    v.verdict = CanaryVerdict::kHold;
    v.reason = held->reason;
  } else {
    v.verdict = CanaryVerdict::kPass;
    v.reason = v.statistics.front().reason;
  }
  return v;
}

Json ComparisonJson(const MetricComparison& c) {
  auto finite = [](double v) { return std::isfinite(v) ? Json(RoundForReport(v)) : Json(nullptr); };
  Json j = {{"statistic", StatisticName(c.statistic)},
            {"verdict", CanaryVerdictName(c.verdict)},
            {"no_data", c.no_data},
            {"candidate", {{"n", c.candidate_n}, {"dropped", c.candidate_dropped}, {"value", finite(c.candidate_value)}}},
            {"baseline", {{"n", c.baseline_n}, {"dropped", c.baseline_dropped}, {"value", finite(c.baseline_value)}}},
            {"effect", finite(c.effect)},
            {"reason", c.reason}};
  if (c.statistic == Statistic::kMedian) {
    j["mann_whitney"] = {{"u", finite(c.test.u)}, {"z", finite(c.test.z)}, {"p_value", finite(c.test.p_value)}};
  } else if (c.statistic == Statistic::kErrorRate) {
    j["two_proportion"] = {{"z", finite(c.test.z)}, {"p_value", finite(c.test.p_value)}};
  } else {
    j["bootstrap"] = {{"p_value", finite(c.test.p_value)},
                      {"interval", c.interval ? Json::array({finite(c.interval->first), finite(c.interval->second)})
                                              : Json(nullptr)}};
  }
  return j;
}

Json StratifiedJson(const StratifiedComparison& c) {
  Json strata = Json::object();
  for (const auto& [name, m] : c.strata) strata[name] = ComparisonJson(m);
  return {{"statistic", StatisticName(c.statistic)},
          {"verdict", CanaryVerdictName(c.verdict)},
          {"disagree", c.disagree},
          {"aggregate", ComparisonJson(c.aggregate)},
          {"strata", strata},
          {"reason", c.reason}};
}

Json MetricVerdictJson(const MetricVerdict& v) {
  Json statistics = Json::object();
  for (const StratifiedComparison& s : v.statistics) statistics[std::string(StatisticName(s.statistic))] = StratifiedJson(s);
  return {{"verdict", CanaryVerdictName(v.verdict)}, {"reason", v.reason}, {"statistics", statistics}};
}

}  // namespace fleetplan
