// Text and JSON of a layout search (layout_report.h).
#include "fleetplan/plan/layout_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/core/wording.h"

namespace fleetplan {
namespace {

double Ms(Duration d) {
  return RoundForReport(d.millis());
}

std::string Fixed(double v, int decimals) {
  return fmt::format("{:.{}f}", v, decimals);
}

std::string LinkText(const std::optional<LinkSpec>& l) {
  return l ? fmt::format("{} ({})", l->name, FormatBandwidth(l->bandwidth)) : "-";
}

Json LinkJson(const std::optional<LinkSpec>& l) {
  if (!l) return nullptr;
  return Json{
      {"name", l->name}, {"bandwidth_bytes_per_s", RoundForReport(l->bandwidth)}, {"latency_ns", l->latency.ns()}};
}

Json PhaseJson(const PhaseTiming& t) {
  return Json{{"tokens", t.tokens},
              {"microbatches", t.microbatches},
              {"tokens_per_microbatch", t.tokens_per_microbatch},
              {"step_ms", Ms(t.step)},
              {"compute_ms", Ms(t.compute)},
              {"tp_all_reduce_ms", Ms(t.tp_all_reduce)},
              {"ep_all_to_all_ms", Ms(t.ep_all_to_all)},
              {"pp_handoff_ms", Ms(t.pp_handoff)},
              {"pp_bubble_ms", Ms(t.pp_bubble)},
              {"comm_ms", Ms(t.comm())},
              {"tp_all_reduce_bytes", t.tp_message.count()},
              {"pp_boundary_bytes_per_token", t.pp_boundary_per_token.count()},
              {"pp_boundary_bytes_per_microbatch", t.pp_boundary_per_microbatch.count()},
              {"routed_assignments", t.routed_assignments},
              {"ep_dispatch_bytes", t.ep_dispatch_bytes.count()},
              {"ep_combine_bytes", t.ep_combine_bytes.count()},
              {"tokens_per_s_per_gpu", RoundForReport(t.tokens_per_s_per_gpu)}};
}

Json NearMissJson(const FeasibleLayout& f) {
  if (!f.near_miss()) return nullptr;
  return Json{{"fits_sequences", f.batch}, {"asked_sequences", f.batch_asked}, {"text", NearMissText(f)}};
}

Json FeasibleJson(const FeasibleLayout& f) {
  return Json{
      {"gpu", f.gpu},
      {"tp", f.layout.tp},
      {"pp", f.layout.pp},
      {"ep", f.layout.ep},
      {"dp", f.dp},
      {"replicas", f.replicas},
      {"gpus_per_replica", f.layout.gpus()},
      {"stranded_gpus", f.stranded_gpus},
      {"bytes_per_rank", f.bytes_per_rank.count()},
      {"budget_per_rank", f.budget_per_rank.count()},
      {"max_sequences", f.max_sequences},
      {"batch", f.batch},
      {"batch_asked", f.batch_asked},
      {"near_miss", NearMissJson(f)},
      {"prefill_ms", Ms(f.prefill.step)},
      {"decode_ms", Ms(f.decode.step)},
      {"comm_ms", {{"prefill", Ms(f.prefill.comm())}, {"decode", Ms(f.decode.comm())}}},
      {"tokens_per_s_per_gpu",
       {{"prefill", RoundForReport(f.prefill.tokens_per_s_per_gpu)},
        {"decode", RoundForReport(f.decode.tokens_per_s_per_gpu)}}},
      {"prefill_rank", f.prefill_rank},
      {"decode_rank", f.decode_rank},
      {"tp_link", LinkJson(f.tp_link)},
      {"pp_link", LinkJson(f.pp_link)},
      {"tp_over_slow_link", f.tp_over_slow_link},
      {"replicas_after_loss", {{"node", f.after_loss.node}, {"rack", f.after_loss.rack}, {"zone", f.after_loss.zone}}},
      {"prefill", PhaseJson(f.prefill)},
      {"decode", PhaseJson(f.decode)}};
}

Json Brief(const FeasibleLayout& f, double score, double best) {
  return Json{{"gpu", f.gpu},
              {"tp", f.layout.tp},
              {"pp", f.layout.pp},
              {"ep", f.layout.ep},
              {"tokens_per_s", RoundForReport(score)},
              {"share_of_best", best > 0 ? RoundForReport(score / best, 4) : 0.0}};
}

Json RankingJson(const LayoutResult& r, const PhaseRanking& ranking, bool decode) {
  auto score = [&](size_t i) { return decode ? r.feasible[i].decode_score : r.feasible[i].prefill_score; };
  Json j{{"threshold", r.request.close_call_share}, {"best", nullptr}, {"too_close_to_call", Json::array()}};
  if (ranking.order.empty()) return j;
  const double best = score(ranking.order.front());
  j["best"] = Brief(r.feasible[ranking.order.front()], best, best);
  for (const size_t i : ranking.close) j["too_close_to_call"].push_back(Brief(r.feasible[i], score(i), best));
  return j;
}

std::string GpuLabel(const FeasibleLayout& f, bool many_types) {
  return many_types ? fmt::format(" @{}", f.gpu) : "";
}

bool ManyTypes(const LayoutResult& r) {
  std::set<std::string> types;
  for (const FeasibleLayout& f : r.feasible) types.insert(f.gpu);
  for (const RejectedLayout& x : r.rejected) types.insert(x.gpu);
  return types.size() > 1;
}

std::string NearMisses(const LayoutResult& r) {
  std::string out;
  const bool many = ManyTypes(r);
  for (const size_t i : r.decode.order) {
    const FeasibleLayout& f = r.feasible[i];
    if (!f.near_miss()) continue;
    out += fmt::format("  {}{}: {} at {} tokens (timed at {}; ranked after the layouts that fit)\n",
                       LayoutName(f.layout), GpuLabel(f, many), NearMissText(f), r.request.context, f.batch);
  }
  if (out.empty()) return out;
  return "\nNear misses (one replica fits, but fewer sequences than the operating point asks):\n" + out;
}

std::string Table(const LayoutResult& r, const PhaseRanking& ranking, bool decode, int64_t rows) {
  std::string out = fmt::format("  {:>4}  {:<18} {:>3} {:>5} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>11}  {}\n",
                                "rank", "layout", "dp", "GiB/r", "step ms", "compute", "tp a-r", "ep a2a", "pp hand",
                                "bubble", "comm", "tok/s/GPU", "tp link / pp link");
  const bool many = ManyTypes(r);
  const size_t shown = std::min(ranking.order.size(), static_cast<size_t>(std::max<int64_t>(rows, 1)));
  for (size_t pos = 0; pos < shown; ++pos) {
    const FeasibleLayout& f = r.feasible[ranking.order[pos]];
    const PhaseTiming& t = decode ? f.decode : f.prefill;
    out += fmt::format("  {:>4}  {:<18} {:>3} {:>5} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>11}  {} / {}\n",
                       pos + 1, LayoutName(f.layout) + GpuLabel(f, many), f.dp, Fixed(f.bytes_per_rank.gib(), 1),
                       Fixed(t.step.millis(), 2), Fixed(t.compute.millis(), 2), Fixed(t.tp_all_reduce.millis(), 2),
                       Fixed(t.ep_all_to_all.millis(), 2), Fixed(t.pp_handoff.millis(), 2),
                       Fixed(t.pp_bubble.millis(), 2), Fixed(t.comm().millis(), 2), Fixed(t.tokens_per_s_per_gpu, 1),
                       LinkText(f.tp_link), LinkText(f.pp_link));
  }
  if (ranking.order.size() > shown)
    out += fmt::format("  ... {} more (--json lists every one)\n", ranking.order.size() - shown);
  return out;
}

// What the best-ranked pipelined layout hands over at each stage boundary.
std::string PipelineBoundary(const LayoutResult& r) {
  for (const size_t i : r.decode.order) {
    const FeasibleLayout& f = r.feasible[i];
    if (f.layout.pp <= 1) continue;
    const auto mb = [](const PhaseTiming& t) {
      return fmt::format("{} per microbatch of {} tokens", FormatBytes(t.pp_boundary_per_microbatch),
                         t.tokens_per_microbatch);
    };
    return fmt::format("  pipeline boundary of {}: {} per token (hidden states and residual); decode {}, prefill "
                       "{}\n",
                       LayoutName(f.layout), FormatBytes(f.decode.pp_boundary_per_token), mb(f.decode),
                       mb(f.prefill));
  }
  return "";
}

std::string Verdict(const LayoutResult& r, const PhaseRanking& ranking, bool decode) {
  const char* phase = decode ? "decode" : "prefill";
  if (ranking.order.empty()) return fmt::format("  {}: no feasible layout (see rejected)\n", phase);
  auto score = [&](size_t i) { return decode ? r.feasible[i].decode_score : r.feasible[i].prefill_score; };
  const bool many = ManyTypes(r);
  auto name = [&](const FeasibleLayout& f) { return LayoutName(f.layout) + GpuLabel(f, many); };
  const FeasibleLayout& best = r.feasible[ranking.order.front()];
  const double best_score = score(ranking.order.front());
  std::string out =
      fmt::format("  {}: {} × dp {} gives {:.0f} tokens/s on the cluster", phase, name(best), best.dp, best_score);
  if (ranking.close.empty()) {
    if (ranking.order.size() > 1) {
      const size_t second = ranking.order[1];
      out +=
          fmt::format("; the runner-up {} reaches {:.1f}% of it: a clear call (threshold {:.0f}%)",
                      name(r.feasible[second]), 100.0 * score(second) / best_score, 100.0 * r.request.close_call_share);
    }
    return out + "\n";
  }
  std::vector<std::string> close;
  for (const size_t i : ranking.close) {
    close.push_back(fmt::format("{} ({:.1f}%)", name(r.feasible[i]), 100.0 * score(i) / best_score));
  }
  return out + fmt::format("; too close to call without a measurement (within {:.0f}%): {}\n",
                           100.0 * r.request.close_call_share, fmt::join(close, ", "));
}

}  // namespace

std::string LayoutName(const Parallelism& p) {
  std::string s = fmt::format("tp {} × pp {}", p.tp, p.pp);
  if (p.ep > 1) s += fmt::format(" × ep {}", p.ep);
  return s;
}

std::string NearMissText(const FeasibleLayout& f) {
  return fmt::format("fits {} of {} sequences", f.batch, f.batch_asked);
}

std::string OperatingPointText(const LayoutRequest& q) {
  switch (q.batch_rule) {
    case BatchRule::kPerReplica:
      return fmt::format("decode {} sequences per replica at {} tokens", q.batch, q.context);
    case BatchRule::kFleetConcurrency:
      return fmt::format("decode {} sequences across the fleet (ceil({} / dp) per replica) at {} tokens",
                         q.fleet_sequences, q.fleet_sequences, q.context);
    case BatchRule::kMostThatFit:
      return fmt::format("decode the most sequences that fit per replica (at most {}) at {} tokens", q.batch,
                         q.context);
  }
  return "";
}

Json OperatingPointJson(const LayoutRequest& q) {
  Json j{{"rule", std::string(BatchRuleName(q.batch_rule))},
         {"context", q.context},
         {"prefill_tokens", q.prefill_tokens},
         {"text", OperatingPointText(q)}};
  if (q.batch_rule == BatchRule::kFleetConcurrency) {
    j["fleet_sequences"] = q.fleet_sequences;
  } else {
    j["batch"] = q.batch;
  }
  return j;
}

std::string LayoutReportText(const LayoutResult& r, const Cluster& cluster, int64_t rows) {
  const LayoutRequest& q = r.request;
  std::string out =
      fmt::format("fleetplan layout: {} on {} ({}, {} healthy, {}), runtime {}\n", q.model.name, cluster.name(),
                  Counted(cluster.gpus(), "GPU"), cluster.healthy_gpus(),
                  Counted(static_cast<int64_t>(cluster.nodes().size()), "node"), q.runtime);
  out += fmt::format(
      "operating point: {}; prefill {} tokens; microbatches {} (pp > 1); "
      "weights {}, KV {}; all-reduce {}\n",
      OperatingPointText(q), q.prefill_tokens, q.microbatches, DTypeName(q.weight_dtype), DTypeName(q.kv_dtype),
      AllReduceAlgorithmName(q.all_reduce));
  out += "step = compute + tp all-reduce + ep all-to-all + pp handoffs + pp bubble (docs/layout.md)\n\n";
  out += fmt::format("Decode ranking ({} feasible, by cluster tokens/s):\n", r.feasible.size());
  out += Table(r, r.decode, true, rows);
  out += NearMisses(r);
  out += "\nPrefill ranking (by cluster tokens/s):\n";
  out += Table(r, r.prefill, false, rows);
  out += "\nVerdict:\n";
  out += Verdict(r, r.decode, true);
  out += Verdict(r, r.prefill, false);
  if (!r.feasible.empty()) {
    const FeasibleLayout& best = r.feasible.front();
    out += fmt::format("  losing one node leaves {} of {} replicas of {}; one rack {}; one zone {}\n",
                       best.after_loss.node, best.replicas, LayoutName(best.layout), best.after_loss.rack,
                       best.after_loss.zone);
  }
  out += PipelineBoundary(r);
  out += fmt::format("\nRejected ({}):\n", r.rejected.size());
  const bool many = ManyTypes(r);
  const size_t shown = std::min(r.rejected.size(), static_cast<size_t>(kLayoutTextRejected));
  for (size_t i = 0; i < shown; ++i) {
    const RejectedLayout& x = r.rejected[i];
    out += fmt::format("  {}{}: {}\n", LayoutName(x.layout), many ? " @" + x.gpu : "", x.reason);
  }
  if (r.rejected.size() > shown)
    out += fmt::format("  ... {} more (--json lists every one)\n", r.rejected.size() - shown);
  if (!r.derived.empty()) {
    out += "\nDerived:\n";
    for (const std::string& line : r.derived) out += "  " + line + "\n";
  }
  return out;
}

Json LayoutReportJson(const LayoutResult& r, const Cluster& cluster) {
  const LayoutRequest& q = r.request;
  Json j;
  j["model"] = q.model.name;
  j["cluster"] = {{"name", cluster.name()},
                  {"gpus", cluster.gpus()},
                  {"healthy_gpus", cluster.healthy_gpus()},
                  {"nodes", cluster.nodes().size()}};
  j["inputs"] = {{"runtime", q.runtime},
                 {"weight_dtype", std::string(DTypeName(q.weight_dtype))},
                 {"kv_dtype", std::string(DTypeName(q.kv_dtype))},
                 {"context", q.context},
                 {"batch", q.batch},
                 {"prefill_tokens", q.prefill_tokens},
                 {"microbatches", q.microbatches},
                 {"all_reduce", std::string(AllReduceAlgorithmName(q.all_reduce))},
                 {"allow_cross_node_tp", q.allow_cross_node_tp},
                 {"gpu_memory_utilization", q.gpu_memory_utilization},
                 {"operating_point", OperatingPointJson(q)}};
  Json feasible = Json::array();
  for (const FeasibleLayout& f : r.feasible) feasible.push_back(FeasibleJson(f));
  j["feasible"] = std::move(feasible);
  Json rejected = Json::array();
  for (const RejectedLayout& x : r.rejected) {
    rejected.push_back(
        {{"gpu", x.gpu}, {"tp", x.layout.tp}, {"pp", x.layout.pp}, {"ep", x.layout.ep}, {"reason", x.reason}});
  }
  j["rejected"] = std::move(rejected);
  j["ranking"] = {{"prefill", RankingJson(r, r.prefill, false)}, {"decode", RankingJson(r, r.decode, true)}};
  j["derived"] = r.derived;
  return j;
}

}  // namespace fleetplan
