#include "fleetplan/serve/prometheus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fleetplan::serve {

Histogram::Histogram(std::vector<double> upper_bounds) : upper_(std::move(upper_bounds)), counts_(upper_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  const auto it = std::lower_bound(upper_.begin(), upper_.end(), v);
  ++counts_[static_cast<size_t>(it - upper_.begin())];
  sum_ += v;
  ++count_;
}

uint64_t Histogram::CountAtMost(double bound) const {
  uint64_t n = 0;
  for (size_t i = 0; i < upper_.size(); ++i) {
    if (upper_[i] > bound) return n;
    n += counts_[i];
  }
  return count_;
}

void Histogram::Render(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, PromNumber(upper_[i]),
                       PromNumber(static_cast<double>(cumulative)));
  }
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, PromNumber(static_cast<double>(count_)));
  const std::string braces = labels.empty() ? "" : fmt::format("{{{}}}", labels);
  out += fmt::format("{}_count{} {}\n", name, braces, PromNumber(static_cast<double>(count_)));
  out += fmt::format("{}_sum{} {}\n", name, braces, PromNumber(sum_));
}

std::vector<double> TtftBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> InterTokenBuckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> RequestLatencyBuckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> Buckets125(int64_t max_value) {
  std::vector<double> b;
  for (int64_t scale = 1;; scale *= 10) {
    for (const int64_t m : {1, 2, 5}) {
      const int64_t v = m * scale;
      if (v > max_value) {
        if (b.empty() || b.back() != static_cast<double>(max_value)) b.push_back(static_cast<double>(max_value));
        return b;
      }
      b.push_back(static_cast<double>(v));
    }
  }
}

std::vector<double> LatenessBuckets() {
  return {0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0};
}

std::string PromNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);  // shortest round-trip, like Python's repr
}

void AppendHelp(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string LabelValue(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace fleetplan::serve
