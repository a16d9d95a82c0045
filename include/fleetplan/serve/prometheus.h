// Prometheus text exposition for the emulator's /metrics: counters, gauges and
// fixed-bucket histograms, rendered with vLLM's metric names, labels and buckets
// (docs/serve.md "Metrics" lists them).
//
// A histogram keeps one count per bucket (upper bounds ascending, +Inf implied), the
// sum and the count; rendering writes the cumulative `_bucket{le=...}` lines, `_sum` and
// `_count`, as prometheus_client does. Bucket bounds are written with Prometheus'
// float formatting ("0.001", "1.0", "2560.0").
// Thread model: single-threaded (the server's I/O thread).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fleetplan::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // Observations <= bound (bound must be one of the upper bounds; +Inf: all).
  uint64_t CountAtMost(double bound) const;
  // Appends the _bucket, _sum and _count lines; `labels` is `a="x",b="y"` (may be empty).
  void Render(std::string& out, std::string_view name, std::string_view labels) const;

 private:
  std::vector<double> upper_;
  std::vector<uint64_t> counts_;  // per bucket; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// vLLM's bucket ladders (vllm/v1/metrics/loggers.py).
std::vector<double> TtftBuckets();            // 0.001 .. 2560 s
std::vector<double> InterTokenBuckets();      // 0.01 .. 80 s
std::vector<double> RequestLatencyBuckets();  // 0.3 .. 7680 s
// 1, 2, 5, 10, 20, 50, ... up to max_value, with max_value itself last (build_1_2_5_buckets).
std::vector<double> Buckets125(int64_t max_value);
// The emulator's own lateness ladder: 0.1 ms .. 1 s.
std::vector<double> LatenessBuckets();

// A number as Prometheus' Python client writes it: integers as "3.0", others as repr.
std::string PromNumber(double v);

// "# HELP name help\n# TYPE name type\n"
void AppendHelp(std::string& out, std::string_view name, std::string_view type, std::string_view help);

// A label value escaped for the text format (backslash, quote, newline).
std::string LabelValue(std::string_view v);

}  // namespace fleetplan::serve
