// The result file of `vllm bench serve --save-result`: one JSON object whose per-request
// arrays are parallel (index i is request i):
//   ttfts[i]        seconds to the first token (client side)
//   itls[i]         the inter-token (inter-chunk) gaps in seconds
//   input_lens[i], output_lens[i]   prompt and generated tokens (0 output when failed)
//   errors[i]       "" when the request succeeded, else the error text
//   start_times[i]  (newer vLLM) when the request was sent, perf_counter seconds
//   latencies[i]    (newer vLLM) seconds from send to the last token
//   duration        the benchmark's wall time in seconds
// Every other key (date, model_id, the summary statistics, ...) is vLLM's own and is
// left alone: this reader takes the per-request arrays and recomputes everything.
//
// The same file as a value (metrics/vllm_bench.h: the client's settings, the stated
// figures, the requests when present) for `fleetplan validate`: ReadVllmBenchResult
// below, which shares the parsing of the per-request arrays with the records reader.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/metrics/vllm_bench.h"
#include "metrics/json_cursor.h"
#include "metrics/locate.h"
#include "metrics/records_common.h"
#include "metrics/records_readers.h"

namespace fleetplan::metrics_detail {
namespace {

constexpr std::array<std::string_view, 5> kRequired = {"ttfts", "itls", "input_lens", "output_lens",
                                                       "errors"};

// Locates errors in the document: "file:line:col: ttfts[3]: message".
class Locator {
 public:
  Locator(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  Status At(std::string_view key, std::optional<size_t> index, std::string_view message) const {
    size_t offset = 0;
    if (auto value = FindTopLevelValue(text_, key)) {
      offset = *value;
      if (index) offset = FindArrayElement(text_, *value, *index).value_or(*value);
    }
    const std::string field = index ? fmt::format("{}[{}]", key, *index) : std::string(key);
    return ErrorInText(path_, text_, offset, field, message);
  }

 private:
  const std::string& path_;
  std::string_view text_;
};

// One request's values, as read from the arrays.
struct Entry {
  bool failed = false;
  double ttft = 0;
  double itl_sum = 0;
  std::optional<double> itl_max;
  int64_t input = 0;
  int64_t output = 0;
  std::optional<double> start;
  std::optional<double> latency;
  std::vector<double> itls;  // the gaps themselves, when asked for (keep_itls)
};

Expected<Json> ParseDocument(const std::string& path, std::string_view text) {
  JsonCursor c(text);  // our scanner first: its syntax errors are located
  if (c.Peek() != JsonType::kObject) {
    return ErrorInText(path, text, c.pos(), "",
                       fmt::format("expected a JSON object (a vllm bench serve result), got {}",
                                   JsonTypeName(c.Peek())));
  }
  if (!c.SkipValue()) return ErrorInText(path, text, c.error_offset(), "", c.error_message());
  if (!c.AtEnd()) return ErrorInText(path, text, c.pos(), "", "unexpected text after the JSON object");
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return InvalidInput(fmt::format("{}: {}", path, e.what()));
  }
}

Expected<size_t> CheckArrays(const Json& doc, const Locator& at) {
  std::optional<size_t> n;
  std::string_view first;
  for (std::string_view key : {"ttfts", "itls", "input_lens", "output_lens", "errors", "start_times",
                               "latencies"}) {
    const bool required = std::find(kRequired.begin(), kRequired.end(), key) != kRequired.end();
    if (!doc.contains(key)) {
      if (!required) continue;
      return at.At("", std::nullopt,
                   fmt::format("missing required field '{}' (a `vllm bench serve --save-result` "
                               "file has ttfts, itls, input_lens, output_lens, errors)",
                               key));
    }
    const Json& v = doc.at(std::string(key));
    if (!v.is_array()) return at.At(key, std::nullopt, fmt::format("expected an array, got {}", v.type_name()));
    if (!n) {
      n = v.size();
      first = key;
    } else if (v.size() != *n) {
      return at.At(key, std::nullopt,
                   fmt::format("has {} entries but {} has {}; the arrays are per request and must "
                               "be the same length",
                               v.size(), first, *n));
    }
  }
  if (*n == 0) return at.At("ttfts", std::nullopt, "no records (the arrays are empty)");
  return *n;
}

Status Count(const Json& doc, std::string_view key, size_t i, const Locator& at, int64_t* out) {
  const Json& v = doc.at(std::string(key))[i];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    return at.At(key, i, fmt::format("expected an integer >= 0, got {}", v.dump()));
  }
  *out = v.get<int64_t>();
  return Status::Ok();
}

Status Seconds(const Json& doc, std::string_view key, size_t i, const Locator& at, double* out) {
  const Json& v = doc.at(std::string(key))[i];
  if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() >= kMaxSeconds) {
    return at.At(key, i, fmt::format("expected seconds >= 0, got {}", v.dump()));
  }
  *out = v.get<double>();
  return Status::Ok();
}

Status ReadEntry(const Json& doc, size_t i, const Locator& at, Entry* e, bool keep_itls = false) {
  const Json& error = doc.at("errors")[i];
  if (!error.is_null() && !error.is_string()) {
    return at.At("errors", i, fmt::format("expected a string (\"\" when it succeeded), got {}", error.type_name()));
  }
  e->failed = error.is_string() && !error.get<std::string>().empty();
  FP_RETURN_IF_ERROR(Count(doc, "input_lens", i, at, &e->input));
  FP_RETURN_IF_ERROR(Count(doc, "output_lens", i, at, &e->output));
  const Json& itls = doc.at("itls")[i];
  if (!itls.is_array()) return at.At("itls", i, fmt::format("expected an array of seconds, got {}", itls.type_name()));
  for (const Json& gap : itls) {
    if (!gap.is_number() || !(gap.get<double>() >= 0) || gap.get<double>() >= kMaxSeconds) {
      return at.At("itls", i, fmt::format("expected gaps in seconds >= 0, got {}", gap.dump()));
    }
    e->itl_sum += gap.get<double>();
    e->itl_max = std::max(e->itl_max.value_or(0.0), gap.get<double>());
    if (keep_itls) e->itls.push_back(gap.get<double>());
  }
  if (doc.contains("start_times")) {
    const Json& s = doc.at("start_times")[i];
    if (!s.is_number()) return at.At("start_times", i, fmt::format("expected seconds, got {}", s.dump()));
    e->start = s.get<double>();
  }
  if (e->failed) return Status::Ok();  // a failed request's times are not measurements
  FP_RETURN_IF_ERROR(Seconds(doc, "ttfts", i, at, &e->ttft));
  if (doc.contains("latencies")) {
    double latency = 0;
    FP_RETURN_IF_ERROR(Seconds(doc, "latencies", i, at, &latency));
    e->latency = latency;
  } else if (!(e->ttft + e->itl_sum < kMaxSeconds)) {
    return at.At("itls", i, "the gaps add up to more time than a run can have");
  }
  return Status::Ok();
}

class VllmBenchReader : public RecordReader {
 public:
  explicit VllmBenchReader(RecordReadOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "vllm-bench"; }

  Expected<RecordsFileInfo> Read(const std::string& path, RecordSink& sink) const override {
    FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    const Locator at(path, text);
    FP_ASSIGN_OR_RETURN(Json doc, ParseDocument(path, text));
    FP_ASSIGN_OR_RETURN(size_t n, CheckArrays(doc, at));
    const bool has_starts = doc.contains("start_times");
    const bool has_latencies = doc.contains("latencies");
    RecordsFileInfo info;
    if (!has_starts) {
      FP_ASSIGN_OR_RETURN(info.stated_window, ReadDuration(doc, at));
    }
    std::vector<Entry> entries(n);
    for (size_t i = 0; i < n; ++i) FP_RETURN_IF_ERROR(ReadEntry(doc, i, at, &entries[i]));
    double base = 0;
    if (has_starts) {
      base = std::min_element(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
               return *a.start < *b.start;
             })->start.value();
    }
    FP_ASSIGN_OR_RETURN(ClassId class_id, ResolveDefaultClass(sink));
    for (size_t i = 0; i < n; ++i) {
      FP_ASSIGN_OR_RETURN(RequestRecord r, ToRecord(entries[i], i, base, class_id, at));
      if (auto problem = CheckRecord(r, sink.NeedsItl(class_id), Names(has_latencies))) {
        auto [key, index] = KeyOf(problem->field, has_starts, has_latencies, i);
        return at.At(key, index, problem->message);
      }
      sink.Add(r);
    }
    info.path = path;
    info.format = std::string(name());
    info.digest = DigestOf(text);
    info.records = static_cast<int64_t>(n);
    AddNotes(has_starts, has_latencies, info);
    return info;
  }

 private:
  static Expected<std::optional<Duration>> ReadDuration(const Json& doc, const Locator& at) {
    if (!doc.contains("duration")) {
      return at.At("", std::nullopt,
                   "the file has neither start_times nor duration, so requests cannot be placed in "
                   "time; give the window with --window");
    }
    const Json& d = doc.at("duration");
    const std::optional<Duration> duration = d.is_number() ? CheckedSeconds(d.get<double>()) : std::nullopt;
    if (!duration || duration->ns() <= 0 || duration->seconds() >= kMaxSeconds) {
      return at.At("duration", std::nullopt,
                   fmt::format("expected a positive number of seconds below {:g}, got {}", kMaxSeconds, d.dump()));
    }
    return std::optional<Duration>(*duration);
  }

  static Expected<RequestRecord> ToRecord(const Entry& e, size_t i, double base, ClassId class_id,
                                          const Locator& at) {
    RequestRecord r;
    r.id = static_cast<RequestId>(i);
    r.class_id = class_id;
    r.input_tokens = e.input;
    r.output_tokens = e.output;
    const std::optional<SimTime> arrival = SecondsToTime(e.start ? *e.start - base : 0.0);
    if (!arrival) return at.At("start_times", i, "start time out of range");
    r.arrival = *arrival;
    if (e.failed) {
      r.status = RecordStatus::kError;
      return r;
    }
    r.first_token = r.arrival + Duration::FromSecondsRounded(e.ttft);
    r.finish = r.arrival + Duration::FromSecondsRounded(e.latency.value_or(e.ttft + e.itl_sum));
    if (e.itl_max) r.itl_max = Duration::FromSecondsRounded(*e.itl_max);
    return r;
  }

  Expected<ClassId> ResolveDefaultClass(RecordSink& sink) const {
    Expected<ClassId> id = sink.ResolveClass(options_.default_class);
    if (!id.ok()) return LocatedError(SourceLocation{}, options_.class_flag, id.status().message());
    return id;
  }

  RecordFieldNames Names(bool has_latencies) const {
    RecordFieldNames names = FleetplanRecordFieldNames();
    auto set = [&](RecordField f, std::string_view n) { names[static_cast<size_t>(f)] = n; };
    set(RecordField::kClass, options_.class_flag);
    set(RecordField::kArrival, "start_times");
    set(RecordField::kFirstToken, "ttfts");
    set(RecordField::kFinish, has_latencies ? "latencies" : "ttfts + itls");
    set(RecordField::kInputTokens, "input_lens");
    set(RecordField::kOutputTokens, "output_lens");
    set(RecordField::kItl, "itls");
    return names;
  }

  static std::pair<std::string_view, std::optional<size_t>> KeyOf(RecordField f, bool has_starts,
                                                                   bool has_latencies, size_t i) {
    switch (f) {
      case RecordField::kArrival: return {has_starts ? "start_times" : "ttfts", i};
      case RecordField::kFirstToken: return {"ttfts", i};
      case RecordField::kFinish: return {has_latencies ? "latencies" : "itls", i};
      case RecordField::kInputTokens: return {"input_lens", i};
      case RecordField::kOutputTokens: return {"output_lens", i};
      default: return {"itls", i};
    }
  }

  void AddNotes(bool has_starts, bool has_latencies, RecordsFileInfo& info) const {
    info.notes.push_back(
        has_starts ? "vllm-bench: arrival = start_times[i] minus the earliest start time (client clock)"
                   : fmt::format("vllm-bench: the file has no start_times, so every request arrives "
                                 "at 0 s and the window is the file's duration ({} s)",
                                 info.stated_window->seconds()));
    info.notes.push_back(has_latencies ? "vllm-bench: finish = arrival + latencies[i]"
                                       : "vllm-bench: finish = arrival + ttfts[i] + sum(itls[i]) "
                                         "(the file has no latencies)");
    info.notes.push_back(
        "vllm-bench: status error where errors[i] is non-empty, else ok; ITL-max = max(itls[i]), "
        "gaps between streamed chunks");
    info.notes.push_back(fmt::format("vllm-bench: every record has class '{}' ({}), valid output",
                                     options_.default_class, options_.class_flag));
  }

  RecordReadOptions options_;
};

// ---------------------------------------------------------------------------------------
// The file as a value (metrics/vllm_bench.h).

// The stated-figure keys: <stat>_<metric>_ms, stat mean | median | std | p<digits>[.digits],
// metric ttft | tpot | itl | e2el.
bool IsStatedFigure(std::string_view key) {
  if (!key.ends_with("_ms")) return false;
  key.remove_suffix(3);
  const size_t sep = key.rfind('_');
  if (sep == std::string_view::npos) return false;
  const std::string_view stat = key.substr(0, sep);
  const std::string_view metric = key.substr(sep + 1);
  if (metric != "ttft" && metric != "tpot" && metric != "itl" && metric != "e2el") return false;
  if (stat == "mean" || stat == "median" || stat == "std") return true;
  if (stat.size() < 2 || stat[0] != 'p') return false;
  return std::all_of(stat.begin() + 1, stat.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

Expected<std::optional<int64_t>> OptionalCount(const Json& doc, const char* key, int64_t min, const Locator& at) {
  if (!doc.contains(key) || doc.at(key).is_null()) return std::optional<int64_t>();
  const Json& v = doc.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < min) {
    return at.At(key, std::nullopt, fmt::format("expected an integer >= {}, got {}", min, v.dump()));
  }
  return std::optional<int64_t>(v.get<int64_t>());
}

// A number in (0, kMaxSeconds), or absent / null.
Expected<std::optional<double>> OptionalPositive(const Json& doc, const char* key, std::string_view what,
                                                 const Locator& at) {
  if (!doc.contains(key) || doc.at(key).is_null()) return std::optional<double>();
  const Json& v = doc.at(key);
  if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() >= kMaxSeconds) {
    return at.At(key, std::nullopt, fmt::format("expected {} > 0, got {}", what, v.dump()));
  }
  return std::optional<double>(v.get<double>());
}

Status ReadClient(const Json& doc, const Locator& at, VllmBenchResult* r) {
  if (!doc.contains("request_rate")) {
    return at.At("", std::nullopt,
                 "missing required field 'request_rate' (requests per second, or \"inf\": how the client sent "
                 "its requests)");
  }
  const Json& rate = doc.at("request_rate");
  if (rate.is_string() && (rate.get<std::string>() == "inf" || rate.get<std::string>() == "Infinity")) {
    r->request_rate.reset();
  } else if (rate.is_number() && rate.get<double>() > 0 && rate.get<double>() < kMaxSeconds) {
    r->request_rate = rate.get<double>();
  } else {
    return at.At("request_rate", std::nullopt,
                 fmt::format("expected requests per second > 0 or \"inf\", got {}", rate.dump()));
  }
  FP_ASSIGN_OR_RETURN(std::optional<double> burstiness, OptionalPositive(doc, "burstiness", "a gamma shape", at));
  r->burstiness = burstiness.value_or(1.0);
  FP_ASSIGN_OR_RETURN(r->max_concurrency, OptionalCount(doc, "max_concurrency", 1, at));
  FP_ASSIGN_OR_RETURN(r->num_prompts, OptionalCount(doc, "num_prompts", 0, at));
  FP_ASSIGN_OR_RETURN(r->completed, OptionalCount(doc, "completed", 0, at));
  FP_ASSIGN_OR_RETURN(r->total_input_tokens, OptionalCount(doc, "total_input_tokens", 0, at));
  FP_ASSIGN_OR_RETURN(r->total_output_tokens, OptionalCount(doc, "total_output_tokens", 0, at));
  FP_ASSIGN_OR_RETURN(r->duration_s, OptionalPositive(doc, "duration", "seconds", at));
  if (doc.contains("model_id") && !doc.at("model_id").is_null()) {
    if (!doc.at("model_id").is_string()) {
      return at.At("model_id", std::nullopt, fmt::format("expected a string, got {}", doc.at("model_id").dump()));
    }
    r->model_id = doc.at("model_id").get<std::string>();
  }
  for (const auto& item : doc.items()) {
    if (!IsStatedFigure(item.key())) continue;
    const Json& v = item.value();
    if (v.is_null()) continue;
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() >= kMaxSeconds) {
      return at.At(item.key(), std::nullopt, fmt::format("expected milliseconds >= 0, got {}", v.dump()));
    }
    r->stated_ms[item.key()] = v.get<double>();
  }
  return Status::Ok();
}

// An aggregate-only file must state what its requests are synthesised from and what they
// are compared with.
Status CheckAggregates(const VllmBenchResult& r, const Locator& at) {
  const auto missing = [&](std::string_view key, std::string_view why) {
    return at.At("", std::nullopt,
                 fmt::format("missing required field '{}': the file has no per-request arrays (ttfts, itls, "
                             "input_lens, output_lens), so {}",
                             key, why));
  };
  if (!r.completed || *r.completed < 1) {
    return r.completed ? at.At("completed", std::nullopt, "no completed requests to compare with")
                       : missing("completed", "the requests are counted from it");
  }
  if (!r.total_input_tokens) return missing("total_input_tokens", "the prompt length is its mean per request");
  if (!r.total_output_tokens) return missing("total_output_tokens", "the answer length is its mean per request");
  if (!r.stated_ms.contains("mean_ttft_ms")) return missing("mean_ttft_ms", "its figures are what is compared");
  if (!r.stated_ms.contains("mean_tpot_ms")) return missing("mean_tpot_ms", "its figures are what is compared");
  return Status::Ok();
}

Expected<VllmBenchResult> ParseResult(std::string_view text, const std::string& path) {
  const Locator at(path, text);
  FP_ASSIGN_OR_RETURN(Json doc, ParseDocument(path, text));
  VllmBenchResult r;
  r.path = path;
  r.digest = DigestOf(text);
  FP_RETURN_IF_ERROR(ReadClient(doc, at, &r));
  const bool detailed = std::any_of(kRequired.begin(), kRequired.end() - 1,
                                    [&](std::string_view key) { return doc.contains(key); });
  if (!detailed) {
    FP_RETURN_IF_ERROR(CheckAggregates(r, at));
    return r;
  }
  FP_ASSIGN_OR_RETURN(const size_t n, CheckArrays(doc, at));
  r.requests.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Entry e;
    FP_RETURN_IF_ERROR(ReadEntry(doc, i, at, &e, /*keep_itls=*/true));
    VllmBenchRequest q;
    q.input_tokens = e.input;
    q.output_tokens = e.output;
    q.failed = e.failed;
    if (!e.failed) {
      q.ttft = Duration::FromSecondsRounded(e.ttft);
      q.e2e = Duration::FromSecondsRounded(e.latency.value_or(e.ttft + e.itl_sum));
      if (q.e2e < q.ttft) {
        return at.At("latencies", i, fmt::format("{} s is less than ttfts[{}] ({} s)", *e.latency, i, e.ttft));
      }
      q.itls.reserve(e.itls.size());
      for (double gap : e.itls) q.itls.push_back(Duration::FromSecondsRounded(gap));
    }
    r.requests.push_back(std::move(q));
  }
  return r;
}

}  // namespace

std::unique_ptr<RecordReader> MakeVllmBenchReader(const RecordReadOptions& options) {
  return std::make_unique<VllmBenchReader>(options);
}

}  // namespace fleetplan::metrics_detail

namespace fleetplan {

std::optional<double> VllmBenchResult::Stated(std::string_view stat, std::string_view metric) const {
  const auto it = stated_ms.find(fmt::format("{}_{}_ms", stat, metric));
  if (it == stated_ms.end()) return std::nullopt;
  return it->second;
}

Expected<VllmBenchResult> ParseVllmBenchResult(std::string_view text, const std::string& path) {
  return metrics_detail::ParseResult(text, path);
}

Expected<VllmBenchResult> ReadVllmBenchResult(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return metrics_detail::ParseResult(text, path);
}

}  // namespace fleetplan
