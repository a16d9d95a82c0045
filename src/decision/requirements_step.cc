// The requirements step: the workload evidence covers every class the policy requires,
// and the deployment keeps every control the policy requires (tenant cache isolation,
// prompt retention, objectives no looser than the policy's).
#include <algorithm>

#include <fmt/format.h>

#include "decision/steps.h"
#include "fleetplan/metrics/slo.h"

namespace fleetplan::decision {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Expected<std::vector<std::string>> WorkloadClasses(const BoundFile& workload) {
  std::vector<std::string> names;
  const YamlNode classes = workload.Data()["workload"]["classes"];
  if (!classes.present() || classes.IsNull()) return names;
  FP_ASSIGN_OR_RETURN(auto entries, classes.Entries());
  for (const auto& [name, value] : entries) names.push_back(name);
  return names;
}

void CheckCoverage(const PlanBundle& b, const std::vector<std::string>& classes, RequirementsOutcome& out) {
  std::vector<std::string> required = b.policy.coverage;
  for (const std::string& c : b.policy.slo.names()) {
    if (!Contains(required, c)) required.push_back(c);
  }
  std::vector<std::string> missing;
  for (const std::string& c : required) {
    if (!Contains(classes, c)) missing.push_back(c);
  }
  out.coverage = {{"required", required}, {"workload_classes", classes}, {"missing", missing}};
  out.coverage_ok = missing.empty();
  if (missing.empty()) {
    out.checks.push_back(PassCheck("coverage", fmt::format("the workload evidence covers every required class ({})",
                                                           fmt::join(required, ", "))));
  } else {
    out.checks.push_back(FailCheck("coverage",
                                   fmt::format("the workload evidence lacks the class{} {} that the policy requires",
                                               missing.size() == 1 ? "" : "es", fmt::join(missing, ", ")),
                                   Json{{"missing", missing}, {"required", required}}));
  }
}

std::optional<Duration> ObjectiveOf(const ClassObjectives& o, Objective which) {
  switch (which) {
    case Objective::kTtft: return o.ttft;
    case Objective::kTpot: return o.tpot;
    case Objective::kItlMax: return o.itl_max;
    case Objective::kE2e: return o.e2e;
    case Objective::kE2eByOutput: return std::nullopt;
  }
  return std::nullopt;
}

// Each objective of the policy must be in the deployment's slo, at most as loose.
void CheckObjectives(const PlanBundle& b, const SloSpec& deployed, RequirementsOutcome& out) {
  std::vector<std::string> looser;
  for (const ClassSlo& c : b.policy.slo.classes()) {
    const ClassSlo* d = deployed.Find(c.name);
    for (Objective o : {Objective::kTtft, Objective::kTpot, Objective::kItlMax, Objective::kE2e}) {
      const std::optional<Duration> want = ObjectiveOf(c.objectives, o);
      if (!want) continue;
      const std::optional<Duration> have = d ? ObjectiveOf(d->objectives, o) : std::nullopt;
      if (!have) {
        looser.push_back(fmt::format("{}.{} is not declared (policy {:g} ms)", c.name, ObjectiveName(o), want->millis()));
      } else if (*have > *want) {
        looser.push_back(fmt::format("{}.{} {:g} ms is looser than the policy's {:g} ms", c.name, ObjectiveName(o),
                                     have->millis(), want->millis()));
      }
    }
  }
  out.controls["slo_no_looser_than_policy"] = looser.empty();
  if (looser.empty()) {
    out.checks.push_back(PassCheck("controls", "the deployment's objectives are no looser than the policy's"));
  } else {
    out.checks.push_back(FailCheck("controls", fmt::format("the deployment's slo: {}", fmt::join(looser, "; ")),
                                   Json{{"looser", looser}}));
  }
}

Status CheckControls(const PlanBundle& b, RequirementsOutcome& out) {
  const YamlNode root = b.deployment.document->root();
  FP_ASSIGN_OR_RETURN(bool shared, root["engine"]["prefix_cache"]["share_across_tenants"].BoolOr(false));
  out.controls["tenant_cache_isolation"] = !shared;
  if (b.policy.controls.tenant_cache_isolation) {
    if (shared) {
      out.checks.push_back(FailCheck("controls",
                                     "tenant cache isolation is off: the deployment sets "
                                     "engine.prefix_cache.share_across_tenants: true, and the policy requires isolation",
                                     Json{{"control", "tenant_cache_isolation"}}));
    } else {
      out.checks.push_back(PassCheck("controls", "tenant cache isolation: each tenant's prefix blocks are its own"));
    }
  }
  if (b.policy.controls.max_prompt_retention) {
    const double max_h = b.policy.controls.max_prompt_retention->seconds() / 3600;
    if (!b.prompt_retention) {
      out.checks.push_back(HoldCheck("controls",
                                     fmt::format("the deployment declares no prompt_retention; the policy allows at most {:g} h",
                                                 max_h)));
    } else {
      const double have_h = b.prompt_retention->seconds() / 3600;
      out.controls["prompt_retention_h"] = have_h;
      if (*b.prompt_retention > *b.policy.controls.max_prompt_retention) {
        out.checks.push_back(FailCheck("controls",
                                       fmt::format("prompts are retained {:g} h; the policy allows at most {:g} h", have_h, max_h),
                                       Json{{"control", "max_prompt_retention"}, {"declared_h", have_h}, {"max_h", max_h}}));
      } else {
        out.checks.push_back(PassCheck("controls", fmt::format("prompts retained {:g} h (at most {:g} h)", have_h, max_h)));
      }
    }
  }
  SloSpec deployed;
  if (root["slo"].present() && !root["slo"].IsNull()) {
    FP_ASSIGN_OR_RETURN(deployed, ParseSlo(root["slo"]));
  }
  CheckObjectives(b, deployed, out);
  return Status::Ok();
}

}  // namespace

Expected<RequirementsOutcome> JudgeRequirements(const PlanBundle& b) {
  RequirementsOutcome out;
  if (const BoundFile* workload = b.EvidenceOf("workload")) {
    FP_ASSIGN_OR_RETURN(std::vector<std::string> classes, WorkloadClasses(*workload));
    CheckCoverage(b, classes, out);
  } else {
    out.checks.push_back(NotRun("coverage", "no workload evidence"));
  }
  FP_RETURN_IF_ERROR(CheckControls(b, out));
  return out;
}

}  // namespace fleetplan::decision
