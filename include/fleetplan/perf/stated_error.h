// The step models' own error, as measured against published and shared vLLM runs
// (docs/FIDELITY.md), per step-model kind and GPU: what the decisions (`capacity`,
// `layout`, `plan`) widen their answer by.
//
// `step_time` is a share: measured step times (mean TPOT, batch latency, ITL) ran up to
// that much longer than the model predicted, the worst mean error over the measured points
// of that kind on that GPU (or, where a GPU has too few, pooled as the row says). The
// models err optimistic on every measured point, so the decisions take the band one-sided:
// the pessimistic edge is every step `1 + step_time` times as long, which divides a
// simulated rate per replica by the same factor.
//
// TTFT's error is larger and not a step-time error (the API server's own time, multi-step
// scheduling: docs/FIDELITY.md section 7); `basis` says so where it applies.
//
// Thread model: values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fleetplan {

struct StatedError {
  std::string kind;    // step-model kind ("aiconfigurator", "roofline", ...)
  std::string gpu;     // catalog GPU name; "" = every GPU without a row of its own
  double step_time = 0;  // share, > 0
  std::string basis;   // one line: the measured points and where they are shown
};

// Every row, kind then GPU ("" last within a kind), for docs and `catalog gpus`.
const std::vector<StatedError>& StatedErrors();

// The row for `kind` on `gpu`, else the kind's row for every GPU. An unknown kind gets
// the widest band of all rows, with a basis that says so.
StatedError StatedErrorOf(std::string_view kind, std::string_view gpu);

}  // namespace fleetplan
