// Decision gates: the shared vocabulary of every gate (speculation, kernel, graphs,
// quantization) and the registry of gates the `fleetplan gate` verb is built from.
//
// A gate compares declared requirements (a policy: thresholds, budgets, protected slices)
// with measurements (evidence, each naming the immutable identity it was taken on) and
// decides, per check:
//   pass  the evidence meets the requirement: the candidate may advance to staging
//         (never "production": a pass is the entry ticket to the next stage);
//   fail  the evidence shows the requirement is not met (a reasoned decision);
//   hold  the decision cannot be made: evidence missing, unidentified or insufficient.
// A hold is never turned into a pass, and nothing is derived from a label: bit width,
// a method name or a kernel name never stands in for a measured time.
// Combining checks into one decision: any fail -> fail (the evidence already rules the
// candidate out); else any hold -> hold; else pass.
//
// Exit codes of a gate run (GateReport::exit_code): 0 when every decision was made
// (pass, or fail for a reason the evidence gives), 1 when any required check holds or the
// evaluation itself failed (e.g. a speculative round that reports a verification error),
// 3 for invalid input (a located Status, never a report).
// Thread model: value types and pure functions; deterministic (no clock, ordered output).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/evidence/identity.h"

namespace fleetplan {

// Values reach JSON by name (GateDecisionName); never renumber.
enum class GateDecision : int { kPass = 0, kFail = 1, kHold = 2 };
std::string_view GateDecisionName(GateDecision d);  // "pass", "fail", "hold"

// One named check with the numbers that decided it and, when it did not pass, the nearest
// value that would pass (computed, never guessed; empty when no value of the evidence
// alone would pass, e.g. missing evidence).
struct GateCheck {
  std::string name;
  GateDecision decision = GateDecision::kHold;
  std::string reason;            // one sentence with the numbers
  Json numbers = Json::object();
  std::string nearest_passing;   // e.g. "mean_accepted >= 1.51"; empty when none
};

GateCheck PassCheck(std::string name, std::string reason, Json numbers = Json::object());
GateCheck FailCheck(std::string name, std::string reason, Json numbers = Json::object(),
                    std::string nearest_passing = "");
GateCheck HoldCheck(std::string name, std::string reason, Json numbers = Json::object());

// fail if any check fails, else hold if any holds, else pass. An empty list holds.
GateDecision Combine(const std::vector<GateCheck>& checks);
Json ToJson(const GateCheck& c);
Json ToJson(const std::vector<GateCheck>& checks);  // array in order
// "  pass  name: reason" lines (with "; nearest passing: ..." when set).
std::string ChecksText(const std::vector<GateCheck>& checks, std::string_view indent = "  ");

// pass when every field is set; hold naming the missing fields otherwise.
GateCheck IdentityCheck(const EvidenceIdentity& id, std::string_view what);

// What a gate run hands the shell: canonical JSON, the text rendering and the exit code.
struct GateReport {
  Json json;
  std::string text;
  int exit_code = 0;
};

// The input of one gate run as the command line gives it.
struct GateRequest {
  std::vector<std::string> files;                            // positional arguments
  std::vector<std::pair<std::string, std::string>> options;  // (flag, value) given
  uint64_t seed = 1;                                         // --seed

  // The value of `flag` when given.
  std::optional<std::string> Option(std::string_view flag) const;
};

// A gate-specific flag ("--ordinary").
struct GateOption {
  const char* flag;
  const char* help;
};

// One row per gate: the verb builds `fleetplan gate <name>` from it; nothing in the verb
// grows per gate.
struct GateRow {
  const char* name;
  const char* summary;
  const char* files_help;        // what the positional files are
  int min_files;
  int max_files;
  std::vector<GateOption> options;
  const char* examples;          // lines for --help
  Expected<GateReport> (*run)(const GateRequest& request);
};

// speculation, kernel, graphs, quantization (in that order).
const std::vector<GateRow>& GateRows();

// Helpers the gates share.
// A Duration read from text with a unit, as a located flag error ("--ordinary: ...").
Expected<double> ParseMsFlag(std::string_view flag, const std::string& text);
// Rounded for reports (9 significant digits).
double ReportMs(double ms);
// Nearest-rank percentile of `sorted` (ascending): the ceil(p × n)-th value
// (metrics/percentile.h, NearestRankSorted).
// REQUIRES: !sorted.empty(), 0 < p <= 1.
double NearestRank(const std::vector<double>& sorted, double p);

}  // namespace fleetplan
