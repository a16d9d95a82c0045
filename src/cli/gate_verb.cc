// `fleetplan gate <name> FILES... [--json]`: the decision gates (gates/gate.h), one
// subcommand per row of the gate registry (GateRows): the verb parses the row's files and
// flags, runs the row and prints its report. It holds no decision and grows no branch per
// gate. Exit 0 every decision made, 1 a check holds or the evaluation failed, 2 usage,
// 3 invalid input.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/json.h"
#include "fleetplan/gates/gate.h"

namespace fleetplan::cli {
namespace {

struct GateFlags {
  std::vector<std::string> files;
  std::map<std::string, std::string> values;  // flag -> value
  std::map<std::string, CLI::Option*> options;
  uint64_t seed = 1;
  bool json = false;
};

Status RunGate(const GateRow& row, const GateFlags& f, std::ostream& out) {
  GateRequest request;
  request.files = f.files;
  request.seed = f.seed;
  for (const auto& [flag, option] : f.options) {
    if (option->count() > 0) request.options.emplace_back(flag, f.values.at(flag));
  }
  FP_ASSIGN_OR_RETURN(GateReport report, row.run(request));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(const std::string text, CanonicalJson(report.json));
    out << text << "\n";
  } else {
    out << report.text;
  }
  if (report.exit_code != 0) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("gate {}: not every decision was made (a check holds or the evaluation failed; "
                              "see the report)", row.name));
  }
  return Status::Ok();
}

void RegisterRow(CLI::App& gate, const GateRow& row, VerbAction& action) {
  const std::string description = fmt::format(
      "{}.\nExit 0 every decision made (pass, or a reasoned fail), 1 a check holds (missing, unidentified or "
      "insufficient evidence) or the evaluation failed, 2 usage, 3 invalid input.",
      row.summary);
  CLI::App* cmd = gate.add_subcommand(row.name, description);
  cmd->footer(std::string("Examples:\n") + row.examples + "See docs/gates.md for the inputs and the arithmetic.");
  auto flags = std::make_shared<GateFlags>();
  GateFlags& f = *flags;
  cmd->add_option("FILES", f.files, row.files_help)->required()->expected(row.min_files, row.max_files);
  for (const GateOption& o : row.options) {
    f.options[o.flag] = cmd->add_option(o.flag, f.values[o.flag], o.help);
  }
  cmd->add_option("--seed", f.seed, "seed of the gate's resampling streams (default 1)");
  cmd->add_flag("--json", f.json, "print the canonical JSON report");
  cmd->callback([flags, &row, &action] {
    action = [flags, &row](std::ostream& out, std::ostream& /*err*/) { return RunGate(row, *flags, out); };
  });
}

}  // namespace

void RegisterGateVerb(CLI::App& app, VerbAction& action) {
  CLI::App* gate = app.add_subcommand(
      "gate",
      "Decide whether a candidate advances to staging: independent gates over declared policy and identified "
      "evidence, each reporting pass / fail / hold with the numbers that decided it.");
  gate->require_subcommand(1);
  std::string examples = "Examples:\n";
  for (const GateRow& row : GateRows()) {
    RegisterRow(*gate, row, action);
    examples += row.examples;
  }
  gate->footer(examples + "Exit 0 every decision made, 1 a check holds or the evaluation failed, 2 usage, "
                          "3 invalid input.");
}

}  // namespace fleetplan::cli
