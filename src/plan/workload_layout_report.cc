// Text and JSON of a layout decided on the workload (workload_layout.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fleetplan/plan/layout_report.h"
#include "fleetplan/plan/workload_layout.h"

namespace fleetplan {
namespace {

std::string Name(const SimulatedLayout& s) {
  return fmt::format("{} × dp {}", LayoutName(s.layout), s.dp);
}

Json Share(const std::optional<double>& v) {
  return v ? Json(RoundForReport(*v, 4)) : Json(nullptr);
}

std::string ShareText(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f}", *v) : "-";
}

Json AfterLossJson(const SimulatedLayout& s, LossDomain d) {
  if (!s.after_loss) return nullptr;
  const AfterLoss& a = *s.after_loss;
  return Json{{"domain", LossDomainName(d)},
              {"replicas", a.replicas},
              {"goodput_rps", RoundForReport(a.goodput_rps, 6)},
              {"goodput_per_gpu", RoundForReport(a.goodput_per_gpu, 6)},
              {"fleet_attainment", Share(a.attainment)},
              {"error", a.error.empty() ? Json(nullptr) : Json(a.error)}};
}

Json StagingJson(const SimulatedLayout& s) {
  if (!s.staging) return nullptr;
  const StagingResult& t = *s.staging;
  return Json{{"spec", t.spec},
              {"path", t.path},
              {"format", t.format},
              {"digest", t.digest},
              {"dp", t.dp},
              {"gpus", t.gpus},
              {"requests", t.requests},
              {"goodput_rps", RoundForReport(t.goodput_rps, 6)},
              {"goodput_per_gpu", RoundForReport(t.goodput_per_gpu, 6)},
              {"fleet_attainment", Share(t.attainment)}};
}

Json SimulatedJson(const SimulatedLayout& s, LossDomain d) {
  Json attainment = Json::object();
  for (const auto& [name, v] : s.class_attainment) attainment[name] = Share(v);
  Json ranks = Json::object();
  for (const auto& [name, rank] : s.static_ranks) ranks[name] = rank > 0 ? Json(rank) : Json(nullptr);
  return Json{{"gpu", s.gpu},
              {"layout", Name(s)},
              {"tp", s.layout.tp},
              {"pp", s.layout.pp},
              {"ep", s.layout.ep},
              {"dp", s.dp},
              {"gpus", s.gpus},
              {"static_rank", s.static_rank},
              {"static_ranks", ranks},
              {"simulated_rank", s.simulated_rank > 0 ? Json(s.simulated_rank) : Json(nullptr)},
              {"goodput_rps", RoundForReport(s.goodput_rps, 6)},
              {"goodput_per_gpu", RoundForReport(s.goodput_per_gpu, 6)},
              {"throughput_rps", RoundForReport(s.throughput_rps, 6)},
              {"attainment", attainment},
              {"fleet_attainment", Share(s.attainment)},
              {"requests", s.requests},
              {"error", s.error.empty() ? Json(nullptr) : Json(s.error)},
              {"replicas_after_loss",
               Json{{"node", s.replicas_after_loss.node},
                    {"rack", s.replicas_after_loss.rack},
                    {"zone", s.replicas_after_loss.zone}}},
              {"after_loss", AfterLossJson(s, d)},
              {"staging", StagingJson(s)}};
}

std::string CrossoverText(const WorkloadLayoutResult& r, const Crossover& x) {
  const SimulatedLayout& low = r.simulated[x.leader_low];
  const SimulatedLayout& other = r.simulated[x.leader_low == x.a ? x.b : x.a];
  if (!x.concurrency) {
    return fmt::format("{} leads {} at every fleet concurrency from 1 to {} sequences", LayoutName(low.layout),
                       LayoutName(other.layout), x.searched_to);
  }
  return fmt::format("{} leads {} below {} sequences across the fleet; {} overtakes it from {}",
                     LayoutName(low.layout), LayoutName(other.layout), *x.concurrency, LayoutName(other.layout),
                     *x.concurrency);
}

Json CrossoverJson(const WorkloadLayoutResult& r, const Crossover& x) {
  return Json{{"a", Name(r.simulated[x.a])},
              {"b", Name(r.simulated[x.b])},
              {"leader_at_1", Name(r.simulated[x.leader_low])},
              {"crossover_concurrency", x.concurrency ? Json(*x.concurrency) : Json(nullptr)},
              {"searched_to", x.searched_to},
              {"text", CrossoverText(r, x)}};
}

Json RankingRows(const LayoutResult& r) {
  Json rows = Json::array();
  for (const size_t i : r.decode.order) {
    const FeasibleLayout& f = r.feasible[i];
    rows.push_back(Json{{"gpu", f.gpu},
                        {"tp", f.layout.tp},
                        {"pp", f.layout.pp},
                        {"ep", f.layout.ep},
                        {"dp", f.dp},
                        {"rank", f.decode_rank},
                        {"batch", f.batch},
                        {"decode_ms", RoundForReport(f.decode.step.millis())},
                        {"decode_tokens_per_s", RoundForReport(f.decode_score)},
                        {"near_miss", f.near_miss() ? Json(NearMissText(f)) : Json(nullptr)}});
  }
  return rows;
}

Json WorkloadJson(const WorkloadFigures& w) {
  return Json{{"closed_loop", w.closed_loop},
              {"rate_per_s", RoundForReport(w.rate_per_s, 6)},
              {"users", w.users},
              {"mean_prompt_tokens", RoundForReport(w.prompt_tokens)},
              {"mean_output_tokens", RoundForReport(w.output_tokens)},
              {"sampled", w.sampled},
              {"reference_layout", LayoutName(w.reference)},
              {"reference_basis", w.reference_basis},
              {"time_in_system_ms", RoundForReport(w.time_in_system.millis())},
              {"concurrency", w.concurrency},
              {"iterations", w.iterations}};
}

// The best-ranked simulated candidate other than the decision.
std::optional<size_t> RunnerUp(const WorkloadLayoutResult& r) {
  if (!r.decision) return std::nullopt;
  for (size_t i = 0; i < r.simulated.size(); ++i) {
    if (i != *r.decision && r.simulated[i].error.empty()) return i;
  }
  return std::nullopt;
}

// The runner-up's goodput per GPU as a share of the decision's (absent without one).
std::optional<double> RunnerUpShare(const WorkloadLayoutResult& r) {
  const std::optional<size_t> runner = RunnerUp(r);
  if (!runner) return std::nullopt;
  const double best = r.simulated[*r.decision].goodput_per_gpu;
  return best > 0 ? r.simulated[*runner].goodput_per_gpu / best : 1.0;
}

bool TooClose(const WorkloadLayoutResult& r) {
  const std::optional<double> share = RunnerUpShare(r);
  return share && *share >= 1.0 - r.close_call;
}

Json Names(const WorkloadLayoutResult& r, const std::vector<size_t>& indices) {
  Json out = Json::array();
  for (const size_t i : indices) out.push_back(Name(r.simulated[i]));
  return out;
}

std::string NameList(const WorkloadLayoutResult& r, const std::vector<size_t>& indices) {
  std::vector<std::string> names;
  for (const size_t i : indices) names.push_back(Name(r.simulated[i]));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string Percent(double share) { return fmt::format("{:.0f}%", 100.0 * share); }

// "; after losing the worst node it keeps 0.3032 per GPU, tp 4 × dp 6 0.1880": the band's
// after-loss figures beside the pick's (empty when the band is the pick alone).
std::string BandText(const WorkloadLayoutResult& r) {
  const CandidateChoice& c = *r.choice;
  const SimulatedLayout& d = r.simulated[c.chosen];
  if (c.band.size() < 2 || !d.after_loss) return "";
  std::vector<std::string> others;
  for (const size_t i : c.band) {
    const SimulatedLayout& o = r.simulated[i];
    if (i == c.chosen || !o.after_loss) continue;
    others.push_back(fmt::format("{} {:.4f}", Name(o), o.after_loss->goodput_per_gpu));
  }
  return fmt::format("; after losing the worst {} it keeps {:.4f} qualified requests/s per GPU, {}",
                     LossDomainName(r.failure_domain), d.after_loss->goodput_per_gpu, fmt::join(others, ", "));
}

// Why the decision is what it is, in one sentence per basis.
std::string DecisionReason(const WorkloadLayoutResult& r) {
  const CandidateChoice& c = *r.choice;
  const std::string domain(LossDomainName(r.failure_domain));
  switch (c.basis) {
    case ChoiceBasis::kGoodput:
      return fmt::format("the most SLO-qualified goodput per GPU of the {} simulated on the workload{}",
                         r.simulated.size(), BandText(r));
    case ChoiceBasis::kResilience:
      return fmt::format("within {} of the goodput leader {}, the most goodput per GPU after losing the worst {}{}",
                         Percent(r.close_call), Name(r.simulated[c.band.front()]), domain, BandText(r));
    case ChoiceBasis::kStaging:
      return fmt::format("the model cannot separate {} (within its {} error on goodput and after losing a {}); the "
                         "staging runs measured this one best",
                         NameList(r, [&] {
                           std::vector<size_t> all = {c.chosen};
                           for (const size_t i : c.indistinguishable) all.push_back(i);
                           return all;
                         }()),
                         Percent(r.model_error), domain);
    case ChoiceBasis::kNeedsStaging:
      return fmt::format("provisional: the model cannot separate it from {} (within its {} error on goodput and after "
                         "losing a {}); stage {} and pass --staging LAYOUT=RECORDS",
                         NameList(r, c.indistinguishable), Percent(r.model_error), domain, NameList(r, c.needs_staging));
  }
  return "";
}

Json DecisionJson(const WorkloadLayoutResult& r) {
  if (!r.decision || !r.choice) return nullptr;
  const SimulatedLayout& d = r.simulated[*r.decision];
  const CandidateChoice& c = *r.choice;
  const std::optional<double> share = RunnerUpShare(r);
  return Json{{"layout", Name(d)},
              {"status", c.basis == ChoiceBasis::kNeedsStaging ? "needs-staging" : "chosen"},
              {"basis", ChoiceBasisName(c.basis)},
              {"failure_domain", LossDomainName(r.failure_domain)},
              {"close_call", RoundForReport(r.close_call, 6)},
              {"model_error", RoundForReport(r.model_error, 6)},
              {"close_band", Names(r, c.band)},
              {"indistinguishable", Names(r, c.indistinguishable)},
              {"needs_staging", Names(r, c.needs_staging)},
              {"runner_up_share", share ? Json(RoundForReport(*share, 4)) : Json(nullptr)},
              {"too_close_to_call", TooClose(r)},
              {"gpu", d.gpu},
              {"tp", d.layout.tp},
              {"pp", d.layout.pp},
              {"ep", d.layout.ep},
              {"dp", d.dp},
              {"goodput_per_gpu", RoundForReport(d.goodput_per_gpu, 6)},
              {"static_rank", d.static_rank},
              {"reason", DecisionReason(r)}};
}

std::string PointText(const OperatingPointRanking& p, int64_t rows) {
  std::string out = fmt::format("  {}: {}\n", p.name, p.basis);
  const LayoutResult& r = p.result;
  const size_t shown = std::min(r.decode.order.size(), static_cast<size_t>(std::max<int64_t>(rows, 1)));
  for (size_t pos = 0; pos < shown; ++pos) {
    const FeasibleLayout& f = r.feasible[r.decode.order[pos]];
    out += fmt::format("    {:>3}  {:<22} {:>5} seq/replica {:>9.2f} ms/step {:>11.0f} tok/s{}\n", pos + 1,
                       fmt::format("{} × dp {}", LayoutName(f.layout), f.dp), f.batch, f.decode.step.millis(),
                       f.decode_score, f.near_miss() ? "  near miss: " + NearMissText(f) : "");
  }
  if (r.decode.order.size() > shown) out += fmt::format("    ... {} more (--json lists every one)\n", r.decode.order.size() - shown);
  if (r.feasible.empty()) out += "    no layout fits one replica\n";
  return out;
}

// "2/3 0.2017": replicas left of dp and goodput per GPU after the loss ("2/3" alone when
// the loss was not simulated: outside the band).
std::string AfterLossText(const SimulatedLayout& s, LossDomain d) {
  const int64_t left = d == LossDomain::kNode   ? s.replicas_after_loss.node
                       : d == LossDomain::kRack ? s.replicas_after_loss.rack
                                                   : s.replicas_after_loss.zone;
  std::string out = fmt::format("{}/{}", left, s.dp);
  if (s.after_loss && s.after_loss->error.empty()) out += fmt::format(" {:.4f}", s.after_loss->goodput_per_gpu);
  if (s.after_loss && !s.after_loss->error.empty()) out += " failed";
  return out;
}

std::string SimulatedText(const WorkloadLayoutResult& r) {
  std::vector<std::string> classes;
  if (!r.simulated.empty()) {
    for (const auto& [name, v] : r.simulated.front().class_attainment) classes.push_back(name);
  }
  bool staged = false;
  for (const SimulatedLayout& s : r.simulated) staged = staged || s.staging.has_value();
  const std::string loss = fmt::format("{} loss", LossDomainName(r.failure_domain));
  std::string out = fmt::format("  {:>3} {:>6}  {:<22} {:>4} {:>10} {:>9} {:>7} {:>13}", "sim", "static", "layout", "GPUs",
                                "goodput/s", "per GPU", "SLO ok", loss);
  if (staged) out += fmt::format(" {:>9}", "staged");
  for (const std::string& c : classes) out += fmt::format(" {:>12}", c);
  out += "\n";
  for (const SimulatedLayout& s : r.simulated) {
    if (!s.error.empty()) {
      out += fmt::format("  {:>3} {:>6}  {:<22} not simulated: {}\n", "-", s.static_rank, Name(s), s.error);
      continue;
    }
    out += fmt::format("  {:>3} {:>6}  {:<22} {:>4} {:>10.3f} {:>9.4f} {:>7} {:>13}", s.simulated_rank, s.static_rank,
                       Name(s), s.gpus, s.goodput_rps, s.goodput_per_gpu, ShareText(s.attainment),
                       AfterLossText(s, r.failure_domain));
    if (staged) out += fmt::format(" {:>9}", s.staging ? fmt::format("{:.4f}", s.staging->goodput_per_gpu) : "-");
    for (const std::string& c : classes) {
      const auto it = s.class_attainment.find(c);
      out += fmt::format(" {:>12}", it == s.class_attainment.end() ? "-" : ShareText(it->second));
    }
    out += "\n";
  }
  out += fmt::format("  ({}: replicas left of dp after the worst single {} loss, and goodput per GPU of the whole fleet "
                     "then, simulated within {} of the leader{})\n",
                     loss, LossDomainName(r.failure_domain), Percent(std::max(r.close_call, r.model_error)),
                     staged ? "; staged: measured goodput per GPU of the staging run" : "");
  return out;
}

std::string DecisionText(const WorkloadLayoutResult& r) {
  if (!r.decision || !r.choice) return "  none: no candidate could be simulated\n";
  const SimulatedLayout& d = r.simulated[*r.decision];
  const CandidateChoice& c = *r.choice;
  std::string out;
  if (c.basis == ChoiceBasis::kNeedsStaging) out += "  NEEDS STAGING before choosing\n";
  out += fmt::format("  {}: {:.4f} qualified requests/s per GPU, attainment {} (static rank {} at the typical point)\n",
                     Name(d), d.goodput_per_gpu, ShareText(d.attainment), d.static_rank);
  if (const std::optional<size_t> runner = RunnerUp(r)) {
    const double share = *RunnerUpShare(r);
    out += fmt::format("  the runner-up {} reaches {:.1f}% of its goodput per GPU{}\n", Name(r.simulated[*runner]),
                       100.0 * share, TooClose(r) ? fmt::format(" (within the {} close call)", Percent(r.close_call)) : "");
  }
  out += "  " + DecisionReason(r) + "\n";
  return out;
}

std::string HeaderText(const WorkloadLayoutResult& r, const Cluster& cluster) {
  const LayoutRequest& q = r.points[r.typical].result.request;
  const WorkloadFigures& w = r.workload;
  std::string out = fmt::format("fleetplan layout: {} on {} ({} GPUs, {} healthy), scenario {} (seed {}), runtime {}\n",
                                q.model.name, cluster.name(), cluster.gpus(), cluster.healthy_gpus(), r.scenario,
                                r.seed, q.runtime);
  const std::string arrivals =
      w.closed_loop ? fmt::format("closed loop, {} users", w.users) : fmt::format("{:.3g} arrivals/s", w.rate_per_s);
  out += fmt::format("workload: {}; mean prompt {:.0f} + output {:.0f} tokens ({} drawn); W {:.0f} ms on {} ({})\n",
                     arrivals, w.prompt_tokens, w.output_tokens, w.sampled, w.time_in_system.millis(),
                     LayoutName(w.reference), w.reference_basis);
  out += fmt::format("operating point of the candidates: {}\n", OperatingPointText(q));
  return out;
}

}  // namespace

std::string WorkloadLayoutText(const WorkloadLayoutResult& r, const Cluster& cluster, int64_t rows) {
  std::string out = HeaderText(r, cluster);
  out += "\nStatic decode ranking at each operating point (cluster tokens/s, layout.h's model):\n";
  for (const OperatingPointRanking& p : r.points) out += PointText(p, rows);
  out += fmt::format("\nSimulated on the scenario's workload (top {} of the typical point; by SLO-qualified goodput "
                     "per GPU):\n",
                     r.simulated.size());
  out += SimulatedText(r);
  if (!r.crossovers.empty()) {
    out += "\nCrossovers (static decode model, by fleet concurrency):\n";
    for (const Crossover& x : r.crossovers) out += "  " + CrossoverText(r, x) + "\n";
  }
  out += "\nDecision:\n" + DecisionText(r);
  const LayoutResult& typical = r.points[r.typical].result;
  out += fmt::format("\nRejected at the typical point: {} (--json lists every one with its reason)\n",
                     typical.rejected.size());
  std::vector<std::string> derived = typical.derived;
  derived.insert(derived.end(), r.derived.begin(), r.derived.end());
  if (!derived.empty()) {
    out += "\nDerived:\n";
    for (const std::string& line : derived) out += "  " + line + "\n";
  }
  return out;
}

Json WorkloadLayoutJson(const WorkloadLayoutResult& r, const Cluster& cluster) {
  const LayoutResult& typical = r.points[r.typical].result;
  Json j = LayoutReportJson(typical, cluster);
  j["scenario"] = {{"name", r.scenario}, {"digest", r.scenario_digest}, {"seed", r.seed}};
  j["workload"] = WorkloadJson(r.workload);
  Json points = Json::array();
  for (const OperatingPointRanking& p : r.points) {
    points.push_back(Json{{"name", p.name},
                          {"basis", p.basis},
                          {"operating_point", OperatingPointJson(p.result.request)},
                          {"ranking", RankingRows(p.result)}});
  }
  j["operating_points"] = std::move(points);
  Json sims = Json::array();
  for (const SimulatedLayout& s : r.simulated) sims.push_back(SimulatedJson(s, r.failure_domain));
  j["simulated"] = std::move(sims);
  Json crossovers = Json::array();
  for (const Crossover& x : r.crossovers) crossovers.push_back(CrossoverJson(r, x));
  j["crossovers"] = std::move(crossovers);
  j["decision"] = DecisionJson(r);
  for (const std::string& line : r.derived) j["derived"].push_back(line);
  return j;
}

}  // namespace fleetplan
