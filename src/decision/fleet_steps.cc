// The fleet steps: the deployment composed with the evidence, layouts ranked on the
// inventory's GPU, each candidate sized by capacity at its benchmark rate, and the chosen
// fleet simulated at peak through the deployment's own admission and routing.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "decision/steps.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/metrics/slo.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/layout.h"

namespace fleetplan::decision {
namespace {

const std::vector<std::string> kInventoryKeys = {"gpu", "memory", "gpus_per_node", "domains"};
constexpr size_t kMaxLayoutCandidates = 3;

const BoundFile& Need(const PlanBundle& b, std::string_view kind) {
  const BoundFile* f = b.EvidenceOf(kind);
  FP_ASSERT(f != nullptr);  // the caller runs the fleet steps only with every required kind
  return *f;
}

// A scalar document located at `at`, kept alive by `keep`.
YamlNode KeptScalar(std::vector<std::shared_ptr<YamlDocument>>& keep, std::string text, const YamlNode& at) {
  keep.push_back(std::make_shared<YamlDocument>(YamlDocument::Scalar(std::move(text), at)));
  return keep.back()->root();
}

double TotalPeak(const CapacitySpec& s) {
  double total = 0;
  for (const RegionDemand& r : s.demand) total += r.peak.per_second;
  return total;
}

// `method` of the benchmark evidence: measured (the default) or simulated.
Expected<std::string> BenchmarkMethod(const YamlNode& bench) {
  const YamlNode node = bench["method"];
  FP_ASSIGN_OR_RETURN(std::string method, node.StringOr("measured"));
  if (method != "measured" && method != "simulated") {
    return node.Error(fmt::format("expected 'measured' or 'simulated', got '{}'", method));
  }
  return method;
}

}  // namespace

const LayoutCapacity* CapacityOutcome::Chosen() const {
  if (!chosen || !results[*chosen].chosen) return nullptr;
  return &results[*chosen].layouts[*results[*chosen].chosen];
}

Expected<ComposedDeployment> ComposeDeployment(const PlanBundle& b) {
  ComposedDeployment d;
  const BoundFile& inventory = Need(b, "inventory");
  const BoundFile& workload = Need(b, "workload");
  const YamlNode inv = inventory.Data();
  FP_RETURN_IF_ERROR(inv.CheckKeys(kInventoryKeys));
  for (const char* key : {"gpu", "domains"}) FP_RETURN_IF_ERROR(inv[key].RequirePresent());
  FP_ASSIGN_OR_RETURN(d.gpu, inv["gpu"].AsString());
  FP_ASSIGN_OR_RETURN(d.gpus_per_node, inv["gpus_per_node"].IntOr(8));
  if (d.gpus_per_node < 1) return inv["gpus_per_node"].Error("expected at least 1 GPU per node");
  FP_RETURN_IF_ERROR(workload.Data()["workload"].RequirePresent());
  FP_RETURN_IF_ERROR(workload.Data()["peak"].RequirePresent());
  FP_ASSIGN_OR_RETURN(d.base, SweepSpecOfBase(*b.deployment_scenario, b.dir, b.bundle_file.name));
  d.base.overrides.push_back(YamlOverride{"workload", workload.Data()["workload"]});
  d.base.overrides.push_back(YamlOverride{"slo", *b.policy.slo_node});
  d.base.overrides.push_back(YamlOverride{"hardware.gpu", inv["gpu"]});
  d.base.overrides.push_back(YamlOverride{"hardware.gpus_per_node", KeptScalar(d.keep, std::to_string(d.gpus_per_node), inv)});
  if (inv["memory"].present()) {
    FP_ASSIGN_OR_RETURN(Bytes memory, inv["memory"].AsBytes());
    auto known = Catalog::Builtin().Gpu(d.gpu);
    if (!known.ok()) return inv["gpu"].Error(known.status().message());
    const GpuSpec& gpu = *known;
    if (memory.count() <= 0 || memory > gpu.memory) {
      return inv["memory"].Error(fmt::format("expected a memory above 0 and at most the {} of {}, got '{}'",
                                             FormatBytes(gpu.memory), d.gpu, inv["memory"].Text()));
    }
    d.base.overrides.push_back(YamlOverride{"hardware.gpu_memory", inv["memory"]});
  }
  d.base.targets = b.policy.attainment;
  d.base.targets_source = "the policy's attainment";
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::WithOverrides(*d.base.base, d.base.overrides));
  FP_ASSIGN_OR_RETURN(d.scenario, LoadScenarioDocument(std::make_shared<const YamlDocument>(std::move(doc)), d.base.base_dir,
                                                       b.deployment.digest));
  return d;
}

Expected<LayoutOutcome> RankLayouts(const PlanBundle& b, const ComposedDeployment& d) {
  LayoutOutcome out;
  const MemoryInputs& m = d.scenario.fit.memory;
  const std::string cluster_text =
      fmt::format("name: inventory\nracks:\n  - name: r0\n    nodes:\n      - {{name: n0, gpu: {}, gpus: {}, memory: {}B}}\n",
                  d.gpu, d.gpus_per_node, m.gpu.memory.count());
  FP_ASSIGN_OR_RETURN(Cluster cluster, ParseClusterText(cluster_text, "inventory node", *d.scenario.catalog));
  // Ranked on the workload: a decode batch of the default size at the workload's mean
  // sequence length (prompt + output), as capacity measures it.
  FP_ASSIGN_OR_RETURN(out.shape,
                      MeasureShape(d.scenario.workload, d.scenario.seed, Need(b, "workload").Data()["workload"]));
  const WorkloadShape& shape = out.shape;
  LayoutRequest req;
  req.model = m.model;
  req.weight_dtype = m.weight_dtype;
  req.kv_dtype = m.kv_dtype;
  req.context = std::clamp<int64_t>(std::llround(shape.prompt_tokens + shape.output_tokens), 1, d.scenario.fit.context);
  req.gpu_memory_utilization = m.gpu_memory_utilization;
  FP_ASSIGN_OR_RETURN(LayoutResult ranked, SearchLayouts(req, cluster));
  const YamlNode bench = Need(b, "benchmark").Data();
  FP_ASSIGN_OR_RETURN(std::string measured_on, bench["identity"]["hardware"].StringOr(""));
  FP_ASSIGN_OR_RETURN(out.benchmark_method, BenchmarkMethod(bench));
  Json feasible = Json::array();
  std::vector<std::string> without_rate;
  for (size_t i : ranked.decode.order) {
    const FeasibleLayout& f = ranked.feasible[i];
    const LayoutChoice choice{f.layout.tp, f.layout.pp, std::nullopt};
    const YamlNode rate_node = bench["replica_rate"][choice.Name()];
    Json entry = {{"layout", choice.Name()}, {"decode_rank", f.decode_rank}, {"prefill_rank", f.prefill_rank},
                  {"decode_tokens_per_s_per_gpu", RoundForReport(f.decode.tokens_per_s_per_gpu, 4)},
                  {"max_sequences", f.max_sequences}, {"benchmark_rate_per_s", nullptr}};
    if (rate_node.present()) {
      FP_ASSIGN_OR_RETURN(Rate r, rate_node.AsRate());
      if (!(r.per_second > 0)) return rate_node.Error("expected a replica rate > 0");
      entry["benchmark_rate_per_s"] = RoundForReport(r.per_second);
      if (out.candidates.size() < kMaxLayoutCandidates) {
        out.candidates.push_back(LayoutChoice{f.layout.tp, f.layout.pp, rate_node});
        out.rates.push_back(r.per_second);
      }
    } else {
      without_rate.push_back(choice.Name());
    }
    feasible.push_back(std::move(entry));
  }
  Json rejected = Json::array();
  for (const RejectedLayout& r : ranked.rejected) {
    rejected.push_back({{"layout", LayoutChoice{r.layout.tp, r.layout.pp, std::nullopt}.Name()}, {"reason", r.reason}});
  }
  out.json = {{"gpu", d.gpu}, {"gpu_memory_bytes", m.gpu.memory.count()}, {"gpus_per_node", d.gpus_per_node},
              {"ranked_at", {{"batch", req.batch}, {"context", req.context},
                             {"basis", fmt::format("the workload's mean request: {:.0f} prompt + {:.0f} output tokens over {} "
                                                   "drawn", shape.prompt_tokens, shape.output_tokens, shape.sampled)}}}, {"feasible", feasible},
              {"rejected", rejected}};
  if (ranked.feasible.empty()) {
    const std::string first = ranked.rejected.empty() ? "no layout was enumerated" : ranked.rejected.back().reason;
    out.checks.push_back(FailCheck("fit",
                                   fmt::format("no layout of {} fits one node of {} x {} with {} each: {}", m.model.name,
                                               d.gpus_per_node, d.gpu, FormatBytes(m.gpu.memory), first),
                                   Json{{"gpu_memory_bytes", m.gpu.memory.count()}, {"rejected", rejected.size()}}));
    return out;
  }
  if (!measured_on.empty() && measured_on != d.gpu) {
    out.checks.push_back(HoldCheck("benchmark", fmt::format("the benchmark was measured on {}; the inventory offers {}",
                                                            measured_on, d.gpu)));
    out.candidates.clear();
    out.rates.clear();
    return out;
  }
  if (out.candidates.empty()) {
    out.checks.push_back(HoldCheck("benchmark", fmt::format("no benchmark rate for any layout that fits ({})",
                                                            fmt::join(without_rate, ", "))));
    return out;
  }
  std::vector<std::string> names;
  for (const LayoutChoice& c : out.candidates) names.push_back(c.Name());
  out.checks.push_back(PassCheck("fit", fmt::format("{} layouts fit one {} node ({} MiB each); sized: {}", ranked.feasible.size(),
                                                    d.gpu, m.gpu.memory.count() >> 20, fmt::join(names, ", "))));
  return out;
}

Expected<std::vector<CapacitySpec>> CapacitySpecs(const PlanBundle& b, const ComposedDeployment& d, const LayoutOutcome& l) {
  std::vector<CapacitySpec> specs;
  const YamlNode price = Need(b, "price").Data()[d.gpu];
  if (!price.present()) {
    return Need(b, "price").Data().Error(fmt::format("no price for {}, the inventory's GPU", d.gpu));
  }
  for (size_t i = 0; i < l.candidates.size(); ++i) {
    const LayoutChoice& c = l.candidates[i];
    std::vector<std::shared_ptr<YamlDocument>> keep;
    FP_ASSIGN_OR_RETURN(YamlDocument head, YamlDocument::LoadString("version: 1\n", b.bundle_file.name));
    FP_ASSIGN_OR_RETURN(YamlDocument layouts,
                        YamlDocument::LoadString(fmt::format("[{{tp: {}, pp: {}}}]", c.tp, c.pp), b.bundle_file.name));
    keep.push_back(std::make_shared<YamlDocument>(std::move(layouts)));
    std::vector<YamlOverride> o = {{"demand", Need(b, "workload").Data()["peak"]},
                                   {"domains", Need(b, "inventory").Data()["domains"]},
                                   {"price", price},
                                   {"replica_capacity.rate", *c.where},
                                   {"layouts", keep.back()->root()}};
    for (const char* key : {"survive", "headroom", "budget", "verify"}) {
      if ((*b.policy.capacity)[key].present()) o.push_back(YamlOverride{key, (*b.policy.capacity)[key]});
    }
    FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::WithOverrides(head, o));
    FP_ASSIGN_OR_RETURN(std::string digest, DigestOfJson(Json{{"plan", b.bundle_file.digest}, {"layout", c.Name()}}));
    FP_ASSIGN_OR_RETURN(CapacitySpec spec,
                        CapacitySpecOf(std::make_shared<const YamlDocument>(std::move(doc)), d.base, b.dir, digest));
    spec.replica_capacity.attainment = b.policy.attainment;  // what the verification judges
    specs.push_back(std::move(spec));
  }
  return specs;
}

bool CheaperFleet(const LayoutCapacity& a, const LayoutCapacity& b) {
  if (a.within_budget != b.within_budget) return a.within_budget;
  if (a.cost.per_hour != b.cost.per_hour) return a.cost.per_hour < b.cost.per_hour;
  return a.gpus < b.gpus;
}

Expected<CapacityOutcome> SizeFleet(const std::vector<CapacitySpec>& specs, bool verify) {
  CapacityOutcome out;
  CapacityOptions options;
  options.verify = false;
  Json candidates = Json::array();
  std::vector<std::string> why_not;
  for (size_t i = 0; i < specs.size(); ++i) {
    FP_ASSIGN_OR_RETURN(CapacityResult r, SizeCapacity(specs[i], options));
    const LayoutCapacity& lc = r.layouts.front();
    candidates.push_back({{"layout", lc.layout.Name()}, {"sized", lc.ok}, {"reason", lc.reason}, {"replicas", lc.replicas},
                          {"gpus", lc.gpus}, {"per_hour", RoundForReport(lc.cost.per_hour, 6)},
                          {"within_budget", lc.within_budget}, {"binding", lc.binding}});
    if (!lc.ok) why_not.push_back(fmt::format("{}: {}", lc.layout.Name(), lc.reason));
    const bool better = lc.ok && (!out.chosen || CheaperFleet(lc, out.results[*out.chosen].layouts.front()));
    out.results.push_back(std::move(r));
    if (better) out.chosen = i;
  }
  if (!out.chosen) {
    out.json = {{"candidates", candidates}};
    out.checks.push_back(FailCheck("capacity", fmt::format("no layout gives a fleet that survives the required loss in the "
                                                           "inventory's domains: {}",
                                                           fmt::join(why_not, "; ")),
                                   Json{{"candidates", candidates}}));
    return out;
  }
  if (verify) {
    CapacityOptions v;
    v.verify = true;
    FP_ASSIGN_OR_RETURN(out.results[*out.chosen], SizeCapacity(specs[*out.chosen], v));
  }
  const CapacityResult& chosen = out.results[*out.chosen];
  out.json = CapacityJson(chosen);
  out.json["candidates"] = candidates;
  const LayoutCapacity& lc = chosen.layouts.front();
  const Json numbers = {{"layout", lc.layout.Name()}, {"replicas", lc.replicas}, {"gpus", lc.gpus},
                        {"per_month", RoundForReport(lc.cost.per_month, 6)}};
  if (!lc.within_budget) {
    out.checks.push_back(FailCheck("budget",
                                   fmt::format("the cheapest fleet that survives the required loss ({} x {}, {} GPUs) costs "
                                               "${:.0f}/month, over the policy's budget of ${:.0f}/month",
                                               lc.replicas, lc.layout.Name(), lc.gpus, lc.cost.per_month,
                                               specs[*out.chosen].budget_per_month.value_or(0)),
                                   numbers));
  }
  const Json& after = out.json["simulated_after_loss"];
  if (after.is_object() && !after["meets_targets"].get<bool>()) {
    std::vector<std::string> missed;
    for (const auto& [cls, target] : after["targets"].items()) {
      const double got = after["attainment"].value(cls, 0.0);
      if (got < target.get<double>()) missed.push_back(fmt::format("{} {:.4f} < {:g}", cls, got, target.get<double>()));
    }
    out.checks.push_back(FailCheck("capacity",
                                   fmt::format("simulated with {} lost at {:g} s, the surviving fleet misses the policy's "
                                               "attainment: {}",
                                               after["scenario"].get<std::string>(), after["loss_at_s"].get<double>(),
                                               fmt::join(missed, "; ")),
                                   numbers));
  } else {
    out.checks.push_back(PassCheck("capacity",
                                   fmt::format("{} x {} ({} GPUs) carry {:g}/s and survive {}{}{}", lc.replicas, lc.layout.Name(),
                                               lc.gpus, TotalPeak(specs[*out.chosen]), SurviveRuleName(specs[*out.chosen].survive),
                                               after.is_object() ? " (simulated through the loss)" : "",
                                               lc.grown_for_loss.is_object()
                                                   ? fmt::format("; grown from {} replicas, which missed the targets "
                                                                 "through the loss, by sizing at {:.0f}% of the "
                                                                 "benchmark's rate",
                                                                 lc.grown_for_loss["sized_replicas"].get<int64_t>(),
                                                                 100 * lc.verified_share)
                                                   : ""),
                                   numbers));
  }
  return out;
}

Expected<SimulationOutcome> SimulateFleet(const PlanBundle& b, const ComposedDeployment& d, const LayoutCapacity& chosen,
                                          const std::vector<YamlOverride>& extra, std::optional<Duration> duration) {
  SimulationOutcome out;
  SweepSpec s = d.base;
  std::vector<std::shared_ptr<YamlDocument>> keep;
  const YamlNode at = b.document->root()["deployment"];
  double total = 0;
  const YamlNode peak = Need(b, "workload").Data()["peak"];
  FP_ASSIGN_OR_RETURN(auto regions, peak.Entries());
  for (const auto& [region, rate] : regions) {
    FP_ASSIGN_OR_RETURN(Rate r, rate.AsRate());
    total += r.per_second;
  }
  const int64_t nodes = (chosen.replicas * chosen.gpus_per_replica + d.gpus_per_node - 1) / d.gpus_per_node;
  auto set = [&](const std::string& path, std::string value) {
    s.overrides.push_back(YamlOverride{path, KeptScalar(keep, std::move(value), at)});
  };
  set("deployment.replicas", std::to_string(chosen.replicas));
  set("deployment.tp", std::to_string(chosen.layout.tp));
  set("deployment.pp", std::to_string(chosen.layout.pp));
  set("hardware.nodes", std::to_string(nodes));
  set("workload.arrival.rate", RateText(Rate{total}));
  const Duration run_for = duration.value_or(b.policy.simulation_duration);
  set("workload.duration", fmt::format("{}s", static_cast<int64_t>(run_for.seconds())));
  s.overrides.insert(s.overrides.end(), extra.begin(), extra.end());
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::WithOverrides(*s.base, s.overrides));
  FP_ASSIGN_OR_RETURN(Scenario scenario, LoadScenarioDocument(std::make_shared<const YamlDocument>(std::move(doc)),
                                                              s.base_dir, b.deployment.digest));
  FP_ASSIGN_OR_RETURN(FleetPlan plan, Bind(scenario));
  for (const ClassSlo& c : b.policy.slo.classes()) {
    if (!c.objectives.ttft) continue;
    ClassTtft t{c.name, c.objectives.ttft->millis(), 0, {}};
    for (const auto& [cls, target] : b.policy.attainment) {
      if (cls == c.name) t.target = target;
    }
    out.ttft.push_back(std::move(t));
  }
  RunOptions options;
  options.write_files = false;
  // Class handles resolve after the run (RunResult::names).
  std::vector<RequestRecord> records;
  options.on_record = [&](const RequestRecord& r) { records.push_back(r); };
  FP_ASSIGN_OR_RETURN(RunResult run, Simulate(plan, options));
  const Report& report = run.result.report;
  for (ClassTtft& t : out.ttft) {
    const ClassSlo* c = b.policy.slo.Find(t.name);
    ClassObjectives others = c->objectives;
    others.ttft.reset();
    for (const RequestRecord& r : records) {
      if (run.names.classes[static_cast<size_t>(r.class_id)] != t.name) continue;
      const std::optional<Duration> ttft = Ttft(r);
      t.samples.push_back(TtftSample{ttft ? ttft->millis() : std::numeric_limits<double>::infinity(),
                                     Evaluate(r, others).qualified && ttft.has_value()});
    }
  }
  Json classes = Json::array();
  std::vector<std::string> missed;
  for (const auto& [cls, target] : b.policy.attainment) {
    const ClassReport* c = report.FindClass(cls);
    const double got = c && c->slo_attainment ? *c->slo_attainment : 0;
    classes.push_back({{"class", cls}, {"requests", c ? c->requests : 0}, {"attainment", RoundForReport(got, 6)},
                       {"target", target}});
    if (got < target) missed.push_back(fmt::format("{} {:.4f} < {:g}", cls, got, target));
  }
  const StatusCounts& st = report.fleet.status;
  const int64_t refused = st.of(RecordStatus::kRejected) + st.of(RecordStatus::kError) + st.of(RecordStatus::kTimeout) +
                          st.of(RecordStatus::kCancelled);
  out.json = {{"replicas", chosen.replicas}, {"layout", chosen.layout.Name()}, {"nodes", nodes},
              {"rate_per_s", RoundForReport(total)}, {"duration_s", run_for.seconds()},
              {"requests", report.fleet.requests}, {"rejected", st.of(RecordStatus::kRejected)},
              {"not_ok", refused}, {"classes", classes},
              {"over_capacity", run.result.overload.fleet.over_capacity},
              {"router", b.deployment.document->root()["router"]["policy"].Text()},
              {"admission", run.report.contains("admission") ? run.report["admission"] : Json()}};
  const Json numbers = {{"requests", report.fleet.requests}, {"not_ok", refused}};
  if (refused > 0) {
    out.checks.push_back(FailCheck("admission",
                                   fmt::format("{} of {} benign requests did not finish ok through admission and placement "
                                               "({} rejected); benign work must pass with none refused",
                                               refused, report.fleet.requests, st.of(RecordStatus::kRejected)),
                                   numbers));
  } else {
    out.checks.push_back(PassCheck("admission", fmt::format("all {} requests passed admission and placement and finished ok",
                                                            report.fleet.requests), numbers));
  }
  if (run.result.overload.fleet.over_capacity) {
    out.checks.push_back(FailCheck("slo", fmt::format("the fleet falls behind its arrivals at {:g}/s (over capacity)", total)));
  } else if (!missed.empty()) {
    out.checks.push_back(FailCheck("slo", fmt::format("at peak, attainment misses the policy: {}", fmt::join(missed, "; ")),
                                   Json{{"classes", classes}}));
  } else {
    out.checks.push_back(PassCheck("slo", fmt::format("at {:g}/s every class meets the policy's attainment", total),
                                   Json{{"classes", classes}}));
  }
  return out;
}

}  // namespace fleetplan::decision
