// Value slots: parsing `tokens:`-style YAML values into fixed values or distributions,
// and drawing from them. See slot.h for the syntax and the rounding rules.
#include "fleetplan/workload/slot.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/units_parse.h"
#include "workload/csv.h"
#include "workload/yaml_util.h"

namespace fleetplan {
namespace {

using workload_internal::ParseFiniteDouble;
using workload_internal::ResolveAgainstYamlFile;
using workload_internal::SplitCsvLine;
using workload_internal::YamlToJson;

// Largest token draw: kMaxRequestTokens (core/limits.h), the most any input may give for
// one count, so a generated trace always reads back. Draws above it saturate (and report
// capped).
constexpr double kMaxDrawTokens = static_cast<double>(kMaxRequestTokens);

// A token count written in the scenario: an integer in [1, kMaxRequestTokens].
Expected<int64_t> ReadTokenCount(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(int64_t v, node.AsIntAtLeast(1));
  if (v > kMaxRequestTokens) {
    return node.Error(fmt::format("expected at most {} tokens (fleetplan's limit for one count; see "
                                  "docs/limits.md), got {}",
                                  kMaxRequestTokens, v));
  }
  return v;
}
// Largest duration draw: 10^9 s (~31 years) keeps nanoseconds well inside int64.
constexpr double kMaxDrawSeconds = 1e9;

enum class SlotUnit { kTokens, kSeconds };

struct ParsedSlot {
  SlotDistribution dist;
  int64_t cap = 0;  // raw unit (tokens or ns); 0 = none
  Json description;
};

// A distribution parameter: a plain number for tokens, a duration (in seconds) for time.
Expected<double> ReadParam(const YamlNode& node, SlotUnit unit) {
  if (unit == SlotUnit::kTokens) return node.AsDouble();
  FP_ASSIGN_OR_RETURN(Duration d, node.AsDuration());
  return d.seconds();
}

// Wraps a distribution factory's (unlocated) message at `node`.
template <typename T>
Expected<SlotDistribution> Located(const YamlNode& node, Expected<T> made) {
  if (!made.ok()) return node.Error(made.status().message());
  return SlotDistribution(std::move(made).value());
}

Expected<SlotDistribution> ParseUniform(const YamlNode& node, SlotUnit unit) {
  if (!node.IsSequence()) {
    return node.Error(fmt::format("expected [lo, hi], got {}", QuoteValue(node.Text())));
  }
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  if (items.size() != 2) {
    return node.Error(fmt::format("expected [lo, hi] (two values), got {} values", items.size()));
  }
  double lo = 0;
  double hi = 0;
  if (unit == SlotUnit::kTokens) {
    FP_ASSIGN_OR_RETURN(int64_t a, ReadTokenCount(items[0]));
    FP_ASSIGN_OR_RETURN(int64_t b, ReadTokenCount(items[1]));
    lo = static_cast<double>(a);
    hi = static_cast<double>(b);
  } else {
    FP_ASSIGN_OR_RETURN(lo, ReadParam(items[0], unit));
    FP_ASSIGN_OR_RETURN(hi, ReadParam(items[1], unit));
  }
  if (lo > hi) {
    return node.Error(fmt::format("expected lo <= hi, got [{}, {}]", items[0].Text(), items[1].Text()));
  }
  // Tokens: [lo, hi + 1) floored is the integers lo..hi, each equally likely.
  auto made = Uniform::Make(lo, unit == SlotUnit::kTokens ? hi + 1 : hi);
  if (!made.ok()) return node.Error(made.status().message());
  return SlotDistribution(UniformRange{*made, lo, hi});
}

Expected<SlotDistribution> ParseLognormal(const YamlNode& node, SlotUnit unit) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"median", "p99"}));
  FP_ASSIGN_OR_RETURN(double median, ReadParam(node["median"], unit));
  FP_ASSIGN_OR_RETURN(double p99, ReadParam(node["p99"], unit));
  return Located(node, Lognormal::FromMedianP99(median, p99));
}

Expected<SlotDistribution> ParseExponential(const YamlNode& node, SlotUnit unit) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"mean"}));
  FP_ASSIGN_OR_RETURN(double mean, ReadParam(node["mean"], unit));
  return Located(node, Exponential::Make(mean));
}

Expected<SlotDistribution> ParseGamma(const YamlNode& node, SlotUnit unit) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"mean", "cv"}));
  FP_ASSIGN_OR_RETURN(double mean, ReadParam(node["mean"], unit));
  FP_ASSIGN_OR_RETURN(double cv, node["cv"].AsDouble());
  return Located(node, Gamma::Make(mean, cv));
}

Expected<SlotDistribution> ParseZipf(const YamlNode& node, SlotUnit unit) {
  if (unit != SlotUnit::kTokens) {
    return node.Error("zipf draws integer ranks; it is only for token counts");
  }
  FP_RETURN_IF_ERROR(node.CheckKeys({"n", "s"}));
  FP_ASSIGN_OR_RETURN(int64_t n, node["n"].AsIntAtLeast(1));
  FP_ASSIGN_OR_RETURN(double s, node["s"].AsDouble());
  return Located(node, Zipf::Make(n, s));
}

// Empirical values from a file: one number per line ('#' comments, blank lines
// skipped), or one column of a CSV file with a header row.
Expected<std::vector<double>> LoadEmpiricalValues(const YamlNode& node, SlotUnit unit) {
  YamlNode file_node = node;
  std::string column;
  if (node.IsMap()) {
    FP_RETURN_IF_ERROR(node.CheckKeys({"file", "column"}));
    file_node = node["file"];
    FP_ASSIGN_OR_RETURN(column, node["column"].StringOr(""));
  }
  FP_ASSIGN_OR_RETURN(std::string file, file_node.AsString());
  const std::string path = ResolveAgainstYamlFile(file_node, file);
  auto text = ReadFile(path);
  if (!text.ok()) return file_node.Error(text.status().message());

  std::vector<double> values;
  std::vector<workload_internal::CsvField> fields;
  std::deque<std::string> storage;
  int column_index = -1;
  bool header_done = column.empty();
  int line_no = 0;
  std::string_view rest = *text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const SourceLocation at{path, line_no, 1, std::string(line)};
    std::string_view value_text = line;
    int value_column = 1;
    if (column.empty()) {
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string_view::npos || line[first] == '#') continue;
      value_text = line.substr(first, line.find_last_not_of(" \t") - first + 1);
      value_column = static_cast<int>(first) + 1;
    } else {
      const std::string problem = SplitCsvLine(line, &fields, &storage);
      if (!problem.empty()) return LocatedError(at, "", problem);
      if (!header_done) {
        std::vector<std::string> names;
        for (const auto& f : fields) names.emplace_back(f.text);
        const auto it = std::find(names.begin(), names.end(), column);
        if (it == names.end()) return node["column"].Error(UnknownNameMessage("column", column, names));
        column_index = static_cast<int>(it - names.begin());
        header_done = true;
        continue;
      }
      if (line.empty()) continue;
      if (static_cast<int>(fields.size()) <= column_index) {
        return LocatedError(at, column, fmt::format("expected at least {} fields, got {}",
                                                    column_index + 1, fields.size()));
      }
      value_text = fields[static_cast<size_t>(column_index)].text;
      value_column = fields[static_cast<size_t>(column_index)].column;
    }
    const SourceLocation where{path, line_no, value_column, std::string(line)};
    const auto value = ParseFiniteDouble(value_text);
    const bool ok = value.has_value() && (unit == SlotUnit::kTokens ? *value > 0 : *value >= 0);
    if (!ok) {
      return LocatedError(where, column, fmt::format("expected a {} number, got {}",
                                                     unit == SlotUnit::kTokens ? "positive" : "non-negative",
                                                     QuoteValue(value_text)));
    }
    values.push_back(*value);
  }
  if (values.empty()) return file_node.Error(fmt::format("no values in '{}'", path));
  return values;
}

Expected<SlotDistribution> ParseEmpirical(const YamlNode& node, SlotUnit unit) {
  FP_ASSIGN_OR_RETURN(auto values, LoadEmpiricalValues(node, unit));
  return Located(node, Empirical::Make(std::move(values)));
}

struct DistributionParser {
  std::string_view name;
  std::function<Expected<SlotDistribution>(const YamlNode&, SlotUnit)> parse;
};

const std::vector<DistributionParser>& DistributionParsers() {
  static const std::vector<DistributionParser> parsers = {
      {"uniform", ParseUniform},     {"lognormal", ParseLognormal}, {"exponential", ParseExponential},
      {"gamma", ParseGamma},         {"zipf", ParseZipf},           {"empirical", ParseEmpirical},
  };
  return parsers;
}

std::vector<std::string> DistributionNames() {
  std::vector<std::string> names;
  for (const auto& p : DistributionParsers()) names.emplace_back(p.name);
  return names;
}

Expected<ParsedSlot> ParseSlotMap(const YamlNode& node, SlotUnit unit) {
  std::vector<std::string> allowed = DistributionNames();
  allowed.emplace_back("max");
  FP_RETURN_IF_ERROR(node.CheckKeys(allowed));
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  std::vector<std::string> given;
  for (const auto& [key, value] : entries) {
    if (key != "max") given.push_back(key);
  }
  if (given.size() != 1) {
    return node.Error(fmt::format("expected exactly one distribution ({}), got {}",
                                  fmt::join(DistributionNames(), ", "),
                                  given.empty() ? std::string("none") : fmt::format("{}", fmt::join(given, " and "))));
  }
  ParsedSlot out;
  for (const auto& parser : DistributionParsers()) {
    if (parser.name != given.front()) continue;
    FP_ASSIGN_OR_RETURN(out.dist, parser.parse(node[given.front()], unit));
  }
  const YamlNode max = node["max"];
  if (max.present()) {
    if (unit == SlotUnit::kTokens) {
      FP_ASSIGN_OR_RETURN(out.cap, ReadTokenCount(max));
    } else {
      FP_ASSIGN_OR_RETURN(Duration cap, max.AsPositiveDuration());
      out.cap = cap.ns();
    }
  }
  out.description = YamlToJson(node);
  return out;
}

Expected<ParsedSlot> ParseSlot(const YamlNode& node, SlotUnit unit) {
  if (!node.present()) return node.AsString().status();  // "missing required field ..."
  if (node.IsMap()) return ParseSlotMap(node, unit);
  if (node.IsScalar()) {
    ParsedSlot out;
    if (unit == SlotUnit::kTokens) {
      FP_ASSIGN_OR_RETURN(int64_t v, ReadTokenCount(node));
      out.dist = FixedValue{v};
    } else {
      FP_ASSIGN_OR_RETURN(Duration d, node.AsDuration());
      out.dist = FixedValue{d.ns()};
    }
    out.description = YamlToJson(node);
    return out;
  }
  return node.Error(fmt::format("expected {} or a distribution map ({}), got {}",
                                unit == SlotUnit::kTokens ? "a token count (an integer >= 1)" : "a duration",
                                fmt::join(DistributionNames(), ", "), QuoteValue(node.Text())));
}

// Rounds a continuous token draw up to a whole count >= 1; saturates at kMaxDrawTokens.
int64_t RoundUpTokens(double x, bool* saturated) {
  if (!(x < kMaxDrawTokens)) {
    *saturated = true;
    return static_cast<int64_t>(kMaxDrawTokens);
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(x)));
}

Duration SecondsToDuration(double s, bool* saturated) {
  if (!(s < kMaxDrawSeconds)) {
    *saturated = true;
    return Duration::FromSecondsRounded(kMaxDrawSeconds);
  }
  return Duration::FromSecondsRounded(std::max(0.0, s));
}

struct TokenDraw {
  RngStream& rng;
  bool* saturated;
  int64_t operator()(const FixedValue& f) const { return f.value; }
  int64_t operator()(const UniformRange& u) const {
    const double x = std::floor(u.dist.Sample(rng));
    return static_cast<int64_t>(std::clamp(x, u.lo, u.hi));
  }
  int64_t operator()(const Zipf& z) const { return z.Sample(rng); }
  template <typename D>
  int64_t operator()(const D& d) const {
    return RoundUpTokens(d.Sample(rng), saturated);
  }
};

struct DurationDraw {
  RngStream& rng;
  bool* saturated;
  Duration operator()(const FixedValue& f) const { return Duration::Nanos(f.value); }
  Duration operator()(const UniformRange& u) const { return SecondsToDuration(u.dist.Sample(rng), saturated); }
  Duration operator()(const Zipf& z) const {
    return SecondsToDuration(static_cast<double>(z.Sample(rng)), saturated);
  }
  template <typename D>
  Duration operator()(const D& d) const {
    return SecondsToDuration(d.Sample(rng), saturated);
  }
};

struct MeanOf {
  double operator()(const FixedValue& f) const { return static_cast<double>(f.value); }
  double operator()(const UniformRange& u) const { return (u.lo + u.hi) / 2; }
  double operator()(const Zipf& z) const {
    double mean = 0;
    for (int64_t k = 1; k <= z.n(); ++k) mean += static_cast<double>(k) * z.Probability(k);
    return mean;
  }
  template <typename D>
  double operator()(const D& d) const {
    return d.mean();
  }
};

}  // namespace

TokenSlot::TokenSlot(SlotDistribution dist, int64_t cap, Json description)
    : dist_(std::move(dist)), cap_(cap), description_(std::move(description)) {}

Expected<TokenSlot> TokenSlot::Parse(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(ParsedSlot parsed, ParseSlot(node, SlotUnit::kTokens));
  return TokenSlot(std::move(parsed.dist), parsed.cap, std::move(parsed.description));
}

TokenSlot TokenSlot::Fixed(int64_t tokens) {
  FP_ASSERT(tokens >= 1);
  return TokenSlot(FixedValue{tokens}, 0, Json(tokens));
}

int64_t TokenSlot::Sample(RngStream& rng, bool* was_capped) const {
  bool saturated = false;
  int64_t v = std::visit(TokenDraw{rng, &saturated}, dist_);
  bool capped = saturated;
  if (cap_ > 0 && v > cap_) {
    v = cap_;
    capped = true;
  }
  if (was_capped != nullptr) *was_capped = capped;
  return v;
}

double TokenSlot::UncappedMean() const { return std::visit(MeanOf{}, dist_); }

int64_t TokenSlot::MinTokens() const {
  int64_t least = 1;
  if (const auto* f = std::get_if<FixedValue>(&dist_)) least = f->value;
  if (const auto* u = std::get_if<UniformRange>(&dist_)) least = static_cast<int64_t>(u->lo);
  return cap_ > 0 ? std::min(least, cap_) : least;
}

bool TokenSlot::HasKnownMax() const {
  return cap_ > 0 || std::holds_alternative<FixedValue>(dist_) || std::holds_alternative<UniformRange>(dist_) ||
         std::holds_alternative<Zipf>(dist_);
}

int64_t TokenSlot::MaxTokens() const {
  int64_t most = kMaxRequestTokens;
  if (const auto* f = std::get_if<FixedValue>(&dist_)) most = f->value;
  if (const auto* u = std::get_if<UniformRange>(&dist_)) most = static_cast<int64_t>(u->hi);
  if (const auto* z = std::get_if<Zipf>(&dist_)) most = z->n();
  return cap_ > 0 ? std::min(most, cap_) : most;
}

Json TokenSlot::Describe() const { return description_; }

DurationSlot::DurationSlot(SlotDistribution dist, Duration cap, Json description)
    : dist_(std::move(dist)), cap_(cap), description_(std::move(description)) {}

Expected<DurationSlot> DurationSlot::Parse(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(ParsedSlot parsed, ParseSlot(node, SlotUnit::kSeconds));
  const Duration cap = parsed.cap > 0 ? Duration::Nanos(parsed.cap) : Duration::Max();
  return DurationSlot(std::move(parsed.dist), cap, std::move(parsed.description));
}

DurationSlot DurationSlot::Fixed(Duration d) {
  FP_ASSERT(d >= Duration());
  return DurationSlot(FixedValue{d.ns()}, Duration::Max(), Json(FormatDuration(d)));
}

Duration DurationSlot::Sample(RngStream& rng, bool* was_capped) const {
  bool saturated = false;
  Duration d = std::visit(DurationDraw{rng, &saturated}, dist_);
  bool capped = saturated;
  if (d > cap_) {
    d = cap_;
    capped = true;
  }
  if (was_capped != nullptr) *was_capped = capped;
  return d;
}

Json DurationSlot::Describe() const { return description_; }

}  // namespace fleetplan
