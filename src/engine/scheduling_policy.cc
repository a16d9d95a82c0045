#include "fleetplan/engine/scheduling_policy.h"

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

}  // namespace

const std::vector<std::string>& SchedulingPolicyNames() {
  static const std::vector<std::string> names = {"prefill-first", "decode-first", "bounded-chunk",
                                                 "priority-aging"};
  return names;
}

Expected<std::unique_ptr<SchedulingPolicy>> MakeSchedulingPolicy(const SchedulerConfig& config) {
  const std::string& n = config.policy;
  if (n == "prefill-first") return std::unique_ptr<SchedulingPolicy>(new PrefillFirst(config));
  if (n == "decode-first") return std::unique_ptr<SchedulingPolicy>(new DecodeFirst(config));
  if (n == "bounded-chunk") return std::unique_ptr<SchedulingPolicy>(new BoundedChunk(config));
  if (n == "priority-aging") return std::unique_ptr<SchedulingPolicy>(new PriorityAging(config));
  return InvalidInput(UnknownNameMessage("scheduling policy", n, SchedulingPolicyNames()));
}

}  // namespace fleetplan
