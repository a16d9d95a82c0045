// Service-level objectives (SLOs) per workload class, and the verdict on one request.
//
// YAML (the scenario's `slo:` mapping; see docs/records.md "SLO files"):
//
//   slo:
//     interactive: {ttft: 600ms, itl_max: 150ms}
//     document:    {ttft: 2s, tpot: 80ms}
//     research:
//       e2e: 10m
//       e2e_by_output:              # E2E target by output length, ascending max_output
//         - {max_output: 256, e2e: 20s}
//         - {max_output: 2048, e2e: 2m}
//         - {e2e: 10m}              # optional catch-all for longer outputs; must be last
//     batch: {}                     # declared, no objectives
//
// Every objective is an upper bound: a request meets it when its value is <= the target
// (exactly, in integer nanoseconds). A request *qualifies* when its status is ok, its
// output is valid, and it meets every objective of its class. TPOT and ITL-max bound
// nothing for a request with fewer than two output tokens (there is no gap), so they are
// met. An e2e_by_output target applies to the first bucket whose max_output is >= the
// request's output tokens, else to the catch-all; with neither, no bucket target applies.
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/error.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/metrics/record.h"

namespace fleetplan {

// The per-request objectives. Values reach JSON by name (ObjectiveName); never renumber.
enum class Objective : int { kTtft = 0, kTpot = 1, kItlMax = 2, kE2e = 3, kE2eByOutput = 4 };
inline constexpr int kObjectiveCount = 5;
// "ttft", "tpot", "itl_max", "e2e", "e2e_by_output" (the YAML keys).
std::string_view ObjectiveName(Objective objective);

struct OutputBucketObjective {
  std::optional<int64_t> max_output;  // nullopt: the catch-all (last) bucket
  Duration e2e;
  bool operator==(const OutputBucketObjective&) const = default;
};

struct ClassObjectives {
  std::optional<Duration> ttft;
  std::optional<Duration> tpot;
  std::optional<Duration> itl_max;
  std::optional<Duration> e2e;
  std::vector<OutputBucketObjective> e2e_by_output;  // ascending max_output, catch-all last

  bool Has(Objective objective) const;
  // The bucket target for a request with `output_tokens`, or null when none applies.
  const OutputBucketObjective* BucketFor(int64_t output_tokens) const;
  bool operator==(const ClassObjectives&) const = default;
};

struct ClassSlo {
  std::string name;
  std::string path;      // YAML field path of the entry ("slo.interactive")
  SourceLocation where;  // of the entry, for "this class does not exist" errors
  ClassObjectives objectives;
};

// The classes of an `slo:` mapping, in the order written.
class SloSpec {
 public:
  SloSpec() = default;
  explicit SloSpec(std::vector<ClassSlo> classes) : classes_(std::move(classes)) {}

  const std::vector<ClassSlo>& classes() const { return classes_; }
  const ClassSlo* Find(std::string_view name) const;
  std::vector<std::string> names() const;
  bool empty() const { return classes_.empty(); }

 private:
  std::vector<ClassSlo> classes_;
};

// Parses an `slo:` mapping. Every error is located: unknown keys (with did-you-mean),
// empty class names, non-positive or unit-less durations, buckets out of order.
Expected<SloSpec> ParseSlo(const YamlNode& node);

// An SLO file as `fleetplan report --slo` takes it: either a bare `slo:` mapping (class
// name -> objectives at the top level) or a whole scenario, recognised by a top-level
// `slo:` key (so a bare file cannot name a class `slo`). Only the scenario's `slo:` and
// `workload.classes` are read; the rest is the scenario loader's business.
struct SloFile {
  SloSpec slo;
  std::string path;
  std::string digest;     // of the file's bytes (core/digest.h)
  bool is_scenario = false;
  // The classes the file declares: `workload.classes` of a scenario that has them (every
  // SLO class must be one of them), else the SLO's own classes.
  std::vector<std::string> declared_classes;
  bool classes_from_workload = false;
};
Expected<SloFile> LoadSloFile(const std::string& path);
Expected<SloFile> LoadSloString(std::string_view text, const std::string& display_name);

// Which objectives one request meets. A request that did not finish ok meets none.
struct Verdict {
  uint32_t missed = 0;     // bit (1 << Objective) for each declared objective missed
  bool qualified = false;  // ok, valid, and missed == 0
  bool Missed(Objective o) const { return (missed >> static_cast<int>(o)) & 1U; }
};
Verdict Evaluate(const RequestRecord& record, const ClassObjectives& objectives);

}  // namespace fleetplan
