#include "fleetplan/gates/graphs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/limits.h"

#include "fleetplan/core/units_parse.h"

namespace fleetplan {

std::optional<double> BatchTable::At(int64_t batch) const {
  if (points.empty() || batch < points.front().first || batch > points.back().first) return std::nullopt;
  auto hi = std::lower_bound(points.begin(), points.end(), batch,
                             [](const auto& p, int64_t b) { return p.first < b; });
  if (hi->first == batch) return hi->second;
  auto lo = hi - 1;
  const double t = static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

namespace {

Expected<int64_t> ParseBatch(std::string_view text, const YamlNode& where) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < 1 || v > kMaxGraphGateBatch) {
    return where.Error(fmt::format("expected a batch size between 1 and {} (or a range like 5-8), got '{}'",
                                   kMaxGraphGateBatch, text));
  }
  return v;
}

// "5" -> [5, 5]; "5-8" -> [5, 8].
Expected<std::pair<int64_t, int64_t>> ParseRange(const std::string& key, const YamlNode& where) {
  const size_t dash = key.find('-');
  if (dash == std::string::npos) {
    FP_ASSIGN_OR_RETURN(int64_t b, ParseBatch(key, where));
    return std::make_pair(b, b);
  }
  FP_ASSIGN_OR_RETURN(int64_t lo, ParseBatch(std::string_view(key).substr(0, dash), where));
  FP_ASSIGN_OR_RETURN(int64_t hi, ParseBatch(std::string_view(key).substr(dash + 1), where));
  if (hi < lo) return where.Error(fmt::format("expected a range low-high with low <= high, got '{}'", key));
  return std::make_pair(lo, hi);
}

// A share: a number (any scale: the shares are normalised) or a percentage such as 8%
// or 12.5%, as dashboards export it.
Expected<double> ReadShareValue(const YamlNode& value) {
  if (value.IsScalar()) {
    const std::string text = value.Text();
    if (!text.empty() && text.back() == '%') {
      double v = 0;
      const char* first = text.data();
      const char* last = text.data() + text.size() - 1;
      auto [ptr, ec] = std::from_chars(first, last, v);
      if (ec != std::errc() || ptr != last || !(v >= 0 && v <= 100)) {
        return value.Error(fmt::format("expected a share between 0% and 100% (or a number), got '{}'", text));
      }
      return v / 100;
    }
  }
  return value.AsDoubleInRange(0, 1e12);
}

// Single sizes first, then ranges: a range's share goes to its sizes that have no share
// of their own, spread uniformly (what is left of it after theirs).
Status ReadHistogram(const YamlNode& node, GraphsSpec& spec) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one batch size with a share");
  struct Entry {
    std::pair<int64_t, int64_t> range;
    double share = 0;
    YamlNode where;
  };
  std::vector<Entry> singles, ranges;
  for (const auto& [key, value] : entries) {
    FP_ASSIGN_OR_RETURN(auto range, ParseRange(key, value));
    FP_ASSIGN_OR_RETURN(double s, ReadShareValue(value));
    (range.first == range.second ? singles : ranges).push_back(Entry{range, s, value});
  }
  std::vector<double> share(static_cast<size_t>(kMaxGraphGateBatch) + 1, 0.0);
  std::vector<bool> named(share.size(), false);
  double total = 0;
  for (const Entry& e : singles) {
    named[static_cast<size_t>(e.range.first)] = true;  // a single size appears once: keys are unique
    share[static_cast<size_t>(e.range.first)] = e.share;
  }
  std::vector<bool> in_range(share.size(), false);
  for (const Entry& e : ranges) {
    double own = 0;
    int64_t spread_over = 0;
    for (int64_t b = e.range.first; b <= e.range.second; ++b) {
      if (in_range[static_cast<size_t>(b)]) {
        return e.where.Error(fmt::format("batch size {} is in two ranges (ranges must not overlap)", b));
      }
      in_range[static_cast<size_t>(b)] = true;
      if (named[static_cast<size_t>(b)]) {
        own += share[static_cast<size_t>(b)];
      } else {
        ++spread_over;
      }
    }
    if (own > e.share * (1 + 1e-9)) {
      return e.where.Error(fmt::format("the sizes of range {}-{} given on their own take {:.6g}, more than the "
                                       "range's {:.6g}",
                                       e.range.first, e.range.second, own, e.share));
    }
    if (spread_over == 0 && own < e.share * (1 - 1e-9)) {
      return e.where.Error(fmt::format("every size of range {}-{} has a share of its own ({:.6g} in all), which "
                                       "leaves {:.6g} of the range's share with no size to go to",
                                       e.range.first, e.range.second, own, e.share - own));
    }
    const double rest = spread_over > 0 ? (e.share - own) / static_cast<double>(spread_over) : 0;
    for (int64_t b = e.range.first; b <= e.range.second; ++b) {
      if (!named[static_cast<size_t>(b)]) {
        named[static_cast<size_t>(b)] = true;
        share[static_cast<size_t>(b)] = rest;
      }
    }
    total += e.share;
  }
  for (const Entry& e : singles) {
    if (!in_range[static_cast<size_t>(e.range.first)]) total += e.share;
  }
  if (total <= 0) return node.Error("expected shares that sum to more than 0");
  for (size_t b = 1; b < share.size(); ++b) {
    if (named[b] && share[b] > 0) spec.batches.emplace_back(static_cast<int64_t>(b), share[b] / total);
  }
  return Status::Ok();
}

// `batches_from: report.json`: the decode-only steps of a simulation, by batch size
// (report.json engine.decode_batches), as shares of those steps.
Status ReadSimulatedHistogram(const YamlNode& node, const std::string& spec_file, GraphsSpec& spec) {
  FP_ASSIGN_OR_RETURN(std::string file, node.AsString());
  const std::filesystem::path dir = std::filesystem::path(spec_file).parent_path();
  const std::string path = std::filesystem::path(file).is_absolute() || dir.empty() ? file : (dir / file).string();
  auto text = ReadFile(path);
  if (!text.ok()) return node.Error(text.status().message());
  if (FindJsonNestingBeyond(*text) != std::string::npos) return node.Error(fmt::format("{}: {}", path, JsonNestingMessage()));
  const Json doc = Json::parse(*text, nullptr, false);
  const auto not_a_report = [&] {
    return node.Error(fmt::format("{} is not a simulation report with engine.decode_batches (report.json of "
                                  "`fleetplan simulate`)",
                                  path));
  };
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("fleetplan_version")) return not_a_report();
  const Json engine = doc.value("engine", Json());
  if (!engine.is_object() || !engine.contains("decode_batches") || !engine["decode_batches"].is_array()) {
    return not_a_report();
  }
  double total = 0;
  std::vector<std::pair<int64_t, double>> counts;
  for (const Json& row : engine["decode_batches"]) {
    if (!row.is_array() || row.size() != 2 || !row[0].is_number_integer() || !row[1].is_number_integer()) {
      return node.Error(fmt::format("{}: engine.decode_batches: expected [batch size, steps] pairs", path));
    }
    const int64_t b = row[0].get<int64_t>();
    const int64_t n = row[1].get<int64_t>();
    if (b < 1 || b > kMaxGraphGateBatch || n < 0 || (!counts.empty() && b <= counts.back().first)) {
      return node.Error(fmt::format("{}: engine.decode_batches: batch sizes must increase within 1..{} with "
                                    "counts >= 0",
                                    path, kMaxGraphGateBatch));
    }
    if (n == 0) continue;
    counts.emplace_back(b, static_cast<double>(n));
    total += static_cast<double>(n);
  }
  if (total <= 0) return node.Error(fmt::format("{}: the simulation ran no decode-only step", path));
  for (const auto& [b, n] : counts) spec.batches.emplace_back(b, n / total);
  spec.batches_from = file;
  return Status::Ok();
}

template <typename ReadValue>
Expected<BatchTable> ReadTable(const YamlNode& node, ReadValue read) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one measured batch");
  BatchTable t;
  for (const auto& [key, value] : entries) {
    FP_ASSIGN_OR_RETURN(int64_t b, ParseBatch(key, value));
    FP_ASSIGN_OR_RETURN(double v, read(value));
    t.points.emplace_back(b, v);
  }
  std::sort(t.points.begin(), t.points.end());
  for (size_t i = 1; i < t.points.size(); ++i) {
    if (t.points[i].first == t.points[i - 1].first) {
      return node.Error(fmt::format("batch {} is measured twice", t.points[i].first));
    }
  }
  return t;
}

Expected<double> ReadMs(const YamlNode& n) {
  FP_ASSIGN_OR_RETURN(Duration d, n.AsDuration());
  return d.millis();
}
Expected<double> ReadBytesValue(const YamlNode& n) {
  FP_ASSIGN_OR_RETURN(Bytes b, n.AsBytes());
  return static_cast<double>(b.count());
}

}  // namespace

Expected<GraphsSpec> ReadGraphsSpec(const YamlNode& root, const std::string& file) {
  FP_RETURN_IF_ERROR(root.CheckKeys({"identity", "batches", "batches_from", "buckets", "eager_cpu", "graph_cpu", "graph_dispatch",
                                     "gpu", "graph_memory", "memory_budget", "capture_time"}));
  if (!root.IsMap()) return root.Error("expected a mapping (batches, buckets, eager_cpu, graph_cpu, ...)");
  GraphsSpec spec;
  spec.file = file;
  FP_ASSIGN_OR_RETURN(spec.identity, ReadIdentity(root["identity"]));
  if (root["batches"].present() && root["batches_from"].present()) {
    return root["batches_from"].Error("give either `batches` (a histogram) or `batches_from` (a report.json), not both");
  }
  if (root["batches_from"].present()) {
    FP_RETURN_IF_ERROR(ReadSimulatedHistogram(root["batches_from"], file, spec));
  } else {
    FP_RETURN_IF_ERROR(ReadHistogram(root["batches"], spec));
  }
  FP_ASSIGN_OR_RETURN(auto items, root["buckets"].Items());
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(int64_t b, item.AsIntAtLeast(1));
    if (b > kMaxGraphGateBatch) return item.Error(fmt::format("expected a bucket <= {}", kMaxGraphGateBatch));
    if (!spec.buckets.empty() && b <= spec.buckets.back()) {
      return item.Error(fmt::format("expected strictly increasing buckets, got {} after {}", b, spec.buckets.back()));
    }
    spec.buckets.push_back(b);
  }
  FP_ASSIGN_OR_RETURN(spec.eager_cpu_ms, ReadMs(root["eager_cpu"]));
  FP_ASSIGN_OR_RETURN(spec.graph_cpu_ms, ReadMs(root["graph_cpu"]));
  FP_ASSIGN_OR_RETURN(spec.graph_dispatch_ms, ReadMs(root["graph_dispatch"]));
  FP_ASSIGN_OR_RETURN(spec.gpu_ms, ReadTable(root["gpu"], ReadMs));
  const YamlNode mem = root["graph_memory"];
  if (mem.IsScalar()) {
    FP_ASSIGN_OR_RETURN(Bytes b, mem.AsBytes());
    spec.graph_memory_bytes.points = {{1, static_cast<double>(b.count())},
                                      {kMaxGraphGateBatch, static_cast<double>(b.count())}};
  } else {
    FP_ASSIGN_OR_RETURN(spec.graph_memory_bytes, ReadTable(mem, ReadBytesValue));
  }
  FP_ASSIGN_OR_RETURN(spec.memory_budget, root["memory_budget"].AsBytes());
  if (root["capture_time"].present() && !root["capture_time"].IsNull()) {
    FP_ASSIGN_OR_RETURN(Duration d, root["capture_time"].AsDuration());
    spec.capture_time_s = d.seconds();
  }
  return spec;
}

Expected<GraphsSpec> LoadGraphsSpec(const std::string& path) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadGraphsSpec(doc.root(), path);
}

GraphsEvaluation EvaluateBuckets(const GraphsSpec& spec, const std::vector<int64_t>& buckets) {
  GraphsEvaluation e;
  e.buckets = buckets;
  double padded = 0, slots = 0;
  for (const auto& [b, share] : spec.batches) {
    GraphsBatchRow row;
    row.batch = b;
    row.share = share;
    const std::optional<double> gpu = spec.gpu_ms.At(b);
    if (!gpu) e.uncovered.push_back(b);
    row.eager_ms = spec.eager_cpu_ms + gpu.value_or(0);
    auto it = std::lower_bound(buckets.begin(), buckets.end(), b);
    double step = row.eager_ms;
    if (it == buckets.end()) e.fallback_rate += share;  // summed, not 1 - hit rate: no rounding residue
    if (it != buckets.end()) {
      row.bucket = *it;
      row.padded_slots = *it - b;
      const std::optional<double> gpu_bucket = spec.gpu_ms.At(*it);
      if (!gpu_bucket && gpu) e.uncovered.push_back(*it);
      row.graph_ms = spec.graph_cpu_ms + spec.graph_dispatch_ms + gpu_bucket.value_or(0);
      step = *row.graph_ms;
      e.bucket_hit_rate += share;
      padded += share * static_cast<double>(row.padded_slots);
      slots += share * static_cast<double>(*it);
    }
    e.expected_step_ms += share * step;
    e.per_batch.push_back(row);
  }
  double memory = 0;
  for (int64_t b : buckets) {
    const std::optional<double> m = spec.graph_memory_bytes.At(b);
    if (!m) e.uncovered.push_back(b);
    memory += m.value_or(0);
  }
  // Sizes are int64 bytes; a sum beyond that range saturates (it is over any budget).
  e.graph_memory_bytes = memory >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(std::llround(memory));
  std::sort(e.uncovered.begin(), e.uncovered.end());
  e.uncovered.erase(std::unique(e.uncovered.begin(), e.uncovered.end()), e.uncovered.end());
  e.padding_ratio = slots > 0 ? padded / slots : 0;
  return e;
}

// Greedy: add the bucket that lowers the expected step most, within the memory budget,
// until none does. A bucket at batch size c serves the batches between the next smaller
// chosen bucket and c, so a trial's step is the current one plus that interval's change:
// prefix sums give each candidate in O(1), a round in O(batches), the whole in
// O(batches x buckets chosen). (Evaluating every trial whole was cubic: a 1,000-size
// histogram took 15 s.) The total after each pick is summed in batch order, as
// EvaluateBuckets sums it.
std::vector<int64_t> ProposeBuckets(const GraphsSpec& spec) {
  // A batch with no gpu time leaves every set uncovered: nothing can be proposed.
  if (!EvaluateBuckets(spec, {}).uncovered.empty()) return {};
  const size_t n = spec.batches.size();
  std::vector<double> share(n), step(n), graph(n), memory(n);
  std::vector<bool> candidate(n), chosen(n, false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t b = spec.batches[i].first;
    share[i] = spec.batches[i].second;
    const std::optional<double> gpu = spec.gpu_ms.At(b);
    const std::optional<double> bytes = spec.graph_memory_bytes.At(b);
    step[i] = spec.eager_cpu_ms + gpu.value_or(0);
    graph[i] = spec.graph_cpu_ms + spec.graph_dispatch_ms + gpu.value_or(0);
    memory[i] = bytes.value_or(0);
    candidate[i] = gpu.has_value() && bytes.has_value();
  }
  const auto total_of = [&] {
    double t = 0;
    for (size_t i = 0; i < n; ++i) t += share[i] * step[i];
    return t;
  };
  double best = total_of(), used = 0;
  std::vector<double> shares(n + 1), costs(n + 1);
  while (true) {
    for (size_t i = 0; i < n; ++i) {
      shares[i + 1] = shares[i] + share[i];
      costs[i + 1] = costs[i] + share[i] * step[i];
    }
    std::optional<size_t> pick;
    size_t pick_from = 0;
    double pick_ms = best;
    for (size_t i = 0, from = 0; i < n; ++i) {
      if (chosen[i]) {
        from = i + 1;  // the batches after a chosen bucket start the next interval
        continue;
      }
      if (!candidate[i]) continue;
      const double bytes = used + memory[i];
      if ((bytes >= 9.2e18 ? INT64_MAX : std::llround(bytes)) > spec.memory_budget.count()) continue;
      const double trial = best + graph[i] * (shares[i + 1] - shares[from]) - (costs[i + 1] - costs[from]);
      // Strictly better by more than rounding noise; ties keep the smaller size (first found).
      if (trial < pick_ms - 1e-12) {
        pick_ms = trial;
        pick = i;
        pick_from = from;
      }
    }
    if (!pick) break;
    chosen[*pick] = true;
    used += memory[*pick];
    for (size_t j = pick_from; j <= *pick; ++j) step[j] = graph[*pick];
    best = total_of();
  }
  std::vector<int64_t> buckets;
  for (size_t i = 0; i < n; ++i) {
    if (chosen[i]) buckets.push_back(spec.batches[i].first);
  }
  return buckets;
}

GraphsGateResult RunGraphsGate(const GraphsSpec& spec) {
  GraphsGateResult r;
  r.file = spec.file;
  r.batches_from = spec.batches_from;
  r.identity = spec.identity;
  r.candidate = EvaluateBuckets(spec, spec.buckets);
  r.eager = EvaluateBuckets(spec, {});
  r.proposed = EvaluateBuckets(spec, ProposeBuckets(spec));
  r.memory_budget_bytes = static_cast<double>(spec.memory_budget.count());
  if (spec.capture_time_s) {
    r.compile_s = *spec.capture_time_s * static_cast<double>(spec.buckets.size());
    r.proposed_compile_s = *spec.capture_time_s * static_cast<double>(r.proposed.buckets.size());
  }
  r.checks.push_back(IdentityCheck(spec.identity, spec.file));
  const std::string proposal = fmt::format("buckets [{}] ({:.4g} ms expected step, {})",
                                           fmt::join(r.proposed.buckets, ", "), r.proposed.expected_step_ms,
                                           FormatBytes(Bytes(r.proposed.graph_memory_bytes)));
  if (!r.candidate.uncovered.empty()) {
    r.checks.push_back(HoldCheck("coverage",
                                 fmt::format("the gpu (or graph_memory) table does not cover batch {}: measure it",
                                             fmt::join(r.candidate.uncovered, ", ")),
                                 Json{{"uncovered", r.candidate.uncovered}}));
  }
  const Json mem = {{"graph_memory_bytes", r.candidate.graph_memory_bytes},
                    {"memory_budget_bytes", spec.memory_budget.count()}};
  if (r.candidate.graph_memory_bytes <= spec.memory_budget.count()) {
    r.checks.push_back(PassCheck("memory", fmt::format("graphs take {} of the {} budget",
                                                       FormatBytes(Bytes(r.candidate.graph_memory_bytes)),
                                                       FormatBytes(spec.memory_budget)), mem));
  } else {
    r.checks.push_back(FailCheck("memory", fmt::format("graphs take {}, over the {} budget",
                                                       FormatBytes(Bytes(r.candidate.graph_memory_bytes)),
                                                       FormatBytes(spec.memory_budget)), mem, proposal));
  }
  const Json step = {{"expected_step_ms", ReportMs(r.candidate.expected_step_ms)},
                     {"eager_expected_step_ms", ReportMs(r.eager.expected_step_ms)}};
  const std::string reason = fmt::format("expected step {:.4g} ms with the buckets vs {:.4g} ms all eager",
                                         r.candidate.expected_step_ms, r.eager.expected_step_ms);
  if (r.candidate.expected_step_ms <= r.eager.expected_step_ms) {
    r.checks.push_back(PassCheck("step_time", reason, step));
  } else {
    r.checks.push_back(FailCheck("step_time", reason, step, proposal));
  }
  r.decision = Combine(r.checks);
  return r;
}

namespace {

Json EvaluationJson(const GraphsEvaluation& e) {
  Json rows = Json::array();
  for (const GraphsBatchRow& row : e.per_batch) {
    Json j = {{"batch", row.batch},
              {"share", RoundForReport(row.share)},
              {"eager_ms", ReportMs(row.eager_ms)},
              {"padded_slots", row.padded_slots}};
    j["bucket"] = row.bucket ? Json(*row.bucket) : Json(nullptr);
    j["graph_ms"] = row.graph_ms ? Json(ReportMs(*row.graph_ms)) : Json(nullptr);
    rows.push_back(j);
  }
  return Json{{"buckets", e.buckets},
              {"per_batch", rows},
              {"expected_step_ms", ReportMs(e.expected_step_ms)},
              {"bucket_hit_rate", RoundForReport(e.bucket_hit_rate)},
              {"padding_ratio", RoundForReport(e.padding_ratio)},
              {"fallback_rate", RoundForReport(e.fallback_rate)},
              {"graph_memory_bytes", e.graph_memory_bytes},
              {"uncovered", e.uncovered}};
}

std::string Optional(const std::optional<double>& v) { return v ? fmt::format("{:.4g}", *v) : "-"; }

}  // namespace

Json ToJson(const GraphsGateResult& r) {
  Json j = EvaluationJson(r.candidate);
  j["gate"] = "graphs";
  j["file"] = r.file;
  j["batches_from"] = r.batches_from.empty() ? Json(nullptr) : Json(r.batches_from);
  j["identity"] = ToJson(r.identity);
  j["memory_budget_bytes"] = static_cast<int64_t>(r.memory_budget_bytes);
  j["eager_expected_step_ms"] = ReportMs(r.eager.expected_step_ms);
  j["proposed_buckets"] = r.proposed.buckets;
  j["proposed"] = EvaluationJson(r.proposed);
  j["compile"] = {{"candidate_s", r.compile_s ? Json(RoundForReport(*r.compile_s)) : Json(nullptr)},
                  {"proposed_s", r.proposed_compile_s ? Json(RoundForReport(*r.proposed_compile_s)) : Json(nullptr)}};
  j["checks"] = ToJson(r.checks);
  j["decision"] = GateDecisionName(r.decision);
  j["advance_to"] = r.decision == GateDecision::kPass ? Json("staging") : Json(nullptr);
  return j;
}

std::string ToText(const GraphsGateResult& r) {
  std::string out = fmt::format("graphs gate ({}): buckets [{}]\n", r.file, fmt::join(r.candidate.buckets, ", "));
  out += fmt::format("  {:>6} {:>8} {:>7} {:>9} {:>9} {:>7}\n", "batch", "share", "bucket", "eager ms", "graph ms",
                     "padded");
  for (const GraphsBatchRow& row : r.candidate.per_batch) {
    out += fmt::format("  {:>6} {:>8.4f} {:>7} {:>9.4g} {:>9} {:>7}\n", row.batch, row.share,
                       row.bucket ? std::to_string(*row.bucket) : "eager", row.eager_ms, Optional(row.graph_ms),
                       row.padded_slots);
  }
  auto summary = [](const GraphsEvaluation& e) {
    return fmt::format("expected step {:.4g} ms, hit rate {:.4g}, padding ratio {:.4g}, fallback rate {:.4g}, graph "
                       "memory {}",
                       e.expected_step_ms, e.bucket_hit_rate, e.padding_ratio, e.fallback_rate,
                       FormatBytes(Bytes(e.graph_memory_bytes)));
  };
  out += "  candidate: " + summary(r.candidate) + "\n";
  out += fmt::format("  all eager: expected step {:.4g} ms\n", r.eager.expected_step_ms);
  out += fmt::format("  proposed [{}]: {}\n", fmt::join(r.proposed.buckets, ", "), summary(r.proposed));
  if (r.compile_s) {
    out += fmt::format("  capture (compile) time, apart from steady state: {:.4g} s candidate, {:.4g} s proposed\n",
                       *r.compile_s, *r.proposed_compile_s);
  }
  out += ChecksText(r.checks, "  ");
  out += fmt::format("decision: {}{}\n", GateDecisionName(r.decision),
                     r.decision == GateDecision::kPass ? " (advance to staging)" : "");
  return out;
}

Expected<GateReport> RunGraphsRequest(const GateRequest& request) {
  FP_ASSIGN_OR_RETURN(GraphsSpec spec, LoadGraphsSpec(request.files.at(0)));
  const GraphsGateResult r = RunGraphsGate(spec);
  return GateReport{ToJson(r), ToText(r), r.decision == GateDecision::kHold ? 1 : 0};
}

}  // namespace fleetplan
