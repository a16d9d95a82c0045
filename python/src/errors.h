// A failed Status raised as the package's exception (fleetplan/_errors.py):
//   kInvalidInput -> InputError (file, line, column, field, detail from Status::origin())
//   kCheckFailed  -> CheckFailed, kUsage -> UsageError, anything else -> InternalError
// Each carries `code` (the CLI's exit code) and `message` (the CLI's error text).
// Thread model: call with the GIL held.
#pragma once

#include "fleetplan/core/status.h"

namespace fleetplan::python {

// REQUIRES: !status.ok(). Sets the Python error and throws pybind11::error_already_set.
[[noreturn]] void RaiseStatus(const Status& status);

// Returns the value, or raises its Status.
template <typename T>
T ValueOrRaise(Expected<T> e) {
  if (!e.ok()) RaiseStatus(e.status());
  return std::move(e).value();
}

}  // namespace fleetplan::python
