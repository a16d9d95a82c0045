// The `fleetplan` command's verbs. Each verb lives in its own file (src/cli/<verb>_verb.cc)
// and registers one CLI11 subcommand. Parsing fills the verb's options; when the
// subcommand was chosen, its callback stores the action to run in `action`. Actions return
// a Status whose code is the exit code (core/status.h); they print results to `out`.
//
// A verb only parses, calls libfleetplan and prints: no decisions live here.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "fleetplan/core/status.h"

namespace fleetplan::cli {

using VerbAction = std::function<Status(std::ostream& out, std::ostream& err)>;

void RegisterCatalogVerb(CLI::App& app, VerbAction& action);
void RegisterFitVerb(CLI::App& app, VerbAction& action);
void RegisterSimulateVerb(CLI::App& app, VerbAction& action);
void RegisterReportVerb(CLI::App& app, VerbAction& action);
void RegisterLayoutVerb(CLI::App& app, VerbAction& action);
void RegisterPlaceVerb(CLI::App& app, VerbAction& action);
void RegisterExpertsVerb(CLI::App& app, VerbAction& action);
void RegisterTraceVerb(CLI::App& app, VerbAction& action);
void RegisterValidateVerb(CLI::App& app, VerbAction& action);
void RegisterSweepVerb(CLI::App& app, VerbAction& action);
void RegisterGateVerb(CLI::App& app, VerbAction& action);
void RegisterServeVerb(CLI::App& app, VerbAction& action);
void RegisterCapacityVerb(CLI::App& app, VerbAction& action);
void RegisterEvidenceVerb(CLI::App& app, VerbAction& action);
void RegisterRolloutVerb(CLI::App& app, VerbAction& action);
void RegisterPlanVerb(CLI::App& app, VerbAction& action);

// A page written beside a verb's JSON: `page()` to `path` when `write` (appending ", path"
// to `written`), else an earlier run's file at `path` removed so no stale page is left.
Status WriteOrRemovePage(const std::string& path, bool write, const std::function<std::string()>& page,
                         std::string& written);

// Parses and runs one command line and returns the verb's Status (its code is the exit
// code) without printing it; --help and --version print to `out` and return Ok. The
// Python module runs fit and layout this way.
Status Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);
// Run, then the error's message on `err`; returns the process exit code.
int Main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace fleetplan::cli
