// CSV trace imports: Azure LLM inference, BurstGPT, and fleetplan's plain CSV. One
// header-driven row parser; each format names its columns and fills a request.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <limits>

#include "fleetplan/core/flag_error.h"
#include "fleetplan/core/calendar.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/wording.h"
#include "fleetplan/workload/content.h"
#include "workload/csv.h"
#include "workload/trace_internal.h"

namespace fleetplan::workload_internal {
namespace {

struct CsvColumn {
  std::string name;
  bool required = true;
};

class CsvRowParser : public RowParser {
 public:
  CsvRowParser(std::string format, std::vector<CsvColumn> columns)
      : format_(std::move(format)), columns_(std::move(columns)), position_(columns_.size(), -1) {}

  bool has_header() const override { return true; }

  Status ParseHeader(const RowContext& ctx, WorkloadNames* names) override {
    const std::string problem = SplitCsvLine(ctx.line, &fields_, &storage_);
    if (!problem.empty()) return ctx.Error(1, "", problem);
    std::vector<std::string> valid;
    for (const auto& c : columns_) valid.push_back(c.name);
    for (size_t i = 0; i < fields_.size(); ++i) {
      const auto it = std::find(valid.begin(), valid.end(), fields_[i].text);
      if (it == valid.end()) {
        return ctx.Error(fields_[i].column, "",
                         fmt::format("{} in the header of {} {} trace",
                                     UnknownNameMessage("column", fields_[i].text, valid), Article(format_), format_));
      }
      const auto c = static_cast<size_t>(it - valid.begin());
      if (position_[c] >= 0) {
        return ctx.Error(fields_[i].column, "", fmt::format("column '{}' appears twice in the header", *it));
      }
      position_[c] = static_cast<int>(i);
    }
    header_fields_ = fields_.size();
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (columns_[c].required && position_[c] < 0) {
        std::vector<std::string> got;
        for (const auto& f : fields_) got.emplace_back(f.text);
        return ctx.Error(1, "",
                         fmt::format("the header of {} {} trace needs a column '{}' (the header has: {})",
                                     Article(format_), format_,
                                     columns_[c].name, fmt::join(got, ", ")));
      }
    }
    return AfterHeader(ctx, names);
  }

  Status ParseRow(const RowContext& ctx, WorkloadNames* names, Request* out, ParsedRow* row) override {
    const std::string problem = SplitCsvLine(ctx.line, &fields_, &storage_);
    if (!problem.empty()) return ctx.Error(1, "", problem);
    if (fields_.size() != header_fields_) {
      const int column =
          fields_.size() < header_fields_ ? static_cast<int>(ctx.line.size()) + 1 : fields_[header_fields_].column;
      return ctx.Error(column, "",
                       fmt::format("expected {} fields (as in the header), got {}{}", header_fields_, fields_.size(),
                                   fields_.size() < header_fields_ ? " (truncated line?)" : ""));
    }
    FP_RETURN_IF_ERROR(Fill(ctx, names, out, row));
    ++rows_;
    return Status::Ok();
  }

 protected:
  virtual Status AfterHeader(const RowContext& ctx, WorkloadNames* names) = 0;
  virtual Status Fill(const RowContext& ctx, WorkloadNames* names, Request* out, ParsedRow* row) = 0;

  bool Has(size_t column) const { return position_[column] >= 0; }
  const CsvField& Field(size_t column) const { return fields_[static_cast<size_t>(position_[column])]; }
  const std::string& Name(size_t column) const { return columns_[column].name; }

  // A token count: an integer >= min, at most kMaxRequestTokens.
  Expected<int64_t> Int(const RowContext& ctx, size_t column, int64_t min, std::string_view hint = "") const {
    const CsvField& f = Field(column);
    const std::optional<int64_t> v = ParseInt64(f.text);
    if (v && *v > kMaxRequestTokens) {
      return ctx.Error(f.column, Name(column),
                       fmt::format("expected at most {} tokens (fleetplan's limit per request), got {}",
                                   kMaxRequestTokens, f.text));
    }
    if (v && *v >= min) return *v;
    return ctx.Error(f.column, Name(column),
                     fmt::format("expected an integer >= {}, got {}{}", min, DescribeCsvValue(f.text), hint));
  }

  Expected<std::string_view> Text(const RowContext& ctx, size_t column) const {
    const CsvField& f = Field(column);
    if (!f.text.empty()) return f.text;
    return ctx.Error(f.column, Name(column), "expected a name, got an empty field");
  }

  Expected<int64_t> Seconds(const RowContext& ctx, size_t column, ParsedRow* row) const {
    const CsvField& f = Field(column);
    row->time_column = f.column;
    const std::optional<int64_t> ns = ParseDecimalSeconds(f.text);
    if (ns) return *ns;
    return ctx.Error(f.column, Name(column),
                     fmt::format("expected non-negative seconds such as 12 or 3.25, got {}", DescribeCsvValue(f.text)));
  }

  // One unique-content segment: a trace without block information shares nothing.
  void UniquePrompt(int64_t tokens, Request* out) const {
    out->prompt.push_back(PromptSegment{MakeContentId(SegmentKind::kUnique, static_cast<uint64_t>(rows_)), tokens});
  }

  std::string format_;
  std::vector<CsvColumn> columns_;
  std::vector<int> position_;  // column -> field index in the header, -1 when absent
  size_t header_fields_ = 0;
  std::vector<CsvField> fields_;
  std::deque<std::string> storage_;
  int64_t rows_ = 0;
};

// --- Azure LLM inference (2023): TIMESTAMP, ContextTokens, GeneratedTokens ---------

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;


// "YYYY-MM-DD HH:MM:SS[.f...]" (1-9 fractional digits; 'T' also separates) to
// nanoseconds since 1970-01-01 on the trace's own (unstated) time zone.
std::optional<int64_t> ParseWallClock(std::string_view s) {
  const auto digits = [&](size_t at, size_t n) -> std::optional<int64_t> {
    if (at + n > s.size()) return std::nullopt;
    int64_t v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  const auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2);
  const auto h = digits(11, 2), mi = digits(14, 2), se = digits(17, 2);
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > DaysInMonth(*y, *mo) || *h > 23 || *mi > 59 || *se > 59) {
    return std::nullopt;
  }
  int64_t frac_ns = 0;
  if (s.size() > 19) {
    const size_t n = s.size() - 20;
    if (s[19] != '.' || n < 1 || n > 9) return std::nullopt;
    const auto frac = digits(20, n);
    if (!frac) return std::nullopt;
    frac_ns = *frac;
    for (size_t i = n; i < 9; ++i) frac_ns *= 10;
  }
  const int64_t seconds = DaysFromCivil(*y, *mo, *d) * kSecondsPerDay + *h * 3600 + *mi * 60 + *se;
  // int64 nanoseconds reach 1677-09-21 .. 2262-04-11; a date outside is not a timestamp here.
  int64_t ns = 0;
  if (__builtin_mul_overflow(seconds, kNanosPerSecond, &ns) || __builtin_add_overflow(ns, frac_ns, &ns)) {
    return std::nullopt;
  }
  return ns;
}

std::string FormatWallClock(int64_t ns) {
  const int64_t seconds = ns >= 0 ? ns / kNanosPerSecond : (ns - kNanosPerSecond + 1) / kNanosPerSecond;
  const int64_t frac = ns - seconds * kNanosPerSecond;
  const int64_t days = seconds >= 0 ? seconds / kSecondsPerDay : (seconds - kSecondsPerDay + 1) / kSecondsPerDay;
  const int64_t sod = seconds - days * kSecondsPerDay;
  const CivilDate c = CivilFromDays(days);
  return fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}.{:07d}", c.year, c.month, c.day, sod / 3600, sod / 60 % 60,
                     sod % 60, frac / 100);
}

class AzureRowParser final : public CsvRowParser {
 public:
  explicit AzureRowParser(std::string class_name)
      : CsvRowParser("azure", {{"TIMESTAMP"}, {"ContextTokens"}, {"GeneratedTokens"}}),
        class_name_(std::move(class_name)) {}
  bool absolute_clock() const override { return true; }
  std::string_view time_field() const override { return "TIMESTAMP"; }
  std::string FormatTime(int64_t raw_ns) const override { return FormatWallClock(raw_ns); }

 private:
  enum : size_t { kTime = 0, kContext = 1, kGenerated = 2 };
  Status AfterHeader(const RowContext&, WorkloadNames* names) override {
    names->classes = {class_name_};
    return Status::Ok();
  }
  Status Fill(const RowContext& ctx, WorkloadNames*, Request* out, ParsedRow* row) override {
    const CsvField& t = Field(kTime);
    const std::optional<int64_t> ns = ParseWallClock(t.text);
    if (!ns) {
      return ctx.Error(
          t.column, "TIMESTAMP",
          fmt::format("expected a time like 2023-11-16 18:17:03.9799600, got {}", DescribeCsvValue(t.text)));
    }
    row->raw_time_ns = *ns;
    row->time_column = t.column;
    FP_ASSIGN_OR_RETURN(int64_t context, Int(ctx, kContext, 1));
    FP_ASSIGN_OR_RETURN(out->output_tokens, Int(ctx, kGenerated, 1));
    UniquePrompt(context, out);
    out->class_id = 0;
    return Status::Ok();
  }
  std::string class_name_;
};

// --- BurstGPT: Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type

class BurstGptRowParser final : public CsvRowParser {
 public:
  explicit BurstGptRowParser(bool drop_failed)
      : CsvRowParser(
            "burstgpt",
            {{"Timestamp"}, {"Model"}, {"Request tokens"}, {"Response tokens"}, {"Total tokens"}, {"Log Type"}}),
        drop_failed_(drop_failed) {}
  std::string_view time_field() const override { return "Timestamp"; }
  std::string FormatTime(int64_t raw_ns) const override { return FormatSecondsExact(raw_ns); }

 private:
  enum : size_t { kTime = 0, kModel, kRequest, kResponse, kTotal, kLogType };
  Status AfterHeader(const RowContext&, WorkloadNames* names) override {
    classes_ = std::make_unique<NameInterner>(&names->classes);
    tenants_ = std::make_unique<NameInterner>(&names->tenants);
    return Status::Ok();
  }
  Status Fill(const RowContext& ctx, WorkloadNames*, Request* out, ParsedRow* row) override {
    FP_ASSIGN_OR_RETURN(row->raw_time_ns, Seconds(ctx, kTime, row));
    FP_ASSIGN_OR_RETURN(std::string_view model, Text(ctx, kModel));
    FP_ASSIGN_OR_RETURN(int64_t request, Int(ctx, kRequest, 1));
    FP_ASSIGN_OR_RETURN(int64_t response, Int(ctx, kResponse, 0));
    FP_ASSIGN_OR_RETURN(int64_t total, Int(ctx, kTotal, 0));
    FP_ASSIGN_OR_RETURN(std::string_view log_type, Text(ctx, kLogType));
    if (total != request + response) {
      return ctx.Error(Field(kTotal).column, "Total tokens",
                       fmt::format("expected Request tokens + Response tokens = {} + {} = {}, got {}", request,
                                   response, request + response, total));
    }
    if (response == 0) {
      if (drop_failed_) {
        row->dropped = true;
        return Status::Ok();
      }
      return ctx.Error(Field(kResponse).column, "Response tokens",
                       "expected an integer >= 1, got 0 (BurstGPT logs failed requests with 0 response tokens; "
                       "pass --drop-failed to leave them out, counted in the output)");
    }
    out->class_id = classes_->Intern(model);
    out->tenant = tenants_->Intern(log_type);
    out->output_tokens = response;
    UniquePrompt(request, out);
    return Status::Ok();
  }
  bool drop_failed_;
  std::unique_ptr<NameInterner> classes_, tenants_;
};

// --- plain CSV: arrival_s, prompt_tokens, output_tokens [, class] [, tenant] ----------

class PlainCsvRowParser final : public CsvRowParser {
 public:
  explicit PlainCsvRowParser(std::optional<std::string> class_name)
      : CsvRowParser("csv", {{"arrival_s"}, {"prompt_tokens"}, {"output_tokens"}, {"class", false}, {"tenant", false}}),
        class_name_(std::move(class_name)) {}
  std::string_view time_field() const override { return "arrival_s"; }
  std::string FormatTime(int64_t raw_ns) const override { return FormatSecondsExact(raw_ns); }

 private:
  enum : size_t { kArrival = 0, kPrompt, kOutput, kClass, kTenant };
  Status AfterHeader(const RowContext& ctx, WorkloadNames* names) override {
    if (Has(kClass) && class_name_) {
      return ctx.Error(Field(kClass).column, "class",
                       "this CSV names each row's class; drop --class / `class:` (or the column)");
    }
    classes_ = std::make_unique<NameInterner>(&names->classes);
    tenants_ = std::make_unique<NameInterner>(&names->tenants);
    if (!Has(kClass)) classes_->Intern(class_name_.value_or("default"));
    return Status::Ok();
  }
  Status Fill(const RowContext& ctx, WorkloadNames*, Request* out, ParsedRow* row) override {
    FP_ASSIGN_OR_RETURN(row->raw_time_ns, Seconds(ctx, kArrival, row));
    FP_ASSIGN_OR_RETURN(int64_t prompt, Int(ctx, kPrompt, 1));
    FP_ASSIGN_OR_RETURN(out->output_tokens, Int(ctx, kOutput, 1));
    out->class_id = 0;
    if (Has(kClass)) {
      FP_ASSIGN_OR_RETURN(std::string_view name, Text(ctx, kClass));
      out->class_id = classes_->Intern(name);
    }
    if (Has(kTenant)) {
      FP_ASSIGN_OR_RETURN(std::string_view name, Text(ctx, kTenant));
      out->tenant = tenants_->Intern(name);
    }
    UniquePrompt(prompt, out);
    return Status::Ok();
  }
  std::optional<std::string> class_name_;
  std::unique_ptr<NameInterner> classes_, tenants_;
};

}  // namespace

Status RejectDropFailed(const TraceReadOptions& options, std::string_view format) {
  if (!options.drop_failed) return Status::Ok();
  return FlagValueError("--drop-failed", fmt::format("applies to burstgpt traces only (this is {})", format));
}

Expected<std::unique_ptr<RowParser>> MakeAzureRowParser(const TraceReadOptions& options) {
  FP_RETURN_IF_ERROR(RejectDropFailed(options, "azure"));
  return std::unique_ptr<RowParser>(std::make_unique<AzureRowParser>(options.class_name.value_or("default")));
}

Expected<std::unique_ptr<RowParser>> MakeBurstGptRowParser(const TraceReadOptions& options) {
  if (options.class_name) {
    return InvalidInput("class: a BurstGPT trace names each row's class (its Model column); drop --class / `class:`");
  }
  return std::unique_ptr<RowParser>(std::make_unique<BurstGptRowParser>(options.drop_failed));
}

Expected<std::unique_ptr<RowParser>> MakePlainCsvRowParser(const TraceReadOptions& options) {
  FP_RETURN_IF_ERROR(RejectDropFailed(options, "csv"));
  return std::unique_ptr<RowParser>(std::make_unique<PlainCsvRowParser>(options.class_name));
}

}  // namespace fleetplan::workload_internal
