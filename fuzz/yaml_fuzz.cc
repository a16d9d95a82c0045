// libFuzzer target: YamlDocument::LoadString on arbitrary bytes, then every reader on
// every value reached. Checks that nothing crashes, that every failure is an
// invalid-input Status (never an assertion), and that messages are non-empty UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "fleetplan/core/yaml.h"
#include "fuzz_check.h"

namespace fleetplan {
namespace {

// Bounds the walk: aliases can make a small document a large tree. Each value visited
// runs about 14 readers (47 for the first value of each kind, which also runs the *Or
// readers and reads through absent keys), most of them failing with a formatted error
// whose snippet walks the value's source line. At 2,000 values a 4 KB block sequence
// took 1.7 s under ASan and a 4 KB one-line flow sequence 52 s, past the 1 s a run allows
// an input; at 64 values the flow sequence takes 0.3 s. 64 values still take every
// reader over every kind of value (scalar, sequence, mapping, alias, nested to any depth)
// an input can hold.
constexpr int kMaxDepth = 32;
constexpr int kMaxVisits = 64;

void Require(bool ok, const char* what, std::string_view detail) {
  fuzz::Require(ok, "yaml_fuzz", what, detail);
}

void CheckStatus(const Status& s) { fuzz::CheckFailure(s, "yaml_fuzz"); }

template <typename T>
void Check(const Expected<T>& e) {
  fuzz::CheckFailure(e, "yaml_fuzz");
}

// Bit per kind of value (scalar, sequence, mapping, null or absent).
unsigned KindBit(const YamlNode& node) {
  return node.IsScalar() ? 1U : node.IsSequence() ? 2U : node.IsMap() ? 4U : 8U;
}

// What one input's walk has done so far. A read below an absent key fails the same way
// for every parent of one kind, so the walk reads through absent keys once per kind of
// parent: repeating them on every value made up two thirds of the readers run and failed
// with the same located error each time. The *Or readers are the typed reads by contract
// on a present value that is not null (the fallback is for absent and null ones), so on
// those they run once per kind too, and on every absent or null value.
struct WalkState {
  int visits = 0;
  unsigned absent_read_kinds = 0;    // bit per parent kind whose absent keys were read
  unsigned fallback_read_kinds = 0;  // bit per present kind the *Or readers ran on

  bool FirstAbsentReadBelow(const YamlNode& parent) { return First(absent_read_kinds, KindBit(parent)); }
  bool ReadsFallbacksOf(const YamlNode& node) {
    return !node.present() || node.IsNull() || First(fallback_read_kinds, KindBit(node));
  }

 private:
  static bool First(unsigned& seen, unsigned kind) {
    const bool first = (seen & kind) == 0;
    seen |= kind;
    return first;
  }
};

void ReadScalar(const YamlNode& node, WalkState& state) {
  Check(node.AsString());
  Check(node.AsInt());
  Check(node.AsDouble());
  Check(node.AsBool());
  Check(node.AsDuration());
  Check(node.AsBytes());
  Check(node.AsRate());
  Check(node.AsIntAtLeast(1));
  Check(node.AsDoubleInRange(0.0, 1.0));
  if (!state.ReadsFallbacksOf(node)) return;
  Check(node.StringOr("x"));
  Check(node.IntOr(1));
  Check(node.DoubleOr(1.0));
  Check(node.BoolOr(true));
  Check(node.DurationOr(Duration()));
}

void Walk(const YamlNode& node, int depth, WalkState& state) {
  if (depth > kMaxDepth || ++state.visits > kMaxVisits) return;
  const SourceLocation where = node.location();
  Require(where.line >= 1 && where.column >= 1, "value without a location", node.path());
  Require(utf8::FindInvalid(node.Text()) == std::string_view::npos || node.IsScalar(),
          "Text() of a collection is not UTF-8", node.Text());
  CheckStatus(node.Error("fuzz"));
  ReadScalar(node, state);
  Check(node.AsStringList());
  CheckStatus(node.CheckKeys({"a", "b", "version", "name"}));
  const YamlNode a = node["a"];
  if (a.present() || state.FirstAbsentReadBelow(node)) {
    ReadScalar(a, state);
    ReadScalar(node["missing"]["deeper"], state);
  }
  const Expected<std::vector<YamlNode>> items = node.Items();
  Check(items);
  if (items.ok()) {
    for (const YamlNode& item : *items) Walk(item, depth + 1, state);
  }
  const auto entries = node.Entries();
  Check(entries);
  if (entries.ok()) {
    for (const auto& [key, child] : *entries) Walk(child, depth + 1, state);
  }
}

}  // namespace
}  // namespace fleetplan

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetplan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Expected<YamlDocument> doc = YamlDocument::LoadString(text, "fuzz.yaml");
  if (!doc.ok()) {
    CheckStatus(doc.status());
    return 0;
  }
  WalkState state;
  Walk(doc->root(), 0, state);
  return 0;
}
