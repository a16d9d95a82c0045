// SizeCapacity: per layout, one replica's capacity and limits → requirements → placement
// across failure domains → price; then the cheapest layout, verified by simulation.
#include "fleetplan/capacity/capacity.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "fleetplan/capacity/verify.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/read_log.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/perf/stated_error.h"
#include "fleetplan/sweep/point.h"
#include "fleetplan/sweep/search.h"
#include "fleetplan/workload/source.h"
#include "fleetplan/workload/workload_spec.h"

namespace fleetplan {
namespace {

// Most replicas a fleet may need: a demand beyond it is a typo (a rate in the wrong unit),
// and it keeps every replica count well inside int64.
constexpr double kMaxFleetReplicas = 1e7;
// When the chosen fleet misses its targets through the loss, it is sized again at this much
// less of its rate per replica each time, down to kLeastShare (docs/capacity.md "Verified
// by simulation"): six more simulations at most.
constexpr double kGrowStep = 0.05;
constexpr double kLeastShare = 0.70;

// Requests sampled from the workload to measure its mean prompt and output lengths.
constexpr int64_t kShapeSample = 4000;

}  // namespace

Expected<WorkloadShape> MeasureShape(const WorkloadSpec& workload, uint64_t seed, const YamlNode& where) {
  if (workload.mode == ArrivalMode::kClosedLoop) {
    return where.Error("capacity sizes for a demand rate; the scenario's workload is closed-loop (give it "
                       "workload.arrival)");
  }
  SourceLimits limits;
  limits.requests = kShapeSample;
  FP_ASSIGN_OR_RETURN(auto source, MakeRequestSource(workload, seed, limits));
  WorkloadShape s;
  for (;;) {
    FP_ASSIGN_OR_RETURN(std::optional<Request> r, source->Next());
    if (!r) break;
    s.prompt_tokens += static_cast<double>(r->prompt_tokens());
    s.output_tokens += static_cast<double>(r->output_tokens);
    ++s.sampled;
  }
  if (s.sampled == 0) return where.Error("the scenario's workload produces no request");
  s.prompt_tokens /= static_cast<double>(s.sampled);
  s.output_tokens /= static_cast<double>(s.sampled);
  return s;
}

Expected<WorkloadShape> MeasureShape(const FleetPlan& plan, const YamlNode& where) {
  return MeasureShape(plan.workload, plan.seed, where);
}

namespace {

// The tightest per-token latency objective of any class (tpot or itl_max), if any.
std::optional<Duration> TightestTokenObjective(const SloSpec& slo) {
  std::optional<Duration> best;
  for (const ClassSlo& c : slo.classes()) {
    for (const auto& d : {c.objectives.tpot, c.objectives.itl_max}) {
      if (d && (!best || *d < *best)) best = d;
    }
  }
  return best;
}

Duration StepTime(const FleetPlan& plan, const std::vector<StepChunk>& chunks) {
  return plan.primary_pool().cost->Cost(chunks).gpu + plan.engine.host().Of(Summarize(chunks));
}

std::vector<DimensionRequirement> Requirements(const FleetPlan& plan, const WorkloadShape& shape, double demand_rps,
                                               double measured_rps, const std::string& measured_basis,
                                               double headroom) {
  const BoundPool& pool = plan.primary_pool();
  const SchedulerConfig& sched = plan.engine.scheduler;
  const auto kv_tokens = static_cast<double>(pool.kv.kv_blocks_per_replica * pool.kv.block_tokens);
  const double seq_tokens = shape.prompt_tokens + shape.output_tokens;

  // Prefill: a full step budget of prompt chunks.
  std::vector<StepChunk> prefill;
  const int64_t chunk = std::max<int64_t>(1, std::min(sched.chunk_tokens, sched.max_batched_tokens));
  for (int64_t left = sched.max_batched_tokens; left > 0; left -= chunk) {
    prefill.push_back(StepChunk{0, std::min(chunk, left), false});
  }
  const Duration prefill_step = StepTime(plan, prefill);
  const double prompt_tps = static_cast<double>(sched.max_batched_tokens) / prefill_step.seconds();

  // Decode: the largest batch that keeps each token inside the tightest objective and
  // fits KV at the mean sequence length.
  const std::optional<Duration> token_objective = TightestTokenObjective(plan.slo);
  const auto decode_context = static_cast<int64_t>(std::llround(shape.prompt_tokens + shape.output_tokens / 2));
  const int64_t kv_batch = std::max<int64_t>(1, static_cast<int64_t>(kv_tokens / seq_tokens));
  std::vector<StepChunk> decodes;
  int64_t batch = 1;
  Duration decode_step;
  for (int64_t b = 1; b <= std::min(sched.max_running, kv_batch); ++b) {
    decodes.push_back(StepChunk{decode_context, 1, true});
    const Duration t = StepTime(plan, decodes);
    if (b > 1 && token_objective && t > *token_objective) break;
    batch = b;
    decode_step = t;
  }
  const double decode_tps = static_cast<double>(batch) / decode_step.seconds();

  // Concurrency: sequences resident at once (KV at full length, max_running), against
  // Little's law: arrivals x time resident (prefill, then every token at the batch above).
  const double seqs = std::floor(std::min(static_cast<double>(sched.max_running), kv_tokens / seq_tokens));
  const double resident_s = shape.prompt_tokens / prompt_tps + shape.output_tokens * decode_step.seconds();

  const double keep = 1 - headroom;
  auto dim = [&](std::string name, std::string unit, double demand, double per_replica, double per_request,
                 std::string basis) {
    DimensionRequirement d;
    d.name = std::move(name);
    d.unit = std::move(unit);
    d.demand = demand;
    d.per_replica = per_replica;
    d.per_replica_rps = per_replica / per_request;
    d.exact_replicas = per_replica > 0 ? demand / (per_replica * keep) : std::numeric_limits<double>::infinity();
    d.replicas = std::isfinite(d.exact_replicas) ? static_cast<int64_t>(std::ceil(d.exact_replicas - 1e-9)) : 0;
    d.basis = std::move(basis);
    return d;
  };
  std::vector<DimensionRequirement> out;
  out.push_back(dim("prompt", "tokens/s", demand_rps * shape.prompt_tokens, prompt_tps, shape.prompt_tokens,
                    fmt::format("{} prompt tokens per {:.2f} ms step (max_batched_tokens in {}-token chunks); "
                                "prefix-cache hits not credited",
                                sched.max_batched_tokens, prefill_step.millis(), chunk)));
  out.push_back(dim("decode", "tokens/s", demand_rps * shape.output_tokens, decode_tps, shape.output_tokens,
                    fmt::format("batch {} at {} context tokens: {:.2f} ms per step{}", batch, decode_context,
                                decode_step.millis(),
                                token_objective ? fmt::format(" (tightest token objective {:g} ms)", token_objective->millis())
                                                : std::string(" (no token objective: max_running or KV bounds it)"))));
  out.push_back(dim("concurrency", "sequences", demand_rps * resident_s, seqs, resident_s,
                    fmt::format("{:.0f} sequences of {:.0f} tokens in {:.0f} KV tokens (max_running {}); each resident "
                                "{:.2f} s",
                                seqs, seq_tokens, kv_tokens, sched.max_running, resident_s)));
  out.push_back(dim("slo", "requests/s", demand_rps, measured_rps, 1.0, measured_basis));
  return out;
}

// One replica's request rate at the SLO, and the evidence for it.
struct MeasuredCapacity {
  double rps = 0;
  std::string basis;
  Json evidence;
};

Expected<MeasuredCapacity> SearchCapacity(const CapacitySpec& cs, const SweepSpec& one_replica) {
  const ReplicaCapacitySource& src = cs.replica_capacity;
  const YamlNode where = *src.where;
  if (!one_replica.base->root()["workload"]["arrival"]["rate"].present()) {
    return where.Error("a capacity search varies workload.arrival.rate, which the scenario lacks; give "
                       "replica_capacity {rate: ...} or {file: sweep.json}");
  }
  SweepSpec s = one_replica;
  MaxRateSearch search;
  search.axis = "workload.arrival.rate";
  search.low = src.low;
  search.high = src.high;
  search.attainment = src.attainment;
  search.resolution = src.resolution;
  search.where = where;
  s.search = search;
  s.targets = src.attainment;
  s.targets_source = "replica_capacity.search.attainment";
  // The point's own run is at `low`: it is the search's first probe.
  auto low = std::make_shared<YamlDocument>(YamlDocument::Scalar(RateText(src.low), where));
  s.overrides.push_back(YamlOverride{"workload.arrival.rate", low->root()});
  if (src.duration) {
    auto d = std::make_shared<YamlDocument>(YamlDocument::Scalar(fmt::format("{}ns", src.duration->ns()), where));
    s.overrides.push_back(YamlOverride{"workload.duration", d->root()});
  }
  const Json row = RunPoint(s, PointAt(s, 0));
  if (row["status"] != "ok") return where.Error(fmt::format("the capacity search failed: {}", row["reason"].get<std::string>()));
  const Json& found = row["max_rate"];
  const std::string status = found["status"].get<std::string>();
  if (status == "below-low") {
    return where.Error(fmt::format("one replica misses the attainment even at {}/s (the search's low end): the "
                                   "layout cannot serve this workload inside its SLO",
                                   RoundForReport(src.low.per_second)));
  }
  MeasuredCapacity m;
  m.rps = found["rate_per_s"].get<double>();
  m.basis = status == "above-high"
                ? fmt::format("max-rate search: one replica passes even at the search's high end {}/s (a lower bound)",
                              RoundForReport(m.rps))
                : fmt::format("max-rate search on one replica: {}/s passes, {}/s fails ({} probes)", RoundForReport(m.rps),
                              found["bracket"][1].dump(), found["probes"].size());
  m.evidence = {{"source", "search"}, {"max_rate", found}};
  return m;
}

Expected<MeasuredCapacity> FileCapacity(const CapacitySpec& cs, int64_t gpus_per_replica) {
  const ReplicaCapacitySource& src = cs.replica_capacity;
  const YamlNode where = *src.where;
  auto text = ReadFile(src.file);
  if (!text.ok()) return where.Error(text.status().message());
  Json doc = Json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("kind", "") != "fleetplan-sweep") {
    return where.Error(fmt::format("{} is not a sweep result (sweep.json from `fleetplan sweep`)", src.file));
  }
  std::vector<int64_t> configurations;
  double rate = std::numeric_limits<double>::infinity();
  int64_t point_gpus = 0;
  for (const Json& row : doc["points"]) {
    if (row.value("status", "") != "ok" || !row.contains("max_rate") || !row["max_rate"]["rate_per_s"].is_number()) continue;
    const int64_t c = row["configuration"].get<int64_t>();
    if (src.configuration && c != *src.configuration) continue;
    if (std::find(configurations.begin(), configurations.end(), c) == configurations.end()) configurations.push_back(c);
    // Over seeds, the lowest: capacity is what every replication sustained.
    rate = std::min(rate, row["max_rate"]["rate_per_s"].get<double>());
    point_gpus = row["gpus"].get<int64_t>();
  }
  if (configurations.empty()) {
    return where.Error(fmt::format("{} has no point with a found max rate{}", src.file,
                                   src.configuration ? fmt::format(" in configuration {}", *src.configuration) : ""));
  }
  if (configurations.size() > 1) {
    std::string list;
    for (int64_t c : configurations) list += (list.empty() ? "" : ", ") + std::to_string(c);
    return where.Error(fmt::format("{} has max rates for configurations {}: pick one with {{file: {{path: ..., "
                                   "configuration: N}}}}",
                                   src.file, list));
  }
  const double replicas = static_cast<double>(point_gpus) / static_cast<double>(gpus_per_replica);
  MeasuredCapacity m;
  m.rps = rate / std::max(1.0, replicas);
  m.basis = fmt::format("sweep file {}: configuration {} sustains {}/s on {} GPUs ({:g} replicas)", src.file,
                        configurations.front(), RoundForReport(rate), point_gpus, replicas);
  m.evidence = {{"source", "file"}, {"file", src.file}, {"configuration", configurations.front()},
                {"rate_per_s", RoundForReport(rate)}, {"gpus", point_gpus}};
  return m;
}

// The scenario at one replica of `layout` (or its own layout).
Expected<std::pair<SweepSpec, FleetPlan>> OneReplica(const CapacitySpec& cs, const std::optional<LayoutChoice>& layout,
                                                     std::vector<std::shared_ptr<YamlDocument>>& keep) {
  SweepSpec s = cs.base;
  const YamlNode at = layout && layout->where ? *layout->where : cs.document->root();
  auto scalar = [&](const std::string& path, std::string value) {
    keep.push_back(std::make_shared<YamlDocument>(YamlDocument::Scalar(std::move(value), at)));
    s.overrides.push_back(YamlOverride{path, keep.back()->root()});
  };
  if (cs.base.base->root()["deployment"]["pools"].present()) {
    return at.Error("capacity sizes one pool of mixed replicas; the scenario declares deployment.pools");
  }
  scalar("deployment.replicas", "1");
  if (layout) {
    scalar("deployment.tp", std::to_string(layout->tp));
    scalar("deployment.pp", std::to_string(layout->pp));
  }
  FP_ASSIGN_OR_RETURN(FleetPlan plan, BindPoint(s, PointAt(s, 0)));
  return std::make_pair(std::move(s), std::move(plan));
}

double TotalDemand(const CapacitySpec& cs) {
  double total = 0;
  for (const RegionDemand& d : cs.demand) total += d.peak.per_second;
  return total;
}

// Places the fleet `out.per_replica_rps` gives across the domains so that every loss of
// the spec's rule is survived, and prices it. Clears what an earlier placement set.
Status PlaceFleet(const CapacitySpec& cs, LayoutCapacity& out) {
  out.losses.clear();
  out.set_by.clear();
  out.per_domain.clear();
  out.replicas = 0;
  out.gpus = 0;
  const double fleet_units = TotalDemand(cs) / (out.per_replica_rps * (1 - cs.headroom));
  if (!(out.per_replica_rps > 0) || !(fleet_units <= kMaxFleetReplicas)) {
    return cs.document->root()["demand"].Error(fmt::format(
        "a peak of {}/s at {}/s per replica needs more than {:.0f} replicas; check the demand's units", TotalDemand(cs),
        RoundForReport(out.per_replica_rps), kMaxFleetReplicas));
  }
  PlacementProblem p;
  p.domains = cs.domains;
  for (const RegionDemand& d : cs.demand) {
    p.regions.push_back(d.region);
    p.need.push_back(d.peak.per_second / (out.per_replica_rps * (1 - cs.headroom)));
  }
  for (const FailureDomain& d : cs.domains) p.max_replicas.push_back(d.gpus / out.gpus_per_replica);
  out.losses = LossScenariosOf(cs.survive, cs.domains, cs.demand);
  int64_t most = -1;
  for (LossScenario& s : out.losses) {
    s.replicas_needed = ReplicasNeeded(p, s.lost);
    s.required_after = ReplicasRequiredAfter(p, s.lost);
    most = std::max(most, s.replicas_needed);
  }
  std::string why;
  auto placed = PlaceForLosses(p, out.losses, &why);
  if (!placed) {
    out.ok = false;
    out.reason = why;
    return Status::Ok();
  }
  out.ok = true;
  out.per_domain = *placed;
  for (int64_t v : out.per_domain) out.replicas += v;
  out.gpus = out.replicas * out.gpus_per_replica;
  for (LossScenario& s : out.losses) {
    if (s.replicas_needed == most) out.set_by.push_back(s.name);
    for (size_t d = 0; d < cs.domains.size(); ++d) {
      if (std::find(s.lost.begin(), s.lost.end(), cs.domains[d].name) == s.lost.end()) s.surviving_replicas += out.per_domain[d];
    }
    s.carried = Carries(p, out.per_domain, s.lost);
  }
  out.cost = PriceFleet(out.gpus, cs.price);
  out.within_budget = !cs.budget_per_month || out.cost.per_month <= *cs.budget_per_month + 1e-9;
  return Status::Ok();
}

// A simulated rate per replica carries the step model's error (perf/stated_error.h): the
// fleet placed again with every step 1 + band as long, so its rate per replica divided by
// that.
Expected<Json> AtPessimisticEdge(const CapacitySpec& cs, const LayoutCapacity& sized, const StatedError& band) {
  LayoutCapacity edge = sized;
  edge.per_replica_rps = sized.per_replica_rps / (1 + band.step_time);
  FP_RETURN_IF_ERROR(PlaceFleet(cs, edge));
  Json pessimistic = edge.ok ? Json{{"replicas", edge.replicas}, {"gpus", edge.gpus},
                                    {"per_hour", RoundForReport(edge.cost.per_hour, 6)},
                                    {"per_month", RoundForReport(edge.cost.per_month, 6)},
                                    {"within_budget", edge.within_budget}}
                             : Json{{"reason", edge.reason}};
  return Json{{"step_model", band.kind}, {"gpu", band.gpu}, {"band", RoundForReport(band.step_time, 6)},
              {"basis", band.basis}, {"per_replica_rps", RoundForReport(edge.per_replica_rps)},
              {"pessimistic", std::move(pessimistic)}};
}

bool MeetsAfterLoss(const Json& verified) {
  return !verified.is_object() || verified.value("meets_targets", false);
}

// Simulates `chosen` through its deciding loss; while the surviving fleet misses its
// targets, sizes it again at a smaller share of its rate per replica (kGrowStep less each
// time, down to kLeastShare) and simulates that, until one meets them. The loss's transient
// (the lost replicas' work recomputed on the survivors) is what the arithmetic cannot see.
Status VerifyGrowing(const CapacitySpec& cs, LayoutCapacity& chosen, const CapacityOptions& options) {
  FP_ASSIGN_OR_RETURN(chosen.simulated_after_loss, VerifyAfterLoss(cs, chosen));
  if (MeetsAfterLoss(chosen.simulated_after_loss)) return Status::Ok();
  const double nominal = chosen.per_replica_rps;
  Json attempts = Json::array({{{"share", 1.0}, {"replicas", chosen.replicas}, {"meets_targets", false},
                                {"attainment", chosen.simulated_after_loss["attainment"]}}});
  const int64_t sized = chosen.replicas;
  int64_t last = chosen.replicas;
  for (int step = 1; kGrowStep * step <= 1 - kLeastShare + 1e-9; ++step) {
    LayoutCapacity grown = chosen;
    grown.verified_share = 1 - kGrowStep * step;
    grown.per_replica_rps = nominal * grown.verified_share;
    FP_RETURN_IF_ERROR(PlaceFleet(cs, grown));
    if (!grown.ok) break;             // the domains hold no larger fleet
    if (grown.replicas == last) continue;  // the same fleet: nothing new to simulate
    last = grown.replicas;
    if (options.on_stage) options.on_stage(fmt::format("simulating {} replicas through the loss", grown.replicas));
    FP_ASSIGN_OR_RETURN(grown.simulated_after_loss, VerifyAfterLoss(cs, grown));
    const bool meets = MeetsAfterLoss(grown.simulated_after_loss);
    attempts.push_back({{"share", RoundForReport(grown.verified_share, 6)}, {"replicas", grown.replicas},
                        {"meets_targets", meets}, {"attainment", grown.simulated_after_loss["attainment"]}});
    if (meets) {
      grown.grown_for_loss = {{"sized_replicas", sized}, {"share", RoundForReport(grown.verified_share, 6)},
                              {"attempts", attempts}};
      if (grown.model_error.is_object()) {  // the pessimistic edge of the fleet as grown
        const StatedError band{grown.model_error["step_model"].get<std::string>(),
                               grown.model_error["gpu"].get<std::string>(), grown.model_error["band"].get<double>(),
                               grown.model_error["basis"].get<std::string>()};
        FP_ASSIGN_OR_RETURN(grown.model_error, AtPessimisticEdge(cs, grown, band));
      }
      chosen = std::move(grown);
      return Status::Ok();
    }
  }
  chosen.grown_for_loss = {{"sized_replicas", sized}, {"share", nullptr}, {"attempts", attempts}};
  return Status::Ok();
}

Expected<LayoutCapacity> SizeLayout(const CapacitySpec& cs, const std::optional<LayoutChoice>& layout) {
  std::vector<std::shared_ptr<YamlDocument>> keep;
  LayoutCapacity out;
  auto bound = OneReplica(cs, layout, keep);
  if (!bound.ok() && bound.status().code() == StatusCode::kCheckFailed && layout) {
    // One replica of this layout does not fit its GPUs: the layout is infeasible, the others
    // are still sized.
    out.layout = *layout;
    out.gpus_per_replica = layout->tp * layout->pp;
    out.reason = bound.status().message();
    return out;
  }
  FP_ASSIGN_OR_RETURN(auto one, std::move(bound));
  const auto& [spec, plan] = one;
  const Parallelism& par = plan.primary_pool().fit.memory.layout;
  out.layout = layout.value_or(LayoutChoice{par.tp, par.pp, std::nullopt});
  out.gpus_per_replica = par.gpus();
  const YamlNode where = *cs.replica_capacity.where;
  FP_ASSIGN_OR_RETURN(WorkloadShape shape, MeasureShape(plan, where));
  shape.prompt_tokens *= cs.prompt_scale;

  MeasuredCapacity measured;
  switch (cs.replica_capacity.kind) {
    case ReplicaCapacitySource::Kind::kSearch: {
      FP_ASSIGN_OR_RETURN(measured, SearchCapacity(cs, spec));
      break;
    }
    case ReplicaCapacitySource::Kind::kFile: {
      FP_ASSIGN_OR_RETURN(measured, FileCapacity(cs, out.gpus_per_replica));
      break;
    }
    case ReplicaCapacitySource::Kind::kRate:
      measured.rps = cs.replica_capacity.rate.per_second;
      measured.basis = fmt::format("declared: {}/s per replica", RoundForReport(measured.rps));
      measured.evidence = {{"source", "rate"}, {"rate_per_s", RoundForReport(measured.rps)}};
      break;
  }
  measured.evidence["workload"] = {{"mean_prompt_tokens", RoundForReport(shape.prompt_tokens, 3)},
                                   {"mean_output_tokens", RoundForReport(shape.output_tokens, 3)},
                                   {"sampled_requests", shape.sampled}};
  out.replica_capacity = measured.evidence;
  out.requirements = Requirements(plan, shape, TotalDemand(cs), measured.rps, measured.basis, cs.headroom);
  out.binding = BindingDimensions(out.requirements);
  out.per_replica_rps = std::numeric_limits<double>::infinity();
  for (const DimensionRequirement& d : out.requirements) out.per_replica_rps = std::min(out.per_replica_rps, d.per_replica_rps);

  FP_RETURN_IF_ERROR(PlaceFleet(cs, out));
  if (out.ok && cs.replica_capacity.kind != ReplicaCapacitySource::Kind::kRate) {
    StatedError band = StatedErrorOf(plan.primary_pool().cost->kind(), plan.primary_pool().fit.memory.gpu.name);
    band.gpu = plan.primary_pool().fit.memory.gpu.name;  // the GPU sized, also where the band is a default row
    FP_ASSIGN_OR_RETURN(out.model_error, AtPessimisticEdge(cs, out, band));
  }
  return out;
}

}  // namespace

Expected<CapacityResult> SizeCapacity(const CapacitySpec& spec, const CapacityOptions& options) {
  std::vector<std::optional<LayoutChoice>> layouts;
  if (spec.layouts.empty()) {
    layouts.emplace_back(std::nullopt);
  } else {
    if (spec.replica_capacity.kind == ReplicaCapacitySource::Kind::kFile && spec.layouts.size() > 1) {
      return spec.replica_capacity.where->Error("a sweep file gives one configuration's capacity; with several layouts "
                                                "use {search: ...} or one layout");
    }
    for (const LayoutChoice& l : spec.layouts) layouts.emplace_back(l);
  }
  if (options.on_stage) options.on_stage(fmt::format("sizing {} layout(s)", layouts.size()));
  std::vector<std::optional<Expected<LayoutCapacity>>> sized(layouts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < layouts.size(); i = next++) sized[i] = SizeLayout(spec, layouts[i]);
  };
  const int threads = std::clamp<int>(options.jobs, 1, static_cast<int>(layouts.size()));
  std::vector<std::thread> pool;
  // Workers read for the caller: they record into its ReadLog (a plan binds what they read).
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&work, log = ReadLog::Current()] {
      ReadLogScope scope(log);
      work();
    });
  }
  work();
  for (std::thread& t : pool) t.join();

  CapacityResult result;
  result.spec = spec.Describe();
  for (auto& s : sized) {
    if (!s->ok()) return s->status();
    result.layouts.push_back(std::move(**s));
  }
  for (size_t i = 0; i < result.layouts.size(); ++i) {
    const LayoutCapacity& l = result.layouts[i];
    if (!l.ok) continue;
    if (!result.chosen) {
      result.chosen = i;
      continue;
    }
    const LayoutCapacity& best = result.layouts[*result.chosen];
    if (l.cost.per_hour < best.cost.per_hour - 1e-9 ||
        (std::abs(l.cost.per_hour - best.cost.per_hour) <= 1e-9 && l.gpus < best.gpus)) {
      result.chosen = i;
    }
  }
  if (result.chosen) {
    LayoutCapacity& chosen = result.layouts[*result.chosen];
    result.within_budget = chosen.within_budget;
    if (options.verify) {
      if (options.on_stage) options.on_stage("simulating the chosen fleet through its deciding loss");
      FP_RETURN_IF_ERROR(VerifyGrowing(spec, chosen, options));
      result.within_budget = chosen.within_budget;
    }
    // Every other layout as sized at the share of its rate the chosen one's loss needed,
    // against the chosen one at its pessimistic edge.
    const Json& edge = chosen.model_error.is_object() ? chosen.model_error["pessimistic"] : Json();
    for (size_t i = 0; i < result.layouts.size() && edge.contains("per_hour"); ++i) {
      if (i == *result.chosen || !result.layouts[i].ok) continue;
      LayoutCapacity other = result.layouts[i];
      if (chosen.verified_share < 1) {
        other.per_replica_rps *= chosen.verified_share;
        FP_RETURN_IF_ERROR(PlaceFleet(spec, other));
      }
      if (!other.ok || other.cost.per_hour <= edge["per_hour"].get<double>() + 1e-9) result.inside_band.push_back(i);
    }
  }
  return result;
}

}  // namespace fleetplan
