// Status and Expected<T>: how bad input travels back to the shell.
//
// Two kinds of failure, never mixed (STYLE "Errors"):
//  - bad input or a failed check returns a Status with a code and a message (already
//    located and formatted, see core/error.h);
//  - a broken invariant is FP_ASSERT, which aborts: it is a bug, never user input.
// The codes double as process exit codes (DESIGN "Inputs and outputs"); their values
// reach scripts and must not be renumbered.
// Thread model: value types.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace fleetplan {

enum class StatusCode : int {
  kOk = 0,
  kCheckFailed = 1,   // a requested check or gate failed (e.g. "does not fit")
  kUsage = 2,         // command-line usage error
  kInvalidInput = 3,  // input file or value is invalid
  kInternal = 70,     // a bug: an invariant broke
  kBusy = 75,         // the output folder is held by another run: retry when it ends (sysexits' EX_TEMPFAIL)
};

// The parts of a located error (core/error.h LocatedError), kept beside its formatted
// message for shells that present errors their own way (the Python module's InputError).
// Unknown parts are empty or 0, as in SourceLocation.
struct ErrorOrigin {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;     // the field path ("engine.scheduler.policy") or flag ("--tp")
  std::string message;  // the message alone, without location, path or snippet
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, ErrorOrigin origin)
      : code_(code), message_(std::move(message)), origin_(std::make_shared<const ErrorOrigin>(std::move(origin))) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  int exit_code() const { return static_cast<int>(code_); }
  const std::string& message() const { return message_; }
  // Where a located error points; null for an unlocated Status (and for one whose message
  // a caller rewrote: a new Status carries no origin).
  const ErrorOrigin* origin() const { return origin_.get(); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::shared_ptr<const ErrorOrigin> origin_;  // shared: a Status is copied along error paths
};

inline Status InvalidInput(std::string message) {
  return Status(StatusCode::kInvalidInput, std::move(message));
}
inline Status UsageError(std::string message) { return Status(StatusCode::kUsage, std::move(message)); }
inline Status Busy(std::string message) { return Status(StatusCode::kBusy, std::move(message)); }
inline Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// A value or a non-ok Status. REQUIRES: never constructed from an ok Status.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) {
      std::fprintf(stderr, "internal error: Expected constructed from an ok Status\n");
      std::abort();
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // REQUIRES: !ok().
  const Status& status() const { return std::get<Status>(v_); }
  Status take_status() && { return std::get<Status>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fleetplan

// Return early with the Status of a failing expression.
#define FP_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::fleetplan::Status fp_status_ = (expr);      \
    if (!fp_status_.ok()) return fp_status_;      \
  } while (0)

#define FP_CONCAT_INNER(a, b) a##b
#define FP_CONCAT(a, b) FP_CONCAT_INNER(a, b)

// FP_ASSIGN_OR_RETURN(auto x, ParseThing(...)); returns the Status on failure.
#define FP_ASSIGN_OR_RETURN(lhs, expr) \
  FP_ASSIGN_OR_RETURN_IMPL(FP_CONCAT(fp_expected_, __LINE__), lhs, expr)
#define FP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

// Invariant check: on in every build (cheap checks only on hot paths). A failure is a bug.
#define FP_ASSERT(cond)                                                                    \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fleetplan internal error: %s:%d: assertion failed: %s\n",     \
                   __FILE__, __LINE__, #cond);                                             \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)
