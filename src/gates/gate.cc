#include "fleetplan/core/flag_error.h"
#include "fleetplan/gates/gate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/metrics/percentile.h"

namespace fleetplan {

std::string_view GateDecisionName(GateDecision d) {
  switch (d) {
    case GateDecision::kPass: return "pass";
    case GateDecision::kFail: return "fail";
    case GateDecision::kHold: return "hold";
  }
  return "hold";
}

GateCheck PassCheck(std::string name, std::string reason, Json numbers) {
  return GateCheck{std::move(name), GateDecision::kPass, std::move(reason), std::move(numbers), ""};
}
GateCheck FailCheck(std::string name, std::string reason, Json numbers, std::string nearest) {
  return GateCheck{std::move(name), GateDecision::kFail, std::move(reason), std::move(numbers),
                   std::move(nearest)};
}
GateCheck HoldCheck(std::string name, std::string reason, Json numbers) {
  return GateCheck{std::move(name), GateDecision::kHold, std::move(reason), std::move(numbers), ""};
}

GateDecision Combine(const std::vector<GateCheck>& checks) {
  if (checks.empty()) return GateDecision::kHold;
  bool hold = false;
  for (const GateCheck& c : checks) {
    if (c.decision == GateDecision::kFail) return GateDecision::kFail;
    hold = hold || c.decision == GateDecision::kHold;
  }
  return hold ? GateDecision::kHold : GateDecision::kPass;
}

Json ToJson(const GateCheck& c) {
  Json j = {{"name", c.name},
            {"decision", GateDecisionName(c.decision)},
            {"reason", c.reason},
            {"numbers", c.numbers}};
  j["nearest_passing"] = c.nearest_passing.empty() ? Json(nullptr) : Json(c.nearest_passing);
  return j;
}

Json ToJson(const std::vector<GateCheck>& checks) {
  Json a = Json::array();
  for (const GateCheck& c : checks) a.push_back(ToJson(c));
  return a;
}

std::string ChecksText(const std::vector<GateCheck>& checks, std::string_view indent) {
  std::string out;
  for (const GateCheck& c : checks) {
    out += fmt::format("{}{:<4}  {}: {}", indent, GateDecisionName(c.decision), c.name, c.reason);
    if (!c.nearest_passing.empty()) out += fmt::format("; nearest passing: {}", c.nearest_passing);
    out += "\n";
  }
  return out;
}

GateCheck IdentityCheck(const EvidenceIdentity& id, std::string_view what) {
  const std::vector<std::string> missing = MissingIdentityFields(id);
  if (missing.empty()) {
    return PassCheck("identity", fmt::format("{} names artifact {} on {} {} / {}", what, id.artifact,
                                             id.runtime, id.runtime_version, id.hardware));
  }
  return HoldCheck("identity", fmt::format("{} is unidentified: missing {}", what, fmt::join(missing, ", ")),
                   Json{{"missing", missing}});
}

std::optional<std::string> GateRequest::Option(std::string_view flag) const {
  for (const auto& [f, v] : options) {
    if (f == flag) return v;
  }
  return std::nullopt;
}

Expected<double> ParseMsFlag(std::string_view flag, const std::string& text) {
  Expected<Duration> d = ParseDuration(text);
  if (!d.ok()) return FlagValueError(flag, d.status().message());
  if (d->ns() <= 0) return FlagValueError(flag, fmt::format("expected a duration > 0, got '{}'", text));
  return d->millis();
}

double ReportMs(double ms) { return RoundForReport(ms); }

double NearestRank(const std::vector<double>& sorted, double p) {
  FP_ASSERT(!sorted.empty() && p > 0 && p <= 1);
  return NearestRankSorted(sorted, p);
}

}  // namespace fleetplan
