// Small SVG charts for the HTML reports: a line chart (also steps and CDFs), a grouped
// bar chart, and the CDF of a histogram. Each returns one self-contained <svg> element
// (inline styles, no script, no external reference), so a page is a string of them.
//
// Deterministic: coordinates are printed with one decimal and tick labels with a fixed
// number of significant digits (fmt), so the same data gives the same bytes on every
// machine. Axes: linear with "nice" ticks (1, 2, 5 x 10^k), or log10 with a tick per
// decade; non-positive values on a log axis, and non-finite values anywhere (a figure a
// report does not have), are left out of the line or the bars. Every line and bar
// carries a <title>, which browsers show as a tooltip, so values can be read without
// JavaScript.
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fleetplan::report {

struct ChartFrame {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  // The y axis from 0 (or y_min) to at least y_max (0: from the data).
  double y_min = 0;
  double y_max = 0;
  bool y_percent = false;  // tick labels as percentages of 1.0
  int width = 560;
  int height = 240;
};

struct Line {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;  // same length as x
  int color = 0;          // index into the palette (Color)
  bool step = false;      // hold each value until the next x (a CDF, a windowed series)
  bool dashed = false;
  bool dots = false;      // a circle at every point (a scatter when `no_line`)
  bool no_line = false;   // only the dots
  std::vector<std::string> point_labels;  // with dots: each circle's tooltip (default: `label`)
};

// A vertical marker: an SLO threshold, a boundary.
struct Marker {
  double x = 0;
  std::string label;
  int color = 0;
};

std::string LineChart(const ChartFrame& frame, std::span<const Line> lines, std::span<const Marker> markers = {});

// Bars: one group per category, one bar per series inside each group; `ticks` (one per
// group, optional) draws a short horizontal mark across the group (a target).
struct BarGroup {
  std::string label;
  std::vector<double> values;  // one per series
  std::optional<double> tick;
};
std::string BarChart(const ChartFrame& frame, std::span<const std::string> series, std::span<const BarGroup> groups);

// The CDF of a histogram with upper-inclusive buckets (metrics/histogram.h): a point at
// each edge, (edge, share of counts at or below it). Buckets past the last edge
// (overflow) keep the line below 1. Empty histograms give an empty line.
Line CdfOfHistogram(std::string label, std::span<const double> edges, std::span<const int64_t> counts, int color);

// The palette (colour-blind safe, 8 colours; wraps around).
std::string_view Color(int index);
// `v` with `digits` significant digits, no exponent below 1e9 (axis labels, tables).
std::string FormatNumber(double v, int digits = 3);

}  // namespace fleetplan::report
