// Rendering a FitResult: the text a platform engineer reads (aligned sections, GiB figures
// with their byte counts, every formula written out) and the JSON scripts read.
//
// JSON keys scripts rely on (stable): weights.bytes_total, weights.bytes_per_rank,
// kv.bytes_per_token, kv.bytes_per_token_per_rank, kv.bytes_per_sequence,
// kv.bytes_per_sequence_per_rank, kv.window_tokens, capacity.kv_bytes_per_rank,
// capacity.max_sequences, fits, binding_constraint, reasons. docs/fit.md lists the rest.
// "Per rank" figures are those of one GPU of the binding stage.
// Thread model: pure functions; output is deterministic (sorted JSON keys).
#pragma once

#include <span>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/memory/fit.h"

namespace fleetplan {

// `derived` lists defaulted or overridden inputs (ResolvedFit::derived).
std::string FitReportText(const FitResult& result, std::span<const std::string> derived);
Json FitReportJson(const FitResult& result, std::span<const std::string> derived);

}  // namespace fleetplan
