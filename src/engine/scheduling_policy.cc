#include "fleetplan/engine/scheduling_policy.h"

#include "fleetplan/core/registry.h"
#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

// Waiting prefills take the budget first: best throughput, stalls running decoders.
class PrefillFirst final : public SchedulingPolicy {
 public:
  explicit PrefillFirst(const SchedulerConfig& c) : cap_(c.max_batched_tokens) {}
  std::string_view name() const override { return "prefill-first"; }
  bool PrefillBeforeDecode() const override { return true; }
  int64_t ChunkCap() const override { return cap_; }
 private:
  int64_t cap_;
};

// Running decoders first; the remaining budget goes to prefill.
class DecodeFirst final : public SchedulingPolicy {
 public:
  explicit DecodeFirst(const SchedulerConfig& c) : cap_(c.max_batched_tokens) {}
  std::string_view name() const override { return "decode-first"; }
  int64_t ChunkCap() const override { return cap_; }
 private:
  int64_t cap_;
};

// Decode-first with small prefill chunks and a guaranteed bound on step time.
class BoundedChunk final : public SchedulingPolicy {
 public:
  explicit BoundedChunk(const SchedulerConfig& c) : cap_(c.chunk_tokens), stall_(c.max_decode_stall) {}
  std::string_view name() const override { return "bounded-chunk"; }
  int64_t ChunkCap() const override { return cap_; }
  std::optional<Duration> StepTimeCap() const override { return stall_; }
 private:
  int64_t cap_;
  Duration stall_;
};

// Decoders first; prefill ordered by priority + aging_per_step * steps waited, so a
// low-priority request overtakes fresh high-priority ones after a bounded wait.
class PriorityAging final : public SchedulingPolicy {
 public:
  explicit PriorityAging(const SchedulerConfig& c) : cap_(c.max_batched_tokens), aging_(c.aging_per_step) {}
  std::string_view name() const override { return "priority-aging"; }
  int64_t ChunkCap() const override { return cap_; }
  bool ReordersPrefill() const override { return true; }
  double PrefillKey(int32_t priority, int64_t waiting_steps) const override {
    return static_cast<double>(priority) + aging_ * static_cast<double>(waiting_steps);
  }
 private:
  int64_t cap_;
  double aging_;
};

template <typename Policy>
std::unique_ptr<SchedulingPolicy> Make(const SchedulerConfig& c) {
  return std::make_unique<Policy>(c);
}

}  // namespace

const std::vector<SchedulingPolicyRow>& SchedulingPolicies() {
  static const std::vector<SchedulingPolicyRow> rows = {
      {"prefill-first", "waiting prefills take the budget first", &Make<PrefillFirst>},
      {"decode-first", "running decoders first, the rest of the budget to prefill", &Make<DecodeFirst>},
      {"bounded-chunk", "decode-first with small prefill chunks and a bound on step time", &Make<BoundedChunk>},
      {"priority-aging", "decode-first; prefill by priority + aging x steps waited", &Make<PriorityAging>},
  };
  return rows;
}

const std::vector<std::string>& SchedulingPolicyNames() {
  static const std::vector<std::string> names = RowNames(SchedulingPolicies());
  return names;
}

Expected<std::unique_ptr<SchedulingPolicy>> MakeSchedulingPolicy(const SchedulerConfig& config) {
  for (const SchedulingPolicyRow& row : SchedulingPolicies()) {
    if (row.name == config.policy) return row.make(config);
  }
  return InvalidInput(UnknownNameMessage("scheduling policy", config.policy, SchedulingPolicyNames()));
}

}  // namespace fleetplan
