#include "fleetplan/gates/kernel.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"

namespace fleetplan {

const std::vector<std::string>& KernelCorrectnessCases() {
  static const std::vector<std::string> cases = {"single_token_decode", "non_multiple_context", "partial_pages",
                                                 "empty_sequences",     "mask_boundaries",      "tolerance"};
  return cases;
}

Expected<double> ReadPercent(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  std::string_view t = text;
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  double v = 0;
  if (t.size() < 2 || t.back() != '%') {
    return node.Error(fmt::format("expected a percentage like 22%, got '{}'", text));
  }
  t.remove_suffix(1);
  const char* end = t.data() + t.size();
  auto [ptr, ec] = std::from_chars(t.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) {
    return node.Error(fmt::format("expected a percentage like 22%, got '{}'", text));
  }
  if (v >= 100 || v <= -1000) {
    return node.Error(fmt::format("expected a percentage between -1000% and 100% (exclusive), got '{}'", text));
  }
  return v / 100;
}

namespace {

Expected<std::optional<double>> OptionalPercent(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return std::optional<double>();
  FP_ASSIGN_OR_RETURN(double v, ReadPercent(node));
  return std::optional<double>(v);
}

Expected<double> Millis(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(Duration d, node.AsDuration());
  return d.millis();
}

Expected<std::optional<KernelStep>> ReadStep(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return std::optional<KernelStep>();
  FP_RETURN_IF_ERROR(node.CheckKeys({"time", "op_time", "added"}));
  KernelStep s;
  FP_ASSIGN_OR_RETURN(s.time_ms, Millis(node["time"]));
  FP_ASSIGN_OR_RETURN(s.op_time_ms, Millis(node["op_time"]));
  if (s.time_ms <= 0) return node["time"].Error("expected a step time > 0");
  if (s.op_time_ms > s.time_ms) {
    return node["op_time"].Error(fmt::format("the op's time ({} ms) cannot exceed the step's ({} ms)", s.op_time_ms,
                                             s.time_ms));
  }
  if (node["added"].present() && !node["added"].IsNull()) {
    FP_ASSIGN_OR_RETURN(double added, Millis(node["added"]));
    s.added_ms = added;
  }
  return std::optional<KernelStep>(s);
}

Status ReadCorrectness(const YamlNode& node, KernelSpec& spec) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(KernelCorrectnessCases()));
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [name, value] : entries) {
    FP_ASSIGN_OR_RETURN(std::string result, value.AsString());
    if (result != "pass" && result != "fail") {
      return value.Error(fmt::format("expected `pass` or `fail` (the declared outcome of the case), got '{}'", result));
    }
    spec.correctness.emplace_back(name, result);
  }
  return Status::Ok();
}

Status ReadShapes(const YamlNode& node, KernelSpec& spec) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  for (const YamlNode& item : items) {
    FP_RETURN_IF_ERROR(item.CheckKeys({"name", "time_saved", "step"}));
    KernelShape shape;
    FP_ASSIGN_OR_RETURN(shape.name, item["name"].AsString());
    for (const KernelShape& other : spec.shapes) {
      if (other.name == shape.name) return item["name"].Error(fmt::format("duplicate shape '{}'", shape.name));
    }
    FP_ASSIGN_OR_RETURN(shape.time_saved, ReadPercent(item["time_saved"]));
    FP_ASSIGN_OR_RETURN(shape.step, ReadStep(item["step"]));
    spec.shapes.push_back(std::move(shape));
  }
  return Status::Ok();
}

Expected<KernelWorkloadSide> SimulateSide(const Scenario& s) {
  FP_ASSIGN_OR_RETURN(FleetPlan plan, Bind(s));
  RunOptions options;
  options.write_files = false;
  FP_ASSIGN_OR_RETURN(RunResult run, Simulate(plan, options));
  KernelWorkloadSide side;
  side.goodput_rps = run.result.report.fleet.goodput_rps;
  side.slo_attainment = run.result.report.fleet.slo_attainment;
  side.kv_blocks = run.result.kv_blocks;
  side.block_tokens = plan.engine.block_tokens;
  side.preemptions = run.result.engine.preemptions;
  side.prefix_hit_tokens = run.result.engine.prefix_cache.hit_tokens;
  side.requests = run.requests;
  return side;
}

// The scenario with the kernel's engine values: the KV page size (every pool's memory
// plan and the engine) and the step model measured with the kernel.
Status ApplyCandidate(const YamlNode& node, Scenario& s, Json& changes) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"block_tokens", "step_model"}));
  if (!node["block_tokens"].present() && !node["step_model"].present()) {
    return node.Error("expected what the kernel changes: block_tokens and/or step_model");
  }
  if (node["block_tokens"].present()) {
    FP_ASSIGN_OR_RETURN(int64_t bt, node["block_tokens"].AsIntAtLeast(1));
    s.fit.memory.block_tokens = bt;
    for (PoolSpec& p : s.pools) p.fit.memory.block_tokens = bt;
    s.engine.block_tokens = bt;
    s.engine.prefix_cache.scope.kv_format = fmt::format("{}/{}", DTypeName(s.fit.memory.kv_dtype), bt);
    changes["block_tokens"] = bt;
  }
  if (node["step_model"].present()) {
    s.step_model = node["step_model"];
    changes["step_model"] = node["step_model"].Text();
  }
  return Status::Ok();
}

Status ReadWorkload(const YamlNode& node, const std::string& dir, KernelSpec& spec) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys({"scenario", "candidate"}));
  FP_ASSIGN_OR_RETURN(spec.scenario, node["scenario"].AsString());
  const std::filesystem::path path = std::filesystem::path(spec.scenario).is_absolute()
                                         ? std::filesystem::path(spec.scenario)
                                         : std::filesystem::path(dir) / spec.scenario;
  FP_ASSIGN_OR_RETURN(Scenario base, LoadScenario(path.string()));
  Scenario candidate = base;
  spec.candidate_changes = Json::object();
  FP_RETURN_IF_ERROR(ApplyCandidate(node["candidate"], candidate, spec.candidate_changes));
  FP_ASSIGN_OR_RETURN(spec.baseline, SimulateSide(base));
  Expected<KernelWorkloadSide> cand = SimulateSide(candidate);
  if (!cand.ok()) {
    // A candidate that cannot be bound (no memory for KV at that page size) is located at
    // the candidate section.
    return node["candidate"].Error(fmt::format("the candidate cannot be simulated: {}", cand.status().message()));
  }
  spec.candidate = *cand;
  return Status::Ok();
}

}  // namespace

Expected<KernelSpec> ReadKernelSpec(const YamlNode& root, const std::string& file, const std::string& dir) {
  FP_RETURN_IF_ERROR(root.CheckKeys({"kernel", "identity", "policy", "isolated", "step", "shapes", "workload"}));
  if (!root.IsMap()) return root.Error("expected a mapping (kernel, identity, isolated, step, ...)");
  KernelSpec spec;
  spec.file = file;
  FP_ASSIGN_OR_RETURN(spec.kernel, root["kernel"].StringOr("kernel"));
  FP_ASSIGN_OR_RETURN(spec.identity, ReadIdentity(root["identity"]));
  const YamlNode policy = root["policy"];
  FP_RETURN_IF_ERROR(policy.CheckKeys({"min_op_saving", "min_step_saving", "min_goodput_gain"}));
  FP_ASSIGN_OR_RETURN(auto op, OptionalPercent(policy["min_op_saving"]));
  FP_ASSIGN_OR_RETURN(auto st, OptionalPercent(policy["min_step_saving"]));
  FP_ASSIGN_OR_RETURN(auto gp, OptionalPercent(policy["min_goodput_gain"]));
  spec.min_op_saving = op.value_or(0);
  spec.min_step_saving = st.value_or(0);
  spec.min_goodput_gain = gp.value_or(0);
  const YamlNode isolated = root["isolated"];
  FP_RETURN_IF_ERROR(isolated.CheckKeys({"time_saved", "correctness"}));
  FP_ASSIGN_OR_RETURN(spec.time_saved, OptionalPercent(isolated["time_saved"]));
  FP_RETURN_IF_ERROR(ReadCorrectness(isolated["correctness"], spec));
  FP_ASSIGN_OR_RETURN(spec.step, ReadStep(root["step"]));
  FP_RETURN_IF_ERROR(ReadShapes(root["shapes"], spec));
  FP_RETURN_IF_ERROR(ReadWorkload(root["workload"], dir, spec));
  return spec;
}

Expected<KernelSpec> LoadKernelSpec(const std::string& path) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadKernelSpec(doc.root(), path, std::filesystem::path(path).parent_path().string());
}

KernelStepFigures StepFigures(const KernelStep& step, double time_saved) {
  FP_ASSERT(step.time_ms > 0 && step.added_ms.has_value());
  KernelStepFigures f;
  f.op_share_pct = 100 * step.op_time_ms / step.time_ms;
  f.max_saving_ms = time_saved * step.op_time_ms;
  f.net_saving_ms = f.max_saving_ms - *step.added_ms;
  f.speedup_pct = 100 * f.net_saving_ms / step.time_ms;
  return f;
}

namespace {

std::string Pct(double fraction) { return fmt::format("{:.4g}%", fraction * 100); }

// "at least X" for a threshold of X > 0; "more than 0" for 0.
bool Meets(double value, double threshold) { return threshold > 0 ? value >= threshold : value > 0; }
std::string Needed(double threshold) { return threshold > 0 ? fmt::format(">= {}", Pct(threshold)) : "> 0%"; }

GateCheck CorrectnessCheck(const KernelSpec& spec) {
  std::vector<std::string> failed, missing;
  Json cases = Json::object();
  for (const std::string& name : KernelCorrectnessCases()) {
    auto it = std::find_if(spec.correctness.begin(), spec.correctness.end(),
                           [&](const auto& c) { return c.first == name; });
    if (it == spec.correctness.end()) {
      missing.push_back(name);
      cases[name] = nullptr;
    } else {
      cases[name] = it->second;
      if (it->second == "fail") failed.push_back(name);
    }
  }
  const Json numbers = {{"cases", cases}};
  if (!failed.empty()) {
    return FailCheck("correctness", fmt::format("declared failing: {}", fmt::join(failed, ", ")), numbers);
  }
  if (!missing.empty()) {
    return HoldCheck("correctness", fmt::format("no declared outcome for: {}", fmt::join(missing, ", ")), numbers);
  }
  return PassCheck("correctness", fmt::format("all {} cases pass", KernelCorrectnessCases().size()), numbers);
}

GateCheck OpSavingCheck(std::optional<double> time_saved, double min_op_saving) {
  if (!time_saved) return HoldCheck("op_saving", "no measured isolated.time_saved");
  const Json numbers = {{"time_saved_pct", RoundForReport(*time_saved * 100)},
                        {"min_op_saving_pct", RoundForReport(min_op_saving * 100)}};
  if (Meets(*time_saved, min_op_saving)) {
    return PassCheck("op_saving", fmt::format("the op takes {} less time ({})", Pct(*time_saved), Needed(min_op_saving)),
                     numbers);
  }
  return FailCheck("op_saving", fmt::format("the op takes {} less time; the policy needs {}", Pct(*time_saved),
                                            Needed(min_op_saving)),
                   numbers, fmt::format("time_saved {}", Needed(min_op_saving)));
}

Json StepJson(const KernelStep& s, const KernelStepFigures& f) {
  return Json{{"time_ms", ReportMs(s.time_ms)},
              {"op_time_ms", ReportMs(s.op_time_ms)},
              {"added_ms", ReportMs(*s.added_ms)},
              {"op_share_pct", RoundForReport(f.op_share_pct)},
              {"max_saving_ms", ReportMs(f.max_saving_ms)},
              {"net_saving_ms", ReportMs(f.net_saving_ms)},
              {"speedup_pct", RoundForReport(f.speedup_pct)}};
}

GateCheck StepCheck(const std::optional<KernelStep>& step, std::optional<double> time_saved, double min_step,
                    Json* figures) {
  if (!step) return HoldCheck("step_saving", "no measured step (time, op_time, added)");
  if (!step->added_ms) {
    return HoldCheck("step_saving", "no measured added work (step.added: metadata, block-table transfer, layout "
                                    "conversion; write 0ms when there is none)");
  }
  if (!time_saved) return HoldCheck("step_saving", "no measured time_saved for the op");
  const KernelStepFigures f = StepFigures(*step, *time_saved);
  *figures = StepJson(*step, f);
  const std::string reason =
      fmt::format("at most {:.4g} ms (op share {:.4g}% x {} saved), less {:.4g} ms added = {:.4g} ms ({:.4g}% of the "
                  "{:.4g} ms step)",
                  f.max_saving_ms, f.op_share_pct, Pct(*time_saved), *step->added_ms, f.net_saving_ms, f.speedup_pct,
                  step->time_ms);
  if (Meets(f.speedup_pct / 100, min_step)) return PassCheck("step_saving", reason + ", " + Needed(min_step), *figures);
  // What reaches the threshold: net = ts × op - added >= min × time.
  const double need_ms = min_step * step->time_ms;
  const double ts_needed = (need_ms + *step->added_ms) / step->op_time_ms;
  const double added_max = *time_saved * step->op_time_ms - need_ms;
  std::string nearest = fmt::format("time_saved {} {}", min_step > 0 ? ">=" : ">", Pct(ts_needed));
  if (added_max > 0 || (min_step == 0 && added_max >= 0)) {
    nearest += fmt::format(", or added {} {:.4g} ms", min_step > 0 ? "<=" : "<", added_max);
  }
  return FailCheck("step_saving", reason + fmt::format("; the policy needs {}", Needed(min_step)), *figures, nearest);
}

Json SideJson(const KernelWorkloadSide& s) {
  Json j = {{"goodput_rps", RoundForReport(s.goodput_rps)},
            {"kv_blocks", s.kv_blocks},
            {"block_tokens", s.block_tokens},
            {"kv_capacity_tokens", s.kv_blocks * s.block_tokens},
            {"preemptions", s.preemptions},
            {"prefix_hit_tokens", s.prefix_hit_tokens},
            {"requests", s.requests}};
  j["slo_attainment"] = s.slo_attainment ? Json(RoundForReport(*s.slo_attainment)) : Json(nullptr);
  return j;
}

KernelLevel WorkloadLevel(const KernelSpec& spec, const GateCheck& identity) {
  KernelLevel level{"workload", std::nullopt, {}, Json::object()};
  if (!spec.baseline || !spec.candidate) {
    level.figures = {{"reason", "no workload section: the kernel changes no engine value to simulate"}};
    return level;
  }
  const KernelWorkloadSide& b = *spec.baseline;
  const KernelWorkloadSide& c = *spec.candidate;
  level.figures = {{"scenario", spec.scenario},
                   {"candidate_changes", spec.candidate_changes},
                   {"baseline", SideJson(b)},
                   {"candidate", SideJson(c)},
                   {"min_goodput_gain_pct", RoundForReport(spec.min_goodput_gain * 100)}};
  level.checks.push_back(identity);
  if (b.goodput_rps <= 0) {
    level.checks.push_back(HoldCheck("goodput", "the baseline has no SLO-qualified goodput to compare against"));
  } else {
    const double gain = c.goodput_rps / b.goodput_rps - 1;
    level.figures["goodput_gain_pct"] = RoundForReport(gain * 100);
    const std::string reason = fmt::format("goodput {:.4g}/s vs {:.4g}/s baseline ({:+.3g}%; policy {:+.3g}%)",
                                           c.goodput_rps, b.goodput_rps, gain * 100, spec.min_goodput_gain * 100);
    if (gain >= spec.min_goodput_gain) {
      level.checks.push_back(PassCheck("goodput", reason));
    } else {
      level.checks.push_back(FailCheck("goodput", reason, Json::object(),
                                       fmt::format("candidate goodput >= {:.4g}/s",
                                                   b.goodput_rps * (1 + spec.min_goodput_gain))));
    }
  }
  level.verdict = Combine(level.checks);
  return level;
}

std::string DecisionText(std::optional<GateDecision> d) {
  return d ? std::string(GateDecisionName(*d)) : std::string("not evaluated");
}

}  // namespace

KernelGateResult RunKernelGate(const KernelSpec& spec) {
  KernelGateResult r;
  r.kernel = spec.kernel;
  r.file = spec.file;
  r.identity = spec.identity;
  const GateCheck identity = IdentityCheck(spec.identity, spec.file);
  const GateCheck correctness = CorrectnessCheck(spec);

  r.isolated = {"isolated", std::nullopt, {identity, correctness, OpSavingCheck(spec.time_saved, spec.min_op_saving)},
                Json::object()};
  if (spec.time_saved) r.isolated.figures["time_saved_pct"] = RoundForReport(*spec.time_saved * 100);
  r.isolated.verdict = Combine(r.isolated.checks);

  Json step_figures = Json::object();
  r.step = {"step", std::nullopt, {identity}, Json::object()};
  r.step.checks.push_back(StepCheck(spec.step, spec.time_saved, spec.min_step_saving, &step_figures));
  r.step.figures = step_figures;
  r.step.verdict = Combine(r.step.checks);

  r.workload = WorkloadLevel(spec, identity);

  std::vector<GateCheck> overall = r.isolated.checks;
  overall.insert(overall.end(), r.step.checks.begin(), r.step.checks.end());
  if (r.workload.verdict) overall.insert(overall.end(), r.workload.checks.begin(), r.workload.checks.end());
  if (spec.shapes.empty()) {
    r.decision = Combine(overall);
    if (r.decision == GateDecision::kPass) r.enable.push_back("all shapes");
    return r;
  }
  // Conditional: the shared evidence (identity, correctness, workload) must pass; each shape
  // then stands on its own saving. A level that fails fails the kernel whatever its shapes
  // save (docs/gates.md: any fail → fail): a shape cannot enable what the measured op or
  // step time refutes.
  std::vector<GateCheck> shared = {identity, correctness};
  if (r.workload.verdict) shared.insert(shared.end(), r.workload.checks.begin(), r.workload.checks.end());
  const bool level_failed = r.isolated.verdict == GateDecision::kFail || r.step.verdict == GateDecision::kFail;
  const GateDecision base = level_failed ? GateDecision::kFail : Combine(shared);
  bool any_hold = base == GateDecision::kHold;
  for (const KernelShape& shape : spec.shapes) {
    Json ignored;
    const std::optional<KernelStep>& step = shape.step ? shape.step : spec.step;
    const GateDecision d = Combine({OpSavingCheck(shape.time_saved, spec.min_op_saving),
                                    StepCheck(step, shape.time_saved, spec.min_step_saving, &ignored)});
    r.shapes.emplace_back(shape, d);
    any_hold = any_hold || d == GateDecision::kHold;
    if (d == GateDecision::kPass) r.enable.push_back(shape.name);
    if (d == GateDecision::kFail) r.disable.push_back(shape.name);
  }
  if (base == GateDecision::kFail) {
    r.decision = GateDecision::kFail;
    r.disable.clear();
    r.enable.clear();
  } else if (any_hold) {
    r.decision = GateDecision::kHold;
  } else {
    r.decision = r.enable.empty() ? GateDecision::kFail : GateDecision::kPass;
  }
  return r;
}

namespace {

Json LevelJson(const KernelLevel& l) {
  Json j = l.figures;
  j["verdict"] = l.verdict ? Json(GateDecisionName(*l.verdict)) : Json(nullptr);
  j["checks"] = ToJson(l.checks);
  return j;
}

}  // namespace

Json ToJson(const KernelGateResult& r) {
  Json shapes = Json::array();
  for (const auto& [shape, d] : r.shapes) {
    Json s = {{"name", shape.name}, {"time_saved_pct", RoundForReport(shape.time_saved * 100)},
              {"verdict", GateDecisionName(d)}};
    shapes.push_back(s);
  }
  return Json{{"gate", "kernel"},
              {"kernel", r.kernel},
              {"file", r.file},
              {"identity", ToJson(r.identity)},
              {"isolated", LevelJson(r.isolated)},
              {"step", LevelJson(r.step)},
              {"workload", LevelJson(r.workload)},
              {"shapes", shapes},
              {"enable", r.enable},
              {"disable", r.disable},
              {"decision", GateDecisionName(r.decision)},
              {"advance_to", r.decision == GateDecision::kPass ? Json("staging") : Json(nullptr)}};
}

std::string ToText(const KernelGateResult& r) {
  std::string out = fmt::format("kernel gate: {} ({})\n", r.kernel, r.file);
  for (const KernelLevel* l : {&r.isolated, &r.step, &r.workload}) {
    out += fmt::format("level {}: {}\n", l->name, DecisionText(l->verdict));
    out += ChecksText(l->checks, "  ");
    if (!l->verdict && l->figures.contains("reason")) out += "  " + l->figures["reason"].get<std::string>() + "\n";
  }
  if (r.workload.verdict) {
    for (const char* side : {"baseline", "candidate"}) {
      const Json& s = r.workload.figures[side];
      out += fmt::format("  {:<9} goodput {}/s, KV {} blocks x {} tokens, preemptions {}, prefix hit tokens {}\n",
                         side, s["goodput_rps"].dump(), s["kv_blocks"].dump(), s["block_tokens"].dump(),
                         s["preemptions"].dump(), s["prefix_hit_tokens"].dump());
    }
  }
  for (const auto& [shape, d] : r.shapes) {
    out += fmt::format("shape {}: {} ({} less op time)\n", shape.name, GateDecisionName(d),
                       fmt::format("{:.4g}%", shape.time_saved * 100));
  }
  out += fmt::format("decision: {}", GateDecisionName(r.decision));
  if (!r.enable.empty()) out += fmt::format("; enable for: {}", fmt::join(r.enable, ", "));
  if (!r.disable.empty()) out += fmt::format("; disable for: {}", fmt::join(r.disable, ", "));
  out += r.decision == GateDecision::kPass ? " (advance to staging)\n" : "\n";
  return out;
}

int ExitCode(const KernelGateResult& r) { return r.decision == GateDecision::kHold ? 1 : 0; }

Expected<GateReport> RunKernelRequest(const GateRequest& request) {
  FP_ASSIGN_OR_RETURN(KernelSpec spec, LoadKernelSpec(request.files.at(0)));
  const KernelGateResult result = RunKernelGate(spec);
  return GateReport{ToJson(result), ToText(result), ExitCode(result)};
}

}  // namespace fleetplan
