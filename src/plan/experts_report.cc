// `fleetplan experts` analysis and its reports (experts_report.h).
#include "fleetplan/core/flag_error.h"
#include "fleetplan/plan/experts_report.h"

#include <fmt/format.h>

#include <numeric>
#include <utility>

#include "fleetplan/core/units_parse.h"
#include "fleetplan/core/wording.h"

namespace fleetplan {
namespace {

Json PlacementJson(const ExpertPlacement& p, const ExpertLoad& l) {
  Json replicas = Json::object();
  for (size_t e = 0; e < p.expert_ranks.size(); ++e) {
    if (p.expert_ranks[e].size() > 1) replicas[std::to_string(e)] = p.expert_ranks[e];
  }
  return Json{{"loads", l.loads},
              {"max_load", l.max_load},
              {"mean_load", RoundForReport(l.mean_load)},
              {"imbalance", RoundForReport(l.imbalance)},
              {"mean_step_max_load", RoundForReport(l.mean_step_max_load)},
              {"placement", p.rank_experts},
              {"replicas", std::move(replicas)},
              {"slots_per_rank", p.slots_per_rank},
              {"dispatch_bytes", l.dispatch_bytes.count()},
              {"combine_bytes", l.combine_bytes.count()}};
}

std::string LoadLine(const char* name, const ExpertLoad& l) {
  return fmt::format("  {:<11} loads [{}]  max {}  mean {:.1f}  max/mean {:.3f}  dispatch {} + combine {}\n", name,
                     fmt::join(l.loads, ", "), l.max_load, l.mean_load, l.imbalance, FormatBytes(l.dispatch_bytes),
                     FormatBytes(l.combine_bytes));
}

std::string PlacementLines(const ExpertPlacement& p) {
  std::string out;
  for (size_t r = 0; r < p.rank_experts.size(); ++r) {
    out += fmt::format("    rank {}: experts {}\n", r, fmt::join(p.rank_experts[r], ", "));
  }
  return out;
}

}  // namespace

Expected<ExpertsResult> AnalyzeExperts(const ExpertsRequest& request) {
  FP_RETURN_IF_ERROR(ValidateExpertShape(request.counts.experts(), request.ranks, request.redundant));
  int64_t assignments = 0;
  for (const int64_t count : request.counts.totals) {
    if (count < 0 || count > kMaxAssignments - assignments) {
      return FlagValueError("--counts", fmt::format("the counts sum to more than {} routed assignments", kMaxAssignments));
    }
    assignments += count;
  }
  if (request.bytes_per_assignment.count() < 0 || request.bytes_per_assignment.count() > kMaxAssignmentBytes) {
    return FlagValueError("--hidden", fmt::format("expected at most {} bytes per assignment, got {}", kMaxAssignmentBytes,
                                    request.bytes_per_assignment.count()));
  }
  ExpertsResult r;
  r.request = request;
  r.contiguous = ContiguousPlacement(request.counts.experts(), request.ranks);
  r.balanced = BalancedPlacement(request.counts.totals, request.ranks, request.redundant);
  r.contiguous_load = LoadOf(r.contiguous, request.counts, request.bytes_per_assignment);
  r.balanced_load = LoadOf(r.balanced, request.counts, request.bytes_per_assignment);
  if (request.redundant > 0) {
    // Redundant copies need memory on every rank: say how much, when the model is known.
    const int64_t extra = r.balanced.slots_per_rank - r.contiguous.slots_per_rank;
    std::string memory;
    if (request.costs) {
      const Bytes per_rank = request.costs->expert_bytes * (extra * request.costs->moe_layers);
      memory = fmt::format("; {} more per rank ({} × {} MoE layers × {})", FormatBytes(per_rank), extra,
                           request.costs->moe_layers, FormatBytes(request.costs->expert_bytes));
    }
    r.request.derived.push_back(fmt::format("{} redundant expert copies: {} slots per rank instead of {}{}",
                                            request.redundant, r.balanced.slots_per_rank, r.contiguous.slots_per_rank,
                                            memory));
  }
  ExpertMapRegistry registry(r.contiguous);
  Expected<int64_t> generation = registry.Propose(r.balanced);
  FP_ASSERT(generation.ok());  // nothing pending, same rank count
  r.update_generation = *generation;
  r.ranks_to_acknowledge = static_cast<int64_t>(registry.Waiting().size());
  if (request.costs) {
    r.price = PriceUpdate(r.contiguous, r.balanced, r.contiguous_load, r.balanced_load, *request.costs);
  }
  return r;
}

std::string ExpertsReportText(const ExpertsResult& r) {
  const ExpertsRequest& q = r.request;
  const int64_t assignments = std::accumulate(q.counts.totals.begin(), q.counts.totals.end(), int64_t{0});
  std::string out = fmt::format("fleetplan experts: {} over {}, {} in {}\n", Counted(q.counts.experts(), "expert"),
                                Counted(q.ranks, "rank"), Counted(assignments, "assignment"),
                                Counted(q.counts.step_count, "step"));
  out += "load = assignments a rank serves (the MoE layer waits for the busiest rank)\n\n";
  out += LoadLine("contiguous", r.contiguous_load);
  out += LoadLine("balanced", r.balanced_load);
  out += "\nBalanced placement:\n" + PlacementLines(r.balanced);
  out += fmt::format(
      "\nUpdate: the balanced map is generation {}; new batches use it once all {} ranks acknowledge; "
      "batches in flight finish under generation 1.\n",
      r.update_generation, r.ranks_to_acknowledge);
  if (!r.price) {
    out += "  not priced: --model and --gpu give the expert size and the time an assignment takes\n";
  } else {
    const UpdatePrice& p = *r.price;
    out += fmt::format(
        "  copies {} expert(s), {} in all, {} on the busiest rank; saves {} per step on the busiest rank\n",
        p.copies_loaded, FormatBytes(p.copy_bytes), FormatDuration(p.copy_time), FormatDuration(p.saved_per_step));
    if (p.break_even_steps) {
      out += fmt::format("  break-even after {} step(s); horizon {} steps: {}\n", *p.break_even_steps,
                         q.costs->horizon_steps, p.worth ? "worth it" : "not worth it");
    } else {
      out += "  saves nothing per step: not worth it\n";
    }
  }
  if (!q.derived.empty()) {
    out += "\nDerived:\n";
    for (const std::string& line : q.derived) out += "  " + line + "\n";
  }
  return out;
}

Json ExpertsReportJson(const ExpertsResult& r) {
  const ExpertsRequest& q = r.request;
  Json j;
  j["experts"] = q.counts.experts();
  j["ranks"] = q.ranks;
  j["steps"] = q.counts.step_count;
  j["redundant_experts"] = q.redundant;
  j["contiguous"] = PlacementJson(r.contiguous, r.contiguous_load);
  j["balanced"] = PlacementJson(r.balanced, r.balanced_load);
  j["dispatch_bytes"] = {{"contiguous", r.contiguous_load.dispatch_bytes.count()},
                         {"balanced", r.balanced_load.dispatch_bytes.count()},
                         {"bytes_per_assignment", q.bytes_per_assignment.count()}};
  Json update = {{"generation", r.update_generation},
                 {"ranks_to_acknowledge", r.ranks_to_acknowledge},
                 {"priced", r.price.has_value()}};
  if (r.price) {
    const UpdatePrice& p = *r.price;
    update["copies_loaded"] = p.copies_loaded;
    update["copy_bytes"] = p.copy_bytes.count();
    update["copy_ms"] = RoundForReport(p.copy_time.millis());
    update["saved_ms_per_step"] = RoundForReport(p.saved_per_step.millis());
    update["break_even_steps"] = p.break_even_steps ? Json(*p.break_even_steps) : Json(nullptr);
    update["horizon_steps"] = q.costs->horizon_steps;
    update["worth"] = p.worth;
  } else {
    update["worth"] = nullptr;
  }
  j["update"] = std::move(update);
  j["derived"] = q.derived;
  return j;
}

}  // namespace fleetplan
