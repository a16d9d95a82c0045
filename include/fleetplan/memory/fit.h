// Fit verdicts: does `concurrency` sequences of `context` tokens fit on the replica, and
// if not, what binds and which nearest values pass.
//
//   fits  ⇔  usable_kv_s >= 0 on every stage  and  max_sequences >= concurrency
//   max_sequences = min over stages floor(usable_kv_s / reserved bytes of one sequence_s)
// Binding constraint:
//   weights — weights + activation workspace + runtime overhead exceed the budget on some
//             stage (no room for any KV);
//   kv      — there is room for KV but fewer than `concurrency` sequences of `context`
//             tokens fit.
// Nearest passing values are searched, never guessed, and each is verified by running
// the whole check again on the changed request:
//   context      — the largest context (binary search; max_sequences never grows with
//                  context) at which `concurrency` sequences fit;
//   tp           — the smallest valid tp (ValidTpValues) that fits;
//   kv_dtype     — the widest narrower KV format that fits (fp8 before int8 at equal width);
//   weight_dtype — the widest narrower weight format that fits;
//   tp + kv_dtype — only when neither alone passes: the smallest tp, then the widest
//                  narrower KV format at it, that fits.
// Thread model: value types and pure functions; deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/status.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/memory/kv.h"
#include "fleetplan/memory/plan.h"

namespace fleetplan {

struct FitRequest {
  MemoryInputs memory;
  int64_t context = 0;      // tokens per sequence (prompt + output)
  int64_t concurrency = 1;  // sequences resident at once
};

// Values reach JSON by name (BindingConstraintName); never renumber.
enum class BindingConstraint : int { kNone = 0, kWeights = 1, kKv = 2 };
std::string_view BindingConstraintName(BindingConstraint b);  // "none", "weights", "kv"

// A passing configuration found by the search (the request with one or two values changed).
struct FitPoint {
  int64_t tp = 0;
  DType weight_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  int64_t context = 0;
  int64_t concurrency = 0;
  int64_t max_sequences = 0;  // at this point's context
};

struct NearestPassing {
  std::optional<FitPoint> context;
  std::optional<FitPoint> tp;
  std::optional<FitPoint> kv_dtype;
  std::optional<FitPoint> weight_dtype;
  std::optional<FitPoint> tp_and_kv_dtype;
};

struct FitResult {
  FitRequest request;
  MemoryPlan plan;
  SequenceKv sequence;              // at request.context
  int64_t max_sequences = 0;        // 0 when weights do not fit
  // The stage that binds: the fewest sequences, or the most over budget when weights do not
  // fit (lowest index on ties). Reports show "per rank" figures of this stage.
  int64_t binding_stage = 0;
  bool fits = false;
  BindingConstraint binding = BindingConstraint::kNone;
  std::vector<std::string> reasons;  // one line per failed condition, with its numbers
  NearestPassing nearest;            // all empty when it fits
};

// ValidateMemoryInputs plus context in [1, kMaxTokens] and <= model.max_context (when the
// model states one) and concurrency in [1, kMaxSequences].
std::optional<FieldError> ValidateFitRequest(const FitRequest& request);

// InvalidInput "<field>: <message>" when ValidateFitRequest fails. "Does not fit" is not an
// error: it is a FitResult with fits == false.
Expected<FitResult> CheckFit(const FitRequest& request);

}  // namespace fleetplan
