// The `fleetplan` executable: a thin shell over libfleetplan (see src/cli/).
#include <iostream>

#include "cli/verbs.h"

int main(int argc, char** argv) { return fleetplan::cli::Main(argc, argv, std::cout, std::cerr); }
