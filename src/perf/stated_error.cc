#include "fleetplan/perf/stated_error.h"

#include <algorithm>

#include <fmt/format.h>

namespace fleetplan {

// Each figure is a row of docs/FIDELITY.md; change both together.
const std::vector<StatedError>& StatedErrors() {
  static const std::vector<StatedError> rows = {
      {"affine", "", 0.05,
       "fitted to your own measurements: its error is your fit's residual, taken as 5 % (fleetplan measured none)"},
      {"aiconfigurator", "h100-sxm-80g", 0.226,
       "docs/FIDELITY.md section 7: batch latency +0.8..+2.9 % (leave-one-out), serving TPOT -14.1 % and -22.6 % "
       "(vLLM 0.6.0, multi-step 10); TTFT 30-45 % short (API server time, not a step time)"},
      {"aiconfigurator", "h200-141g", 0.226,
       "docs/FIDELITY.md section 7: batch latency -0.9..-3.5 %, ITL -3.0 %; no serving TPOT point on H200, so "
       "H100's -22.6 % is taken"},
      {"aiconfigurator", "", 0.226, "docs/FIDELITY.md section 7: the widest H100/H200 step-time error, -22.6 %"},
      {"kernel-table", "", 0.04,
       "docs/FIDELITY.md section 1: mean TPOT +4.0 %, -3.9 %, -3.1 % on the three shared RTX 4090 / RTX PRO 6000 runs"},
      {"roofline", "a100-40g", 0.42,
       "docs/validate.md: mean TPOT 30-42 % short on the A100 40GB 70B TP8 and TP4 x PP2 runs"},
      {"roofline", "h100-sxm-80g", 0.484,
       "docs/FIDELITY.md section 7: batch latency -28 %, serving TPOT -39.6 % and -48.4 %"},
      {"roofline", "h200-141g", 0.408, "docs/FIDELITY.md section 7: batch latency -39.5 % and -39.8 %, ITL -40.8 %"},
      {"roofline", "", 0.484, "docs/FIDELITY.md section 7: the widest roofline step-time error, -48.4 % (H100)"},
      {"table", "", 0.05,
       "your own measured grid: its error is your measurement's, taken as 5 % (fleetplan measured none)"},
  };
  return rows;
}

StatedError StatedErrorOf(std::string_view kind, std::string_view gpu) {
  const StatedError* any_gpu = nullptr;
  const StatedError* widest = nullptr;
  for (const StatedError& row : StatedErrors()) {
    if (widest == nullptr || row.step_time > widest->step_time) widest = &row;
    if (row.kind != kind) continue;
    if (row.gpu == gpu) return row;
    if (row.gpu.empty()) any_gpu = &row;
  }
  if (any_gpu != nullptr) return *any_gpu;
  return StatedError{std::string(kind), std::string(gpu), widest->step_time,
                     fmt::format("no measured error for step model '{}': the widest of any model, {:.1f} %", kind,
                                 100.0 * widest->step_time)};
}

}  // namespace fleetplan
