// `fleetplan trace gen|stats|convert`: write a scenario's synthetic workload as a
// fleetplan JSONL trace, summarise any trace, or convert an imported trace to fleetplan
// JSONL. Every trace read or written is named with its content digest (SHA-256 of the
// file's bytes). Bad files and values are invalid input (exit 3) with located errors;
// unknown flags are usage errors (exit 2).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "fleetplan/core/flag_error.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/workload/generator.h"
#include "fleetplan/workload/trace.h"
#include "fleetplan/workload/trace_stats.h"
#include "fleetplan/workload/workload_spec.h"

namespace fleetplan::cli {
namespace {

// Flags that take values are read as text and parsed here, so a bad value is an invalid
// input with the flag named ("--requests: expected an integer >= 1, got 'x'").
struct TraceFlags {
  std::string input;
  std::string output;
  std::string format;
  std::string requests;
  std::string duration;
  std::string seed;
  std::string speed;
  std::string class_name;
  std::string block_tokens;
  std::vector<std::string> catalogs;
  bool drop_failed = false;
  bool json = false;
  bool quiet = false;
};

// The progress line over a stream of requests: arrival time against the duration limit
// when there is one, the count against the request limit when there is one, else the
// count and the elapsed time.
class RequestProgress {
 public:
  RequestProgress(std::ostream& err, bool quiet, std::string what, std::optional<Duration> duration,
                  std::optional<int64_t> requests)
      : duration_(duration),
        progress_(err, std::move(what), duration ? "s of arrivals" : "requests",
                  duration ? std::max<int64_t>(1, static_cast<int64_t>(std::ceil(duration->seconds())))
                           : requests.value_or(0),
                  ProgressFor(quiet)) {}
  RequestProgress(const RequestProgress&) = delete;
  RequestProgress& operator=(const RequestProgress&) = delete;
  ~RequestProgress() { progress_.Abandon(); }  // no final line for a run that failed

  void Add(const Request& r) {
    ++count_;
    if (!progress_.drawing()) return;
    if (duration_) {
      progress_.SetDetail(fmt::format("{} requests", count_));
      progress_.Update(static_cast<int64_t>(r.arrival.seconds()));
    } else {
      progress_.Update(count_);
    }
  }

  // The last line is the end: all of the duration (arrivals stopped before it) or the count.
  void Finish() {
    if (duration_) {
      progress_.SetDetail(fmt::format("{} requests", count_));
      progress_.Update(static_cast<int64_t>(std::ceil(duration_->seconds())));
    } else {
      progress_.Update(count_);
    }
    progress_.Finish();
  }

 private:
  std::optional<Duration> duration_;
  int64_t count_ = 0;
  Progress progress_;
};

Status FlagError(std::string_view flag, std::string_view message) { return FlagValueError(flag, message); }

Expected<int64_t> IntFlag(std::string_view flag, const std::string& text, int64_t min) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min) {
    return FlagError(flag, fmt::format("expected an integer >= {}, got {}", min, QuoteValue(text)));
  }
  return v;
}

Expected<SourceLimits> LimitFlags(const TraceFlags& f) {
  SourceLimits limits;
  if (!f.requests.empty()) {
    FP_ASSIGN_OR_RETURN(limits.requests, IntFlag("--requests", f.requests, 1));
  }
  if (!f.duration.empty()) {
    auto d = ParsePositiveDuration(f.duration);
    if (!d.ok()) return FlagError("--duration", d.status().message());
    limits.duration = *d;
  }
  return limits;
}

Expected<TraceReadOptions> ReadOptions(const TraceFlags& f) {
  TraceReadOptions options;
  if (!f.format.empty()) {
    auto format = ParseTraceFormat(f.format);
    if (!format.ok()) return FlagError("--format", format.status().message());
    options.format = *format;
  }
  if (!f.class_name.empty()) options.class_name = f.class_name;
  if (!f.speed.empty()) {
    double speed = 0;
    auto [ptr, ec] = std::from_chars(f.speed.data(), f.speed.data() + f.speed.size(), speed);
    if (ec != std::errc() || ptr != f.speed.data() + f.speed.size() || !(speed > 0) || !std::isfinite(speed)) {
      return FlagError("--speed", fmt::format("expected a replay speed > 0 (2 = twice the rate), got {}",
                                              QuoteValue(f.speed)));
    }
    options.speed = speed;
  }
  options.drop_failed = f.drop_failed;
  FP_ASSIGN_OR_RETURN(SourceLimits limits, LimitFlags(f));
  options.until = limits.duration;
  options.max_requests = limits.requests;
  return options;
}

Status PrintJson(std::ostream& out, const Json& value) {
  FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(value));
  out << text;
  return Status::Ok();
}

// ---- gen ---------------------------------------------------------------------------

Expected<uint64_t> ScenarioSeed(const YamlNode& root, const TraceFlags& f) {
  if (!f.seed.empty()) {
    FP_ASSIGN_OR_RETURN(int64_t seed, IntFlag("--seed", f.seed, 0));
    return static_cast<uint64_t>(seed);
  }
  if (!root["seed"].present()) {
    return root.Error("no seed: set `seed:` in the scenario or pass --seed (the seed fixes every draw)");
  }
  FP_ASSIGN_OR_RETURN(int64_t seed, root["seed"].AsIntAtLeast(0));
  return static_cast<uint64_t>(seed);
}

Status RunGen(const TraceFlags& f, std::ostream& out, std::ostream& err) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadFile(f.input));
  const YamlNode root = doc.root();
  // The workload names no catalog entry, but a scenario's catalogs must still be readable:
  // the same file then runs under `simulate`.
  FP_ASSIGN_OR_RETURN(std::vector<std::string> catalogs,
                      Catalog::ScenarioCatalogPaths(root["catalog"], std::filesystem::path(f.input).parent_path().string()));
  catalogs.insert(catalogs.end(), f.catalogs.begin(), f.catalogs.end());
  if (!catalogs.empty()) FP_RETURN_IF_ERROR(Catalog::WithUserFiles(catalogs).status());
  FP_ASSIGN_OR_RETURN(WorkloadSpec spec, ParseWorkloadSpec(root["workload"]));
  if (spec.mode == ArrivalMode::kTrace) {
    return root["workload"]["trace"].Error(
        "this workload replays a trace; `trace gen` writes synthetic workloads (use `fleetplan trace convert` "
        "to turn a trace into fleetplan JSONL)");
  }
  if (spec.mode == ArrivalMode::kClosedLoop) {
    return root["workload"]["arrival"].Error(
        "a closed-loop workload needs completions from a simulation (`fleetplan simulate`); `trace gen` writes "
        "open-loop workloads only");
  }
  FP_ASSIGN_OR_RETURN(uint64_t seed, ScenarioSeed(root, f));
  FP_ASSIGN_OR_RETURN(SourceLimits limits, LimitFlags(f));
  FP_ASSIGN_OR_RETURN(std::unique_ptr<GeneratorSource> gen, MakeGenerator(spec, seed, limits));
  FP_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, TraceWriter::Create(f.output));
  const bool overridden = limits.duration || limits.requests;
  RequestProgress progress(err, f.quiet, "trace gen", overridden ? limits.duration : spec.duration,
                           overridden ? limits.requests : spec.requests);
  SimTime first, last;
  while (true) {
    FP_ASSIGN_OR_RETURN(std::optional<Request> next, gen->Next());
    if (!next) break;
    if (writer->written() == 0) first = next->arrival;
    last = next->arrival;
    FP_RETURN_IF_ERROR(writer->Write(*next, gen->names()));
    progress.Add(*next);
  }
  progress.Finish();
  if (writer->written() == 0) {
    return InvalidInput(fmt::format("{}: the workload produced no requests before its end", f.input));
  }
  const Json source = gen->Describe();
  FP_ASSIGN_OR_RETURN(std::string digest, writer->Finish(gen->names(), source));
  const GeneratorAdjustments& adj = gen->adjustments();
  if (f.json) {
    return PrintJson(out, {{"file", f.output},
                           {"digest", digest},
                           {"requests", writer->written()},
                           {"span_s", RoundForReport((last - first).seconds(), 6)},
                           {"source", source},
                           {"adjusted", {{"capped_draws", adj.capped_draws}, {"sessions_cut", adj.sessions_cut}}}});
  }
  out << fmt::format("wrote {} requests to {} ({})\n", writer->written(), f.output, digest);
  out << fmt::format("  workload: open loop, {}, seed {}\n", source["arrival"].dump(), seed);
  out << fmt::format("  span: {:.3f} s\n", (last - first).seconds());
  for (const auto& [path, count] : adj.capped_draws) {
    out << fmt::format("  adjusted: {} draws of {} capped at its max\n", count, path);
  }
  if (adj.sessions_cut > 0) out << fmt::format("  adjusted: {} sessions cut by the end of the workload\n", adj.sessions_cut);
  return Status::Ok();
}

// ---- stats -------------------------------------------------------------------------

Status RunStats(const TraceFlags& f, std::ostream& out, std::ostream& err) {
  FP_ASSIGN_OR_RETURN(TraceReadOptions options, ReadOptions(f));
  int64_t block_tokens = kDefaultStatsBlockTokens;
  if (!f.block_tokens.empty()) {
    FP_ASSIGN_OR_RETURN(block_tokens, IntFlag("--block-tokens", f.block_tokens, 1));
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<TraceSource> trace, OpenTrace(f.input, options));
  TraceStatsAccumulator acc(block_tokens);
  RequestProgress progress(err, f.quiet, "trace stats", options.until, options.max_requests);
  int64_t n = 0;
  while (true) {
    FP_ASSIGN_OR_RETURN(std::optional<Request> next, trace->Next());
    if (!next) break;
    acc.Add(*next);
    progress.Add(*next);
    ++n;
  }
  progress.Finish();
  FP_ASSIGN_OR_RETURN(std::string digest, trace->FinishDigest());
  if (n == 0) return InvalidInput(fmt::format("{}: no request arrives before the --duration limit", f.input));
  const TraceStats stats = acc.Finish(trace->names());
  const std::string format(TraceFormatName(trace->format()));
  if (f.json) {
    Json trace_json = {{"file", f.input}, {"format", format}, {"digest", digest}, {"dropped_rows", trace->dropped_rows()},
                       {"speed", options.speed}};
    return PrintJson(out, {{"trace", trace_json}, {"stats", stats.ToJson()}});
  }
  out << fmt::format("trace        {} ({})\n", f.input, format);
  out << fmt::format("digest       {}\n", digest);
  if (options.speed != 1.0) out << fmt::format("speed        {}x (arrivals scaled by 1/{})\n", options.speed, options.speed);
  if (trace->dropped_rows() > 0) {
    out << fmt::format("dropped      {} rows with 0 response tokens (--drop-failed)\n", trace->dropped_rows());
  }
  out << stats.ToText();
  return Status::Ok();
}

// ---- convert -----------------------------------------------------------------------

Status RunConvert(const TraceFlags& f, std::ostream& out, std::ostream& err) {
  FP_ASSIGN_OR_RETURN(TraceReadOptions options, ReadOptions(f));
  FP_ASSIGN_OR_RETURN(std::unique_ptr<TraceSource> trace, OpenTrace(f.input, options));
  FP_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, TraceWriter::Create(f.output));
  RequestProgress progress(err, f.quiet, "trace convert", options.until, options.max_requests);
  while (true) {
    FP_ASSIGN_OR_RETURN(std::optional<Request> next, trace->Next());
    if (!next) break;
    FP_RETURN_IF_ERROR(writer->Write(*next, trace->names()));
    progress.Add(*next);
  }
  progress.Finish();
  FP_ASSIGN_OR_RETURN(std::string input_digest, trace->FinishDigest());
  if (writer->written() == 0) {
    return InvalidInput(fmt::format("{}: no request arrives before the --duration limit", f.input));
  }
  const std::string format(TraceFormatName(trace->format()));
  // A fleetplan trace copied unchanged keeps its provenance, so the copy is byte-identical.
  const bool unchanged = trace->format() == TraceFormat::kFleetplan && options.speed == 1.0 && !options.until &&
                         !options.max_requests;
  Json source = trace->provenance();
  if (!unchanged) {
    Json from = {{"format", format}, {"digest", input_digest}, {"speed", options.speed},
                 {"dropped_rows", trace->dropped_rows()}};
    if (options.until) from["duration"] = FormatDuration(*options.until);
    if (options.max_requests) from["requests"] = *options.max_requests;
    if (!source.is_null() && !source.empty()) from["source"] = source;
    source = {{"converted_from", from}};
  }
  FP_ASSIGN_OR_RETURN(std::string digest, writer->Finish(trace->names(), source));
  if (f.json) {
    return PrintJson(out, {{"input", {{"file", f.input}, {"format", format}, {"digest", input_digest},
                                      {"dropped_rows", trace->dropped_rows()}}},
                           {"output", {{"file", f.output}, {"format", "fleetplan"}, {"digest", digest}}},
                           {"requests", writer->written()}});
  }
  out << fmt::format("converted {} requests\n  from {} ({}, {})\n  to   {} (fleetplan, {})\n", writer->written(),
                     f.input, format, input_digest, f.output, digest);
  if (trace->dropped_rows() > 0) {
    out << fmt::format("  dropped {} rows with 0 response tokens (--drop-failed)\n", trace->dropped_rows());
  }
  return Status::Ok();
}

// ---- registration ------------------------------------------------------------------

constexpr const char* kFormatHelp = "Input format: fleetplan|mooncake|azure|burstgpt|csv (default: detect)";

void AddReadFlags(CLI::App* cmd, TraceFlags& f) {
  cmd->add_option("--format", f.format, kFormatHelp);
  cmd->add_option("--class", f.class_name,
                  "Class of imported requests for formats without one (default 'default')");
  cmd->add_option("--speed", f.speed, "Replay at this multiple of the trace's rate (default 1)");
  cmd->add_flag("--drop-failed", f.drop_failed,
                "burstgpt: leave out rows with 0 response tokens (counted in the output)");
}

void AddLimitFlags(CLI::App* cmd, TraceFlags& f, const std::string& what) {
  auto* requests = cmd->add_option("--requests", f.requests, "Stop after N requests" + what);
  auto* duration = cmd->add_option("--duration", f.duration, "Stop before the first arrival at D, e.g. 10m" + what);
  requests->excludes(duration);
}

template <typename Run>
void SetAction(CLI::App* cmd, std::shared_ptr<TraceFlags> flags, VerbAction& action, Run run) {
  cmd->add_flag("--quiet", flags->quiet,
                "No progress on stderr (otherwise: a bar with ETA on a terminal when a --duration or "
                "--requests limit gives a total, a count otherwise; plain lines in a log)");
  cmd->callback([flags, &action, run] {
    // With `-o -` the trace itself is standard output, so the verb's own summary goes to stderr.
    action = [flags, run](std::ostream& out, std::ostream& err) {
      return run(*flags, flags->output == "-" ? err : out, err);
    };
  });
}

}  // namespace

void RegisterTraceVerb(CLI::App& app, VerbAction& action) {
  CLI::App* trace = app.add_subcommand(
      "trace", "Request traces: generate one from a scenario, summarise one, convert an imported one.");
  trace->require_subcommand(1);
  // Added before its verbs, so `trace gen|stats|convert --help` end with it too.
  trace->footer(
      "Exit codes: 0 done, 2 usage, 3 invalid input (located: file:line:col).\n"
      "Examples:\n"
      "  fleetplan trace gen scenario.yaml -o trace.jsonl --duration 10m\n"
      "  fleetplan trace stats mooncake_trace.jsonl --format mooncake\n"
      "  fleetplan trace convert AzureLLMInferenceTrace_conv.csv --format azure -o azure.jsonl");

  auto gen_flags = std::make_shared<TraceFlags>();
  CLI::App* gen = trace->add_subcommand(
      "gen", "Write the scenario's synthetic workload as a fleetplan JSONL trace (open loop only).");
  gen->add_option("SCENARIO", gen_flags->input, "Scenario file (YAML) with a `workload:` section; - reads stdin")
      ->required();
  gen->add_option("--catalog", gen_flags->catalogs,
                  "User catalog file (YAML), as for simulate: checked, so the scenario runs there too; repeatable");
  gen->add_option("-o,--output", gen_flags->output, "Trace file to write (fleetplan JSONL; - for stdout)")->required();
  AddLimitFlags(gen, *gen_flags, " (replaces the scenario's duration/requests)");
  gen->add_option("--seed", gen_flags->seed, "Master seed (default: the scenario's `seed:`)");
  gen->add_flag("--json", gen_flags->json, "Print JSON instead of text");
  SetAction(gen, gen_flags, action, RunGen);

  auto stats_flags = std::make_shared<TraceFlags>();
  CLI::App* stats = trace->add_subcommand(
      "stats", "Requests, span, rate, length percentiles per class, distinct prefix blocks and reuse ratio.");
  stats->add_option("FILE", stats_flags->input, "Trace file")->required();
  AddReadFlags(stats, *stats_flags);
  AddLimitFlags(stats, *stats_flags, "");
  stats->add_option("--block-tokens", stats_flags->block_tokens,
                    "Prefix block size for the distinct-block count (default 512, Mooncake's)");
  stats->add_flag("--json", stats_flags->json, "Print JSON instead of text");
  SetAction(stats, stats_flags, action, RunStats);

  auto convert_flags = std::make_shared<TraceFlags>();
  CLI::App* convert = trace->add_subcommand("convert", "Convert a trace to fleetplan JSONL.");
  convert->add_option("IN", convert_flags->input, "Trace file to read")->required();
  convert->add_option("-o,--output", convert_flags->output, "Trace file to write (fleetplan JSONL; - for stdout)")->required();
  AddReadFlags(convert, *convert_flags);
  AddLimitFlags(convert, *convert_flags, "");
  convert->add_flag("--json", convert_flags->json, "Print JSON instead of text");
  SetAction(convert, convert_flags, action, RunConvert);
}

}  // namespace fleetplan::cli
