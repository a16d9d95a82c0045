// The table step model: a measured step-time grid, interpolated.
//
// CSV, one header line then one row per measured shape (docs/step-models.md):
//
//   decode_batch,prefill_tokens,step_ms
//   0,0,11.2
//   0,512,30.1
//   ...
//
// decode_batch and prefill_tokens are integers >= 0, step_ms a finite number >= 0 (ms).
// Blank lines and lines starting with '#' are skipped. The rows must form a full grid:
// every decode_batch value with every prefill_tokens value, exactly once, at least two
// values on each axis; row order is free. Every problem is a located error
// (file:line:col, the column name, expected vs got).
//
// A step (d decodes, p prefill tokens) is looked up at (d, p). Inside the grid the value
// is bilinear in the cell that contains it, so grid points come back exactly (to the
// nanosecond). Outside it:
//   extrapolate: false  Cost never leaves the grid: the factory checks at load time that
//                       the grid covers decode_batch 0..max_running (padded to the CUDA-
//                       graph bucket when graphs are on) and prefill_tokens
//                       0..max_batched_tokens, and reports the gap as an error.
//   extrapolate: true   clamp-free linear extrapolation: the value at the nearest grid
//                       point plus, per axis, the edge cell's slope times the distance
//                       beyond the edge (no cross term, so it stays linear when both axes
//                       are outside). StepCost.extrapolated is set. At load time the table
//                       must not decrease across its last interval on either axis and
//                       must not extrapolate below zero towards 0, so no step can come out
//                       negative or shorter than a smaller one at the edge.
// Context length does not enter (the table has no such axis).
// Thread model: immutable after loading; safe to share.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// The exact header of a step table.
inline constexpr std::string_view kStepTableHeader = "decode_batch,prefill_tokens,step_ms";

class StepTable {
 public:
  // `display_name` names the file in errors (as the user wrote it, or resolved).
  static Expected<StepTable> Parse(std::string_view csv_text, const std::string& display_name);
  // Reads and parses `path`; errors name `display_name`.
  static Expected<StepTable> Load(const std::string& path, const std::string& display_name);

  const std::vector<int64_t>& decode_batches() const { return xs_; }  // ascending
  const std::vector<int64_t>& prefill_tokens() const { return ys_; }  // ascending
  // The measured value at grid point (i, j), in nanoseconds (ms × 1e6, unrounded).
  double AtNs(size_t i, size_t j) const { return ns_[i * ys_.size() + j]; }
  const std::string& display_name() const { return name_; }

  // The interpolated (or extrapolated) value at (decode_batch, prefill_tokens) in ns;
  // *outside is set when the point is off the grid. O(log grid), no allocation.
  double ValueNs(int64_t decode_batch, int64_t prefill_tokens, bool* outside) const;

  // Load-time checks for extrapolate: true (see above) for steps up to max_decode decodes
  // and max_prefill prefill tokens: edges non-decreasing, nothing below zero, nothing
  // beyond an hour. A located error naming the row.
  Status CheckExtrapolationSafe(int64_t max_decode, int64_t max_prefill) const;
  // For extrapolate: false: the grid must cover [0, max_decode] × [0, max_prefill].
  // Returns a message (no location: the caller locates it at its `file:` field).
  std::string CoverageGap(int64_t max_decode, int64_t max_prefill) const;

 private:
  struct Slopes;
  Status RowError(size_t i, size_t j, std::string_view column, std::string_view message) const;

  std::string name_;
  std::vector<int64_t> xs_;        // decode_batch grid
  std::vector<int64_t> ys_;        // prefill_tokens grid
  std::vector<double> ns_;         // row-major: ns_[i * ys_.size() + j]
  std::vector<int> lines_;         // source line of each cell (same indexing)
  std::vector<std::string> text_;  // source text of each cell's line, for carets
};

class TableStepModel final : public StepCostModel {
 public:
  // REQUIRES: extrapolate, or every step Cost will see lies inside the grid (the factory
  // checks CoverageGap against the engine limits; a step outside is then a bug and
  // asserts). With extrapolate, CheckExtrapolationSafe passed for those limits.
  TableStepModel(StepTable table, bool extrapolate)
      : table_(std::move(table)), extrapolate_(extrapolate) {}

  StepCost Cost(std::span<const StepChunk> chunks) const override;
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override;
  std::string kind() const override { return "table"; }
  Json Describe() const override;

  const StepTable& table() const { return table_; }
  bool extrapolate() const { return extrapolate_; }

 private:
  StepCost CostOf(const StepShape& shape) const;
  StepTable table_;
  bool extrapolate_;
};

}  // namespace fleetplan
