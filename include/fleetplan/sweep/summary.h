// What a sweep concludes from its point rows (docs/sweep.md "Output"):
//   configurations[]  per configuration, every figure's mean and 95% interval over seeds
//                     (Student's t; no interval with one seed), its status, and whether
//                     it meets every target: the interval's lower bound of each targeted
//                     class's attainment >= the target;
//   best              per objective — `goodput_per_gpu` (highest, meeting the targets),
//                     `fewest_gpus` (lowest GPUs meeting the targets at the point's rate,
//                     then highest goodput per GPU), `max_rate_per_gpu` (with a search) —
//                     chosen on the lower bound; every configuration whose interval reaches
//                     the winner's lower bound is listed in `tied_with`, and the call is
//                     "tie" rather than "winner" when there is one;
//   pareto            the configurations not dominated in (goodput per GPU up, TTFT p99 of
//                     the pareto class down), by TTFT;
//   counts, notes     points by status; non-monotone searches; seeds that disagree.
// Everything is a function of the spec description and the rows, so a merge of partial
// results gives the same bytes as one run.
//
// Memory: the rows and the configurations stay in spools (spool.h) and are read back one
// configuration at a time; what the summary keeps in memory is the spec, the Pareto front,
// the notes and one configuration per objective — not a figure per point. Every writer
// below streams, so writing sweep.json, sweep.csv or the table does not hold them either.
// Thread model: a SweepResult is read-only once made; its writers may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/core/status.h"
#include "fleetplan/sweep/spool.h"

namespace fleetplan {

// Two-sided 95% Student's t quantile for `df` degrees of freedom (df >= 1).
double StudentT95(int64_t df);

// {"mean", "ci95": [lo, hi] or null, "n"} over `values` (n >= 1).
Json MeanInterval(const std::vector<double>& values);

// The sweep document: {"kind": "fleetplan-sweep", "spec", "points", "configurations",
// "best", "pareto", "counts", "notes"}, its points and configurations held in spools.
class SweepResult {
 public:
  const Json& spec() const { return spec_; }
  int64_t failed() const { return counts_.at("failed").get<int64_t>(); }
  int64_t invalid() const { return counts_.at("invalid").get<int64_t>(); }
  int64_t ok() const { return counts_.at("ok").get<int64_t>(); }

  // sweep.json: the document's PrettyJson bytes, written piece by piece.
  Status WriteJson(const TextSink& sink) const;
  // sweep.csv: one row per point, the figures of its JSON row (header first; RFC 4180).
  Status WriteCsv(const TextSink& sink) const;
  // The human summary: one line per configuration, the best per objective, the front.
  Status WriteText(const TextSink& sink) const;
  // The whole document as one value (for small sweeps: it holds every row).
  Expected<Json> ToJson() const;
  // The document for a page: every part but `configurations` and `points`, the first
  // `max_configurations` configurations, and for the first `max_curves` of them with a
  // search the first seed's row that has one; `shown` says how many of how many.
  Expected<Json> PageView(int64_t max_configurations, int64_t max_curves) const;

 private:
  friend Expected<SweepResult> SummarizeSweep(const Json& spec, std::unique_ptr<JsonSpool> rows);
  Status WriteTableRows(const TextSink& sink) const;
  Json Conclusions() const;

  Json spec_;
  std::unique_ptr<JsonSpool> rows_;     // by point index
  std::unique_ptr<JsonSpool> configs_;  // by configuration
  std::vector<std::string> classes_;    // every row's class names, sorted
  Json best_, pareto_, counts_, notes_;
};

// The summary of `rows` (slot = point index; every point of the spec once). Errors: a
// point without a row (InternalError naming it), a spool that cannot be read or written.
Expected<SweepResult> SummarizeSweep(const Json& spec, std::unique_ptr<JsonSpool> rows);

// Rows from memory into a spool of `points` slots (each row at its "index").
Expected<std::unique_ptr<JsonSpool>> SpoolRows(int64_t points, const std::vector<Json>& rows);

}  // namespace fleetplan
