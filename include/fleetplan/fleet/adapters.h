// Adapter (LoRA) residency of one replica: which adapters are loaded in GPU memory,
// under a memory budget with least-recently-used eviction.
//
// A request that names an adapter Acquires it on the replica it is routed to and
// Releases it when it ends. A resident adapter is usable at once (or when its load in
// progress completes); a missing one is a cold load: it is loaded over the replica's
// host-to-device link, one load at a time, taking `load_time` each, and the request
// waits for it. Before a load, unpinned adapters (no live request) are evicted, least
// recently acquired first, until the new one fits the budget; when pinned adapters
// alone fill it, the load still happens and is counted in `over_budget_loads` (never
// silently).
//
//   now ... link_free ..[ load_time ].. ready      (cold: the request waits until ready)
//
// Memory is integrated over time for the mean. Thread model: single-threaded;
// deterministic (ordered maps only).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

struct AdapterConfig {
  bool enabled = false;  // false: adapters are free and always resident
  Bytes size;            // GPU memory of one adapter
  Duration load_time;    // host-to-device load of one adapter
  Bytes memory_budget;   // per replica; >= size
  // Each adapter's share of the requests that name one (index: AdapterId), from the
  // workload's declared popularity; empty when the workload declares none (a trace).
  std::vector<double> popularity;
};

// The placement a planner chooses from declared popularity: adapters by share, most
// popular first (ties by id); the hot ones, until their shares reach `hot`, go on every
// replica; the warm ones, until `hot + warm`, on two; the tail on one. Warm and tail
// adapters are dealt round the replicas in that order, so each replica gets its turn.
enum class AdapterTier : int { kHot = 0, kWarm = 1, kTail = 2 };
struct AdapterPartition {
  std::vector<AdapterTier> tier;              // per adapter id
  std::vector<std::vector<AdapterId>> on;     // per replica: its adapters, increasing ids
  int64_t hot = 0, warm = 0, tail = 0;        // adapters per tier
  bool places(int32_t replica, AdapterId a) const;  // replica taken modulo the replicas planned
};
// REQUIRES: replicas >= 1; 0 <= hot, warm; hot + warm <= 1.
AdapterPartition PartitionByPopularity(const std::vector<double>& popularity, int32_t replicas, double hot,
                                       double warm);

struct AdapterStats {
  int64_t acquires = 0;    // requests that named an adapter
  int64_t cold_loads = 0;  // acquires that started a load
  int64_t evictions = 0;
  int64_t over_budget_loads = 0;
  Duration load_wait;       // sum over acquires of (ready - now)
  Bytes peak;               // largest resident memory
  double byte_seconds = 0;  // integral of resident memory over time
  // {acquires, cold_loads, cold_load_rate, evictions, over_budget_loads, mean_load_wait_ms,
  //  peak_bytes, mean_bytes (over span), resident_now}
  Json ToJson(Duration span, int64_t resident_now) const;
};

class AdapterResidency {
 public:
  explicit AdapterResidency(const AdapterConfig& config) : config_(config) {}

  // `adapter` is needed from `now`; returns when it is usable (>= now). Pins it.
  // REQUIRES: adapter != kNoAdapter; config enabled.
  SimTime Acquire(AdapterId adapter, SimTime now);
  // REQUIRES: a matching Acquire.
  void Release(AdapterId adapter);
  bool resident(AdapterId adapter) const { return resident_.count(adapter) != 0; }
  int64_t resident_count() const { return static_cast<int64_t>(resident_.size()); }
  // Appends the resident adapters (loaded or loading), in increasing id order.
  void AppendResident(std::vector<AdapterId>* out) const {
    for (const auto& [id, e] : resident_) out->push_back(id);
  }
  Bytes used() const { return config_.size * resident_count(); }
  // Acquires not yet released, over every adapter.
  int64_t pins() const {
    int64_t n = 0;
    for (const auto& [id, e] : resident_) n += e.pins;
    return n;
  }
  // Makes `adapter` resident before any request (a planned placement): no load, no pin.
  void Preload(AdapterId adapter);
  // Integrates memory up to `now`; call before reading stats at the end.
  void Advance(SimTime now);
  const AdapterStats& stats() const { return stats_; }

 private:
  struct Entry {
    SimTime ready;
    uint64_t tick = 0;
    int64_t pins = 0;
  };
  void Touch(AdapterId adapter, Entry& e);
  void MakeRoom();

  AdapterConfig config_;
  std::map<AdapterId, Entry> resident_;
  std::map<uint64_t, AdapterId> by_tick_;  // least recently acquired first
  uint64_t tick_ = 0;
  SimTime link_free_;
  SimTime last_;
  AdapterStats stats_;
};

}  // namespace fleetplan
