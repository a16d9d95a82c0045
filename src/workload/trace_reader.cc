// The trace reader core (trace.h): formats, detection, and the streaming TraceSource
// that applies the shared policies (order, speed, limits, digest) over a RowParser.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>

#include "fleetplan/workload/trace.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/read_log.h"
#include "workload/csv.h"
#include "workload/json_line.h"
#include "workload/line_reader.h"
#include "workload/trace_internal.h"

namespace fleetplan {
namespace workload_internal {

Status RowContext::Error(int byte_column, std::string_view path, std::string_view message) const {
  const SourceLocation where{std::string(file), static_cast<int>(line_number), CharColumn(line, byte_column),
                             std::string(line)};
  return LocatedError(where, path, message);
}

int CharColumn(std::string_view line, int byte_column) {
  const auto end = std::min(line.size(), static_cast<size_t>(std::max(byte_column, 1) - 1));
  int column = 1;
  for (size_t i = 0; i < end; ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++column;
  }
  return column + std::max(0, byte_column - 1 - static_cast<int>(line.size()));
}

const Json& RowParser::provenance() const {
  static const Json kNull;
  return kNull;
}

std::optional<int64_t> ParseDecimalSeconds(std::string_view text) {
  constexpr int kFractionDigits = 9;  // nanoseconds
  constexpr int64_t kMaxWholeSeconds = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && frac.empty())) return std::nullopt;
  const auto is_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!is_digits(whole) || !is_digits(frac)) return std::nullopt;
  const std::optional<int64_t> seconds = ParseInt64(whole);
  if (!seconds || *seconds > kMaxWholeSeconds) return std::nullopt;
  int64_t ns = 0;
  for (int i = 0; i < kFractionDigits; ++i) {
    ns = ns * 10 + (static_cast<size_t>(i) < frac.size() ? frac[static_cast<size_t>(i)] - '0' : 0);
  }
  if (frac.size() > static_cast<size_t>(kFractionDigits) && frac[kFractionDigits] >= '5') ++ns;
  return *seconds * 1'000'000'000 + ns;
}

std::string FormatSecondsExact(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t abs = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string out = fmt::format("{}{}", negative ? "-" : "", abs / 1'000'000'000);
  uint64_t frac = abs % 1'000'000'000;
  if (frac != 0) {
    std::string digits = fmt::format("{:09d}", frac);
    while (digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out + " s";
}

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

struct FormatEntry {
  TraceFormat format;
  RowParserFactory make;
  bool json;  // JSON Lines (else CSV)
};

const std::vector<FormatEntry>& FormatTable() {
  static const std::vector<FormatEntry> table = {
      {TraceFormat::kFleetplan, MakeFleetplanRowParser, true}, {TraceFormat::kMooncake, MakeMooncakeRowParser, true},
      {TraceFormat::kAzure, MakeAzureRowParser, false},        {TraceFormat::kBurstGpt, MakeBurstGptRowParser, false},
      {TraceFormat::kCsv, MakePlainCsvRowParser, false},
  };
  return table;
}

const FormatEntry& EntryFor(TraceFormat format) {
  return FormatTable()[static_cast<size_t>(format)];
}

std::string Extension(std::string_view name) {
  const size_t slash = name.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos) return "";
  std::string ext(base.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::string Basename(std::string_view name) {
  const size_t slash = name.find_last_of('/');
  return std::string(slash == std::string_view::npos ? name : name.substr(slash + 1));
}

class TraceReader final : public TraceSource {
 public:
  TraceReader(std::unique_ptr<LineReader> lines, TraceFormat format, std::unique_ptr<RowParser> parser,
              TraceReadOptions options)
      : lines_(std::move(lines)), format_(format), parser_(std::move(parser)), options_(std::move(options)) {}

  Status Start() {
    if (!parser_->has_header()) return parser_->ParseHeader(Context(""), &names_);
    std::string_view line;
    const auto got = lines_->Next(&line);
    if (got != LineReader::Result::kLine) return ReadProblem(got);
    if (line.substr(0, kUtf8Bom.size()) == kUtf8Bom) line.remove_prefix(kUtf8Bom.size());
    return parser_->ParseHeader(Context(line), &names_);
  }

  Expected<std::optional<SimTime>> PeekArrival() override {
    FP_ASSIGN_OR_RETURN(bool have, Fill());
    if (!have) return std::optional<SimTime>();
    return std::optional<SimTime>(next_->arrival);
  }

  Expected<std::optional<Request>> Next() override {
    FP_ASSIGN_OR_RETURN(bool have, Fill());
    if (!have) return std::optional<Request>();
    std::optional<Request> out = std::move(next_);
    next_.reset();
    return out;
  }

  bool exhausted() const override { return done_ && !next_; }
  const WorkloadNames& names() const override { return names_; }
  TraceFormat format() const override { return format_; }
  int64_t dropped_rows() const override { return dropped_; }
  const Json& provenance() const override { return parser_->provenance(); }

  Expected<std::string> FinishDigest() override {
    if (!digest_) digest_ = lines_->FinishDigest();
    return *digest_;
  }

  Json Describe() const override {
    Json out = {{"source", "trace"},
                {"loop", "open"},
                {"arrival", {{"process", "trace"}}},
                {"format", std::string(TraceFormatName(format_))},
                {"file", Basename(lines_->display_name())},
                {"speed", options_.speed},
                {"dropped_rows", dropped_}};
    if (digest_) out["digest"] = *digest_;
    return out;
  }

 private:
  RowContext Context(std::string_view line) const {
    return RowContext{lines_->display_name(), lines_->line_number(), line};
  }

  Status ReadProblem(LineReader::Result got) const {
    const SourceLocation file_only{lines_->display_name(), 0, 0, ""};
    switch (got) {
      case LineReader::Result::kEnd:
        return LocatedError(file_only, "", "the file is empty: a trace needs at least one request");
      case LineReader::Result::kTooLong:
        return LocatedError(
            SourceLocation{lines_->display_name(), static_cast<int>(lines_->line_number()), 0, ""}, "",
            fmt::format("line is longer than {} MiB; is this a trace file?", LineReader::kMaxLineBytes >> 20));
      case LineReader::Result::kIoError:
        return LocatedError(file_only, "", "read error");
      case LineReader::Result::kLine:
        break;
    }
    return InternalError("unexpected line reader state");
  }

  Status Fail(Status status) {
    done_ = true;
    next_.reset();
    return status;
  }

  // Ensures next_ holds the next request; false at the end (or after a failure).
  Expected<bool> Fill() {
    if (next_) return true;
    if (done_) return false;
    if (options_.max_requests && emitted_ >= *options_.max_requests) {
      done_ = true;
      return false;
    }
    while (true) {
      std::string_view line;
      const auto got = lines_->Next(&line);
      if (got == LineReader::Result::kEnd) return AtEnd();
      if (got != LineReader::Result::kLine) return Fail(ReadProblem(got));
      const RowContext ctx = Context(line);
      if (line.empty()) {
        return Fail(ctx.Error(1, "", "empty line: a trace has one request per line"));
      }
      Request request;
      ParsedRow row;
      Status parsed = parser_->ParseRow(ctx, &names_, &request, &row);
      if (!parsed.ok()) return Fail(std::move(parsed));
      if (rows_ > 0 && row.raw_time_ns < previous_raw_) {
        return Fail(ctx.Error(
            row.time_column, parser_->time_field(),
            fmt::format("{} is earlier than the previous row's {} (line {}); trace rows must be in arrival "
                        "order (fleetplan never re-sorts them: sort the file first)",
                        parser_->FormatTime(row.raw_time_ns), parser_->FormatTime(previous_raw_), previous_line_)));
      }
      if (rows_ == 0) base_raw_ = parser_->absolute_clock() ? row.raw_time_ns : 0;
      ++rows_;
      previous_raw_ = row.raw_time_ns;
      previous_line_ = ctx.line_number;
      if (row.dropped) {
        ++dropped_;
        continue;
      }
      int64_t since_base = 0;
      if (__builtin_sub_overflow(row.raw_time_ns, base_raw_, &since_base)) {
        return Fail(ctx.Error(row.time_column, parser_->time_field(),
                              fmt::format("{} is out of range: more than 292 years after the trace's first row",
                                          parser_->FormatTime(row.raw_time_ns))));
      }
      Status placed = Place(since_base, &request);
      if (!placed.ok()) {
        return Fail(ctx.Error(row.time_column, parser_->time_field(), placed.message()));
      }
      if (options_.until && request.arrival >= SimTime::Zero() + *options_.until) {
        done_ = true;
        return false;
      }
      request.id = emitted_++;
      next_ = std::move(request);
      return true;
    }
  }

  // Sets the arrival (time-scaled by speed) and moves deadline/cancel with it, keeping
  // their offsets from the arrival: replaying faster does not make a client more patient.
  // Fails (unlocated; the caller locates it at the row's time) when a time leaves the
  // simulator's range (kMaxTimeNs).
  Status Place(int64_t arrival_ns, Request* r) const {
    const std::optional<int64_t> scaled = CheckedScaleNs(arrival_ns, options_.speed);
    if (!scaled || *scaled > kMaxTimeNs) {
      return InvalidInput(fmt::format(
          "at replay speed {} this row arrives {} s after the first, beyond the {} years a simulation can "
          "span; use a larger speed or cut the trace (`trace convert --duration` or `--requests`)",
          options_.speed, static_cast<double>(arrival_ns) / 1e9 / options_.speed,
          kMaxTimeNs / (int64_t{365} * 24 * 3600 * 1'000'000'000)));
    }
    const SimTime original = SimTime::FromNanos(arrival_ns);
    r->arrival = SimTime::FromNanos(*scaled);
    for (std::optional<SimTime>* t : {&r->deadline, &r->cancel_at}) {
      if (!*t) continue;
      const std::optional<int64_t> offset = CheckedAddNs((*t)->ns(), -original.ns());
      const std::optional<int64_t> moved = offset ? CheckedAddNs(*scaled, *offset) : std::nullopt;
      if (!moved) {
        return InvalidInput(fmt::format("the row's {} lies beyond the {} years a simulation can span",
                                        t == &r->deadline ? "deadline" : "cancel time",
                                        kMaxTimeNs / (int64_t{365} * 24 * 3600 * 1'000'000'000)));
      }
      *t = SimTime::FromNanos(*moved);
    }
    return Status::Ok();
  }

  Expected<bool> AtEnd() {
    done_ = true;
    const SourceLocation file_only{lines_->display_name(), 0, 0, ""};
    if (rows_ == 0) return LocatedError(file_only, "", "the trace has no requests");
    if (emitted_ == 0 && dropped_ > 0 && !options_.until) {
      return LocatedError(
          file_only, "", fmt::format("every row was left out by --drop-failed ({} rows): nothing to replay", dropped_));
    }
    return false;
  }

  std::unique_ptr<LineReader> lines_;
  TraceFormat format_;
  std::unique_ptr<RowParser> parser_;
  TraceReadOptions options_;
  WorkloadNames names_;
  std::optional<Request> next_;
  bool done_ = false;
  int64_t rows_ = 0;
  int64_t emitted_ = 0;
  int64_t dropped_ = 0;
  int64_t previous_raw_ = 0;
  int64_t previous_line_ = 0;
  int64_t base_raw_ = 0;
  std::optional<std::string> digest_;
};

// The first line of a seekable stream, which is then rewound for the reader; nullopt
// when the stream holds no bytes at all. The line limit applies here as in the reader:
// at most kMaxLineBytes (+ its "\r\n") are read, so a file whose first line is 30 MB
// long is refused after 16 MiB instead of being read whole and parsed for detection.
Expected<std::optional<std::string>> PeekFirstLine(std::istream& in, const std::string& display_name) {
  constexpr size_t kMost = LineReader::kMaxLineBytes + 2;
  constexpr size_t kChunk = size_t{64} << 10;
  std::string first;
  bool ended = false;  // a newline was found
  while (first.size() < kMost) {
    const size_t at = first.size();
    first.resize(std::min(kMost, at + kChunk));
    in.read(first.data() + at, static_cast<std::streamsize>(first.size() - at));
    first.resize(at + static_cast<size_t>(in.gcount()));
    if (const size_t nl = first.find('\n', at); nl != std::string::npos) {
      first.resize(nl);
      ended = true;
      break;
    }
    if (!in) break;  // end of the stream
  }
  const bool empty = first.empty() && !ended;
  in.clear();
  in.seekg(0);
  if (empty) return std::optional<std::string>();
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first.size() > LineReader::kMaxLineBytes) {
    return LocatedError(SourceLocation{display_name, 1, 0, ""}, "",
                        fmt::format("line is longer than {} MiB; is this a trace file?", LineReader::kMaxLineBytes >> 20));
  }
  if (std::string_view(first).substr(0, kUtf8Bom.size()) == kUtf8Bom) first.erase(0, kUtf8Bom.size());
  return std::optional<std::string>(std::move(first));
}

}  // namespace
}  // namespace workload_internal

using workload_internal::FormatTable;

const std::vector<std::string>& TraceFormatNames() {
  static const std::vector<std::string> names = {"fleetplan", "mooncake", "azure", "burstgpt", "csv"};
  return names;
}

std::string_view TraceFormatName(TraceFormat format) {
  return TraceFormatNames()[static_cast<size_t>(format)];
}

Expected<TraceFormat> ParseTraceFormat(std::string_view name) {
  const auto& names = TraceFormatNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<TraceFormat>(i);
  }
  return InvalidInput(UnknownNameMessage("trace format", name, names));
}

Expected<TraceFormat> DetectTraceFormat(std::string_view display_name, std::string_view first_line) {
  using workload_internal::FlatJsonLine;
  const SourceLocation file_only{std::string(display_name), 0, 0, ""};
  const std::string ext = workload_internal::Extension(display_name);
  const bool ext_json = ext == "jsonl" || ext == "json" || ext == "ndjson";
  const bool ext_csv = ext == "csv";
  const std::string ask = fmt::format("pass --format (valid: {})", fmt::join(TraceFormatNames(), ", "));
  size_t start = first_line.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    return LocatedError(file_only, "", fmt::format("cannot tell the trace format: the first line is empty; {}", ask));
  }
  const bool looks_json = first_line[start] == '{';
  if ((looks_json && ext_csv) || (!looks_json && ext_json)) {
    return LocatedError(file_only, "",
                        fmt::format("cannot tell the trace format: the name ends in .{} but the first line "
                                    "looks like {}; {}",
                                    ext, looks_json ? "JSON" : "CSV", ask));
  }
  if (looks_json) {
    FlatJsonLine json;
    if (!json.Parse(first_line)) {
      return LocatedError(file_only, "",
                          fmt::format("cannot tell the trace format: the first line is not valid "
                                      "JSON ({}); {}",
                                      json.error(), ask));
    }
    std::vector<std::string> keys;
    bool fleetplan = false;
    for (const auto& f : json.fields()) {
      keys.emplace_back(f.key);
      const auto& node = json.node(f.node);
      if (f.key == "format" && node.kind == workload_internal::JsonKind::kString &&
          node.text == kFleetplanTraceFormatTag) {
        fleetplan = true;
      }
    }
    if (fleetplan) return TraceFormat::kFleetplan;
    const auto has = [&](std::string_view k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
    if (has("hash_ids") || (has("timestamp") && has("input_length"))) return TraceFormat::kMooncake;
    return LocatedError(file_only, "",
                        fmt::format("cannot tell the trace format: the first line is a JSON object with keys "
                                    "{}, which is neither a fleetplan header (\"format\": \"{}\") nor a Mooncake "
                                    "row (timestamp, input_length, output_length, hash_ids); {}",
                                    fmt::join(keys, ", "), kFleetplanTraceFormatTag, ask));
  }
  std::vector<workload_internal::CsvField> fields;
  std::deque<std::string> storage;
  (void)workload_internal::SplitCsvLine(first_line, &fields, &storage);
  std::vector<std::string> columns;
  for (const auto& f : fields) columns.emplace_back(f.text);
  const auto has = [&](std::string_view c) { return std::find(columns.begin(), columns.end(), c) != columns.end(); };
  if (has("TIMESTAMP") && has("ContextTokens")) return TraceFormat::kAzure;
  if (has("Request tokens") && has("Response tokens")) return TraceFormat::kBurstGpt;
  if (has("arrival_s")) return TraceFormat::kCsv;
  return LocatedError(
      file_only, "",
      fmt::format("cannot tell the trace format: the header columns ({}) match no known CSV format "
                  "(azure: TIMESTAMP, ContextTokens, GeneratedTokens; burstgpt: Timestamp, Model, Request "
                  "tokens, Response tokens, Total tokens, Log Type; csv: arrival_s, prompt_tokens, "
                  "output_tokens); {}",
                  fmt::join(columns, ", "), ask));
}

Expected<std::unique_ptr<TraceSource>> OpenTraceStream(std::unique_ptr<std::istream> in, std::string display_name,
                                                       const TraceReadOptions& options) {
  using workload_internal::LineReader;
  using workload_internal::TraceReader;
  if (!(options.speed > 0) || !std::isfinite(options.speed)) {
    return InvalidInput(fmt::format("speed: expected a replay speed > 0, got {}", options.speed));
  }
  TraceFormat format = TraceFormat::kFleetplan;
  if (options.format) {
    format = *options.format;
  } else {
    FP_ASSIGN_OR_RETURN(const std::optional<std::string> first, workload_internal::PeekFirstLine(*in, display_name));
    if (!first) {
      return LocatedError(SourceLocation{display_name, 0, 0, ""}, "",
                          "the file is empty: a trace needs at least one request");
    }
    FP_ASSIGN_OR_RETURN(format, DetectTraceFormat(display_name, *first));
  }
  FP_ASSIGN_OR_RETURN(auto parser, workload_internal::EntryFor(format).make(options));
  auto lines = std::make_unique<LineReader>(std::move(in), display_name);
  auto reader = std::make_unique<TraceReader>(std::move(lines), format, std::move(parser), options);
  FP_RETURN_IF_ERROR(reader->Start());
  return std::unique_ptr<TraceSource>(std::move(reader));
}

Expected<std::unique_ptr<TraceSource>> OpenTrace(const std::string& path, const TraceReadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return LocatedError(SourceLocation{path, 0, 0, ""}, "", "is a directory, not a trace file");
  }
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*in) {
    return LocatedError(SourceLocation{path, 0, 0, ""}, "", "cannot open the trace file (missing or unreadable)");
  }
  NoteFileOpened(path);
  return OpenTraceStream(std::move(in), path, options);
}

}  // namespace fleetplan
