// Reading a speculation rounds file (evidence/speculation_rounds.h): JSONL, one round per line,
// every problem located at file:line:col and the field.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/utf8.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json_keys.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/text_lines.h"
#include "fleetplan/evidence/speculation_rounds.h"

namespace fleetplan {
namespace {

// Most drafted tokens per round accepted: engines draft a handful (vLLM's
// num_speculative_tokens is typically 1-8); 4096 rejects garbage without limiting anyone.
constexpr size_t kMaxDraftTokens = 4096;
// Longest measured time accepted per phase: one hour catches a unit slip (seconds
// written as ms) without refusing real outliers.
constexpr double kMaxPhaseMs = 3'600'000;

class LineContext {
 public:
  LineContext(const std::string& file, int64_t line, std::string_view text)
      : file_(file), line_(line), text_(text) {}

  // An error at the byte offset (0-based) of the line.
  Status ErrorAtOffset(size_t offset, std::string_view field, std::string_view message) const {
    SourceLocation where;
    where.file = file_;
    where.line = static_cast<int>(line_);
    where.column = static_cast<int>(utf8::CountCodePoints(text_.substr(0, std::min(offset, text_.size())))) + 1;
    where.source_line = std::string(text_);
    return LocatedError(where, field, message);
  }
  // An error at the key of `field` (the first `"field"` in the line), else the line start.
  Status ErrorAtField(std::string_view field, std::string_view message) const {
    const size_t at = text_.find(fmt::format("\"{}\"", field));
    return ErrorAtOffset(at == std::string_view::npos ? 0 : at, field, message);
  }

 private:
  const std::string& file_;
  int64_t line_;
  std::string_view text_;
};

// nlohmann's message without its prefix and without the "last read" echo (which may hold
// bytes that are not UTF-8).
std::string SyntaxMessage(const std::string& what) {
  std::string m = what;
  const size_t column = m.find("column ");
  if (column != std::string::npos) {
    const size_t colon = m.find(": ", column);
    if (colon != std::string::npos) m = m.substr(colon + 2);
  }
  const size_t last = m.find("; last read");
  if (last != std::string::npos) m = m.substr(0, last);
  if (utf8::FindInvalid(m) != std::string_view::npos) m = "syntax error";
  return "invalid JSON: " + m;
}

// A value as an error message shows it: scalars as written (long strings cut), arrays and
// objects by their kind only, so a huge or deeply nested value is never serialized.
std::string Shown(const Json& v) {
  constexpr size_t kMaxShown = 40;
  if (v.is_array()) return fmt::format("an array of {}", v.size());
  if (v.is_object()) return "an object";
  const std::string text = v.dump();
  return text.size() <= kMaxShown ? text : text.substr(0, kMaxShown) + "...";
}

Expected<std::vector<int64_t>> ReadTokens(const Json& v, std::string_view field, const LineContext& at) {
  if (!v.is_array()) return at.ErrorAtField(field, "expected an array of token ids");
  if (v.empty()) return at.ErrorAtField(field, "expected at least one drafted token, got []");
  if (v.size() > kMaxDraftTokens) {
    return at.ErrorAtField(field, fmt::format("expected at most {} tokens, got {}", kMaxDraftTokens, v.size()));
  }
  std::vector<int64_t> ids;
  ids.reserve(v.size());
  for (const Json& t : v) {
    if (!t.is_number_integer() || (t.is_number_unsigned() && t.get<uint64_t>() > INT64_MAX) ||
        t.get<int64_t>() < 0) {
      return at.ErrorAtField(field, fmt::format("expected token ids (integers >= 0), got {}", Shown(t)));
    }
    ids.push_back(t.get<int64_t>());
  }
  return ids;
}

Expected<Duration> ReadMs(const Json& obj, std::string_view field, const LineContext& at) {
  auto it = obj.find(field);
  if (it == obj.end()) return at.ErrorAtOffset(0, field, "missing required field (a time in ms)");
  if (!it->is_number()) return at.ErrorAtField(field, "expected a number of milliseconds");
  const double ms = it->get<double>();
  if (!(ms >= 0) || ms > kMaxPhaseMs) {
    return at.ErrorAtField(field, fmt::format("expected milliseconds between 0 and {}, got {}", kMaxPhaseMs, Shown(*it)));
  }
  return Duration::FromMillisRounded(ms);
}

Status ReadRound(const Json& obj, const LineContext& at, SpecRound& r) {
  static const std::vector<std::string> kKeys = {"draft", "target", "draft_ms", "verify_ms",
                                                 "seq", "batch", "error"};
  for (const auto& [key, value] : obj.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return at.ErrorAtField(key, UnknownNameMessage("field", key, kKeys));
    }
  }
  for (const char* required : {"draft", "target"}) {
    if (!obj.contains(required)) return at.ErrorAtOffset(0, required, "missing required field");
  }
  FP_ASSIGN_OR_RETURN(r.draft, ReadTokens(obj["draft"], "draft", at));
  FP_ASSIGN_OR_RETURN(r.target, ReadTokens(obj["target"], "target", at));
  if (r.draft.size() != r.target.size()) {
    return at.ErrorAtField("target", fmt::format("expected the target's token at each of the {} drafted "
                                                 "positions, got {}", r.draft.size(), r.target.size()));
  }
  FP_ASSIGN_OR_RETURN(r.draft_time, ReadMs(obj, "draft_ms", at));
  FP_ASSIGN_OR_RETURN(r.verify_time, ReadMs(obj, "verify_ms", at));
  if (auto it = obj.find("seq"); it != obj.end() && !it->is_null()) {
    if (it->is_string()) {
      r.seq = it->get<std::string>();
    } else if (it->is_number_integer()) {
      r.seq = it->dump();
    } else {
      return at.ErrorAtField("seq", "expected a sequence id (a string or an integer)");
    }
  }
  if (auto it = obj.find("batch"); it != obj.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX)) {
      return at.ErrorAtField("batch", fmt::format("expected an integer >= 1, got {}", Shown(*it)));
    }
    r.batch = it->get<int64_t>();
  }
  if (auto it = obj.find("error"); it != obj.end() && !it->is_null()) {
    if (!it->is_string()) return at.ErrorAtField("error", "expected null or a string describing the error");
    r.error = it->get<std::string>();
    if (r.error.empty()) r.error = "error";  // an empty message is still an error
  }
  return Status::Ok();
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

Expected<SpecRounds> ParseSpecRounds(std::string_view text, const std::string& display_name) {
  SpecRounds out;
  out.file = display_name;
  bool seen_content = false;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    const int64_t line_no = lines.line_no();
    if (IsBlank(line)) continue;
    const LineContext at(display_name, line_no, line);
    if (utf8::FindInvalid(line) != std::string_view::npos) {
      return at.ErrorAtOffset(utf8::FindInvalid(line), "", "the line is not valid UTF-8");
    }
    // Nesting is bounded before anything parses or walks the line (docs/limits.md).
    if (const size_t deep = FindJsonNestingBeyond(line); deep != std::string_view::npos) {
      return at.ErrorAtOffset(deep, "", JsonNestingMessage());
    }
    Json obj;
    try {
      obj = ParseJsonText(line);
    } catch (const Json::parse_error& e) {
      return at.ErrorAtOffset(e.byte > 0 ? e.byte - 1 : 0, "", SyntaxMessage(e.what()));
    }
    // nlohmann keeps the last of two equal keys; a round read with another `draft` than
    // the one its writer meant is refused instead.
    if (const std::optional<std::string> twice = FindDuplicateJsonKey(line)) {
      const std::string quoted = fmt::format("\"{}\"", *twice);
      const size_t first = line.find(quoted);
      const size_t second = first == std::string_view::npos ? first : line.find(quoted, first + 1);
      return at.ErrorAtOffset(second == std::string_view::npos ? 0 : second, *twice,
                              "the field is given twice in one object");
    }
    if (!obj.is_object()) return at.ErrorAtOffset(0, "", "expected a JSON object (one round per line)");
    if (obj.contains("identity")) {
      if (seen_content) return at.ErrorAtField("identity", "the identity line must be the first line");
      if (obj.size() != 1) return at.ErrorAtField("identity", "the identity line holds only `identity`");
      FP_ASSIGN_OR_RETURN(out.identity, IdentityFromJson(obj["identity"], fmt::format("{}:{}", display_name, line_no)));
      seen_content = true;
      continue;
    }
    seen_content = true;
    SpecRound r;
    r.line = line_no;
    FP_RETURN_IF_ERROR(ReadRound(obj, at, r));
    out.rounds.push_back(std::move(r));
  }
  if (out.rounds.empty()) {
    return InvalidInput(fmt::format("{}: no speculative rounds (expected one JSON object per line: "
                                    "{{\"draft\": [ids], \"target\": [ids], \"draft_ms\": 3.0, \"verify_ms\": 9.0}})",
                                    display_name));
  }
  return out;
}

Expected<SpecRounds> LoadSpecRounds(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseSpecRounds(text, path);
}

int64_t AcceptedTokens(const SpecRound& r) {
  size_t a = 0;
  while (a < r.draft.size() && a < r.target.size() && r.draft[a] == r.target[a]) ++a;
  return static_cast<int64_t>(a);
}

PositionAcceptance AcceptanceByPosition(const SpecRounds& rounds) {
  PositionAcceptance out;
  for (const SpecRound& r : rounds.rounds) out.max_draft = std::max(out.max_draft, static_cast<int64_t>(r.draft.size()));
  // reached[j] = rounds that accepted at least j tokens (j = 0..k_max); eligible[j - 1] =
  // rounds that accepted the j - 1 tokens before position j and drafted position j.
  std::vector<int64_t> reached(static_cast<size_t>(out.max_draft) + 1, 0);
  out.eligible.assign(static_cast<size_t>(out.max_draft), 0);
  for (const SpecRound& r : rounds.rounds) {
    const int64_t acc = AcceptedTokens(r);
    for (int64_t j = 0; j <= acc; ++j) ++reached[static_cast<size_t>(j)];
    const size_t tried = std::min(static_cast<size_t>(acc) + 1, r.draft.size());
    for (size_t j = 0; j < tried; ++j) ++out.eligible[j];
  }
  const auto ratio = [](int64_t n, int64_t d) { return d == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(d); };
  const int64_t n = static_cast<int64_t>(rounds.rounds.size());
  for (size_t j = 1; j <= static_cast<size_t>(out.max_draft); ++j) {
    out.conditional.push_back(ratio(reached[j], out.eligible[j - 1]));
    out.cumulative.push_back(ratio(reached[j], n));
  }
  return out;
}

}  // namespace fleetplan
