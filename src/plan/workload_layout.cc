// A layout decided on the workload (workload_layout.h): operating points from the
// scenario's workload, the static ranking at each, the top K simulated, crossovers.
#include "fleetplan/core/flag_error.h"
#include "fleetplan/plan/workload_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <tuple>
#include <utility>

#include "fleetplan/core/error.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/metrics/report.h"
#include "fleetplan/plan/layout_report.h"
#include "fleetplan/workload/source.h"

namespace fleetplan {
namespace {

Status FlagError(std::string_view flag, std::string_view message) { return FlagValueError(flag, message); }

// Mean lengths and the arrival rate of the first kWorkloadSample requests. A closed-loop
// source is fed each request's end at its own arrival so that it keeps drawing.
Expected<WorkloadFigures> MeasureWorkload(const Scenario& s) {
  WorkloadFigures w;
  w.closed_loop = s.workload.mode == ArrivalMode::kClosedLoop;
  if (w.closed_loop) w.users = s.workload.closed_loop->users;
  SourceLimits limits;
  limits.requests = kWorkloadSample;
  FP_ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> source, MakeRequestSource(s.workload, s.seed, limits));
  std::optional<SimTime> first, last;
  for (;;) {
    FP_ASSIGN_OR_RETURN(std::optional<Request> r, source->Next());
    if (!r) break;
    w.prompt_tokens += static_cast<double>(r->prompt_tokens());
    w.output_tokens += static_cast<double>(r->output_tokens);
    ++w.sampled;
    if (!first) first = r->arrival;
    last = r->arrival;
    if (w.closed_loop) source->OnRequestFinished(r->id, r->arrival);
  }
  if (w.sampled == 0) return FlagError("--scenario", fmt::format("{}: the workload produces no request", s.display_name));
  w.prompt_tokens /= static_cast<double>(w.sampled);
  w.output_tokens /= static_cast<double>(w.sampled);
  if (!w.closed_loop && w.sampled > 1 && *last > *first) {
    w.rate_per_s = static_cast<double>(w.sampled - 1) / (*last - *first).seconds();
  }
  return w;
}

// The request every point shares: the scenario's model, formats and engine limits.
LayoutRequest BaseRequest(const Scenario& s, const WorkloadLayoutRequest& q, const WorkloadFigures& w) {
  LayoutRequest r = q.base;
  const MemoryInputs& m = s.fit.memory;
  r.model = m.model;
  r.weight_dtype = m.weight_dtype;
  r.kv_dtype = m.kv_dtype;
  r.gpu_memory_utilization = m.gpu_memory_utilization;
  r.prefill_tokens = s.engine.scheduler.max_batched_tokens;
  r.batch = s.engine.scheduler.max_running;
  r.dp.reset();
  r.keep_near_misses = true;
  const int64_t cap = s.fit.context > 0 ? s.fit.context : kMaxTokens;
  r.context = std::clamp<int64_t>(std::llround(w.prompt_tokens + w.output_tokens), 1, cap);
  r.microbatches = std::min({r.microbatches, r.batch, r.prefill_tokens});
  return r;
}

LayoutRequest AtPerReplica(LayoutRequest r, int64_t batch) {
  r.batch_rule = BatchRule::kPerReplica;
  r.batch = batch;
  r.microbatches = std::min(r.microbatches, batch);
  return r;
}

LayoutRequest AtFleet(LayoutRequest r, int64_t sequences) {
  r.batch_rule = BatchRule::kFleetConcurrency;
  r.fleet_sequences = sequences;
  return r;
}

// One layout of one GPU type at one operating point; absent when it does not fit at all.
Expected<std::optional<FeasibleLayout>> OneLayout(LayoutRequest r, const Cluster& c, const std::string& gpu,
                                                  Parallelism p) {
  r.tp = p.tp;
  r.pp = p.pp;
  r.ep = p.ep;
  FP_ASSIGN_OR_RETURN(LayoutResult res, SearchLayouts(r, c));
  for (FeasibleLayout& f : res.feasible) {
    if (f.gpu == gpu) return std::optional<FeasibleLayout>(std::move(f));
  }
  return std::optional<FeasibleLayout>();
}

// W on layout f at `batch` sequences per replica.
Duration TimeInSystem(const FeasibleLayout& f, const WorkloadFigures& w) {
  const double prefill_s =
      f.prefill.step.seconds() * w.prompt_tokens / static_cast<double>(std::max<int64_t>(f.prefill.tokens, 1));
  return Duration::FromSecondsRounded(prefill_s + w.output_tokens * f.decode.step.seconds());
}

// Little's law as a fixed point on the reference layout.
Status SolveConcurrency(const LayoutRequest& base, const Cluster& c, const FeasibleLayout& ref, WorkloadFigures& w) {
  w.reference = ref.layout;
  if (w.closed_loop) {
    w.concurrency = std::max<int64_t>(w.users, 1);
    FP_ASSIGN_OR_RETURN(auto at, OneLayout(AtFleet(base, w.concurrency), c, ref.gpu, ref.layout));
    if (at) w.time_in_system = TimeInSystem(*at, w);
    return Status::Ok();
  }
  int64_t batch = 1;
  for (w.iterations = 1; w.iterations <= kLittleIterations; ++w.iterations) {
    FP_ASSIGN_OR_RETURN(auto at, OneLayout(AtPerReplica(base, batch), c, ref.gpu, ref.layout));
    if (!at) break;
    w.time_in_system = TimeInSystem(*at, w);
    const double l = w.rate_per_s * w.time_in_system.seconds();
    const int64_t next = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(l - 1e-9)), 1, kMaxSequences);
    const int64_t next_batch = (next + ref.dp - 1) / ref.dp;
    w.concurrency = next;
    if (next_batch == batch) break;
    batch = next_batch;
  }
  w.iterations = std::min(w.iterations, kLittleIterations);
  return Status::Ok();
}

const FeasibleLayout* FindLayout(const LayoutResult& r, const std::string& gpu, Parallelism p) {
  for (const FeasibleLayout& f : r.feasible) {
    if (f.gpu == gpu && f.layout.tp == p.tp && f.layout.pp == p.pp && f.layout.ep == p.ep) return &f;
  }
  return nullptr;
}

// The scenario's own layout when the cluster runs it, else the batch-1 decode leader.
const FeasibleLayout* Reference(const Scenario& s, const LayoutResult& batch1, std::string& basis) {
  const Parallelism own = s.fit.memory.layout;
  for (const FeasibleLayout& f : batch1.feasible) {
    if (f.layout.tp == own.tp && f.layout.pp == own.pp && f.layout.ep == own.ep) {
      basis = "the scenario's own layout";
      return &f;
    }
  }
  if (batch1.decode.order.empty()) return nullptr;
  const FeasibleLayout& lead = batch1.feasible[batch1.decode.order.front()];
  basis = fmt::format("the batch-1 decode leader {} (the scenario's {} does not run on this cluster)",
                      LayoutName(lead.layout), LayoutName(own));
  return &lead;
}

std::string TypicalBasis(const WorkloadFigures& w) {
  if (w.closed_loop) return fmt::format("the closed loop's {} users", w.users);
  return fmt::format("Little's law: {:.3g}/s × W {:.0f} ms on {} = {} sequences across the fleet", w.rate_per_s,
                     w.time_in_system.millis(), LayoutName(w.reference), w.concurrency);
}

// Copies the scenario with its one pool set to the candidate (plan fields only).
Scenario CandidateScenario(const Scenario& base, const FeasibleLayout& f) {
  Scenario s = base;
  FitRequest fit = base.fit;
  fit.memory.layout = f.layout;
  fit.memory.gpu = f.gpu_spec;
  const PoolRole role = base.pools.empty() ? PoolRole::kMixed : base.pools.front().role;
  s.fit = fit;
  s.replicas = f.dp;
  s.pools = {PoolSpec{role, fit, f.dp}};
  s.gpus_per_node = std::max<int64_t>(f.node_gpus, 1);
  s.nodes = (f.dp * f.layout.gpus() + s.gpus_per_node - 1) / s.gpus_per_node;
  s.intra_node_link = f.tp_link.value_or(f.node_link);
  s.inter_node_link = f.pp_link.value_or(f.node_link);
  s.output.dir.clear();
  s.output.timeseries_interval = Duration();  // no time series: the figures need none
  return s;
}

// What one simulated fleet gives the ranking.
struct FleetFigures {
  std::string error;
  int64_t requests = 0;
  double goodput_rps = 0;
  double throughput_rps = 0;
  std::optional<double> attainment;
  std::map<std::string, std::optional<double>> class_attainment;
};

FleetFigures SimulateFleet(const Scenario& base, const FeasibleLayout& f) {
  FleetFigures out;
  RunOptions options;
  options.write_files = false;
  Expected<FleetPlan> plan = Bind(CandidateScenario(base, f));
  if (!plan.ok()) {
    out.error = plan.status().message();
    return out;
  }
  Expected<RunResult> run = Simulate(*plan, options);
  if (!run.ok()) {
    out.error = run.status().message();
    return out;
  }
  const Report& rep = run->result.report;
  out.requests = rep.fleet.requests;
  out.goodput_rps = rep.fleet.goodput_rps;
  out.throughput_rps = rep.fleet.throughput_rps;
  out.attainment = rep.fleet.slo_attainment;
  for (const ClassReport& c : rep.classes) out.class_attainment[c.name] = c.slo_attainment;
  return out;
}

void RunCandidate(const Scenario& base, const FeasibleLayout& f, SimulatedLayout& out) {
  FleetFigures fig = SimulateFleet(base, f);
  out.error = std::move(fig.error);
  out.requests = fig.requests;
  out.goodput_rps = fig.goodput_rps;
  out.throughput_rps = fig.throughput_rps;
  out.goodput_per_gpu = out.goodput_rps / static_cast<double>(std::max<int64_t>(out.gpus, 1));
  out.attainment = fig.attainment;
  out.class_attainment = std::move(fig.class_attainment);
}

// The candidate's fleet after the worst single loss of `d`: the same layout with the
// replicas the packing leaves (none left: nothing is served).
AfterLoss RunAfterLoss(const Scenario& base, FeasibleLayout f, LossDomain d, int64_t fleet_gpus) {
  AfterLoss out;
  out.replicas = ReplicasLeft(f.after_loss, d);
  if (out.replicas == 0) {
    out.attainment = 0.0;
    return out;
  }
  f.dp = out.replicas;
  FleetFigures fig = SimulateFleet(base, f);
  out.error = std::move(fig.error);
  out.goodput_rps = fig.goodput_rps;
  out.goodput_per_gpu = fig.goodput_rps / static_cast<double>(std::max<int64_t>(fleet_gpus, 1));
  out.attainment = fig.attainment;
  return out;
}

SimulatedLayout Candidate(const FeasibleLayout& f, const std::vector<OperatingPointRanking>& points, size_t typical) {
  SimulatedLayout s;
  s.gpu = f.gpu;
  s.layout = f.layout;
  s.dp = f.dp;
  s.gpus = f.dp * f.layout.gpus();
  s.replicas_after_loss = f.after_loss;
  for (size_t i = 0; i < points.size(); ++i) {
    const FeasibleLayout* at = FindLayout(points[i].result, f.gpu, f.layout);
    const int64_t rank = at ? at->decode_rank : 0;
    s.static_ranks[points[i].name] = rank;
    if (i == typical) s.static_rank = rank;
  }
  return s;
}

// Runs work(i) for i in [0, n) on up to q.jobs threads. Each call writes only its own slot.
// `stage` names the runs for the request's progress callback.
template <typename Work>
void RunParallel(size_t n, const WorkloadLayoutRequest& q, std::string_view stage, const Work& work) {
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  if (q.on_simulated && n > 0) q.on_simulated(stage, 0, static_cast<int64_t>(n));
  auto loop = [&] {
    for (size_t i = next++; i < n; i = next++) {
      work(i);
      const int64_t finished = ++done;
      if (q.on_simulated) q.on_simulated(stage, finished, static_cast<int64_t>(n));
    }
  };
  const int threads = std::clamp<int>(q.jobs, 1, static_cast<int>(std::max<size_t>(n, 1)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(loop);
  loop();
  for (std::thread& t : pool) t.join();
}

void SimulateAll(const Scenario& s, const std::vector<const FeasibleLayout*>& picks, const WorkloadLayoutRequest& q,
                 std::vector<SimulatedLayout>& out) {
  RunParallel(picks.size(), q, "candidates", [&](size_t i) { RunCandidate(s, *picks[i], out[i]); });
}

// Simulated order: simulated ones first by goodput per GPU, attainment, static rank.
void RankSimulated(std::vector<SimulatedLayout>& sims) {
  auto key = [](const SimulatedLayout& s) {
    return std::make_tuple(!s.error.empty(), -s.goodput_per_gpu, -s.attainment.value_or(0.0), s.static_rank);
  };
  std::stable_sort(sims.begin(), sims.end(),
                   [&](const SimulatedLayout& a, const SimulatedLayout& b) { return key(a) < key(b); });
  int64_t rank = 0;
  for (SimulatedLayout& s : sims) s.simulated_rank = s.error.empty() ? ++rank : 0;
}

// ---- The choice: failure domains in the close band, staging where the model cannot tell.

// Figures of a staging run's records, judged by the scenario's SLOs. GPUs are filled in
// when the spec is matched to a candidate (its dp defaults to the candidate's).
Expected<StagingResult> MeasureStaging(const Scenario& s, const StagingInput& in) {
  auto located = [&](const Status& st) {
    return LocatedError(SourceLocation{}, "--staging", fmt::format("{}={}: {}", in.spec, in.path, st.message()));
  };
  Expected<std::string> format = DetectRecordFormat(in.path);
  if (!format.ok()) return located(format.status());
  std::vector<std::string> classes;
  for (const ClassSpec& c : s.workload.classes) classes.push_back(c.name);
  RecordReadOptions options;
  if (classes.size() == 1) options.default_class = classes.front();
  options.class_flag = "--staging";
  Expected<std::unique_ptr<RecordReader>> reader = MakeRecordReader(*format, options);
  if (!reader.ok()) return located(reader.status());
  Expected<ReportBuilder> builder = ReportBuilder::Create(
      classes, s.slo, /*open_classes=*/classes.empty(),
      fmt::format("the classes are those {} declares under workload.classes", s.display_name));
  if (!builder.ok()) return located(builder.status());
  Expected<RecordsFileInfo> info = (*reader)->Read(in.path, *builder);
  if (!info.ok()) return located(info.status());
  ReportOptions window;
  if (info->stated_window) window.window = info->stated_window;
  Expected<Report> report = std::move(*builder).Finish(window);
  if (!report.ok()) return located(report.status());
  StagingResult r;
  r.spec = in.spec;
  r.path = in.path;
  r.format = *format;
  r.digest = info->digest;
  r.requests = report->fleet.requests;
  r.goodput_rps = report->fleet.goodput_rps;
  r.attainment = report->fleet.slo_attainment;
  return r;
}

// Attaches each staging result to the one simulated candidate its spec names.
Status AttachStaging(const std::vector<StagingInput>& inputs, std::vector<StagingResult> results,
                     std::vector<SimulatedLayout>& sims) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    const StagingInput& in = inputs[k];
    std::vector<SimulatedLayout*> matches;
    std::vector<std::string> names;
    for (SimulatedLayout& c : sims) {
      if (!c.error.empty()) continue;
      names.push_back(LayoutName(c.layout));
      if (c.layout.tp == in.layout.tp && c.layout.pp == in.layout.pp && c.layout.ep == in.layout.ep) matches.push_back(&c);
    }
    if (matches.size() != 1) {
      return LocatedError(
          SourceLocation{}, "--staging",
          fmt::format("{}: {} simulated candidate(s) are {} (simulated: {}); stage a simulated layout, or raise "
                      "--simulate-top",
                      in.spec, matches.size(), LayoutName(in.layout), fmt::join(names, ", ")));
    }
    SimulatedLayout& c = *matches.front();
    if (c.staging) {
      return LocatedError(SourceLocation{}, "--staging",
                          fmt::format("{}: {} has a staging result already ({})", in.spec, LayoutName(c.layout),
                                      c.staging->spec));
    }
    StagingResult r = std::move(results[k]);
    r.dp = in.dp.value_or(c.dp);
    r.gpus = r.dp * c.layout.gpus();
    r.goodput_per_gpu = r.goodput_rps / static_cast<double>(r.gpus);
    c.staging = std::move(r);
  }
  return Status::Ok();
}

std::vector<ChoiceCandidate> ChoiceView(const std::vector<SimulatedLayout>& sims) {
  std::vector<ChoiceCandidate> out;
  for (const SimulatedLayout& s : sims) {
    if (!s.error.empty()) break;  // not simulated: ranked last, never chosen
    ChoiceCandidate c;
    c.goodput_per_gpu = s.goodput_per_gpu;
    if (s.after_loss && s.after_loss->error.empty()) c.after_loss_per_gpu = s.after_loss->goodput_per_gpu;
    if (s.staging) c.staged_per_gpu = s.staging->goodput_per_gpu;
    out.push_back(c);
  }
  return out;
}

Status ChooseLayout(const Scenario& scenario, const WorkloadLayoutRequest& q, std::vector<StagingResult> staged,
                    WorkloadLayoutResult& r) {
  r.failure_domain = q.failure_domain;
  r.close_call = q.base.close_call_share;
  r.model_error = q.model_error;
  const ChoiceRules rules{q.base.close_call_share, q.model_error};
  std::vector<ChoiceCandidate> view = ChoiceView(r.simulated);
  if (view.empty()) return Status::Ok();
  const LayoutResult& typical = r.points[r.typical].result;
  const std::vector<size_t> need = NeedsAfterLoss(view, rules);
  RunParallel(need.size(), q, "after-loss", [&](size_t k) {
    SimulatedLayout& c = r.simulated[need[k]];
    const FeasibleLayout* f = FindLayout(typical, c.gpu, c.layout);
    c.after_loss = f ? RunAfterLoss(scenario, *f, q.failure_domain, c.gpus)
                     : AfterLoss{0, 0, 0, std::nullopt, "not at the typical point"};
  });
  view = ChoiceView(r.simulated);
  const std::vector<size_t> order = RankWithResilience(view, rules);
  std::vector<SimulatedLayout> ranked;
  for (const size_t i : order) ranked.push_back(std::move(r.simulated[i]));
  for (size_t i = order.size(); i < r.simulated.size(); ++i) ranked.push_back(std::move(r.simulated[i]));
  r.simulated = std::move(ranked);
  for (size_t i = 0; i < order.size(); ++i) r.simulated[i].simulated_rank = static_cast<int64_t>(i) + 1;
  FP_RETURN_IF_ERROR(AttachStaging(q.staging, std::move(staged), r.simulated));
  r.choice = ChooseCandidate(ChoiceView(r.simulated), rules);
  r.decision = r.choice->chosen;
  return Status::Ok();
}

// Cluster decode tokens/s of a pair at one fleet concurrency; true when `a` leads (ties: a).
struct PairProbe {
  const LayoutRequest& base;
  const Cluster& c;
  const SimulatedLayout& a;
  const SimulatedLayout& b;
  Expected<bool> ALeads(int64_t sequences) const {
    FP_ASSIGN_OR_RETURN(auto fa, OneLayout(AtFleet(base, sequences), c, a.gpu, a.layout));
    FP_ASSIGN_OR_RETURN(auto fb, OneLayout(AtFleet(base, sequences), c, b.gpu, b.layout));
    const double sa = fa ? fa->decode_score : 0;
    const double sb = fb ? fb->decode_score : 0;
    return sa >= sb;
  }
};

Expected<Crossover> FindCrossover(const PairProbe& probe, int64_t most) {
  Crossover x;
  FP_ASSIGN_OR_RETURN(const bool a_low, probe.ALeads(1));
  int64_t lo = 1;
  int64_t hi = 0;
  for (int64_t c = 2; hi == 0; c = std::min(c * 2, most)) {
    FP_ASSIGN_OR_RETURN(const bool a_now, probe.ALeads(c));
    if (a_now != a_low) hi = c;
    else lo = c;
    if (c >= most) break;
  }
  x.searched_to = std::max(lo, hi);
  x.leader_low = a_low ? 0 : 1;  // rewritten by the caller into simulated indices
  if (hi == 0) return x;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    FP_ASSIGN_OR_RETURN(const bool a_mid, probe.ALeads(mid));
    (a_mid != a_low ? hi : lo) = mid;
  }
  x.concurrency = hi;
  return x;
}

// Sequences the fleet of a layout holds at most (the max-throughput point).
int64_t MostSequences(const OperatingPointRanking& most, const SimulatedLayout& s) {
  const FeasibleLayout* f = FindLayout(most.result, s.gpu, s.layout);
  return f ? f->batch * f->dp : 1;
}

Status Crossovers(const LayoutRequest& base, const Cluster& c, WorkloadLayoutResult& r) {
  if (!r.decision) return Status::Ok();
  const size_t a = *r.decision;
  for (size_t b = 0; b < r.simulated.size(); ++b) {
    if (b == a) continue;
    const int64_t most = std::max<int64_t>(
        2, std::max(MostSequences(r.points.back(), r.simulated[a]), MostSequences(r.points.back(), r.simulated[b])));
    FP_ASSIGN_OR_RETURN(Crossover x, FindCrossover(PairProbe{base, c, r.simulated[a], r.simulated[b]}, most));
    x.a = a;
    x.b = b;
    x.leader_low = x.leader_low == 0 ? a : b;
    r.crossovers.push_back(x);
  }
  return Status::Ok();
}

Status CheckRequest(const Scenario& s, const WorkloadLayoutRequest& q) {
  if (q.simulate_top < 1 || q.simulate_top > kMaxSimulateTop) {
    return FlagError("--simulate-top",
                     fmt::format("expected an integer between 1 and {}, got {}", kMaxSimulateTop, q.simulate_top));
  }
  if (!(q.model_error > 0 && q.model_error < 1)) {
    return FlagError("--model-error", fmt::format("expected a share between 0 and 1 (exclusive), got {}", q.model_error));
  }
  if (s.pools.size() > 1) {
    return FlagError("--scenario", fmt::format("{}: layout --scenario varies one pool; the scenario declares {} "
                                               "(deployment.pools)",
                                               s.display_name, s.pools.size()));
  }
  return Status::Ok();
}

Expected<std::vector<OperatingPointRanking>> RankPoints(const Scenario& s, const Cluster& c, const LayoutRequest& base,
                                                        WorkloadFigures& w, std::vector<std::string>& derived) {
  std::vector<OperatingPointRanking> points(3);
  points[0].name = "batch-1";
  points[0].basis = "one sequence in the fleet: the latency of an idle fleet";
  FP_ASSIGN_OR_RETURN(points[0].result, SearchLayouts(AtFleet(base, 1), c));
  std::string ref_basis;
  const FeasibleLayout* ref = Reference(s, points[0].result, ref_basis);
  if (ref != nullptr) {
    w.reference_basis = ref_basis;
    FP_RETURN_IF_ERROR(SolveConcurrency(base, c, *ref, w));
  } else {
    w.concurrency = 1;
  }
  points[1].name = "typical";
  points[1].basis = TypicalBasis(w);
  FP_ASSIGN_OR_RETURN(points[1].result, SearchLayouts(AtFleet(base, w.concurrency), c));
  points[2].name = "max-throughput";
  points[2].basis = fmt::format("the most sequences that fit per replica, at most max_running {}", base.batch);
  LayoutRequest most = base;
  most.batch_rule = BatchRule::kMostThatFit;
  FP_ASSIGN_OR_RETURN(points[2].result, SearchLayouts(most, c));
  derived.push_back(fmt::format("context {}: the workload's mean prompt {:.0f} + output {:.0f} tokens over {} drawn",
                                base.context, w.prompt_tokens, w.output_tokens, w.sampled));
  return points;
}

}  // namespace

Expected<WorkloadLayoutResult> DecideLayoutOnWorkload(const Scenario& scenario, const Cluster& cluster,
                                                      const WorkloadLayoutRequest& request) {
  FP_RETURN_IF_ERROR(CheckRequest(scenario, request));
  // Staging records are read first: a bad file fails before minutes of simulation.
  std::vector<StagingResult> staged;
  for (const StagingInput& in : request.staging) {
    FP_ASSIGN_OR_RETURN(StagingResult one, MeasureStaging(scenario, in));
    staged.push_back(std::move(one));
  }
  WorkloadLayoutResult r;
  r.scenario = scenario.display_name;
  r.scenario_digest = scenario.digest;
  r.seed = scenario.seed;
  FP_ASSIGN_OR_RETURN(r.workload, MeasureWorkload(scenario));
  const LayoutRequest base = BaseRequest(scenario, request, r.workload);
  FP_ASSIGN_OR_RETURN(r.points, RankPoints(scenario, cluster, base, r.workload, r.derived));
  const LayoutResult& typical = r.points[r.typical].result;
  std::vector<const FeasibleLayout*> picks;
  for (const size_t i : typical.decode.order) {
    if (static_cast<int64_t>(picks.size()) == request.simulate_top) break;
    picks.push_back(&typical.feasible[i]);
  }
  if (static_cast<int64_t>(picks.size()) < request.simulate_top && !picks.empty()) {
    r.derived.push_back(fmt::format("simulate-top {}: {} layout(s) fit at the typical point; all of them simulated",
                                    request.simulate_top, picks.size()));
  }
  for (const FeasibleLayout* f : picks) r.simulated.push_back(Candidate(*f, r.points, r.typical));
  SimulateAll(scenario, picks, request, r.simulated);
  RankSimulated(r.simulated);
  FP_RETURN_IF_ERROR(ChooseLayout(scenario, request, std::move(staged), r));
  FP_RETURN_IF_ERROR(Crossovers(base, cluster, r));
  return r;
}

}  // namespace fleetplan
