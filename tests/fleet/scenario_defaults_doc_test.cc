// The key table of docs/scenario.md (`| key | type | default | meaning |`) against the
// scenario reader: every documented default is what a scenario that leaves the key out
// resolves to, and every value the reader fills in is listed in `derived` (report.json
// `notes`), as the docs promise ("Nothing is silently defaulted").
//
// The table is parsed at run time, so a row added to or changed in the docs without a
// matching row here fails: each documented key either has an accessor row below (its
// default is a constant, compared with the resolved Scenario) or is in the commented
// list of keys whose default is not a constant (required, derived, "none"), and those
// are checked for what can be checked.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "support/build_paths.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/perf/aiconfigurator.h"
#include "fleetplan/perf/engine_version.h"
#include "fleetplan/perf/factory.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

// ---- the docs' table --------------------------------------------------------------

struct DocRow {
  std::string key;           // one key, e.g. "deployment.tp" (a cell naming several is split)
  std::string default_text;  // this key's default, backticks removed
  int line = 0;              // in docs/scenario.md
};

std::string DocPath() { return std::string(FLEETPLAN_SOURCE_DIR) + "/docs/scenario.md"; }

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

std::string StripBackticks(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '`') out.push_back(c);
  }
  return Trim(out);
}

// Splits on ", " outside backticks: "`{a: 1, b: 2}`, 3" -> ["`{a: 1, b: 2}`", "3"].
std::vector<std::string> SplitOutsideBackticks(std::string_view s) {
  std::vector<std::string> parts;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '`') quoted = !quoted;
    if (!quoted && s[i] == ',' && i + 1 < s.size() && s[i + 1] == ' ') {
      parts.push_back(Trim(cur));
      cur.clear();
      ++i;
      continue;
    }
    cur.push_back(s[i]);
  }
  parts.push_back(Trim(cur));
  return parts;
}

// The keys a key cell names: "`deployment.replicas`, `.tp`" -> deployment.replicas,
// deployment.tp (a leading dot continues the first key's parent).
std::vector<std::string> KeysOfCell(std::string_view cell) {
  std::vector<std::string> keys;
  std::string parent;
  size_t pos = 0;
  while (true) {
    const size_t open = cell.find('`', pos);
    if (open == std::string_view::npos) break;
    const size_t close = cell.find('`', open + 1);
    if (close == std::string_view::npos) break;
    std::string key(cell.substr(open + 1, close - open - 1));
    if (!key.empty() && key.front() == '.') {
      key = parent + key;
    } else if (keys.empty()) {
      const size_t dot = key.rfind('.');
      parent = dot == std::string::npos ? "" : key.substr(0, dot);
    }
    keys.push_back(std::move(key));
    pos = close + 1;
  }
  return keys;
}

// The table's rows, one per key. A default cell with as many comma-separated parts as the
// key cell has keys gives one part to each key; otherwise the whole cell is every key's.
std::vector<DocRow> ReadDocTable(std::string* error) {
  std::ifstream in(DocPath());
  if (!in) {
    *error = "cannot open " + DocPath();
    return {};
  }
  std::vector<DocRow> rows;
  std::string line;
  int number = 0;
  bool in_table = false;
  bool seen_header = false;
  while (std::getline(in, line)) {
    ++number;
    const std::string trimmed = Trim(line);
    if (!in_table) {
      if (trimmed.rfind("| key | type | default | meaning |", 0) == 0) {
        in_table = true;
        seen_header = true;
      }
      continue;
    }
    if (trimmed.empty() || trimmed.front() != '|') break;  // the table ended
    if (trimmed.rfind("| ---", 0) == 0) continue;          // the separator row
    std::vector<std::string> cells;
    size_t pos = 1;
    while (cells.size() < 3) {
      const size_t bar = trimmed.find('|', pos);
      if (bar == std::string::npos) break;
      cells.push_back(Trim(std::string_view(trimmed).substr(pos, bar - pos)));
      pos = bar + 1;
    }
    if (cells.size() < 3) {
      *error = fmt::format("docs/scenario.md:{}: expected a row of the key table, got: {}", number, trimmed);
      return {};
    }
    const std::vector<std::string> keys = KeysOfCell(cells[0]);
    if (keys.empty()) {
      *error = fmt::format("docs/scenario.md:{}: no `key` in the key cell: {}", number, cells[0]);
      return {};
    }
    const std::vector<std::string> parts = SplitOutsideBackticks(cells[2]);
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string value = keys.size() > 1 && parts.size() == keys.size() ? parts[i] : cells[2];
      rows.push_back(DocRow{keys[i], StripBackticks(value), number});
    }
  }
  if (!seen_header) *error = "docs/scenario.md has no `| key | type | default | meaning |` table";
  return rows;
}

// ---- scenarios ----------------------------------------------------------------------

// The smallest scenario the docs allow: version, model, hardware.gpu and workload.
const char* const kVersion = "version: 1\n";
const char* const kModel = "model: {name: llama-3.1-8b}\n";
const char* const kHardware = "hardware: {gpu: h100-sxm-80g}\n";
const char* const kWorkload =
    "workload:\n"
    "  requests: 10\n"
    "  arrival: {process: poisson, rate: 1/s}\n"
    "  classes:\n"
    "    chat: {share: 1.0, prompt: [{segment: unique, tokens: 100}], output_tokens: 10}\n";

// The minimal scenario plus `extra` (whole top-level sections).
std::string Minimal(const std::string& extra = "") {
  return std::string(kVersion) + kModel + kHardware + kWorkload + extra;
}

// `text` without its first occurrence of `part` (which must be there).
std::string Without(std::string text, std::string_view part) {
  const size_t at = text.find(part);
  if (at != std::string::npos) text.erase(at, part.size());
  return text;
}

std::string Replace(std::string text, std::string_view part, std::string_view with) {
  const size_t at = text.find(part);
  if (at != std::string::npos) text.replace(at, part.size(), with);
  return text;
}

const char* const kPoolsSection =
    "deployment:\n"
    "  pools:\n"
    "    - {role: prefill, replicas: 1}\n"
    "    - {role: decode, replicas: 1}\n";

// Which scenario a row is checked in: the minimal one, or the minimal one with the
// section that makes the key apply (and nothing else).
enum class Variant {
  kMinimal,
  kPools,            // a prefill and a decode pool: deployment.disaggregation applies
  kFaultsDelay,      // kPools + faults.kv_transfer.delay
  kFaultsFailure,    // kPools + faults.kv_transfer.failure_probability
  kPrefixCache,      // engine.prefix_cache.enabled
  kReplication,      // prefix cache, cache-aware, router.replication.replica_rate
  kPriorityAging,    // engine.scheduler.policy: priority-aging
  kLeastOutstanding, // router.policy: least-outstanding
  kWeighted,         // router.policy: weighted
  kAdapterAware,     // router.policy: adapter-aware
  kAdapters,         // engine.adapters with size and memory_budget
  kSpeculation,      // engine.speculation, method draft, its required keys only
  kAdmission,        // admission with one class given no keys
  kAdmissionQuota,   // kAdmission + admission.tenant_quota.token_rate
  kAutoscaling,          // autoscaling with its one required key, target
  kAutoscalingPanic,     // kAutoscaling + panic: {}
  kAutoscalingForecast,  // kAutoscaling + a moving-window forecast
};

std::string TextOf(Variant v) {
  switch (v) {
    case Variant::kMinimal: return Minimal();
    case Variant::kPools: return Minimal(kPoolsSection);
    case Variant::kFaultsDelay: return Minimal(std::string(kPoolsSection) + "faults: {kv_transfer: {delay: 5ms}}\n");
    case Variant::kFaultsFailure:
      return Minimal(std::string(kPoolsSection) + "faults: {kv_transfer: {failure_probability: 0.1}}\n");
    case Variant::kPrefixCache: return Minimal("engine: {prefix_cache: {enabled: true}}\n");
    case Variant::kReplication:
      return Minimal(
          "engine: {prefix_cache: {enabled: true}}\n"
          "router: {policy: cache-aware, replication: {replica_rate: 1/s}}\n");
    case Variant::kPriorityAging: return Minimal("engine: {scheduler: {policy: priority-aging}}\n");
    case Variant::kLeastOutstanding: return Minimal("router: {policy: least-outstanding}\n");
    case Variant::kWeighted: return Minimal("router: {policy: weighted}\n");
    case Variant::kAdapterAware: return Minimal("router: {policy: adapter-aware}\n");
    case Variant::kAdapters: return Minimal("engine: {adapters: {size: 100MiB, memory_budget: 1GiB}}\n");
    case Variant::kSpeculation:
      return Minimal("engine: {speculation: {method: draft, draft: {model: llama-3.1-8b}, tokens_per_round: 2, "
                     "acceptance: [0.5, 0.5]}}\n");
    case Variant::kAdmission: return Minimal("admission: {classes: {chat: {}}}\n");
    case Variant::kAdmissionQuota:
      return Minimal("admission: {classes: {chat: {}}, tenant_quota: {token_rate: 1000/s}}\n");
    case Variant::kAutoscaling: return Minimal("autoscaling: {target: 2}\n");
    case Variant::kAutoscalingPanic: return Minimal("autoscaling: {target: 2, panic: {}}\n");
    case Variant::kAutoscalingForecast: return Minimal("autoscaling: {target: 2, forecast: {replica_rate: 1/s}}\n");
  }
  return "";
}

const std::vector<Variant>& AllVariants() {
  static const std::vector<Variant> all = {
      Variant::kMinimal,      Variant::kPools,         Variant::kFaultsDelay,      Variant::kFaultsFailure,
      Variant::kPrefixCache,  Variant::kReplication,   Variant::kPriorityAging,    Variant::kLeastOutstanding,
      Variant::kWeighted,     Variant::kAdapterAware,  Variant::kAdapters,         Variant::kSpeculation,  Variant::kAdmission,
      Variant::kAdmissionQuota, Variant::kAutoscaling,
      Variant::kAutoscalingPanic, Variant::kAutoscalingForecast};
  return all;
}

Expected<Scenario> Load(const std::string& text) { return LoadScenarioText(text, "defaults.yaml", ""); }

// Every variant, loaded once.
const std::map<Variant, Scenario>& Loaded() {
  static const std::map<Variant, Scenario> loaded = [] {
    std::map<Variant, Scenario> out;
    for (Variant v : AllVariants()) {
      Expected<Scenario> s = Load(TextOf(v));
      if (!s.ok()) {
        ADD_FAILURE() << "scenario variant " << static_cast<int>(v) << " does not load: " << s.status().message()
                      << "\n" << TextOf(v);
        continue;
      }
      out.emplace(v, std::move(s).value());
    }
    return out;
  }();
  return loaded;
}

// ---- values as the docs write them ----------------------------------------------------

std::string Bool(bool b) { return b ? "true" : "false"; }
std::string Num(double d) { return fmt::format("{}", d); }
std::string Int(int64_t i) { return std::to_string(i); }

// 0, 250us, 150ms, 10s: the docs' spelling of a duration.
std::string DurationText(Duration d) {
  const int64_t ns = d.ns();
  if (ns == 0) return "0";
  if (ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
  if (ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
  if (ns % 1'000 == 0) return fmt::format("{}us", ns / 1'000);
  return fmt::format("{}ns", ns);
}

std::optional<double> AsNumber(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// "{b: 2, a: 1}" -> "{a: 1, b: 2}"; other text unchanged.
std::string NormalizeFlowMap(const std::string& s) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return s;
  std::vector<std::string> entries = SplitOutsideBackticks(s.substr(1, s.size() - 2));
  std::sort(entries.begin(), entries.end());
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
  return out + "}";
}

bool SameValue(const std::string& documented, const std::string& resolved) {
  const std::optional<double> a = AsNumber(documented);
  const std::optional<double> b = AsNumber(resolved);
  if (a && b) return std::fabs(*a - *b) <= 1e-12 * std::max(1.0, std::fabs(*a));
  return NormalizeFlowMap(documented) == NormalizeFlowMap(resolved);
}

// ---- notes ------------------------------------------------------------------------------

// The fit reader lists its defaults in one note: "defaults (not given): tp 1, pp 1, ...".
constexpr std::string_view kDefaultsNote = "defaults (not given): ";

std::vector<std::string> DefaultsItems(const std::vector<std::string>& derived) {
  std::vector<std::string> items;
  for (const std::string& d : derived) {
    if (d.rfind(kDefaultsNote, 0) != 0) continue;
    for (std::string& item : SplitOutsideBackticks(d.substr(kDefaultsNote.size()))) items.push_back(item);
  }
  return items;
}

bool HasNote(const std::vector<std::string>& derived, const std::string& note) {
  return std::find(derived.begin(), derived.end(), note) != derived.end();
}

bool HasDefaultsItem(const std::vector<std::string>& derived, const std::string& item) {
  const std::vector<std::string> items = DefaultsItems(derived);
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Some note names `key`: a note "key: ..." / "key ..." or an item "key ..." of the
// defaults note.
bool MentionsKey(const std::vector<std::string>& derived, const std::string& key) {
  auto names = [&](const std::string& text) {
    return text.rfind(key, 0) == 0 && text.size() > key.size() && (text[key.size()] == ':' || text[key.size()] == ' ');
  };
  if (std::any_of(derived.begin(), derived.end(), names)) return true;
  const std::vector<std::string> items = DefaultsItems(derived);
  return std::any_of(items.begin(), items.end(), names);
}

std::string JoinNotes(const std::vector<std::string>& derived) {
  std::string out;
  for (const std::string& d : derived) out += "\n  " + d;
  return out;
}

// How a defaulted key is listed in `derived`.
struct Note {
  enum Kind {
    kExact,     // a note equal to `text` (what the reader writes today)
    kItem,      // an item of the fit reader's "defaults (not given): ..." note
    kPromised,  // the reader lists nothing today; the docs promise a note naming the key
  };
  Kind kind;
  std::string text;
};
Note Exact(std::string text) { return Note{Note::kExact, std::move(text)}; }
Note Item(std::string text) { return Note{Note::kItem, std::move(text)}; }
Note Promised() { return Note{Note::kPromised, ""}; }

// "[{pods: 4, period: 15s}, {percent: 100, period: 15s}]": a direction's policies as the docs write them.
std::string PoliciesText(const ScalingRules& rules) {
  std::vector<std::string> items;
  for (const ScalingPolicy& p : rules.policies) {
    items.push_back(fmt::format("{{{}: {}, period: {}}}", p.kind == ScalingPolicyKind::kPods ? "pods" : "percent",
                                p.value, DurationText(p.period)));
  }
  return "[" + fmt::format("{}", fmt::join(items, ", ")) + "]";
}

// ---- the accessor table: every documented key with a constant default -----------------

struct Row {
  std::string key;
  Variant variant;                                // the scenario it is read from
  std::function<std::string(const Scenario&)> value;  // the resolved value, as the docs write it
  Note note;
};

const std::vector<Row>& Rows() {
  using S = const Scenario&;
  static const std::vector<Row> rows = {
      {"name", Variant::kMinimal, [](S s) { return s.name; }, Promised()},
      {"seed", Variant::kMinimal, [](S s) { return fmt::format("{}", s.seed); }, Exact("seed: 0 (not given)")},
      {"model.kv_window", Variant::kMinimal,
       [](S s) { return s.fit.memory.kv_window ? Int(*s.fit.memory.kv_window) : std::string("null"); },
       Item("kv_window none (full context)")},
      {"hardware.nodes", Variant::kMinimal, [](S s) { return Int(s.nodes); }, Promised()},
      {"hardware.gpus_per_node", Variant::kMinimal, [](S s) { return Int(s.gpus_per_node); }, Promised()},
      {"hardware.inter_node_link", Variant::kMinimal, [](S s) { return s.inter_node_link.name; },
       Exact("hardware.inter_node_link: ib-ndr-400 (not given)")},
      {"deployment.replicas", Variant::kMinimal, [](S s) { return Int(s.replicas); }, Promised()},
      {"deployment.tp", Variant::kMinimal, [](S s) { return Int(s.fit.memory.layout.tp); }, Item("tp 1")},
      {"deployment.pp", Variant::kMinimal, [](S s) { return Int(s.fit.memory.layout.pp); }, Item("pp 1")},
      {"deployment.ep", Variant::kMinimal, [](S s) { return Int(s.fit.memory.layout.ep); }, Item("ep 1")},
      {"deployment.gpu_memory_utilization", Variant::kMinimal,
       [](S s) { return Num(s.fit.memory.gpu_memory_utilization); }, Item("gpu_memory_utilization 0.9")},
      {"deployment.disaggregation.colocate_below_tokens", Variant::kPools,
       [](S s) { return Int(s.disaggregation.colocate_below_tokens); },
       Exact("deployment.disaggregation.colocate_below_tokens: 0 (not given)")},
      {"deployment.disaggregation.timeout", Variant::kPools, [](S s) { return DurationText(s.disaggregation.timeout); },
       Exact("deployment.disaggregation.timeout: 10000 ms (not given)")},
      {"deployment.disaggregation.retries", Variant::kPools, [](S s) { return Int(s.disaggregation.retries); },
       Exact("deployment.disaggregation.retries: 1 (not given)")},
      {"deployment.disaggregation.on_failure", Variant::kPools,
       [](S s) { return std::string(s.disaggregation.reject_on_failure ? "reject" : "recompute"); },
       Exact("deployment.disaggregation.on_failure: recompute (not given)")},
      // Read in a scenario whose faults.kv_transfer gives the other setting only.
      {"faults.kv_transfer.delay", Variant::kFaultsFailure,
       [](S s) { return DurationText(s.disaggregation.faults.delay); }, Promised()},
      {"faults.kv_transfer.failure_probability", Variant::kFaultsDelay,
       [](S s) { return Num(s.disaggregation.faults.failure_probability); }, Promised()},
      {"engine.scheduler.policy", Variant::kMinimal, [](S s) { return s.engine.scheduler.policy; }, Promised()},
      {"engine.scheduler.max_batched_tokens", Variant::kMinimal,
       [](S s) { return Int(s.engine.scheduler.max_batched_tokens); }, Item("max_batched_tokens 8192")},
      {"engine.scheduler.max_running", Variant::kMinimal, [](S s) { return Int(s.engine.scheduler.max_running); },
       Item("engine.scheduler.max_running 256")},
      {"engine.scheduler.chunk_tokens", Variant::kMinimal, [](S s) { return Int(s.engine.scheduler.chunk_tokens); },
       Promised()},
      {"engine.scheduler.max_decode_stall", Variant::kMinimal,
       [](S s) { return DurationText(s.engine.scheduler.max_decode_stall); }, Promised()},
      {"engine.scheduler.aging_per_step", Variant::kPriorityAging,
       [](S s) { return Num(s.engine.scheduler.aging_per_step); }, Promised()},
      {"engine.scheduler.max_waiting", Variant::kMinimal, [](S s) { return Int(s.engine.scheduler.max_waiting); },
       Promised()},
      {"engine.scheduler.num_scheduler_steps", Variant::kMinimal,
       [](S s) { return Int(s.engine.scheduler.num_scheduler_steps); }, Promised()},
      {"engine.scheduler.admission", Variant::kMinimal,
       [](S s) { return std::string(s.engine.admission == AdmissionMode::kReserve ? "reserve" : "optimistic"); },
       Promised()},
      {"engine.scheduler.reject_unreachable_deadline", Variant::kMinimal,
       [](S s) { return Bool(s.engine.reject_unreachable_deadline); }, Promised()},
      {"engine.kv.block_tokens", Variant::kMinimal, [](S s) { return Int(s.engine.block_tokens); },
       Item("block_tokens 16")},
      {"engine.prefix_cache.eviction", Variant::kPrefixCache, [](S s) { return s.prefix_cache.eviction; },
       Promised()},
      {"engine.prefix_cache.share_across_tenants", Variant::kPrefixCache,
       [](S s) { return Bool(s.engine.prefix_cache.share_across_tenants); }, Promised()},
      {"engine.prefix_cache.scope.position_scheme", Variant::kPrefixCache,
       [](S s) { return s.engine.prefix_cache.scope.position_scheme; },
       Exact("engine.prefix_cache.scope.position_scheme: rope (rotary; not given)")},
      {"engine.speculation.min_remaining", Variant::kSpeculation,
       [](S s) { return Int(s.speculation.config.min_remaining); }, Promised()},
      {"engine.speculation.basis", Variant::kSpeculation,
       [](S s) { return std::string(SpeculationBasisName(s.speculation.config.basis)); },
       Exact("engine.speculation.basis: emitted (not given)")},
      {"engine.speculation.draft.weight_dtype", Variant::kSpeculation,
       [](S s) { return std::string(DTypeName(s.speculation.draft_weight_dtype)); }, Promised()},
      {"router.policy", Variant::kMinimal, [](S s) { return s.router.policy; }, Promised()},
      {"router.telemetry_delay", Variant::kMinimal, [](S s) { return DurationText(s.router.telemetry_delay); },
       Promised()},
      {"router.precise", Variant::kMinimal, [](S s) { return Bool(s.router.precise); }, Promised()},
      {"router.replication.prefix_tokens", Variant::kReplication, [](S s) { return Int(s.replication.prefix_tokens); },
       Promised()},
      {"router.replication.add_above", Variant::kReplication, [](S s) { return Num(s.replication.add_above); },
       Promised()},
      {"router.replication.remove_below", Variant::kReplication, [](S s) { return Num(s.replication.remove_below); },
       Promised()},
      {"router.replication.window", Variant::kReplication, [](S s) { return DurationText(s.replication.window); },
       Promised()},
      {"router.replication.min_hold", Variant::kReplication, [](S s) { return DurationText(s.replication.min_hold); },
       Promised()},
      {"router.outstanding_by", Variant::kLeastOutstanding,
       [](S s) { return std::string(s.router.outstanding_by == OutstandingBy::kRequests ? "requests" : "tokens"); },
       Promised()},
      {"router.weighted", Variant::kWeighted,
       [](S s) {
         std::vector<std::string> entries;
         for (const auto& [scorer, weight] : s.router.weights) entries.push_back(fmt::format("{}: {}", scorer, weight));
         return "{" + fmt::format("{}", fmt::join(entries, ", ")) + "}";
       },
       Exact("router.weighted: {prefix: 3, queue: 2, kv: 2} (not given)")},
      {"router.adapter_aware.load", Variant::kAdapterAware, [](S s) { return Num(s.router.adapter_aware.load); },
       Promised()},
      {"router.adapter_aware.affinity", Variant::kAdapterAware,
       [](S s) { return Num(s.router.adapter_aware.affinity); }, Promised()},
      {"router.adapter_aware.by", Variant::kAdapterAware,
       [](S s) { return std::string(s.router.adapter_aware.by == AdapterPlacementBy::kPopularity ? "popularity" : "history"); },
       Exact("router.adapter_aware.by: history (not given)")},
      {"router.adapter_aware.hot", Variant::kAdapterAware, [](S s) { return Num(s.router.adapter_aware.hot); },
       Exact("router.adapter_aware.hot: 0.5 (not given)")},
      {"router.adapter_aware.warm", Variant::kAdapterAware, [](S s) { return Num(s.router.adapter_aware.warm); },
       Exact("router.adapter_aware.warm: 0.3 (not given)")},
      {"admission.classes.<name>.priority", Variant::kAdmission,
       [](S s) { return Int(s.admission.classes.at(0).priority); }, Exact("admission.classes.chat.priority: 0 (not given)")},
      {"admission.classes.<name>.max_queue", Variant::kAdmission,
       [](S s) { return Int(s.admission.classes.at(0).max_queue); },
       Exact("admission.classes.chat.max_queue: 1000 (not given)")},
      {"admission.classes.<name>.max_wait", Variant::kAdmission,
       [](S s) { return DurationText(s.admission.classes.at(0).max_wait); },
       Exact("admission.classes.chat.max_wait: 10000 ms (not given)")},
      {"admission.classes.<name>.reserve_kv", Variant::kAdmission,
       [](S s) { return std::string(s.admission.classes.at(0).worst_case_kv ? "worst-case" : "prompt"); },
       Exact("admission.classes.chat.reserve_kv: prompt (not given)")},
      {"autoscaling.interval", Variant::kAutoscaling, [](S s) { return DurationText(s.autoscaling.interval); },
       Exact("autoscaling.interval: 15 s (not given)")},
      {"autoscaling.metric", Variant::kAutoscaling,
       [](S s) { return std::string(ScalingMetricName(s.autoscaling.metric)); },
       Exact("autoscaling.metric: waiting_requests (not given)")},
      {"autoscaling.tolerance", Variant::kAutoscaling, [](S s) { return Num(s.autoscaling.tolerance); },
       Exact("autoscaling.tolerance: 0.1 (not given)")},
      {"autoscaling.min_replicas", Variant::kAutoscaling, [](S s) { return Int(s.autoscaling.min_replicas); },
       Exact("autoscaling.min_replicas: 1 (not given)")},
      {"autoscaling.scale_up.stabilization", Variant::kAutoscaling,
       [](S s) { return DurationText(s.autoscaling.scale_up.stabilization); },
       Exact("autoscaling.scale_up.stabilization: 0 s (not given)")},
      {"autoscaling.scale_up.policies", Variant::kAutoscaling, [](S s) { return PoliciesText(s.autoscaling.scale_up); },
       Exact("autoscaling.scale_up.policies: 4 pods per 15 s, 100 percent per 15 s (the more permissive applies; not "
             "given)")},
      {"autoscaling.scale_down.stabilization", Variant::kAutoscaling,
       [](S s) { return DurationText(s.autoscaling.scale_down.stabilization); },
       Exact("autoscaling.scale_down.stabilization: 300 s (not given)")},
      {"autoscaling.scale_down.policies", Variant::kAutoscaling,
       [](S s) { return PoliciesText(s.autoscaling.scale_down); },
       Exact("autoscaling.scale_down.policies: 100 percent per 15 s (the more permissive applies; not given)")},
      {"autoscaling.panic.stable_window", Variant::kAutoscalingPanic,
       [](S s) { return DurationText(s.autoscaling.panic->stable_window); },
       Exact("autoscaling.panic.stable_window: 60 s (not given)")},
      {"autoscaling.panic.panic_window", Variant::kAutoscalingPanic,
       [](S s) { return DurationText(s.autoscaling.panic->panic_window); },
       Exact("autoscaling.panic.panic_window: 6 s (not given)")},
      {"autoscaling.panic.threshold", Variant::kAutoscalingPanic,
       [](S s) { return Num(s.autoscaling.panic->panic_threshold); }, Exact("autoscaling.panic.threshold: 2 (not given)")},
      {"autoscaling.nodes.provisioning_delay", Variant::kAutoscaling,
       [](S s) { return DurationText(s.autoscaling.nodes.provisioning_delay); },
       Exact("autoscaling.nodes.provisioning_delay: 240 s (not given)")},
      {"autoscaling.load_bandwidth", Variant::kAutoscaling,
       [](S s) { return fmt::format("{:g}GB/s", static_cast<double>(s.autoscaling.load_bandwidth) / 1e9); },
       Exact("autoscaling.load_bandwidth: 2GB/s (per rank; not given)")},
      {"autoscaling.engine_start", Variant::kAutoscaling, [](S s) { return DurationText(s.autoscaling.engine_start); },
       Exact("autoscaling.engine_start: 30 s (not given)")},
      {"autoscaling.drain.grace", Variant::kAutoscaling, [](S s) { return DurationText(s.autoscaling.drain_grace); },
       Exact("autoscaling.drain.grace: 30 s (not given)")},
      {"autoscaling.drain.expiry", Variant::kAutoscaling,
       [](S s) { return std::string(DrainExpiryName(s.autoscaling.drain_expiry)); },
       Exact("autoscaling.drain.expiry: requeue (not given)")},
      {"autoscaling.forecast.window", Variant::kAutoscalingForecast,
       [](S s) { return DurationText(s.autoscaling.forecast.window); },
       Exact("autoscaling.forecast.window: 60 s (not given)")},
      {"output.requests", Variant::kMinimal, [](S s) { return Bool(s.output.requests); }, Promised()},
      {"output.timeline", Variant::kMinimal, [](S s) { return Bool(s.output.timeline); }, Promised()},
      {"output.timeseries_interval", Variant::kMinimal,
       [](S s) { return DurationText(s.output.timeseries_interval); }, Promised()},
      {"output.html", Variant::kMinimal, [](S s) { return Bool(s.output.html); }, Promised()},
  };
  return rows;
}

// ---- documented keys whose default is not a constant ----------------------------------

struct NonConstant {
  enum Kind {
    kRequired,   // the reader rejects a scenario without it
    kDerived,    // computed from other values (and listed in `derived`)
    kNone,       // absent means the feature is off: nothing is filled in
    kNotStored,  // a constant the reader validates but does not keep in Scenario
  };
  std::string key;
  std::string documented;  // the docs' default cell, as parsed; a change here is flagged
  Kind kind;
  std::function<void()> check;  // what can be checked (EXPECTs)
};

const Scenario* Get(Variant v) {
  const auto it = Loaded().find(v);
  return it == Loaded().end() ? nullptr : &it->second;
}

void ExpectRejected(const std::string& text, const std::string& what) {
  const Expected<Scenario> s = Load(text);
  EXPECT_FALSE(s.ok()) << "a scenario without " << what << " loads; the docs say it is required:\n" << text;
}

const std::vector<NonConstant>& NonConstants() {
  static const std::vector<NonConstant> list = {
      // Required: the docs say so; a scenario without it must be an error.
      // The one format version: an absent `version` is read as 1 and listed in notes.
      {"version", "1", NonConstant::kDerived,
       [] {
         const Expected<Scenario> s = Load(Without(Minimal(), kVersion));
         ASSERT_TRUE(s.ok()) << s.status().message();
         EXPECT_NE(std::find(s->derived.begin(), s->derived.end(), "version: 1 (not given)"), s->derived.end());
       }},
      // "—": one of model.name and model.spec is required.
      {"model.name", "—", NonConstant::kRequired, [] { ExpectRejected(Without(Minimal(), kModel), "model"); }},
      {"model.spec", "—", NonConstant::kRequired, [] { ExpectRejected(Without(Minimal(), kModel), "model"); }},
      {"hardware.gpu", "required", NonConstant::kRequired,
       [] { ExpectRejected(Replace(Minimal(), kHardware, "hardware: {nodes: 1}\n"), "hardware.gpu"); }},
      // The catalog GPU's memory, unless the inventory reports another.
      {"hardware.gpu_memory", "the catalog's", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->fit.memory.gpu.memory, Catalog::Builtin().Gpu("h100-sxm-80g")->memory);
         const Expected<Scenario> narrowed =
             Load(Replace(Minimal(), kHardware, "hardware: {gpu: h100-sxm-80g, gpu_memory: 40GiB}\n"));
         ASSERT_TRUE(narrowed.ok()) << narrowed.status().message();
         EXPECT_EQ(narrowed->fit.memory.gpu.memory, GiB(40));
         EXPECT_TRUE(HasNote(narrowed->derived, "gpu memory 40.00 GiB (42949672960 B) from hardware.gpu_memory (catalog: 79.65 GiB)"))
             << fmt::format("{}", fmt::join(narrowed->derived, "\n"));
       }},
      {"workload", "required", NonConstant::kRequired,
       [] { ExpectRejected(Without(Minimal(), kWorkload), "workload"); }},
      {"engine.speculation.method", "required when engine.speculation is given", NonConstant::kRequired,
       [] {
         ExpectRejected(Minimal("engine: {speculation: {tokens_per_round: 1, acceptance: [0.5]}}\n"),
                        "engine.speculation.method");
       }},
      {"engine.speculation.tokens_per_round", "required when engine.speculation is given", NonConstant::kRequired,
       [] {
         ExpectRejected(Minimal("engine: {speculation: {method: ngram, acceptance: [0.5]}}\n"),
                        "engine.speculation.tokens_per_round");
       }},
      {"engine.speculation.acceptance", "required when engine.speculation is given", NonConstant::kRequired,
       [] {
         ExpectRejected(Minimal("engine: {speculation: {method: ngram, tokens_per_round: 1}}\n"),
                        "engine.speculation.acceptance");
       }},
      {"engine.speculation.draft.model", "required with method draft", NonConstant::kRequired,
       [] {
         ExpectRejected(Minimal("engine: {speculation: {method: draft, tokens_per_round: 1, acceptance: [0.5]}}\n"),
                        "engine.speculation.draft");
       }},
      {"engine.adapters.size", "required when engine.adapters is given", NonConstant::kRequired,
       [] { ExpectRejected(Minimal("engine: {adapters: {memory_budget: 1GiB}}\n"), "engine.adapters.size"); }},
      {"engine.adapters.memory_budget", "required when engine.adapters is given", NonConstant::kRequired,
       [] { ExpectRejected(Minimal("engine: {adapters: {size: 100MiB}}\n"), "engine.adapters.memory_budget"); }},
      {"router.replication.replica_rate", "required when router.replication is given", NonConstant::kRequired,
       [] {
         ExpectRejected(Minimal("engine: {prefix_cache: {enabled: true}}\n"
                                "router: {policy: cache-aware, replication: {prefix_tokens: 1024}}\n"),
                        "router.replication.replica_rate");
       }},

      // Derived from the model: the checkpoint's format; KV the checkpoint's when 16 bits or
      // wider, else bf16. Checked on a bf16, an fp16 and an fp8 checkpoint.
      {"model.weight_dtype", "the checkpoint's", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(DTypeName(s->fit.memory.weight_dtype), DTypeName(s->fit.memory.model.native_dtype));
         EXPECT_TRUE(HasDefaultsItem(s->derived, "weight_dtype bf16 (the checkpoint's)")) << JoinNotes(s->derived);
         for (const char* model : {"llava-1.5-7b", "deepseek-v3"}) {
           SCOPED_TRACE(model);
           const Expected<Scenario> other =
               Load(Replace(Minimal(), kModel, fmt::format("model: {{name: {}}}\n", model)));
           ASSERT_TRUE(other.ok()) << other.status().message();
           const Expected<ModelSpec> spec = Catalog::Builtin().Model(model);
           ASSERT_TRUE(spec.ok());
           EXPECT_EQ(DTypeName(other->fit.memory.weight_dtype), DTypeName(spec->native_dtype));
           EXPECT_TRUE(HasDefaultsItem(
               other->derived, fmt::format("weight_dtype {} (the checkpoint's)", DTypeName(spec->native_dtype))))
               << JoinNotes(other->derived);
         }
       }},
      {"model.kv_dtype", "the checkpoint's (bf16 when it is narrower than 16 bits)", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(DTypeName(s->fit.memory.kv_dtype), "bf16");
         EXPECT_TRUE(HasDefaultsItem(s->derived, "kv_dtype bf16")) << JoinNotes(s->derived);
         // fp16 checkpoint: KV in fp16; fp8 checkpoint: KV in bf16.
         for (const auto& [model, kv] : {std::pair{"llava-1.5-7b", "fp16"}, std::pair{"deepseek-v3", "bf16"}}) {
           SCOPED_TRACE(model);
           const Expected<Scenario> other =
               Load(Replace(Minimal(), kModel, fmt::format("model: {{name: {}}}\n", model)));
           ASSERT_TRUE(other.ok()) << other.status().message();
           EXPECT_EQ(DTypeName(other->fit.memory.kv_dtype), kv);
           EXPECT_TRUE(HasDefaultsItem(other->derived, fmt::format("kv_dtype {}", kv))) << JoinNotes(other->derived);
         }
       }},
      {"model.max_context", "model's", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         const Expected<ModelSpec> spec = Catalog::Builtin().Model("llama-3.1-8b");
         ASSERT_TRUE(spec.ok());
         EXPECT_EQ(s->fit.context, spec->max_context);
         EXPECT_TRUE(HasNote(s->derived, fmt::format("context {}: the max_context of 'llama-3.1-8b' (not given)",
                                                     spec->max_context)))
             << JoinNotes(s->derived);
       }},
      {"hardware.intra_node_link", "GPU's link", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         ASSERT_FALSE(s->fit.memory.gpu.default_intra_link.empty());
         EXPECT_EQ(s->intra_node_link.name, s->fit.memory.gpu.default_intra_link);
         EXPECT_TRUE(HasNote(s->derived,
                             fmt::format("hardware.intra_node_link: {} (not given)", s->intra_node_link.name)))
             << JoinNotes(s->derived);
       }},
      {"deployment.disaggregation.link", "hardware.inter_node_link", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kPools);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->transfer_link.name, s->inter_node_link.name);
         EXPECT_TRUE(HasNote(s->derived, fmt::format("deployment.disaggregation.link: {} (hardware.inter_node_link; "
                                                     "not given)",
                                                     s->inter_node_link.name)))
             << JoinNotes(s->derived);
       }},
      {"deployment.disaggregation.setup", "the link's latency", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kPools);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->disaggregation.setup, s->transfer_link.latency);
         EXPECT_TRUE(HasNote(s->derived, fmt::format("deployment.disaggregation.setup: {:.3f} ms (the link's "
                                                     "latency; not given)",
                                                     s->transfer_link.latency.millis())))
             << JoinNotes(s->derived);
       }},
      {"faults.kv_transfer.delay_probability", "1 when delay is given, else 0", NonConstant::kDerived,
       [] {
         const Scenario* delayed = Get(Variant::kFaultsDelay);
         ASSERT_NE(delayed, nullptr);
         EXPECT_EQ(delayed->disaggregation.faults.delay_probability, 1.0);
         EXPECT_TRUE(HasNote(delayed->derived, "faults.kv_transfer.delay_probability: 1 (a stated delay applies to "
                                               "every transfer; not given)"))
             << JoinNotes(delayed->derived);
         const Scenario* failing = Get(Variant::kFaultsFailure);
         ASSERT_NE(failing, nullptr);
         EXPECT_EQ(failing->disaggregation.faults.delay_probability, 0.0);
         const Scenario* pools = Get(Variant::kPools);
         ASSERT_NE(pools, nullptr);
         EXPECT_FALSE(pools->disaggregation.faults.any());
       }},
      {"engine.prefix_cache.scope.model_revision", "model name", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kPrefixCache);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->engine.prefix_cache.scope.model_revision, "llama-3.1-8b");
         EXPECT_TRUE(HasNote(s->derived, "engine.prefix_cache.scope.model_revision: llama-3.1-8b (the model name; "
                                         "not given)"))
             << JoinNotes(s->derived);
       }},
      {"engine.prefix_cache.scope.tokenizer", "model name", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kPrefixCache);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->engine.prefix_cache.scope.tokenizer, "llama-3.1-8b");
         EXPECT_TRUE(HasNote(s->derived, "engine.prefix_cache.scope.tokenizer: llama-3.1-8b (the model name; not "
                                         "given)"))
             << JoinNotes(s->derived);
       }},
      {"engine.adapters.load_time", "size / 25 GB/s", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAdapters);
         ASSERT_NE(s, nullptr);
         // 100 MiB at 25e9 bytes/s: 104857600 / 25e9 s = 4194304 ns exactly.
         EXPECT_EQ(s->adapters.load_time.ns(), 4'194'304);
         EXPECT_TRUE(HasNote(s->derived, "engine.adapters.load_time: 4.194 ms (size / 25 GB/s host-to-device; not "
                                         "given)"))
             << JoinNotes(s->derived);
         // "Without engine.adapters, adapters load instantly and take no memory (listed in notes)".
         const std::string adapters_workload =
             Replace(Minimal(), "  classes:\n", "  adapters: {count: 2, popularity: uniform}\n  classes:\n");
         const Expected<Scenario> instant = Load(adapters_workload);
         ASSERT_TRUE(instant.ok()) << instant.status().message();
         EXPECT_FALSE(instant->adapters.enabled);
         EXPECT_TRUE(HasNote(instant->derived, "engine.adapters: not given; adapters load instantly and take no memory"))
             << JoinNotes(instant->derived);
       }},
      {"output.dir", "out/<name>", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->output.dir, "out/" + s->name);
         const Expected<Scenario> named = Load(Minimal() + "name: atlas-x\n");
         ASSERT_TRUE(named.ok()) << named.status().message();
         EXPECT_EQ(named->output.dir, "out/atlas-x");
       }},

      {"admission.classes", "required when admission is given", NonConstant::kRequired,
       [] { ExpectRejected(Minimal("admission: {default_class: chat}\n"), "admission.classes"); }},
      {"admission.classes.<name>.aging_margin", "max_wait / 4", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAdmission);
         ASSERT_NE(s, nullptr);
         ASSERT_TRUE(s->admission.classes.at(0).aging_margin.has_value());
         EXPECT_EQ(*s->admission.classes.at(0).aging_margin, Ms(2500));
         EXPECT_TRUE(HasNote(s->derived, "admission.classes.chat.aging_margin: 2500 ms (max_wait / 4; not given)"))
             << JoinNotes(s->derived);
       }},
      {"admission.default_class", "the first class", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAdmission);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->admission.default_class, 0);
         EXPECT_TRUE(HasNote(s->derived, "admission.default_class: chat (the first class; not given)"))
             << JoinNotes(s->derived);
       }},
      {"admission.max_in_flight_per_replica", "engine.scheduler.max_running", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAdmission);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->admission.max_in_flight_per_replica.has_value());
         EXPECT_TRUE(HasNote(s->derived, "admission.max_in_flight_per_replica: 256 (engine.scheduler.max_running; not "
                                         "given)"))
             << JoinNotes(s->derived);
       }},
      {"admission.tenant_quota.burst", "one second of token_rate", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAdmissionQuota);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->admission.default_quota.burst, 1000);
         EXPECT_TRUE(HasNote(s->derived, "admission.tenant_quota.burst: 1000 (one second of token_rate; not given)"))
             << JoinNotes(s->derived);
       }},

      // "none": absent = the feature is off.
      {"admission", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->admission.enabled);
       }},
      {"admission.assign", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAdmission);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->admission.rules.empty());
       }},
      {"admission.tenants", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAdmission);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->admission.overrides.empty());
       }},
      // No limit: listed in notes as "unlimited" (or the whole quota as "none").
      {"admission.tenant_quota.max_concurrent", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAdmissionQuota);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->admission.default_quota.max_concurrent.has_value());
         EXPECT_TRUE(HasNote(s->derived, "admission.tenant_quota.max_concurrent: unlimited (not given)"))
             << JoinNotes(s->derived);
         const Scenario* none = Get(Variant::kAdmission);
         ASSERT_NE(none, nullptr);
         EXPECT_TRUE(HasNote(none->derived, "admission.tenant_quota: none (no tenant limits; not given)"))
             << JoinNotes(none->derived);
       }},
      {"admission.tenant_quota.max_tokens_in_flight", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAdmissionQuota);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->admission.default_quota.max_tokens_in_flight.has_value());
         EXPECT_TRUE(HasNote(s->derived, "admission.tenant_quota.max_tokens_in_flight: unlimited (not given)"))
             << JoinNotes(s->derived);
       }},
      {"admission.tenant_quota.token_rate", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAdmission);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->admission.default_quota.token_rate.has_value());
       }},
      {"autoscaling.target", "required when autoscaling is given", NonConstant::kRequired,
       [] { ExpectRejected(Minimal("autoscaling: {interval: 15s}\n"), "autoscaling.target"); }},
      {"autoscaling.forecast.replica_rate", "required for a moving window", NonConstant::kRequired,
       [] { ExpectRejected(Minimal("autoscaling: {target: 2, forecast: {window: 60s}}\n"), "replica_rate"); }},
      {"autoscaling.window", "the interval", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.window, s->autoscaling.interval);
         EXPECT_TRUE(HasNote(s->derived, "autoscaling.window: 15 s (the interval; not given)")) << JoinNotes(s->derived);
       }},
      {"autoscaling.max_replicas", "what max_nodes hold", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.max_replicas, 8);  // 1 node of 8 GPUs, tp 1
         EXPECT_TRUE(HasNote(s->derived, "autoscaling.max_replicas: 8 (what max_nodes 1 x 8 replicas per node hold; "
                                         "not given)"))
             << JoinNotes(s->derived);
       }},
      {"autoscaling.nodes.gpus_per_node", "hardware.gpus_per_node", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.nodes.gpus_per_node, s->gpus_per_node);
         EXPECT_TRUE(HasNote(s->derived, "autoscaling.nodes.gpus_per_node: 8 (hardware.gpus_per_node; not given)"))
             << JoinNotes(s->derived);
       }},
      {"autoscaling.nodes.initial", "hardware.nodes", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.nodes.initial, s->nodes);
         EXPECT_TRUE(HasNote(s->derived, "autoscaling.nodes.initial: 1 (hardware.nodes; not given)"))
             << JoinNotes(s->derived);
       }},
      {"autoscaling.nodes.max_nodes", "nodes.initial", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.nodes.max_nodes, s->autoscaling.nodes.initial);
         EXPECT_TRUE(HasNote(s->derived, "autoscaling.nodes.max_nodes: 1 (nodes.initial; not given)"))
             << JoinNotes(s->derived);
       }},
      {"autoscaling.forecast.lead", "the cold start plus one interval", NonConstant::kDerived,
       [] {
         const Expected<Scenario> s =
             Load(Minimal("autoscaling: {target: 2, forecast: {schedule: [{at: 1m, replicas: 1}]}}\n"));
         ASSERT_TRUE(s.ok()) << s.status().message();
         EXPECT_EQ(s->autoscaling.forecast.lead, s->autoscaling.cold_start() + s->autoscaling.interval);
         EXPECT_TRUE(MentionsKey(s->derived, "autoscaling.forecast.lead")) << JoinNotes(s->derived);
       }},
      {"autoscaling.forecast.horizon", "the cold start", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kAutoscalingForecast);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.forecast.horizon, s->autoscaling.cold_start());
         EXPECT_TRUE(MentionsKey(s->derived, "autoscaling.forecast.horizon")) << JoinNotes(s->derived);
       }},
      {"autoscaling", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->autoscaling.enabled);
       }},
      {"autoscaling.panic", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->autoscaling.panic.has_value());
       }},
      {"autoscaling.price", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.price_per_gpu_hour, 0.0);
       }},
      {"autoscaling.forecast", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAutoscaling);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->autoscaling.forecast.kind, ForecastConfig::Kind::kNone);
       }},
      {"autoscaling.forecast.schedule", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kAutoscalingForecast);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->autoscaling.forecast.schedule.empty());
         EXPECT_EQ(s->autoscaling.forecast.kind, ForecastConfig::Kind::kMovingWindow);
       }},

      // "none": absent = the feature is off.
      // No user catalog: every name resolves against the built-in one, and no catalog input
      // is listed.
      {"catalog", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         ASSERT_NE(s->catalog, nullptr);
         EXPECT_EQ(s->catalog.get(), &Catalog::Builtin());
         EXPECT_TRUE(s->catalog_files.empty());
       }},
      {"deployment.pools", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         ASSERT_EQ(s->pools.size(), 1u);
         EXPECT_EQ(s->pools[0].role, PoolRole::kMixed);
         EXPECT_EQ(s->pools[0].replicas, s->replicas);
       }},
      {"engine.speculation", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->speculation.enabled());
       }},
      {"engine.speculation.disable_above_batch", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kSpeculation);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->speculation.config.disable_above_batch.has_value());
       }},
      {"engine.speculation.draft.step_model", "roofline of the draft model", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kSpeculation);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->speculation.draft_step_model.has_value());
         EXPECT_TRUE(HasNote(s->derived, "engine.speculation.draft.step_model: roofline of the draft model (not given)"));
       }},
      {"engine.cuda_graphs", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->cuda_graphs.enabled());
       }},
      {"workload.events", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->events.empty());
       }},
      {"slo", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->slo.classes().empty());
       }},
      {"faults.serve.errors", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->serve_faults.errors.empty());
       }},
      {"faults.serve.latency_spike", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->serve_faults.spike_probability, 0.0);
       }},
      {"faults.serve.stall", "none", NonConstant::kNone,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->serve_faults.stall_probability, 0.0);
         EXPECT_FALSE(s->serve_faults.any());
       }},

      // Not kept in Scenario: the reader accepts `recompute` only and discards it.
      {"engine.preemption", "recompute", NonConstant::kNotStored,
       [] {
         EXPECT_TRUE(Load(Minimal("engine: {preemption: recompute}\n")).ok());
         EXPECT_FALSE(Load(Minimal("engine: {preemption: swap}\n")).ok());
       }},
      // Not kept in Scenario: step_model stays empty and the run builds the GPU's default
      // (perf/factory.h DefaultStepModel); the reader lists which.
      {"engine.step_model", "the GPU's", NonConstant::kNotStored,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_FALSE(s->step_model.has_value());
         EXPECT_TRUE(HasNote(s->derived,
                             "engine.step_model: aiconfigurator on the measured kernel tables that ship for "
                             "h100-sxm-80g (builtin:aiconfigurator/h100_sxm) (not given)"))
             << JoinNotes(s->derived);
         const Expected<Scenario> a100 = Load(Replace(Minimal(), "h100-sxm-80g", "a100-80g"));
         ASSERT_TRUE(a100.ok()) << a100.status().message();
         EXPECT_TRUE(HasNote(a100->derived, "engine.step_model: roofline: no measured kernel tables ship for a100-80g "
                                            "(not given)"))
             << JoinNotes(a100->derived);
       }},
      // The vLLM version: not kept; it sets the host overhead's default, below.
      {"engine.version", "0.10", NonConstant::kDerived,
       [] {
         EXPECT_EQ(kDefaultEngineVersion, "0.10");
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(HasNote(s->derived, "engine.version: 0.10 (not given)")) << JoinNotes(s->derived);
       }},
      // The version's host overhead with a kernel-based step model, 0 with a measured one.
      {"engine.prefix_cache.enabled", "the version's", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(s->engine.prefix_cache.enabled);
         EXPECT_FALSE(s->engine.admit_in_preempting_step);
         EXPECT_TRUE(HasNote(s->derived, "engine.prefix_cache.enabled: true (the default of vLLM 0.10, v1 engine; not given)"))
             << JoinNotes(s->derived);
         const Expected<Scenario> v0 = Load(Minimal("engine: {version: 0.6.3}\n"));
         ASSERT_TRUE(v0.ok()) << v0.status().message();
         EXPECT_FALSE(v0->engine.prefix_cache.enabled);
         EXPECT_TRUE(v0->engine.admit_in_preempting_step);
         EXPECT_TRUE(HasNote(v0->derived, "engine.prefix_cache.enabled: false (the default of vLLM 0.6.3, v0 engine; not given)"))
             << JoinNotes(v0->derived);
         const Expected<Scenario> off = Load(Minimal("engine: {prefix_cache: {enabled: false}}\n"));
         ASSERT_TRUE(off.ok()) << off.status().message();
         EXPECT_FALSE(off->engine.prefix_cache.enabled);
       }},
      {"engine.host_overhead", "the version's", NonConstant::kDerived,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_EQ(s->engine.host_overhead, kV1HostPerStep);
         EXPECT_TRUE(HasNote(s->derived,
                             "engine.host_overhead: 1.322 ms per step, the default of vLLM 0.10 (v1 engine; not given)"))
             << JoinNotes(s->derived);
         const Expected<Scenario> v0 = Load(Minimal("engine: {version: 0.6.3}\n"));
         ASSERT_TRUE(v0.ok()) << v0.status().message();
         EXPECT_EQ(v0->engine.host_overhead, kV0HostPerStep);
         const Expected<Scenario> async = Load(Minimal("engine: {version: '0.12'}\n"));
         ASSERT_TRUE(async.ok()) << async.status().message();
         EXPECT_EQ(async->engine.host_overhead, Duration());
         const Expected<Scenario> affine = Load(Minimal(
             "engine: {step_model: {kind: affine, prefill: {base: 1ms, per_token: 1us}, decode: {base: 1ms, "
             "per_seq: 1us}}}\n"));
         ASSERT_TRUE(affine.ok()) << affine.status().message();
         EXPECT_EQ(affine->engine.host_overhead, Duration());
         EXPECT_TRUE(HasNote(affine->derived,
                             "engine.host_overhead: 0 (a measured step model holds the engine's CPU time; not given)"))
             << JoinNotes(affine->derived);
       }},
      // Not kept in Scenario: an aiconfigurator model without `dir` reads the GPU's tables.
      {"engine.step_model.dir", "the GPU's tables", NonConstant::kNotStored,
       [] {
         StepModelContext ctx;
         ctx.memory.model = Catalog::Builtin().Model("llama-3.1-8b").value();
         ctx.memory.gpu = Catalog::Builtin().Gpu("h100-sxm-80g").value();
         const auto doc = YamlDocument::LoadString("step_model: {kind: aiconfigurator}\n", "scenario.yaml");
         ASSERT_TRUE(doc.ok()) << doc.status().message();
         auto m = MakeStepCostModel(doc->root()["step_model"], ctx);
         ASSERT_TRUE(m.ok()) << m.status().message();
         EXPECT_EQ((*m)->Describe()["dir"], "builtin:aiconfigurator/h100_sxm");
         EXPECT_TRUE((*m)->Describe()["other_kernels"].is_object());
       }},
      {"engine.step_model.other_kernels", "true", NonConstant::kNotStored,
       [] {
         const Scenario* s = Get(Variant::kMinimal);
         ASSERT_NE(s, nullptr);
         EXPECT_TRUE(HasNote(s->derived, "engine.step_model.other_kernels: true (not given)")) << JoinNotes(s->derived);
       }},
      // Not kept in Scenario: the step model's own keys are read when the run builds the
      // model (perf/factory.cc); absent, a kernel-table model's collectives are alpha-beta.
      {"engine.step_model.collectives", "alpha-beta; aiconfigurator: dir/comm", NonConstant::kNotStored,
       [] {
         // A one-op profile; TP 2 so the model has collectives to price.
         namespace fs = std::filesystem;
         const fs::path dir = fs::path(::testing::TempDir()) / "defaults_doc_kernel_table";
         fs::create_directories(dir);
         std::ofstream(dir / "dense.csv") << "layer,tokens,time_us\nqkv_proj,1,10\n";
         std::ofstream(dir / "per_sequence.csv") << "layer,sequences,time_us\nlm_head,1,100\n";
         std::ofstream(dir / "attention.csv")
             << "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n16,0,0,0,5\n0,0,1,16,3\n";
         StepModelContext ctx;
         ctx.memory.model = Catalog::Builtin().Model("llama-3.1-8b").value();
         ctx.memory.gpu = Catalog::Builtin().Gpu("h100-sxm-80g").value();
         ctx.memory.layout.tp = 2;
         ctx.tp_link = Catalog::Builtin().Link("nvlink4").value();
         const auto doc = YamlDocument::LoadString("step_model: {kind: kernel-table, dir: " + dir.string() + "}\n",
                                              "scenario.yaml");
         ASSERT_TRUE(doc.ok()) << doc.status().message();
         auto m = MakeStepCostModel(doc->root()["step_model"], ctx);
         ASSERT_TRUE(m.ok()) << m.status().message();
         EXPECT_EQ((*m)->Describe()["parallel_comm"]["source"], kAlphaBetaCollectives);
         fs::remove_all(dir);
         // An aiconfigurator model reads the measured tables under its dir/comm.
         if (!fleetplan::testing::HaveSharedData()) return;
         const std::string aic =
             fs::path(fleetplan::testing::SharedPath("profiles/aiconfigurator/h100_sxm")).lexically_normal().string();
         const auto aic_doc =
             YamlDocument::LoadString("step_model: {kind: aiconfigurator, dir: " + aic + "}\n", "scenario.yaml");
         ASSERT_TRUE(aic_doc.ok()) << aic_doc.status().message();
         auto measured = MakeStepCostModel(aic_doc->root()["step_model"], ctx);
         ASSERT_TRUE(measured.ok()) << measured.status().message();
         EXPECT_EQ((*measured)->Describe()["parallel_comm"]["source"]["paths"], Json::array({aic + "/comm"}));
       }},
      // Not kept in Scenario: read when the run builds an aiconfigurator model.
      {"engine.step_model.version", "0.24.0", NonConstant::kNotStored,
       [] { EXPECT_STREQ(kDefaultAicVersion, "0.24.0"); }},
      {"engine.step_model.moe_distribution", "balanced", NonConstant::kNotStored,
       [] { EXPECT_STREQ(kDefaultAicMoeDistribution, "balanced"); }},
  };
  return list;
}

const NonConstant* FindNonConstant(const std::string& key) {
  for (const NonConstant& n : NonConstants()) {
    if (n.key == key) return &n;
  }
  return nullptr;
}

const Row* FindRow(const std::string& key) {
  for (const Row& r : Rows()) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

std::vector<DocRow> DocTableOrFail() {
  std::string error;
  std::vector<DocRow> rows = ReadDocTable(&error);
  EXPECT_TRUE(error.empty()) << error;
  return rows;
}

// ---- tests ------------------------------------------------------------------------------

TEST(ScenarioDefaultsDoc, TheDocsTableParses) {
  const std::vector<DocRow> doc = DocTableOrFail();
  ASSERT_GT(doc.size(), 50u);
  std::set<std::string> keys;
  for (const DocRow& r : doc) {
    EXPECT_TRUE(keys.insert(r.key).second) << "docs/scenario.md:" << r.line << ": `" << r.key << "` twice";
    EXPECT_FALSE(r.default_text.empty()) << "docs/scenario.md:" << r.line << ": `" << r.key << "` has no default";
  }
  // Multi-key cells split as written.
  for (const char* key : {"deployment.tp", "deployment.ep", "engine.prefix_cache.eviction",
                          "engine.prefix_cache.scope.position_scheme", "router.replication.remove_below",
                          "router.adapter_aware.affinity", "hardware.gpus_per_node", "output.timeline"}) {
    EXPECT_TRUE(keys.count(key)) << key;
  }
}

TEST(ScenarioDefaultsDoc, EveryDocumentedKeyHasACheck) {
  const std::vector<DocRow> doc = DocTableOrFail();
  std::set<std::string> documented;
  for (const DocRow& r : doc) {
    documented.insert(r.key);
    const Row* row = FindRow(r.key);
    const NonConstant* other = FindNonConstant(r.key);
    if (other != nullptr) {
      EXPECT_EQ(row, nullptr) << r.key << " is both an accessor row and a non-constant default";
      EXPECT_EQ(r.default_text, other->documented)
          << "docs/scenario.md:" << r.line << ": the default of `" << r.key << "` changed to '" << r.default_text
          << "'; update its entry in NonConstants() (or give it an accessor row if it is now a constant)";
      continue;
    }
    EXPECT_NE(row, nullptr) << "docs/scenario.md:" << r.line << ": `" << r.key << "` (default '" << r.default_text
                            << "') has no accessor row in Rows() and is not listed as a non-constant default";
  }
  // And the other way: no row for a key the docs no longer have.
  for (const Row& r : Rows()) EXPECT_TRUE(documented.count(r.key)) << r.key << " is not in docs/scenario.md";
  for (const NonConstant& n : NonConstants()) {
    EXPECT_TRUE(documented.count(n.key)) << n.key << " is not in docs/scenario.md";
  }
}

TEST(ScenarioDefaultsDoc, EveryDocumentedDefaultMatchesTheReader) {
  ASSERT_EQ(Loaded().size(), AllVariants().size());
  for (const DocRow& r : DocTableOrFail()) {
    const Row* row = FindRow(r.key);
    if (row == nullptr) continue;  // EveryDocumentedKeyHasACheck reports it
    const Scenario* s = Get(row->variant);
    ASSERT_NE(s, nullptr);
    const std::string resolved = row->value(*s);
    EXPECT_TRUE(SameValue(r.default_text, resolved))
        << "docs/scenario.md:" << r.line << ": `" << r.key << "` documents the default '" << r.default_text
        << "'; a scenario without it resolves to '" << resolved << "'";
  }
}

TEST(ScenarioDefaultsDoc, NonConstantDefaultsResolveAsDocumented) {
  ASSERT_EQ(Loaded().size(), AllVariants().size());
  for (const NonConstant& n : NonConstants()) {
    if (n.kind == NonConstant::kRequired) continue;  // RequiredKeysAreRequired
    SCOPED_TRACE(n.key);
    n.check();
  }
}

TEST(ScenarioDefaultsDoc, RequiredKeysAreRequired) {
  for (const NonConstant& n : NonConstants()) {
    if (n.kind != NonConstant::kRequired) continue;
    SCOPED_TRACE(n.key);
    n.check();
  }
}

// The notes the reader writes today, exactly: each names the key (or the fit reader's
// field) and the documented value.
TEST(ScenarioDefaultsDoc, ListedDefaultsReadAsTheReaderWritesThem) {
  ASSERT_EQ(Loaded().size(), AllVariants().size());
  for (const Row& row : Rows()) {
    const Scenario* s = Get(row.variant);
    ASSERT_NE(s, nullptr);
    switch (row.note.kind) {
      case Note::kExact:
        EXPECT_TRUE(HasNote(s->derived, row.note.text))
            << row.key << ": expected the note '" << row.note.text << "'; derived:" << JoinNotes(s->derived);
        break;
      case Note::kItem:
        EXPECT_TRUE(HasDefaultsItem(s->derived, row.note.text))
            << row.key << ": expected '" << row.note.text << "' in the '" << kDefaultsNote
            << "...' note; derived:" << JoinNotes(s->derived);
        break;
      case Note::kPromised: break;  // EveryFilledInValueIsListedInNotes
    }
  }
}

// docs/scenario.md: "Nothing is silently defaulted: every value fleetplan fills in or
// derives is listed under `notes` in report.json". Every key with a constant default,
// left out of a scenario where it applies, must be named by a note.
TEST(ScenarioDefaultsDoc, EveryFilledInValueIsListedInNotes) {
  ASSERT_EQ(Loaded().size(), AllVariants().size());
  std::vector<std::string> silent;
  for (const Row& row : Rows()) {
    if (row.note.kind != Note::kPromised) continue;
    const Scenario* s = Get(row.variant);
    ASSERT_NE(s, nullptr);
    if (!MentionsKey(s->derived, row.key)) silent.push_back(row.key);
  }
  // output.dir is derived from name and filled in too.
  const Scenario* minimal = Get(Variant::kMinimal);
  ASSERT_NE(minimal, nullptr);
  if (!MentionsKey(minimal->derived, "output.dir")) silent.push_back("output.dir");
  EXPECT_TRUE(silent.empty()) << silent.size()
                              << " defaulted values are filled in without a note (docs/scenario.md promises one "
                                 "for each): "
                              << fmt::format("{}", fmt::join(silent, ", "))
                              << "\nderived of the minimal scenario:" << JoinNotes(minimal->derived);
}

}  // namespace
}  // namespace fleetplan
