// ReportToJson: the report's JSON form (docs/records.md "Report JSON").
#include <string>

#include "fleetplan/metrics/report.h"

namespace fleetplan {
namespace {

constexpr int kReportVersion = 1;  // bump when a key changes meaning or disappears

// Milliseconds from integer nanoseconds: ns / 1e6 is correctly rounded, so the shortest
// round-trip form is the exact decimal (at most 6 fractional digits); no rounding needed.
double Millis(Duration d) { return static_cast<double>(d.ns()) / 1e6; }

Json OptionalMillis(const std::optional<Duration>& d) { return d ? Json(Millis(*d)) : Json(nullptr); }

Json OptionalNumber(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json SummaryJson(const LatencySummary& s) {
  Json j = Json::object();
  j["count"] = s.count;
  j["p50"] = OptionalMillis(s.p50);
  j["p90"] = OptionalMillis(s.p90);
  j["p95"] = OptionalMillis(s.p95);
  j["p99"] = OptionalMillis(s.p99);
  j["max"] = OptionalMillis(s.max);
  j["mean"] = s.mean_ns ? Json(RoundForReport(*s.mean_ns / 1e6)) : Json(nullptr);
  return j;
}

Json StatusJson(const StatusCounts& counts) {
  Json j = Json::object();
  for (int i = 0; i < kRecordStatusCount; ++i) {
    j[std::string(RecordStatusName(static_cast<RecordStatus>(i)))] = counts.by_status[static_cast<size_t>(i)];
  }
  return j;
}

std::optional<double> Fraction(int64_t part, int64_t whole) {
  if (whole == 0) return std::nullopt;
  return RoundForReport(static_cast<double>(part) / static_cast<double>(whole));
}

Json ObjectivesJson(const ClassReport& c) {
  Json j = Json::object();
  for (const ObjectiveResult& o : c.objectives) {
    Json entry = Json::object();
    if (o.target) entry["target_ms"] = Millis(*o.target);
    entry["met"] = o.met;
    entry["attainment"] = OptionalNumber(Fraction(o.met, c.requests));
    j[std::string(ObjectiveName(o.objective))] = std::move(entry);
  }
  return j;
}

Json BucketsJson(const ClassReport& c) {
  Json j = Json::array();
  for (const OutputBucketResult& b : c.e2e_by_output) {
    Json entry = Json::object();
    entry["max_output"] = b.max_output ? Json(*b.max_output) : Json(nullptr);
    entry["target_ms"] = OptionalMillis(b.target);
    entry["requests"] = b.e2e.count;
    entry["met"] = b.target ? Json(b.met) : Json(nullptr);
    entry["e2e_ms"] = SummaryJson(b.e2e);
    j.push_back(std::move(entry));
  }
  return j;
}

Json ClassJson(const ClassReport& c) {
  Json j = Json::object();
  j["requests"] = c.requests;
  j["status"] = StatusJson(c.status);
  j["invalid_outputs"] = c.invalid_outputs;
  j["input_tokens"] = c.input_tokens;
  j["output_tokens"] = c.output_tokens;
  Json histograms = Json::object();
  for (int m = 0; m < kLatencyMetricCount; ++m) {
    const auto metric = static_cast<LatencyMetric>(m);
    j[std::string(LatencyMetricKey(metric))] = SummaryJson(c.of(metric));
    histograms[std::string(LatencyMetricKey(metric))] = c.histograms[static_cast<size_t>(m)];
  }
  j["histograms"] = std::move(histograms);
  j["objectives"] = ObjectivesJson(c);
  j["qualified"] = c.qualified;
  j["slo_attainment"] = OptionalNumber(c.slo_attainment);
  j["ok_in_window"] = c.ok_in_window;
  j["qualified_in_window"] = c.qualified_in_window;
  j["throughput_rps"] = c.throughput_rps;
  j["goodput_rps"] = c.goodput_rps;
  j["e2e_by_output"] = BucketsJson(c);
  return j;
}

Json FleetJson(const FleetReport& f) {
  Json j = Json::object();
  j["requests"] = f.requests;
  j["status"] = StatusJson(f.status);
  j["invalid_outputs"] = f.invalid_outputs;
  j["input_tokens"] = f.input_tokens;
  j["output_tokens"] = f.output_tokens;
  j["qualified"] = f.qualified;
  j["slo_attainment"] = OptionalNumber(f.slo_attainment);
  j["ok_in_window"] = f.ok_in_window;
  j["qualified_in_window"] = f.qualified_in_window;
  j["throughput_rps"] = f.throughput_rps;
  j["goodput_rps"] = f.goodput_rps;
  Json worst = nullptr;
  if (f.worst_class) {
    worst = Json::object();
    worst["name"] = *f.worst_class;
    worst["slo_attainment"] = OptionalNumber(f.worst_class_attainment);
  }
  j["worst_class"] = std::move(worst);
  return j;
}

Json WindowJson(const MeasurementWindow& w) {
  Json j = Json::object();
  j["start_s"] = w.start.seconds();
  j["end_s"] = w.end.seconds();
  j["duration_s"] = w.length().seconds();
  j["source"] = w.source;
  j["by"] = WindowByName(w.by);
  return j;
}

Json EdgesJson(const std::array<HistogramEdges, kLatencyMetricCount>& edges) {
  Json j = Json::object();
  for (int m = 0; m < kLatencyMetricCount; ++m) {
    Json list = Json::array();
    for (int64_t ns : edges[static_cast<size_t>(m)].edges_ns()) list.push_back(Millis(Duration::Nanos(ns)));
    j[std::string(LatencyMetricKey(static_cast<LatencyMetric>(m)))] = std::move(list);
  }
  return j;
}

Json InputsJson(const std::vector<ReportInput>& inputs) {
  Json j = Json::object();
  for (const ReportInput& in : inputs) {
    Json entry = Json::object();
    entry["path"] = in.path;
    entry["format"] = in.format;
    entry["digest"] = in.digest;
    j[in.role] = std::move(entry);
  }
  return j;
}

}  // namespace

Json ReportToJson(const Report& report) {
  Json j = Json::object();
  j["report_version"] = kReportVersion;
  j["window"] = WindowJson(report.window);
  j["inputs"] = InputsJson(report.inputs);
  j["notes"] = report.notes;
  j["slo"] = report.has_slo;
  j["histogram_edges_ms"] = EdgesJson(report.edges);
  Json classes = Json::object();
  for (const ClassReport& c : report.classes) classes[c.name] = ClassJson(c);
  j["classes"] = std::move(classes);
  j["fleet"] = FleetJson(report.fleet);
  return j;
}

}  // namespace fleetplan
