// The model-error step: the plan's fleet at both edges of the step model's stated error,
// whether the layout choice holds across the band, and why the layouts differ (the
// collective share of a decode step at batch 1 and at the operating point).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "decision/steps.h"
#include "fleetplan/core/error.h"
#include "fleetplan/fleet/step_model_of.h"
#include "fleetplan/perf/stated_error.h"

namespace fleetplan::decision {
namespace {

constexpr int kOperatingPointIterations = 64;

struct StepSplit {
  double step_ms = 0;         // GPU + host
  double collectives_ms = 0;  // part of the GPU time
  double share() const { return step_ms > 0 ? collectives_ms / step_ms : 0; }
};

Json SplitJson(const StepSplit& s) {
  return {{"step_ms", RoundForReport(s.step_ms, 4)}, {"collectives_ms", RoundForReport(s.collectives_ms, 4)},
          {"collective_share", RoundForReport(s.share(), 4)}};
}

Json BatchOne(const StepSplit& s) {
  Json j = SplitJson(s);
  j["decodes"] = 1;
  j["prefill_tokens"] = 0;
  return j;
}

// One step of `decodes` decoding sequences at `decode_context` tokens each and one prefill
// chunk of `prefill_tokens` new tokens (none when 0).
StepSplit PriceStep(const StepCostModel& model, const HostOverhead& host, int64_t decodes, int64_t decode_context,
                    int64_t prefill_tokens) {
  std::vector<StepChunk> chunks(static_cast<size_t>(decodes), StepChunk{decode_context, 1, true});
  if (prefill_tokens > 0) chunks.push_back(StepChunk{0, prefill_tokens, false});
  const StepCost cost = model.Cost(chunks);
  const Duration total = cost.gpu + host.Of(Summarize(chunks));
  return StepSplit{total.millis(), cost.collectives.millis()};
}

struct LayoutModel {
  Scenario scenario;
  std::shared_ptr<const StepCostModel> model;
};

// The deployment composed for `c` (tp, pp): its step model and host overhead as the
// simulation would bind them.
Expected<LayoutModel> ModelOfLayout(const PlanBundle& b, const ComposedDeployment& d, const LayoutChoice& c) {
  const YamlNode at = b.document->root()["deployment"];
  std::vector<std::shared_ptr<YamlDocument>> keep;
  std::vector<YamlOverride> overrides = d.base.overrides;
  const int64_t nodes = (c.tp * c.pp + d.gpus_per_node - 1) / d.gpus_per_node;
  for (const auto& [path, value] : {std::pair<const char*, int64_t>{"deployment.tp", c.tp}, {"deployment.pp", c.pp},
                                    {"deployment.replicas", 1}, {"hardware.nodes", nodes}}) {
    keep.push_back(std::make_shared<YamlDocument>(YamlDocument::Scalar(std::to_string(value), at)));
    overrides.push_back(YamlOverride{path, keep.back()->root()});
  }
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::WithOverrides(*d.base.base, overrides));
  LayoutModel out;
  FP_ASSIGN_OR_RETURN(out.scenario, LoadScenarioDocument(std::make_shared<const YamlDocument>(std::move(doc)),
                                                         d.base.base_dir, b.deployment.digest));
  FP_ASSIGN_OR_RETURN(out.model, StepModelOf(out.scenario, out.scenario.fit));
  return out;
}

// The replica at `rate` requests/s: by Little's law its decoding sequences are
// rate x output tokens x step time, and each step also computes the prompt tokens that
// arrive during it (no prefix-cache hits assumed). Iterated from batch 1 to the fixed point.
Json OperatingPoint(const LayoutModel& m, double rate, const WorkloadShape& shape, int64_t decode_context) {
  const HostOverhead host = m.scenario.engine.host();
  const int64_t cap = std::max<int64_t>(1, m.scenario.engine.scheduler.max_running);
  int64_t decodes = 1;
  int64_t prefill = 0;
  StepSplit split;
  bool saturated = false;
  for (int i = 0; i < kOperatingPointIterations; ++i) {
    split = PriceStep(*m.model, host, decodes, decode_context, prefill);
    const double seconds = split.step_ms / 1e3;
    const auto next_decodes = static_cast<int64_t>(std::llround(rate * shape.output_tokens * seconds));
    const auto next_prefill = static_cast<int64_t>(std::llround(rate * shape.prompt_tokens * seconds));
    saturated = next_decodes > cap;
    const int64_t clamped = std::clamp<int64_t>(next_decodes, 1, cap);
    if (clamped == decodes && next_prefill == prefill) break;
    decodes = clamped;
    prefill = next_prefill;
  }
  Json j = SplitJson(split);
  j["rate_per_s"] = RoundForReport(rate);
  j["decodes"] = decodes;
  j["prefill_tokens"] = prefill;
  j["saturated"] = saturated;
  return j;
}

struct Edge {
  std::string name;
  double scale = 1;  // step time x scale
  std::vector<LayoutCapacity> fleets;
  std::optional<size_t> cheapest;
};

// Every candidate sized at its spec's rate (the plan's verified rate) divided by `scale`.
Expected<Edge> SizeAtEdge(std::string name, double scale, const std::vector<CapacitySpec>& specs) {
  Edge e{std::move(name), scale, {}, std::nullopt};
  for (const CapacitySpec& original : specs) {
    CapacitySpec spec = original;
    spec.replica_capacity.rate = Rate{spec.replica_capacity.rate.per_second / scale};
    CapacityOptions options;
    options.verify = false;
    FP_ASSIGN_OR_RETURN(CapacityResult r, SizeCapacity(spec, options));
    e.fleets.push_back(r.layouts.front());
    const LayoutCapacity& lc = e.fleets.back();
    if (lc.ok && (!e.cheapest || CheaperFleet(lc, e.fleets[*e.cheapest]))) e.cheapest = e.fleets.size() - 1;
  }
  return e;
}

std::string FleetWords(const LayoutCapacity& lc) {
  if (!lc.ok) return fmt::format("{}: no fleet ({})", lc.layout.Name(), lc.reason);
  return fmt::format("{} x {} ({} GPUs, ${:.0f}/month{})", lc.replicas, lc.layout.Name(), lc.gpus, lc.cost.per_month,
                     lc.within_budget ? "" : ", over budget");
}

Json EdgeJson(const Edge& e) {
  Json fleets = Json::array();
  for (const LayoutCapacity& lc : e.fleets) {
    fleets.push_back({{"layout", lc.layout.Name()}, {"sized", lc.ok}, {"replica_rate_per_s", RoundForReport(lc.per_replica_rps)},
                      {"replicas", lc.replicas}, {"gpus", lc.gpus}, {"per_month", RoundForReport(lc.cost.per_month, 6)},
                      {"within_budget", lc.within_budget}});
  }
  return {{"edge", e.name},
          {"step_time_scale", RoundForReport(e.scale, 6)},
          {"fleets", fleets},
          {"cheapest", e.cheapest ? Json(e.fleets[*e.cheapest].layout.Name()) : Json(nullptr)}};
}

// The layouts the band cannot separate from the pick: each one whose nominal fleet is no
// dearer than the pick's at the pessimistic edge (the band taken on the pick alone).
std::vector<size_t> InsideBand(const Edge& nominal, const Edge& pessimistic, size_t pick) {
  std::vector<size_t> close;
  for (size_t i = 0; i < nominal.fleets.size(); ++i) {
    if (i == pick || !nominal.fleets[i].ok) continue;
    if (!CheaperFleet(pessimistic.fleets[pick], nominal.fleets[i])) close.push_back(i);
  }
  return close;
}

// One line: the pick's rate per GPU against each other candidate's, and where the
// collectives stand in a decode step of each (batch 1, operating point).
std::string WhyTheLayout(const LayoutOutcome& l, const Json& layouts, size_t pick) {
  auto per_gpu = [&](size_t i) { return l.rates[i] / static_cast<double>(l.candidates[i].tp * l.candidates[i].pp); };
  auto collectives = [&](size_t i) {
    const Json& x = layouts[i];
    return fmt::format("{:.2f} ms ({:.0f} %) of a batch-1 decode step and {:.2f} ms ({:.0f} %) at its operating point",
                       x["batch_1"]["collectives_ms"].get<double>(), 100 * x["batch_1"]["collective_share"].get<double>(),
                       x["operating_point"]["collectives_ms"].get<double>(),
                       100 * x["operating_point"]["collective_share"].get<double>());
  };
  std::vector<std::string> others;
  for (size_t i = 0; i < l.candidates.size(); ++i) {
    if (i != pick) others.push_back(fmt::format("{}'s {:.3f}/s (collectives {})", l.candidates[i].Name(), per_gpu(i), collectives(i)));
  }
  return fmt::format("{} serves {:.3f}/s per GPU at the SLO against {}; its collectives are {}", l.candidates[pick].Name(),
                     per_gpu(pick), fmt::join(others, ", "), collectives(pick));
}

}  // namespace

Expected<ModelErrorOutcome> JudgeModelError(const PlanBundle& b, const ComposedDeployment& d, const LayoutOutcome& l,
                                            const std::vector<CapacitySpec>& specs, const CapacityOutcome& c) {
  FP_ASSERT(c.chosen.has_value());
  ModelErrorOutcome out;
  const std::string& method = l.benchmark_method;
  const int64_t decode_context = std::llround(l.shape.prompt_tokens + l.shape.output_tokens / 2);
  Json layouts = Json::array();
  std::string kind;
  std::vector<std::string> why;
  for (size_t i = 0; i < l.candidates.size(); ++i) {
    FP_ASSIGN_OR_RETURN(const LayoutModel m, ModelOfLayout(b, d, l.candidates[i]));
    if (kind.empty()) kind = m.model->kind();
    const StepSplit one = PriceStep(*m.model, m.scenario.engine.host(), 1, decode_context, 0);
    const Json at_rate = OperatingPoint(m, l.rates[i], l.shape, decode_context);
    layouts.push_back({{"layout", l.candidates[i].Name()}, {"step_model", m.model->kind()},
                       {"decode_context_tokens", decode_context}, {"batch_1", BatchOne(one)},
                       {"operating_point", at_rate}});
    why.push_back(fmt::format("{}: batch 1 {:.2f} ms a step, {:.2f} ms collectives ({:.0f} %); at {:.2f}/s ({} decodes + "
                              "{} prompt tokens a step) {:.2f} ms, {:.2f} ms collectives ({:.0f} %)",
                              l.candidates[i].Name(), one.step_ms, one.collectives_ms, 100 * one.share(),
                              l.rates[i], at_rate["decodes"].get<int64_t>(), at_rate["prefill_tokens"].get<int64_t>(),
                              at_rate["step_ms"].get<double>(), at_rate["collectives_ms"].get<double>(),
                              100 * at_rate["collective_share"].get<double>()));
  }
  why.insert(why.begin(), WhyTheLayout(l, layouts, *c.chosen));
  const StatedError band = StatedErrorOf(kind, d.gpu);
  const bool simulated = method == "simulated";
  FP_ASSIGN_OR_RETURN(const Edge nominal, SizeAtEdge("nominal", 1, specs));
  FP_ASSIGN_OR_RETURN(const Edge pessimistic, SizeAtEdge("pessimistic", simulated ? 1 + band.step_time : 1, specs));
  const size_t pick = *c.chosen;
  const std::vector<size_t> close = simulated ? InsideBand(nominal, pessimistic, pick) : std::vector<size_t>{};
  std::vector<std::string> close_names;
  for (size_t i : close) close_names.push_back(l.candidates[i].Name());
  out.json = {{"step_model", kind},
              {"gpu", d.gpu},
              {"band", RoundForReport(band.step_time, 6)},
              {"basis", band.basis},
              {"benchmark_method", method},
              {"edges", Json::array({EdgeJson(nominal), EdgeJson(pessimistic)})},
              {"inside_band", close_names},
              {"layouts", layouts},
              {"reasoning", why}};
  const LayoutCapacity& chosen = nominal.fleets[pick];
  const LayoutCapacity& worst = pessimistic.fleets[pick];
  const std::string band_words = fmt::format("{} on {}, +{:.1f} % step time", kind, d.gpu, 100 * band.step_time);
  const Json numbers = {{"band", RoundForReport(band.step_time, 6)}, {"pessimistic_replicas", worst.replicas},
                        {"pessimistic_per_month", RoundForReport(worst.cost.per_month, 6)}};
  if (!simulated) {
    out.checks.push_back(PassCheck("model-error", fmt::format("the benchmark's rates are measured: the model's error ({}) "
                                                              "moves no rate, only the simulations that verify the fleet",
                                                              band_words), numbers));
  } else if (!close.empty()) {
    out.checks.push_back(HoldCheck(
        "model-error",
        fmt::format("{} is not separable from {} inside the model's error ({}): {} at the pessimistic edge against {}; "
                    "a measured benchmark of both (method: measured) decides",
                    chosen.layout.Name(), fmt::join(close_names, ", "), band_words, FleetWords(worst),
                    FleetWords(nominal.fleets[close.front()])),
        numbers));
  } else {
    out.checks.push_back(PassCheck(
        "model-error",
        fmt::format("{} is the cheapest at both edges of the model's error ({}): {} nominal, {} at the pessimistic edge",
                    chosen.layout.Name(), band_words, FleetWords(chosen), FleetWords(worst)),
        numbers));
  }
  return out;
}

}  // namespace fleetplan::decision
