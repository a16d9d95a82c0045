#include "errors.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace fleetplan::python {

void RaiseStatus(const Status& status) {
  const py::module_ errors = py::module_::import("fleetplan._errors");
  const char* type = "InternalError";
  switch (status.code()) {
    case StatusCode::kInvalidInput: type = "InputError"; break;
    case StatusCode::kCheckFailed: type = "CheckFailed"; break;
    case StatusCode::kUsage: type = "UsageError"; break;
    case StatusCode::kBusy: type = "FolderBusy"; break;
    case StatusCode::kOk:
    case StatusCode::kInternal: break;
  }
  py::dict where;
  if (const ErrorOrigin* o = status.origin()) {
    where["file"] = o->file;
    where["line"] = o->line;
    where["column"] = o->column;
    where["field"] = o->path;
    where["detail"] = o->message;
  }
  const py::object cls = errors.attr(type);
  const py::object error = cls(status.message(), status.exit_code(), **where);
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace fleetplan::python
