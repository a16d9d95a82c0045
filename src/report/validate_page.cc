#include "fleetplan/report/validate_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fleetplan/report/svg.h"
#include "report/json_view.h"

namespace fleetplan::report {
namespace {

// Where a point is drawn on the x axis, and what the axis is.
struct Axis {
  std::string label;
  std::vector<double> x;  // one per point
  std::vector<Marker> markers;
};

Axis XAxis(const Json& points) {
  Axis a;
  bool all_capped = !points.empty();
  for (const Json& p : points) all_capped = all_capped && Get(p, "max_concurrency").is_number();
  if (all_capped) {
    a.label = "max concurrency";
    for (const Json& p : points) a.x.push_back(Num(Get(p, "max_concurrency")));
    return a;
  }
  // Request rate; a point sent all at once is drawn at twice the largest finite rate.
  double largest = 0;
  for (const Json& p : points) {
    if (Get(p, "request_rate").is_number()) largest = std::max(largest, Num(Get(p, "request_rate")));
  }
  const double inf_at = largest > 0 ? 2 * largest : 1;
  bool any_inf = false;
  for (const Json& p : points) {
    const bool inf = !Get(p, "request_rate").is_number();
    any_inf = any_inf || inf;
    a.x.push_back(inf ? inf_at : Num(Get(p, "request_rate")));
  }
  a.label = "request rate (req/s)";
  if (any_inf) a.markers.push_back(Marker{inf_at, "inf (all at once)", 7});
  return a;
}

std::string MetricChart(const Json& report, const char* metric, const char* title) {
  const Json& points = Get(report, "points");
  const Axis axis = XAxis(points);
  std::vector<size_t> order(axis.x.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return axis.x[a] < axis.x[b]; });
  Line measured{"measured", {}, {}, 0, false, false, true, false, {}};
  Line simulated{"simulated", {}, {}, 1, false, true, true, false, {}};
  for (size_t i : order) {
    const Json& p = points[i];
    const Json& m = Get(Get(p, "metrics"), metric);
    const std::string label = Get(p, "label").is_string() ? Get(p, "label").get<std::string>() : "";
    measured.x.push_back(axis.x[i]);
    measured.y.push_back(Num(Get(Get(m, "measured_ms"), "mean")));
    measured.point_labels.push_back(fmt::format("{}: measured {} ms", label, N(Get(Get(m, "measured_ms"), "mean"), 4)));
    simulated.x.push_back(axis.x[i]);
    simulated.y.push_back(Num(Get(Get(m, "simulated_ms"), "mean")));
    simulated.point_labels.push_back(fmt::format(
        "{}: simulated {} ms ({}%)", label, N(Get(Get(m, "simulated_ms"), "mean"), 4), N(Get(m, "mean_error_pct"), 3)));
  }
  ChartFrame frame{title, axis.label, "ms"};
  const std::vector<Line> lines = {measured, simulated};
  return Charts({LineChart(frame, lines, axis.markers)});
}

std::string Summary(const Json& r) {
  const Json& s = Get(r, "setup");
  std::vector<std::vector<std::string>> rows = {
      {"setup", Text(Get(s, "path"))},
      {"model", Text(Get(s, "model")) + " (catalog " + Text(Get(s, "catalog_model")) + ")"},
      {"GPU", Text(Get(s, "gpu"))},
      {"layout", fmt::format("tp {} x pp {}", N(Get(s, "tp"), 9), N(Get(s, "pp"), 9))},
      {"engine",
       fmt::format("version {}, max_num_seqs {}, max_num_batched_tokens {}, block {}, scheduler {}",
                   Text(Get(s, "engine_version")), N(Get(s, "max_num_seqs"), 9), N(Get(s, "max_num_batched_tokens"), 9),
                   N(Get(s, "block_size"), 9), Text(Get(s, "scheduler")))},
      {"KV blocks per replica", N(Get(s, "kv_blocks"), 9)},
      {"step model", Text(Get(Get(r, "step_model"), "kind"))},
  };
  std::string out = HtmlTable({"", ""}, rows);
  std::vector<std::vector<std::string>> errors;
  for (const char* metric : {"ttft", "tpot", "e2e"}) {
    const Json& m = Get(Get(r, "summary"), metric);
    errors.push_back({metric, N(Get(m, "mean_abs_error_pct"), 3) + "%", N(Get(m, "points"), 9)});
  }
  return out + Para("Mean |error| of the mean over the points, (simulated - measured) / measured:") +
         HtmlTable({"metric", "mean |error|", "points"}, errors);
}

std::string Points(const Json& r) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& p : Get(r, "points")) {
    for (const char* metric : {"ttft", "tpot", "e2e", "itl"}) {
      const Json& m = Get(Get(p, "metrics"), metric);
      if (!m.is_object()) continue;
      std::vector<std::string> row = {Text(Get(p, "label")), metric};
      for (const char* stat : {"mean", "median", "p99"}) {
        row.push_back(N(Get(Get(m, "measured_ms"), stat), 4));
        row.push_back(N(Get(Get(m, "simulated_ms"), stat), 4));
        const Json& e = Get(m, std::string(stat) + "_error_pct");
        row.push_back(e.is_number() ? fmt::format("{:+.1f}%", Num(e)) : "-");
      }
      rows.push_back(std::move(row));
    }
  }
  return HtmlTable({"point", "metric", "mean meas. ms", "mean sim. ms", "error", "median meas.", "median sim.", "error",
                    "p99 meas.", "p99 sim.", "error"},
                   rows);
}

std::string Notes(const Json& r) {
  std::string out;
  for (const Json& n : Get(r, "notes")) out += Para(Plain(n));
  for (const Json& p : Get(r, "points")) {
    for (const Json& n : Get(p, "notes")) out += Para(Plain(Get(p, "label")) + ": " + Plain(n));
  }
  return out;
}

}  // namespace

Page BenchValidationPage(const Json& r) {
  Page page;
  const Json& s = Get(r, "setup");
  page.title = "fleetplan validate: " + Plain(Get(s, "model")) + " on " + Plain(Get(s, "gpu"));
  page.subtitle = fmt::format("{} points against vllm bench serve results; setup {}", Get(r, "points").size(),
                              Plain(Get(s, "path")));
  page.sections = {
      {"summary", "Summary", Summary(r)},
      {"points", "Measured and simulated, per point", Points(r)},
      {"ttft", "Mean TTFT", MetricChart(r, "ttft", "mean TTFT, measured and simulated")},
      {"tpot", "Mean TPOT", MetricChart(r, "tpot", "mean TPOT, measured and simulated")},
      {"notes", "Notes", Notes(r)},
  };
  return page;
}

std::string BenchValidationHtml(const Json& r) {
  return RenderPage(BenchValidationPage(r));
}

}  // namespace fleetplan::report
