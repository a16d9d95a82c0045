// A strict YAML reader over yaml-cpp that knows where every value came from.
//
// Every YamlNode carries its dotted field path ("engine.scheduler.policy",
// "workload.classes.interactive.prompt[1].tokens") and its source mark, so any error it
// produces is located (core/error.h). Readers never silently coerce: a string where a
// number is expected, a float where an integer is expected, a negative size, an unknown
// key — each is an error naming the path, what was expected and what was found.
//
// Typical use:
//   FP_ASSIGN_OR_RETURN(auto doc, YamlDocument::LoadFile(path));
//   YamlNode root = doc.root();
//   FP_RETURN_IF_ERROR(root.CheckKeys({"version", "name", "model"}));
//   FP_ASSIGN_OR_RETURN(int64_t layers, root["model"].AsInt());  // missing -> error
//
// What loading rejects (each a located error): YAML syntax errors (from yaml-cpp's
// parser), text that is not UTF-8 or holds a NUL byte, more than one document, duplicate
// keys in a mapping, keys that are not scalars, explicit tags (`!!str`, `!custom`),
// recursive aliases, and documents that expand to more than kMaxYamlValues values through
// aliases. Anchors and aliases are otherwise allowed; an aliased value is located where it
// is written (at its anchor). An empty document is a null root.
//
// Paths: the root is ""; a map child is "<parent>.<key>" (just "<key>" under the root);
// a sequence element is "<parent>[<index>]" (0-based). Keys are used verbatim.
//
// Scalars: a plain scalar (`8`, `true`, `decode-first`) can be read as any type it
// spells. A quoted or block scalar (`"8"`, `'true'`, `|`) is a string: AsInt, AsDouble
// and AsBool reject it (saying to drop the quotes); AsString, AsDuration, AsBytes and
// AsRate accept both. Null is `~`, `null`, `Null`, `NULL` or nothing at all (`key:`).
//
// Thread model: a YamlDocument and its nodes are read-only after loading and may be read
// from several threads; nodes keep the document's shared state alive.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleetplan/core/error.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

// Most values a document may hold, counting each expansion of an alias: bounds the work
// a reader can be made to do by a few lines of nested aliases ("billion laughs").
inline constexpr int64_t kMaxYamlValues = 1'000'000;

namespace yaml_detail {
struct Value;  // one parsed value (src/core/yaml.cc)
struct State;  // the document: source text, lines, values
}  // namespace yaml_detail

class YamlNode;
struct YamlOverride;

class YamlDocument {
 public:
  // Syntax errors are located (file:line:col with caret). A missing file says
  // "cannot read '<path>': No such file or directory".
  // `path` "-" is standard input, named "<stdin>" in messages.
  static Expected<YamlDocument> LoadFile(const std::string& path);
  // The file to open for `path` ("/dev/stdin" for "-") and the name messages use for it.
  static std::string ReadablePath(const std::string& path);
  static std::string DisplayName(const std::string& path);
  // `display_name` is the file name used in locations (e.g. "scenario.yaml").
  static Expected<YamlDocument> LoadString(std::string_view text, std::string display_name);

  // A document equal to `base` but for `overrides`, applied in order: the value at each
  // path ("a.b", "a.b[2].c", the syntax of YamlNode::path) becomes the override's value,
  // which stays located where it is written in its own document — so an error about an
  // overridden value points at the override. A map key absent on the way is added (with
  // any absent map above it); an index must exist. Errors (InvalidInput, located at the
  // override's value): a malformed path, a key below a scalar or sequence, an index below
  // a map or out of range.
  static Expected<YamlDocument> WithOverrides(const YamlDocument& base, const std::vector<YamlOverride>& overrides);
  // A document of one plain scalar `text`, located where `at` is written: for values a
  // program derives from an input (the points of a range, a searched rate).
  static YamlDocument Scalar(std::string text, const YamlNode& at);

  YamlNode root() const;
  const std::string& display_name() const;

 private:
  explicit YamlDocument(std::shared_ptr<const yaml_detail::State> state) : state_(std::move(state)) {}
  std::shared_ptr<const yaml_detail::State> state_;
};

class YamlNode {
 public:
  // Path of this node ("" for the root; "a.b[2].c" below it).
  const std::string& path() const { return path_; }
  // Where the value is written; for an absent key, where its parent map is.
  SourceLocation location() const;

  bool present() const { return node_ != nullptr; }  // false for a key absent from its map
  bool IsNull() const;   // present and null (`key:` or `key: null`)
  bool IsMap() const;
  bool IsSequence() const;
  bool IsScalar() const;

  // Child of a map. Absent keys give a node with present() == false whose accessors fail
  // with "<parent path>: missing required field '<key>'" located at the parent map (the
  // first absent key of a chain: root["a"]["b"] with no "a" names 'a'). Below a present
  // value that is not a map (nor null), every accessor of the child fails with that
  // value's "expected a mapping, got ..." instead.
  YamlNode operator[](std::string_view key) const;
  // Elements of a sequence (error if not a sequence; null is not an empty sequence).
  Expected<std::vector<YamlNode>> Items() const;
  // (key, value) pairs of a map in document order (error if not a map).
  Expected<std::vector<std::pair<std::string, YamlNode>>> Entries() const;

  // Error if this is not a map, or if it has a key outside `allowed`; the message names
  // the first such key (in document order), located at the key, suggests the nearest
  // allowed one and lists the allowed keys:
  //   "<path>: unknown field 'polcy'; did you mean 'policy'? (valid: policy, ...)".
  // An absent or null node has no keys and passes (its fields' own reads still fail
  // when required).
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const;
  // Ok when present; otherwise the located "missing required field 'key'" error (at the
  // parent), for required sections that are read by a reader shared with other inputs.
  Status RequirePresent() const { return present() ? Status::Ok() : AbsentError(); }
  Status CheckKeys(const std::vector<std::string>& allowed) const;

  // Typed scalar reads. Each fails, located, on absence, wrong type or bad format.
  Expected<std::string> AsString() const;
  Expected<int64_t> AsInt() const;          // decimal integers only: "1.5", "1e3", "0x10",
                                            // "007" and out-of-int64 values are errors
  Expected<double> AsDouble() const;        // finite numbers only (".inf", ".nan" fail)
  Expected<bool> AsBool() const;            // true/false only (not yes/no/on/off)
  Expected<Duration> AsDuration() const;    // core/units_parse.h; negative is an error
  Expected<Duration> AsPositiveDuration() const;  // ParsePositiveDuration: 0 is an error too
  Expected<Bytes> AsBytes() const;
  Expected<Rate> AsRate() const;
  Expected<std::vector<std::string>> AsStringList() const;

  // Range-checked helpers: "expected an integer >= 1, got 0",
  // "expected a number between 0 and 1, got 1.5".
  Expected<int64_t> AsIntAtLeast(int64_t min) const;
  Expected<double> AsDoubleInRange(double min, double max) const;

  // Optional fields: the fallback when absent or null, else the typed read.
  Expected<std::string> StringOr(std::string fallback) const;
  Expected<int64_t> IntOr(int64_t fallback) const;
  Expected<double> DoubleOr(double fallback) const;
  Expected<bool> BoolOr(bool fallback) const;
  Expected<Duration> DurationOr(Duration fallback) const;

  // A located invalid-input Status about this node: "<path>: <message>" at the value (or,
  // when absent, at its parent map).
  Status Error(std::string_view message) const;

  // The value for messages: a scalar's text as is ("decode_frist"), "null", or a compact
  // flow form of a collection ("{a: 1, b: [x, y]}", cut after 80 characters with "...").
  // Empty for an absent node.
  std::string Text() const;

 private:
  friend class YamlDocument;
  friend struct YamlOverride;
  YamlNode(std::shared_ptr<const yaml_detail::State> doc, const yaml_detail::Value* node,
           std::string path);

  Status AbsentError() const;
  Status TypeError(std::string_view expected) const;
  Expected<const yaml_detail::Value*> Require() const;
  Expected<std::string_view> PlainScalar(std::string_view expected) const;
  bool UsesFallback() const;

  std::shared_ptr<const yaml_detail::State> doc_;
  const yaml_detail::Value* node_ = nullptr;  // null when absent
  std::string path_;
  // When absent: the nearest present ancestor, its path, and the first absent key below it.
  const yaml_detail::Value* parent_ = nullptr;
  std::string parent_path_;
  std::string missing_key_;
};

// One replacement of YamlDocument::WithOverrides.
struct YamlOverride {
  std::string path;
  YamlNode value;
};

}  // namespace fleetplan
