#include "decision/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace fleetplan::decision {
namespace {

// Bisection steps of a threshold search: the answer is within 2^-10 of the searched span.
constexpr int kSearchSteps = 10;
// Steps of a search whose every step simulates the fleet: the answer within 1/8 of the span.
constexpr int kSimulatedSearchSteps = 3;

// The part of a decision a capacity perturbation can change.
struct Sizing {
  bool ok = false;
  std::string layout;
  int64_t replicas = 0;
  int64_t gpus = 0;
  double per_month = 0;
  bool within_budget = true;

  bool SameDecision(const Sizing& o) const {
    return ok == o.ok && layout == o.layout && replicas == o.replicas && within_budget == o.within_budget;
  }
  std::string Text() const {
    if (!ok) return "no fleet survives the required loss";
    return fmt::format("{} x {} ({} GPUs, ${:.0f}/month{})", replicas, layout, gpus, per_month,
                       within_budget ? "" : ", over budget");
  }
  Json ToJson() const {
    return {{"sized", ok}, {"layout", layout}, {"replicas", replicas}, {"gpus", gpus},
            {"per_month", RoundForReport(per_month, 6)}, {"within_budget", within_budget}};
  }
};

Sizing SizingOf(const CapacityOutcome& c) {
  Sizing s;
  const LayoutCapacity* lc = c.Chosen();
  if (lc == nullptr || !lc->ok) return s;
  s.ok = true;
  s.layout = lc->layout.Name();
  s.replicas = lc->replicas;
  s.gpus = lc->gpus;
  s.per_month = lc->cost.per_month;
  s.within_budget = lc->within_budget;
  return s;
}

using Mutation = std::function<void(CapacitySpec&)>;

Expected<Sizing> SizeWith(const PerturbationInput& in, const Mutation& mutate) {
  std::vector<CapacitySpec> specs = *in.specs;
  for (CapacitySpec& s : specs) mutate(s);
  FP_ASSIGN_OR_RETURN(CapacityOutcome c, SizeFleet(specs, false));
  return SizingOf(c);
}

// The smallest x in (lo, hi] whose decision differs from the one at lo, when the one at hi
// does (the decision is assumed to change once over the span, as demand and price do).
Expected<double> FirstChange(const PerturbationInput& in, const Sizing& base, double lo, double hi,
                             const std::function<Mutation(double)>& at) {
  for (int i = 0; i < kSearchSteps; ++i) {
    const double mid = (lo + hi) / 2;
    FP_ASSIGN_OR_RETURN(Sizing s, SizeWith(in, at(mid)));
    (s.SameDecision(base) ? lo : hi) = mid;
  }
  return hi;
}

Expected<double> ReadFactor(const YamlNode& v) {
  FP_ASSIGN_OR_RETURN(std::string text, v.AsString());
  if (text.empty() || text.back() != 'x') return v.Error(fmt::format("expected a factor such as 2x, got '{}'", text));
  auto doc = YamlDocument::LoadString(text.substr(0, text.size() - 1), "factor");
  if (doc.ok()) {
    auto f = doc->root().AsDouble();
    if (f.ok() && *f > 1 && *f <= 100) return *f;
  }
  return v.Error(fmt::format("expected a factor above 1x and at most 100x, got '{}'", text));
}

// `2x`, or {factor: 2x, startup: 6m} (the start-up is read by the row).
Expected<double> ReadBurst(const YamlNode& v) {
  if (!v.IsMap()) return ReadFactor(v);
  FP_RETURN_IF_ERROR(v.CheckKeys({"factor", "startup"}));
  FP_RETURN_IF_ERROR(v["factor"].RequirePresent());
  if (v["startup"].present()) {
    FP_ASSIGN_OR_RETURN(Duration d, v["startup"].AsDuration());
    if (d <= Duration()) return v["startup"].Error("expected a start-up time > 0");
  }
  return ReadFactor(v["factor"]);
}

Expected<double> ReadShare(const YamlNode& v) {
  FP_ASSIGN_OR_RETURN(std::string text, v.AsString());
  if (text.empty() || text.back() != '%') return v.Error(fmt::format("expected a percentage such as 30%, got '{}'", text));
  auto doc = YamlDocument::LoadString(text.substr(0, text.size() - 1), "share");
  if (doc.ok()) {
    auto p = doc->root().AsDouble();
    if (p.ok() && *p > 0 && *p < 100) return *p / 100;
  }
  return v.Error(fmt::format("expected a percentage above 0% and below 100%, got '{}'", text));
}

double TotalPeak(const CapacitySpec& s) {
  double t = 0;
  for (const RegionDemand& r : s.demand) t += r.peak.per_second;
  return t;
}

Expected<PerturbationOutcome> PeakTraffic(const PerturbationInput& in, double factor) {
  const Sizing base = SizingOf(*in.capacity);
  auto scaled = [](double f) -> Mutation {
    return [f](CapacitySpec& s) {
      for (RegionDemand& r : s.demand) r.peak.per_second *= f;
    };
  };
  FP_ASSIGN_OR_RETURN(Sizing at, SizeWith(in, scaled(factor)));
  PerturbationOutcome out;
  const double peak = TotalPeak(in.specs->front());
  out.json = {{"name", "peak_traffic"}, {"size", fmt::format("{:g}x", factor)}, {"baseline", base.ToJson()},
              {"perturbed", at.ToJson()}, {"changes", !at.SameDecision(base)},
              {"change", fmt::format("sustained peak x{:g} ({:g}/s): {}", factor, peak * factor, at.Text())}};
  if (at.SameDecision(base)) return out;
  FP_ASSIGN_OR_RETURN(double threshold, FirstChange(in, base, 1, factor, scaled));
  FP_ASSIGN_OR_RETURN(Sizing next, SizeWith(in, scaled(threshold)));
  out.json["threshold"] = {{"factor", RoundForReport(threshold, 4)}, {"peak_per_s", RoundForReport(peak * threshold, 4)}};
  out.trigger = Json{{"perturbation", "peak_traffic"},
                     {"threshold", RoundForReport(peak * threshold, 4)},
                     {"unit", "requests/s"},
                     {"trigger", fmt::format("a sustained peak above {:.1f}/s (x{:.3f} the declared {:g}/s) needs {}", peak * threshold,
                                             threshold, peak, next.Text())},
                     {"evidence", "workload: a measured peak or trace above the threshold"}};
  return out;
}

// Longer contexts: every prompt times the factor in the capacity arithmetic. The prompt,
// decode and concurrency (KV) requirements follow; the benchmark's per-replica rate is not
// re-measured, so a change names the dimension that binds and what it would need.
Expected<PerturbationOutcome> LongerContext(const PerturbationInput& in, double factor) {
  const Sizing base = SizingOf(*in.capacity);
  auto scaled = [](double f) -> Mutation { return [f](CapacitySpec& s) { s.prompt_scale = f; }; };
  // The sizing at `f`, and what binds the decision's own layout there.
  auto sized = [&](double f) -> Expected<std::pair<Sizing, std::string>> {
    std::vector<CapacitySpec> specs = *in.specs;
    for (CapacitySpec& s : specs) scaled(f)(s);
    FP_ASSIGN_OR_RETURN(CapacityOutcome c, SizeFleet(specs, false));
    std::string binding = "none";
    for (const CapacityResult& r : c.results) {
      const LayoutCapacity& lc = r.layouts.front();
      if (lc.layout.Name() == base.layout) {
        binding = fmt::format("{} binds {} at {} replicas", fmt::join(lc.binding, ", "), base.layout, lc.replicas);
      }
    }
    return std::make_pair(SizingOf(c), binding);
  };
  FP_ASSIGN_OR_RETURN(auto at, sized(factor));
  PerturbationOutcome out;
  out.json = {{"name", "context_longer"}, {"size", fmt::format("{:g}x", factor)}, {"baseline", base.ToJson()},
              {"perturbed", at.first.ToJson()}, {"binding", at.second}, {"changes", !at.first.SameDecision(base)},
              {"change", fmt::format("prompts x{:g}: {} ({}; the benchmark rate is not re-measured)", factor,
                                     at.first.Text(), at.second)}};
  if (at.first.SameDecision(base)) return out;
  FP_ASSIGN_OR_RETURN(double threshold, FirstChange(in, base, 1, factor, scaled));
  FP_ASSIGN_OR_RETURN(auto next, sized(threshold));
  out.json["threshold"] = {{"factor", RoundForReport(threshold, 4)}};
  out.trigger = Json{{"perturbation", "context_longer"},
                     {"threshold", RoundForReport(threshold, 4)},
                     {"unit", "x the workload's prompt tokens"},
                     {"trigger", fmt::format("prompts x{:.3f} longer change the fleet to {} ({})", threshold,
                                             next.first.Text(), next.second)},
                     {"evidence", "workload: a trace whose prompts are longer; benchmark: a re-measured replica rate"}};
  return out;
}

// A burst shorter than the workers' start-up: autoscaling cannot add replicas in time, so
// the fleet that exists must carry it (no loss assumed during it). The replicas that
// carry the burst's peak on the decision's layout, less the fleet's: the warm pool needed.
Expected<PerturbationOutcome> Burst(const PerturbationInput& in, double factor) {
  const Sizing base = SizingOf(*in.capacity);
  const CapacitySpec& chosen = (*in.specs)[*in.capacity->chosen];
  std::optional<Duration> startup;
  if (in.ask->where && in.ask->where->IsMap()) {
    FP_ASSIGN_OR_RETURN(Duration d, (*in.ask->where)["startup"].AsDuration());
    startup = d;
  }
  // Replicas that carry `f` times the peak with nothing lost.
  auto needed = [&](double f) -> Expected<int64_t> {
    CapacitySpec s = chosen;
    s.survive = SurviveRule::kNone;
    for (RegionDemand& r : s.demand) r.peak.per_second *= f;
    FP_ASSIGN_OR_RETURN(CapacityResult r, SizeCapacity(s, CapacityOptions{1, false, {}}));
    return r.layouts.front().ok ? r.layouts.front().replicas : std::numeric_limits<int64_t>::max();
  };
  FP_ASSIGN_OR_RETURN(int64_t at, needed(factor));
  const int64_t warm = std::max<int64_t>(0, at - base.replicas);
  PerturbationOutcome out;
  const std::string within = startup ? fmt::format("shorter than the workers' start-up ({:g} min)", startup->seconds() / 60)
                                     : std::string("shorter than the workers' start-up");
  out.json = {{"name", "burst"}, {"size", fmt::format("{:g}x", factor)}, {"baseline", base.ToJson()},
              {"replicas_needed", at}, {"warm_pool", warm}, {"changes", warm > 0},
              {"change", fmt::format("a x{:g} burst {} needs {} {} replicas at once: {}", factor, within, at, base.layout,
                                     warm > 0 ? fmt::format("a warm pool of {}", warm)
                                              : std::string("the fleet's own headroom carries it"))}};
  if (startup) out.json["startup_s"] = startup->seconds();
  if (warm == 0) return out;
  // The largest burst the fleet carries as it stands: bisection on the factor.
  double lo = 1, hi = factor;
  for (int i = 0; i < kSearchSteps; ++i) {
    const double mid = (lo + hi) / 2;
    FP_ASSIGN_OR_RETURN(int64_t n, needed(mid));
    (n <= base.replicas ? lo : hi) = mid;
  }
  out.json["threshold"] = {{"factor", RoundForReport(lo, 4)}};
  out.trigger = Json{{"perturbation", "burst"},
                     {"threshold", RoundForReport(lo, 4)},
                     {"unit", "x the declared peak, for less than the workers' start-up"},
                     {"trigger", fmt::format("a burst above x{:.3f} the peak {} outruns the fleet; x{:g} needs a warm pool of "
                                             "{} {} replicas",
                                             lo, within, factor, warm, base.layout)},
                     {"evidence", "workload: a trace with bursts; the autoscaler's measured start-up time"}};
  return out;
}

// Prefix reuse divided: every shared prefix shared by 1/(1 - share) times fewer requests —
// that many times the tenants (tenant prefixes) and the documents in every pool — with
// prompts as long as before; the chosen fleet simulated at peak again.
Expected<PerturbationOutcome> PrefixReuse(const PerturbationInput& in, double share) {
  const YamlNode workload = in.bundle->EvidenceOf("workload")->Data()["workload"];
  std::vector<std::shared_ptr<YamlDocument>> keep;
  auto scaled_int = [&](const YamlNode& node, double k, std::vector<YamlOverride>& o) -> Status {
    if (!node.present()) return Status::Ok();
    FP_ASSIGN_OR_RETURN(int64_t v, node.AsInt());
    keep.push_back(std::make_shared<YamlDocument>(
        YamlDocument::Scalar(std::to_string(std::max<int64_t>(1, std::llround(static_cast<double>(v) * k))), node)));
    // The node is the evidence's data.workload...; the scenario's key is workload...
    o.push_back(YamlOverride{node.path().substr(std::string_view("data.").size()), keep.back()->root()});
    return Status::Ok();
  };
  auto overrides = [&](double k) -> Expected<std::vector<YamlOverride>> {
    std::vector<YamlOverride> o;
    FP_RETURN_IF_ERROR(scaled_int(workload["tenants"]["count"], k, o));
    if (workload["classes"].IsMap()) {
      FP_ASSIGN_OR_RETURN(auto classes, workload["classes"].Entries());
      for (const auto& [name, c] : classes) {
        if (!c["prompt"].IsSequence()) continue;
        FP_ASSIGN_OR_RETURN(auto segments, c["prompt"].Items());
        for (const YamlNode& seg : segments) FP_RETURN_IF_ERROR(scaled_int(seg["pool"], k, o));
      }
    }
    return o;
  };
  // The decision's simulated gates (admission, slo) at a sharing divisor k.
  const Duration run_for = std::min(in.bundle->policy.simulation_duration, Sec(120));
  auto fails = [&](double k) -> Expected<std::pair<bool, std::string>> {
    FP_ASSIGN_OR_RETURN(std::vector<YamlOverride> o, overrides(k));
    FP_ASSIGN_OR_RETURN(SimulationOutcome sim,
                        SimulateFleet(*in.bundle, *in.deployment, *in.capacity->Chosen(), o, run_for));
    for (const GateCheck& c : sim.checks) {
      if (c.decision != GateDecision::kPass) return std::make_pair(true, c.name + ": " + c.reason);
    }
    return std::make_pair(false, sim.checks.back().reason);
  };
  const double divisor = 1 / (1 - share);
  FP_ASSIGN_OR_RETURN(auto at, fails(divisor));
  PerturbationOutcome out;
  out.json = {{"name", "prefix_reuse"}, {"size", fmt::format("{:g}%", share * 100)},
              {"divisor", RoundForReport(divisor, 4)}, {"simulated_s", run_for.seconds()}, {"changes", at.first},
              {"change", fmt::format("each shared prefix shared by {:g}x fewer requests ({:g}x the tenants and the "
                                     "documents in every pool): {}",
                                     divisor, divisor, at.second)}};
  if (!at.first) return out;
  // The sharing the fleet still meets its objectives at: a short bisection (each step
  // simulates the fleet at peak).
  double lo = 1, hi = divisor;
  for (int i = 0; i < kSimulatedSearchSteps; ++i) {
    const double mid = (lo + hi) / 2;
    FP_ASSIGN_OR_RETURN(auto f, fails(mid));
    (f.first ? hi : lo) = mid;
  }
  out.json["threshold"] = {{"divisor", RoundForReport(hi, 4)}};
  out.trigger = Json{{"perturbation", "prefix_reuse"},
                     {"threshold", RoundForReport(1 - 1 / hi, 4)},
                     {"unit", "share of prefix reuse lost"},
                     {"trigger", fmt::format("prefix reuse {:.0f}% lower (each shared prefix shared by x{:.2f} fewer requests) "
                                             "breaks the fleet at peak: {}",
                                             (1 - 1 / hi) * 100, hi, at.second)},
                     {"evidence", "workload: a trace's prefix-sharing statistics (`fleetplan trace stats`)"}};
  return out;
}

Expected<PerturbationOutcome> GpuPrice(const PerturbationInput& in, double share) {
  const Sizing base = SizingOf(*in.capacity);
  auto priced = [](double f) -> Mutation {
    return [f](CapacitySpec& s) {
      s.price.on_demand_per_gpu_hour *= f;
      if (s.price.committed) s.price.committed->per_gpu_hour *= f;
    };
  };
  FP_ASSIGN_OR_RETURN(Sizing up, SizeWith(in, priced(1 + share)));
  FP_ASSIGN_OR_RETURN(Sizing down, SizeWith(in, priced(1 - share)));
  PerturbationOutcome out;
  const bool changes = !up.SameDecision(base) || !down.SameDecision(base);
  out.json = {{"name", "gpu_price"}, {"size", fmt::format("{:g}%", share * 100)}, {"baseline", base.ToJson()},
              {"perturbed", {{"up", up.ToJson()}, {"down", down.ToJson()}}}, {"changes", changes},
              {"change", fmt::format("price +{0:g}%: {1}; -{0:g}%: {2}", share * 100, up.Text(), down.Text())}};
  const std::optional<double> budget = in.specs->front().budget_per_month;
  if (!budget || !base.ok || base.per_month <= 0) return out;
  // Every price scales the fleet's cost by the same factor, so the budget breaks exactly at
  // budget / cost.
  const double factor = *budget / base.per_month;
  out.json["threshold"] = {{"price_factor", RoundForReport(factor, 4)}};
  out.trigger = Json{{"perturbation", "gpu_price"},
                     {"threshold", RoundForReport(factor, 4)},
                     {"unit", "x the declared GPU price"},
                     {"trigger", factor >= 1 ? fmt::format("GPU prices {:+.1f}% or more put the fleet ({}) over the "
                                                           "${:.0f}/month budget",
                                                           (factor - 1) * 100, base.Text(), *budget)
                                             : fmt::format("GPU prices {:.1f}% lower or more bring the fleet ({}) within "
                                                           "the ${:.0f}/month budget",
                                                           (1 - factor) * 100, base.Text(), *budget)},
                     {"evidence", "price: a new price sheet or committed-use quote"}};
  return out;
}

Expected<PerturbationOutcome> DomainSmaller(const PerturbationInput& in, double share) {
  const Sizing base = SizingOf(*in.capacity);
  const std::vector<FailureDomain>& domains = in.specs->front().domains;
  size_t largest = 0;
  for (size_t i = 1; i < domains.size(); ++i) {
    if (domains[i].gpus > domains[largest].gpus) largest = i;
  }
  const FailureDomain& d = domains[largest];
  auto shrunk = [largest, full = d.gpus](double keep) -> Mutation {
    return [=](CapacitySpec& s) {
      s.domains[largest].gpus = static_cast<int64_t>(std::floor(static_cast<double>(full) * keep));
    };
  };
  FP_ASSIGN_OR_RETURN(Sizing at, SizeWith(in, shrunk(1 - share)));
  PerturbationOutcome out;
  const auto left = static_cast<int64_t>(std::floor(static_cast<double>(d.gpus) * (1 - share)));
  out.json = {{"name", "domain_smaller"}, {"size", fmt::format("{:g}%", share * 100)}, {"domain", d.name},
              {"baseline", base.ToJson()}, {"perturbed", at.ToJson()}, {"changes", !at.SameDecision(base)},
              {"change", fmt::format("{} with {} of its {} GPUs: {}", d.name, left, d.gpus, at.Text())}};
  if (at.SameDecision(base)) return out;
  // Search the kept share from 1 down: FirstChange searches upward, so search the lost share.
  auto lost = [&](double x) { return shrunk(1 - x); };
  FP_ASSIGN_OR_RETURN(double threshold, FirstChange(in, base, 0, share, lost));
  const auto gpus = static_cast<int64_t>(std::floor(static_cast<double>(d.gpus) * (1 - threshold)));
  FP_ASSIGN_OR_RETURN(Sizing next, SizeWith(in, shrunk(1 - threshold)));
  out.json["threshold"] = {{"gpus", gpus}};
  out.trigger = Json{{"perturbation", "domain_smaller"},
                     {"threshold", gpus},
                     {"unit", fmt::format("GPUs in {}", d.name)},
                     {"trigger", fmt::format("{} offering {} GPUs or fewer (of {}) changes the fleet to {}", d.name, gpus, d.gpus,
                                             next.Text())},
                     {"evidence", "inventory: a new export of the domain's GPUs"}};
  return out;
}

// The tightest objective a class still meets at its target, from the simulated requests:
// the k-th smallest TTFT of the requests that meet every other objective, k = ceil(target n).
std::optional<double> TightestTtft(const ClassTtft& c) {
  std::vector<double> eligible;
  for (const TtftSample& s : c.samples) {
    if (s.others_met) eligible.push_back(s.ttft_ms);
  }
  const auto n = static_cast<double>(c.samples.size());
  const auto k = static_cast<size_t>(std::ceil(c.target * n - 1e-9));
  if (c.samples.empty() || k == 0 || k > eligible.size()) return std::nullopt;
  std::nth_element(eligible.begin(), eligible.begin() + static_cast<std::ptrdiff_t>(k - 1), eligible.end());
  return eligible[k - 1];
}

Expected<PerturbationOutcome> TtftTightened(const PerturbationInput& in, double share) {
  PerturbationOutcome out;
  Json classes = Json::array();
  bool changes = false;
  Json tightest_class;
  double nearest = -1;  // the largest tightest/objective: the class closest to missing
  for (const ClassTtft& c : in.simulation->ttft) {
    const std::optional<double> tightest = TightestTtft(c);
    const double tightened = c.objective_ms * (1 - share);
    const bool holds = tightest && *tightest <= tightened;
    changes = changes || !holds;
    classes.push_back({{"class", c.name}, {"objective_ms", c.objective_ms}, {"tightened_ms", RoundForReport(tightened, 6)},
                       {"tightest_met_ms", tightest ? Json(RoundForReport(*tightest, 6)) : Json()}, {"still_met", holds}});
    if (tightest && *tightest / c.objective_ms > nearest) {
      nearest = *tightest / c.objective_ms;
      tightest_class = {{"class", c.name}, {"ms", RoundForReport(*tightest, 6)}, {"target", c.target},
                        {"objective_ms", c.objective_ms}};
    }
  }
  out.json = {{"name", "ttft_tightened"}, {"size", fmt::format("{:g}%", share * 100)}, {"classes", classes},
              {"changes", changes},
              {"change", changes ? fmt::format("a TTFT objective {:g}% tighter is missed at peak on this fleet", share * 100)
                                 : fmt::format("every TTFT objective {:g}% tighter is still met at peak", share * 100)}};
  if (tightest_class.is_null()) return out;
  const double ms = tightest_class["ms"].get<double>();
  out.trigger = Json{{"perturbation", "ttft_tightened"},
                     {"threshold", ms},
                     {"unit", fmt::format("ms TTFT ({})", tightest_class["class"].get<std::string>())},
                     {"trigger", fmt::format("the {} TTFT objective tightened below {:.1f} ms (now {:g} ms) is missed at {:g} "
                                             "attainment on this fleet at peak",
                                             tightest_class["class"].get<std::string>(), ms,
                                             tightest_class["objective_ms"].get<double>(), tightest_class["target"].get<double>())},
                     {"evidence", "policy: a tighter objective; benchmark: a slower measured prefill"}};
  return out;
}

}  // namespace

const std::vector<PerturbationRow>& PerturbationRows() {
  static const std::vector<PerturbationRow> rows = {
      {"peak_traffic", "every region's peak demand times the factor (e.g. 2x), sustained", ReadFactor, PeakTraffic},
      {"burst", "a burst of the factor (e.g. 2x, or {factor: 2x, startup: 6m}) shorter than the workers' start-up: "
                "the warm pool it needs", ReadBurst, Burst},
      {"context_longer", "every prompt's tokens times the factor (e.g. 2x) in the capacity arithmetic", ReadFactor,
       LongerContext},
      {"prefix_reuse", "prefix reuse lower by the share (e.g. 50%: every shared prefix shared by half as many requests), "
                       "simulated at peak", ReadShare, PrefixReuse},
      {"gpu_price", "the GPU's on-demand and committed prices up and down by the share (e.g. 30%)", ReadShare, GpuPrice},
      {"domain_smaller", "the largest failure domain offers the share fewer GPUs (e.g. 25%)", ReadShare, DomainSmaller},
      {"ttft_tightened", "every TTFT objective tighter by the share (e.g. 25%), judged on the simulated requests", ReadShare,
       TtftTightened},
  };
  return rows;
}

const PerturbationRow* FindPerturbation(std::string_view name) {
  for (const PerturbationRow& r : PerturbationRows()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

}  // namespace fleetplan::decision
