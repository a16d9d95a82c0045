#include "fleetplan/report/svg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fleetplan/report/page.h"

namespace fleetplan::report {
namespace {

// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
constexpr std::string_view kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                         "#e69f00", "#56b4e9", "#7f7f7f", "#f0e442"};

// Plot area inside the frame (pixels).
constexpr double kLeft = 64;
constexpr double kRight = 16;
constexpr double kTop = 40;  // title, then the legend row
constexpr double kBottom = 40;

std::string Px(double v) { return fmt::format("{:.1f}", v); }

struct Scale {
  double lo = 0;
  double hi = 1;
  bool log = false;
  double from = 0;  // pixels
  double to = 1;
  double operator()(double v) const {
    const double a = log ? std::log10(lo) : lo;
    const double b = log ? std::log10(hi) : hi;
    const double t = ((log ? std::log10(v) : v) - a) / (b - a);
    return from + t * (to - from);
  }
};

// 1, 2 or 5 x 10^k, the smallest at or above `raw`.
double NiceStep(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw * (1 - 1e-12)) return m * p;
  }
  return 10 * p;
}

std::vector<double> LinearTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  const double step = NiceStep((hi - lo) / target);
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  std::vector<double> ticks;
  for (double e = std::ceil(std::log10(lo) - 1e-9); e <= std::log10(hi) + 1e-9; e += 1) ticks.push_back(std::pow(10.0, e));
  return ticks;
}

std::string TickLabel(double v, bool percent) {
  return percent ? FormatNumber(v * 100, 3) + "%" : FormatNumber(v, 3);
}

// The frame, title, axes with ticks and grid; returns the opening of the <svg>.
std::string Frame(const ChartFrame& f, const Scale& x, const Scale& y, std::span<const double> x_ticks,
                  std::span<const double> y_ticks) {
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)",
      f.width, f.height, f.width, f.height);
  out += fmt::format(R"(<title>{}</title>)", HtmlEscape(f.title));
  out += fmt::format(R"(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)", f.width, f.height);
  out += fmt::format(R"(<text x="{}" y="16" class="ct">{}</text>)", Px(kLeft), HtmlEscape(f.title));
  const double x0 = kLeft;
  const double x1 = f.width - kRight;
  const double y0 = f.height - kBottom;
  const double y1 = kTop;
  for (double t : y_ticks) {
    const double py = y(t);
    out += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="grid"/>)", Px(x0), Px(py), Px(x1), Px(py));
    out += fmt::format(R"(<text x="{}" y="{}" class="tl" text-anchor="end">{}</text>)", Px(x0 - 4), Px(py + 4),
                       TickLabel(t, f.y_percent));
  }
  for (double t : x_ticks) {
    const double px = x(t);
    out += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="grid"/>)", Px(px), Px(y0), Px(px), Px(y1));
    out += fmt::format(R"(<text x="{}" y="{}" class="tl" text-anchor="middle">{}</text>)", Px(px), Px(y0 + 14),
                       TickLabel(t, false));
  }
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" class="axes"/>)", Px(x0), Px(y1), Px(x1 - x0),
                     Px(y0 - y1));
  out += fmt::format(R"(<text x="{}" y="{}" class="al" text-anchor="middle">{}</text>)", Px((x0 + x1) / 2),
                     Px(f.height - 6.0), HtmlEscape(f.x_label));
  out += fmt::format(R"~(<text x="12" y="{}" class="al" text-anchor="middle" transform="rotate(-90 12 {})">{}</text>)~",
                     Px((y0 + y1) / 2), Px((y0 + y1) / 2), HtmlEscape(f.y_label));
  return out;
}

// Legend entries along the top right.
std::string Legend(const ChartFrame& f, std::span<const std::string> labels, std::span<const int> colors) {
  std::string out;
  (void)f;
  double x = kLeft;
  for (size_t i = 0; i < labels.size(); ++i) {
    out += fmt::format(R"(<rect x="{}" y="22" width="10" height="10" fill="{}"/>)", Px(x), Color(colors[i]));
    out += fmt::format(R"(<text x="{}" y="31" class="tl">{}</text>)", Px(x + 14), HtmlEscape(labels[i]));
    x += 14 + 6.2 * static_cast<double>(labels[i].size()) + 12;
  }
  return out;
}

}  // namespace

std::string_view Color(int index) {
  const auto n = static_cast<int>(std::size(kPalette));
  return kPalette[static_cast<size_t>(((index % n) + n) % n)];
}

std::string FormatNumber(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e9 || a < 1e-4) return fmt::format("{:.{}g}", v, digits);
  // Fixed notation with `digits` significant digits, trailing zeros dropped.
  const int magnitude = static_cast<int>(std::floor(std::log10(a)));
  const int decimals = std::max(0, digits - 1 - magnitude);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string LineChart(const ChartFrame& f, std::span<const Line> lines, std::span<const Marker> markers) {
  double xlo = std::numeric_limits<double>::infinity();
  double xhi = -xlo;
  double yhi = f.y_max;
  // A point without a finite value (a figure the report does not have) is left out.
  const auto drawable = [&](const Line& l, size_t i) {
    return std::isfinite(l.x[i]) && std::isfinite(l.y[i]) && !(f.log_x && l.x[i] <= 0);
  };
  for (const Line& l : lines) {
    for (size_t i = 0; i < l.x.size(); ++i) {
      if (!drawable(l, i)) continue;
      xlo = std::min(xlo, l.x[i]);
      xhi = std::max(xhi, l.x[i]);
      yhi = std::max(yhi, l.y[i]);
    }
  }
  for (const Marker& m : markers) {
    if (!std::isfinite(m.x) || (f.log_x && m.x <= 0)) continue;
    xlo = std::min(xlo, m.x);
    xhi = std::max(xhi, m.x);
  }
  if (!std::isfinite(xlo)) {
    xlo = f.log_x ? 1 : 0;
    xhi = f.log_x ? 10 : 1;
  }
  if (f.log_x) {
    xlo = std::pow(10.0, std::floor(std::log10(xlo)));
    xhi = std::pow(10.0, std::ceil(std::log10(xhi)));
    if (xhi <= xlo) xhi = xlo * 10;
  } else if (xhi <= xlo) {
    xhi = xlo + 1;
  }
  if (yhi <= f.y_min) yhi = f.y_min + 1;
  const std::vector<double> y_ticks = LinearTicks(f.y_min, yhi, 4);
  yhi = std::max(yhi, y_ticks.back());
  const Scale x{xlo, xhi, f.log_x, kLeft, f.width - kRight};
  const Scale y{f.y_min, yhi, false, f.height - kBottom, kTop};
  const std::vector<double> x_ticks = f.log_x ? LogTicks(xlo, xhi) : LinearTicks(xlo, xhi, 6);
  std::string out = Frame(f, x, y, x_ticks, y_ticks);
  for (const Line& l : lines) {
    std::string points;
    double prev_y = 0;
    bool first = true;
    for (size_t i = 0; i < l.x.size(); ++i) {
      if (!drawable(l, i)) continue;
      const double px = x(l.x[i]);
      const double py = y(l.y[i]);
      if (l.step && !first) points += Px(px) + "," + Px(prev_y) + " ";
      points += Px(px) + "," + Px(py) + " ";
      prev_y = py;
      first = false;
    }
    if (points.empty()) continue;
    points.pop_back();
    if (!l.no_line) {
      out += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.6"{}><title>{}</title></polyline>)",
                         points, Color(l.color), l.dashed ? R"( stroke-dasharray="5 3")" : "", HtmlEscape(l.label));
    }
    if (l.dots) {
      for (size_t i = 0; i < l.x.size(); ++i) {
        if (!drawable(l, i)) continue;
        const std::string& tip = i < l.point_labels.size() ? l.point_labels[i] : l.label;
        out += fmt::format(R"(<circle cx="{}" cy="{}" r="3.5" fill="{}"><title>{}</title></circle>)", Px(x(l.x[i])),
                           Px(y(l.y[i])), Color(l.color), HtmlEscape(tip));
      }
    }
  }
  for (size_t i = 0; i < markers.size(); ++i) {
    const Marker& m = markers[i];
    if (!std::isfinite(m.x) || (f.log_x && m.x <= 0)) continue;
    const double px = x(m.x);
    const double label_y = kTop + 10 + 11 * static_cast<double>(i % 4);  // staggered: thresholds may sit close
    out += fmt::format(
        R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.2" stroke-dasharray="3 3"><title>{}</title></line>)",
        Px(px), Px(f.height - kBottom), Px(px), Px(kTop), Color(m.color), HtmlEscape(m.label));
    out += fmt::format(R"(<text x="{}" y="{}" class="ml" fill="{}">{}</text>)", Px(px + 3), Px(label_y),
                       Color(m.color), HtmlEscape(m.label));
  }
  std::vector<std::string> labels;
  std::vector<int> colors;
  for (const Line& l : lines) {
    if (std::find(labels.begin(), labels.end(), l.label) != labels.end()) continue;
    labels.push_back(l.label);
    colors.push_back(l.color);
  }
  if (labels.size() > 1) out += Legend(f, labels, colors);
  return out + "</svg>";
}

std::string BarChart(const ChartFrame& f, std::span<const std::string> series, std::span<const BarGroup> groups) {
  double yhi = f.y_max;
  for (const BarGroup& g : groups) {
    for (double v : g.values) {
      if (std::isfinite(v)) yhi = std::max(yhi, v);
    }
    if (g.tick && std::isfinite(*g.tick)) yhi = std::max(yhi, *g.tick);
  }
  if (yhi <= f.y_min) yhi = f.y_min + 1;
  const std::vector<double> y_ticks = LinearTicks(f.y_min, yhi, 4);
  yhi = std::max(yhi, y_ticks.back());
  const Scale y{f.y_min, yhi, false, f.height - kBottom, kTop};
  const Scale x{0, 1, false, kLeft, f.width - kRight};
  std::string out = Frame(f, x, y, {}, y_ticks);
  const double plot = f.width - kRight - kLeft;
  const double slot = groups.empty() ? plot : plot / static_cast<double>(groups.size());
  const double bar = std::max(1.0, slot * 0.8 / static_cast<double>(std::max<size_t>(series.size(), 1)));
  for (size_t g = 0; g < groups.size(); ++g) {
    const double gx = kLeft + slot * static_cast<double>(g) + slot * 0.1;
    for (size_t s = 0; s < groups[g].values.size(); ++s) {
      const double v = groups[g].values[s];
      if (!std::isfinite(v)) continue;  // a figure the report does not have: no bar
      const double top = y(std::max(v, f.y_min));
      out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} {}: {}</title></rect>)",
                         Px(gx + bar * static_cast<double>(s)), Px(top), Px(bar), Px(y(f.y_min) - top),
                         Color(static_cast<int>(s)), HtmlEscape(groups[g].label),
                         HtmlEscape(s < series.size() ? series[s] : ""), TickLabel(v, f.y_percent));
    }
    if (groups[g].tick && std::isfinite(*groups[g].tick)) {
      const double ty = y(*groups[g].tick);
      out += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#000000" stroke-width="2"><title>{} target: {}</title></line>)",
                         Px(gx - 2), Px(ty), Px(gx + slot * 0.8 + 2), Px(ty), HtmlEscape(groups[g].label),
                         TickLabel(*groups[g].tick, f.y_percent));
    }
    out += fmt::format(R"(<text x="{}" y="{}" class="tl" text-anchor="middle">{}</text>)", Px(gx + slot * 0.4),
                       Px(f.height - kBottom + 14), HtmlEscape(groups[g].label));
  }
  std::vector<int> colors;
  for (size_t s = 0; s < series.size(); ++s) colors.push_back(static_cast<int>(s));
  if (series.size() > 1) out += Legend(f, series, colors);
  return out + "</svg>";
}

Line CdfOfHistogram(std::string label, std::span<const double> edges, std::span<const int64_t> counts, int color) {
  Line l;
  l.label = std::move(label);
  l.color = color;
  l.step = true;
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (total == 0) return l;
  // From the last edge with nothing at or below it to the first with everything: the
  // flat ends say nothing and would stretch the axis over decades.
  const size_t n = std::min(edges.size(), counts.size());
  size_t first = 0;
  while (first + 1 < n && counts[first] == 0 && counts[first + 1] == 0) ++first;
  int64_t below = 0;
  for (size_t i = 0; i < first; ++i) below += counts[i];
  for (size_t i = first; i < n; ++i) {
    below += counts[i];
    l.x.push_back(edges[i]);
    l.y.push_back(static_cast<double>(below) / static_cast<double>(total));
    if (below == total) break;
  }
  return l;
}

}  // namespace fleetplan::report
