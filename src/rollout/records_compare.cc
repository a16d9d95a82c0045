#include "fleetplan/rollout/records_compare.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/metrics/records_io.h"

namespace fleetplan {
namespace {

// Collects every record, accepting any class name (in first-seen order).
class Collect final : public RecordSink {
 public:
  Expected<ClassId> ResolveClass(std::string_view name) override {
    const auto it = std::find(classes.begin(), classes.end(), name);
    if (it != classes.end()) return static_cast<ClassId>(it - classes.begin());
    classes.emplace_back(name);
    return static_cast<ClassId>(classes.size() - 1);
  }
  bool NeedsItl(ClassId) const override { return false; }
  void Add(const RequestRecord& r) override { records.push_back(r); }
  std::vector<std::string> classes;
  std::vector<RequestRecord> records;
};

double Sample(const RequestRecord& r, const std::string& metric) {
  constexpr double kErrored = std::numeric_limits<double>::quiet_NaN();
  if (r.status != RecordStatus::kOk) return kErrored;
  std::optional<Duration> d;
  if (metric == "ttft_ms") d = Ttft(r);
  if (metric == "tpot_ms") d = Tpot(r);
  if (metric == "e2e_ms") d = E2e(r);
  if (metric == "itl_max_ms") d = r.itl_max;
  return d ? d->millis() : kErrored;
}

}  // namespace

const std::vector<std::string>& RecordMetricNames() {
  static const std::vector<std::string> names = {"ttft_ms", "tpot_ms", "e2e_ms", "itl_max_ms"};
  return names;
}

Expected<Json> CompareRecordsFiles(const std::string& candidate, const std::string& baseline,
                                   const RecordsComparisonOptions& options) {
  MetricPolicy shape;
  shape.tolerance = options.tolerance;
  shape.alpha = options.alpha;
  shape.min_samples = options.min_samples;
  for (Statistic st : options.statistics) shape.statistics.push_back(StatisticPolicy{st, Better::kLower, options.tolerance});
  std::vector<MetricPolicy> policies;
  for (const std::string& m : options.metrics) {
    policies.push_back(shape);
    policies.back().name = m;
  }
  FP_ASSIGN_OR_RETURN(Json result, CompareRecordsWithPolicies(candidate, baseline, policies, options.format));
  Json statistics = Json::array();
  for (const StatisticPolicy& sp : StatisticsOf(shape)) statistics.push_back(StatisticName(sp.statistic));
  result["policy"] = {{"tolerance", options.tolerance},
                      {"alpha", options.alpha},
                      {"min_samples", options.min_samples},
                      {"statistics", statistics}};
  return result;
}

Expected<Json> CompareRecordsWithPolicies(const std::string& candidate, const std::string& baseline,
                                          const std::vector<MetricPolicy>& policies, const std::string& format) {
  for (const MetricPolicy& p : policies) {
    if (std::find(RecordMetricNames().begin(), RecordMetricNames().end(), p.name) == RecordMetricNames().end()) {
      return InvalidInput(UnknownNameMessage("metric", p.name, RecordMetricNames()));
    }
  }
  FP_ASSIGN_OR_RETURN(auto reader, MakeRecordReader(format));
  Collect cand, base;
  FP_ASSIGN_OR_RETURN(RecordsFileInfo cand_info, reader->Read(candidate, cand));
  FP_ASSIGN_OR_RETURN(RecordsFileInfo base_info, reader->Read(baseline, base));
  // Strata: every class either side has, in the candidate's order, then the baseline's.
  std::vector<std::string> classes = cand.classes;
  for (const std::string& c : base.classes) {
    if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
  }
  Json metrics = Json::object();
  Json reasons = Json::array();     // failures first, then holds
  Json hold_reasons = Json::array();
  bool any_fail = false, any_hold = false;
  for (const MetricPolicy& policy : policies) {
    const std::string& m = policy.name;
    std::vector<StratumSamples> strata;
    for (const std::string& c : classes) strata.push_back(StratumSamples{c, {}, {}});
    auto fill = [&](const Collect& from, bool is_candidate) {
      for (const RequestRecord& r : from.records) {
        const std::string& cls = from.classes[static_cast<size_t>(r.class_id)];
        const size_t at = static_cast<size_t>(std::find(classes.begin(), classes.end(), cls) - classes.begin());
        (is_candidate ? strata[at].candidate : strata[at].baseline).push_back(Sample(r, m));
      }
    };
    fill(cand, true);
    fill(base, false);
    const MetricVerdict s = CompareMetricStratified(policy, strata);
    metrics[m] = MetricVerdictJson(s);
    any_fail |= s.verdict == CanaryVerdict::kFail;
    any_hold |= s.verdict == CanaryVerdict::kHold;
    if (s.verdict == CanaryVerdict::kFail) reasons.push_back(s.reason);
    if (s.verdict == CanaryVerdict::kHold) hold_reasons.push_back(s.reason);
  }
  for (const Json& r : hold_reasons) reasons.push_back(r);
  const CanaryVerdict verdict = any_fail ? CanaryVerdict::kFail : any_hold ? CanaryVerdict::kHold : CanaryVerdict::kPass;
  auto side = [](const RecordsFileInfo& i) { return Json{{"path", i.path}, {"digest", i.digest}, {"records", i.records}}; };
  return Json{{"kind", "fleetplan-canary-comparison"},
              {"candidate", side(cand_info)},
              {"baseline", side(base_info)},
              {"metrics", metrics},
              {"verdict", CanaryVerdictName(verdict)},
              {"reasons", reasons}};
}

}  // namespace fleetplan
