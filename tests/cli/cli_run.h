// Runs the fleetplan command in-process, as a user types it, and captures what a user
// sees: the exit code and both streams. Every CLI test drives the command through this.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/verbs.h"

namespace fleetplan::testing {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// `args` are what follows "fleetplan" on the command line.
inline CliRun RunFleetplan(std::vector<std::string> args) {
  args.insert(args.begin(), "fleetplan");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  std::ostringstream err;
  CliRun r;
  r.code = cli::Main(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace fleetplan::testing
