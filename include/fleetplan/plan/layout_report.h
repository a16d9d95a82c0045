// Rendering a LayoutResult: the text an engineer reads (a ranking table per phase with the
// terms that decide it, the verdict with the close-call threshold, the rejected
// compositions with their reasons, what was derived) and the JSON scripts read.
//
// JSON keys scripts rely on (stable):
//   feasible[]  {gpu, tp, pp, ep, dp, replicas, bytes_per_rank, prefill_ms, decode_ms,
//                comm_ms: {prefill, decode}, tokens_per_s_per_gpu: {prefill, decode},
//                prefill_rank, decode_rank, batch, batch_asked,
//                near_miss: null | {fits_sequences, asked_sequences, text}, ...}
//               in decode rank order (near misses after the layouts that fit)
//   inputs.operating_point {rule, batch | fleet_sequences, context, prefill_tokens, text}
//   rejected[]  {gpu, tp, pp, ep, reason}
//   ranking.{prefill, decode}.{best, too_close_to_call[], threshold}
// docs/layout.md lists the rest.
// Thread model: pure functions; output is deterministic (sorted JSON keys).
#pragma once

#include <cstdint>
#include <string>

#include "fleetplan/core/json.h"
#include "fleetplan/plan/cluster.h"
#include "fleetplan/plan/layout.h"

namespace fleetplan {

// Rows of each ranking table and rejected lines the text shows (JSON has them all).
inline constexpr int64_t kLayoutTextRows = 10;
inline constexpr int64_t kLayoutTextRejected = 20;

std::string LayoutReportText(const LayoutResult& result, const Cluster& cluster, int64_t rows = kLayoutTextRows);
Json LayoutReportJson(const LayoutResult& result, const Cluster& cluster);

// "tp 4 × pp 2", with " × ep 2" when ep > 1.
std::string LayoutName(const Parallelism& p);
// "fits 59 of 64 sequences" (a near miss: FeasibleLayout::near_miss()).
std::string NearMissText(const FeasibleLayout& f);
// The operating point a request ranks at, in words and as JSON (inputs.operating_point).
std::string OperatingPointText(const LayoutRequest& q);
Json OperatingPointJson(const LayoutRequest& q);

}  // namespace fleetplan
