#include "fleetplan/decision/plan.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "decision/sensitivity.h"
#include "decision/steps.h"
#include "fleetplan/core/digest.h"
#include "fleetplan/core/read_log.h"

namespace fleetplan {
namespace {

using decision::Checks;

// What every step produced, for the decision, the JSON and the text.
struct Steps {
  decision::InputsOutcome inputs;
  decision::RequirementsOutcome requirements;
  std::optional<decision::ComposedDeployment> deployment;
  decision::LayoutOutcome layout;
  std::vector<CapacitySpec> specs;
  std::optional<decision::CapacityOutcome> capacity;
  std::optional<decision::ModelErrorOutcome> model_error;
  std::optional<decision::SimulationOutcome> simulation;
  decision::GatesOutcome gates;
  decision::RolloutOutcome rollout;
  Checks checks;  // every check, in step order
};

std::vector<std::string> MissingKinds(const PlanBundle& b) {
  std::vector<std::string> missing;
  for (const std::string& kind : b.policy.required_kinds) {
    if (b.EvidenceOf(kind) == nullptr) missing.push_back(kind);
  }
  for (const char* kind : {"inventory", "price", "benchmark", "workload"}) {
    if (b.EvidenceOf(kind) == nullptr && std::find(missing.begin(), missing.end(), kind) == missing.end()) {
      missing.emplace_back(kind);
    }
  }
  return missing;
}

Status RunFleetSteps(const PlanBundle& b, const PlanOptions& o, Steps& s) {
  const std::vector<std::string> missing = MissingKinds(b);
  if (!missing.empty()) {
    s.layout.checks.push_back(decision::NotRun("fit", fmt::format("no {} evidence", fmt::join(missing, ", "))));
    return Status::Ok();
  }
  if (!s.requirements.coverage_ok) {
    s.layout.checks.push_back(decision::NotRun("fit", "the workload evidence does not cover the policy's classes"));
    return Status::Ok();
  }
  if (o.on_step) o.on_step("layout");
  FP_ASSIGN_OR_RETURN(s.deployment, decision::ComposeDeployment(b));
  FP_ASSIGN_OR_RETURN(s.layout, decision::RankLayouts(b, *s.deployment));
  if (s.layout.candidates.empty()) return Status::Ok();
  if (o.on_step) o.on_step("capacity");
  FP_ASSIGN_OR_RETURN(s.specs, decision::CapacitySpecs(b, *s.deployment, s.layout));
  FP_ASSIGN_OR_RETURN(s.capacity, decision::SizeFleet(s.specs, true));
  const LayoutCapacity* chosen = s.capacity->Chosen();
  if (chosen == nullptr) return Status::Ok();
  // A fleet grown through its loss (capacity/capacity.h verified_share) was sized at a share
  // of the benchmark's rates: what follows (the model's error, the sensitivity) sizes every
  // layout at that share too.
  for (CapacitySpec& spec : s.specs) spec.replica_capacity.rate.per_second *= chosen->verified_share;
  FP_ASSIGN_OR_RETURN(s.model_error, decision::JudgeModelError(b, *s.deployment, s.layout, s.specs, *s.capacity));
  if (o.on_step) o.on_step("simulation");
  FP_ASSIGN_OR_RETURN(s.simulation, decision::SimulateFleet(b, *s.deployment, *chosen));
  return Status::Ok();
}

void Append(Checks& all, const Checks& more) { all.insert(all.end(), more.begin(), more.end()); }

std::string_view SurviveWords(SurviveRule rule) {
  switch (rule) {
    case SurviveRule::kNone: return "no loss";
    case SurviveRule::kLargestDomain: return "the loss of the largest";
    case SurviveRule::kAnyOneDomain: return "the loss of any one";
    case SurviveRule::kAnyOneRegion: return "the loss of any one region";
  }
  return "?";
}

std::string Summary(const PlanBundle& b, const Steps& s, GateDecision release) {
  std::vector<std::string> parts;
  if (s.capacity && s.capacity->Chosen() != nullptr) {
    const LayoutCapacity& lc = *s.capacity->Chosen();
    const CapacitySpec& spec = s.specs[*s.capacity->chosen];
    std::vector<std::string> per_domain;
    for (size_t i = 0; i < spec.domains.size() && i < lc.per_domain.size(); ++i) {
      per_domain.push_back(fmt::format("{} {}", spec.domains[i].name, lc.per_domain[i]));
    }
    const int64_t per_node = s.deployment->gpus_per_node / std::max<int64_t>(1, lc.gpus_per_replica);
    parts.push_back(fmt::format("{} on {} ({} per {}-GPU node), {} replicas across {} domains ({}) surviving {}, "
                                "${:.2f}/h (${:.0f}/month), {} routing",
                                lc.layout.Name(), s.deployment->gpu, per_node, s.deployment->gpus_per_node, lc.replicas,
                                spec.domains.size(), fmt::join(per_domain, ", "), SurviveWords(spec.survive),
                                lc.cost.per_hour, lc.cost.per_month,
                                b.deployment.document->root()["router"]["policy"].Text()));
  }
  for (const std::string& a : s.gates.advancing) parts.push_back(fmt::format("{} advances to staging", a));
  if (s.rollout.decision != "none") {
    parts.push_back(fmt::format("rollout {} at {} ({:g}% traffic)", s.rollout.decision, s.rollout.stage,
                                s.rollout.traffic * 100));
  }
  return fmt::format("release {}: {}", GateDecisionName(release), parts.empty() ? "no fleet was sized" : fmt::format("{}", fmt::join(parts, "; ")));
}

Json BoundInputs(const Json& inputs) {
  Json out = Json::array();
  for (const Json& i : inputs) {
    out.push_back({{"name", i["name"]}, {"kind", i["kind"]}, {"revision", i["revision"]},
                   {"content_digest", i["content_digest"]}});
  }
  return out;
}

Expected<std::pair<Json, Json>> Sensitivity(const PlanBundle& b, const PlanOptions& o, const Steps& s) {
  Json results = Json::array();
  Json triggers = Json::array();
  if (!o.sensitivity || !s.capacity || s.capacity->Chosen() == nullptr || !s.simulation) return std::make_pair(results, triggers);
  if (o.on_step) o.on_step("sensitivity");
  decision::PerturbationInput in{&b, &s.specs, &*s.capacity, &*s.simulation, &*s.deployment, nullptr};
  for (const SensitivityAsk& ask : b.policy.sensitivity) {
    in.ask = &ask;
    const PerturbationRow* row = FindPerturbation(ask.name);
    FP_ASSIGN_OR_RETURN(decision::PerturbationOutcome r, row->run(in, ask.size));
    results.push_back(r.json);
    if (r.trigger) triggers.push_back(*r.trigger);
  }
  return std::make_pair(results, triggers);
}

// Paths in the output are as from the bundle's folder: the same bundle planned from
// anywhere (out/atlas/bundle, a copy elsewhere) gives the same bytes.
void StripFolder(Json& j, const std::string& prefix) {
  if (prefix.empty()) return;
  if (j.is_string()) {
    std::string t = j.get<std::string>();
    for (size_t at = t.find(prefix); at != std::string::npos; at = t.find(prefix, at)) t.erase(at, prefix.size());
    j = t;
  } else if (j.is_array() || j.is_object()) {
    for (Json& v : j) StripFolder(v, prefix);
  }
}

std::string PlanText(const Json& plan) {
  std::string t = fmt::format("plan {} at {}\n{}\n", plan["name"].get<std::string>(), plan["as_of"].get<std::string>(),
                              plan["decision"]["summary"].get<std::string>());
  t += "\ndeciding reasons:\n";
  for (const Json& r : plan["decision"]["reasons"]) {
    t += fmt::format("  {:<5} {}: {}\n", r["decision"].get<std::string>(), r["name"].get<std::string>(),
                     r["reason"].get<std::string>());
  }
  t += "\nchecks:\n";
  for (const Json& r : plan["checks"]) {
    t += fmt::format("  {:<5} {}: {}\n", r["decision"].get<std::string>(), r["name"].get<std::string>(),
                     r["reason"].get<std::string>());
  }
  const Json& error = plan["model_error"];
  if (error.is_object()) {
    t += fmt::format("\nmodel error ({} on {}, step times up to +{:.1f} %; {}):\n", error["step_model"].get<std::string>(),
                     error["gpu"].get<std::string>(), 100 * error["band"].get<double>(), error["basis"].get<std::string>());
    for (const Json& e : error["edges"]) {
      std::vector<std::string> fleets;
      for (const Json& f : e["fleets"]) {
        fleets.push_back(f["sized"].get<bool>()
                             ? fmt::format("{} x {} ${:.0f}/month{}", f["replicas"].get<int64_t>(), f["layout"].get<std::string>(),
                                           f["per_month"].get<double>(), f["within_budget"].get<bool>() ? "" : " (over budget)")
                             : fmt::format("{} not sized", f["layout"].get<std::string>()));
      }
      t += fmt::format("  {:<12} steps x{:.3f}: {} -> {}\n", e["edge"].get<std::string>(), e["step_time_scale"].get<double>(),
                       fmt::join(fleets, ", "), e["cheapest"].is_string() ? e["cheapest"].get<std::string>() : "none");
    }
    t += "  why (a decode step at the workload's mean context):\n";
    for (const Json& r : error["reasoning"]) t += fmt::format("    {}\n", r.get<std::string>());
  }
  if (!plan["review_triggers"].empty()) {
    t += "\nreview triggers (what would reopen this decision):\n";
    for (const Json& r : plan["review_triggers"]) t += fmt::format("  - {}\n", r["trigger"].get<std::string>());
  }
  t += fmt::format("\ninputs ({}):\n", plan["inputs"].size());
  for (const Json& i : plan["inputs"]) {
    const std::string fresh = i.contains("freshness") ? i["freshness"]["freshness"].get<std::string>() : "-";
    t += fmt::format("  {:<22} {:<18} {:<8} {}\n", i["name"].get<std::string>(), i["kind"].get<std::string>(), fresh,
                     i["content_digest"].get<std::string>().substr(0, 19));
  }
  t += fmt::format("\ndigest: {}\n", plan["digest"].get<std::string>());
  return t;
}

// The digest of a file read as a stream (a trace, a records file), taken now.
Expected<std::string> DigestOfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput(fmt::format("cannot read '{}' again to bind it to the plan", path));
  Sha256Stream digest;
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    digest.Update(std::string_view(buffer.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return InvalidInput(fmt::format("cannot read '{}' again to bind it to the plan", path));
  return digest.FinishDigest();
}

// Every file the bundle and the plan read that no input names yet (catalogs the deployment
// names, files its workload names, signatures, keys, rounds, records) joins the inputs as
// role `read`, so the digest covers every byte the decision rests on. A file read twice
// with different bytes changed while the plan ran: the plan is refused.
Status BindReads(const PlanBundle& b, Json& inputs) {
  const std::filesystem::path dir = b.dir.empty() ? std::filesystem::path(".") : std::filesystem::path(b.dir);
  const std::vector<std::string> changed = b.reads->Conflicts();
  if (!changed.empty()) {
    return InvalidInput(fmt::format("{}: the file changed while the plan read it; plan again once it is settled",
                                    changed.front()));
  }
  std::set<std::string> named;
  for (const Json& i : inputs) named.insert((dir / i["name"].get<std::string>()).lexically_normal().generic_string());
  for (const ReadLog::Entry& e : b.reads->Entries()) {
    if (named.contains(std::filesystem::path(e.path).lexically_normal().generic_string())) continue;
    std::string digest;
    if (e.digest) {
      digest = *e.digest;
    } else {
      FP_ASSIGN_OR_RETURN(digest, DigestOfFile(e.path));
    }
    std::string name = std::filesystem::path(e.path).lexically_relative(dir).generic_string();
    if (name.empty()) name = e.path;
    inputs.push_back({{"name", name}, {"role", "read"}, {"kind", "file"}, {"revision", digest},
                      {"content_digest", digest}});
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& PlanSteps() {
  static const std::vector<std::string> steps = {"inputs", "requirements", "layout", "capacity", "simulation",
                                                 "gates",  "rollout",      "sensitivity"};
  return steps;
}

Expected<PlanResult> RunPlan(const PlanBundle& b, const PlanOptions& o) {
  const ReadLogScope record(b.reads.get());
  Steps s;
  if (o.on_step) o.on_step("inputs");
  FP_ASSIGN_OR_RETURN(s.inputs, decision::JudgeInputs(b, o.as_of, o.policy_key_pem));
  if (o.on_step) o.on_step("requirements");
  FP_ASSIGN_OR_RETURN(s.requirements, decision::JudgeRequirements(b));
  FP_RETURN_IF_ERROR(RunFleetSteps(b, o, s));
  if (o.on_step) o.on_step("gates");
  FP_ASSIGN_OR_RETURN(s.gates, decision::RunGates(b));
  if (o.on_step) o.on_step("rollout");
  FP_ASSIGN_OR_RETURN(s.rollout, decision::RunRollout(b, o.as_of, o.policy_key_pem, s.inputs.inputs, s.inputs.checks));

  for (const Checks* c : {&s.inputs.checks, &s.requirements.checks, &s.layout.checks}) Append(s.checks, *c);
  if (s.capacity) Append(s.checks, s.capacity->checks);
  if (s.model_error) Append(s.checks, s.model_error->checks);
  if (s.simulation) Append(s.checks, s.simulation->checks);
  Append(s.checks, s.gates.checks);
  Append(s.checks, s.rollout.checks);
  PlanResult out;
  out.release = Combine(s.checks);
  Json reasons = Json::array();
  for (const GateCheck& c : s.checks) {
    if (out.release == GateDecision::kPass || c.decision != GateDecision::kPass) reasons.push_back(ToJson(c));
  }
  Json decision = {{"release", GateDecisionName(out.release)},
                   {"summary", Summary(b, s, out.release)},
                   {"stage", s.rollout.decision == "none" ? Json(nullptr)
                                                          : Json{{"name", s.rollout.stage},
                                                                 {"traffic", s.rollout.traffic},
                                                                 {"rollout", s.rollout.decision}}},
                   {"advancing", s.gates.advancing},
                   {"reasons", reasons}};
  FP_ASSIGN_OR_RETURN(auto sensitivity, Sensitivity(b, o, s));
  FP_RETURN_IF_ERROR(BindReads(b, s.inputs.inputs));
  Json plan = {{"kind", "fleetplan-plan"},
               {"version", 1},
               {"name", b.name},
               {"as_of", FormatUtcTime(o.as_of)},
               {"digest_covers", "the canonical JSON of {inputs: [{name, kind, revision, content_digest}], decision}"},
               {"inputs", s.inputs.inputs},
               {"decision", decision},
               {"checks", ToJson(s.checks)},
               {"coverage", s.requirements.coverage},
               {"controls", s.requirements.controls},
               {"layout", s.layout.json},
               {"capacity", s.capacity ? s.capacity->json : Json(nullptr)},
               {"model_error", s.model_error ? s.model_error->json : Json(nullptr)},
               {"simulation", s.simulation ? s.simulation->json : Json(nullptr)},
               {"gates", s.gates.json},
               {"rollout", s.rollout.json},
               {"sensitivity", sensitivity.first},
               {"review_triggers", sensitivity.second}};
  StripFolder(plan, b.dir.empty() ? std::string() : b.dir + "/");
  FP_ASSIGN_OR_RETURN(std::string digest,
                      DigestOfJson(Json{{"inputs", BoundInputs(plan["inputs"])}, {"decision", plan["decision"]}}));
  plan["digest"] = digest;
  out.text = PlanText(plan);
  out.json = std::move(plan);
  return out;
}

}  // namespace fleetplan
