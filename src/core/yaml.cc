#include "fleetplan/core/yaml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "core/utf8.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan {
namespace yaml_detail {

// A key of a map, with where it is written (keys are located for "unknown field").
struct Entry {
  std::string key;
  int line = 0;         // 0-based, as yaml-cpp reports
  int byte_column = 0;  // 0-based byte offset in the line
  const Value* value = nullptr;
  const State* origin = nullptr;  // the document the key is written in; null: this one
};

// One parsed value. Immutable once the document is loaded; aliases share values.
struct Value {
  enum class Kind : uint8_t { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  bool quoted = false;  // scalar written quoted or as a block: always a string
  int line = 0;
  int byte_column = 0;
  std::string text;                 // kScalar
  std::vector<const Value*> items;  // kSequence
  std::vector<Entry> entries;       // kMap, in document order, keys unique
  int64_t weight = 1;               // values in the subtree, counting alias expansions
  const State* origin = nullptr;    // the document it is written in; null: this one
};

struct State {
  std::string display_name;
  std::string text;
  std::vector<std::size_t> line_starts;  // byte offset of each line
  std::deque<Value> values;              // stable addresses
  const Value* root = nullptr;
  // Documents whose values this one shares or grafts (WithOverrides): kept alive here.
  std::vector<std::shared_ptr<const State>> borrowed;

  std::string_view Line(int line) const {
    if (line < 0 || static_cast<std::size_t>(line) >= line_starts.size()) return {};
    const std::size_t begin = line_starts[static_cast<std::size_t>(line)];
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin && text[end - 1] == '\r') --end;
    return std::string_view(text).substr(begin, end - begin);
  }

  // 1-based line and character column for a 0-based line and byte column.
  SourceLocation Locate(int line, int byte_column) const {
    SourceLocation loc;
    loc.file = display_name;
    if (line < 0) return loc;
    loc.line = line + 1;
    const std::string_view l = Line(line);
    const std::size_t bytes = std::min(static_cast<std::size_t>(std::max(byte_column, 0)), l.size());
    loc.column = static_cast<int>(utf8::CountCodePoints(l.substr(0, bytes))) + 1;
    loc.source_line = std::string(l);
    return loc;
  }

  // 0-based (line, byte column) of a byte offset.
  std::pair<int, int> LineColumnOf(std::size_t pos) const {
    const auto it = std::upper_bound(line_starts.begin(), line_starts.end(), pos);
    const auto line = static_cast<std::size_t>(it - line_starts.begin()) - 1;
    return {static_cast<int>(line), static_cast<int>(pos - line_starts[line])};
  }
};

}  // namespace yaml_detail

namespace {

using yaml_detail::Entry;
using yaml_detail::State;
using yaml_detail::Value;
using Kind = yaml_detail::Value::Kind;

// Where a value or key is written: in its own origin document when it has one.
SourceLocation LocateValue(const State& doc, const Value& v) {
  return (v.origin != nullptr ? *v.origin : doc).Locate(v.line, v.byte_column);
}
SourceLocation LocateEntry(const State& doc, const Entry& e) {
  return (e.origin != nullptr ? *e.origin : doc).Locate(e.line, e.byte_column);
}

// Longest rendering Text() produces for a collection (characters).
constexpr std::size_t kMaxTextChars = 80;

std::string Got(const Value& v) {
  switch (v.kind) {
    case Kind::kNull: return "null";
    case Kind::kSequence: return "a sequence";
    case Kind::kMap: return "a mapping";
    case Kind::kScalar: break;
  }
  return QuoteValue(v.text);
}

// An empty key is shown as "" so the path still reads as a path ("workload.classes.\"\"").
std::string ChildPath(std::string_view parent, std::string_view key) {
  const std::string_view shown = key.empty() ? std::string_view("\"\"") : key;
  return parent.empty() ? std::string(shown) : fmt::format("{}.{}", parent, shown);
}

// Readable form of a tag as yaml-cpp resolves it ("tag:yaml.org,2002:str" -> "!!str").
std::string ShowTag(std::string_view tag) {
  constexpr std::string_view kCorePrefix = "tag:yaml.org,2002:";
  if (tag.substr(0, kCorePrefix.size()) == kCorePrefix) {
    return fmt::format("!!{}", tag.substr(kCorePrefix.size()));
  }
  return std::string(tag);
}

// Builds the value tree from yaml-cpp's parse events. The first error is kept and every
// later event ignored; the parser still runs to the end of the document.
class TreeBuilder final : public YAML::EventHandler {
 public:
  explicit TreeBuilder(State& state) : state_(state) {}

  const Status& status() const { return status_; }
  const Value* root() const { return root_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      Fail(mark.line, mark.column, "", "expected a single YAML document, found a second one");
    }
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!status_.ok()) return;
    const auto [line, column] = NullPosition(mark);
    Value& v = NewValue(Kind::kNull, line, column);
    Complete(v, anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!status_.ok()) return;
    // yaml-cpp rejects aliases to undefined anchors itself, so the anchor is known.
    FP_ASSERT(anchor < anchors_.size() && anchors_[anchor].value != nullptr);
    if (anchors_[anchor].open) {
      Fail(mark.line, mark.column, NextChildPath(),
           fmt::format("recursive alias {}: it refers to a value that contains it",
                       QuoteValue(AliasName(mark))));
      return;
    }
    expanded_ += anchors_[anchor].value->weight;
    if (!CheckExpansion(mark.line, mark.column)) return;
    AddChild(*anchors_[anchor].value);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!status_.ok() || !CheckTag(mark, tag)) return;
    if (tag == "!" && !CheckClosingQuote(mark)) return;
    Value& v = NewValue(Kind::kScalar, mark.line, mark.column);
    v.text = value;
    v.quoted = tag == "!";
    Complete(v, anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    if (!status_.ok() || !CheckTag(mark, tag)) return;
    Open(NewValue(Kind::kSequence, mark.line, mark.column), anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    if (!status_.ok() || !CheckTag(mark, tag)) return;
    Open(NewValue(Kind::kMap, mark.line, mark.column), anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    Value* value = nullptr;
    YAML::anchor_t anchor = 0;
    std::string path;
    const Value* pending_key = nullptr;  // maps: the key whose value comes next
    std::map<std::string, int, std::less<>> key_lines;  // maps: key -> 0-based line
  };
  struct Anchor {
    const Value* value = nullptr;
    bool open = false;  // a collection still being built: an alias to it is recursive
  };

  void Fail(int line, int byte_column, std::string_view path, std::string_view message) {
    if (!status_.ok()) return;
    status_ = LocatedError(state_.Locate(line, byte_column), path, message);
  }

  Value& NewValue(Kind kind, int line, int byte_column) {
    ++expanded_;
    Value& v = state_.values.emplace_back();
    v.kind = kind;
    v.line = line;
    v.byte_column = byte_column;
    return v;
  }

  bool CheckExpansion(int line, int byte_column) {
    if (expanded_ <= kMaxYamlValues) return true;
    Fail(line, byte_column, NextChildPath(),
         fmt::format("the document expands to more than {} values (aliases count once per "
                     "use); split it or use fewer aliases",
                     kMaxYamlValues));
    return false;
  }

  bool CheckTag(const YAML::Mark& mark, const std::string& tag) {
    // "?" is an untagged plain node, "!" an untagged quoted or block one.
    if (tag == "?" || tag == "!") return true;
    Fail(mark.line, mark.column, NextChildPath(),
         fmt::format("YAML tags are not supported, got {}; write the value without a tag",
                     QuoteValue(ShowTag(tag))));
    return false;
  }

  // yaml-cpp reads a quoted scalar whose closing quote never comes up to the end of the
  // file (a quoted scalar may span lines), which would swallow every later key. A quote
  // must close somewhere after it opens.
  bool CheckClosingQuote(const YAML::Mark& mark) {
    const std::string_view text = state_.text;
    const auto pos = static_cast<std::size_t>(std::max(mark.pos, 0));
    if (pos >= text.size() || (text[pos] != '"' && text[pos] != '\'')) return true;
    const char quote = text[pos];
    for (std::size_t i = pos + 1; i < text.size(); ++i) {
      if (quote == '"' && text[i] == '\\') {
        ++i;  // an escape: the next character is not a closing quote
      } else if (text[i] == quote) {
        if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;  // '' is a quote inside a single-quoted scalar
        } else {
          return true;
        }
      }
    }
    Fail(mark.line, mark.column, NextChildPath(),
         fmt::format("invalid YAML: unterminated quoted string: the {} here is never closed", quote));
    return false;
  }

  void RegisterAnchor(YAML::anchor_t anchor, const Value& v, bool open) {
    if (anchor == 0) return;
    if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
    anchors_[anchor] = Anchor{&v, open};
  }

  void Complete(const Value& v, YAML::anchor_t anchor) {
    if (!CheckExpansion(v.line, v.byte_column)) return;
    RegisterAnchor(anchor, v, false);
    AddChild(v);
  }

  void Open(Value& v, YAML::anchor_t anchor) {
    if (!CheckExpansion(v.line, v.byte_column)) return;
    // Our own limit, far below yaml-cpp's (about 500, where the stack is the limit).
    if (stack_.size() >= static_cast<std::size_t>(kMaxNestingDepth)) {
      Fail(v.line, v.byte_column, NextChildPath(),
           fmt::format("collections nested more than {} deep (fleetplan's limit; no input of ours "
                       "needs more than a few levels)",
                       kMaxNestingDepth));
      return;
    }
    RegisterAnchor(anchor, v, true);
    stack_.push_back(Frame{&v, anchor, NextChildPath(), nullptr, {}});
  }

  void Close() {
    if (!status_.ok()) return;
    FP_ASSERT(!stack_.empty());
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (frame.anchor != 0) anchors_[frame.anchor].open = false;
    AddChild(*frame.value);
  }

  // Path of the value the parser will deliver next (for errors about it).
  std::string NextChildPath() const {
    if (stack_.empty()) return "";
    const Frame& top = stack_.back();
    if (top.value->kind == Kind::kSequence) {
      return fmt::format("{}[{}]", top.path, top.value->items.size());
    }
    if (top.pending_key == nullptr || top.pending_key->kind != Kind::kScalar) return top.path;
    return ChildPath(top.path, top.pending_key->text);
  }

  void AddChild(const Value& child) {
    if (!status_.ok()) return;
    if (stack_.empty()) {
      root_ = &child;
      return;
    }
    Frame& top = stack_.back();
    top.value->weight += child.weight;
    if (top.value->kind == Kind::kSequence) {
      top.value->items.push_back(&child);
    } else if (top.pending_key == nullptr) {
      AddKey(top, child);
    } else {
      const Value& key = *top.pending_key;
      top.value->entries.push_back(Entry{key.text, key.line, key.byte_column, &child});
      top.pending_key = nullptr;
    }
  }

  void AddKey(Frame& top, const Value& key) {
    if (key.kind != Kind::kScalar) {
      Fail(key.line, key.byte_column, top.path,
           fmt::format("expected a field name, got {} as a key", Got(key)));
      return;
    }
    if (key.text == "<<" && !key.quoted) {
      Fail(key.line, key.byte_column, top.path,
           "YAML merge keys ('<<') are not supported; write the fields out (an alias of a whole "
           "value, `key: *name`, works)");
      return;
    }
    const auto [it, inserted] = top.key_lines.emplace(key.text, key.line);
    if (!inserted) {
      Fail(key.line, key.byte_column, top.path,
           fmt::format("duplicate field {} (first given on line {})", QuoteValue(key.text),
                       it->second + 1));
      return;
    }
    top.pending_key = &key;
  }

  // yaml-cpp marks an empty value ("key:" or "- ") at the next token, which may be lines
  // below. Explicit nulls keep their mark; an empty map value is placed at its key, an
  // empty sequence element at its "-".
  std::pair<int, int> NullPosition(const YAML::Mark& mark) const {
    const std::string_view text = state_.text;
    const auto pos = static_cast<std::size_t>(std::max(mark.pos, 0));
    const std::string_view at = pos < text.size() ? text.substr(pos) : std::string_view();
    for (std::string_view literal : {"~", "null", "Null", "NULL"}) {
      if (at.substr(0, literal.size()) != literal) continue;
      const std::string_view after = at.substr(literal.size(), 1);
      if (after.empty() || after.find_first_of(" \t\r\n,]}#") == 0) return {mark.line, mark.column};
    }
    if (stack_.empty()) return {mark.line, mark.column};
    const Frame& top = stack_.back();
    if (top.pending_key != nullptr) return {top.pending_key->line, top.pending_key->byte_column};
    if (top.value->kind == Kind::kSequence) {
      std::size_t i = std::min(pos, text.size());
      while (i > 0 && std::string_view(" \t\r\n").find(text[i - 1]) != std::string_view::npos) --i;
      if (i > 0 && text[i - 1] == '-') return state_.LineColumnOf(i - 1);
      return {top.value->line, top.value->byte_column};
    }
    return {mark.line, mark.column};
  }

  // "*name" as written at an alias mark.
  std::string AliasName(const YAML::Mark& mark) const {
    const std::string_view text = std::string_view(state_.text).substr(
        std::min(static_cast<std::size_t>(std::max(mark.pos, 0)), state_.text.size()));
    const std::size_t end = text.find_first_of(" \t\r\n,[]{}", 1);
    return std::string(text.substr(0, end));
  }

  State& state_;
  Status status_;
  const Value* root_ = nullptr;
  int documents_ = 0;
  int64_t expanded_ = 0;  // values so far, counting each alias use at its full size
  std::vector<Frame> stack_;
  std::vector<Anchor> anchors_;  // indexed by yaml-cpp's anchor id (1, 2, ...)
};

// Rejects text yaml-cpp would misread: NUL bytes (UTF-16/32 detection) and bytes that
// are not UTF-8 (they would otherwise reach JSON output).
Status CheckEncoding(const State& state) {
  const std::size_t nul = state.text.find('\0');
  const std::size_t invalid = utf8::FindInvalid(state.text);
  const std::size_t pos = std::min(nul, invalid);
  if (pos == std::string::npos) return Status::Ok();
  const auto [line, column] = state.LineColumnOf(pos);
  SourceLocation loc = state.Locate(line, column);
  // Keep the message itself valid UTF-8 and printable.
  for (char& c : loc.source_line) {
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\0') c = '?';
  }
  const std::string message =
      pos == nul ? std::string("expected UTF-8 text, found a NUL byte (is the file UTF-16?)")
                 : fmt::format("expected UTF-8 text, found the byte 0x{:02x}",
                               static_cast<unsigned char>(state.text[pos]));
  return LocatedError(loc, "", message);
}

std::vector<std::size_t> LineStarts(std::string_view text) {
  std::vector<std::size_t> starts = {0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts.push_back(i + 1);
  }
  return starts;
}

// Rejects a line longer than kMaxYamlLineBytes before yaml-cpp sees it (a megabyte-long
// flow collection on one line takes yaml-cpp seconds and hundreds of MB).
Status CheckLineLengths(const State& state) {
  for (std::size_t i = 0; i < state.line_starts.size(); ++i) {
    const std::size_t end = i + 1 < state.line_starts.size() ? state.line_starts[i + 1] : state.text.size();
    if (end - state.line_starts[i] <= kMaxYamlLineBytes) continue;
    SourceLocation loc{state.display_name, static_cast<int>(i) + 1, 0, ""};
    return LocatedError(loc, "",
                        fmt::format("line {} has {} bytes; fleetplan reads YAML lines of at most {} KiB (break "
                                    "long flow collections into block style)",
                                    i + 1, end - state.line_starts[i], kMaxYamlLineBytes >> 10));
  }
  return Status::Ok();
}

// 0-based (line, byte column) of the first tab among the leading blanks of a line with
// content, on lines 0..last_line; nullopt when there is none.
std::optional<std::pair<int, int>> FirstIndentTab(const State& state, int last_line) {
  for (int line = 0; line <= last_line && static_cast<std::size_t>(line) < state.line_starts.size(); ++line) {
    const std::string_view l = state.Line(line);
    const std::size_t content = l.find_first_not_of(" \t");
    if (content == std::string_view::npos || l[content] == '#') continue;
    const std::size_t tab = l.substr(0, content).find('\t');
    if (tab != std::string_view::npos) return std::pair<int, int>{line, static_cast<int>(tab)};
  }
  return std::nullopt;
}

Status Parse(State& state) {
  TreeBuilder builder(state);
  std::istringstream in(state.text);
  try {
    YAML::Parser parser(in);
    if (parser.HandleNextDocument(builder) && builder.status().ok()) {
      parser.HandleNextDocument(builder);  // a second document is an error
    }
  } catch (const YAML::DeepRecursion& e) {
    if (!builder.status().ok()) return builder.status();  // our own depth limit came first
    // yaml-cpp 0.7 gives this one the message "bad file"; say what happened instead.
    return LocatedError(state.Locate(e.mark.line, e.mark.column), "",
                        "invalid YAML: collections nested too deeply (yaml-cpp's limit is "
                        "about 500 levels)");
  } catch (const YAML::Exception& e) {
    // A tab in the indentation at or above the error is its likely cause; yaml-cpp's own
    // message ("illegal map value", ...) never says so.
    const int last_line = e.mark.is_null() ? static_cast<int>(state.line_starts.size()) - 1 : e.mark.line;
    if (const std::optional<std::pair<int, int>> tab = FirstIndentTab(state, last_line)) {
      return LocatedError(state.Locate(tab->first, tab->second), "",
                          "invalid YAML: a tab in the indentation; YAML indents with spaces only");
    }
    SourceLocation loc;
    if (!e.mark.is_null()) loc = state.Locate(e.mark.line, e.mark.column);
    loc.file = state.display_name;
    return LocatedError(loc, "", fmt::format("invalid YAML: {}", e.msg));
  }
  FP_RETURN_IF_ERROR(builder.status());
  state.root = builder.root();
  if (state.root == nullptr) {  // no document at all: an empty (null) root
    state.root = &state.values.emplace_back();
  }
  return Status::Ok();
}

// Decimal integer text: optional sign, digits, no leading zeros.
enum class IntParse { kOk, kNotInteger, kLeadingZero, kOutOfRange };

IntParse ParseDecimalInt(std::string_view s, int64_t& out) {
  std::string_view digits = s;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits.remove_prefix(1);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return IntParse::kNotInteger;
  }
  if (digits.size() > 1 && digits.front() == '0') return IntParse::kLeadingZero;
  // from_chars takes "-digits" but not "+digits".
  const std::string_view number = s.front() == '+' ? digits : s;
  const auto result = std::from_chars(number.data(), number.data() + number.size(), out);
  return result.ec == std::errc() ? IntParse::kOk : IntParse::kOutOfRange;
}

bool ParseFiniteDouble(std::string_view s, double& out) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '-') return false;  // "+-5"
  }
  if (s.empty()) return false;
  const auto result = std::from_chars(s.data(), s.data() + s.size(), out);
  return result.ec == std::errc() && result.ptr == s.data() + s.size() && std::isfinite(out);
}

void Render(const Value& v, std::string& out) {
  if (out.size() > kMaxTextChars) return;
  switch (v.kind) {
    case Kind::kNull: out += "null"; return;
    case Kind::kScalar: out += v.text; return;
    case Kind::kSequence:
      out += "[";
      for (std::size_t i = 0; i < v.items.size() && out.size() <= kMaxTextChars; ++i) {
        if (i > 0) out += ", ";
        Render(*v.items[i], out);
      }
      out += "]";
      return;
    case Kind::kMap:
      out += "{";
      for (std::size_t i = 0; i < v.entries.size() && out.size() <= kMaxTextChars; ++i) {
        if (i > 0) out += ", ";
        out += v.entries[i].key + ": ";
        Render(*v.entries[i].value, out);
      }
      out += "}";
      return;
  }
}

}  // namespace

// ---- YamlDocument ----------------------------------------------------------------------

std::string YamlDocument::ReadablePath(const std::string& path) { return path == "-" ? "/dev/stdin" : path; }

std::string YamlDocument::DisplayName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

Expected<YamlDocument> YamlDocument::LoadFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(ReadablePath(path)));
  return LoadString(text, DisplayName(path));
}

Expected<YamlDocument> YamlDocument::LoadString(std::string_view text, std::string display_name) {
  constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";  // yaml-cpp skips it too
  if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) text.remove_prefix(kUtf8Bom.size());
  if (text.size() > kMaxYamlFileBytes) {
    return LocatedError(SourceLocation{display_name, 0, 0, ""}, "",
                        fmt::format("the file has {} bytes; fleetplan reads YAML files of at most {} MiB",
                                    text.size(), kMaxYamlFileBytes >> 20));
  }
  auto state = std::make_shared<State>();
  state->display_name = std::move(display_name);
  state->text = std::string(text);
  state->line_starts = LineStarts(state->text);
  FP_RETURN_IF_ERROR(CheckLineLengths(*state));
  FP_RETURN_IF_ERROR(CheckEncoding(*state));
  FP_RETURN_IF_ERROR(Parse(*state));
  return YamlDocument(std::move(state));
}

namespace {

// One step of an override path: a map key, or a sequence index.
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};

// "a.b[2].c" -> a, b, [2], c. Empty keys, stray brackets and non-numeric indexes fail.
std::optional<std::vector<PathStep>> ParseOverridePath(std::string_view path) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i < path.size()) {
    const std::size_t end = path.find_first_of(".[", i);
    const std::string_view key = path.substr(i, end == std::string_view::npos ? path.npos : end - i);
    if (key.empty()) return std::nullopt;
    steps.push_back(PathStep{std::string(key), std::nullopt});
    i = end == std::string_view::npos ? path.size() : end;
    while (i < path.size() && path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos || close == i + 1) return std::nullopt;
      std::size_t index = 0;
      const auto r = std::from_chars(path.data() + i + 1, path.data() + close, index);
      if (r.ec != std::errc() || r.ptr != path.data() + close) return std::nullopt;
      steps.push_back(PathStep{"", index});
      i = close + 1;
    }
    if (i < path.size()) {
      if (path[i] != '.' || i + 1 == path.size()) return std::nullopt;
      ++i;
    }
  }
  if (steps.empty()) return std::nullopt;
  return steps;
}

// Copies `v` into `into`, every value and key marked as written in `origin`.
const Value* Graft(const Value& v, const State* origin, State& into) {
  Value& copy = into.values.emplace_back(v);
  if (copy.origin == nullptr) copy.origin = origin;
  for (auto& item : copy.items) item = Graft(*item, origin, into);
  for (auto& e : copy.entries) {
    if (e.origin == nullptr) e.origin = origin;
    e.value = Graft(*e.value, origin, into);
  }
  return &copy;
}

int64_t WeightOf(const Value& v) {
  int64_t w = 1;
  for (const Value* item : v.items) w += item->weight;
  for (const Entry& e : v.entries) w += e.value->weight;
  return w;
}

}  // namespace

Expected<YamlDocument> YamlDocument::WithOverrides(const YamlDocument& base, const std::vector<YamlOverride>& overrides) {
  auto state = std::make_shared<State>();
  state->display_name = base.state_->display_name;
  state->text = base.state_->text;
  state->line_starts = base.state_->line_starts;
  state->borrowed.push_back(base.state_);
  state->root = base.state_->root;
  for (const YamlOverride& o : overrides) {
    const YamlNode& value = o.value;
    if (value.node_ == nullptr) return value.Error(fmt::format("no value to set at '{}'", o.path));
    const std::optional<std::vector<PathStep>> steps = ParseOverridePath(o.path);
    if (!steps) {
      return value.Error(fmt::format("'{}' is not a key path (expected keys joined by '.', with [index] for "
                                     "sequence elements, e.g. deployment.pools[0].replicas)",
                                     o.path));
    }
    state->borrowed.push_back(value.doc_);
    const Value* graft = Graft(*value.node_, value.doc_.get(), *state);
    // Rebuild the spine from the leaf up: each level is a copy of the old one with one
    // child replaced (or added), so values outside the path stay shared.
    std::vector<const Value*> spine;  // spine[i]: the value holding step i (null: absent)
    const Value* at = state->root;
    std::string walked;
    for (const PathStep& step : *steps) {
      spine.push_back(at);
      const std::string here = walked.empty() ? "the document root" : "'" + walked + "'";
      if (step.index) {
        if (at == nullptr || at->kind != Kind::kSequence) {
          return value.Error(fmt::format("cannot set '{}': {} is not a sequence", o.path, here));
        }
        if (*step.index >= at->items.size()) {
          return value.Error(fmt::format("cannot set '{}': {} has {} elements", o.path, here, at->items.size()));
        }
        at = at->items[*step.index];
        walked += fmt::format("[{}]", *step.index);
        continue;
      }
      if (at != nullptr && at->kind != Kind::kMap && at->kind != Kind::kNull) {
        return value.Error(fmt::format("cannot set '{}': {} is {}, not a mapping", o.path, here, Got(*at)));
      }
      const Value* next = nullptr;
      if (at != nullptr) {
        for (const Entry& e : at->entries) {
          if (e.key == step.key) next = e.value;
        }
      }
      at = next;
      walked = walked.empty() ? step.key : walked + "." + step.key;
    }
    const Value* child = graft;
    for (std::size_t i = steps->size(); i-- > 0;) {
      const PathStep& step = (*steps)[i];
      Value& level = state->values.emplace_back();
      if (spine[i] != nullptr && spine[i]->kind != Kind::kNull) {
        level = *spine[i];
      } else {  // an absent (or null) map on the way: added, located at the override
        level.kind = Kind::kMap;
        level.line = value.node_->line;
        level.byte_column = value.node_->byte_column;
        level.origin = graft->origin;
      }
      if (step.index) {
        level.items[*step.index] = child;
      } else {
        auto it = std::find_if(level.entries.begin(), level.entries.end(),
                               [&](const Entry& e) { return e.key == step.key; });
        if (it != level.entries.end()) {
          it->value = child;
        } else {
          level.entries.push_back(Entry{step.key, graft->line, graft->byte_column, child, graft->origin});
        }
      }
      level.weight = WeightOf(level);
      child = &level;
    }
    state->root = child;
    if (state->root->weight > kMaxYamlValues) {
      return value.Error(fmt::format("the document would hold more than {} values", kMaxYamlValues));
    }
  }
  return YamlDocument(std::move(state));
}

YamlDocument YamlDocument::Scalar(std::string text, const YamlNode& at) {
  auto state = std::make_shared<State>();
  state->display_name = at.doc_->display_name;
  Value& v = state->values.emplace_back();
  v.kind = Kind::kScalar;
  v.text = std::move(text);
  const Value* where = at.node_ != nullptr ? at.node_ : at.parent_;
  if (where != nullptr) {
    v.line = where->line;
    v.byte_column = where->byte_column;
    v.origin = where->origin != nullptr ? where->origin : at.doc_.get();
  }
  state->borrowed.push_back(at.doc_);
  state->root = &v;
  return YamlDocument(std::move(state));
}

YamlNode YamlDocument::root() const { return YamlNode(state_, state_->root, ""); }

const std::string& YamlDocument::display_name() const { return state_->display_name; }

// ---- YamlNode: structure -----------------------------------------------------------------

YamlNode::YamlNode(std::shared_ptr<const State> doc, const Value* node, std::string path)
    : doc_(std::move(doc)), node_(node), path_(std::move(path)) {}

SourceLocation YamlNode::location() const {
  const Value* v = node_ != nullptr ? node_ : parent_;
  if (v == nullptr) return SourceLocation{doc_->display_name, 0, 0, ""};
  return LocateValue(*doc_, *v);
}

bool YamlNode::IsNull() const { return node_ != nullptr && node_->kind == Kind::kNull; }
bool YamlNode::IsMap() const { return node_ != nullptr && node_->kind == Kind::kMap; }
bool YamlNode::IsSequence() const { return node_ != nullptr && node_->kind == Kind::kSequence; }
bool YamlNode::IsScalar() const { return node_ != nullptr && node_->kind == Kind::kScalar; }

YamlNode YamlNode::operator[](std::string_view key) const {
  std::string child_path = ChildPath(path_, key);
  if (node_ == nullptr) {  // below an absent key: keep reporting the first absent one
    YamlNode child = *this;
    child.path_ = std::move(child_path);
    return child;
  }
  if (node_->kind == Kind::kMap) {
    for (const Entry& e : node_->entries) {
      if (e.key == key) return YamlNode(doc_, e.value, std::move(child_path));
    }
  }
  YamlNode child(doc_, nullptr, std::move(child_path));
  child.parent_ = node_;
  child.parent_path_ = path_;
  child.missing_key_ = std::string(key);
  return child;
}

Status YamlNode::AbsentError() const {
  const SourceLocation where = LocateValue(*doc_, *parent_);
  if (parent_->kind != Kind::kMap && parent_->kind != Kind::kNull) {
    return LocatedError(where, parent_path_, fmt::format("expected a mapping, got {}", Got(*parent_)));
  }
  if (parent_ == doc_->root && parent_->kind == Kind::kNull && parent_->origin == nullptr) {
    const bool blank = doc_->text.find_first_not_of(" \t\r\n") == std::string::npos;
    return LocatedError(where, "",
                        fmt::format("the file is {}: missing required field {}",
                                    blank ? "empty" : "only comments (no YAML value)", QuoteValue(missing_key_)));
  }
  return LocatedError(where, parent_path_,
                      fmt::format("missing required field {}", QuoteValue(missing_key_)));
}

Status YamlNode::TypeError(std::string_view expected) const {
  return Error(fmt::format("expected {}, got {}", expected, Got(*node_)));
}

Expected<const Value*> YamlNode::Require() const {
  if (node_ == nullptr) return AbsentError();
  return node_;
}

// The text of a plain scalar; a quoted one is a string, so it is refused with a hint.
Expected<std::string_view> YamlNode::PlainScalar(std::string_view expected) const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  if (v->kind != Kind::kScalar) return TypeError(expected);
  if (v->quoted) {
    return Error(fmt::format("expected {}, got the quoted string {}; write it without quotes",
                             expected, QuoteValue(v->text)));
  }
  return std::string_view(v->text);
}

bool YamlNode::UsesFallback() const {
  if (node_ != nullptr) return node_->kind == Kind::kNull;
  return parent_ == nullptr || parent_->kind == Kind::kMap || parent_->kind == Kind::kNull;
}

Expected<std::vector<YamlNode>> YamlNode::Items() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  if (v->kind != Kind::kSequence) return TypeError("a sequence");
  std::vector<YamlNode> items;
  items.reserve(v->items.size());
  for (std::size_t i = 0; i < v->items.size(); ++i) {
    items.push_back(YamlNode(doc_, v->items[i], fmt::format("{}[{}]", path_, i)));
  }
  return items;
}

Expected<std::vector<std::pair<std::string, YamlNode>>> YamlNode::Entries() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  if (v->kind != Kind::kMap) return TypeError("a mapping");
  std::vector<std::pair<std::string, YamlNode>> entries;
  entries.reserve(v->entries.size());
  for (const Entry& e : v->entries) {
    entries.emplace_back(e.key, YamlNode(doc_, e.value, ChildPath(path_, e.key)));
  }
  return entries;
}

Status YamlNode::CheckKeys(std::initializer_list<std::string_view> allowed) const {
  return CheckKeys(std::vector<std::string>(allowed.begin(), allowed.end()));
}

Status YamlNode::CheckKeys(const std::vector<std::string>& allowed) const {
  if (node_ == nullptr) return UsesFallback() ? Status::Ok() : AbsentError();
  if (node_->kind == Kind::kNull) return Status::Ok();
  if (node_->kind != Kind::kMap) return TypeError("a mapping");
  for (const Entry& e : node_->entries) {
    if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
    return LocatedError(LocateEntry(*doc_, e), path_,
                        UnknownNameMessage("field", e.key, allowed));
  }
  return Status::Ok();
}

// ---- YamlNode: typed reads ---------------------------------------------------------------

Expected<std::string> YamlNode::AsString() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  if (v->kind != Kind::kScalar) return TypeError("a string");
  return v->text;
}

Expected<int64_t> YamlNode::AsInt() const {
  constexpr std::string_view kExpected = "an integer";
  FP_ASSIGN_OR_RETURN(const std::string_view text, PlainScalar(kExpected));
  int64_t value = 0;
  switch (ParseDecimalInt(text, value)) {
    case IntParse::kOk: return value;
    case IntParse::kNotInteger: return TypeError(kExpected);
    case IntParse::kLeadingZero:
      return Error(fmt::format("expected an integer without leading zeros, got {}", QuoteValue(text)));
    case IntParse::kOutOfRange: break;
  }
  return Error(fmt::format("expected an integer between {} and {}, got {}",
                           std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max(), QuoteValue(text)));
}

Expected<int64_t> YamlNode::AsIntAtLeast(int64_t min) const {
  const std::string expected = fmt::format("an integer >= {}", min);
  FP_ASSIGN_OR_RETURN(const std::string_view text, PlainScalar(expected));
  int64_t value = 0;
  const IntParse parsed = ParseDecimalInt(text, value);
  if (parsed == IntParse::kNotInteger) return TypeError(expected);
  if (parsed == IntParse::kOutOfRange) {
    // Past int64: name the range this field takes, not the signed one of AsInt.
    return Error(fmt::format("expected an integer from {} to {}, got {}", min, std::numeric_limits<int64_t>::max(),
                             QuoteValue(text)));
  }
  FP_ASSIGN_OR_RETURN(value, AsInt());
  if (value < min) return Error(fmt::format("expected {}, got {}", expected, value));
  return value;
}

Expected<double> YamlNode::AsDouble() const {
  constexpr std::string_view kExpected = "a finite number";
  FP_ASSIGN_OR_RETURN(const std::string_view text, PlainScalar(kExpected));
  double value = 0.0;
  if (!ParseFiniteDouble(text, value)) return TypeError(kExpected);
  return value;
}

Expected<double> YamlNode::AsDoubleInRange(double min, double max) const {
  const std::string expected = fmt::format("a number between {} and {}", min, max);
  FP_ASSIGN_OR_RETURN(const std::string_view text, PlainScalar(expected));
  double value = 0.0;
  if (!ParseFiniteDouble(text, value)) return TypeError(expected);
  if (value < min || value > max) return Error(fmt::format("expected {}, got {}", expected, text));
  return value;
}

Expected<bool> YamlNode::AsBool() const {
  constexpr std::string_view kExpected = "true or false";
  FP_ASSIGN_OR_RETURN(const std::string_view text, PlainScalar(kExpected));
  if (text == "true") return true;
  if (text == "false") return false;
  return TypeError(kExpected);
}

namespace {

// A unit-carrying scalar read through core/units_parse.h, its message located here.
template <typename T>
Expected<T> ReadWithUnit(const YamlNode& node, const Value* v, std::string_view expected,
                         Expected<T> (*parse)(std::string_view)) {
  if (v->kind != Kind::kScalar) return node.Error(fmt::format("expected {}, got {}", expected, Got(*v)));
  Expected<T> parsed = parse(v->text);
  if (!parsed.ok()) return node.Error(parsed.status().message());
  return parsed;
}

}  // namespace

Expected<Duration> YamlNode::AsDuration() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  return ReadWithUnit<Duration>(*this, v, kExpectedDuration, &ParseDuration);
}

Expected<Duration> YamlNode::AsPositiveDuration() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  return ReadWithUnit<Duration>(*this, v, kExpectedDuration, &ParsePositiveDuration);
}

Expected<Bytes> YamlNode::AsBytes() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  return ReadWithUnit<Bytes>(*this, v, kExpectedBytes, &ParseBytes);
}

Expected<Rate> YamlNode::AsRate() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  return ReadWithUnit<Rate>(*this, v, kExpectedRate, &ParseRate);
}

Expected<std::vector<std::string>> YamlNode::AsStringList() const {
  FP_ASSIGN_OR_RETURN(const Value* v, Require());
  if (v->kind != Kind::kSequence) return TypeError("a sequence of strings");
  FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, Items());
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(std::string s, item.AsString());
    out.push_back(std::move(s));
  }
  return out;
}

Expected<std::string> YamlNode::StringOr(std::string fallback) const {
  if (UsesFallback()) return fallback;
  return AsString();
}
Expected<int64_t> YamlNode::IntOr(int64_t fallback) const {
  if (UsesFallback()) return fallback;
  return AsInt();
}
Expected<double> YamlNode::DoubleOr(double fallback) const {
  if (UsesFallback()) return fallback;
  return AsDouble();
}
Expected<bool> YamlNode::BoolOr(bool fallback) const {
  if (UsesFallback()) return fallback;
  return AsBool();
}
Expected<Duration> YamlNode::DurationOr(Duration fallback) const {
  if (UsesFallback()) return fallback;
  return AsDuration();
}

Status YamlNode::Error(std::string_view message) const {
  return LocatedError(location(), path_, message);
}

std::string YamlNode::Text() const {
  if (node_ == nullptr) return "";
  if (node_->kind == Kind::kScalar) return node_->text;
  std::string out;
  Render(*node_, out);
  if (out.size() > kMaxTextChars) {
    std::size_t cut = kMaxTextChars;
    while (cut > 0 && utf8::IsContinuation(out[cut])) --cut;  // keep whole characters
    out = out.substr(0, cut) + "...";
  }
  return out;
}

}  // namespace fleetplan
