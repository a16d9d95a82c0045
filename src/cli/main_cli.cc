#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/verbs.h"
#include "fleetplan/core/error.h"

namespace fleetplan::cli {
namespace {

constexpr const char* kDescription =
    "fleetplan: a deterministic planner and discrete-event simulator for LLM inference "
    "platforms.\n"
    "Exit codes: 0 done, 1 a requested check failed, 2 usage error, 3 invalid input, "
    "70 internal error.";

constexpr const char* kFooter =
    "Examples:\n"
    "  fleetplan fit --model atlas-70b --gpu h100-sxm-80g --tp 4 --context 32768 --concurrency 64\n"
    "  fleetplan fit --scenario scenario.yaml --json\n"
    "  fleetplan catalog models\n"
    "  fleetplan gate speculation rounds.jsonl --ordinary 8ms\n"
    "Run `fleetplan VERB --help` for a verb's options.";

}  // namespace

Status Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{kDescription, "fleetplan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fleetplan 0.1.0");

  VerbAction action;
  RegisterCatalogVerb(app, action);
  RegisterFitVerb(app, action);
  RegisterSimulateVerb(app, action);
  RegisterReportVerb(app, action);
  RegisterLayoutVerb(app, action);
  RegisterPlaceVerb(app, action);
  RegisterExpertsVerb(app, action);
  RegisterTraceVerb(app, action);
  RegisterValidateVerb(app, action);
  RegisterSweepVerb(app, action);
  RegisterCapacityVerb(app, action);
  RegisterEvidenceVerb(app, action);
  RegisterRolloutVerb(app, action);
  RegisterPlanVerb(app, action);
  RegisterGateVerb(app, action);
  RegisterServeVerb(app, action);
  // After the verbs: a subcommand copies its parent's footer when it is added, and each
  // verb's help ends with its own examples, not these.
  app.footer(kFooter);

  std::vector<std::string> verbs;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) verbs.push_back(sub->get_name());
  if (argc >= 2 && argv[1][0] != '-' && std::find(verbs.begin(), verbs.end(), argv[1]) == verbs.end()) {
    return UsageError("fleetplan: " + UnknownNameMessage("verb", argv[1], verbs) +
                      "\nRun `fleetplan --help` for what each verb does.\n");
  }

  // A verb that needs a sub-verb (catalog, trace, gate, evidence) names them when it gets
  // none or an unknown one, rather than CLI11's bare "A subcommand is required".
  if (argc >= 2 && argv[1][0] != '-') {
    CLI::App* verb = app.get_subcommand(argv[1]);
    if (verb->get_require_subcommand_min() > 0) {
      std::vector<std::string> subs;
      for (const CLI::App* sub : verb->get_subcommands([](CLI::App*) { return true; })) subs.push_back(sub->get_name());
      if (argc < 3) {
        return UsageError(fmt::format("fleetplan {}: name what to do: {}\nRun `fleetplan {} --help` for each one.\n",
                                      argv[1], fmt::join(subs, ", "), argv[1]));
      }
      if (argv[2][0] != '-' && std::find(subs.begin(), subs.end(), argv[2]) == subs.end()) {
        return UsageError(fmt::format("fleetplan {}: {}\nRun `fleetplan {} --help` for each one.\n", argv[1],
                                      UnknownNameMessage(fmt::format("{} sub-verb", argv[1]), argv[2], subs), argv[1]));
      }
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return Status::Ok();
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return Status::Ok();
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return Status::Ok();
  } catch (const CLI::ParseError& e) {
    // Help for a subcommand arrives here too (as a success-coded error).
    if (e.get_exit_code() == 0) {
      app.exit(e, out, err);
      return Status::Ok();
    }
    return UsageError(std::string("fleetplan: ") + e.what() +
                      "\nRun `fleetplan --help` (or `fleetplan VERB --help`) for usage.\n");
  }
  if (!action) return UsageError("fleetplan: no action for this command\n");
  try {
    return action(out, err);
  } catch (const std::exception& e) {
    return InternalError(std::string("fleetplan internal error: ") + e.what() + "\n");
  }
}

int Main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const Status status = Run(argc, argv, out, err);
  if (!status.ok()) {
    err << status.message();
    if (status.message().empty() || status.message().back() != '\n') err << "\n";
  }
  return status.exit_code();
}

}  // namespace fleetplan::cli
