#include "fleetplan/metrics/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

constexpr std::array<std::string_view, kLatencyMetricCount> kMetricKeys = {
    "ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms"};

size_t Index(LatencyMetric m) { return static_cast<size_t>(m); }

// One output-length bucket of a class: bound, optional target, the E2E samples.
struct BucketState {
  std::optional<int64_t> max_output;
  std::optional<Duration> target;
  std::vector<int64_t> e2e_ns;
  int64_t met = 0;
};

std::vector<BucketState> BucketsFor(const ClassObjectives& o) {
  std::vector<BucketState> buckets;
  for (const OutputBucketObjective& b : o.e2e_by_output) {
    buckets.push_back(BucketState{b.max_output, b.e2e, {}, 0});
  }
  if (buckets.empty()) {
    for (int64_t bound : kDefaultOutputBuckets) buckets.push_back(BucketState{bound, {}, {}, 0});
  }
  if (buckets.back().max_output) buckets.push_back(BucketState{});  // open, no target
  return buckets;
}

size_t BucketIndex(const std::vector<BucketState>& buckets, int64_t output_tokens) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!buckets[i].max_output || output_tokens <= *buckets[i].max_output) return i;
  }
  FP_ASSERT(false);  // the last bucket is always open
  return buckets.size() - 1;
}

struct ClassState {
  std::string name;
  ClassObjectives objectives;
  std::vector<Objective> declared;  // objectives this class has, enum order
  int64_t requests = 0;
  StatusCounts status;
  int64_t invalid_outputs = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t qualified = 0;
  std::array<int64_t, kObjectiveCount> met{};
  // TTFT, TPOT, ITL-max samples; E2E samples live in the buckets (one copy each).
  std::array<std::vector<int64_t>, 3> samples;
  std::vector<BucketState> buckets;
  std::array<std::vector<int64_t>, kLatencyMetricCount> histograms;
  // For the window, whose length and counting come at Finish: (arrival, finish) of each
  // ok request, and whether it qualified.
  std::vector<std::array<int64_t, 2>> ok_times_ns;
  std::vector<bool> ok_qualified;
};

}  // namespace

std::string_view LatencyMetricKey(LatencyMetric metric) { return kMetricKeys[Index(metric)]; }

std::string_view WindowByName(WindowBy by) { return by == WindowBy::kArrival ? "arrival" : "finish"; }

std::optional<WindowBy> ParseWindowBy(std::string_view name) {
  if (name == "arrival") return WindowBy::kArrival;
  if (name == "finish") return WindowBy::kFinish;
  return std::nullopt;
}

const ClassReport* Report::FindClass(std::string_view name) const {
  for (const ClassReport& c : classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

struct ReportBuilder::State {
  std::vector<std::string> names;
  std::vector<ClassState> classes;
  bool open_classes = false;
  bool has_slo = false;
  std::string unknown_class_hint;
  std::array<HistogramEdges, kLatencyMetricCount> edges;
  int64_t records = 0;
  SimTime first_arrival = SimTime::Max();
  std::optional<SimTime> last_finish;
  ClassId last_resolved = -1;  // ResolveClass fast path: records of one class often cluster

  ClassId AddClass(std::string name, const ClassObjectives& objectives) {
    ClassState c;
    c.name = name;
    c.objectives = objectives;
    for (int i = 0; i < kObjectiveCount; ++i) {
      if (objectives.Has(static_cast<Objective>(i))) c.declared.push_back(static_cast<Objective>(i));
    }
    c.buckets = BucketsFor(objectives);
    for (size_t m = 0; m < c.histograms.size(); ++m) c.histograms[m].assign(edges[m].bucket_count(), 0);
    names.push_back(std::move(name));
    classes.push_back(std::move(c));
    return static_cast<ClassId>(classes.size() - 1);
  }

  void Sample(ClassState& c, LatencyMetric m, Duration v) {
    c.histograms[Index(m)][edges[Index(m)].BucketOf(v)] += 1;
    if (m != LatencyMetric::kE2e) c.samples[Index(m)].push_back(v.ns());
  }
};

namespace {

std::array<HistogramEdges, kLatencyMetricCount> EdgesFor(const SloSpec& slo) {
  std::array<std::vector<Duration>, kLatencyMetricCount> targets;
  for (const ClassSlo& c : slo.classes()) {
    const ClassObjectives& o = c.objectives;
    if (o.ttft) targets[Index(LatencyMetric::kTtft)].push_back(*o.ttft);
    if (o.tpot) targets[Index(LatencyMetric::kTpot)].push_back(*o.tpot);
    if (o.itl_max) targets[Index(LatencyMetric::kItlMax)].push_back(*o.itl_max);
    if (o.e2e) targets[Index(LatencyMetric::kE2e)].push_back(*o.e2e);
    for (const OutputBucketObjective& b : o.e2e_by_output) {
      targets[Index(LatencyMetric::kE2e)].push_back(b.e2e);
    }
  }
  std::array<HistogramEdges, kLatencyMetricCount> edges;
  for (size_t m = 0; m < edges.size(); ++m) edges[m] = HistogramEdges::WithTargets(targets[m]);
  return edges;
}

double PerSecond(int64_t count, Duration window) {
  return RoundForReport(static_cast<double>(count) / window.seconds());
}

// (ok requests, qualified requests) of the window, counted by arrival or by finish.
std::pair<int64_t, int64_t> CountWithin(const std::vector<std::array<int64_t, 2>>& times,
                                        const std::vector<bool>& qualified, const MeasurementWindow& w) {
  const size_t which = w.by == WindowBy::kArrival ? 0 : 1;
  std::pair<int64_t, int64_t> counts{0, 0};
  for (size_t i = 0; i < times.size(); ++i) {
    const int64_t t = times[i][which];
    if (t < w.start.ns() || t > w.end.ns()) continue;
    ++counts.first;
    if (qualified[i]) ++counts.second;
  }
  return counts;
}

}  // namespace

ReportBuilder::ReportBuilder(std::unique_ptr<State> state) : state_(std::move(state)) {}
ReportBuilder::ReportBuilder(ReportBuilder&&) noexcept = default;
ReportBuilder& ReportBuilder::operator=(ReportBuilder&&) noexcept = default;
ReportBuilder::~ReportBuilder() = default;

Expected<ReportBuilder> ReportBuilder::Create(std::vector<std::string> classes, const SloSpec& slo,
                                              bool open_classes, std::string unknown_class_hint) {
  auto state = std::make_unique<State>();
  state->open_classes = open_classes;
  state->has_slo = !slo.empty();
  state->unknown_class_hint = std::move(unknown_class_hint);
  state->edges = EdgesFor(slo);
  for (const ClassSlo& c : slo.classes()) {
    if (std::find(classes.begin(), classes.end(), c.name) == classes.end()) {
      return LocatedError(c.where, c.path, UnknownNameMessage("class", c.name, classes));
    }
  }
  for (std::string& name : classes) {
    FP_ASSERT(!name.empty());
    FP_ASSERT(std::count(state->names.begin(), state->names.end(), name) == 0);
    const ClassSlo* declared = slo.Find(name);
    state->AddClass(std::move(name), declared ? declared->objectives : ClassObjectives{});
  }
  return ReportBuilder(std::move(state));
}

const std::vector<std::string>& ReportBuilder::classes() const { return state_->names; }

int64_t ReportBuilder::RequestsOf(ClassId id) const {
  return state_->classes.at(static_cast<size_t>(id)).requests;
}

Expected<ClassId> ReportBuilder::ResolveClass(std::string_view name) {
  State& s = *state_;
  if (s.last_resolved >= 0 && s.names[static_cast<size_t>(s.last_resolved)] == name) {
    return s.last_resolved;
  }
  if (name.empty()) return InvalidInput("expected a non-empty class name");
  for (size_t i = 0; i < s.names.size(); ++i) {
    if (s.names[i] == name) {
      s.last_resolved = static_cast<ClassId>(i);
      return s.last_resolved;
    }
  }
  if (!s.open_classes) {
    std::string message = UnknownNameMessage("class", name, s.names);
    if (!s.unknown_class_hint.empty()) message += "; " + s.unknown_class_hint;
    return InvalidInput(std::move(message));
  }
  s.last_resolved = s.AddClass(std::string(name), ClassObjectives{});
  return s.last_resolved;
}

bool ReportBuilder::NeedsItl(ClassId id) const {
  return state_->classes.at(static_cast<size_t>(id)).objectives.itl_max.has_value();
}

void ReportBuilder::Add(const RequestRecord& r) {
  State& s = *state_;
  FP_ASSERT(r.class_id >= 0 && static_cast<size_t>(r.class_id) < s.classes.size());
  ClassState& c = s.classes[static_cast<size_t>(r.class_id)];
  FP_ASSERT(!CheckRecord(r, c.objectives.itl_max.has_value(), FleetplanRecordFieldNames()));
  ++s.records;
  ++c.requests;
  c.status.by_status[static_cast<size_t>(r.status)] += 1;
  c.input_tokens += r.input_tokens;
  c.output_tokens += r.output_tokens;
  s.first_arrival = std::min(s.first_arrival, r.arrival);
  if (r.finish && (!s.last_finish || *r.finish > *s.last_finish)) s.last_finish = r.finish;
  const Verdict verdict = Evaluate(r, c.objectives);
  if (r.status == RecordStatus::kOk) {
    if (!r.valid) ++c.invalid_outputs;
    for (Objective o : c.declared) c.met[static_cast<size_t>(o)] += verdict.Missed(o) ? 0 : 1;
    s.Sample(c, LatencyMetric::kTtft, *Ttft(r));
    if (std::optional<Duration> tpot = Tpot(r)) s.Sample(c, LatencyMetric::kTpot, *tpot);
    if (r.itl_max && r.output_tokens >= 2) s.Sample(c, LatencyMetric::kItlMax, *r.itl_max);
    const Duration e2e = *E2e(r);
    s.Sample(c, LatencyMetric::kE2e, e2e);
    BucketState& bucket = c.buckets[BucketIndex(c.buckets, r.output_tokens)];
    bucket.e2e_ns.push_back(e2e.ns());
    if (bucket.target && e2e <= *bucket.target) ++bucket.met;
    c.ok_times_ns.push_back({r.arrival.ns(), r.finish->ns()});
    c.ok_qualified.push_back(verdict.qualified);
  }
  if (verdict.qualified) ++c.qualified;
}

namespace {

Expected<MeasurementWindow> WindowOf(const ReportOptions& options, SimTime first_arrival,
                                     std::optional<SimTime> last_finish) {
  MeasurementWindow w;
  w.start = first_arrival;
  w.by = options.window_by;
  if (options.window) {
    if (*options.window <= Duration()) {
      return InvalidInput(fmt::format("{}: expected a positive window length",
                                      options.window_source));
    }
    if (*options.window > Duration::Max() - first_arrival.since_start()) {
      return InvalidInput(fmt::format("{}: the window is too long for the clock", options.window_source));
    }
    w.end = first_arrival + *options.window;
    w.source = options.window_source;
    return w;
  }
  if (!last_finish) {
    return InvalidInput(
        "no record has a finish time, so the measurement window (first arrival to last "
        "finish) is empty; give its length with --window");
  }
  w.end = *last_finish;
  w.source = "first arrival to last finish";
  if (w.end <= w.start) {
    return InvalidInput(fmt::format(
        "the measurement window is empty (first arrival = last finish = {} s); give its "
        "length with --window",
        w.start.seconds()));
  }
  return w;
}

ClassReport FinishClass(ClassState& c, const MeasurementWindow& window) {
  ClassReport r;
  r.name = c.name;
  r.requests = c.requests;
  r.status = c.status;
  r.invalid_outputs = c.invalid_outputs;
  r.input_tokens = c.input_tokens;
  r.output_tokens = c.output_tokens;
  for (size_t m = 0; m < c.samples.size(); ++m) r.latency[m] = Summarize(c.samples[m]);
  std::vector<int64_t> all_e2e;
  for (BucketState& b : c.buckets) {
    all_e2e.insert(all_e2e.end(), b.e2e_ns.begin(), b.e2e_ns.end());
    r.e2e_by_output.push_back(OutputBucketResult{b.max_output, b.target, Summarize(b.e2e_ns), b.met});
    std::vector<int64_t>().swap(b.e2e_ns);
  }
  r.latency[Index(LatencyMetric::kE2e)] = Summarize(all_e2e);
  for (Objective o : c.declared) {
    ObjectiveResult result;
    result.objective = o;
    switch (o) {
      case Objective::kTtft: result.target = c.objectives.ttft; break;
      case Objective::kTpot: result.target = c.objectives.tpot; break;
      case Objective::kItlMax: result.target = c.objectives.itl_max; break;
      case Objective::kE2e: result.target = c.objectives.e2e; break;
      case Objective::kE2eByOutput: break;
    }
    result.met = c.met[static_cast<size_t>(o)];
    r.objectives.push_back(result);
  }
  r.qualified = c.qualified;
  if (c.requests > 0) {
    r.slo_attainment = RoundForReport(static_cast<double>(c.qualified) / static_cast<double>(c.requests));
  }
  std::tie(r.ok_in_window, r.qualified_in_window) = CountWithin(c.ok_times_ns, c.ok_qualified, window);
  r.throughput_rps = PerSecond(r.ok_in_window, window.length());
  r.goodput_rps = PerSecond(r.qualified_in_window, window.length());
  r.histograms = std::move(c.histograms);
  return r;
}

FleetReport FleetOf(const std::vector<ClassReport>& classes, Duration window) {
  FleetReport f;
  for (const ClassReport& c : classes) {
    f.requests += c.requests;
    for (size_t i = 0; i < f.status.by_status.size(); ++i) f.status.by_status[i] += c.status.by_status[i];
    f.invalid_outputs += c.invalid_outputs;
    f.input_tokens += c.input_tokens;
    f.output_tokens += c.output_tokens;
    f.qualified += c.qualified;
    f.ok_in_window += c.ok_in_window;
    f.qualified_in_window += c.qualified_in_window;
    if (!c.slo_attainment) continue;
    // Lowest attainment; ties go to the smaller name, so record order never matters.
    if (!f.worst_class_attainment || *c.slo_attainment < *f.worst_class_attainment ||
        (*c.slo_attainment == *f.worst_class_attainment && c.name < *f.worst_class)) {
      f.worst_class = c.name;
      f.worst_class_attainment = c.slo_attainment;
    }
  }
  if (f.requests > 0) {
    f.slo_attainment = RoundForReport(static_cast<double>(f.qualified) / static_cast<double>(f.requests));
  }
  f.throughput_rps = PerSecond(f.ok_in_window, window);
  f.goodput_rps = PerSecond(f.qualified_in_window, window);
  return f;
}

}  // namespace

Expected<Report> ReportBuilder::Finish(const ReportOptions& options) && {
  State& s = *state_;
  if (s.records == 0) return InvalidInput("no records to report on");
  Report report;
  FP_ASSIGN_OR_RETURN(report.window, WindowOf(options, s.first_arrival, s.last_finish));
  report.edges = s.edges;
  report.has_slo = s.has_slo;
  for (ClassState& c : s.classes) {
    report.classes.push_back(FinishClass(c, report.window));
  }
  if (s.open_classes) {  // first-seen order depends on record order; names do not
    std::sort(report.classes.begin(), report.classes.end(),
              [](const ClassReport& a, const ClassReport& b) { return a.name < b.name; });
  }
  report.fleet = FleetOf(report.classes, report.window.length());
  return report;
}

Expected<Report> ComputeReport(const std::vector<std::string>& classes,
                               std::span<const RequestRecord> records, const SloSpec& slo,
                               const ReportOptions& options) {
  FP_ASSIGN_OR_RETURN(ReportBuilder builder,
                      ReportBuilder::Create(classes, slo, /*open_classes=*/false));
  // In-memory records may come from anywhere: check them here so a bad one is an error,
  // not the builder's assertion.
  for (size_t i = 0; i < records.size(); ++i) {
    const RequestRecord& r = records[i];
    if (r.class_id < 0 || static_cast<size_t>(r.class_id) >= classes.size()) {
      return InvalidInput(fmt::format("record {} (id {}): class: no class has handle {}", i, r.id,
                                      r.class_id));
    }
    if (auto problem = CheckRecord(r, builder.NeedsItl(r.class_id), FleetplanRecordFieldNames())) {
      return InvalidInput(fmt::format("record {} (id {}): {}: {}", i, r.id,
                                      FleetplanRecordFieldNames()[static_cast<size_t>(problem->field)],
                                      problem->message));
    }
    builder.Add(r);
  }
  return std::move(builder).Finish(options);
}

}  // namespace fleetplan
