#include "fleetplan/fleet/router.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "fleetplan/core/registry.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/scenario_schema.h"

namespace fleetplan {
namespace {

// Scans the replicas from `start` (wrapping) and returns the first whose score is
// strictly better than every earlier one: equal scores go to the earliest in scan order,
// and the scan starts after the previous choice, so equal bursts rotate.
template <typename Better>
int32_t ScanBest(int32_t start, const std::vector<double>& score, Better better) {
  const auto n = static_cast<int32_t>(score.size());
  int32_t best = -1;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t i = (start + k) % n;
    if (best < 0 || better(score[static_cast<size_t>(i)], score[static_cast<size_t>(best)])) best = i;
  }
  return best;
}

// A router whose choice is the best of a per-replica score; owns the rotating start.
class ScoringRouter : public Router {
 public:
  RouteDecision Route(const Request& request, std::span<const ReplicaView> view) final {
    scores_.assign(view.size(), 0.0);
    for (size_t i = 0; i < view.size(); ++i) scores_[i] = Score(request, view, i);
    const int32_t best = lower_is_better() ? ScanBest(start_, scores_, std::less<double>())
                                           : ScanBest(start_, scores_, std::greater<double>());
    start_ = (best + 1) % static_cast<int32_t>(view.size());
    RouteDecision d = Explain(request, view[static_cast<size_t>(best)]);
    d.replica = best;
    d.score = scores_[static_cast<size_t>(best)];
    return d;
  }

 protected:
  virtual bool lower_is_better() const = 0;
  virtual double Score(const Request& request, std::span<const ReplicaView> view, size_t i) const = 0;
  virtual RouteDecision Explain(const Request&, const ReplicaView&) const { return {}; }

 private:
  std::vector<double> scores_;
  int32_t start_ = 0;
};

class RoundRobin final : public Router {
 public:
  std::string_view name() const override { return "round-robin"; }
  RouteDecision Route(const Request&, std::span<const ReplicaView> view) override {
    const auto n = static_cast<int64_t>(view.size());
    RouteDecision d;
    d.replica = static_cast<int32_t>(next_++ % n);
    return d;
  }

 private:
  int64_t next_ = 0;
};

// Fewest outstanding tokens or requests (the work a replica still owes, as the router
// sees it).
class LeastOutstanding final : public ScoringRouter {
 public:
  explicit LeastOutstanding(OutstandingBy by) : by_(by) {}
  std::string_view name() const override { return "least-outstanding"; }

 protected:
  bool lower_is_better() const override { return true; }
  double Score(const Request&, std::span<const ReplicaView> view, size_t i) const override {
    const ReplicaView& v = view[i];
    return static_cast<double>(by_ == OutstandingBy::kTokens ? v.outstanding_tokens() : v.outstanding_requests());
  }

 private:
  OutstandingBy by_;
};

// Lowest estimated completion contribution (see router.h), in integer ns so the sum is
// exact.
class CacheAware final : public ScoringRouter {
 public:
  CacheAware(Duration per_token, Duration missing_per_token)
      : per_token_(per_token), missing_per_token_(missing_per_token) {}
  std::string_view name() const override { return "cache-aware"; }

 protected:
  bool lower_is_better() const override { return true; }
  double Score(const Request& r, std::span<const ReplicaView> view, size_t i) const override {
    const RouteDecision d = Explain(r, view[i]);
    return static_cast<double>((d.queued_work + d.recompute).ns());
  }
  RouteDecision Explain(const Request& r, const ReplicaView& v) const override {
    const int64_t missing = std::max<int64_t>(0, r.prompt_tokens() - v.matched_prefix_tokens);
    RouteDecision d;
    d.queued_work = per_token_ * v.outstanding_tokens();
    d.recompute = missing_per_token_ * missing;
    return d;
  }

 private:
  Duration per_token_;
  Duration missing_per_token_;
};

// The weighted router's scorers, each a replica -> [0, 1] map (1 = best).
double MaxOf(std::span<const ReplicaView> view, int64_t (*get)(const ReplicaView&)) {
  int64_t m = 0;
  for (const ReplicaView& v : view) m = std::max(m, get(v));
  return static_cast<double>(m);
}
int64_t Waiting(const ReplicaView& v) {
  return v.telemetry.waiting + v.sent_requests;
}
int64_t Running(const ReplicaView& v) {
  return v.telemetry.running;
}
int64_t Outstanding(const ReplicaView& v) {
  return v.outstanding_requests();
}

double InverseShare(std::span<const ReplicaView> view, size_t i, int64_t (*get)(const ReplicaView&)) {
  const double max = MaxOf(view, get);
  return max > 0 ? 1.0 - static_cast<double>(get(view[i])) / max : 1.0;
}

using Scorer = double (*)(const Request&, std::span<const ReplicaView>, size_t);

double PrefixScore(const Request& r, std::span<const ReplicaView> view, size_t i) {
  const int64_t prompt = r.prompt_tokens();
  return prompt > 0 ? static_cast<double>(view[i].matched_prefix_tokens) / static_cast<double>(prompt) : 0.0;
}
double QueueScore(const Request&, std::span<const ReplicaView> view, size_t i) {
  return InverseShare(view, i, &Waiting);
}
double KvScore(const Request&, std::span<const ReplicaView> view, size_t i) {
  const ReplicaTelemetry& t = view[i].telemetry;
  return t.kv_total_blocks > 0 ? 1.0 - static_cast<double>(t.kv_used_blocks) / static_cast<double>(t.kv_total_blocks)
                               : 1.0;
}
double RunningScore(const Request&, std::span<const ReplicaView> view, size_t i) {
  return InverseShare(view, i, &Running);
}
double AdapterScore(const Request& r, std::span<const ReplicaView> view, size_t i) {
  return r.adapter != kNoAdapter && view[i].adapter_resident ? 1.0 : 0.0;
}

struct NamedScorer {
  const char* name;
  Scorer score;
};
constexpr NamedScorer kScorers[] = {{"prefix", &PrefixScore},
                                    {"queue", &QueueScore},
                                    {"kv", &KvScore},
                                    {"running", &RunningScore},
                                    {"adapter", &AdapterScore}};

class Weighted final : public ScoringRouter {
 public:
  explicit Weighted(const std::map<std::string, double>& weights) {
    for (const NamedScorer& s : kScorers) {  // fixed order: sums are reproducible
      const auto it = weights.find(s.name);
      if (it != weights.end() && it->second > 0) terms_.push_back({it->second, s.score});
    }
  }
  std::string_view name() const override { return "weighted"; }

 protected:
  bool lower_is_better() const override { return false; }
  double Score(const Request& r, std::span<const ReplicaView> view, size_t i) const override {
    double sum = 0;
    for (const Term& t : terms_) sum += t.weight * t.score(r, view, i);
    return sum;
  }

 private:
  struct Term {
    double weight;
    Scorer score;
  };
  std::vector<Term> terms_;
};

class AdapterAware final : public ScoringRouter {
 public:
  explicit AdapterAware(AdapterAwareWeights w) : w_(w) {}
  std::string_view name() const override { return "adapter-aware"; }

 protected:
  bool lower_is_better() const override { return false; }
  double Score(const Request& r, std::span<const ReplicaView> view, size_t i) const override {
    const double load = w_.load * InverseShare(view, i, &Outstanding);
    if (w_.by == AdapterPlacementBy::kPopularity) {
      // A replica the partition places the adapter on outranks every other (load <= w.load).
      return load + (r.adapter != kNoAdapter && view[i].adapter_planned ? w_.load + 1 : 0.0);
    }
    return load + w_.affinity * AdapterScore(r, view, i);
  }

 private:
  AdapterAwareWeights w_;
};

// ---- the registry ---------------------------------------------------------------------

Status ReadOutstandingBy(const YamlNode& node, RouterConfig& c, std::vector<std::string>& derived) {
  static const std::vector<std::string> kOutstandingBy = {"tokens", "requests"};
  FP_ASSIGN_OR_RETURN(std::string by, node.StringOr("tokens"));
  if (std::find(kOutstandingBy.begin(), kOutstandingBy.end(), by) == kOutstandingBy.end()) {
    return node.Error(UnknownNameMessage("load measure", by, kOutstandingBy));
  }
  c.outstanding_by = by == "requests" ? OutstandingBy::kRequests : OutstandingBy::kTokens;
  if (!node.present()) derived.push_back(fmt::format("{}: tokens (not given)", node.path()));
  return Status::Ok();
}

// router.weighted: scorer -> weight >= 0, at least one > 0. Default when absent.
Status ReadWeights(const YamlNode& node, RouterConfig& c, std::vector<std::string>& derived) {
  if (!node.present() || node.IsNull()) {
    c.weights = {{"prefix", 3.0}, {"queue", 2.0}, {"kv", 2.0}};
    derived.push_back("router.weighted: {prefix: 3, queue: 2, kv: 2} (not given)");
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(node.CheckKeys(WeightedScorerNames()));
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  double total = 0;
  for (const auto& [name, value] : entries) {
    FP_ASSIGN_OR_RETURN(double w, value.AsDoubleInRange(0.0, 1e6));
    c.weights[name] = w;
    total += w;
  }
  if (total <= 0) return node.Error("expected at least one scorer with a weight > 0");
  return Status::Ok();
}

Status ReadAdapterAware(const YamlNode& node, RouterConfig& c, std::vector<std::string>& derived) {
  if (node.present() && !node.IsNull()) FP_RETURN_IF_ERROR(node.CheckKeys(scenario_keys::kRouterAdapterAware));
  AdapterAwareWeights& w = c.adapter_aware;
  const AdapterAwareWeights defaults;
  FP_ASSIGN_OR_RETURN(w.load, node["load"].DoubleOr(defaults.load));
  FP_ASSIGN_OR_RETURN(w.affinity, node["affinity"].DoubleOr(defaults.affinity));
  for (const char* key : {"load", "affinity"}) {
    if (!node[key].present()) {
      derived.push_back(fmt::format("{}: {:g} (not given)", node[key].path(), key == std::string("load") ? w.load : w.affinity));
    }
  }
  if (w.affinity < 0) return node["affinity"].Error(fmt::format("expected a number >= 0, got {}", w.affinity));
  FP_ASSIGN_OR_RETURN(std::string by, node["by"].StringOr("history"));
  if (by != "history" && by != "popularity") {
    return node["by"].Error(fmt::format("expected by: history (adapters go where they were loaded) or by: popularity "
                                        "(the partition planned from declared popularity), got '{}'",
                                        by));
  }
  w.by = by == "popularity" ? AdapterPlacementBy::kPopularity : AdapterPlacementBy::kHistory;
  if (!node["by"].present()) derived.push_back(fmt::format("{}: history (not given)", node["by"].path()));
  for (const char* key : {"hot", "warm"}) {
    if (!node[key].present()) {
      derived.push_back(fmt::format("{}: {:g} (not given)", node[key].path(), key == std::string("hot") ? w.hot : w.warm));
    }
  }
  FP_ASSIGN_OR_RETURN(w.hot, node["hot"].DoubleOr(w.hot));
  FP_ASSIGN_OR_RETURN(w.warm, node["warm"].DoubleOr(w.warm));
  if (!(w.hot >= 0 && w.warm >= 0 && w.hot + w.warm <= 1)) {
    const YamlNode at = node["hot"].present() ? node["hot"] : node["warm"];
    return at.Error(fmt::format("expected shares hot, warm >= 0 with hot + warm <= 1, got hot {}, warm {}", w.hot,
                                w.warm));
  }
  if (w.load <= w.affinity) {
    const YamlNode at = node["load"].present() ? node["load"] : node["affinity"];
    return at.Error(fmt::format("expected load > affinity (got load {}, affinity {}), so one hot adapter "
                                "cannot make a hot replica",
                                w.load, w.affinity));
  }
  return Status::Ok();
}

bool Never(const RouterConfig&) { return false; }
bool Always(const RouterConfig&) { return true; }
bool WeighsPrefixes(const RouterConfig& c) {
  const auto it = c.weights.find("prefix");
  return it != c.weights.end() && it->second > 0;
}

std::unique_ptr<Router> MakeRoundRobin(const RouterConfig&, const RouterContext&) {
  return std::make_unique<RoundRobin>();
}
std::unique_ptr<Router> MakeLeastOutstanding(const RouterConfig& c, const RouterContext&) {
  return std::make_unique<LeastOutstanding>(c.outstanding_by);
}
std::unique_ptr<Router> MakeCacheAware(const RouterConfig&, const RouterContext& context) {
  const Duration missing = context.missing_cost_per_token > Duration() ? context.missing_cost_per_token
                                                                        : context.prefill_cost_per_token;
  return std::make_unique<CacheAware>(context.prefill_cost_per_token, missing);
}
std::unique_ptr<Router> MakeWeighted(const RouterConfig& c, const RouterContext&) {
  return std::make_unique<Weighted>(c.weights);
}
std::unique_ptr<Router> MakeAdapterAware(const RouterConfig& c, const RouterContext&) {
  return std::make_unique<AdapterAware>(c.adapter_aware);
}

}  // namespace

const std::vector<RouterPolicy>& RouterPolicies() {
  static const std::vector<RouterPolicy> rows = {
      {"round-robin", "", nullptr, &MakeRoundRobin, &Never},
      {"least-outstanding", "outstanding_by", &ReadOutstandingBy, &MakeLeastOutstanding, &Never},
      {"cache-aware", "", nullptr, &MakeCacheAware, &Always},
      {"weighted", "weighted", &ReadWeights, &MakeWeighted, &WeighsPrefixes},
      {"adapter-aware", "adapter_aware", &ReadAdapterAware, &MakeAdapterAware, &Never},
  };
  return rows;
}

const RouterPolicy* FindRouterPolicy(std::string_view name) {
  for (const RouterPolicy& p : RouterPolicies()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const std::vector<std::string>& RouterNames() {
  static const std::vector<std::string> names = RowNames(RouterPolicies());
  return names;
}

const std::vector<std::string>& WeightedScorerNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const NamedScorer& s : kScorers) out.emplace_back(s.name);
    return out;
  }();
  return names;
}

bool RouterReadsPrefixes(const RouterConfig& config) {
  const RouterPolicy* p = FindRouterPolicy(config.policy);
  return p != nullptr && p->reads_prefixes(config);
}

Expected<std::unique_ptr<Router>> MakeRouter(const RouterConfig& config, const RouterContext& context) {
  const RouterPolicy* p = FindRouterPolicy(config.policy);
  if (p == nullptr) return InvalidInput(UnknownNameMessage("router policy", config.policy, RouterNames()));
  return p->make(config, context);
}

}  // namespace fleetplan
