// Reports: per-class and fleet figures from a stream of RequestRecords.
//
// A ReportBuilder takes records one at a time (from the simulator directly, or from a
// records file through metrics/records_io.h) and keeps, per class, only what the report
// needs: counters, histogram counts, one int64 per latency sample for the exact
// percentiles and one arrival and one finish time per ok request for the window (about
// 48 bytes per request; the records themselves are not kept). Finish() turns that into a Report.
//
// Figures, per class and for the fleet (docs/records.md "Report"):
//   - counts by status; invalid outputs; input and output tokens (all records);
//   - TTFT, TPOT, ITL-max, E2E distributions over requests with status ok
//     (nearest-rank p50/p90/p95/p99, max, mean; metrics/latency_summary.h);
//   - per objective: the target and how many requests met it; SLO attainment =
//     qualified / requests (metrics/slo.h); a request that did not finish ok qualifies
//     for nothing, so failures lower attainment rather than vanish from it;
//   - throughput_rps = ok requests of the window / its length, goodput_rps = qualified
//     requests of the window / its length, where a request is "of the window" when it
//     arrived inside it (the arrival cohort, the default: every request offered in the
//     window counts, however late it finishes) or, with WindowBy::kFinish, when it
//     finished inside it;
//   - E2E by output-length bucket: the class's e2e_by_output buckets, or the default
//     buckets (kDefaultOutputBuckets) when it declares none;
//   - histogram counts per latency metric over shared edges (metrics/histogram.h).
// The fleet has no latency percentiles on purpose: a fleet p99 would let one class's
// tail hide inside another's volume. It reports rates, counts, fleet-wide attainment,
// and the worst class by attainment, so a failing class is always named.
//
// Measurement window: [first arrival, last finish] over all records by default, or
// [first arrival, first arrival + length] when a length is given (both ends inclusive).
// It scopes the rates only; counts and distributions cover every record. Over the
// default window both ways of counting agree (every ok request arrived and finished
// inside it).
// Thread model: a builder is single-threaded; Report is a value type. Deterministic: the
// same records in any order give the same report.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/metrics/histogram.h"
#include "fleetplan/metrics/latency_summary.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/metrics/slo.h"

namespace fleetplan {

// Output-length bucket bounds used when a class declares no e2e_by_output: powers of two
// from 128 to 8192 tokens plus an open bucket, covering chat answers to long reports.
inline constexpr std::array<int64_t, 7> kDefaultOutputBuckets = {128,  256,  512, 1024,
                                                                 2048, 4096, 8192};

// The latency metrics of a report. Values index arrays; never renumber.
enum class LatencyMetric : int { kTtft = 0, kTpot = 1, kItlMax = 2, kE2e = 3 };
inline constexpr int kLatencyMetricCount = 4;
// "ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms" (the report's JSON keys).
std::string_view LatencyMetricKey(LatencyMetric metric);

// Which requests a window's rates count: those that arrived in it (the cohort offered
// during the window, whenever it finishes) or those that finished in it.
enum class WindowBy : int { kArrival = 0, kFinish = 1 };
// "arrival", "finish" (the report's window.by and --window-by).
std::string_view WindowByName(WindowBy by);
std::optional<WindowBy> ParseWindowBy(std::string_view name);

struct MeasurementWindow {
  SimTime start;
  SimTime end;
  std::string source;  // "first arrival to last finish", or who set the length
  WindowBy by = WindowBy::kArrival;
  Duration length() const { return end - start; }
};

struct ObjectiveResult {
  Objective objective = Objective::kTtft;
  std::optional<Duration> target;  // absent for e2e_by_output (targets are per bucket)
  int64_t met = 0;                 // requests meeting it (ok and within target)
};

struct OutputBucketResult {
  std::optional<int64_t> max_output;  // absent: the open (last) bucket
  std::optional<Duration> target;     // the class's e2e_by_output target, if any
  LatencySummary e2e;                 // ok requests whose output falls in the bucket
  int64_t met = 0;                    // of those, within target (0 without a target)
};

struct StatusCounts {
  std::array<int64_t, kRecordStatusCount> by_status{};
  int64_t of(RecordStatus s) const { return by_status[static_cast<size_t>(s)]; }
};

struct ClassReport {
  std::string name;
  int64_t requests = 0;
  StatusCounts status;
  int64_t invalid_outputs = 0;  // ok requests whose output failed validation
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::array<LatencySummary, kLatencyMetricCount> latency;  // index: LatencyMetric
  std::vector<ObjectiveResult> objectives;                 // declared ones, enum order
  int64_t qualified = 0;
  std::optional<double> slo_attainment;  // qualified / requests; absent with no requests
  int64_t ok_in_window = 0;
  int64_t qualified_in_window = 0;
  double throughput_rps = 0;
  double goodput_rps = 0;
  std::vector<OutputBucketResult> e2e_by_output;
  std::array<std::vector<int64_t>, kLatencyMetricCount> histograms;  // counts per bucket

  const LatencySummary& of(LatencyMetric m) const { return latency[static_cast<size_t>(m)]; }
};

struct FleetReport {
  int64_t requests = 0;
  StatusCounts status;
  int64_t invalid_outputs = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t qualified = 0;
  std::optional<double> slo_attainment;
  int64_t ok_in_window = 0;
  int64_t qualified_in_window = 0;
  double throughput_rps = 0;
  double goodput_rps = 0;
  // The class with the lowest attainment (ties: first in class order); absent when no
  // class has requests.
  std::optional<std::string> worst_class;
  std::optional<double> worst_class_attainment;
};

// Where a report's inputs came from: shown in the report so it can be traced.
struct ReportInput {
  std::string role;    // "records", "slo"
  std::string path;    // as the user named it
  std::string format;  // e.g. "fleetplan", "llmservingsim", "vllm-bench", "yaml"
  std::string digest;  // "sha256:..." of the file's bytes
};

struct Report {
  MeasurementWindow window;
  std::vector<ClassReport> classes;  // class-table order
  FleetReport fleet;
  std::array<HistogramEdges, kLatencyMetricCount> edges;
  bool has_slo = false;
  std::vector<ReportInput> inputs;
  std::vector<std::string> notes;    // what was derived or assumed, in words

  const ClassReport* FindClass(std::string_view name) const;
};

struct ReportOptions {
  std::optional<Duration> window;  // length from the first arrival; default: to last finish
  std::string window_source = "--window";
  WindowBy window_by = WindowBy::kArrival;
};

// Accumulates records. It is a RecordSink, so the record readers stream straight into it.
class ReportBuilder : public RecordSink {
 public:
  // `classes`: the class table (index = ClassId). When `open_classes`, ResolveClass adds
  // unseen names; otherwise an unknown name is an error listing the table and
  // `unknown_class_hint`. Every SLO class must be in the table (else an error located at
  // the SLO entry). REQUIRES: names non-empty and distinct.
  static Expected<ReportBuilder> Create(std::vector<std::string> classes, const SloSpec& slo,
                                        bool open_classes, std::string unknown_class_hint = "");

  ReportBuilder(ReportBuilder&&) noexcept;
  ReportBuilder& operator=(ReportBuilder&&) noexcept;
  ~ReportBuilder() override;

  const std::vector<std::string>& classes() const;
  // Records of class `id` so far.
  int64_t RequestsOf(ClassId id) const;

  // RecordSink. ResolveClass: an unlocated message when the name is empty or unknown.
  Expected<ClassId> ResolveClass(std::string_view name) override;
  bool NeedsItl(ClassId id) const override;
  // REQUIRES: id in the class table; CheckRecord(r, NeedsItl(r.class_id)) passes
  // (checked: a violation is a bug in the producer, not user input).
  void Add(const RequestRecord& r) override;

  // The report. Errors: no records; an empty window (first arrival == last finish, or no
  // record finished) when no length was given.
  Expected<Report> Finish(const ReportOptions& options = {}) &&;

 private:
  struct State;
  explicit ReportBuilder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The whole computation over records in memory. `classes` names the ClassIds.
Expected<Report> ComputeReport(const std::vector<std::string>& classes,
                               std::span<const RequestRecord> records, const SloSpec& slo,
                               const ReportOptions& options = {});

// Canonical-JSON-ready form (docs/records.md "Report JSON"). Milliseconds are exact
// (ns / 1e6); rates and means are rounded for report (core/json.h RoundForReport).
Json ReportToJson(const Report& report);

// Human-readable: the window, an aligned per-class table, the fleet line, objectives.
std::string FormatReportText(const Report& report);

}  // namespace fleetplan
