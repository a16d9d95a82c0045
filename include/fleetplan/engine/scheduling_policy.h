// Scheduling policies: small strategy objects the engine asks while it builds a step.
//
// The engine owns the mechanics (budget, blocks, preemption; see engine.h). A policy only
// answers ordering and limit questions:
//   - which goes first, prefill work or running decoders;
//   - the largest prefill chunk one request may take in one step;
//   - an upper bound on a step's duration while decoders are running (bounded-chunk's
//     `max_decode_stall`), which the engine enforces by shrinking prefill chunks;
//   - the sort key of prefill candidates (higher first; ties by arrival order).
// Policies are immutable, stateless and deterministic. Every policy passes the shared
// contract test in tests/engine/scheduling_policy_test.cc.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/memory/inputs.h"

namespace fleetplan {

struct SchedulerConfig {
  std::string policy = "bounded-chunk";
  int64_t max_batched_tokens = kDefaultMaxBatchedTokens;  // token budget per step
  int64_t max_running = kDefaultMaxRunning;               // most requests holding KV at once
  int64_t chunk_tokens = 512;         // bounded-chunk: largest prefill chunk per request
  Duration max_decode_stall = Ms(150);  // bounded-chunk: longest step while decoders run
  double aging_per_step = 0.05;       // priority-aging: score gain per step spent waiting
  int64_t max_waiting = 0;            // waiting-queue bound; 0 = unbounded
  // vLLM V0's multi-step scheduling (`--num-scheduler-steps`): a step that only decodes
  // starts a run of this many decode steps over the same running requests, during which
  // nothing is admitted and no prompt is computed; arrivals wait for the run to end.
  // 1 = every step is scheduled on its own.
  int64_t num_scheduler_steps = 1;
};

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view name() const = 0;
  // True: waiting and partial prefills take the budget before running decoders.
  virtual bool PrefillBeforeDecode() const { return false; }
  // Largest prefill chunk per request per step.
  virtual int64_t ChunkCap() const = 0;
  // Longest allowed step (host overhead included) while at least one decoder runs.
  virtual std::optional<Duration> StepTimeCap() const { return std::nullopt; }
  // Whether prefill candidates are reordered by PrefillKey (else arrival order).
  virtual bool ReordersPrefill() const { return false; }
  // Sort key of a prefill candidate; higher is scheduled first. REQUIRES of an
  // implementation: for a fixed priority the key never falls as waiting_steps grows (the
  // engine's waiting queue keeps candidates in per-priority sets ordered by the step they
  // entered, which is the key's order only then; engine.h asserts it).
  virtual double PrefillKey(int32_t priority, int64_t waiting_steps) const { return 0.0; }
};

// The scheduling-policy registry: one row per policy. The scenario reader validates names
// against it, MakeSchedulingPolicy constructs from it, and the shared contract test
// iterates it, so a new policy is one strategy object plus one row.
struct SchedulingPolicyRow {
  std::string_view name;
  std::string_view summary;  // one line, for --help and docs
  std::unique_ptr<SchedulingPolicy> (*make)(const SchedulerConfig& config) = nullptr;
};
const std::vector<SchedulingPolicyRow>& SchedulingPolicies();

// The valid policy names, in documentation order.
const std::vector<std::string>& SchedulingPolicyNames();
// Unknown names: InvalidInput listing the valid names with a did-you-mean.
Expected<std::unique_ptr<SchedulingPolicy>> MakeSchedulingPolicy(const SchedulerConfig& config);

}  // namespace fleetplan
