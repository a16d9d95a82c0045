// What every fuzz target checks of a reader's failure: it is an invalid-input Status
// (exit code 3, never an assertion or internal error) whose message is non-empty UTF-8.
// A violation aborts, which libFuzzer reports as a crash with the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/utf8.h"
#include "fleetplan/core/status.h"

namespace fleetplan::fuzz {

// `detail` is a view so that a passing check copies nothing (a target may check an input
// of kilobytes several times per run).
inline void Require(bool ok, const char* target, const char* what, std::string_view detail) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n%.*s\n", target, what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void CheckFailure(const Status& s, const char* target) {
  if (s.ok()) return;
  Require(s.code() == StatusCode::kInvalidInput, target, "failure is not kInvalidInput", s.message());
  Require(!s.message().empty(), target, "empty message", "");
  Require(utf8::FindInvalid(s.message()) == std::string_view::npos, target, "message is not UTF-8", s.message());
}

template <typename T>
void CheckFailure(const Expected<T>& e, const char* target) {
  if (!e.ok()) CheckFailure(e.status(), target);
}

}  // namespace fleetplan::fuzz
