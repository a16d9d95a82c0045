// `fleetplan place`: places GPU groups onto a cluster that already has allocations, with one
// policy or all of them side by side, and reports what each leaves fragmented.
// Parses flags, calls plan/placement (a pure plan; nothing is committed), prints.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "fleetplan/core/flag_error.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/placement.h"
#include "fleetplan/plan/placement_report.h"

namespace fleetplan::cli {
namespace {

struct PlaceFlags {
  std::string cluster;
  std::string requests;
  std::string sizes;
  std::string policy = std::string(kDefaultPlacementPolicy);
  CLI::Option* requests_option = nullptr;
  CLI::Option* sizes_option = nullptr;
  std::vector<std::string> without;
  std::vector<std::string> catalogs;
  bool compare = false;
  bool json = false;
};

Expected<Catalog> LoadCatalog(const std::vector<std::string>& paths) {
  if (paths.empty()) return Catalog::Builtin();
  return Catalog::WithUserFiles(paths);
}

// The chosen policy first, then (with --compare) every other one in name order.
Expected<std::vector<std::unique_ptr<PlacementPolicy>>> Policies(const PlaceFlags& f) {
  std::vector<std::unique_ptr<PlacementPolicy>> out;
  Expected<std::unique_ptr<PlacementPolicy>> chosen = MakePlacementPolicy(f.policy);
  if (!chosen.ok()) return FlagValueError("--policy", chosen.status().message());
  out.push_back(std::move(chosen).value());
  if (!f.compare) return out;
  for (const std::string& name : PlacementPolicyNames()) {
    if (name == f.policy) continue;
    Expected<std::unique_ptr<PlacementPolicy>> other = MakePlacementPolicy(name);
    FP_ASSERT(other.ok());  // a listed name
    out.push_back(std::move(other).value());
  }
  return out;
}

Status RunPlace(const PlaceFlags& f, std::ostream& out) {
  const bool has_file = f.requests_option->count() > 0;
  const bool has_sizes = f.sizes_option->count() > 0;
  if (!has_file && !has_sizes) {
    return UsageError("fleetplan place: give the groups to place: --requests FILE and/or --sizes 1,2,4");
  }
  FP_ASSIGN_OR_RETURN(const Catalog catalog, LoadCatalog(f.catalogs));
  FP_ASSIGN_OR_RETURN(Cluster cluster, LoadCluster(f.cluster, catalog, "--cluster"));
  FP_ASSIGN_OR_RETURN(cluster, ApplyRemovals(std::move(cluster), f.without, "--without"));
  PlacementInput input;
  if (has_file) {
    FP_ASSIGN_OR_RETURN(input, ReadPlacementFile(f.requests, cluster));
  }
  if (has_sizes) {
    FP_ASSIGN_OR_RETURN(const std::vector<GroupRequest> more, ParseGroupSizes(f.sizes, "--sizes"));
    input.requests.insert(input.requests.end(), more.begin(), more.end());
  }
  FP_ASSIGN_OR_RETURN(const ClusterState state, ClusterState::WithAllocations(cluster, input.allocations));
  FP_ASSIGN_OR_RETURN(const auto policies, Policies(f));
  std::vector<PlacementPlan> plans;
  for (const auto& policy : policies) plans.push_back(PlanPlacement(state, input.requests, *policy));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(PlacementReportJson(state, plans)));
    out << text;
  } else {
    out << PlacementReportText(state, plans);
  }
  // Exit 1 when any plan shown leaves a group unplaced: with --compare, the answer for
  // every policy compared is part of what was asked.
  std::vector<std::string> short_of;
  for (const PlacementPlan& plan : plans) {
    if (plan.unplaced.empty()) continue;
    short_of.push_back(fmt::format("policy {} left {} of {} group(s) unplaced", plan.policy, plan.unplaced.size(),
                                   plan.requests.size()));
  }
  if (short_of.empty()) return Status::Ok();
  return Status(StatusCode::kCheckFailed, fmt::format("fleetplan place: {}", fmt::join(short_of, "; ")));
}

}  // namespace

void RegisterPlaceVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd =
      app.add_subcommand("place",
                         "Where do these GPU groups go? Places replica groups (1, 2, 4, 8 GPUs with locality "
                         "needs) onto a cluster with existing allocations, and reports the fragmentation left. "
                         "Exit 0 all placed (by every policy shown: with --compare, each compared one), 1 some "
                         "unplaced, 2 usage, 3 invalid input.");
  cmd->footer(
      "Examples:\n"
      "  fleetplan place --cluster 2x8xh100-sxm-80g --sizes 1,1,2,4\n"
      "  fleetplan place --cluster lab.yaml --requests requests.yaml --compare\n"
      "  fleetplan place --cluster lab.yaml --sizes 8 --without node:n3 --json");
  auto flags = std::make_shared<PlaceFlags>();
  PlaceFlags& f = *flags;
  cmd->add_option("--cluster", f.cluster, "Cluster file (YAML) or short form, e.g. 2x8xh100-sxm-80g (at most 2048 nodes: docs/limits.md)")
      ->required();
  f.requests_option =
      cmd->add_option("--requests", f.requests, "Requests file (YAML): allocations and groups to place");
  f.sizes_option = cmd->add_option("--sizes", f.sizes, "Node-local groups to place, by size, e.g. 1,1,2,4");
  cmd->add_option("--policy", f.policy, "Placement policy: most-free|tight (default tight)");
  cmd->add_flag("--compare", f.compare, "Also plan with every other policy, side by side");
  cmd->add_option("--without", f.without, "What if it is lost (as for `layout`); repeatable");
  cmd->add_option("--catalog", f.catalogs, "User catalog file (YAML); repeatable");
  cmd->add_flag("--json", f.json, "Print JSON instead of text");
  cmd->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& /*err*/) { return RunPlace(*flags, out); };
  });
}

}  // namespace fleetplan::cli
