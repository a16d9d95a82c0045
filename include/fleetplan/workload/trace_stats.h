// Summary statistics of a request stream (what `fleetplan trace stats` prints).
//
// Figures and their exact definitions:
//  - requests; span = last arrival - first arrival; rate = (requests - 1) / span, the
//    mean arrival rate over the span (null when the span is 0);
//  - per class and overall, prompt and output tokens: min, mean, p50, p90, p99, max,
//    with nearest-rank percentiles (the smallest value v with at least ceil(p * n)
//    values <= v), computed exactly from a value -> count table;
//  - prefix blocks at `block_tokens` (default 512, Mooncake's block size): total =
//    sum of ceil(prompt / B); distinct = number of distinct chained block keys
//    (content.h; a partial last block is a block of its own length); reuse ratio =
//    1 - distinct / total, the share of block occurrences an unbounded prefix cache
//    would have seen before.
// Memory: O(distinct lengths + distinct blocks), nothing per request.
// Thread model: single-threaded accumulator; TraceStats is a value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/workload/content.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

// Mooncake's block granularity, so a Mooncake trace's distinct-block count equals its
// distinct hash ids.
inline constexpr int64_t kDefaultStatsBlockTokens = 512;

// An exact distribution of non-negative integers as value -> count.
class CountHistogram {
 public:
  void Add(int64_t value) { ++counts_[value]; ++n_; sum_ += static_cast<double>(value); }
  int64_t count() const { return n_; }
  // REQUIRES: count() > 0. p in (0, 1].
  int64_t Percentile(double p) const;
  int64_t min() const;
  int64_t max() const;
  double mean() const { return n_ == 0 ? 0.0 : sum_ / static_cast<double>(n_); }
 private:
  std::map<int64_t, int64_t> counts_;
  int64_t n_ = 0;
  double sum_ = 0;  // exact while below 2^53 (9e15 tokens)
};

struct LengthSummary {
  int64_t count = 0;
  int64_t min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  double mean = 0;
  static LengthSummary Of(const CountHistogram& h);
  Json ToJson() const;
};

struct ClassStats {
  std::string name;
  int64_t requests = 0;
  LengthSummary prompt_tokens, output_tokens;
};

struct TraceStats {
  int64_t requests = 0;
  SimTime first_arrival, last_arrival;
  std::optional<double> rate_per_s;      // null when the span is 0
  LengthSummary prompt_tokens, output_tokens;
  std::vector<ClassStats> classes;       // handle order; classes with no request left out
  int64_t block_tokens = kDefaultStatsBlockTokens;
  int64_t blocks_total = 0, blocks_distinct = 0;
  double reuse_ratio = 0;
  int64_t sessions = 0;                  // distinct session ids
  int64_t with_deadline = 0, with_cancel = 0, with_adapter = 0;

  Duration span() const { return last_arrival - first_arrival; }
  Json ToJson() const;        // numbers rounded for reports (RoundForReport)
  std::string ToText() const; // the human-readable table
};

class TraceStatsAccumulator {
 public:
  // REQUIRES: block_tokens >= 1.
  explicit TraceStatsAccumulator(int64_t block_tokens = kDefaultStatsBlockTokens);
  void Add(const Request& request);
  // REQUIRES: at least one request added.
  TraceStats Finish(const WorkloadNames& names);

 private:
  void CompactBlocks();
  int64_t block_tokens_;
  int64_t requests_ = 0;
  SimTime first_, last_;
  CountHistogram prompt_, output_;
  std::vector<CountHistogram> class_prompt_, class_output_;  // by class handle
  std::vector<BlockKey> blocks_;    // sorted-unique prefix [0, sorted_) + recent appends
  size_t sorted_ = 0;
  int64_t blocks_total_ = 0;
  std::vector<int64_t> sessions_;   // sorted-unique on compaction, like blocks_
  size_t sessions_sorted_ = 0;
  int64_t with_deadline_ = 0, with_cancel_ = 0, with_adapter_ = 0;
};

}  // namespace fleetplan
