// Parsing and validating the scenario's `workload:` section (workload_spec.h).
#include "fleetplan/workload/workload_spec.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/limits.h"
#include "workload/yaml_util.h"

namespace fleetplan {
namespace {

using workload_internal::ResolveAgainstYamlFile;
using workload_internal::YamlToJson;

// Shares are decimal fractions written by people; they must add up to 1 within this.
constexpr double kShareSumTolerance = 1e-6;
// Zipf exponent for document popularity when the segment does not give one: the
// classic Zipf law (s = 1).
constexpr double kDefaultDocumentZipf = 1.0;

// `popularity: uniform` or `popularity: {zipf: s}` over ranks 1..count; absent = `fallback_s`.
Expected<Zipf> ParsePopularity(const YamlNode& node, int64_t count, double fallback_s) {
  double s = fallback_s;
  if (node.present() && !node.IsNull()) {
    if (node.IsScalar()) {
      FP_ASSIGN_OR_RETURN(std::string word, node.AsString());
      if (word != "uniform") {
        return node.Error(fmt::format("expected `uniform` or {{zipf: s}}, got {}", QuoteValue(word)));
      }
      s = 0;
    } else {
      FP_RETURN_IF_ERROR(node.CheckKeys({"zipf"}));
      FP_ASSIGN_OR_RETURN(s, node["zipf"].AsDouble());
    }
  }
  auto made = Zipf::Make(count, s);
  if (!made.ok()) return node.present() ? node.Error(made.status().message()) : made.status();
  return *made;
}

Expected<PopulationSpec> ParsePopulation(const YamlNode& node, std::initializer_list<std::string_view> keys) {
  FP_RETURN_IF_ERROR(node.CheckKeys(keys));
  FP_ASSIGN_OR_RETURN(int64_t count, node["count"].AsIntAtLeast(1));
  FP_ASSIGN_OR_RETURN(Zipf popularity, ParsePopularity(node["popularity"], count, 0.0));
  return PopulationSpec{count, std::move(popularity)};
}

Expected<SegmentSource> ParseSegmentName(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(std::string name, node.AsString());
  const auto& names = SegmentSourceNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<SegmentSource>(i);
  }
  return node.Error(UnknownNameMessage("segment kind", name, names));
}

Expected<SegmentSpec> ParseSegment(const YamlNode& node, bool has_tenants) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"segment", "tokens", "pool", "popularity"}));
  SegmentSpec out;
  FP_ASSIGN_OR_RETURN(out.source, ParseSegmentName(node["segment"]));
  const bool is_document = out.source == SegmentSource::kDocument;
  if (!is_document) {
    for (std::string_view key : {"pool", "popularity"}) {
      if (node[key].present()) {
        return node[key].Error(fmt::format("`{}` applies to document segments only", key));
      }
    }
  }
  if (out.source == SegmentSource::kHistory) {
    if (node["tokens"].present()) {
      return node["tokens"].Error(
          "a history segment has no length of its own: it is the previous turn's prompt and answer");
    }
    return out;
  }
  if (out.source == SegmentSource::kTenantInstructions && !has_tenants) {
    return node["segment"].Error("tenant-instructions needs tenants: add `workload.tenants: {count: N}`");
  }
  FP_ASSIGN_OR_RETURN(out.tokens, TokenSlot::Parse(node["tokens"]));
  if (is_document) {
    FP_ASSIGN_OR_RETURN(out.pool, node["pool"].AsIntAtLeast(1));
    FP_ASSIGN_OR_RETURN(out.popularity, ParsePopularity(node["popularity"], out.pool, kDefaultDocumentZipf));
  }
  return out;
}

Expected<ClassSpec> ParseClass(const std::string& name, const YamlNode& node, bool has_tenants) {
  FP_RETURN_IF_ERROR(node.CheckKeys(
      {"share", "priority", "prompt", "output_tokens", "deadline", "cancel", "session"}));
  ClassSpec out;
  out.name = name;
  FP_ASSIGN_OR_RETURN(out.share, node["share"].AsDoubleInRange(0.0, 1.0));
  FP_ASSIGN_OR_RETURN(int64_t priority, node["priority"].IntOr(0));
  if (priority < std::numeric_limits<int32_t>::min() || priority > std::numeric_limits<int32_t>::max()) {
    return node["priority"].Error(fmt::format("expected a 32-bit integer, got {}", priority));
  }
  out.priority = static_cast<int32_t>(priority);

  const YamlNode prompt = node["prompt"];
  FP_ASSIGN_OR_RETURN(auto items, prompt.Items());
  if (items.empty()) return prompt.Error("expected at least one segment");
  int history_count = 0;
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(SegmentSpec segment, ParseSegment(item, has_tenants));
    if (segment.source == SegmentSource::kHistory && ++history_count > 1) {
      return item.Error("a prompt has at most one history segment");
    }
    out.prompt.push_back(std::move(segment));
  }
  FP_ASSIGN_OR_RETURN(out.output_tokens, TokenSlot::Parse(node["output_tokens"]));

  if (node["deadline"].present()) {
    FP_ASSIGN_OR_RETURN(out.deadline, DurationSlot::Parse(node["deadline"]));
  }
  if (const YamlNode cancel = node["cancel"]; cancel.present()) {
    FP_RETURN_IF_ERROR(cancel.CheckKeys({"probability", "after"}));
    CancelSpec spec;
    FP_ASSIGN_OR_RETURN(spec.probability, cancel["probability"].AsDoubleInRange(0.0, 1.0));
    FP_ASSIGN_OR_RETURN(spec.after, DurationSlot::Parse(cancel["after"]));
    out.cancel = std::move(spec);
  }
  const YamlNode session = node["session"];
  if (session.present()) {
    FP_RETURN_IF_ERROR(session.CheckKeys({"turns", "think_time"}));
    FP_ASSIGN_OR_RETURN(TokenSlot turns, TokenSlot::Parse(session["turns"]));
    FP_ASSIGN_OR_RETURN(DurationSlot think, DurationSlot::Parse(session["think_time"]));
    out.session = SessionSpec{std::move(turns), std::move(think)};
    if (history_count == 0) {
      return prompt.Error(
          "a class with `session` needs one {segment: history} in its prompt: where each turn "
          "repeats the previous turn's prompt and answer");
    }
  } else if (history_count > 0) {
    return prompt.Error("a history segment needs `session: {turns: ..., think_time: ...}` in its class");
  }
  return out;
}

Expected<std::vector<ClassSpec>> ParseClasses(const YamlNode& node, bool has_tenants) {
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one class");
  std::vector<ClassSpec> out;
  double sum = 0;
  std::string terms;
  for (const auto& [name, value] : entries) {
    FP_ASSIGN_OR_RETURN(ClassSpec spec, ParseClass(name, value, has_tenants));
    sum += spec.share;
    terms += fmt::format("{}{} {}", terms.empty() ? "" : " + ", name, value["share"].Text());
    out.push_back(std::move(spec));
  }
  if (std::abs(sum - 1.0) > kShareSumTolerance) {
    return node.Error(fmt::format("class shares must sum to 1, got {} ({})", RoundForReport(sum, 6), terms));
  }
  return out;
}

Expected<TraceReplaySpec> ParseTrace(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"file", "format", "class", "speed"}));
  TraceReplaySpec out;
  FP_ASSIGN_OR_RETURN(std::string file, node["file"].AsString());
  out.file = ResolveAgainstYamlFile(node["file"], file);
  if (node["format"].present()) {
    FP_ASSIGN_OR_RETURN(std::string format, node["format"].AsString());
    auto parsed = ParseTraceFormat(format);
    if (!parsed.ok()) return node["format"].Error(parsed.status().message());
    out.options.format = *parsed;
  }
  if (node["class"].present()) {
    FP_ASSIGN_OR_RETURN(out.options.class_name, node["class"].AsString());
  }
  FP_ASSIGN_OR_RETURN(out.options.speed, node["speed"].DoubleOr(1.0));
  if (!(out.options.speed > 0)) {
    return node["speed"].Error(fmt::format("expected a replay speed > 0, got {}", node["speed"].Text()));
  }
  // Checked here (after the other fields), so the error points at the line that names the file.
  std::error_code ec;
  if (std::filesystem::is_directory(out.file, ec)) {
    return node["file"].Error(fmt::format("'{}' is a directory, not a trace file", out.file));
  }
  if (!std::filesystem::exists(out.file, ec)) {
    return node["file"].Error(fmt::format("cannot open the trace file '{}': no such file (a relative path is read "
                                          "from the scenario's folder)",
                                          out.file));
  }
  return out;
}

Status ParseArrival(const YamlNode& node, bool has_trace, WorkloadSpec* out) {
  if (!node.IsMap()) {
    return node.Error(fmt::format("expected a map such as {{process: poisson, rate: 8/s}}, got {}",
                                  QuoteValue(node.Text())));
  }
  FP_ASSIGN_OR_RETURN(std::string process, node["process"].AsString());
  if (process == "trace") {
    FP_RETURN_IF_ERROR(node.CheckKeys({"process"}));
    if (!has_trace) return node["process"].Error("process 'trace' replays `workload.trace`, which is missing");
    return Status::Ok();
  }
  if (has_trace) {
    return node["process"].Error(
        fmt::format("a trace replay takes its arrivals from the trace; remove `arrival` or set "
                    "`process: trace` (got '{}')",
                    process));
  }
  if (process == "closed-loop") {
    FP_RETURN_IF_ERROR(node.CheckKeys({"process", "users", "think_time"}));
    ClosedLoopSpec spec;
    FP_ASSIGN_OR_RETURN(spec.users, node["users"].AsIntAtLeast(1));
    if (spec.users > kMaxClosedLoopUsers) {
      return node["users"].Error(fmt::format("expected at most {} users (fleetplan's limit for a closed loop; "
                                             "each user is live state for the whole run), got {}",
                                             kMaxClosedLoopUsers, spec.users));
    }
    FP_ASSIGN_OR_RETURN(spec.think_time, DurationSlot::Parse(node["think_time"]));
    out->mode = ArrivalMode::kClosedLoop;
    out->closed_loop = std::move(spec);
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<ArrivalProcess> open, ParseOpenLoopArrivals(node));
  out->mode = ArrivalMode::kOpenLoop;
  out->open_loop = std::move(open);
  return Status::Ok();
}

Status RejectForTrace(const YamlNode& node, std::string_view key) {
  if (!node[key].present()) return Status::Ok();
  return node[key].Error(fmt::format(
      "`{}` describes a synthetic workload; a trace replay takes it from the trace (remove `{}` or `trace`)",
      key, key));
}

}  // namespace

const std::vector<std::string>& SegmentSourceNames() {
  static const std::vector<std::string> names = {"system", "tenant-instructions", "document", "unique",
                                                 "history"};
  return names;
}

Expected<WorkloadSpec> ParseWorkloadSpec(const YamlNode& workload_node) {
  // `events` (prefix-cache invalidations at a time) is read by the fleet's scenario
  // reader (fleet/scenario.h), which owns the engine it acts on.
  FP_RETURN_IF_ERROR(workload_node.CheckKeys(
      {"duration", "requests", "arrival", "tenants", "adapters", "classes", "trace", "events"}));
  WorkloadSpec out;
  out.description = YamlToJson(workload_node);
  if (const YamlNode d = workload_node["duration"]; d.present()) {
    FP_ASSIGN_OR_RETURN(Duration duration, d.AsPositiveDuration());
    out.duration = duration;
  }
  if (const YamlNode r = workload_node["requests"]; r.present()) {
    FP_ASSIGN_OR_RETURN(out.requests, r.AsIntAtLeast(1));
  }

  const YamlNode trace = workload_node["trace"];
  const bool has_trace = trace.present();
  if (workload_node["arrival"].present()) {
    FP_RETURN_IF_ERROR(ParseArrival(workload_node["arrival"], has_trace, &out));
  } else if (!has_trace) {
    return workload_node["arrival"].AsString().status();  // "missing required field ..."
  }
  if (has_trace) {
    for (std::string_view key : {"classes", "tenants", "adapters"}) {
      FP_RETURN_IF_ERROR(RejectForTrace(workload_node, key));
    }
    FP_ASSIGN_OR_RETURN(out.trace, ParseTrace(trace));
    out.mode = ArrivalMode::kTrace;
    return out;
  }

  if (const YamlNode t = workload_node["tenants"]; t.present()) {
    FP_ASSIGN_OR_RETURN(out.tenants, ParsePopulation(t, {"count", "popularity"}));
  }
  if (const YamlNode a = workload_node["adapters"]; a.present()) {
    FP_ASSIGN_OR_RETURN(PopulationSpec population, ParsePopulation(a, {"count", "popularity", "fraction"}));
    AdaptersSpec adapters{std::move(population), 1.0};
    FP_ASSIGN_OR_RETURN(adapters.fraction, a["fraction"].DoubleOr(1.0));
    if (adapters.fraction < 0 || adapters.fraction > 1) {
      return a["fraction"].Error(fmt::format("expected a number in [0, 1], got {}", a["fraction"].Text()));
    }
    out.adapters = std::move(adapters);
  }
  FP_ASSIGN_OR_RETURN(out.classes, ParseClasses(workload_node["classes"], out.tenants.has_value()));
  return out;
}

}  // namespace fleetplan
