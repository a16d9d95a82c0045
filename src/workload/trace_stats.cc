// Trace statistics (trace_stats.h): exact percentiles from value -> count tables and
// distinct prefix blocks from a sorted-unique key array compacted as it grows.
#include "fleetplan/workload/trace_stats.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan {
namespace {

// Compact the unsorted tail of a key array once it is this large (and at least as large
// as the sorted part): amortised O(log n) per key, memory at most ~2x the distinct keys.
constexpr size_t kMinCompactTail = size_t{1} << 16;

// Sorts the tail [sorted, end), merges it into the sorted-unique prefix, drops duplicates.
template <typename T>
void CompactSortedUnique(std::vector<T>* keys, size_t* sorted) {
  std::sort(keys->begin() + static_cast<ptrdiff_t>(*sorted), keys->end());
  std::inplace_merge(keys->begin(), keys->begin() + static_cast<ptrdiff_t>(*sorted), keys->end());
  keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
  *sorted = keys->size();
}

template <typename T>
void MaybeCompact(std::vector<T>* keys, size_t* sorted) {
  const size_t tail = keys->size() - *sorted;
  if (tail >= kMinCompactTail && tail >= *sorted) CompactSortedUnique(keys, sorted);
}

// Report precision: 9 significant digits keep millisecond times exact up to ~11 days.
Json Rounded(double v) { return RoundForReport(v); }

}  // namespace

int64_t CountHistogram::Percentile(double p) const {
  FP_ASSERT(n_ > 0 && p > 0 && p <= 1);
  // Nearest rank: the smallest value with at least ceil(p * n) values at or below it.
  // metrics/percentile.h states this definition for the reports, but the workload layer
  // sits above metrics and may not use it; here it walks a value -> count table, and the
  // 1e-9 keeps a product that rounds just above an integer (0.07 * 100 is
  // 7.000000000000001 as a double) at that integer's rank.
  const auto rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p * static_cast<double>(n_) - 1e-9)));
  int64_t seen = 0;
  for (const auto& [value, count] : counts_) {
    seen += count;
    if (seen >= rank) return value;
  }
  return counts_.rbegin()->first;
}

int64_t CountHistogram::min() const {
  FP_ASSERT(n_ > 0);
  return counts_.begin()->first;
}

int64_t CountHistogram::max() const {
  FP_ASSERT(n_ > 0);
  return counts_.rbegin()->first;
}

LengthSummary LengthSummary::Of(const CountHistogram& h) {
  LengthSummary s;
  s.count = h.count();
  if (s.count == 0) return s;
  s.min = h.min();
  s.p50 = h.Percentile(0.50);
  s.p90 = h.Percentile(0.90);
  s.p99 = h.Percentile(0.99);
  s.max = h.max();
  s.mean = h.mean();
  return s;
}

Json LengthSummary::ToJson() const {
  return {{"min", min}, {"mean", Rounded(mean)}, {"p50", p50}, {"p90", p90}, {"p99", p99}, {"max", max}};
}

Json TraceStats::ToJson() const {
  Json classes_json = Json::object();
  for (const ClassStats& c : classes) {
    classes_json[c.name] = {{"requests", c.requests},
                            {"share", Rounded(static_cast<double>(c.requests) / static_cast<double>(requests))},
                            {"prompt_tokens", c.prompt_tokens.ToJson()},
                            {"output_tokens", c.output_tokens.ToJson()}};
  }
  return {{"requests", requests},
          {"first_arrival_s", Rounded(first_arrival.seconds())},
          {"last_arrival_s", Rounded(last_arrival.seconds())},
          {"span_s", Rounded(span().seconds())},
          {"rate_per_s", rate_per_s ? Json(Rounded(*rate_per_s)) : Json()},
          {"prompt_tokens", prompt_tokens.ToJson()},
          {"output_tokens", output_tokens.ToJson()},
          {"classes", std::move(classes_json)},
          {"prefix_blocks",
           {{"block_tokens", block_tokens},
            {"total", blocks_total},
            {"distinct", blocks_distinct},
            {"reuse_ratio", Rounded(reuse_ratio)}}},
          {"sessions", sessions},
          {"with_deadline", with_deadline},
          {"with_cancel", with_cancel},
          {"with_adapter", with_adapter}};
}

std::string TraceStats::ToText() const {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "requests     {}\n", requests);
  fmt::format_to(it, "span         {:.3f} s ({:.3f} s to {:.3f} s)\n", span().seconds(), first_arrival.seconds(),
                 last_arrival.seconds());
  if (rate_per_s) {
    fmt::format_to(it, "rate         {:.3f} req/s\n", *rate_per_s);
  } else {
    fmt::format_to(it, "rate         n/a (every request arrives at the same time)\n");
  }
  fmt::format_to(it, "prefix       {} blocks of {} tokens, {} distinct, reuse ratio {:.4f}\n", blocks_total,
                 block_tokens, blocks_distinct, reuse_ratio);
  if (sessions > 0) fmt::format_to(it, "sessions     {}\n", sessions);
  if (with_deadline + with_cancel + with_adapter > 0) {
    fmt::format_to(it, "with         deadline {}, cancel {}, adapter {}\n", with_deadline, with_cancel, with_adapter);
  }
  fmt::format_to(it, "\n{:<20} {:>9} {:>7}  {:<6} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "class", "requests",
                 "share", "tokens", "mean", "min", "p50", "p90", "p99", "max");
  const auto row = [&](std::string_view name, int64_t n, std::string_view kind, const LengthSummary& s, bool first) {
    if (first) {
      fmt::format_to(it, "{:<20} {:>9} {:>7.4f}  ", name, n, static_cast<double>(n) / static_cast<double>(requests));
    } else {
      fmt::format_to(it, "{:<20} {:>9} {:>7}  ", "", "", "");
    }
    fmt::format_to(it, "{:<6} {:>9.1f} {:>8} {:>8} {:>8} {:>8} {:>8}\n", kind, s.mean, s.min, s.p50, s.p90, s.p99,
                   s.max);
  };
  for (const ClassStats& c : classes) {
    row(c.name, c.requests, "prompt", c.prompt_tokens, true);
    row(c.name, c.requests, "output", c.output_tokens, false);
  }
  if (classes.size() > 1) {
    row("(all)", requests, "prompt", prompt_tokens, true);
    row("(all)", requests, "output", output_tokens, false);
  }
  return out;
}

TraceStatsAccumulator::TraceStatsAccumulator(int64_t block_tokens) : block_tokens_(block_tokens) {
  FP_ASSERT(block_tokens >= 1);
}

void TraceStatsAccumulator::Add(const Request& r) {
  if (requests_ == 0) first_ = r.arrival;
  last_ = r.arrival;
  ++requests_;
  const int64_t prompt = r.prompt_tokens();
  prompt_.Add(prompt);
  output_.Add(r.output_tokens);
  const auto c = static_cast<size_t>(r.class_id);
  if (class_prompt_.size() <= c) {
    class_prompt_.resize(c + 1);
    class_output_.resize(c + 1);
  }
  class_prompt_[c].Add(prompt);
  class_output_[c].Add(r.output_tokens);
  const size_t before = blocks_.size();
  AppendBlockKeys(r.prompt, block_tokens_, 0, &blocks_);
  blocks_total_ += static_cast<int64_t>(blocks_.size() - before);
  MaybeCompact(&blocks_, &sorted_);
  if (r.session >= 0) {
    sessions_.push_back(r.session);
    MaybeCompact(&sessions_, &sessions_sorted_);
  }
  if (r.deadline) ++with_deadline_;
  if (r.cancel_at) ++with_cancel_;
  if (r.adapter != kNoAdapter) ++with_adapter_;
}

TraceStats TraceStatsAccumulator::Finish(const WorkloadNames& names) {
  FP_ASSERT(requests_ > 0);
  CompactSortedUnique(&blocks_, &sorted_);
  CompactSortedUnique(&sessions_, &sessions_sorted_);
  TraceStats s;
  s.requests = requests_;
  s.first_arrival = first_;
  s.last_arrival = last_;
  if (last_ > first_) {
    s.rate_per_s = static_cast<double>(requests_ - 1) / (last_ - first_).seconds();
  }
  s.prompt_tokens = LengthSummary::Of(prompt_);
  s.output_tokens = LengthSummary::Of(output_);
  for (size_t c = 0; c < class_prompt_.size(); ++c) {
    if (class_prompt_[c].count() == 0) continue;
    FP_ASSERT(c < names.classes.size());
    s.classes.push_back(ClassStats{names.classes[c], class_prompt_[c].count(), LengthSummary::Of(class_prompt_[c]),
                                   LengthSummary::Of(class_output_[c])});
  }
  s.block_tokens = block_tokens_;
  s.blocks_total = blocks_total_;
  s.blocks_distinct = static_cast<int64_t>(blocks_.size());
  s.reuse_ratio = blocks_total_ == 0 ? 0.0
                                     : 1.0 - static_cast<double>(s.blocks_distinct) / static_cast<double>(blocks_total_);
  s.sessions = static_cast<int64_t>(sessions_.size());
  s.with_deadline = with_deadline_;
  s.with_cancel = with_cancel_;
  s.with_adapter = with_adapter_;
  return s;
}

}  // namespace fleetplan
