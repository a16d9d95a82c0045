#include "fleetplan/core/flag_error.h"

#include <string>

#include "fleetplan/core/error.h"

namespace fleetplan {

Status FlagValueError(std::string_view flag, std::string_view message) {
  return Status(StatusCode::kUsage, FormatLocatedError(SourceLocation{}, flag, message),
                ErrorOrigin{"", 0, 0, std::string(flag), std::string(message)});
}

}  // namespace fleetplan
