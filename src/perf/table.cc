#include "fleetplan/perf/table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/text_lines.h"
#include "fleetplan/memory/inputs.h"

namespace fleetplan {

namespace {

// No forward pass takes an hour; the bound keeps every nanosecond value (and products
// with any reachable shape) far inside int64.
constexpr double kMaxStepMs = 3'600'000.0;
constexpr double kNsPerMs = 1e6;
constexpr size_t kColumns = 3;
constexpr std::string_view kColumnNames[kColumns] = {"decode_batch", "prefill_tokens", "step_ms"};

struct Field {
  std::string_view text;
  int column = 1;  // 1-based column of the field's first character (after trimming)
};

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

Field TrimField(std::string_view raw, int column) {
  size_t b = 0;
  while (b < raw.size() && IsSpace(raw[b])) ++b;
  size_t e = raw.size();
  while (e > b && IsSpace(raw[e - 1])) --e;
  return Field{raw.substr(b, e - b), column + static_cast<int>(b)};
}

std::vector<Field> SplitFields(std::string_view line) {
  std::vector<Field> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    const size_t end = comma == std::string_view::npos ? line.size() : comma;
    fields.push_back(TrimField(line.substr(start, end - start), static_cast<int>(start) + 1));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

bool IsSkipped(std::string_view line) {
  const Field f = TrimField(line, 1);
  return f.text.empty() || f.text.front() == '#';
}

std::vector<std::string> ColumnNames() {
  return {std::string(kColumnNames[0]), std::string(kColumnNames[1]), std::string(kColumnNames[2])};
}

struct Cell {
  int64_t x = 0;
  int64_t y = 0;
  double ns = 0;
  int line = 0;
  std::string text;
};

class Parser {
 public:
  explicit Parser(const std::string& name) : name_(name) {}

  Status Error(int line, int column, std::string_view source, std::string_view path,
               std::string_view message) const {
    return LocatedError(SourceLocation{name_, line, column, std::string(source)}, path, message);
  }

  Status CheckHeader(int line, std::string_view text) const {
    const std::vector<Field> fields = SplitFields(text);
    const std::vector<std::string> names = ColumnNames();
    for (size_t k = 0; k < std::min(fields.size(), kColumns); ++k) {
      if (fields[k].text == kColumnNames[k]) continue;
      const bool known = std::find(names.begin(), names.end(), fields[k].text) != names.end();
      const std::string message =
          known ? fmt::format("column {} must be '{}', got '{}' (header: {})", k + 1,
                              kColumnNames[k], fields[k].text, kStepTableHeader)
                : fmt::format("{} (header: {})", UnknownNameMessage("column", fields[k].text, names),
                              kStepTableHeader);
      return Error(line, fields[k].column, text, "header", message);
    }
    if (fields.size() != kColumns) {
      const int column = fields.size() > kColumns ? fields[kColumns].column
                                                  : static_cast<int>(text.size()) + 1;
      return Error(line, column, text, "header",
                   fmt::format("expected {} columns '{}', got {}", kColumns, kStepTableHeader,
                               fields.size()));
    }
    return Status::Ok();
  }

  Expected<int64_t> Count(int line, std::string_view source, const Field& f, std::string_view column,
                          int64_t max) const {
    int64_t v = 0;
    const char* end = f.text.data() + f.text.size();
    const auto [ptr, ec] = std::from_chars(f.text.data(), end, v);
    if (f.text.empty() || ec != std::errc() || ptr != end || v < 0 || v > max) {
      return Error(line, f.column, source, column,
                   fmt::format("expected an integer in [0, {}], got '{}'", max, f.text));
    }
    return v;
  }

  Expected<double> Millis(int line, std::string_view source, const Field& f) const {
    double v = 0;
    const char* end = f.text.data() + f.text.size();
    const auto [ptr, ec] = std::from_chars(f.text.data(), end, v);
    if (f.text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v < 0 ||
        v > kMaxStepMs) {
      return Error(line, f.column, source, "step_ms",
                   fmt::format("expected milliseconds, a number in [0, {}], got '{}'", kMaxStepMs,
                               f.text));
    }
    return v;
  }

  Expected<Cell> Row(int line, std::string_view text) const {
    const std::vector<Field> fields = SplitFields(text);
    if (fields.size() != kColumns) {
      const int column = fields.size() > kColumns ? fields[kColumns].column
                                                  : static_cast<int>(text.size()) + 1;
      return Error(line, column, text, fields.size() > kColumns ? "row" : kColumnNames[fields.size()],
                   fmt::format("expected {} fields ({}), got {}", kColumns, kStepTableHeader,
                               fields.size()));
    }
    Cell c;
    c.line = line;
    c.text = std::string(text);
    FP_ASSIGN_OR_RETURN(c.x, Count(line, text, fields[0], kColumnNames[0], kMaxSequences));
    FP_ASSIGN_OR_RETURN(c.y, Count(line, text, fields[1], kColumnNames[1], kMaxTokens));
    FP_ASSIGN_OR_RETURN(const double ms, Millis(line, text, fields[2]));
    c.ns = ms * kNsPerMs;
    return c;
  }

 private:
  const std::string& name_;
};

std::vector<int64_t> DistinctSorted(const std::vector<Cell>& cells, int64_t Cell::*axis) {
  std::vector<int64_t> v;
  v.reserve(cells.size());
  for (const Cell& c : cells) v.push_back(c.*axis);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string JoinValues(const std::vector<int64_t>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

// Index i of the grid cell [v[i], v[i+1]] used for x: the one containing it, or the edge
// cell on the side x lies beyond. REQUIRES: v.size() >= 2, ascending.
size_t CellIndex(const std::vector<int64_t>& v, int64_t x) {
  const auto it = std::upper_bound(v.begin() + 1, v.end() - 1, x);
  return static_cast<size_t>(it - v.begin()) - 1;
}

int64_t Clamp(const std::vector<int64_t>& v, int64_t x) { return std::clamp(x, v.front(), v.back()); }

std::string Ms(double ns) { return fmt::format("{:.6g} ms", ns / kNsPerMs); }

}  // namespace

Expected<StepTable> StepTable::Parse(std::string_view text, const std::string& display_name) {
  StepTable t;
  t.name_ = display_name;
  const Parser parser(t.name_);
  std::vector<Cell> cells;
  bool header_seen = false;
  int last_line = 1;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    const int line_no = lines.line_no();
    last_line = line_no;
    if (IsSkipped(line)) continue;
    if (!header_seen) {
      FP_RETURN_IF_ERROR(parser.CheckHeader(line_no, line));
      header_seen = true;
      continue;
    }
    FP_ASSIGN_OR_RETURN(Cell cell, parser.Row(line_no, line));
    cells.push_back(std::move(cell));
  }
  if (!header_seen) {
    return parser.Error(1, 1, "", "header",
                        fmt::format("empty table: expected the header '{}'", kStepTableHeader));
  }
  if (cells.empty()) {
    return parser.Error(last_line, 1, "", "step_ms", "no data rows after the header");
  }

  t.xs_ = DistinctSorted(cells, &Cell::x);
  t.ys_ = DistinctSorted(cells, &Cell::y);
  for (const auto& [axis, values] : {std::pair{kColumnNames[0], &t.xs_}, std::pair{kColumnNames[1], &t.ys_}}) {
    if (values->size() < 2) {
      return parser.Error(cells.front().line, 1, cells.front().text, axis,
                          fmt::format("needs at least 2 distinct values to interpolate, got {} ({})",
                                      values->size(), JoinValues(*values)));
    }
  }
  const size_t nx = t.xs_.size();
  const size_t ny = t.ys_.size();
  constexpr int kUnset = 0;
  t.ns_.assign(nx * ny, 0.0);
  t.lines_.assign(nx * ny, kUnset);
  t.text_.assign(nx * ny, std::string());
  for (Cell& c : cells) {
    const size_t i = static_cast<size_t>(std::lower_bound(t.xs_.begin(), t.xs_.end(), c.x) - t.xs_.begin());
    const size_t j = static_cast<size_t>(std::lower_bound(t.ys_.begin(), t.ys_.end(), c.y) - t.ys_.begin());
    const size_t k = i * ny + j;
    if (t.lines_[k] != kUnset) {
      return parser.Error(c.line, 1, c.text, "decode_batch",
                          fmt::format("duplicate cell (decode_batch {}, prefill_tokens {}); first at line {}",
                                      c.x, c.y, t.lines_[k]));
    }
    t.ns_[k] = c.ns;
    t.lines_[k] = c.line;
    t.text_[k] = std::move(c.text);
  }
  for (size_t i = 0; i < nx; ++i) {
    for (size_t j = 0; j < ny; ++j) {
      if (t.lines_[i * ny + j] != kUnset) continue;
      return parser.Error(
          last_line, 1, "", "step_ms",
          fmt::format("missing cell (decode_batch {}, prefill_tokens {}): the rows must form a full "
                      "grid, every decode_batch ({}) with every prefill_tokens ({})",
                      t.xs_[i], t.ys_[j], JoinValues(t.xs_), JoinValues(t.ys_)));
    }
  }
  return t;
}

Expected<StepTable> StepTable::Load(const std::string& path, const std::string& display_name) {
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return Parse(text, display_name);
}

double StepTable::ValueNs(int64_t x, int64_t y, bool* outside) const {
  const size_t i = CellIndex(xs_, x);
  const size_t j = CellIndex(ys_, y);
  const size_t ny = ys_.size();
  const double f00 = ns_[i * ny + j];
  const double f01 = ns_[i * ny + j + 1];
  const double f10 = ns_[(i + 1) * ny + j];
  const double f11 = ns_[(i + 1) * ny + j + 1];
  const int64_t cx = Clamp(xs_, x);
  const int64_t cy = Clamp(ys_, y);
  const double wx = static_cast<double>(xs_[i + 1] - xs_[i]);
  const double wy = static_cast<double>(ys_[j + 1] - ys_[j]);
  const double tx = static_cast<double>(cx - xs_[i]) / wx;
  const double ty = static_cast<double>(cy - ys_[j]) / wy;
  // Bilinear at the clamped point; exact at grid points (t = 0 or 1 picks one corner).
  const double low = f00 + tx * (f10 - f00);   // along x at y_j
  const double high = f01 + tx * (f11 - f01);  // along x at y_{j+1}
  double v = low + ty * (high - low);
  *outside = cx != x || cy != y;
  if (*outside) {
    const double slope_x = ((1 - ty) * (f10 - f00) + ty * (f11 - f01)) / wx;
    const double slope_y = (high - low) / wy;
    v += static_cast<double>(x - cx) * slope_x + static_cast<double>(y - cy) * slope_y;
  }
  return v;
}

Status StepTable::RowError(size_t i, size_t j, std::string_view column, std::string_view message) const {
  const size_t k = i * ys_.size() + j;
  return LocatedError(SourceLocation{name_, lines_[k], 1, text_[k]}, column, message);
}

Status StepTable::CheckExtrapolationSafe(int64_t max_decode, int64_t max_prefill) const {
  const size_t nx = xs_.size();
  const size_t ny = ys_.size();
  double max_cell = 0;
  double max_slope_x = 0;
  double max_slope_y = 0;
  for (size_t j = 0; j < ny; ++j) {
    if (AtNs(nx - 1, j) < AtNs(nx - 2, j)) {
      return RowError(nx - 1, j, "step_ms",
                      fmt::format("with extrapolate: true the last decode_batch interval must not "
                                  "decrease: at prefill_tokens {} it goes {} (decode_batch {}) -> {} "
                                  "(decode_batch {}), so larger batches would extrapolate shorter",
                                  ys_[j], Ms(AtNs(nx - 2, j)), xs_[nx - 2], Ms(AtNs(nx - 1, j)), xs_[nx - 1]));
    }
    max_slope_x = std::max(max_slope_x, (AtNs(nx - 1, j) - AtNs(nx - 2, j)) /
                                            static_cast<double>(xs_[nx - 1] - xs_[nx - 2]));
  }
  for (size_t i = 0; i < nx; ++i) {
    if (AtNs(i, ny - 1) < AtNs(i, ny - 2)) {
      return RowError(i, ny - 1, "step_ms",
                      fmt::format("with extrapolate: true the last prefill_tokens interval must not "
                                  "decrease: at decode_batch {} it goes {} (prefill_tokens {}) -> {} "
                                  "(prefill_tokens {}), so longer prefills would extrapolate shorter",
                                  xs_[i], Ms(AtNs(i, ny - 2)), ys_[ny - 2], Ms(AtNs(i, ny - 1)), ys_[ny - 1]));
    }
    max_slope_y = std::max(max_slope_y, (AtNs(i, ny - 1) - AtNs(i, ny - 2)) /
                                            static_cast<double>(ys_[ny - 1] - ys_[ny - 2]));
  }
  for (const double v : ns_) max_cell = std::max(max_cell, v);
  // Above the grid every value is at most the largest cell plus the steepest edge slopes
  // times the distance beyond the edge; keep that under the per-step bound.
  const double reach = max_cell +
                       max_slope_x * static_cast<double>(std::max<int64_t>(0, max_decode - xs_.back())) +
                       max_slope_y * static_cast<double>(std::max<int64_t>(0, max_prefill - ys_.back()));
  if (reach > kMaxStepMs * kNsPerMs) {
    return LocatedError(SourceLocation{name_, 0, 0, ""}, "step_ms",
                        fmt::format("with extrapolate: true, steps up to decode_batch {} and "
                                    "prefill_tokens {} could extrapolate to {} (over an hour); the "
                                    "grid ends at decode_batch {} and prefill_tokens {}: extend it",
                                    max_decode, max_prefill, Ms(reach), xs_.back(), ys_.back()));
  }
  // Below the grid the value is linear between these points (see table.h), so checking
  // the points on the lines x = 0 and y = 0 at every grid coordinate covers every shape.
  auto check_at = [&](int64_t x, int64_t y, size_t i, size_t j) -> Status {
    bool outside = false;
    const double v = ValueNs(x, y, &outside);
    if (v >= 0) return Status::Ok();
    return RowError(i, j, "step_ms",
                    fmt::format("with extrapolate: true, extrapolating to decode_batch {}, "
                                "prefill_tokens {} gives {}; add rows at decode_batch 0 and "
                                "prefill_tokens 0",
                                x, y, Ms(v)));
  };
  FP_RETURN_IF_ERROR(check_at(0, 0, 0, 0));
  for (size_t j = 0; j < ny; ++j) FP_RETURN_IF_ERROR(check_at(0, ys_[j], 0, j));
  for (size_t i = 0; i < nx; ++i) FP_RETURN_IF_ERROR(check_at(xs_[i], 0, i, 0));
  return Status::Ok();
}

std::string StepTable::CoverageGap(int64_t max_decode, int64_t max_prefill) const {
  const bool decode_ok = xs_.front() <= 0 && xs_.back() >= max_decode;
  const bool prefill_ok = ys_.front() <= 0 && ys_.back() >= max_prefill;
  if (decode_ok && prefill_ok) return {};
  return fmt::format(
      "step table '{}' covers decode_batch {}..{} and prefill_tokens {}..{}, but steps reach "
      "decode_batch 0..{} and prefill_tokens 0..{}; extend the table or set extrapolate: true",
      name_, xs_.front(), xs_.back(), ys_.front(), ys_.back(), max_decode, max_prefill);
}

StepCost TableStepModel::CostOf(const StepShape& s) const {
  bool outside = false;
  const double ns = table_.ValueNs(s.decode_seqs, s.prefill_tokens, &outside);
  // Load-time checks make both hold: extrapolate: false covers every reachable shape, and
  // an extrapolating table never goes below zero.
  FP_ASSERT(extrapolate_ || !outside);
  FP_ASSERT(ns > -1.0);
  return StepCost{Duration::Nanos(std::max<int64_t>(0, std::llround(ns))), Duration(), outside};
}

StepCost TableStepModel::Cost(std::span<const StepChunk> chunks) const {
  return CostOf(Summarize(chunks));
}

StepCost TableStepModel::CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const {
  return CostOf(SummarizePadded(chunks, padding));
}

Json TableStepModel::Describe() const {
  Json j;
  j["kind"] = "table";
  j["file"] = table_.display_name();
  j["extrapolate"] = extrapolate_;
  j["decode_batch"] = table_.decode_batches();
  j["prefill_tokens"] = table_.prefill_tokens();
  j["interpolation"] = "bilinear";
  return j;
}

}  // namespace fleetplan
