// FormatReportText: the human-readable report, an aligned table per class.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fleetplan/metrics/report.h"

namespace fleetplan {
namespace {

using Row = std::vector<std::string>;

std::string Ms(const std::optional<Duration>& d) {
  return d ? fmt::format("{:.1f}", static_cast<double>(d->ns()) / 1e6) : "-";
}

std::string Percent(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}%", *v * 100.0) : "-";
}

std::string Rate(double v) { return fmt::format("{:.3f}", v); }

// Columns two spaces apart: the first left-aligned, the rest right-aligned (numbers) or
// left-aligned (text).
std::string Table(const std::vector<Row>& rows, bool numbers = true) {
  std::vector<size_t> width;
  for (const Row& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      const bool right = numbers && i > 0;
      line += right ? fmt::format("{:>{}}", row[i], width[i]) : fmt::format("{:<{}}", row[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

int64_t NotOk(const StatusCounts& s) {
  int64_t n = 0;
  for (int i = 1; i < kRecordStatusCount; ++i) n += s.by_status[static_cast<size_t>(i)];
  return n;
}

Row ClassRow(const ClassReport& c) {
  const LatencySummary& ttft = c.of(LatencyMetric::kTtft);
  const LatencySummary& tpot = c.of(LatencyMetric::kTpot);
  const LatencySummary& itl = c.of(LatencyMetric::kItlMax);
  const LatencySummary& e2e = c.of(LatencyMetric::kE2e);
  return {c.name,
          std::to_string(c.requests),
          std::to_string(c.status.of(RecordStatus::kOk)),
          std::to_string(NotOk(c.status)),
          Percent(c.slo_attainment),
          Rate(c.goodput_rps),
          Rate(c.throughput_rps),
          Ms(ttft.p50),
          Ms(ttft.p99),
          Ms(tpot.p50),
          Ms(tpot.p99),
          Ms(itl.p99),
          Ms(e2e.p50),
          Ms(e2e.p99)};
}

Row FleetRow(const FleetReport& f) {
  return {"(fleet)",       std::to_string(f.requests), std::to_string(f.status.of(RecordStatus::kOk)),
          std::to_string(NotOk(f.status)), Percent(f.slo_attainment), Rate(f.goodput_rps),
          Rate(f.throughput_rps)};
}

std::string ObjectivesText(const Report& report) {
  std::vector<Row> rows;
  for (const ClassReport& c : report.classes) {
    Row row = {c.name};
    for (const ObjectiveResult& o : c.objectives) {
      const std::optional<double> share =
          c.requests > 0 ? std::optional<double>(static_cast<double>(o.met) / static_cast<double>(c.requests))
                         : std::nullopt;
      const std::string target = o.target ? fmt::format(" <= {} ms", Ms(o.target)) : " (per bucket)";
      row.push_back(fmt::format("{}{}: {}", ObjectiveName(o.objective), target, Percent(share)));
    }
    if (row.size() == 1) row.push_back("(no objectives)");
    rows.push_back(std::move(row));
  }
  return Table(rows, /*numbers=*/false);
}

}  // namespace

std::string FormatReportText(const Report& report) {
  std::string out = fmt::format(
      "measurement window: {} s .. {} s ({} s; {}; rates count the requests that {} in it)\n",
      report.window.start.seconds(), report.window.end.seconds(), report.window.length().seconds(),
      report.window.source, report.window.by == WindowBy::kArrival ? "arrived" : "finished");
  std::vector<Row> rows = {{"class", "requests", "ok", "not ok", "slo", "goodput/s", "thru/s", "ttft p50",
                            "ttft p99", "tpot p50", "tpot p99", "itl-max p99", "e2e p50", "e2e p99"}};
  for (const ClassReport& c : report.classes) rows.push_back(ClassRow(c));
  rows.push_back(FleetRow(report.fleet));
  out += "\n" + Table(rows);
  out += "(latencies in ms over ok requests; slo = qualified / requests; rates per second of the window)\n";
  if (report.has_slo) out += "\nobjectives met (share of requests):\n" + ObjectivesText(report);
  if (report.fleet.worst_class) {
    out += fmt::format("\nworst class: {} ({})\n", *report.fleet.worst_class,
                       Percent(report.fleet.worst_class_attainment));
  }
  for (const std::string& note : report.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace fleetplan
